"""complex64 and complex128 (issue 12 item 3) through the whole call, on the host loops and on
the device path, against NumPy: shapes, strides, broadcasts, Python complex scalars, casts
from and to real types, out=, .reduce, .accumulate, a gufunc, DLPack and CAI.  The element
arithmetic and the functions, edge values included, are tests/prelude/test_agreement.py's."""
from __future__ import annotations

import numpy as np
import pytest

from ufuncgen import device

COMPLEX_FILE = """\
ufunc cfma(x, y, z) -> out
    doc: x * y + z
    types: complex64(complex64, complex64, complex64), complex128(complex128, complex128, complex128)
{
    out = x * y + z;
}

ufunc cmul(x, y) -> out
    types: complex64(complex64, complex64), complex128(complex128, complex128)
    identity: 1
    associative: true
{
    out = x * y;
}

ufunc cadd(x, y) -> out
    types: complex64(complex64, complex64), complex128(complex128, complex128)
    identity: 0
    associative: true
{
    out = x + y;
}

ufunc magnitude(z) -> r
    types: float32(complex64), float64(complex128)
{
    r = abs(z);
}

ufunc rotate(z, angle) -> out
    doc: z turned by angle radians: z e^{i angle}
    types: complex64(complex64, float32), complex128(complex128, float64)
{
    out = z * exp(I * angle);
}

gufunc vdot(a, b) -> d
    layout: (n),(n)->()
    types: complex64(complex64, complex64), complex128(complex128, complex128)
{
    T sum = 0;
    for (int64_t i = 0; i < n; i++) {
        sum += conj(a(i)) * b(i);
    }
    d = sum;
}
"""

CTYPES = [np.complex64, np.complex128]


@pytest.fixture(scope="module")
def cx(tmp_path_factory, module_importer, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("complex"), "ufg_complex_module",
                           COMPLEX_FILE, "--cuda-arch", device_cuda_arch)


def _device_or_skip():
    if not device.is_available():
        pytest.skip(device.unavailable_reason() or "no device")


def _values(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


def _close(got, want, dtype):
    # Host and device compute the same operations; NumPy's multiply may fuse one rounding.
    rtol = 4 * np.finfo(np.dtype(dtype).type(0).real.dtype).eps
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol)


def _on_device(fn, *args, **kwargs):
    moved = [device.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    return fn(*moved, **kwargs).copy_to_host()


LAYOUTS = [
    ((7,), (7,)),                       # contiguous
    ((3, 4), (4,)),                     # broadcast
    ((5, 1), (1, 6)),                   # outer broadcast
    ((0,), (0,)),                       # empty
]


@pytest.mark.parametrize("dtype", CTYPES)
@pytest.mark.parametrize("shapes", LAYOUTS)
def test_an_elementwise_complex_body_matches_numpy_on_host_and_device(cx, dtype, shapes):
    x, y = _values(shapes[0], dtype, 1), _values(shapes[1], dtype, 2)
    z = _values(np.broadcast_shapes(*shapes), dtype, 3)
    want = x * y + z
    host = cx.cfma(x, y, z)
    assert host.dtype == dtype
    _close(host, want, dtype)
    _device_or_skip()
    np.testing.assert_array_equal(_on_device(cx.cfma, x, y, z), host)


@pytest.mark.parametrize("dtype", CTYPES)
def test_strided_and_reversed_complex_operands_are_read_in_place_on_the_host(cx, dtype):
    base = _values((6, 8), dtype)
    x, y = base[::2, ::-3], base[1::2, 1::3]
    host = cx.cmul(x, y)
    np.testing.assert_array_equal(host, cx.cmul(x.copy(), y.copy()))
    _close(host, x * y, dtype)
    _device_or_skip()
    np.testing.assert_array_equal(_on_device(cx.cmul, x.copy(), y.copy()), host)


@pytest.mark.parametrize("dtype", CTYPES)
def test_a_python_complex_scalar_is_weak_as_in_numpy(cx, dtype):
    x = _values(5, dtype)
    host = cx.cmul(x, 2.5 - 1j)
    assert host.dtype == dtype          # NEP 50: the array's precision decides
    _close(host, x * dtype(2.5 - 1j), dtype)
    _device_or_skip()
    got = cx.cmul(device.to_device(x), 2.5 - 1j)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.copy_to_host(), host)


