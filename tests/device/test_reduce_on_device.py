"""add.reduce on device arrays: one axis, several, all, keepdims, initial, dtype and out=."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import _device, device

from .conftest import host, to_dev, view


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, -1, None, (0, 2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_add_reduce_matches_numpys_sum(dtype, axis, keepdims, rng):
    x = (rng.integers(-1000, 1000, (5, 6, 7)) if np.dtype(dtype).kind == "i"
         else rng.standard_normal((5, 6, 7))).astype(dtype)
    got = host(ex.add.reduce(to_dev(x), axis=axis, keepdims=keepdims))
    want = np.add.reduce(x, axis=axis, keepdims=keepdims)
    assert np.shape(got) == np.shape(want) and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 100_003])
def test_long_reductions_split_into_chunks_give_exact_integer_sums(n, rng):
    x = rng.integers(-2**40, 2**40, n)
    assert int(host(ex.add.reduce(to_dev(x)))) == int(x.sum())


@pytest.mark.parametrize("shape, axis, layout", [
    ((2**20 + 1,), 0, "strided"), ((3, 300_001), 1, "contiguous"),
    ((300_001, 3), 0, "contiguous"), ((100_000, 2), 0, "contiguous")])
def test_a_split_reduction_reduces_its_partial_results_in_steps_until_few_are_left(
        shape, axis, layout, rng):
    # issue 12: one thread per output added up every partial result of the first launch
    # (131,072 of them for a sum of 2**27 float32 on an H200: 7.5 ms of the 7.7)
    x = rng.integers(-2**40, 2**40, shape)
    d = to_dev(x, layout)
    before = _device.launch_count()
    got = host(ex.add.reduce(d, axis=axis))
    last = _device.last_launch()
    np.testing.assert_array_equal(got, x.sum(axis=axis))
    assert _device.launch_count() - before >= 3
    assert last["kind"] == "reduce" and np.prod(last["reduce_shape"]) < 128, last


@pytest.mark.parametrize("shape, axis", [((4096,), 0), ((2**20 + 1,), 0), ((1000, 500), None),
                                         ((1, 70_001), 1)])
@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.float32])
@pytest.mark.parametrize("initial", [None, 3])
def test_one_long_contiguous_line_into_one_result_is_one_device_wide_reduction(shape, axis, dtype,
                                                                             initial, rng):
    # CUB's DeviceReduce under CUDA, from the identity or initial= (counted once); the
    # reduce kernel in order on one thread on the simulator
    x = (rng.integers(-2**40, 2**40, shape) if dtype == np.int64
         else rng.uniform(-1, 1, shape)).astype(dtype)
    keywords = {} if initial is None else {"initial": initial}
    before = _device.launch_count()
    got = host(ex.add.reduce(to_dev(x), axis=axis, **keywords))
    assert _device.launch_count() - before == 1
    assert _device.last_launch()["reduce_shape"] == (x.size,)
    want = np.add.reduce(x.astype(np.float64 if dtype != np.int64 else dtype), axis=axis,
                         **keywords)
    assert got.dtype == dtype and got.shape == want.shape
    if dtype == np.int64:
        np.testing.assert_array_equal(got, want)
    else:   # any order of x.size - 1 additions, each rounded once
        bound = x.size * float(np.finfo(dtype).eps) * (np.abs(x.astype(np.float64)).sum() + 3)
        assert abs(got.item() - want.item()) <= bound


@pytest.mark.parametrize("shape, axis", [((4096,), 0), ((2**20 + 1,), 0), ((1000, 500), None),
                                         ((1, 70_001), 1), ((3, 50_000), 1)])
@pytest.mark.parametrize("initial", [None, 3])
def test_a_long_float16_line_is_reduced_in_chunks_whose_float_partials_round_once(shape, axis,
                                                                                  initial, rng):
    # add's float16 loop steps in float (model.widened_reduce_signatures): the chunks'
    # partial results stay floats (the partials_in/partials_out of device_kernel.h) and the
    # result rounds once, and there is no device-wide total, which would round every step.
    # Rounding every step was hundreds of ULPs off; rounding each partial result to float16,
    # 47 on an H100's chunk counts (the test below).
    x = rng.uniform(-1, 1, shape).astype(np.float16)
    keywords = {} if initial is None else {"initial": initial}
    before = _device.launch_count()
    got = host(ex.add.reduce(to_dev(x), axis=axis, **keywords))
    assert _device.launch_count() - before >= 2
    assert got.dtype == np.float16
    exact = np.add.reduce(x.astype(np.float64), axis=axis, **keywords)
    ulp = np.spacing(np.abs(exact.astype(np.float16))).astype(np.float64)
    assert np.all(np.abs(got.astype(np.float64) - exact) <= 0.51 * ulp), (got, exact)


@pytest.mark.parametrize("n", [1, 4095, 4096, 10_000, 100_003])
@pytest.mark.parametrize("initial", [5, -7, 0])
@pytest.mark.parametrize("shape", ["1-d", "rows", "columns"])
def test_initial_counts_once_however_the_reduction_is_split(n, initial, shape, rng):
    # issue 12: a split reduction applied initial= in every chunk and again when combining
    x = rng.integers(-2**40, 2**40, n)
    x, axis = {"1-d": (x, 0), "rows": (np.stack([x, -x, x]), 1),
               "columns": (np.stack([x, -x, x], axis=1), 0)}[shape]
    got = host(ex.add.reduce(to_dev(x), axis=axis, initial=initial))
    np.testing.assert_array_equal(got, np.add.reduce(x, axis=axis, initial=initial))


needs_the_simulator = pytest.mark.skipif(device.backend() != "sim",
                                         reason="sets the simulator's multiprocessor count")


def run_on_an_h100s_multiprocessors(probe):
    """Runs `probe` in a Python of its own, on a simulator with an H100's 132 multiprocessors."""
    from .test_runtime import run_python
    return run_python(probe, UFUNCGEN_DEVICE="sim", UFUNCGEN_SIM_MULTIPROCESSORS="132")


