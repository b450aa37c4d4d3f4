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

ufunc min_from_a_tenth(x, y) -> z
    doc: An identity that float16 holds only rounded, as NumPy rounds it.
    types: float32(float32, float32), float16(float16, float16)
    identity: 0.1
{
    z = min(x, y);
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

ufunc same(x) -> y
    doc: A copy in float32 or float64: casts into and out of float16 are the runtime's.
    types: float32(float32), float64(float64)
{
    y = x;
}

ufunc from_double(x) -> y
    doc: The body computes in double: y is a double, rounded to float16 once when stored.
    types: float16(float64), float16(float32)
{
    y = x;
}

ufunc from_complex(z) -> y
    types: float16(complex128)
{
    y = real(z);
}

ufunc half_scaled(x, w) -> y
    doc: x is widened a block at a time; x * w is a double, rounded to float16 once.
    types: float16(float16, float64)
{
    y = x * w;
}

gufunc half_of_sum(x) -> s
    layout: (n)->()
    types: float16(float64)
{
    T acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += x(i);
    }
    s = acc;
}
"""


@pytest.fixture(scope="module")
def half(tmp_path_factory, module_importer, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("half"), "ufg_half", HALF_FILE,
                           "--cuda-arch", device_cuda_arch)


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


@pytest.mark.parametrize("n", range(1, 41))
def test_a_short_call_raises_no_flag_its_elements_do_not(half, n):
    """A call shorter than the F16C groups converts element by element; no lane beyond its
    elements may raise a flag (GCC's two-float vectors once multiplied leftover bits there:
    underflow for x*y+z on 4-7 and 12-15 ones).  Quarters from -4 to 4: every product and sum
    exact, none subnormal, so NumPy's float32 arithmetic rounded once raises nothing."""
    rng = np.random.default_rng(n)
    x, y, z = (rng.integers(-16, 17, n).astype(np.float16) / np.float16(4) for _ in range(3))
    with np.errstate(all="raise"):
        want = (x.astype(np.float32) * y.astype(np.float32) + z.astype(np.float32)).astype(np.float16)
        got = half.half_fma(x, y, z)
        ones = half.half_fma(np.ones(n, np.float16), np.ones(n, np.float16), np.zeros(n, np.float16))
    _assert_same_bits(got, want)
    _assert_same_bits(ones, np.ones(n, np.float16))

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