@pytest.mark.parametrize("x, scalar, dtype", [
    (np.arange(3.0), 1 + 2j, np.float64), (np.arange(3.0, dtype=np.float32), -2.5j, np.float32),
    (np.arange(3), 1e300, np.int64)], ids=["complex to float64", "complex to float32",
                                           "float past int64"])
def test_a_python_scalar_cast_unsafely_into_a_loop_of_another_kind_is_numpys(x, scalar, dtype):
    # NumPy makes it a complex128 (float64) and casts that, warning; the device took the
    # scalar straight to the loop's type, which refused a complex: "float() argument must be".
    import warnings
    import ufuncgen.examples as ex
    with warnings.catch_warnings(record=True) as on_host:
        warnings.simplefilter("always")
        want = ex.add(x, scalar, dtype=dtype, casting="unsafe")
    assert want.dtype == dtype and on_host
    _device_or_skip()
    with warnings.catch_warnings(record=True) as on_device:
        warnings.simplefilter("always")
        got = ex.add(device.to_device(x), scalar, dtype=dtype, casting="unsafe").copy_to_host()
    np.testing.assert_array_equal(got, want)
    assert [w.category for w in on_device] == [w.category for w in on_host]


def test_real_inputs_are_cast_to_complex_and_a_complex_result_into_a_wider_out(cx):
    x = np.array([1.5, -2.0, 0.0], np.float32)
    w = _values(3, np.complex64)
    host = cx.cmul(x, w)
    assert host.dtype == np.complex64
    _close(host, x.astype(np.complex64) * w, np.complex64)
    out = np.zeros(3, np.complex128)
    cx.cmul(x, w, out=out)
    np.testing.assert_array_equal(out, host.astype(np.complex128))
    _device_or_skip()
    np.testing.assert_array_equal(_on_device(cx.cmul, x, w), host)
    out_d = device.to_device(np.zeros(3, np.complex128))
    cx.cmul(device.to_device(x), device.to_device(w), out=out_d)
    np.testing.assert_array_equal(out_d.copy_to_host(), out)


def test_a_complex_result_into_a_real_out_is_refused_as_numpy_refuses_it(cx):
    w = _values(3, np.complex128)
    with pytest.raises(TypeError, match="complex128.*float64|Cannot cast"):
        cx.cmul(w, w, out=np.zeros(3))
    _device_or_skip()
    out = device.to_device(np.full(3, 7.0))
    with pytest.raises(TypeError):
        cx.cmul(device.to_device(w), device.to_device(w), out=out)
    np.testing.assert_array_equal(out.copy_to_host(), np.full(3, 7.0))   # left untouched


@pytest.mark.parametrize("dtype", CTYPES)
def test_a_real_result_of_a_complex_argument(cx, dtype):
    z = np.array([3 + 4j, -0.0 - 0j, np.inf + 1j, np.nan + 0j, 1e-30 + 1e-30j], dtype)
    part = np.dtype(dtype).type(0).real.dtype
    host = cx.magnitude(z)
    assert host.dtype == part
    _close(host, np.abs(z), dtype)
    _device_or_skip()
    np.testing.assert_array_equal(_on_device(cx.magnitude, z), host)


@pytest.mark.parametrize("dtype", CTYPES)
def test_the_imaginary_unit_and_a_real_argument_in_one_body(cx, dtype):
    z = _values(9, dtype)
    part = np.dtype(dtype).type(0).real.dtype
    angle = np.linspace(-np.pi, np.pi, 9).astype(part)
    host = cx.rotate(z, angle)
    _close(host, z * np.exp(1j * angle.astype(np.float64)).astype(dtype), dtype)
    _device_or_skip()
    # exp: the host's vector exp, sin and cos against the device's scalar ones, a few ULP.
    _close(_on_device(cx.rotate, z, angle), host, dtype)