@needs_the_simulator
def test_an_h100s_chunking_of_long_reductions_gives_numpys_sums():
    # issue 12: the simulator's 2 SMs never produced the chunk counts a 132-SM H100 uses
    probe = ("import numpy as np, ufuncgen.examples as ex, ufuncgen._device as d\n"
             "from ufuncgen import device\n"
             "x = np.random.default_rng(7).integers(-2**40, 2**40, (3, 2_000_003))\n"
             "got = ex.add.reduce(device.to_device(x), axis=1, initial=11).copy_to_host()\n"
             "f = np.random.default_rng(8).standard_normal(3_000_001).astype(np.float32)\n"
             "s = float(ex.add.reduce(device.to_device(f)).copy_to_host())\n"
             "ex.add(device.to_device(f), 1.0)\n"
             "print(d.multiprocessor_count(0), d.last_launch()['grid'],\n"
             "      (got == x.sum(axis=1) + 11).all(),\n"
             "      abs(s - f.astype(np.float64).sum()) <= 1e-4 * np.abs(f).sum())\n")
    result = run_on_an_h100s_multiprocessors(probe)
    sms, grid, exact, close = result.stdout.split()
    assert (sms, exact, close) == ("132", "True", "True"), result.stderr
    assert int(grid) == 132 * 32    # grids (and chunk counts) sized for 132 SMs, not for 2


@needs_the_simulator
def test_an_h100s_chunking_of_a_long_float16_line_rounds_once():
    # Found on an H200: with 132 SMs' chunk counts the float16 partial results were rounded
    # each, up to 47 ULPs off; they stay floats now, and only the result rounds.
    probe = ("import numpy as np, ufuncgen.examples as ex\n"
             "from ufuncgen import device\n"
             "x = np.random.default_rng(5).uniform(-1, 1, (1000, 500)).astype(np.float16)\n"
             "got = ex.add.reduce(device.to_device(x), axis=None, initial=3).copy_to_host()\n"
             "exact = x.astype(np.float64).sum() + 3\n"
             "print(abs(float(got) - exact) / float(np.spacing(np.float16(abs(exact)))))\n")
    result = run_on_an_h100s_multiprocessors(probe)
    assert float(result.stdout) <= 0.51, (result.stdout, result.stderr)


def test_a_bad_multiprocessor_count_is_refused_naming_the_variable():
    from .test_runtime import run_python
    result = run_python("import ufuncgen._device as d\ntry:\n    d.multiprocessor_count(0)\n"
                        "except ValueError as e:\n    print(e)\n",
                        UFUNCGEN_DEVICE="sim", UFUNCGEN_SIM_MULTIPROCESSORS="many")
    assert result.stdout.startswith("UFUNCGEN_SIM_MULTIPROCESSORS must be a whole number")


