"""A device call that casts or copies a broadcast (stride 0) input copies its data, not its
shape: the copy holds one element along each broadcast axis and keeps its stride 0 there.
Elementwise calls and gufuncs (an input of another dtype than the loop's, or one an out=
overlaps), .reduce, .accumulate and .reduceat (the array cast to the accumulator) all did copy
the whole broadcast shape: a one-element array broadcast to 2**31 elements and cast from int8
to float64 took 16 GiB.  Their results are NumPy's, bit for bit."""
import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided

import ufuncgen.examples as ex
from ufuncgen import _device, device

from .conftest import SIM, ForeignArray, assert_same, host, view

pytestmark = pytest.mark.skipif(not device.is_available(), reason=str(device.unavailable_reason()))

HUGE = 2**45        # a whole copy of that many float64 (256 TiB) cannot be allocated anywhere


def _broadcast(data, shape, strides, route="from_pointer"):
    """`data` (a host array) on the device, viewed with `shape` and `strides` (0 along the
    broadcast axes): through from_pointer, or through __cuda_array_interface__ as CuPy's
    broadcast_to exports one; and the same view of the host array, for NumPy."""
    d = device.to_device(np.ascontiguousarray(data))
    h = as_strided(np.ascontiguousarray(data), shape, strides)
    if route == "from_pointer":
        return view(d, shape, strides), h
    return ForeignArray(d, shape=tuple(shape), strides=tuple(strides)), h


