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


def _launched_shape(call):
    call()
    launch = _device.last_launch()
    assert launch["kind"] in ("elementwise", "cast")
    return launch["shape"]


@pytest.mark.parametrize("axes", [(1, 0), (2, 0, 1), (2, 1, 0), (1, 2, 0)])
def test_a_transposed_input_and_a_result_laid_out_like_it_launch_as_one_dimension(axes, rng):
    # the kernel runs in the operands' memory order: neighbouring threads take neighbouring
    # elements of both, where a C-order walk of a transposed array takes one per row
    from .conftest import view
    x = rng.standard_normal((4, 5, 6)[:len(axes)])
    base = to_dev(x)
    t = view(base, tuple(base.shape[a] for a in axes), tuple(base.strides[a] for a in axes))
    want = ex.add(x.transpose(axes), 1.0)
    assert _launched_shape(lambda: ex.add(t, 1.0)) == (x.size,)
    got = ex.add(t, 1.0)
    np.testing.assert_array_equal(host(got), want)
    assert got.strides == want.strides                  # order="K", as NumPy lays it out
    out = to_dev(np.zeros(want.shape))                  # a C-order out=: C order wins a tie
    launched = _launched_shape(lambda: ex.add(t, 1.0, out=out))
    assert len(launched) > 1 and launched[-1] % want.shape[-1] == 0   # out's rows innermost
    np.testing.assert_array_equal(host(out), want)


def test_memory_order_is_taken_where_every_operand_agrees_and_broadcasts_have_no_say(rng):
    from .conftest import view
    x, y = rng.standard_normal((6, 8)), rng.standard_normal(6)
    base, out_base = to_dev(x), to_dev(np.zeros((6, 8)))
    t = view(base, (8, 6), base.strides[::-1])          # x.T, F-ordered
    out = view(out_base, (8, 6), out_base.strides[::-1])
    # memory order, (6, 8), not (8, 6); y (along the 6) keeps the two from merging
    assert _launched_shape(lambda: ex.add(t, to_dev(y), out=out)) == (6, 8)
    np.testing.assert_array_equal(host(out), x.T + y)
    c_ordered = to_dev(rng.standard_normal((8, 6)))    # one operand each way: C order stays
    assert _launched_shape(lambda: ex.add(t, c_ordered, out=out)) == (8, 6)
    np.testing.assert_array_equal(host(out), x.T + host(c_ordered))


def test_a_cast_into_an_out_laid_out_like_the_inputs_is_one_dimension(rng):
    # the float64 result goes through a temporary laid out as the inputs are, then is cast
    # into the float32 out=: both launches walk memory in order
    from .conftest import view
    x = rng.standard_normal((5, 7))
    base, out_base = to_dev(x), to_dev(np.zeros((5, 7), np.float32))
    t = view(base, (7, 5), base.strides[::-1])
    out = view(out_base, (7, 5), out_base.strides[::-1])
    assert _launched_shape(lambda: ex.add(t, np.float64(0.5), out=out)) == (35,)
    assert _device.last_launch()["kind"] == "cast"
    np.testing.assert_array_equal(host(out), (x.T + 0.5).astype(np.float32))


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


def _grid_threads():
    """The threads of a launch over many elements: the grid's cap (src/device/runtime/launch.c)
    times the block.  A contiguous call takes four elements a thread per pass while at least
    four times this many are left."""
    ex.add(device.device_array(1 << 24, np.float32), np.float32(0))
    launch = _device.last_launch()
    return launch["grid"] * launch["block"]


@pytest.mark.parametrize("name, dtype", CASES)
def test_device_results_match_the_reference_when_threads_take_four_elements_a_pass(name, dtype,
                                                                                  rng):
    size = 4 * _grid_threads() + 5        # whole passes of four, then one element a thread
    inputs = elementwise_inputs(name, dtype, (size,), rng)
    result = getattr(ex, name)(*[to_dev(a) for a in inputs])
    check_elementwise(name, host(result), elementwise_reference(name, *inputs), inputs)


@pytest.mark.parametrize("passes", [(4, -1), (4, 0), (4, 1), (8, 3), (12, -5)])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_four_elements_a_pass_read_scalars_by_value_and_write_in_place_as_the_host(passes, dtype,
                                                                                  rng):
    # each pass reads four elements of every input before it writes any: out= the input
    # itself must still give each element its own input's result
    size = passes[0] * _grid_threads() + passes[1]
    x = rng.uniform(-100, 100, size).astype(dtype)
    d = to_dev(x)
    assert ex.add(d, dtype(0.5), out=d) is d
    np.testing.assert_array_equal(host(d), ex.add(x, dtype(0.5)))
    if dtype != np.float16:             # two outputs (sincos has no float16 loop)
        eps = np.finfo(dtype).eps
        s, c = ex.sincos(d)
        np.testing.assert_allclose(host(s), np.sin(x + dtype(0.5)), rtol=8 * eps, atol=8 * eps)
        np.testing.assert_allclose(host(c), np.cos(x + dtype(0.5)), rtol=8 * eps, atol=8 * eps)
    mask = rng.random(size) < 0.5
    out = to_dev(np.zeros(size, dtype))
    ex.add(d, d, out=out, where=to_dev(mask))
    np.testing.assert_array_equal(host(out), np.where(mask, 2 * (x + dtype(0.5)), 0))
