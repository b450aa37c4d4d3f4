"""Elementwise seed functions through the device path (the simulator in CI), against the same
independent references as the host tests, over dtypes, sizes, layouts and broadcasting."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import _device, device

from examples.conftest import (ELEMENTWISE_NAMES, check_elementwise, elementwise_inputs,
                               elementwise_reference, function_dtype_cases)
from .conftest import host, to_dev

SIZES = (0, 1, 7, 257, 10007)
CASES = function_dtype_cases(ELEMENTWISE_NAMES)


@pytest.mark.parametrize("name, dtype", CASES)
@pytest.mark.parametrize("size", SIZES)
def test_device_results_match_the_reference_at_every_size(name, dtype, size, rng):
    inputs = elementwise_inputs(name, dtype, (size,), rng)
    result = getattr(ex, name)(*[to_dev(a) for a in inputs])
    check_elementwise(name, host(result), elementwise_reference(name, *inputs), inputs)


@pytest.mark.parametrize("name, dtype", CASES)
@pytest.mark.parametrize("layout", ["strided", "reversed", "fortran"])
def test_device_results_match_the_reference_for_strided_reversed_and_fortran_inputs(name, dtype, layout, rng):
    inputs = elementwise_inputs(name, dtype, (13, 21), rng)
    result = getattr(ex, name)(*[to_dev(a, layout) for a in inputs])
    check_elementwise(name, host(result), elementwise_reference(name, *inputs), inputs)


@pytest.mark.parametrize("name, dtype", CASES)
def test_inputs_broadcast_against_each_other_as_in_numpy(name, dtype, rng):
    inputs = elementwise_inputs(name, dtype, (6, 1, 5), rng)
    shapes = [(6, 1, 5), (4, 1), (5,), (1, 1, 1)]
    inputs = [a.reshape(-1)[:int(np.prod(s))].reshape(s) if a.size >= np.prod(s) else a
              for a, s in zip(inputs, shapes)]
    result = getattr(ex, name)(*[to_dev(a) for a in inputs])
    expected = elementwise_reference(name, *np.broadcast_arrays(*inputs))
    got = host(result) if isinstance(result, tuple) else (host(result),)
    assert all(g.shape == e.shape for g, e in zip(got, expected))
    check_elementwise(name, got, expected, np.broadcast_arrays(*inputs))


def test_python_scalars_are_passed_by_value_and_resolve_like_numpy(rng):
    x = rng.uniform(-3, 3, 1000).astype(np.float32)
    result = ex.gaussian_pdf(to_dev(x), 0.0, 1.0)
    assert result.dtype == np.float32 == ex.gaussian_pdf(x, 0.0, 1.0).dtype
    check_elementwise("gaussian_pdf", host(result),
                      elementwise_reference("gaussian_pdf", x, np.float32(0), np.float32(1)),
                      [x, 0.0, 1.0])


@pytest.mark.parametrize("dtype, other", [(np.int32, 5), (np.int8, np.int16(3)), (np.uint8, 7),
                                          (np.float32, 2.5), (np.int64, 1.5), (np.float32, np.float64(2))])
def test_input_dtypes_are_cast_to_the_loop_numpy_would_pick(dtype, other):
    x = np.arange(-20, 20).astype(dtype) if np.dtype(dtype).kind != "u" else np.arange(40).astype(dtype)
    expected = ex.add(x, other)
    result = ex.add(to_dev(x), other)
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(host(result), expected)


@pytest.mark.parametrize("name, inputs, signature", [
    ("add", (np.arange(-5, 5, dtype=np.float32), 0.1), (None, None, "f8")),
    ("add", (np.arange(-5, 5, dtype=np.float32), 0.1), "dd->d"),
    ("add", (np.arange(-5, 5, dtype=np.int32), 3), ("f4", "f4", None)),
    ("add", (np.arange(-5, 5, dtype=np.float64), 0.1), "ff->f"),
    ("hypot", (np.linspace(-3, 3, 9, dtype=np.float32), 4.0), (np.float64, None, None)),
    ("inner1d", (np.ones((3, 4), np.float32), np.arange(4, dtype=np.float32)), "dd->d"),
    ("matmul", (np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)), (None, None, "f8")),
], ids=["output float64", "string dd->d", "inputs float32 of int32",
        "ff->f of float64 (same_kind)", "first input float64", "gufunc string", "gufunc output"])
def test_signature_picks_the_loop_numpy_picks_for_it(name, inputs, signature):
    fn = getattr(ex, name)
    expected = fn(*inputs, signature=signature)
    result = fn(*[to_dev(a) if isinstance(a, np.ndarray) else a for a in inputs],
                signature=signature)
    assert result.dtype == expected.dtype
    np.testing.assert_array_equal(host(result), expected)


@pytest.mark.parametrize("keywords", [
    dict(signature="d"), dict(signature=(np.float64,)), dict(signature=np.float64),
    dict(signature="bogus"), dict(signature="dd->d", dtype="f8"), dict(signature=("i1", "i1", "i1")),
    dict(signature="ff->f", casting="safe"),
], ids=["one letter", "one-tuple", "a type", "not a type string", "with dtype=",
        "no such loop", "not safe"])
def test_a_signature_numpy_refuses_is_refused_with_its_exception_and_text(keywords):
    x = np.arange(4, dtype=np.float64)
    with pytest.raises(Exception) as on_host:
        ex.add(x, x, **keywords)
    with pytest.raises(type(on_host.value)) as on_device:
        ex.add(to_dev(x), to_dev(x), **keywords)
    assert str(on_host.value) in str(on_device.value)


def test_a_python_int_too_large_for_the_loop_raises_like_numpy():
    x = np.arange(4, dtype=np.int64)
    with pytest.raises(OverflowError, match="add: argument 'y'"):
        ex.add(to_dev(x), 2**70)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_inf_and_negative_zero_come_out_as_the_host_gives_them(dtype):
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0,
                         np.finfo(dtype).max, np.finfo(dtype).tiny, 5e-324 if dtype == np.float64 else 1e-45],
                        dtype=dtype)
    x, y = np.meshgrid(specials, specials)
    for name in ("add", "hypot", "custom_op") if dtype == np.float64 else ("add", "hypot"):
        with np.errstate(all="ignore"):
            want = getattr(ex, name)(x, y)
        got = host(getattr(ex, name)(to_dev(x), to_dev(y)))
        # A NaN's sign is nobody's promise: x86 makes Inf - Inf a negative NaN, a GPU's
        # float32 arithmetic its canonical positive one.  Every other sign, -0.0's included, is.
        number = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))
        np.testing.assert_array_equal(got, want)


def test_out_is_written_in_place_and_returned(rng):
    x, y = rng.standard_normal((2, 300))
    out = device.device_array(300)
    result = ex.add(to_dev(x), to_dev(y), out=out)
    assert result is out
    np.testing.assert_array_equal(host(out), x + y)


def test_a_positional_out_works_like_the_keyword(rng):
    x, y = rng.standard_normal((2, 30))
    out = device.device_array(30)
    assert ex.add(to_dev(x), to_dev(y), out) is out
    np.testing.assert_array_equal(host(out), x + y)


def test_two_outputs_come_back_as_a_tuple_and_out_tuples_are_written(rng):
    x = rng.uniform(-10, 10, 500)
    s, c = ex.sincos(to_dev(x))
    outs = (device.device_array(500), device.device_array(500))
    assert ex.sincos(to_dev(x), out=outs) == outs
    for got in ((host(s), host(c)), host(outs)):
        check_elementwise("sincos", got, elementwise_reference("sincos", x), [x])


def test_out_of_a_wider_dtype_receives_the_cast_result_like_numpy(rng):
    x, y = rng.uniform(-1, 1, (2, 100)).astype(np.float32)
    out = device.device_array(100, np.float64)
    ex.add(to_dev(x), to_dev(y), out=out)
    np.testing.assert_array_equal(host(out), ex.add(x, y, out=np.empty(100)))


def test_where_leaves_unselected_output_elements_untouched(rng):
    x, y = rng.standard_normal((2, 7, 9))
    mask = rng.random((9,)) < 0.5
    start = np.full((7, 9), -123.0)
    out = to_dev(start)
    ex.add(to_dev(x), to_dev(y), out=out, where=to_dev(mask))
    np.testing.assert_array_equal(host(out), np.where(mask, x + y, start))


def test_where_false_computes_nothing_and_where_true_everything(rng):
    x = rng.standard_normal(10)
    out = to_dev(np.zeros(10))
    ex.add(to_dev(x), 1.0, out=out, where=False)
    np.testing.assert_array_equal(host(out), np.zeros(10))
    ex.add(to_dev(x), 1.0, out=out, where=True)
    np.testing.assert_array_equal(host(out), x + 1)


def test_in_place_out_equal_to_an_input_is_computed_element_for_element(rng):
    x = rng.standard_normal(1000)
    d = to_dev(x)
    ex.add(d, d, out=d)
    np.testing.assert_array_equal(host(d), x + x)


@pytest.mark.parametrize("shift", [1, -1, 3])
def test_an_out_overlapping_an_input_gives_the_result_of_computing_from_copies(shift):
    base = np.arange(40, dtype=np.float64)
    d = to_dev(base)
    from .conftest import view
    n = 30
    a = view(d, (n,), (8,), 8 * max(0, -shift) + 8 * 5)
    out = view(d, (n,), (8,), 8 * max(0, shift) + 8 * 5)
    expected = base.copy()
    x = expected[5 + max(0, -shift):5 + max(0, -shift) + n].copy()
    np.add(x, x, out=expected[5 + max(0, shift):5 + max(0, shift) + n])
    ex.add(a, a, out=out)
    np.testing.assert_array_equal(host(d), expected)


def test_results_are_device_arrays_of_the_inputs_kind_and_record_their_stream(rng):
    x = rng.standard_normal(10)
    stream = device.Stream()
    result = ex.add(to_dev(x), 2.0, stream=stream)
    assert isinstance(result, device.DeviceArray)
    assert result.stream == stream.handle
    stream.synchronize()
    np.testing.assert_array_equal(host(result), x + 2)


def test_zero_size_calls_return_empty_results_and_launch_nothing():
    from ufuncgen import _device
    empty, full = to_dev(np.zeros((0, 3))), to_dev(np.zeros((2, 3)))
    before = _device.launch_count()
    result = ex.add(empty, 1.0)
    assert result.shape == (0, 3) and _device.launch_count() == before
    ex.add(full, 1.0)
    assert _device.launch_count() == before + 1
    assert _device.last_launch()["kind"] == "elementwise"


def test_contiguous_dimensions_are_collapsed_before_launch():
    from ufuncgen import _device
    x = np.ones((4, 5, 6))
    shapes = []
    for call in (lambda: ex.add(to_dev(x), to_dev(x)), lambda: ex.add(to_dev(x, "strided"), 1.0)):
        call()
        launch = _device.last_launch()
        assert launch["kind"] == "elementwise"
        shapes.append(launch["shape"])
    assert shapes == [(120,), (4, 5, 6)]


@pytest.mark.parametrize("order", ["F", "f", "C", "K", "A", None])
def test_order_lays_out_new_results_as_numpy_does_with_the_same_values(order):
    x = np.arange(24.0).reshape(2, 3, 4)
    want = np.add(x, 0.5, order=order)
    got = ex.add(to_dev(x), 0.5, order=order)
    np.testing.assert_array_equal(host(got), want)
    if order in ("F", "f"):
        assert got.strides == want.strides == (8, 16, 48)
    else:
        assert got.strides == (96, 32, 8)
    (a, b) = ex.sincos(to_dev(x), order=order)          # every new result of the call
    np.testing.assert_allclose(host(a), np.sin(x), rtol=1e-14, atol=1e-15)
    assert a.strides == b.strides == got.strides
    out = to_dev(np.zeros((2, 3, 4)))                  # a given out= keeps its own layout
    assert ex.add(to_dev(x), 0.5, out=out, order="F") is out
    assert out.strides == (96, 32, 8)
    np.testing.assert_array_equal(host(out), want)


def _same_layout(a):
    """A device array with a's strides (in bytes, of any sign) and values."""
    lo = sum(min(0, (n - 1) * s) for n, s in zip(a.shape, a.strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(a.shape, a.strides)) + a.itemsize
    memory = np.zeros(hi - lo, np.uint8)
    np.ndarray(a.shape, a.dtype, buffer=memory, offset=-lo, strides=a.strides)[...] = a
    block = to_dev(memory)
    return _device.from_pointer(block.ptr - lo, a.shape, a.dtype, a.strides, block.device,
                                block, False, 0)


_A = np.arange(60.0).reshape(3, 4, 5)
_LAYOUTS = {
    "fortran": (np.asfortranarray(_A), 1.0),
    "transposed": (_A.transpose(2, 0, 1), 1.0),
    "reversed": (_A[::-1, :, ::-1], _A[::-1, :, ::-1]),
    "fortran and C": (np.asfortranarray(_A), _A),
    "fortran, broadcast": (np.asfortranarray(_A[:, :1, :]), np.asfortranarray(_A[:1, :, :])),
    "permuted": (_A.transpose(1, 2, 0), _A.transpose(1, 2, 0)),
}


@pytest.mark.parametrize("layout", _LAYOUTS)
@pytest.mark.parametrize("order", ["K", "A", "C", "F", None])
def test_order_k_and_a_lay_out_new_results_like_the_inputs_as_numpy_does(layout, order):
    a, b = _LAYOUTS[layout]
    want = np.add(a, b, order=order)
    got = ex.add(_same_layout(a), _same_layout(b) if isinstance(b, np.ndarray) else b,
                 order=order)
    assert got.strides == want.strides
    np.testing.assert_array_equal(host(got), want)
