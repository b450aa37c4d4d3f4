"""`.accumulate` on device arrays: NumPy's semantics (the reference is NumPy's own accumulate
of the same ufunc on host copies), any axis and layout, dtype=, out= (cast, in place, a
tuple of one), with and without identity, and NumPy's errors."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from .conftest import assert_same as _same, host, to_dev

LAYOUTS = ["contiguous", "strided", "reversed", "fortran"]


def _data(dtype, shape, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-2**40, 2**40, shape).astype(dtype)
    return rng.uniform(-4, 4, shape).astype(dtype)


# The seed functions declared `associative: true` (signatures/examples.ufunc).
ASSOCIATIVE = ("add",)


# The least line length the device scans in chunks (UFG_ACCUMULATE_MIN_SPLIT in
# src/device/call/reduction.h).
MIN_SPLIT = 1024


def _reordered(fn, x, axis):
    """Whether the device may scan in chunks: an associative function over a long axis."""
    return fn.ufunc.__name__ in ASSOCIATIVE and x.ndim > 0 and x.shape[axis] >= MIN_SPLIT


def _close_to_exact(got, x, axis):
    """A float scan rounded in any order: within (j + 1) eps of the partial sums of |x| at
    element j, from the exact (float64 or wider) cumulative sum."""
    wide = np.asarray(x, dtype=np.longdouble)
    exact = np.cumsum(wide, axis=axis)
    j = np.moveaxis(np.indices(x.shape)[axis], 0, 0) + 1
    bound = (j + 1) * np.finfo(x.dtype).eps * np.cumsum(np.abs(wide), axis=axis)
    assert got.dtype == x.dtype and got.shape == x.shape
    assert (np.abs(got.astype(np.longdouble) - exact) <= bound).all()


@pytest.mark.parametrize("name, dtype", [
    ("add", np.int64), ("add", np.float16), ("add", np.float32), ("add", np.float64),
    ("custom_op", np.float64), ("hypot", np.float32)])
@pytest.mark.parametrize("shape, axis", [
    ((0,), 0), ((1,), 0), ((7,), 0), ((5000,), 0), ((5000,), -1), ((4, 6), 0), ((4, 6), 1),
    ((3, 0, 2), 1), ((3, 4, 5), 1), ((3, 4, 5), -1), ((2, 3, 4, 5), 2)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_accumulate_matches_numpys_accumulate(name, dtype, shape, axis, layout, rng):
    fn = getattr(ex, name)
    x = _data(dtype, shape, rng)
    if name == "custom_op":
        x = rng.uniform(-1.05, 1.05, shape)            # x*y + x stays finite along 5000
    with np.errstate(all="ignore"):
        want = fn.ufunc.accumulate(x, axis=axis)
        got = host(fn.accumulate(to_dev(x, layout), axis=axis))
    if _reordered(fn, x, axis) and x.dtype.kind == "f":
        _close_to_exact(got, x, axis)
    else:
        _same(got, want)


# The most contiguous lines scanned whole, each by the device-wide scan
# (UFG_ACCUMULATE_MAX_WHOLE_LINES in src/device/call/accumulate.c).
MAX_WHOLE_LINES = 8


@pytest.mark.parametrize("n", [1023, 1024, 1025, 4096, 5000, 8191, 100_003])
@pytest.mark.parametrize("lines, layout", [(1, "strided"), (3, "strided"), (9, "contiguous")])
def test_long_lines_of_an_associative_function_are_scanned_in_chunks_exactly(n, lines, layout,
                                                                            rng):
    from ufuncgen import _device
    x = rng.integers(-2**40, 2**40, (lines, n))
    before = _device.launch_count()
    got = host(ex.add.accumulate(to_dev(x, layout), axis=1))
    launches = _device.launch_count() - before
    np.testing.assert_array_equal(got, np.cumsum(x, axis=1))
    # the chunks' totals, their scan, the first chunk, the chunks after it (and the rest,
    # when n is no multiple of the chunk length): more than the one scan
    assert launches == 1 if n < MIN_SPLIT else launches >= 4


@pytest.mark.parametrize("n", [1023, 1024, 100_003])
@pytest.mark.parametrize("lines", [1, 3, MAX_WHOLE_LINES])
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float16])
def test_a_few_contiguous_long_lines_are_each_scanned_whole_by_the_device_wide_scan(n, lines,
                                                                                  dtype, rng):
    # one launch per line (CUB's scan under CUDA; the accumulate kernel in order on the
    # simulator, so there the results are NumPy's bits)
    from ufuncgen import _device
    x = _data(dtype, (lines, n), rng) if dtype == np.int64 else \
        rng.uniform(-1, 1, (lines, n)).astype(dtype)
    before = _device.launch_count()
    got = host(ex.add.accumulate(to_dev(x), axis=1))
    launches = _device.launch_count() - before
    assert launches == (1 if n < MIN_SPLIT else lines)
    with np.errstate(all="ignore"):
        want = ex.add.ufunc.accumulate(x, axis=1)
    if dtype == np.int64 or device.backend() == "sim" or n < MIN_SPLIT:
        _same(got, want)
    else:
        _close_to_exact(got, x, 1)
    if n >= MIN_SPLIT:
        assert _device.last_launch()["reduce_shape"] == (n,)


@pytest.mark.parametrize("n, axis", [(1023, 0), (4096, 0), (200_001, 0), (70_000, 1)])
def test_a_split_scan_of_floats_keeps_nans_infinities_and_signed_zeros(n, axis, rng):
    # the chunks' totals carry a NaN or an infinity into every later chunk, as the in-order
    # scan does; -0.0 + -0.0 stays -0.0 across the chunk boundaries
    x = rng.uniform(-1, 1, (2, n)) if axis == 1 else rng.uniform(-1, 1, n)
    line = x[0] if axis == 1 else x
    line[n // 3] = np.nan
    line[n // 2] = np.inf
    got = host(ex.add.accumulate(to_dev(x), axis=axis))
    want = np.cumsum(x, axis=axis)
    assert (np.isnan(got) == np.isnan(want)).all()
    assert (np.isposinf(got) == np.isposinf(want)).all()
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-12, atol=1e-9)
    zeros = np.full(n, -0.0)
    assert np.signbit(host(ex.add.accumulate(to_dev(zeros)))).all()


@pytest.mark.skipif(device.backend() != "sim", reason="sets the simulator's multiprocessor count")
def test_an_h100s_chunking_of_long_scans_scans_the_totals_in_levels_exactly():
    # issue 12: one thread scanned all the chunks' totals of a line (131,072 of them for 2**27
    # elements on an H100), 37x slower than cupy.cumsum; they are now split again.  Nine
    # lines (more than are scanned whole) of 2,000,003 on 132 SMs: some 29,850 chunks of 67
    # per line, whose totals are cut into some 460 chunks again, and as many totals of those
    # are left for one thread per line
    from .test_runtime import run_python
    probe = ("import numpy as np, ufuncgen.examples as ex, ufuncgen._device as d\n"
             "from ufuncgen import device\n"
             f"x = np.random.default_rng(7).integers(-2**40, 2**40, ({MAX_WHOLE_LINES + 1}, "
             "2_000_003))\n"
             "before = d.launch_count()\n"
             "got = ex.add.accumulate(device.to_device(x), axis=1).copy_to_host()\n"
             "print(d.launch_count() - before, (got == np.cumsum(x, axis=1)).all())\n")
    result = run_python(probe, UFUNCGEN_DEVICE="sim", UFUNCGEN_SIM_MULTIPROCESSORS="132")
    launches, exact = result.stdout.split()
    assert exact == "True", result.stderr
    # three launches at least (the totals, chunk 0, the chunks after it) on each of two split
    # levels, and the last, unsplit scan: one split level could not make 7
    assert int(launches) >= 2 * 3 + 1, launches


def test_a_function_not_declared_associative_is_never_split(rng):
    from ufuncgen import _device
    x = rng.uniform(-1.0001, 1.0001, 20_000)
    before = _device.launch_count()
    got = host(ex.custom_op.accumulate(to_dev(x)))
    assert _device.launch_count() - before == 1
    _same(got, ex.custom_op.ufunc.accumulate(x))


def test_axis_defaults_to_0_and_may_be_given_by_position_or_as_a_tuple_of_one(rng):
    x = _data(np.float64, (4, 5), rng)
    want = ex.add.ufunc.accumulate(x)
    _same(host(ex.add.accumulate(to_dev(x))), want)
    _same(host(ex.add.accumulate(to_dev(x), 0)), want)
    _same(host(ex.add.accumulate(to_dev(x), axis=(0,))), want)
    _same(host(ex.add.accumulate(to_dev(x), np.int64(1))), ex.add.ufunc.accumulate(x, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.float16])
def test_dtype_sets_the_accumulator_as_in_numpy(dtype, rng):
    x = rng.uniform(-30, 30, (3, 50))
    with np.errstate(all="ignore"):
        want = ex.add.ufunc.accumulate(x, axis=1, dtype=dtype)
        got = host(ex.add.accumulate(to_dev(x), axis=1, dtype=dtype))
    _same(got, want)


def test_small_integers_accumulate_in_the_loop_numpy_picks(rng):
    x = rng.integers(-100, 100, 300).astype(np.int8)
    want = ex.add.ufunc.accumulate(x)
    assert want.dtype == np.int64
    _same(host(ex.add.accumulate(to_dev(x))), want)


@pytest.mark.parametrize("out_dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("as_tuple", [False, True])
def test_out_receives_the_result_cast_to_its_dtype(out_dtype, as_tuple, rng):
    x = _data(np.float64, (4, 6), rng)
    want = ex.add.ufunc.accumulate(x, axis=1, out=np.zeros((4, 6), out_dtype))
    out = to_dev(np.zeros((4, 6), out_dtype))
    result = ex.add.accumulate(to_dev(x), axis=1, out=(out,) if as_tuple else out)
    assert result is out
    _same(host(out), want)


def test_out_may_be_the_array_itself_accumulating_in_place(rng):
    x = _data(np.float64, (5, 40), rng)
    d = to_dev(x)
    assert ex.add.accumulate(d, axis=1, out=d) is d
    _same(host(d), ex.add.ufunc.accumulate(x, axis=1))


@pytest.mark.parametrize("shape, strides, axis", [
    ((3,), (0,), 0), ((2, 2), (8, 0), 0), ((3, 2), (8, 0), 0), ((2, 3), (0, 8), 1),
    ((3, 2), (0, 8), 0)], ids=["one element", "rows share", "three rows share",
                               "columns share", "lines share"])
def test_an_array_whose_elements_share_memory_accumulated_into_itself_is_read_as_it_was(
        shape, strides, axis):
    # A broadcast view (stride 0) as out= of itself: each line read what the line before
    # wrote through the shared addresses; NumPy computes from a copy of the input.
    from numpy.lib.stride_tricks import as_strided
    from .conftest import view
    base = np.arange(1.0, 7.0)
    want = base.copy()
    shared = as_strided(want, shape, strides, writeable=True)
    np.add.accumulate(shared, axis=axis, out=shared)
    d = to_dev(base)
    v = view(d, shape, strides)
    ex.add.accumulate(v, axis=axis, out=v)
    _same(host(d), want)


def test_out_overlapping_the_array_shifted_reads_the_array_as_it_was(rng):
    from .conftest import view
    x = _data(np.float64, 41, rng)
    d = to_dev(x)
    src = view(d, (40,), d.strides)                     # elements 0..39
    dst = view(d, (40,), d.strides, d.strides[0])       # elements 1..40
    ex.add.accumulate(src, out=dst)
    want = x.copy()
    want[1:] = ex.add.ufunc.accumulate(x[:40])
    _same(host(d), want)


@pytest.mark.parametrize("call, error, message", [
    (lambda d: ex.add.accumulate(d, axis=(0, 1)), ValueError, "does not allow multiple axes"),
    (lambda d: ex.add.accumulate(d, axis=None), ValueError, "does not allow multiple axes"),
    (lambda d: ex.add.accumulate(d, axis=2), np.exceptions.AxisError, "out of bounds"),
    (lambda d: ex.add.accumulate(d, axis=1.0), TypeError, "integer"),
    (lambda d: ex.add.accumulate(d, keepdims=True), TypeError, "keepdims"),
    (lambda d: ex.add.accumulate(d, out=to_dev(np.zeros((1, 4)))), ValueError, "shape"),
    (lambda d: ex.add.accumulate(d, out=np.zeros((3, 4))), TypeError, "host and device"),
    (lambda d: ex.inner1d.accumulate(d), RuntimeError, "not defined on ufunc with signature"),
    (lambda d: ex.lucas.accumulate(d), ValueError, "binary"),
])
def test_bad_calls_raise_numpys_errors(call, error, message, rng):
    d = to_dev(_data(np.float64, (3, 4), rng))
    with pytest.raises(error, match=message):
        call(d)


@pytest.mark.parametrize("call", [
    lambda a, o: ex.add.accumulate(a, out=o),
    lambda a, o: ex.add.accumulate(array=a, out=o),
    lambda a, o: ex.add.accumulate(array=a, out=(o,)),
    lambda a, o: ex.add.accumulate(array=a, axis=0, dtype=np.float64, out=o),
    lambda a, o: ex.add.accumulate(a, 0, None, out=(o,)),
], ids=["by position", "array=", "array=, out=(o,)", "axis=, dtype=", "out=(o,)"])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_accumulate_into_a_0d_out_is_a_wrong_size_error_however_the_arguments_are_passed(
        call, n):
    out = to_dev(np.array(7.0))
    with pytest.raises(ValueError, match="shape"):
        call(to_dev(np.ones(n)), out)
    assert host(out) == 7.0


def test_a_0d_array_cannot_be_accumulated():
    with pytest.raises(TypeError, match="cannot accumulate on a scalar"):
        ex.add.accumulate(to_dev(np.float64(3)))


def test_a_refused_call_leaves_out_untouched(rng):
    out = to_dev(np.full((3, 4), 7.0))
    with pytest.raises(ValueError):
        ex.add.accumulate(to_dev(_data(np.float64, (3, 4), rng)), axis=(0, 1), out=out)
    np.testing.assert_array_equal(host(out), np.full((3, 4), 7.0))
