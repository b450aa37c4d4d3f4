"""bfloat16 on the device path (ml_dtypes.bfloat16 arrays): to_device and back, DLPack both
ways, and calls, casts, out= and the methods of a module with bfloat16 loops, each checked
bit for bit against the host path (NumPy with ml_dtypes' dtype), which is the reference.
Run on the simulator (UFUNCGEN_DEVICE=sim) where no GPU is lent."""
from __future__ import annotations

import numpy as np
import pytest

from ufuncgen import _device, device

from .conftest import host, to_dev, view

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 arrays are ml_dtypes' (pip "
                                "install '.[test]' brings it)")
BF16 = np.dtype(ml_dtypes.bfloat16)

BFLOAT16_FILE = """\
ufunc bsum(x, y) -> s
    types: float32(float32, float32), bfloat16(bfloat16, bfloat16)
    identity: 0
{
    s = x + y;
}

ufunc bmul(x, y) -> p
    doc: no identity: .reduce starts from the first element.
    types: bfloat16(bfloat16, bfloat16)
{
    p = x * y;
}

ufunc widen(x) -> y
    types: float32(bfloat16)
{
    y = x;
}

ufunc narrow(x) -> y
    types: bfloat16(float32)
{
    y = x;
}

ufunc bexp(x) -> y
    types: bfloat16(bfloat16)
{
    y = exp(x);
}

ufunc same(x) -> y
    doc: the identity, in the loops of other types, to cast into bfloat16 outs.
    types: float64(float64), int64(int64), uint64(uint64), float16(float16), complex128(complex128), bool(bool)
{
    y = x;
}

gufunc bdot(x, y) -> d
    layout: (n),(n)->()
    types: float64(float64, float64), float32(bfloat16, bfloat16)
{
    T acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += x(i) * y(i);
    }
    d = acc;
}
"""


@pytest.fixture(scope="module")
def bf(tmp_path_factory, module_importer, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("bfloat16_device"), "ufg_bfloat16_device",
                           BFLOAT16_FILE, "--cuda-arch", device_cuda_arch)


def bits(a):
    return np.ascontiguousarray(a).view(np.uint16)


def assert_same_bits(got, want):
    """Same dtype, shape and bits (NaN payloads included: both sides store 0x7fc0-style NaNs)."""
    assert got.dtype == want.dtype and got.shape == want.shape, (got, want)
    if want.dtype == BF16:
        np.testing.assert_array_equal(bits(got), bits(want))
    else:
        np.testing.assert_array_equal(got, want)


def assert_same_results(got, want):
    """assert_same_bits for arithmetic: NaN where NaN, but its sign and payload are nobody's
    promise (x86 makes Inf - Inf a negative NaN, a GPU's float32 arithmetic its canonical
    positive one, 0x7fff in bfloat16); every other value to the bit, -0.0 included."""
    assert got.dtype == want.dtype == BF16 and got.shape == want.shape, (got, want)
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    np.testing.assert_array_equal(bits(got)[~nan], bits(want)[~nan])


def every_bfloat16():
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(BF16)


def edge_values():
    """NaN, ±Inf, ±0, the largest finite, the smallest normal and subnormal, and ordinary ones."""
    patterns = [0x7fc0, 0xffc0, 0x7f80, 0xff80, 0x0000, 0x8000, 0x7f7f, 0xff7f, 0x0080, 0x8080,
                0x0001, 0x8001, 0x007f, 0x3f80, 0xbf80, 0x4049, 0x3c00]
    return np.array(patterns, np.uint16).view(BF16)


def rounding_boundaries():
    """float32s just below, at and above every halfway point between neighbouring bfloat16s
    of a sample of exponents, and past the largest finite (to Inf)."""
    upper = np.arange(0, 1 << 16, 97, dtype=np.uint32) << 16
    halves = upper | 0x8000
    values = np.concatenate([upper, halves - 1, halves, halves + 1, upper | 0xffff,
                             np.array([0x7f7f8000, 0x7f7fffff, 0xff7f8000], np.uint32)])
    floats = values.view(np.float32)
    return floats[~np.isnan(floats)]