def test_reduce_over_a_strided_view_and_a_reversed_view(rng):
    x = rng.standard_normal((30, 40))
    np.testing.assert_allclose(host(ex.add.reduce(to_dev(x, "strided"), axis=1)), x.sum(1))
    np.testing.assert_allclose(host(ex.add.reduce(to_dev(x, "reversed"), axis=None)), x.sum())


def test_reduce_of_an_empty_array_gives_the_identity_or_initial():
    x = to_dev(np.zeros((0, 3)))
    np.testing.assert_array_equal(host(ex.add.reduce(x, axis=0)), np.zeros(3))
    np.testing.assert_array_equal(host(ex.add.reduce(x, axis=0, initial=5.0)), np.full(3, 5.0))


def test_reduce_dtype_and_out_follow_numpy(rng):
    x = rng.integers(-100, 100, (4, 5)).astype(np.int32)
    got = ex.add.reduce(to_dev(x), axis=1)
    assert got.dtype == ex.add.reduce(x, axis=1).dtype
    out = device.device_array(4, np.float64)
    assert ex.add.reduce(to_dev(x.astype(np.float64)), axis=1, out=out) is out
    np.testing.assert_array_equal(host(out), x.sum(1))


def test_reduce_of_more_than_two_to_the_31_elements_uses_64_bit_indexing():
    ones = to_dev(np.ones(1, np.int64))
    n = 2**31 + 5
    broadcast = view(ones, (n,), (0,))
    assert int(host(ex.add.reduce(broadcast))) == n


def test_reduce_refuses_a_host_where_mask_and_a_host_out():
    x = to_dev(np.ones(4))
    with pytest.raises(TypeError, match="where= is a host numpy.ndarray"):
        ex.add.reduce(x, where=np.ones(4, bool))
    with pytest.raises(TypeError, match="host and device"):
        ex.add.reduce(x, out=np.zeros(()))


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float64])
@pytest.mark.parametrize("shape, mask_shape, axis", [
    ((5, 6), (5, 6), 1), ((5, 6), (6,), 0), ((5, 6), (5, 1), None), ((4, 3, 2), (3, 1), (0, 2)),
    ((7,), (), 0), ((0, 3), (3,), 0), ((3, 5000), (5000,), 1),
])
def test_a_where_mask_on_the_device_gives_numpys_masked_sum(dtype, shape, mask_shape, axis, rng):
    x = (rng.integers(-50, 50, shape) if np.dtype(dtype).kind == "i"
         else rng.standard_normal(shape)).astype(dtype)
    mask = rng.random(mask_shape) < 0.6
    got = host(ex.add.reduce(to_dev(x), axis=axis, where=to_dev(np.asarray(mask))))
    want = np.add.reduce(x, axis=axis, where=mask)
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


def test_reduce_of_host_arrays_still_goes_to_numpy():
    assert ex.add.reduce(np.arange(5.0)) == 10.0


# ----------------------------------------------------------------------------- associative or not

@pytest.fixture
def order_module(reduce_order_module_dir, monkeypatch):
    import importlib
    monkeypatch.syspath_prepend(str(reduce_order_module_dir))
    return importlib.import_module("ufg_order")


def test_a_function_without_associative_reduces_each_output_in_numpys_order_on_the_device(order_module):
    # Long enough that an associative function's reduction is split into chunks.
    x = np.random.default_rng(5).standard_normal(100_003).astype(np.float32)
    in_order = np.add.accumulate(x)[-1]              # sequential float32 sums
    got = host(order_module.plus_in_order.reduce(to_dev(x)))
    assert got.tobytes() == np.float32(in_order).tobytes()
    x2 = np.stack([x, x[::-1]])
    got = host(order_module.plus_in_order.reduce(to_dev(x2), axis=1))
    assert got.tobytes() == np.array([in_order, np.add.accumulate(x[::-1])[-1]], np.float32).tobytes()


def test_an_associative_function_may_split_its_device_reduction_and_stays_accurate(order_module):
    # a strided line: one contiguous line would be one device-wide reduction instead, in
    # order on the simulator
    x = np.random.default_rng(5).standard_normal(100_003).astype(np.float32)
    got = float(host(order_module.plus.reduce(to_dev(x, "strided"))))
    exact = float(np.sum(x.astype(np.float64)))
    assert abs(got - exact) <= 64 * np.finfo(np.float32).eps * float(np.abs(x).sum())
    # Split into chunks: not the in-order sum that plus_in_order gives on the same data.
    assert got != float(np.add.accumulate(x)[-1])


