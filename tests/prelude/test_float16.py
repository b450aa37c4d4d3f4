"""float16 elements (src/include/ufuncgen/half.h): loaded into float exactly, stored rounded
to nearest even with NumPy's bits, overflow flagged as NumPy flags it; the same bits on the
host and through the device path (the simulator here, the GPU under UFUNCGEN_DEVICE=cuda,
where a NaN's payload may differ).  NumPy's own casts and float16 loops are the reference."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from ufuncgen import device

ON_GPU = device.backend() == "cuda" and device.is_available()

HALF_FILE = """\
ufunc widen(x) -> y
    types: float32(float16)
{
    y = x;
}

ufunc narrow(x) -> y
    types: float16(float32)
{
    y = x;
}

ufunc half_sum(x, y) -> s
    doc: Not declared associative: .reduce runs in NumPy's order on both paths.
    types: float16(float16, float16)
    identity: 0
{
    s = x + y;
}

ufunc half_fma(x, y, z) -> r
    doc: x*y + z with float32's roundings, then one rounding to float16.
    types: float16(float16, float16, float16)
{
    r = x * y + z;
}

gufunc half_dot(x, y) -> d
    layout: (n),(n)->()
    types: float16(float16, float16)
{
    T acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += x(i) * y(i);
    }
    d = acc;
}
"""


@pytest.fixture(scope="module")
def half(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("half"), "ufg_half", HALF_FILE,
                           "--cuda-arch", "native" if ON_GPU else "none")


def _on_device(fn, *arrays, **kwargs):
    return fn(*[device.to_device(a) for a in arrays], **kwargs).copy_to_host()


def _bits(a):
    return np.ascontiguousarray(a).view(f"u{a.dtype.itemsize}")


def _assert_same_bits(got, want, *, nan_payload=True):
    assert got.dtype == want.dtype and got.shape == want.shape
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    same = _bits(got) == _bits(want)
    if not nan_payload:
        same |= nan
    bad = ~same
    assert not bad.any(), (f"{int(bad.sum())} differ, first {got[bad][:4]} "
                           f"({_bits(got)[bad][:4]}), expected {want[bad][:4]} ({_bits(want)[bad][:4]})")


ALL_HALVES = np.arange(1 << 16, dtype=np.uint16).view(np.float16)


def _narrowing_inputs():
    """float32 values where rounding to float16 is hard: every float16 value, every half-way
    point between neighbours and its float32 neighbours, the subnormal and overflow
    boundaries, and random bit patterns, with both signs."""
    rng = np.random.default_rng(16)
    exact = ALL_HALVES.astype(np.float32)
    finite = np.sort(exact[np.isfinite(exact) & (exact >= 0)])
    halfway = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    bits = [np.concatenate([exact, halfway]).view(np.uint32)]
    bits += [bits[0] + 1, bits[0] - 1]
    bits.append(np.arange(0x477FE000 - 4096, 0x47800000 + 4096, dtype=np.uint32))  # 65504..2**16
    bits.append(np.arange(0x33000000 - 4096, 0x38800000 + 4096, 97, dtype=np.uint32))  # subnormals
    bits.append(rng.integers(0, 1 << 32, 500_000, dtype=np.uint64).astype(np.uint32))
    all_bits = np.concatenate(bits)
    return np.concatenate([all_bits, all_bits ^ np.uint32(0x80000000)]).view(np.float32)


def test_every_float16_widens_to_numpys_float32_bits_on_host_and_device(half):
    want = ALL_HALVES.astype(np.float32)
    _assert_same_bits(half.widen(ALL_HALVES), want)
    _assert_same_bits(_on_device(half.widen, ALL_HALVES), want, nan_payload=not ON_GPU)


def test_float32_narrows_to_numpys_float16_bits_rounding_to_nearest_even(half):
    values = _narrowing_inputs()
    with np.errstate(over="ignore", invalid="ignore"):
        want = values.astype(np.float16)
        got = half.narrow(values)
    _assert_same_bits(got, want)
    _assert_same_bits(_on_device(half.narrow, values), want, nan_payload=not ON_GPU)


def test_signalling_nans_keep_their_payload_and_raise_nothing_either_way(half):
    """The hardware conversions (F16C) quiet a signalling NaN and raise invalid; NumPy's keep
    the payload and raise nothing, and so do these, in a vector and in its tail."""
    halves = np.array([0x7C01, 0xFD00, 0x7D55, 0x3C00, 0x7E00] * 9, dtype=np.uint16).view(np.float16)
    floats = np.array([0x7F800001, 0x7FA00000, 0xFF800100, 0x3F800000, 0x7FC00000] * 9,
                      dtype=np.uint32).view(np.float32)
    with np.errstate(all="raise"):
        widened, narrowed = half.widen(halves), half.narrow(floats)
    _assert_same_bits(widened, halves.astype(np.float32))
    _assert_same_bits(narrowed, floats.astype(np.float16))
    assert (_bits(narrowed)[::5] == 0x7C01).all()      # still signalling


@pytest.mark.parametrize("value, overflows", [
    (65504.0, False), (65519.99, False), (65520.0, True), (70000.0, True), (3e38, True),
    (-65520.0, True), (np.inf, False), (-np.inf, False), (np.nan, False), (1e-10, False)])
def test_narrowing_warns_of_overflow_exactly_where_numpy_does(half, value, overflows):
    values = np.full(37, value, dtype=np.float32)      # a vector loop and its tail
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        half.narrow(values)
    with warnings.catch_warnings(record=True) as numpys:
        warnings.simplefilter("always")
        values.astype(np.float16)                       # NumPy's cast: the reference
    assert [str(w.message) for w in numpys] == (
        ["overflow encountered in cast"] if overflows else [])
    assert [str(w.message) for w in ours] == (
        ["overflow encountered in narrow"] if overflows else [])


def _assert_sum_bits(got, x, y):
    """NumPy's x + y to the bit, but where both are NaN: then the payload of either (the
    vectorized add's operand order is the compiler's, and NumPy's float32 add returns the
    first NaN)."""
    with np.errstate(all="ignore"):
        want, swapped = np.add(x, y), np.add(y, x)
    both = np.isnan(x) & np.isnan(y)
    assert both.sum() > 10, "the values hold pairs of NaNs"
    _assert_same_bits(got[~both], want[~both])
    assert np.isnan(got[both]).all()
    assert ((_bits(got) == _bits(want)) | (_bits(got) == _bits(swapped)))[both].all()


def test_sums_of_every_float16_match_numpys_float16_add_bit_for_bit(half):
    rng = np.random.default_rng(1616)
    x = np.concatenate([ALL_HALVES, rng.permutation(ALL_HALVES)])
    y = np.concatenate([rng.permutation(ALL_HALVES), ALL_HALVES[::-1]])
    with np.errstate(all="ignore"):
        want = np.add(x, y)
        got = half.half_sum(x, y)
        strided = half.half_sum(x[::3], y[1::3])
    _assert_sum_bits(got, x, y)
    _assert_sum_bits(strided, x[::3], y[1::3])
    with np.errstate(all="ignore"):
        _assert_same_bits(_on_device(half.half_sum, x, y), want, nan_payload=not ON_GPU)


def test_a_body_computes_in_float32_and_rounds_once(half):
    rng = np.random.default_rng(7)
    x, y, z = (rng.uniform(-200, 200, 10_000).astype(np.float16) for _ in range(3))
    wide = [a.astype(np.float32) for a in (x, y, z)]
    want = (wide[0] * wide[1] + wide[2]).astype(np.float16)    # float32's roundings, then one
    _assert_same_bits(half.half_fma(x, y, z), want)
    _assert_same_bits(_on_device(half.half_fma, x, y, z), want)
    # NumPy's float16 multiply then add rounds twice: a different (worse) result somewhere
    assert not np.array_equal(np.add(np.multiply(x, y), z), want)


def test_core_inputs_are_read_as_float_and_the_result_rounded_once(half):
    rng = np.random.default_rng(8)
    x, y = (rng.uniform(-2, 2, (6, 300)).astype(np.float16) for _ in range(2))
    acc = np.zeros(6, np.float32)
    for i in range(300):                               # the body's order, in float32
        acc = acc + x[:, i].astype(np.float32) * y[:, i].astype(np.float32)
    want = acc.astype(np.float16)
    _assert_same_bits(half.half_dot(x, y), want)
    _assert_same_bits(half.half_dot(x[:, ::-1].copy()[:, ::-1], y), want)
    _assert_same_bits(_on_device(half.half_dot, x, y), want)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_reduce_of_a_function_not_declared_associative_rounds_each_step_as_numpy_does(half, axis):
    rng = np.random.default_rng(9)
    a = rng.uniform(-100, 100, (37, 300)).astype(np.float16)
    want = np.zeros(a.shape[1] if axis == 0 else a.shape[0] if axis == 1 else (), np.float16)
    flat = a if axis == 0 else a.T if axis == 1 else a.reshape(-1, 1)
    for row in flat:                                   # NumPy's order, rounded every step
        want = np.add(want, row if axis is not None else row[0])
    _assert_same_bits(np.asarray(half.half_sum.reduce(a, axis=axis)), np.asarray(want))
    got = half.half_sum.reduce(device.to_device(a), axis=axis)
    _assert_same_bits(np.asarray(got.copy_to_host()), np.asarray(want))