# ------------------------------------------------------------------ arrays and protocols

def test_to_device_and_back_gives_the_same_bits_and_dtype():
    x = every_bfloat16()
    back = device.to_device(x).copy_to_host()
    assert back.dtype == BF16
    np.testing.assert_array_equal(bits(back), bits(x))


def test_a_device_array_of_bfloat16_says_its_dtype():
    d = device.to_device(np.ones((2, 3), BF16))
    assert d.dtype == BF16 and d.shape == (2, 3) and d.strides == (6, 2)


def test_device_array_takes_the_name_bfloat16_and_the_dtype():
    assert device.device_array(4, "bfloat16").dtype == BF16
    assert device.device_array((2, 2), ml_dtypes.bfloat16).dtype == BF16
    assert device.device_array(0, BF16).copy_to_host().dtype == BF16


def test_the_supported_dtypes_end_with_bfloat16():
    assert _device.SUPPORTED_DTYPES[-1] == "bfloat16"


def test_a_dlpack_export_is_kdlbfloat_of_16_bits_and_imports_as_bfloat16():
    x = edge_values()
    d = device.to_device(x)
    imported = device.from_dlpack(d)
    assert imported.dtype == BF16
    np.testing.assert_array_equal(bits(imported.copy_to_host()), bits(x))


def test_the_dlpack_capsule_carries_dtype_code_4_bits_16_lanes_1():
    import ctypes
    d = device.to_device(np.ones(3, BF16))
    capsule = d.__dlpack__()
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object,
                                                                   ctypes.c_char_p]
    managed = get_pointer(capsule, b"dltensor")
    # DLTensor: data (8), device (4 + 4), ndim (4), then dtype {uint8 code, bits; uint16 lanes}.
    dtype = (ctypes.c_uint8 * 4).from_address(managed + 20)
    assert (dtype[0], dtype[1], dtype[2] | dtype[3] << 8) == (4, 16, 1)
    imported = device.from_dlpack(type("Producer", (), {
        "__dlpack__": lambda self, **kw: capsule,
        "__dlpack_device__": lambda self: d.__dlpack_device__()})())
    assert imported.dtype == BF16


def test_the_cuda_array_interface_spells_bfloat16_as_ml_dtypes_does():
    d = device.to_device(np.ones(3, BF16))
    assert d.__cuda_array_interface__["typestr"] == np.ones(3, BF16).__array_interface__["typestr"]
    assert d.__cuda_array_interface__["typestr"] == "<V2"


def test_a_strided_bfloat16_view_copies_back_gathered():
    x = np.arange(12, dtype=np.float32).astype(BF16).reshape(3, 4)
    d = to_dev(x, "strided")
    np.testing.assert_array_equal(bits(host(d)), bits(x))


# ------------------------------------------------------------------ calls against the host

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_elementwise_bfloat16_results_are_the_hosts_bit_for_bit(bf):
    x = every_bfloat16()
    y = np.roll(x, 12345)
    assert_same_results(host(bf.bsum(to_dev(x), to_dev(y))), bf.bsum(x, y))
    assert_same_results(host(bf.bmul(to_dev(x), to_dev(y))), bf.bmul(x, y))
    # exp is the math library's: the host loop's vector expf (libmvec) and the device's expf
    # may differ by an ulp of float, which may move the rounding to bfloat16 by one.  NaN in,
    # NaN out, its sign nobody's promise (a GPU's expf returns its canonical positive NaN).
    got, want = host(bf.bexp(to_dev(x))), bf.bexp(x)
    nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(np.isnan(got.astype(np.float32)), nan)
    assert np.abs(bits(got)[~nan].astype(np.int32) - bits(want)[~nan].astype(np.int32)).max() <= 1


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_edge_values_go_through_the_device_loops_as_through_the_hosts(bf):
    x = edge_values()
    for y in (x, x[::-1].copy(), np.full_like(x, x[10])):
        assert_same_results(host(bf.bsum(to_dev(x), to_dev(y))), bf.bsum(x, y))
    assert_same_bits(host(bf.widen(to_dev(x))), bf.widen(x))