def test_a_built_associative_function_reduces_on_the_host_with_the_same_bits_as_the_shipped_add(order_module):
    x = np.random.default_rng(6).standard_normal(300_007).astype(np.float32)
    assert order_module.plus.reduce(x).tobytes() == ex.add.reduce(x).tobytes()
    assert order_module.plus_in_order.reduce(x).tobytes() == np.add.accumulate(x)[-1].tobytes()


# ----------------------------------------------------------------------------- keyword values as NumPy takes them

@pytest.mark.parametrize("axis", [np.int64(0), np.array(1), (np.int32(0), 1), np.intp(-1)])
def test_reduce_takes_numpy_integers_as_axes_like_numpy(axis):
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(host(ex.add.reduce(to_dev(x), axis=axis)),
                                  np.add.reduce(x, axis=axis))


@pytest.mark.parametrize("axis", [True, 1.0, "0", [0], (0, True), (1.0,), np.True_])
def test_reduce_refuses_the_axes_numpy_refuses_with_its_exception_type(axis):
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(TypeError):
        np.add.reduce(x, axis=axis)
    with pytest.raises(TypeError, match="axis"):
        ex.add.reduce(to_dev(x), axis=axis)


def test_a_0d_array_takes_axis_0_or_minus_1_but_not_in_a_tuple():
    x = np.array(3.5)
    assert float(host(ex.add.reduce(to_dev(x), axis=np.int64(-1)))) == 3.5
    with pytest.raises(np.exceptions.AxisError, match="out of bounds"):
        ex.add.reduce(to_dev(x), axis=(0,))


@pytest.mark.parametrize("keepdims", [True, False, 1, 2, -1, 0, np.int64(1), np.array(0)])
def test_reduce_takes_keepdims_as_numpy_does(keepdims):
    x = np.arange(12.0).reshape(3, 4)
    want = np.add.reduce(x, axis=1, keepdims=keepdims)
    got = host(ex.add.reduce(to_dev(x), axis=1, keepdims=keepdims))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("keepdims", [2.5, "x", None, np.True_, [1]])
def test_reduce_refuses_the_keepdims_numpy_refuses(keepdims):
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(TypeError):
        np.add.reduce(x, axis=1, keepdims=keepdims)
    with pytest.raises(TypeError):
        ex.add.reduce(to_dev(x), axis=1, keepdims=keepdims)


def test_reduce_takes_where_true_as_a_numpy_bool_and_initial_as_numpys_no_value():
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(host(ex.add.reduce(to_dev(x), where=np.True_)), x.sum(0))
    np.testing.assert_array_equal(host(ex.add.reduce(to_dev(x), initial=np._NoValue)), x.sum(0))


def test_reduce_refuses_an_out_tuple_holding_none_as_numpy_does():
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(TypeError):
        np.add.reduce(x, out=(None,))
    with pytest.raises(TypeError, match="out="):
        ex.add.reduce(to_dev(x), out=(None,))


def test_reduce_arguments_by_position_and_keyword():
    x = np.arange(24.0).reshape(2, 3, 4)
    got = host(ex.add.reduce(to_dev(x), 1, None, None, True, 1.5))
    np.testing.assert_array_equal(got, np.add.reduce(x, 1, None, None, True, 1.5))
    got = host(ex.add.reduce(to_dev(x), axis=(0, 2), keepdims=True, stream=None))
    np.testing.assert_array_equal(got, np.add.reduce(x, axis=(0, 2), keepdims=True))
    out = to_dev(np.zeros(3))
    assert ex.add.reduce(array=to_dev(x), axis=(0, 2), out=out) is out
    np.testing.assert_array_equal(host(out), np.add.reduce(x, axis=(0, 2)))
    got = ex.add.reduce(array=to_dev(x), axis=1)        # array= alone reaches the device too
    assert isinstance(got, device.DeviceArray)
    np.testing.assert_array_equal(host(got), np.add.reduce(x, axis=1))
    with pytest.raises(TypeError, match="multiple values for 'axis'"):
        ex.add.reduce(to_dev(x), 0, axis=1)
    with pytest.raises(TypeError, match=r"add.reduce\(\) got an unexpected keyword argument "
                                        "'casting'"):     # NumPy's words: reduce() takes none
        ex.add.reduce(to_dev(x), casting="unsafe")
    with pytest.raises(TypeError, match="at most 7 arguments"):
        ex.add.reduce(to_dev(x), 0, None, None, False, 0.0, True, None)


