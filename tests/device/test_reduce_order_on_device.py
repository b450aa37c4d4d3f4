"""The device's .reduce combines each output's elements as the host (NumPy) does: in the order
NumPy's iterator nests the reduced axes (by their strides in memory, not their index order),
and for an associative function's short reductions with the host loop's order per call of it
(NumPy hands the loop a line per call only where its inner loop runs along the reduced axes;
where it runs along the outputs, one element per call).  Device views here have the strides of
the NumPy views they are compared with."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import _device, device

from .conftest import assert_same, host

ORDER_FUNCTIONS = """\
ufunc wrapmul(a, b) -> c
    types: int64(int64, int64)
    identity: 1
{
    c = a * b + 1;
}

ufunc shift_in(a, b) -> c
    types: int64(int64, int64)
    identity: 0
{
    c = b == 0 ? a : a * 3 + b;
}

ufunc sub(a, b) -> c
    types: float64(float64, float64)
{
    c = a - b;
}
"""


@pytest.fixture(scope="module")
def order(tmp_path_factory, module_importer, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("reduce_order"), "ufg_reduce_order",
                           ORDER_FUNCTIONS, "--cuda-arch", device_cuda_arch)


def on_device(a):
    """A device view with the strides (and offset) of `a`, a view of an array whose memory is
    one dense block (C, Fortran or any order of its axes, strides positive)."""
    import ctypes
    root = a
    while isinstance(root.base, np.ndarray):
        root = root.base
    raw = np.empty(root.nbytes, np.uint8)
    ctypes.memmove(raw.ctypes.data, root.ctypes.data, root.nbytes)
    d = device.to_device(raw)
    offset = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return _device.from_pointer(d.ptr + offset, a.shape, a.dtype, a.strides, d.device, d,
                                False, 0)


def layouts(base):
    """Views of a 3-d array whose memory order is not their index order, and some that are."""
    return {
        "C": base,
        "transposed": base.T,
        "Fortran": np.asfortranarray(base),
        "permuted": base.transpose(1, 2, 0),
        "reversed middle": base[:, ::-1, :],
        "reversed, transposed": base[::-1].transpose(2, 0, 1),
        "stepped": base[:, :, ::2],
        "sliced, permuted": base[:, 1:, :].transpose(2, 0, 1),
    }


AXES = [None, (0, 1), (1, 2), (0, 2), (2, 0), (0, 1, 2), 0, 1, 2]
LAYOUTS = list(layouts(np.zeros((2, 3, 4))))


def small_ints(rng, shape):
    return rng.integers(1, 9, shape).astype(np.int64)


# ----------------------------------------------------------------------------- NumPy's order


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("axis", AXES)
def test_a_function_not_associative_reduces_several_axes_of_any_layout_in_numpys_order(
        order, layout, axis, rng):
    x = layouts(small_ints(rng, (3, 4, 6)))[layout]
    for kwargs in ({}, {"keepdims": True}, {"initial": 5}, {"initial": None}):
        for f in (order.wrapmul, order.shift_in):
            want = f.reduce(x, axis=axis, **kwargs)
            got = host(f.reduce(on_device(x), axis=axis, **kwargs))
            assert_same(np.asarray(got), np.asarray(want))


def test_a_transposed_arrays_product_over_all_axes_is_the_hosts(order):
    x = np.arange(1, 5, dtype=np.int64).reshape(2, 2)
    assert order.wrapmul.reduce(x.T, axis=None) == 65        # NumPy takes 1, 2, 3, 4
    assert int(host(order.wrapmul.reduce(on_device(x.T), axis=None))) == 65


@pytest.mark.parametrize("layout", ["transposed", "permuted", "reversed, transposed"])
@pytest.mark.parametrize("axis", [None, (0, 2), (1, 2)])
def test_a_reduction_in_numpys_order_into_an_out_of_another_layout_is_the_hosts(
        order, layout, axis, rng):
    x = layouts(small_ints(rng, (3, 4, 6)))[layout]
    want = order.shift_in.reduce(x, axis=axis, keepdims=True)
    for out_order in ("C", "F"):
        out = device.to_device(np.zeros(want.shape, np.int64, order=out_order))
        order.shift_in.reduce(on_device(x), axis=axis, keepdims=True, out=out)
        assert_same(host(out), want)


@pytest.mark.parametrize("layout", ["C", "transposed", "permuted"])
def test_a_masked_reduction_follows_numpys_order_over_the_array_and_mask_strides(
        order, layout, rng):
    x = layouts(small_ints(rng, (3, 4, 6)))[layout]
    mask = rng.random(x.shape) < 0.7
    for mask_view in (mask, np.asfortranarray(mask)):
        want = order.shift_in.reduce(x, axis=(0, 2), where=mask_view)
        got = host(order.shift_in.reduce(on_device(x), axis=(0, 2), where=on_device(mask_view)))
        assert_same(got, want)


def test_a_cast_input_keeps_numpys_order_of_its_layout(order, rng):
    x = small_ints(rng, (3, 4, 6)).astype(np.int32).transpose(2, 0, 1)
    want = order.wrapmul.reduce(x, axis=(0, 1), dtype=np.int64)
    got = host(order.wrapmul.reduce(on_device(x), axis=(0, 1), dtype=np.int64))
    assert_same(got, want)


# ----------------------------------------------------------------------------- the host loop's calls


def short_floats(rng, shape, dtype=np.float64):
    """Values whose sums round differently in different orders (within float16's range)."""
    spread = 2 if dtype == np.float16 else 6
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-spread, spread, shape)).astype(dtype)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("axis", AXES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_an_associative_short_reduction_of_any_layout_gives_the_hosts_bits(layout, axis, dtype,
                                                                           rng):
    """Under 64 elements an output, whatever NumPy hands the host loop per call (a line along
    the reduced axes, the elements of several axes buffered into one call, or one element
    where NumPy's inner loop runs along the outputs) is reduced as the host loop takes it."""
    x = layouts(short_floats(rng, (3, 4, 5), dtype))[layout]
    for kwargs in ({}, {"initial": None}, {"initial": 1.5}, {"keepdims": True}):
        want = ex.add.reduce(x, axis=axis, **kwargs)
        got = host(ex.add.reduce(on_device(x), axis=axis, **kwargs))
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (layout, axis, kwargs)


@pytest.mark.parametrize("shape, axis", [((9, 6), 0), ((3, 2), 0), ((9, 6), 1), ((40, 7), 0),
                                         ((7, 40), 1)])
@pytest.mark.parametrize("initial", [0.0, 1.5, None])
def test_columns_of_a_c_array_add_up_row_by_row_from_initial_as_on_the_host(shape, axis,
                                                                            initial, rng):
    """NumPy's inner loop runs along a C array's rows when reducing its columns: the host loop
    gets one element of each output per call, so each column adds up in order, from initial=."""
    x = short_floats(rng, shape)
    want = ex.add.reduce(x, axis=axis, initial=initial)
    got = host(ex.add.reduce(device.to_device(x), axis=axis, initial=initial))
    assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize("layout", ["C", "transposed", "stepped"])
def test_an_associative_short_reduction_with_a_cast_or_an_out_gives_the_hosts_bits(layout, rng):
    x = layouts(short_floats(rng, (3, 4, 5)))[layout]
    for axis in (None, (0, 1), (1, 2), 0):
        want = ex.add.reduce(x.astype(np.float32), axis=axis, dtype=np.float64)
        got = host(ex.add.reduce(on_device(x.astype(np.float32)), axis=axis, dtype=np.float64))
        assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (axis, "dtype=")
        want = ex.add.reduce(x, axis=axis, keepdims=True)
        for out_order in ("C", "F"):
            out = device.to_device(np.zeros(want.shape, order=out_order))
            ex.add.reduce(on_device(x), axis=axis, keepdims=True, out=out)
            assert host(out).tobytes() == want.tobytes(), (axis, out_order)


# ----------------------------------------------------------------------------- where= checks


@pytest.mark.parametrize("kwargs", [{}, {"initial": 0.0}])
def test_a_mask_of_another_dtype_than_bool_is_numpys_type_error_before_the_identity_check(
        order, kwargs):
    x = np.arange(12.0).reshape(3, 4)
    mask = np.ones(4, np.int8)
    with pytest.raises(TypeError):
        order.sub.reduce(x, axis=0, where=mask, **kwargs)
    with pytest.raises(TypeError, match="where= must be a bool array, got int8"):
        order.sub.reduce(device.to_device(x), axis=0, where=device.to_device(mask), **kwargs)