def _flags_raised(call, *args):
    """The kinds of floating-point warning `call(*args)` gives ("overflow", "invalid", ...)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with np.errstate(all="warn"):
            result = call(*args)
    return result, sorted(str(w.message).split()[0] for w in caught)


@pytest.mark.parametrize("n", range(1, 41))
def test_a_short_call_keeps_nan_payloads_and_flags_as_numpys_add(half, n):
    """From 5 elements a call shorter than an F16C group converts its elements as one group
    padded with zeros (half_blocks.h); signalling NaNs keep their payloads, quiet ones too, and
    a sum past 65504 overflows, as in NumPy's float16 add, whatever the call's length."""
    specials = np.array([0x7C01, 0xFD00, 0x7D55, 0x7E00, 0x7BFF, 0xFBFF, 0x0001, 0x8000,
                         0x7C00, 0x3C00, 0x4248], dtype=np.uint16).view(np.float16)
    rng = np.random.default_rng(n)
    x, y = rng.choice(specials, n), rng.choice(specials, n)
    got, our_flags = _flags_raised(half.half_sum, x, y)
    want, numpys_flags = _flags_raised(np.add, x, y)
    assert our_flags == numpys_flags
    both = np.isnan(x) & np.isnan(y)        # either operand's payload: the order is the loop's
    _assert_same_bits(got[~both], want[~both])
    with np.errstate(all="ignore"):
        swapped = np.add(y, x)
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


def test_an_identity_float16_holds_only_rounded_is_rounded_as_numpy_rounds_it_quietly(half):
    """0.1 is 0.0999755859375 in float16, on the host and the device, and nothing warns; an
    identity beyond 65504 is refused by the generator (tests/golden/identity_beyond_float16)."""
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        for dtype in (np.float16, np.float32):
            empty = np.zeros((3, 0), dtype)
            want = np.full(3, 0.1, dtype)
            _assert_same_bits(half.min_from_a_tenth.reduce(empty, axis=1), want)
            got = half.min_from_a_tenth.reduce(device.to_device(empty), axis=1)
            _assert_same_bits(got.copy_to_host(), want)


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


# ----------------------------------------------------------------------------- from double


def _double_narrowing_inputs():
    """float64 values where rounding to float16 is hard: every float16 value, every half-way
    point between neighbours and its float64 neighbours (which float would round onto the
    half-way point: a second rounding then goes the wrong way), the subnormal and overflow
    boundaries, NaNs of many payloads (signalling ones too), random bit patterns, both signs."""
    rng = np.random.default_rng(64)
    exact = ALL_HALVES.astype(np.float64)
    finite = np.sort(exact[np.isfinite(exact) & (exact >= 0)])
    halfway = (finite[:-1] + finite[1:]) / 2
    bits = [np.concatenate([exact, halfway]).view(np.uint64)]
    bits += [bits[0] + 1, bits[0] - 1, bits[0] + (1 << 28), bits[0] - (1 << 28)]
    bits.append(np.arange(0x40EFFE0000000000 - 4096, 0x40EFFE0000000000 + 4096,
                          dtype=np.uint64))                                   # 65520
    bits.append(rng.integers(0x3E60000000000000, 0x3F10000000000000, 200_000,
                             dtype=np.uint64))                                # subnormals
    bits.append(rng.integers(1, 1 << 52, 20_000, dtype=np.uint64) | np.uint64(0x7FF0000000000000))
    bits.append(rng.integers(0, 1 << 64, 500_000, dtype=np.uint64, endpoint=False))
    all_bits = np.concatenate(bits)
    return np.concatenate([all_bits, all_bits ^ np.uint64(1 << 63)]).view(np.float64)


def test_a_float16_result_of_a_body_computing_in_double_is_rounded_once_as_numpys_cast(half):
    """Held in a float, the result was rounded twice: 65519.999 became Inf, 2**-25 + 2**-60
    became 0, 1 + 2**-11 + 2**-40 became 1."""
    values = _double_narrowing_inputs()
    with np.errstate(all="ignore"):
        want = values.astype(np.float16)
        got = half.from_double(values)
        on_device = _on_device(half.from_double, values)
    _assert_same_bits(got, want)
    _assert_same_bits(on_device, want)
    hard = np.array([65519.999, 2.0**-25 + 2.0**-60, 1 + 2.0**-11 + 2.0**-40])
    assert list(_bits(half.from_double(hard))) == [0x7BFF, 0x0001, 0x3C01]


def test_a_float16_result_of_a_complex128_body_is_rounded_once(half):
    values = _double_narrowing_inputs()[::4]
    z = np.empty(values.size, np.complex128)
    z.real, z.imag = values, values[::-1]
    with np.errstate(all="ignore"):
        want = values.astype(np.float16)
        got = half.from_complex(z)
        on_device = _on_device(half.from_complex, z)
    _assert_same_bits(got, want)
    _assert_same_bits(on_device, want)


def test_a_float16_input_times_a_double_is_rounded_once_in_the_block_converted_loop(half):
    rng = np.random.default_rng(65)
    x = rng.uniform(-1000, 1000, 100_003).astype(np.float16)
    w = 1 + rng.uniform(-2.0**-10, 2.0**-10, x.size)
    want = (x.astype(np.float64) * w).astype(np.float16)
    _assert_same_bits(half.half_scaled(x, w), want)
    _assert_same_bits(half.half_scaled(x[::3], w[::3]), want[::3])   # element by element
    _assert_same_bits(_on_device(half.half_scaled, x, w), want)
    through_float = (x.astype(np.float64) * w).astype(np.float32).astype(np.float16)
    assert not np.array_equal(_bits(through_float), _bits(want))     # the values can tell


def test_a_float16_output_of_a_gufunc_summing_doubles_is_rounded_once(half):
    """Rows that sum to just above a half-way point between two halves: float cannot hold the
    excess, and a second rounding would go to the even neighbour, half of the time down."""
    rng = np.random.default_rng(66)
    h = rng.uniform(1, 60000, 2000).astype(np.float16)
    halfway = (h.astype(np.float64) + np.nextafter(h, np.float16(np.inf)).astype(np.float64)) / 2
    x = rng.uniform(0, 1e-3, (2000, 7))
    x[:, 0], x[:, 1:] = halfway, x[:, 1:] * 2.0**-30 * halfway[:, None]
    want = np.cumsum(x, axis=1)[:, -1].astype(np.float16)    # the body's order, in double
    _assert_same_bits(half.half_of_sum(x), want)
    _assert_same_bits(_on_device(half.half_of_sum, x), want)


def test_the_float32_loop_beside_a_float64_one_still_rounds_from_float(half):
    values = _narrowing_inputs()
    with np.errstate(all="ignore"):
        want = values.astype(np.float16)
        got = half.from_double(values)
    assert got.dtype == np.float16
    _assert_same_bits(got, want)


def test_at_on_the_device_rounds_a_double_result_to_float16_once(half):
    values = np.array([65519.999, 2.0**-25 + 2.0**-60, 1 + 2.0**-11 + 2.0**-40, 3.0])
    want = values.copy()
    half.from_double.at(want, [0, 1, 2])
    assert list(want[:3]) == list(values[:3].astype(np.float16).astype(np.float64))
    on_device = device.to_device(values)
    half.from_double.at(on_device, [0, 1, 2])
    _assert_same_bits(on_device.copy_to_host(), want)


@pytest.mark.parametrize("value, overflows", [
    (65504.0, False), (65519.999, False), (65520.0, True), (70000.0, True), (1e300, True),
    (-65520.0, True), (np.inf, False), (-np.inf, False), (np.nan, False), (1e-300, False)])
def test_rounding_a_double_to_float16_warns_of_overflow_exactly_where_numpy_does(
        half, value, overflows):
    values = np.full(37, value)                         # a vector loop and its tail
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        half.from_double(values)
    with warnings.catch_warnings(record=True) as numpys:
        warnings.simplefilter("always")
        values.astype(np.float16)
    assert [str(w.message) for w in numpys] == (
        ["overflow encountered in cast"] if overflows else [])
    assert [str(w.message) for w in ours] == (
        ["overflow encountered in from_double"] if overflows else [])


def test_a_signalling_double_nan_stays_signalling_in_float16_and_raises_nothing(half):
    nans = np.array([0x7FF0000000000001, 0x7FF0040000000000, 0xFFF4000000000000,
                     0x7FF8000000000001] * 9, dtype=np.uint64).view(np.float64)
    with np.errstate(all="raise"):
        got = half.from_double(nans)
    _assert_same_bits(got, nans.astype(np.float16))
    assert list(_bits(got)[:4]) == [0x7C01, 0x7C01, 0xFD00, 0x7E00]


def _nans(dtype):
    """NaNs of float32 or float64 with many payloads, in the bits float16 drops and in those it
    keeps, signalling and quiet, with both signs."""
    bits = 8 * np.dtype(dtype).itemsize
    mantissa = {32: 23, 64: 52}[bits]
    u = np.dtype(f"u{bits // 8}").type
    low = np.arange(1, 1 << 10, 3, dtype=u)
    payloads = np.concatenate([low, low << u(mantissa - 11)])
    values = np.concatenate([payloads, payloads | u(1 << (mantissa - 1))])
    values |= u(((1 << (bits - 1 - mantissa)) - 1) << mantissa)
    return np.concatenate([values, values | u(1 << (bits - 1))]).view(dtype)


def test_the_runtimes_casts_into_and_out_of_float16_keep_nan_payloads_as_numpys(half):
    """An input cast to a loop's type and an out= of another dtype are the runtime's casts on
    the device: float16's signalling NaN 0x7c01 came out of a float64 loop as the quiet
    0x7ff8040000000000 (NumPy: 0x7ff0040000000000), the float32 NaN 0x7f800001 went into a
    float16 out= as 0x7e00 (NumPy: 0x7c01).  The loops here copy floats, so the device's
    results are the casts' alone, on the GPU too."""
    cases = [
        (ALL_HALVES, dict(dtype=np.float64)),
        (ALL_HALVES, dict(dtype=np.float32)),
        (_nans(np.float32), dict(out=np.float16)),
        (_nans(np.float64), dict(out=np.float16)),
    ]
    for values, how in cases:
        if "out" in how:
            host_out = np.zeros(values.shape, how["out"])
            device_out = device.to_device(host_out)
            want = half.same(values, out=host_out)
            got = half.same(device.to_device(values), out=device_out).copy_to_host()
        else:
            want = half.same(values, **how)
            got = _on_device(half.same, values, **how)
        with np.errstate(invalid="ignore"):
            _assert_same_bits(want, values.astype(want.dtype))     # the host is NumPy's casts
        _assert_same_bits(got, want)
