"""`.at` on device arrays: NumPy's unbuffered in-place update (the reference is the function's
own host `.at`, which is NumPy's, on a host copy of the same data) for every kind of index
NumPy takes (integers, negative ones, slices, lists with repeats, tuples of index arrays,
boolean masks, Ellipsis, None, nothing selected), every loop of the shipped examples that
`.at` takes, b a scalar or a CUDA array broadcast to a[indices], a's dtype other than the
loop's, non-contiguous arrays, and NumPy's errors, after which the array is unchanged; bit
for bit, since the updates run in NumPy's order."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import _device, device

from .conftest import ON_GPU, ForeignArray, assert_same as _same, host, to_dev, view

LAYOUTS = ["contiguous", "strided", "reversed", "fortran"]

# Indices of an array of shape (5, 6) (a name, the index), as NumPy takes them.
INDICES_2D = {
    "repeated-rows": [0, 0, 4, 0],
    "negative": [-1, -5, -1],
    "element": (2, 3),
    "negative-element": (-1, -1),
    "slices": (slice(1, None, 2), slice(None, None, -2)),
    "tuple-of-arrays": (np.array([0, 1, 0, 0]), np.array([5, 2, 5, 5])),
    "broadcast-arrays": (np.array([[0], [3], [0]]), np.array([1, 1, 2])),
    "array-and-slice": (slice(None), [0, 0, 5]),
    "separated-arrays": ([1, 1, 2], slice(None)),
    "mask": np.arange(30).reshape(5, 6) % 4 == 1,
    "row-mask": np.array([True, False, True, True, False]),
    "ellipsis": (Ellipsis, 1),
    "newaxis": (None, [2, 2]),
    "empty-list": [],
    "empty-array": np.array([], np.intp),
    "integer-array-2d": np.array([[0, 1], [1, 1]]),
}


def _data(dtype, shape, rng):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(-50, 50, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)
    return rng.uniform(-4, 4, shape).astype(dtype)


def _both(fn, x, indices, *b, layout="contiguous"):
    """fn.at on a host copy and on a device copy of x: (device result, host result)."""
    want = x.copy()
    fn.at(want, indices, *(host_b(v) for v in b))
    d = to_dev(x, layout)
    returned = fn.at(d, indices, *b)
    assert returned is None
    return host(d), want


def host_b(v):
    return host(v) if hasattr(v, "copy_to_host") else v


BINARY_LOOPS = [("add", "int64"), ("add", "float16"), ("add", "float32"), ("add", "float64"),
                ("custom_op", "float64"), ("hypot", "float32"), ("hypot", "float64")]


@pytest.mark.parametrize("name, dtype", BINARY_LOOPS)
@pytest.mark.parametrize("index_name", sorted(INDICES_2D))
def test_binary_at_with_a_scalar_matches_numpys_at(name, dtype, index_name, rng):
    x = _data(dtype, (5, 6), rng)
    got, want = _both(getattr(ex, name), x, INDICES_2D[index_name], 1.25)
    _same(got, want)


@pytest.mark.parametrize("name, dtype", BINARY_LOOPS)
@pytest.mark.parametrize("index_name", sorted(INDICES_2D))
def test_binary_at_with_an_array_of_the_selections_shape_matches_numpys_at(name, dtype,
                                                                          index_name, rng):
    x = _data(dtype, (5, 6), rng)
    shape = x[INDICES_2D[index_name]].shape
    b = to_dev(_data(dtype, shape, rng))
    got, want = _both(getattr(ex, name), x, INDICES_2D[index_name], b)
    _same(got, want)


def test_repeated_indices_apply_in_order_every_time():
    got, want = _both(ex.add, np.zeros(3, np.int64), [0, 0, 2, 0], 1)
    _same(got, np.array([3, 0, 1]))
    _same(got, want)
    # not reorderable: custom_op(a, b) depends on the order of the updates
    b = np.array([1.5, -2.0, 3.25, 0.5])
    got, want = _both(ex.custom_op, np.full(2, 0.75), [1, 1, 1, 1], to_dev(b))
    _same(got, want)


@pytest.mark.parametrize("b_shape", [(), (1,), (3,), (1, 3), (2, 1)])
def test_b_broadcasts_to_the_selections_shape(b_shape, rng):
    x = _data(np.float64, (4, 5), rng)
    b = to_dev(_data(np.float64, b_shape, rng))
    got, want = _both(ex.add, x, ([1, 1], slice(1, 4)), b)
    _same(got, want)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_non_contiguous_arrays_are_updated_where_they_lie(layout, rng):
    x = _data(np.float32, (5, 6), rng)
    b = _data(np.float32, (4,), rng)
    got, want = _both(ex.add, x, ([0, 4, 0, 0], [5, 1, 5, 5]), to_dev(b, layout), layout=layout)
    _same(got, want)


def test_a_view_with_steps_leaves_the_elements_between_alone(rng):
    base = _data(np.int64, (12,), rng)
    want = base.copy()
    ex.add.at(want[1::3], [0, 3, 3], 7)
    d = to_dev(base)
    ex.add.at(view(d, (4,), (3 * d.strides[0],), d.strides[0]), [0, 3, 3], 7)
    _same(host(d), want)


@pytest.mark.parametrize("index", [(), Ellipsis, None, True, False, (None, None),
                                   np.array([[True]])[0, 0]])
def test_a_0d_array_takes_numpys_indices_of_a_scalar(index):
    x = np.array(2.5)
    got, want = _both(ex.add, x, index, 1.0)
    _same(got, want)


def test_a_0d_array_refuses_an_index_for_an_axis():
    with pytest.raises(IndexError, match="too many indices for array"):
        ex.add.at(to_dev(np.array(2.5)), [0, 0], 1.0)


def test_a_1d_array_with_integer_and_slice_indices(rng):
    x = _data(np.int64, (9,), rng)
    for index in (4, -2, slice(2, 7), slice(None, None, -3), [8, 8, 0], np.array([1, 1])):
        got, want = _both(ex.add, x, index, 3)
        _same(got, want)


@pytest.mark.parametrize("name, dtype", [("lucas", "int64"), ("gelu", "float16"),
                                         ("gelu", "float32"), ("gelu", "float64")])
@pytest.mark.parametrize("index_name", ["repeated-rows", "mask", "tuple-of-arrays", "empty-list"])
def test_unary_at_matches_numpys_at(name, dtype, index_name, rng):
    x = rng.integers(0, 12, (5, 6)).astype(dtype) if name == "lucas" else _data(dtype, (5, 6), rng)
    got, want = _both(getattr(ex, name), x, INDICES_2D[index_name])
    if ON_GPU and name == "gelu" and dtype != "float16":
        # The GPU's erfc is CUDA's, within a few ULP of glibc's (README), applied up to three
        # times to one element here; float16 rounds that difference away.
        np.testing.assert_allclose(got, want, rtol=32 * np.finfo(dtype).eps, atol=0)
    else:
        _same(got, want)


def test_a_loop_whose_result_type_is_not_the_arrays_converts_back_after_each_update():
    # mandelbrot: complex64 -> int32; each update's count becomes a complex64 again
    x = np.array([0.3 + 0.5j, -1.0 + 0j, 0.25 + 0j], np.complex64)
    got, want = _both(ex.mandelbrot, x, [0, 0, 1, 2, 2, 2])
    _same(got, want)


@pytest.mark.parametrize("a_dtype, b", [
    ("int8", 100), ("int8", 1), ("uint8", 300), ("int16", 2.75), ("float32", 1.5 * 2.0**-24),
    ("float32", np.float64(0.1)), ("float16", 1e5), ("float16", np.float16(3.5)),
    ("int64", np.float32(0.5)), ("bool", True), ("int32", 2**40), ("float32", 2**63),
])
def test_an_array_of_another_dtype_than_the_loop_is_converted_on_each_update_as_numpy_does(
        a_dtype, b, rng):
    x = rng.integers(0, 3, (6,)).astype(a_dtype)
    with np.errstate(all="ignore"):
        got, want = _both(ex.add, x, [0, 0, 0, 3, 5], b)
    _same(got, want)


@pytest.mark.parametrize("a_dtype, b_dtype", [("float32", "float64"), ("int8", "int64"),
                                              ("float64", "int32"), ("uint8", "float16")])
def test_a_device_b_of_another_dtype_picks_numpys_loop(a_dtype, b_dtype, rng):
    x = _data(a_dtype, (6,), rng) if a_dtype != "uint8" else rng.integers(0, 9, 6).astype("uint8")
    b = to_dev(_data(b_dtype, (4,), rng))
    with np.errstate(all="ignore"):
        got, want = _both(ex.add, x, [1, 1, 1, 4], b)
    _same(got, want)


def test_a_b_that_overlaps_the_array_gives_the_values_it_had_before_the_call(rng):
    x = _data(np.float64, (6,), rng)
    want = x.copy()
    ex.add.at(want, [1, 2, 3, 1], want[:4])
    d = to_dev(x)
    ex.add.at(d, [1, 2, 3, 1], view(d, (4,), d.strides))
    _same(host(d), want)


def test_a_library_array_is_updated_in_place(rng):
    x = _data(np.float64, (8,), rng)
    d = to_dev(x)
    want = x.copy()
    ex.add.at(want, [3, 3, 7], 2.0)
    ex.add.at(ForeignArray(d), [3, 3, 7], 2.0)
    _same(host(d), want)


def test_repeated_elements_are_updated_in_one_launch_on_one_thread(rng):
    d = to_dev(_data(np.float64, (100,), rng))
    before = _device.launch_count()
    ex.add.at(d, np.r_[rng.permutation(100), 17], 1.0)
    assert _device.launch_count() - before == 1
    last = _device.last_launch()
    assert (last["grid"], last["block"]) == (1, 1)
    before = _device.launch_count()
    ex.add.at(d, [], 1.0)
    assert _device.launch_count() == before        # nothing selected: nothing runs


@pytest.mark.parametrize("index", [slice(None), slice(None, None, -1), "permutation", "mask"])
def test_distinct_elements_are_updated_by_a_thread_each(index, rng):
    x = _data(np.float64, (3000,), rng)
    if isinstance(index, str):
        index = rng.permutation(3000) if index == "permutation" else x > 0
    b = to_dev(_data(np.float64, x[index].shape, rng))
    got, want = _both(ex.custom_op, x, index, b)
    last = _device.last_launch()
    assert last["grid"] * last["block"] >= 1000
    _same(got, want)


def test_stream_is_taken_by_keyword_and_nothing_else_is(rng):
    x = _data(np.float64, (5,), rng)
    d = to_dev(x)
    s = device.Stream()
    ex.add.at(d, [0, 0], 1.0, stream=s)
    s.synchronize()
    want = x.copy()
    want[0] += 2.0
    _same(host(d), want)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtype'"):
        ex.add.at(d, [0], 1.0, dtype=np.float32)
    _same(host(d), want)


@pytest.mark.parametrize("call, error", [
    (lambda a: ex.add.at(a, [5], 1.0), IndexError),
    (lambda a: ex.add.at(a, [-6], 1.0), IndexError),
    (lambda a: ex.add.at(a, (0, 0), 1.0), IndexError),
    (lambda a: ex.add.at(a, [1.0], 1.0), IndexError),
    (lambda a: ex.add.at(a, [True, False], 1.0), IndexError),
    (lambda a: ex.add.at(a, [0, 1], [1.0, 2.0, 3.0] if isinstance(a, np.ndarray)
                         else to_dev(np.ones(3))), ValueError),
    (lambda a: ex.add.at(a, [0], np.ones((1, 1)) if isinstance(a, np.ndarray)
                         else to_dev(np.ones((1, 1)))), ValueError),
    (lambda a: ex.add.at(a, [0]), ValueError),
    (lambda a: ex.lucas.at(a, [0], 1), ValueError),
    (lambda a: ex.lucas.at(a, [0]), TypeError),          # no loop for float64
    (lambda a: ex.add.at(a, [0], 1j), TypeError),        # no complex loop
    (lambda a: ex.add.at(a, [0], 2**70), TypeError),     # an object b
    (lambda a: ex.add.at(a, [0], "x"), TypeError),
    (lambda a: ex.inner1d.at(a, [0], 1.0), TypeError),
    (lambda a: ex.gaussian_pdf.at(a, [0], 1.0), ValueError),
    (lambda a: ex.gaussian_pdf.at(a, [0], 1.0, 2.0), ValueError),   # the function, then the count
    (lambda a: ex.sincos.at(a), ValueError),
    (lambda a: ex.sincos.at(a, [0]), ValueError),
    (lambda a: ex.add.at(a), TypeError),
    (lambda a: ex.add.at(a, [0], 1.0, 2.0), TypeError),
    (lambda a: ex.add.at(a, [0], None), TypeError),
])
def test_at_refuses_what_numpy_refuses_with_its_exception_type_and_writes_nothing(call, error):
    x = np.arange(5.0)
    with pytest.raises(error):
        call(x.copy())
    d = to_dev(x)
    with pytest.raises(error):
        call(d)
    _same(host(d), x)


def test_a_gufunc_is_refused_as_numpy_refuses_it():
    with pytest.raises(TypeError, match=r"inner1d\.at does not support ufunc with non-trivial "
                                        r"signature: inner1d has signature \(n\),\(n\)->\(\)"):
        ex.inner1d.at(to_dev(np.ones(3)), [0], 1.0)


def test_host_and_device_arrays_do_not_mix():
    x = np.arange(4.0)
    d = to_dev(x)
    with pytest.raises(TypeError, match="argument 'b' is a numpy.ndarray, but argument 'a' is a "
                                        "CUDA array"):
        ex.add.at(d, [0], np.ones(1))
    with pytest.raises(TypeError, match="argument 'b' is a list"):
        ex.add.at(d, [0], [1.0])
    with pytest.raises(TypeError, match="argument 'a' is a numpy.ndarray, but another argument is "
                                        "a CUDA array"):
        ex.add.at(x, [0], to_dev(np.ones(1)))
    _same(host(d), x)
    _same(x, np.arange(4.0))


def test_a_cuda_array_of_indices_is_refused_naming_it():
    d = to_dev(np.arange(4.0))
    for indices in (to_dev(np.array([0, 1])), (to_dev(np.array([0])),)):
        with pytest.raises(TypeError, match="indices are a CUDA array; device .at takes host "
                                            "indices"):
            ex.add.at(d, indices, 1.0)
    _same(host(d), np.arange(4.0))


def test_a_read_only_array_is_refused():
    """NumPy 2.4's .at writes into a read-only array; the device refuses one, as every other
    device write into a read-only array is refused."""
    d = to_dev(np.arange(4.0))
    ro = _device.from_pointer(d.ptr, d.shape, d.dtype, d.strides, d.device, d, True, 0)
    with pytest.raises(ValueError, match="read-only"):
        ex.add.at(ro, [0], 1.0)
    _same(host(d), np.arange(4.0))


def test_a_read_only_dlpack_array_is_refused_naming_either_flag_as_a_plain_calls_out_is():
    """The message named the __cuda_array_interface__'s flag, of an array that came through
    DLPack's read-only flag: it says either, as an out= does."""
    d = to_dev(np.arange(4.0))
    ro = _device.from_pointer(d.ptr, d.shape, d.dtype, d.strides, d.device, d, True, 0)

    class DLPackOnly:
        def __dlpack__(self, **kwargs):
            return ro.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return ro.__dlpack_device__()

    for target in (ro, DLPackOnly()):
        with pytest.raises(ValueError, match="the interface's data flag, or DLPack's "
                                             "read-only flag") as at:
            ex.add.at(target, [0], 1.0)
        assert "argument 'a'" in str(at.value)
        with pytest.raises(ValueError, match="the interface's data flag, or DLPack's "
                                             "read-only flag"):
            ex.add(d, 1.0, out=target)
    _same(host(d), np.arange(4.0))