def test_narrowing_rounds_every_boundary_as_the_host_does(bf):
    f = rounding_boundaries()
    got = host(bf.narrow(to_dev(f)))
    assert_same_bits(got, bf.narrow(f))
    assert_same_bits(got, f.astype(BF16))


@pytest.mark.parametrize("layout", ["strided", "reversed", "fortran"])
def test_strided_inputs_give_the_contiguous_results(bf, layout):
    x = np.linspace(-3, 3, 24, dtype=np.float32).astype(BF16).reshape(4, 6)
    y = np.linspace(5, -1, 24, dtype=np.float32).astype(BF16).reshape(4, 6)
    assert_same_bits(host(bf.bsum(to_dev(x, layout), to_dev(y, layout))), bf.bsum(x, y))


def test_broadcast_inputs_and_scalars_broadcast_as_on_the_host(bf):
    x = np.linspace(-3, 3, 12, dtype=np.float32).astype(BF16).reshape(3, 4)
    row = np.array([0.5, -1, 2, 1e30], np.float32).astype(BF16)
    assert_same_bits(host(bf.bsum(to_dev(x), to_dev(row))), bf.bsum(x, row))
    assert_same_bits(host(bf.bsum(to_dev(x), ml_dtypes.bfloat16(2.5))),
                     bf.bsum(x, ml_dtypes.bfloat16(2.5)))
    assert_same_bits(host(bf.bsum(to_dev(x), 3)), bf.bsum(x, 3))          # a weak int
    assert_same_bits(host(bf.bsum(to_dev(x), 0.1)), bf.bsum(x, 0.1))      # float32's loop


def test_empty_bfloat16_arrays_give_empty_results(bf):
    e = np.zeros((0, 3), BF16)
    assert_same_bits(host(bf.bsum(to_dev(e), to_dev(e))), bf.bsum(e, e))
    assert_same_bits(host(bf.widen(to_dev(e))), bf.widen(e))
    assert_same_bits(host(bf.bsum.reduce(to_dev(e), axis=0)), bf.bsum.reduce(e, axis=0))


@pytest.mark.parametrize("other", [np.float32, np.float16, np.int8, np.uint8, np.bool_,
                                   np.int16])
def test_mixed_operands_resolve_to_the_loop_numpy_picks_and_are_cast_on_the_device(bf, other):
    x = np.linspace(-4, 4, 9, dtype=np.float32).astype(BF16)
    y = np.arange(9).astype(other)
    assert_same_bits(host(bf.bsum(to_dev(x), to_dev(y))), bf.bsum(x, y))
    assert_same_bits(host(bf.bsum(to_dev(y), to_dev(x))), bf.bsum(y, x))


@pytest.mark.parametrize("other", [np.float64, np.int64, np.complex64])
def test_what_numpy_refuses_the_device_refuses_with_the_same_error(bf, other):
    x = np.ones(3, BF16)
    y = np.ones(3, other)
    with pytest.raises(TypeError) as on_host:
        bf.bsum(x, y)
    with pytest.raises(TypeError) as on_device:
        bf.bsum(to_dev(x), to_dev(y))
    assert str(on_host.value) in str(on_device.value)


@pytest.mark.parametrize("out_dtype", ["bfloat16", np.float32, np.float64, np.complex64,
                                       np.float16])