# ----------------------------------------------------------------------------- out=

def test_reduce_into_strided_and_keepdims_outs_of_the_accumulators_dtype(rng):
    x = rng.standard_normal((6, 5))
    big = to_dev(np.full(10, 7.0))
    out = view(big, (5,), (16,))                       # every second element
    assert ex.add.reduce(to_dev(x), axis=0, out=out) is out
    want = np.full(10, 7.0)
    want[::2] = x.sum(0)
    np.testing.assert_allclose(host(big), want)
    out = to_dev(np.zeros((6, 1)))
    ex.add.reduce(to_dev(x), axis=1, out=out, keepdims=True)
    np.testing.assert_allclose(host(out), x.sum(1, keepdims=True))


def test_a_long_associative_reduction_into_out_gives_the_exact_integer_sum(rng):
    x = rng.integers(-2**40, 2**40, 100_003)
    out = to_dev(np.zeros((), np.int64))
    ex.add.reduce(to_dev(x), out=out)
    assert int(host(out)) == int(x.sum())
    out = to_dev(np.zeros((), np.float64))               # the int64 accumulator, cast after
    ex.add.reduce(to_dev(x), out=out)
    assert float(host(out)) == float(x.sum())


def test_reduce_into_an_out_that_overlaps_the_array_is_as_if_from_a_copy():
    x = np.arange(12.0).reshape(3, 4)
    d = to_dev(x)
    out = view(d, (4,), (8,))                          # the first row of the array itself
    ex.add.reduce(d, axis=0, out=out)
    want = x.copy()
    np.add.reduce(want, axis=0, out=want[0])
    np.testing.assert_array_equal(host(d), want)


@pytest.mark.parametrize("shape, axis, out_shape, out_strides", [
    ((2, 2), 0, (2,), (0,)), ((2, 2), 1, (2,), (0,)), ((3, 4, 5), 1, (3, 5), (0, 8)),
    ((3, 4, 5), 1, (3, 5), (40, 0)), ((3, 4, 5), (0, 2), (4,), (0,)),
    ((3, 4, 5), 2, (3, 4), (0, 0))],
    ids=["rows", "columns", "first kept axis", "last kept axis", "two reduced", "all shared"])
@pytest.mark.parametrize("initial", [None, 100.0])
def test_reduce_into_an_out_whose_elements_share_memory_is_numpys_sum_into_each_address(
        shape, axis, out_shape, out_strides, initial):
    # NumPy adds into a shared address every element whose result lands there, from the start
    # value once; the device computed each result apart and kept the last.  Integers in
    # float64: exact in any order.
    from numpy.lib.stride_tricks import as_strided
    x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    size = 1 + sum((n - 1) * s for n, s in zip(out_shape, out_strides)) // 8
    kw = {} if initial is None else {"initial": initial}
    want = np.full(size, -1.0)
    np.add.reduce(x, axis=axis, out=as_strided(want, out_shape, out_strides, writeable=True),
                  **kw)
    buffer = to_dev(np.full(size, -1.0))
    ex.add.reduce(to_dev(x), axis=axis, out=view(buffer, out_shape, out_strides), **kw)
    np.testing.assert_array_equal(host(buffer), want)


def test_reduce_into_shared_out_elements_is_refused_where_the_order_would_show(order_module):
    # NumPy's result then depends on the order of its loop: the device says so, and writes
    # nothing.
    x = to_dev(np.arange(1.0, 5.0, dtype=np.float32).reshape(2, 2))
    buffer = to_dev(np.full(1, -1.0, np.float32))
    shared = view(buffer, (2,), (0,))
    message = (r"plus_in_order.reduce: out= has elements that share memory; the device "
               r"reduces into such an out= only when they share it by a zero stride, the "
               r"function is associative and has a start value")
    with pytest.raises(ValueError, match=message):
        order_module.plus_in_order.reduce(x, axis=0, out=shared)
    crossed = to_dev(np.full(3, -1.0))                 # elements (0, 1) and (1, 0) share
    with pytest.raises(ValueError, match=r"add.reduce: out= has elements that share memory"):
        ex.add.reduce(to_dev(np.ones((2, 2, 3))), axis=2, out=view(crossed, (2, 2), (8, 8)))
    np.testing.assert_array_equal(host(buffer), [-1.0])
    np.testing.assert_array_equal(host(crossed), [-1.0] * 3)


