"""`.reduceat` on device arrays: NumPy's semantics (the reference is NumPy's own reduceat of
the same ufunc on host copies) for any axis, layout and index pattern (increasing, repeated,
decreasing, empty), dtype=, out= (cast, overlapping the array, a tuple of one), with and
without identity, complex, and NumPy's errors; bit for bit, since each segment is reduced in
NumPy's order."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from .conftest import assert_same as _same, host, to_dev, view

LAYOUTS = ["contiguous", "strided", "reversed", "fortran"]

# Index patterns along an axis of length n: NumPy's example, runs, a repeated and a
# decreasing index (a segment that is its first element), the last element alone, none.
INDEX_PATTERNS = {
    "numpy_example": lambda n: [0, 4, 1, 5, 2, 6, 3, 7][: max(n, 1)] if n >= 8 else [0],
    "runs": lambda n: list(range(0, n, 3)),
    "repeated": lambda n: [0, 0, n - 1, n - 1],
    "decreasing": lambda n: [n - 1, 0, n // 2],
    "last": lambda n: [n - 1],
    "none": lambda n: [],
}


def _data(dtype, shape, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-2**40, 2**40, shape).astype(dtype)
    return rng.uniform(-4, 4, shape).astype(dtype)


@pytest.mark.parametrize("name, dtype", [
    ("add", np.int64), ("add", np.float16), ("add", np.float32), ("custom_op", np.float64),
    ("hypot", np.float32)])
@pytest.mark.parametrize("shape, axis", [((9,), 0), ((4, 9), 1), ((9, 3), 0), ((2, 9, 3), 1),
                                         ((2, 3, 9), -1), ((0, 9), 1)])
@pytest.mark.parametrize("pattern", sorted(INDEX_PATTERNS))
def test_reduceat_matches_numpys_reduceat(name, dtype, shape, axis, pattern, rng):
    fn = getattr(ex, name)
    x = _data(dtype, shape, rng)
    indices = INDEX_PATTERNS[pattern](shape[axis])
    with np.errstate(all="ignore"):
        want = fn.reduceat(x, indices, axis=axis)
        got = fn.reduceat(to_dev(x), indices, axis=axis)
    assert isinstance(got, device.DeviceArray)
    _same(host(got), want)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_reduceat_segments_shorter_than_65_give_the_host_loops_and_numpys_bits(dtype, axis, layout,
                                                                              rng):
    # The host loop of an associative function reduces the rest of a short segment (what
    # follows its first element, one loop call) in the order of NumPy's pairwise sum; the
    # kernel takes the same order, so both give np.add.reduceat's bits.  A longer rest is
    # reordered over lanes on the host, in order on the device: within rounding of each other
    x = (rng.standard_normal((3, 320)) * rng.choice([1e-3, 1.0, 300.0], (3, 320))).astype(dtype)
    indices = [0, 2, 5, 14, 23, 40, 103, 120]      # rests of 1, 2, 8, 8, 16, 62, 16, 199
    lines = x if axis == 1 else x.T.copy()
    with np.errstate(over="ignore"):
        on_host = ex.add.reduceat(lines, indices, axis=axis)
        on_device = host(ex.add.reduceat(to_dev(lines, layout), indices, axis=axis))
        numpys = np.add.reduceat(lines, indices, axis=axis)
    if axis == 0:
        on_host, on_device, numpys = on_host.T, on_device.T, numpys.T
    _same(on_device[:, :-1], on_host[:, :-1])
    _same(on_host[:, :-1], numpys[:, :-1])
    exact = x[:, 120:].astype(np.float64).sum(axis=1)
    bound = 200 * np.finfo(dtype).eps * np.abs(x[:, 120:].astype(np.float64)).sum(axis=1)
    bound += np.abs(exact) * np.finfo(dtype).eps          # the final rounding to dtype
    for last in (on_host[:, -1], on_device[:, -1]):
        assert (np.abs(last.astype(np.float64) - exact) <= bound).all(), (last, exact)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_reduceat_reads_any_layout(layout, rng):
    x = _data(np.float64, (5, 8), rng)
    for axis in (0, 1):
        indices = [0, 2, 2, 4] if axis == 0 else [1, 5, 0, 7]
        _same(host(ex.add.reduceat(to_dev(x, layout), indices, axis=axis)),
              ex.add.reduceat(x, indices, axis=axis))


def test_reduceat_takes_indices_as_numpy_converts_them(rng):
    x = _data(np.float32, (10,), rng)
    for indices in ([0, 5], (1, 9), np.array([2, 3], np.int32), np.array([4], np.uint8),
                    range(0, 10, 4), [0.0, 5.9]):
        _same(host(ex.add.reduceat(to_dev(x), indices)), ex.add.reduceat(x, indices))


@pytest.mark.parametrize("dtype, out_dtype", [(np.int32, np.int64), (np.float32, np.float64),
                                              (np.float64, np.float32), (np.int64, np.float16)])
def test_reduceat_into_an_out_of_another_dtype_and_with_dtype(dtype, out_dtype, rng):
    x = _data(dtype, (3, 8), rng)
    want = np.zeros((3, 3), out_dtype)
    with np.errstate(all="ignore"):
        ex.add.reduceat(x, [0, 3, 5], axis=1, out=want)
        out = to_dev(np.zeros((3, 3), out_dtype))
        returned = ex.add.reduceat(to_dev(x), [0, 3, 5], axis=1, out=(out,))
    assert returned is out
    _same(host(out), want)
    _same(host(ex.add.reduceat(to_dev(x), [0, 3], axis=1, dtype=np.float64)),
          ex.add.reduceat(x, [0, 3], axis=1, dtype=np.float64))


def test_reduceat_into_an_out_that_overlaps_the_array_reads_the_array_first(rng):
    x = _data(np.float64, (8,), rng)
    want = x.copy()
    ex.add.reduceat(want, [4, 0, 6, 2], out=want[:4])
    d = to_dev(x)
    ex.add.reduceat(d, [4, 0, 6, 2], out=view(d, (4,), d.strides))
    _same(host(d), want)


def test_reduceat_of_complex_values(device_cuda_arch):
    from ufuncgen import load
    x = (np.arange(8) + 1j * np.arange(8)[::-1]).astype(np.complex128)
    m = load("ufunc cmul(x, y) -> z\n    types: complex128(complex128, complex128)\n"
             "{\n    z = x * y;\n}\n", "ufg_reduceat_complex", cuda_arch=device_cuda_arch)
    _same(host(m.cmul.reduceat(to_dev(x), [0, 3, 3, 6])), m.cmul.reduceat(x, [0, 3, 3, 6]))


@pytest.mark.parametrize("call, error", [
    (lambda d: ex.add.reduceat(d, [0, 10]), IndexError),
    (lambda d: ex.add.reduceat(d, [-1]), IndexError),
    (lambda d: ex.add.reduceat(d, [[0, 1]]), ValueError),
    (lambda d: ex.add.reduceat(d, 0), ValueError),
    (lambda d: ex.add.reduceat(d, np.array([0], np.uint64)), TypeError),
    (lambda d: ex.add.reduceat(d, [0], axis=None), ValueError),
    (lambda d: ex.add.reduceat(d, [0], axis=(0, 1)), ValueError),
    (lambda d: ex.add.reduceat(d, [0], axis=2), np.exceptions.AxisError),
    (lambda d: ex.add.reduceat(d, [0], axis=1.0), TypeError),
    (lambda d: ex.add.reduceat(d), TypeError),
    (lambda d: ex.sincos.reduceat(d, [0]), ValueError),
    (lambda d: ex.inner1d.reduceat(d, [0]), RuntimeError),
])
def test_reduceat_refuses_what_numpy_refuses_with_its_exception_type(call, error):
    x = np.ones((4, 10))
    with pytest.raises(error):
        call(x)
    with pytest.raises(error):
        call(to_dev(x))


def test_reduceat_of_a_scalar_and_an_out_of_the_wrong_shape_are_refused():
    with pytest.raises(TypeError, match="cannot reduceat on a scalar"):
        ex.add.reduceat(to_dev(np.float64(1.0)), [0])
    out = to_dev(np.full(3, 7.0))
    with pytest.raises(ValueError, match=r"out= has shape \(3,\), but the result's shape is \(2,\)"):
        ex.add.reduceat(to_dev(np.ones(6)), [0, 3], out=out)
    _same(host(out), np.full(3, 7.0))