def test_out_of_any_castable_dtype_is_written_as_the_host_writes_it(bf, out_dtype):
    out_dtype = BF16 if out_dtype == "bfloat16" else np.dtype(out_dtype)
    x = rounding_boundaries()[:200].astype(BF16)
    want = np.zeros(x.shape, out_dtype)
    bf.bsum(x, x, out=want, casting="unsafe")
    out = device.device_array(x.shape, out_dtype)
    bf.bsum(to_dev(x), to_dev(x), out=out, casting="unsafe")
    assert_same_bits(host(out), want)


def test_a_float32_loop_writes_a_bfloat16_out_rounded_once(bf):
    f = rounding_boundaries()
    want = np.zeros(f.shape, BF16)
    bf.bsum(f, np.zeros_like(f), out=want)
    out = device.device_array(f.shape, BF16)
    bf.bsum(to_dev(f), to_dev(np.zeros_like(f)), out=out)
    assert_same_bits(host(out), want)


def test_an_out_the_host_refuses_is_refused_on_the_device(bf):
    x = np.ones(3, BF16)
    with pytest.raises(TypeError):
        bf.bsum(x, x, out=np.zeros(3, np.int32))
    with pytest.raises(TypeError):
        bf.bsum(to_dev(x), to_dev(x), out=device.device_array(3, np.int32))


@pytest.mark.parametrize("source", [np.float64, np.int64, np.uint64, np.float16, np.complex128,
                                    np.bool_])
def test_casts_into_a_bfloat16_out_give_ml_dtypes_bits(bf, source):
    """The loop of the source's type writes a bfloat16 out= through the runtime's cast kernel;
    float64 and int64 round to float32 first, as ml_dtypes' casts do (1 + 2**-8 + 2**-30
    becomes 1.0, not 1 + 2**-7)."""
    values = np.concatenate([rounding_boundaries().astype(np.float64)[:500],
                             [1 + 2.0**-8 + 2.0**-30, 2.0**24 + 2.0**16 + 1, 1e300, -1e300]])
    if np.dtype(source).kind in "iub":
        values = np.abs(values[np.isfinite(values)]).clip(0, 2.0**62)
    with np.errstate(all="ignore"):
        x = values.astype(source)
        want = np.zeros(x.shape, BF16)
        bf.same(x, out=want, casting="unsafe")
        assert_same_bits(want, x.astype(BF16))      # 1e300 overflows to inf, as cast
    out = device.device_array(x.shape, BF16)
    bf.same(to_dev(x), out=out, casting="unsafe")
    assert_same_bits(host(out), want)


@pytest.mark.parametrize("destination", [np.float32, np.float64, np.float16, np.complex64,
                                         np.int32, np.int8, np.uint8, np.bool_])
def test_bfloat16_operands_cast_into_the_loops_and_outs_as_on_the_host(bf, destination):
    x = np.concatenate([np.linspace(-100, 100, 41, dtype=np.float32), [0.5, -0.5, 2.5]]
                       ).astype(BF16)
    if np.dtype(destination).kind == "u":
        x = np.abs(x.astype(np.float32)).astype(BF16)
    want = np.zeros(x.shape, destination)
    bf.widen(x, out=want, casting="unsafe")
    out = device.device_array(x.shape, destination)
    bf.widen(to_dev(x), out=out, casting="unsafe")
    assert_same_bits(host(out), want)


def test_a_gufunc_with_bfloat16_core_inputs_matches_the_host(bf):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((7, 16)).astype(np.float32).astype(BF16)
    y = rng.standard_normal((16,)).astype(np.float32).astype(BF16)
    assert_same_bits(host(bf.bdot(to_dev(x), to_dev(y))), bf.bdot(x, y))
    assert_same_bits(host(bf.bdot(to_dev(x, "fortran"), to_dev(y))), bf.bdot(x, y))


# ------------------------------------------------------------------ methods