def test_index_errors_are_numpys_own():
    d = to_dev(np.zeros((3, 4)))
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 4"):
        ex.add.at(d, (0, 7), 1.0)
    with pytest.raises(IndexError, match="boolean index did not match"):
        ex.add.at(d, np.ones(2, bool), 1.0)
    with pytest.raises(ValueError, match="array is not broadcastable to correct shape"):
        ex.add.at(d, [0, 1], to_dev(np.ones(3)))


def test_a_complex_function_and_arrays_converted_to_and_from_complex(device_cuda_arch):
    from ufuncgen import load
    m = load("ufunc cmul(x, y) -> z\n    types: complex128(complex128, complex128)\n"
             "{\n    z = x * y;\n}\n", "ufg_at_complex", cuda_arch=device_cuda_arch)
    x = (np.arange(5) + 1j * np.arange(5)[::-1]).astype(np.complex128)
    got, want = _both(m.cmul, x, [0, 3, 3, 0], to_dev(np.array([1j, 2 - 1j, 0.5, 3j])))
    _same(got, want)
    got, want = _both(m.cmul, x, [1, 1], 2 + 0.5j)
    _same(got, want)
    real = np.arange(5, dtype=np.float32)          # the real part of each product, kept
    with pytest.warns(np.exceptions.ComplexWarning):   # on the host; the device is silent
        got, want = _both(m.cmul, real, [2, 2, 4], to_dev(np.array([1 + 1j, 2j, -1j])))
    _same(got, want)


@pytest.mark.parametrize("shape, index", [((0,), []), ((0, 3), (slice(None), 1)),
                                          ((4, 0), (slice(1, 3),)), ((3,), slice(2, 2))])
def test_nothing_selected_leaves_the_array_as_it_was(shape, index, rng):
    x = _data(np.float64, shape, rng)
    got, want = _both(ex.add, x, index, to_dev(np.ones(x[index].shape)))
    _same(got, want)
    _same(got, x)


@pytest.mark.parametrize("index", [([0, 1, 0], slice(None), [0, 0, 0]),
                                   ([[0], [2]], slice(1, 3), [1, 1, 4]),
                                   (0, slice(None), [3, 3])])
def test_separated_index_arrays_pair_b_with_the_elements_as_numpy_does(index, rng):
    """Index arrays split by a slice put their dimensions first in a[indices]: b follows."""
    x = _data(np.float64, (3, 4, 5), rng)
    b = to_dev(_data(np.float64, x[index].shape, rng))
    got, want = _both(ex.custom_op, x, index, b)     # not reorderable: the pairing matters
    _same(got, want)