def test_a_refused_reduce_writes_nothing():
    x = to_dev(np.arange(12.0).reshape(3, 4))
    out = to_dev(np.full(4, 7, np.int64))
    with pytest.raises(TypeError, match="add.reduce"):
        ex.add.reduce(x, axis=0, out=out, dtype=">f8")  # dtype= picks a DType, not a byte order
    np.testing.assert_array_equal(host(out), np.full(4, 7))
    with pytest.raises(np.exceptions.AxisError):
        ex.add.reduce(x, axis=(0, 5), out=to_dev(np.zeros(())))


@pytest.mark.parametrize("out_dtype", [np.int64, np.int8, np.float16, np.bool_])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_a_reduction_without_identity_starts_from_its_first_elements_cast_through_out(
        out_dtype, axis, rng):
    # custom_op (x*y + x, float64 only) has no identity: NumPy copies the first elements into
    # out= (1.92 into an int64 out is 1) and goes on from there in float64.
    array = rng.uniform(0.5, 2.5, (3, 4)).astype(np.float32)
    want = np.zeros(array.shape[1 if axis == 0 else 0], dtype=out_dtype)
    with np.errstate(all="ignore"):
        ex.custom_op.reduce(array, axis=axis, out=want)
    out = to_dev(np.zeros_like(want))
    with np.errstate(all="ignore"):
        ex.custom_op.reduce(to_dev(array), axis=axis, out=out)
    np.testing.assert_array_equal(host(out), want)


@pytest.mark.parametrize("initial", [np.array(5.0), np.array([5.0])], ids=["0-d", "1-d"])
def test_initial_on_the_device_is_refused_by_name_where_the_host_takes_a_scalar(initial):
    # NumPy takes a 0-d host array as the scalar it holds; a device array there would have to
    # be read back first, which the call does not do behind the caller's back.
    x = np.arange(4.0)
    assert np.add.reduce(x, initial=initial[()] if initial.ndim == 0 else 5.0) == 11.0
    refused = r"add\.reduce: initial= is a device array \(ufuncgen\._device\.DeviceArray\)"
    with pytest.raises(TypeError, match=refused):
        ex.add.reduce(to_dev(x), initial=device.to_device(initial))


# ---------------------------------------------------------------- the host's order and identity

@pytest.mark.parametrize("n", [3, 10, 33, 63])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_short_line_reduces_in_the_host_loops_order_for_the_same_bits(n, dtype, rng):
    """Below 64 elements the host's associative loop adds NumPy's pairwise way (reduce_order.h);
    the device's reduce does too, as its reduceat did: 1 + 9 * 2**-53 is not 1.0.  (From 64 on
    the host's blocked order and the device's chunks are the README's documented difference.)"""
    lines = [np.array([1.0] + [2.0**-53] * (n - 1)), rng.standard_normal(n) * 10.0**rng.integers(
        -8, 8, n)]
    for line in lines:
        x = np.stack([line, line[::-1]]).astype(dtype)
        for axis in (1, -1):
            want = ex.add.reduce(x, axis=axis)
            got = host(ex.add.reduce(to_dev(x), axis=axis))
            assert got.tobytes() == want.tobytes(), (got, want)


IDENTITY_NOT_NEUTRAL = """\
ufunc add_from_tenth(x, y) -> s
    types: float64(float64, float64)
    identity: 0.1
    associative: true
{
    s = x + y;
}
"""


@pytest.fixture(scope="module")
def from_tenth(tmp_path_factory, module_importer, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("from_tenth"), "ufg_from_tenth",
                           IDENTITY_NOT_NEUTRAL, "--cuda-arch", device_cuda_arch).add_from_tenth


@pytest.mark.parametrize("shape, axis", [((8, 20000), 1), ((20000, 8), 0), ((50000,), 0),
                                         ((3, 7), 1)])
@pytest.mark.parametrize("initial", [None, 0.5])
def test_a_split_reduction_starts_from_the_identity_or_initial_once(from_tenth, shape, axis,
                                                                     initial):
    """NumPy starts a reduction from the identity (or initial=) once, neutral or not; the
    device's chunks start from their first elements, and the identity comes in once, last."""
    x = np.zeros(shape)
    kwargs = {} if initial is None else {"initial": initial}
    np.testing.assert_allclose(host(from_tenth.reduce(to_dev(x), axis=axis, **kwargs)),
                               from_tenth.reduce(x, axis=axis, **kwargs), rtol=1e-12)