@pytest.mark.skipif(not SIM, reason="the simulator skips the kernels of so large a call")
@pytest.mark.parametrize("call", [
    lambda b: ex.add.reduce(b(np.int8, (HUGE,)), dtype=np.float64),
    lambda b: ex.add.reduce(b(np.int64, (4, HUGE // 4)), axis=1, dtype=np.float64,
                            where=b(np.bool_, (4, HUGE // 4))),
    lambda b: ex.add.reduceat(b(np.int8, (HUGE,)), [0, 5], dtype=np.float64),
    lambda b: ex.l2_norm(b(np.int8, (3, HUGE))),            # a gufunc: int8 into float16
], ids=["reduce", "reduce where=", "reduceat", "gufunc"])
def test_the_cast_of_a_broadcast_input_copies_its_one_element_not_its_shape(call):
    def one_element_broadcast(dtype, shape):
        one = device.to_device(np.ones(1, dtype))
        return view(one, shape, (0,) * len(shape))

    previous = _device.sim_set_skip_kernels(True)   # the allocations are the point here
    try:
        call(one_element_broadcast)     # was: out of memory, allocating 256 TiB for the copy
    finally:
        _device.sim_set_skip_kernels(previous)


@pytest.mark.parametrize("route", ["from_pointer", "cuda_array_interface"])
@pytest.mark.parametrize("dtype", [np.int8, np.int64])
def test_elementwise_casts_of_broadcast_inputs_give_numpys_results(route, dtype, rng):
    data = rng.integers(-100, 100, (1, 5)).astype(dtype)
    d, h = _broadcast(data, (4, 5), (0, data.itemsize), route)
    mask = rng.random((4, 5)) < 0.5
    out_h = np.full((4, 5), -7.0)
    out_d = device.to_device(out_h)
    assert_same(host(ex.add(d, 1.5, dtype=np.float64)), np.add(h, 1.5, dtype=np.float64))
    ex.add(d, 2, dtype=np.float64, where=device.to_device(mask), out=out_d)
    np.add(h, 2, dtype=np.float64, where=mask, out=out_h)
    assert_same(host(out_d), out_h)


def test_an_out_that_a_broadcast_input_reads_gets_the_result_of_computing_from_a_copy(rng):
    # x: out's first row, broadcast down its rows; writing row 0 must not change what later
    # rows read, as NumPy computes from a copy
    values = rng.integers(-9, 9, (4, 3)).astype(np.float64)
    out_h, out_d = values.copy(), device.to_device(values)
    ex.add(view(out_d, (4, 3), (0, 8)), 1.0, out=out_d)
    np.add(as_strided(out_h, (4, 3), (0, 8)), 1.0, out=out_h)
    assert_same(host(out_d), out_h)
    assert_same(out_h, np.tile(values[0] + 1.0, (4, 1)))

    # a gufunc: matmul(x, y, out=y) with x y's first row broadcast down its rows
    y = rng.integers(-9, 9, (3, 3)).astype(np.float64)
    y_h, y_d = y.copy(), device.to_device(y)
    ex.matmul(view(y_d, (3, 3), (0, 8)), y_d, out=y_d)
    ex.matmul(as_strided(y_h, (3, 3), (0, 8)), y_h, out=y_h)
    assert_same(host(y_d), y_h)
    assert_same(y_h, np.tile(y[0], (3, 1)) @ y)


def test_a_gufunc_casts_an_input_broadcast_along_its_core_axis(rng):
    data = rng.integers(-9, 9, (3, 1)).astype(np.int8)
    d, h = _broadcast(data, (3, 6), (1, 0))
    assert_same(host(ex.l2_norm(d)), ex.l2_norm(h))       # the host path: NumPy's loop


REDUCE_CASES = [  # shape, strides in elements (0: broadcast), axis, keyword arguments
    ((6,), (0,), None, {}),
    ((4, 5), (0, 1), 0, {}),
    ((4, 5), (0, 1), 1, {"keepdims": True}),
    ((4, 5), (1, 0), None, {}),
    ((3, 4, 5), (5, 0, 1), (0, 1), {}),
    ((3, 4, 5), (0, 5, 1), (1, 2), {"keepdims": True}),
    ((3, 70, 2), (2, 0, 1), (0, 1), {}),
]


@pytest.mark.parametrize("shape, strides, axis, kwargs", REDUCE_CASES)
@pytest.mark.parametrize("dtype", [np.int8, np.int64])
def test_reductions_of_cast_broadcast_arrays_give_numpys_results(shape, strides, axis, kwargs,
                                                                dtype, rng):
    data_shape = tuple(1 if s == 0 else n for n, s in zip(shape, strides))
    data = rng.integers(-50, 50, data_shape).astype(dtype)
    d, h = _broadcast(data, shape, tuple(s * data.itemsize for s in strides))
    mask = rng.random(shape) < 0.6
    assert_same(host(ex.add.reduce(d, axis=axis, dtype=np.float64, **kwargs)),
                np.add.reduce(h, axis=axis, dtype=np.float64, **kwargs))
    assert_same(host(ex.add.reduce(d, axis=axis, dtype=np.float64, where=device.to_device(mask),
                                   **kwargs)),
                np.add.reduce(h, axis=axis, dtype=np.float64, where=mask, **kwargs))
    # a mask broadcast as the array is: the copy's shared axes stay shared
    bmask = as_strided(mask, shape, tuple(0 if s == 0 else m for s, m in zip(strides,
                                                                            mask.strides)))
    dmask = view(device.to_device(mask), shape, bmask.strides)
    assert_same(host(ex.add.reduce(d, axis=axis, dtype=np.float64, where=dmask, **kwargs)),
                np.add.reduce(h, axis=axis, dtype=np.float64, where=bmask, **kwargs))
    # into an out= of another dtype
    want = np.add.reduce(h, axis=axis, dtype=np.float64, **kwargs)
    out = device.device_array(want.shape, np.float32)
    ex.add.reduce(d, axis=axis, dtype=np.float64, out=out, **kwargs)
    assert_same(host(out), want.astype(np.float32))


@pytest.mark.parametrize("shape, strides, axis", [
    ((5, 4), (0, 1), 0), ((5, 4), (0, 1), 1), ((5, 4), (1, 0), 0), ((3, 70), (1, 0), 1)])
def test_a_reduction_without_an_identity_into_another_dtype_starts_from_its_first_elements(
        shape, strides, axis, rng):
    # custom_op has no identity: NumPy starts from the first elements, passed through out='s
    # dtype (int64 here), so the copy keeps those of a broadcast reduced axis apart
    data_shape = tuple(1 if s == 0 else n for n, s in zip(shape, strides))
    data = (rng.integers(1, 4, data_shape) / 4).astype(np.float32)
    d, h = _broadcast(data, shape, tuple(s * data.itemsize for s in strides))
    want = ex.custom_op.reduce(h, axis=axis, dtype=np.float64, out=np.zeros(
        shape[1 - axis], np.int64))
    out = device.to_device(np.zeros(shape[1 - axis], np.int64))
    ex.custom_op.reduce(d, axis=axis, dtype=np.float64, out=out)
    assert_same(host(out), want)


def test_short_reductions_of_broadcast_floats_keep_numpys_calls_and_bits(rng):
    # NumPy's buffer takes all 26 elements of a (2, 13) array broadcast along its last axis
    # in one call of its pairwise order: the copy keeps them in a row
    data = (rng.standard_normal((2, 1)) * 3).astype(np.float32)
    for dtype in [None, np.float64]:
        d, h = _broadcast(data, (2, 13), (4, 0))
        assert_same(host(ex.add.reduce(d, axis=None, dtype=dtype)),
                    np.asarray(np.add.reduce(h, axis=None, dtype=dtype)))
        d, h = _broadcast(data.T.copy(), (13, 2), (0, 4))
        assert_same(host(ex.add.reduce(d, axis=None, dtype=dtype)),
                    np.asarray(np.add.reduce(h, axis=None, dtype=dtype)))


@pytest.mark.parametrize("axis", [0, 1])
def test_accumulations_of_cast_broadcast_arrays_give_numpys_results(axis, rng):
    data = rng.integers(-50, 50, (1, 4)).astype(np.int8)
    d, h = _broadcast(data, (5, 4), (0, 1))
    assert_same(host(ex.add.accumulate(d, axis=axis, dtype=np.float64)),
                np.add.accumulate(h, axis=axis, dtype=np.float64))
    # into an out= whose first row the array is, broadcast: computed from a copy, as NumPy does
    values = rng.integers(-9, 9, (5, 4)).astype(np.float64)
    out_h, out_d = values.copy(), device.to_device(values)
    ex.add.accumulate(view(out_d, (5, 4), (0, 8)), axis=axis, out=out_d)
    np.add.accumulate(as_strided(out_h, (5, 4), (0, 8)), axis=axis, out=out_h)
    assert_same(host(out_d), out_h)


@pytest.mark.parametrize("axis", [0, 1])
def test_reduceats_of_cast_broadcast_arrays_give_numpys_results(axis, rng):
    data = rng.integers(-50, 50, (1, 6)).astype(np.int64)
    d, h = _broadcast(data, (5, 6), (0, 8))
    indices = [0, 2, 1, 4]
    assert_same(host(ex.add.reduceat(d, indices, axis=axis, dtype=np.float64)),
                np.add.reduceat(h, indices, axis=axis, dtype=np.float64))
    # into an out= the array overlaps: its first row, broadcast
    values = rng.integers(-9, 9, (5, 6)).astype(np.float64)
    out_h, out_d = values.copy(), device.to_device(values)
    segments = list(range(values.shape[axis]))          # a result of out='s shape
    ex.add.reduceat(view(out_d, (5, 6), (0, 8)), segments, axis=axis, out=out_d)
    np.add.reduceat(as_strided(out_h, (5, 6), (0, 8)), segments, axis=axis, out=out_h)
    assert_same(host(out_d), out_h)