@pytest.mark.parametrize("dtype", CTYPES)
@pytest.mark.parametrize("axis", [0, 1, None, (0, 1)])
def test_reduce_of_a_complex_product(cx, dtype, axis):
    z = (1 + 0.05 * _values((4, 6), dtype)).astype(dtype)
    host = cx.cmul.reduce(z, axis=axis)
    _close(host, np.multiply.reduce(z, axis=axis), dtype)
    _device_or_skip()
    got = cx.cmul.reduce(device.to_device(z), axis=axis)
    _close(np.asarray(got.copy_to_host()), host, dtype)


@pytest.mark.parametrize("dtype", CTYPES)
def test_accumulate_of_a_complex_product_is_numpys_in_order(cx, dtype):
    z = _values((3, 5), dtype)
    host = cx.cmul.accumulate(z, axis=1)
    _close(host, np.multiply.accumulate(z, axis=1), dtype)
    _device_or_skip()
    np.testing.assert_array_equal(_on_device(cx.cmul.accumulate, z, axis=1), host)


@pytest.mark.parametrize("dtype", CTYPES)
@pytest.mark.parametrize("shapes", [((5,), (5,)), ((3, 5), (5,)), ((2, 1, 4), (3, 4)),
                                    ((0, 4), (4,))])
def test_a_complex_gufunc_matches_numpy_vdot(cx, dtype, shapes):
    a, b = _values(shapes[0], dtype, 4), _values(shapes[1], dtype, 5)
    want = np.sum(np.conj(a) * b, axis=-1)
    host = cx.vdot(a, b)
    _close(host, want, dtype)
    _device_or_skip()
    _close(_on_device(cx.vdot, a, b), host, dtype)


@pytest.mark.parametrize("dtype", CTYPES)
def test_complex_device_arrays_cross_cai_and_dlpack(dtype):
    _device_or_skip()
    z = _values(4, dtype)
    d = device.to_device(z)
    assert d.__cuda_array_interface__["typestr"] == np.dtype(dtype).str
    again = device.from_dlpack(d)
    assert again.dtype == dtype
    np.testing.assert_array_equal(again.copy_to_host(), z)


@pytest.mark.parametrize("dtype", CTYPES)
def test_a_short_complex_sum_is_numpys_pairwise_sum_bit_for_bit(cx, dtype):
    # NumPy's complex pairwise sum counts floats, two an element: in order below 4 elements,
    # else 4 accumulators; the real order (8 accumulators) differed in most rows of 4 to 63.
    # [1e16, 1, -1e16, 1] is 0 in that order and 1 in index order.
    cancel = np.array([1e16, 1, -1e16, 1], dtype=dtype)
    assert cx.cadd.reduce(cancel) == np.add.reduce(cancel) == 0
    rng = np.random.default_rng(64)
    for n in range(1, 64):
        rows = _values((5, n), dtype, n)
        rows[0, : n // 2] *= 1e8                       # cancellation: the order shows
        want = np.add.reduce(rows, axis=1)
        np.testing.assert_array_equal(cx.cadd.reduce(rows, axis=1), want, err_msg=f"n={n}")
        np.testing.assert_array_equal(cx.cadd.reduce(rows[:, ::-1], axis=1),
                                      np.add.reduce(rows[:, ::-1], axis=1), err_msg=f"n={n}")
    starts = np.array([0, 3, 4, 11, 60, 100])               # segments of 1 to 49
    values = (_values(128, dtype, 7) * rng.choice([1.0, 1e8], 128)).astype(dtype)
    np.testing.assert_array_equal(cx.cadd.reduceat(values, starts),
                                  np.add.reduceat(values, starts))
    _device_or_skip()
    # A device .reduceat segment takes the host's order for the same bits.
    np.testing.assert_array_equal(
        cx.cadd.reduceat(device.to_device(values), starts).copy_to_host(),
        np.add.reduceat(values, starts))