def test_reduce_rounds_every_step_as_the_host(bf):
    x = np.linspace(0.1, 50, 300, dtype=np.float32).astype(BF16).reshape(3, 100)
    for axis in (0, 1, None):
        assert_same_bits(host(bf.bsum.reduce(to_dev(x), axis=axis)) if axis is not None
                         else np.asarray(bf.bsum.reduce(to_dev(x), axis=None).copy_to_host()),
                         np.asarray(bf.bsum.reduce(x, axis=axis)))
    assert_same_bits(host(bf.bmul.reduce(to_dev(x[:, :5]), axis=1)), bf.bmul.reduce(x[:, :5], axis=1))


def test_reduce_with_initial_and_an_empty_axis(bf):
    x = np.ones((4, 0), BF16)
    assert_same_bits(host(bf.bsum.reduce(to_dev(x), axis=1, initial=2.5)),
                     bf.bsum.reduce(x, axis=1, initial=2.5))
    with pytest.raises(ValueError):
        bf.bmul.reduce(x, axis=1)
    with pytest.raises(ValueError):
        bf.bmul.reduce(to_dev(x), axis=1)


def test_accumulate_reduceat_and_outer_match_the_host(bf):
    x = np.linspace(-3, 7, 20, dtype=np.float32).astype(BF16)
    assert_same_bits(host(bf.bsum.accumulate(to_dev(x))), bf.bsum.accumulate(x))
    assert_same_bits(host(bf.bsum.reduceat(to_dev(x), [0, 5, 6, 15])),
                     bf.bsum.reduceat(x, [0, 5, 6, 15]))
    assert_same_bits(host(bf.bsum.outer(to_dev(x[:4]), to_dev(x[:5]))), bf.bsum.outer(x[:4], x[:5]))


def test_at_updates_a_bfloat16_array_as_the_host(bf):
    x = np.linspace(-3, 7, 10, dtype=np.float32).astype(BF16)
    want = x.copy()
    bf.bsum.at(want, [0, 0, 3, 9], ml_dtypes.bfloat16(0.3))
    d = to_dev(x)
    bf.bsum.at(d, [0, 0, 3, 9], ml_dtypes.bfloat16(0.3))
    assert_same_bits(host(d), want)


def test_at_refuses_a_python_float_into_a_bfloat16_array_as_the_host(bf):
    """np.asarray(1.0) is float64, which bfloat16's loops do not take: NumPy's TypeError."""
    with pytest.raises(TypeError):
        bf.bsum.at(np.ones(3, BF16), [0], 1.0)
    with pytest.raises(TypeError):
        bf.bsum.at(to_dev(np.ones(3, BF16)), [0], 1.0)


def test_a_view_of_bfloat16_device_memory_is_an_operand_like_any_other(bf):
    x = np.linspace(-3, 3, 8, dtype=np.float32).astype(BF16)
    d = device.to_device(x)
    half = view(d, (4,), (4,))
    assert_same_bits(host(bf.bsum(half, half)), bf.bsum(x[::2], x[::2]))


def python_prints(script):
    """The lines a fresh interpreter prints running `script` (which must succeed)."""
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


def test_without_ml_dtypes_the_device_works_and_bfloat16_is_a_type_error_naming_it():
    lines = python_prints("import sys; sys.modules['ml_dtypes'] = None\n"  # import fails
                          "import numpy as np\n"
                          "from ufuncgen import device\n"
                          "print(device.to_device(np.arange(3.0)).copy_to_host().tolist())\n"
                          "try:\n"
                          "    device.device_array(2, 'bfloat16')\n"
                          "except TypeError as e:\n"
                          "    print(e)\n")
    assert lines[0] == "[0.0, 1.0, 2.0]"
    assert "dtype: bfloat16 arrays are ml_dtypes.bfloat16 arrays" in lines[1]
    assert "pip install ml_dtypes" in lines[1]


def test_importing_the_device_runtime_does_not_import_ml_dtypes():
    assert python_prints("import sys, numpy as np\n"
                         "from ufuncgen import device\n"
                         "device.to_device(np.ones(2)).copy_to_host()\n"
                         "print('ml_dtypes' in sys.modules)\n") == ["False"]
