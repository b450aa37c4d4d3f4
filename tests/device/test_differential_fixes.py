"""Disagreements the differential test (tests/conformance/test_differential.py) found between
the host path (NumPy) and the device path, one focused test each: the device call must do
what NumPy does with the same call, value for value or exception type for exception type."""
import warnings

import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from .conftest import ForeignArray, host, to_dev, view

pytestmark = pytest.mark.skipif(not device.is_available(), reason=str(device.unavailable_reason()))

A = np.arange(12.0).reshape(3, 4)


def _outcome(call, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = call(*args, **kwargs)
        except Exception as error:
            return type(error).__mro__[[c.__module__ == "builtins" or c.__name__ == "AxisError"
                                        for c in type(error).__mro__].index(True)]
    return host(result) if isinstance(result, device.DeviceArray) else np.asarray(result)


def _agree(fn, make, **kwargs):
    want = _outcome(fn, *make(np.asarray), **kwargs)
    got = _outcome(fn, *make(to_dev), **kwargs)
    if isinstance(want, type):
        assert got is want, f"device gave {got!r}, NumPy raised {want.__name__}"
    else:
        assert not isinstance(got, type), f"device raised {got.__name__}, NumPy gave a result"
        np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("axis", [np.int64(0), np.int32(-1), True, np.bool_(True), 1.0, None,
                                  (0,), 2**40, 2**70])
def test_a_gufunc_axis_is_read_like_numpy_reads_it(axis):
    _agree(ex.l2_norm, lambda m: [m(A)], axis=axis)


@pytest.mark.parametrize("axes", [[np.int64(0)], [(np.int64(0),)], [(True,)], [(0.0,)],
                                  [np.int64(0), ()], None, [(2**70,)]])
def test_gufunc_axes_entries_are_read_like_numpy_reads_them(axes):
    _agree(ex.l2_norm, lambda m: [m(A)], axes=axes)


@pytest.mark.parametrize("keepdims", [1, 0, np.True_, None, "yes", True, False])
def test_a_gufunc_keepdims_must_be_a_bool_as_in_numpy(keepdims):
    _agree(ex.l2_norm, lambda m: [m(A)], keepdims=keepdims)


def test_keepdims_even_false_is_refused_by_gufuncs_whose_outputs_have_core_dimensions():
    _agree(ex.matmul, lambda m: [m(A), m(A.T)], keepdims=False)
    _agree(ex.centroid_distances, lambda m: [m(A[0]), m(A)], keepdims=False)
    _agree(ex.matmul, lambda m: [m(A), m(A.T)], keepdims=True)


def test_a_scalar_for_a_gufunc_operand_with_core_dimensions_is_numpys_value_error():
    _agree(ex.inner1d, lambda m: [m(A), 2.0])


@pytest.mark.parametrize("where", [None, 0, "", np.int64(0), 1.5, "x", 2**70, np.False_])
def test_a_host_where_value_means_what_numpy_makes_of_it(where):
    want = np.full((3, 4), 7.0)
    np.add(A, 1.0, out=want, where=where)
    out = to_dev(np.full((3, 4), 7.0))
    ex.add(to_dev(A), 1.0, out=out, where=where)
    np.testing.assert_array_equal(host(out), want)


@pytest.mark.parametrize("keepdims", [1, np.int64(1), 1.0, np.True_, None, "a", (1,)])
def test_reduce_reads_keepdims_as_an_integer_like_numpy(keepdims):
    _agree(ex.add.reduce, lambda m: [m(A)], keepdims=keepdims)


@pytest.mark.parametrize("axis", [np.int64(0), (np.int64(0),), (True,), (1.0,), 2**70, 2**40])
def test_reduce_reads_axis_like_numpy(axis):
    _agree(ex.add.reduce, lambda m: [m(A)], axis=axis)


@pytest.mark.parametrize("kwargs", [dict(where=np.True_), dict(where=None), dict(where=False),
                                    dict(where="x"), dict(where=False, initial=5.0),
                                    dict(where=np.True_, initial=None), dict(where=True, initial=None)])
def test_reduce_takes_a_host_where_value_as_numpy_does(kwargs):
    _agree(ex.add.reduce, lambda m: [m(A)], **kwargs)


@pytest.mark.parametrize("kwargs", [dict(dtype="i8"), dict(dtype=">f8"), dict(dtype="f4")])
def test_reduce_resolves_dtype_as_numpy_does(kwargs):
    _agree(ex.add.reduce, lambda m: [m(A + 0.5)], **kwargs)


@pytest.mark.parametrize("out_dtype", [np.int64, np.float32])
def test_reduce_into_an_out_of_another_kind_casts_unsafely_like_numpy(out_dtype):
    want = np.zeros(4, out_dtype)
    np.add.reduce(A + 0.5, out=want)
    out = to_dev(np.zeros(4, out_dtype))
    ex.add.reduce(to_dev(A + 0.5), out=out)
    np.testing.assert_array_equal(host(out), want)


def test_a_python_int_out_of_range_with_only_scalar_inputs_finds_no_loop_as_in_numpy():
    _agree(ex.lucas, lambda m: [2**70], out=to_dev(np.zeros(3, np.int64)))
    _agree(ex.lucas, lambda m: [2**63], out=to_dev(np.zeros(3, np.int64)))


@pytest.mark.parametrize("kwargs", [dict(out=lambda: to_dev(np.zeros((), bool))), dict(where=False)])
def test_a_python_int_out_of_range_is_an_overflow_error_before_anything_else(kwargs):
    kwargs = {k: v() if callable(v) else v for k, v in kwargs.items()}
    # NumPy warns of where= without out= before it fails; ufuncgen fails first, silently.
    with pytest.raises(OverflowError), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "'where' used without 'out'", UserWarning)
        np.add(np.int32(42), 2**70, **{k: (host(v) if k == "out" else v) for k, v in kwargs.items()})
    with pytest.raises(OverflowError):
        ex.add(to_dev(np.array(42, np.int32)), 2**70, **kwargs)


def test_casting_equiv_refusing_a_python_scalar_is_a_type_error_not_a_crash():
    # NumPy 2.4's ufunc.resolve_dtypes segfaults on this refusal
    _agree(ex.add, lambda m: [m(np.zeros((), np.int32)), 2.5], dtype="f4", casting="equiv")


def test_a_byte_swapped_device_array_is_a_type_error_like_any_unsupported_dtype():
    foreign = ForeignArray(to_dev(np.ones(8)), typestr=">f8")
    with pytest.raises(TypeError, match="native byte order"):
        ex.add(foreign, 1.0)
    with pytest.raises(TypeError):
        device.to_device(np.ones(8, ">f8"))


def _zero_stride(n, value=0.0):
    base = to_dev(np.full(1, value))
    return base, view(base, (n,), (0,))


def test_an_output_with_zero_strides_over_its_own_input_gets_numpys_value():
    x = np.lib.stride_tricks.as_strided(np.zeros(1), (1000,), (0,))
    np.add(x, np.ones(1000), out=x)
    base, d = _zero_stride(1000)
    ex.add(d, to_dev(np.ones(1000)), out=d)
    assert host(base)[0] == x[0] == 1.0


def test_an_output_with_zero_strides_keeps_the_last_element_numpy_writes():
    values = np.arange(12.0).reshape(3, 4)
    for shape, strides, size in [((1000,), (0,), 1), ((3, 4), (0, 8), 4), ((3, 4), (8, 0), 3),
                                 ((3, 4), (0, 0), 1)]:
        want = np.zeros(size)
        np.add(values.ravel()[:np.prod(shape)].reshape(shape) if shape != (1000,) else
               np.arange(1000.0), 0.0,
               out=np.lib.stride_tricks.as_strided(want, shape, strides))
        base = to_dev(np.zeros(size))
        src = to_dev(np.arange(1000.0) if shape == (1000,) else values)
        ex.add(src, 0.0, out=view(base, shape, strides))
        np.testing.assert_array_equal(host(base), want, err_msg=f"{shape} {strides}")


# Found by the differential test once the call was in C: which refusal comes first, and
# operands read as NumPy reads them.

def test_axis_and_keepdims_refusals_come_before_the_operands_dimensions():
    x = np.zeros(0, np.float32)
    _agree(ex.centroid_distances, lambda m: [m(x), 2.5], keepdims=True)
    _agree(ex.centroid_distances, lambda m: [m(x), 2.5], axis=0)


def test_an_output_too_small_for_the_kept_dimensions_is_refused_before_the_axis_bounds():
    want = _outcome(ex.l2_norm, np.zeros(0, np.float32), axis=1, keepdims=True,
                    out=np.zeros((), np.float32))
    got = _outcome(ex.l2_norm, to_dev(np.zeros(0, np.float32)), axis=1, keepdims=True,
                   out=to_dev(np.zeros((), np.float32)))
    assert want is got is ValueError


@pytest.mark.parametrize("kwargs", [dict(dtype=">f8"), dict(out=[None])])
def test_reduce_checks_dtype_and_the_kind_of_out_before_the_axes(kwargs):
    x = np.full((1, 1, 1), 42, np.int32)
    assert _outcome(ex.add.reduce, x, axis=3, **kwargs) is TypeError
    assert _outcome(ex.add.reduce, to_dev(x), axis=3, **kwargs) is TypeError


@pytest.mark.parametrize("values, kwargs", [
    (np.array(3.0), dict(keepdims=True)),
    (np.arange(6.0).reshape(2, 3), dict(axis=())),
    (np.arange(6.0).reshape(2, 3), dict(axis=(), keepdims=True, initial=5.0)),
    (np.arange(6.0).reshape(2, 3), dict(axis=1, initial=-1.0)),
])
def test_reduce_where_false_leaves_every_result_at_the_initial_value(values, kwargs):
    want = np.add.reduce(values, where=False, **kwargs)
    got = host(ex.add.reduce(to_dev(values), where=False, **kwargs))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("flag", [True, np.True_])
def test_a_python_bool_operand_is_a_bool_under_casting_no_whatever_ran_before(flag):
    a, b = np.full(1, -np.inf, np.float32), np.full((1, 1, 1), -np.inf, np.float32)
    # (an operand's weak flag was read uninitialised: the answer depended on the stack)
    for _ in range(3):
        _agree(ex.polar_distance, lambda m: [m(a), m(b), 2.5, flag], casting="no")
        _agree(ex.add, lambda m: [m(np.array(42, np.int32)), 2.5], casting="no")


@pytest.mark.parametrize("casting", ["no", "equiv"])
@pytest.mark.parametrize("dtype, scalar", [(np.int64, 2), (np.int32, 2), (np.uint8, 2),
                                           (np.float64, 2.5), (np.float32, 2.5),
                                           (np.float32, 2)])
def test_python_scalars_under_strict_casting_are_taken_as_numpy_takes_them(casting, dtype, scalar):
    _agree(ex.add, lambda m: [m(np.ones(3, dtype)), scalar], casting=casting)


def test_reduce_array_by_keyword_reaches_the_device():
    x = np.arange(12.0).reshape(3, 4)
    got = ex.add.reduce(array=to_dev(x), axis=1)
    assert isinstance(got, device.DeviceArray)
    np.testing.assert_array_equal(host(got), x.sum(1))


def test_a_zero_stride_output_keeps_the_value_numpy_writes_last_when_its_loop_runs_backwards():
    # NumPy's iterator runs an axis backwards when every given operand steps <= 0 along it
    values = np.array([[16], [42]], np.int64)
    want = np.zeros(2, np.int64)
    ex.lucas(values[::-1], out=np.lib.stride_tricks.as_strided(want[1:], (2, 1), (0, 8)))
    source, base = to_dev(values), to_dev(np.zeros(2, np.int64))
    ex.lucas(view(source, (2, 1), (-8, 8), offset=8), out=view(base, (2, 1), (0, 8), offset=8))
    np.testing.assert_array_equal(host(base), want)


@pytest.mark.parametrize("shape, out_shape, kwargs", [
    ((1, 1), (), {"axis": 0}),          # found by HYPOTHESIS_PROFILE=thorough
    ((1, 3), (), {}),
    ((1, 1, 3), (1,), {}),
    ((1, 2, 3), (2,), {}),
    ((2, 3), (), {}),                   # not size 1: refused, by both
    ((1, 3), (1, 1), {}),               # more dimensions than the loop: refused, by both
])
def test_a_gufunc_out_may_leave_out_leading_loop_dimensions_of_size_one(shape, out_shape, kwargs):
    x = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)

    def call(m):
        out = m(np.zeros(out_shape))
        ex.l2_norm(m(x), out=out, **kwargs)
        return out

    want, got = _outcome(call, np.asarray), _outcome(call, to_dev)
    if isinstance(want, type):
        assert got is want
    else:
        np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("shape, axis", [
    ((1,), (0, 0, 1)),          # found by HYPOTHESIS_PROFILE=thorough: bounds before duplicates
    ((2, 2), (0, 5, 0)),
    ((2, 2), (0, 0, "a")),      # and conversion before both
    ((1,), (0, 0)),
    ((3, 2), (1, -2)),
])
def test_reduce_checks_every_axis_before_duplicates_as_numpy_does(shape, axis):
    _agree(ex.add.reduce, lambda m: [m(np.ones(shape))], axis=axis)


@pytest.mark.parametrize("fn", [ex.add, ex.custom_op])
@pytest.mark.parametrize("value, dtype", [(-np.inf, np.float32), (-28, np.int32),
                                          (-np.inf, np.float64), (1.0, np.float32)])
@pytest.mark.parametrize("initial", [2**70, 1e5])
def test_reduce_rounds_its_start_value_through_an_out_of_another_dtype_as_numpy_does(
        fn, value, dtype, initial):
    # found by HYPOTHESIS_PROFILE=thorough: NumPy writes initial= into out= first, so 2**70
    # into a float16 out= is inf, and inf + -inf is NaN where the float32 sum was -inf
    x = np.full((1, 4), value, dtype)
    want = np.full(4, 0.5, np.float16)
    with np.errstate(all="ignore"):
        fn.reduce(x, initial=initial, out=want)
    out = to_dev(np.full(4, 0.5, np.float16))
    fn.reduce(to_dev(x), initial=initial, out=out)
    np.testing.assert_array_equal(host(out), want)


@pytest.mark.parametrize("scalar", [2.5, 2.5 + 0j, 2])
@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
def test_casting_no_takes_a_python_scalar_only_into_a_loop_of_its_kind_as_numpy_does(scalar, dtype):
    # found by HYPOTHESIS_PROFILE=thorough: add(int64, 2.5, dtype=int64, casting='no') is
    # NumPy's UFuncTypeError, and the device truncated 2.5
    _agree(ex.add, lambda m: [m(np.array([1], dtype)), scalar], dtype=dtype, casting="no")


# ---------------------------------------------------------------- scalars and dtype= spellings

def _scalar_outcome(fn, args, kwargs, out_dtype, to):
    """The result (as host values) or the builtin exception class of fn(*args, out=..., **kw),
    each array argument and out= made by `to` (np.asarray or to_dev)."""
    outs = tuple(to(np.zeros(3, out_dtype)) for _ in range(fn.nout))
    args = [to(a) if isinstance(a, np.ndarray) else a for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(*args, out=outs if fn.nout > 1 else outs[0], **kwargs)
        except Exception as error:
            return next(c for c in type(error).__mro__ if c.__module__ == "builtins")
    return [host(o) if isinstance(o, device.DeviceArray) else o for o in outs]


def _scalar_calls_agree(fn, args, kwargs, out_dtype):
    want = _scalar_outcome(fn, args, kwargs, out_dtype, np.asarray)
    got = _scalar_outcome(fn, args, kwargs, out_dtype, to_dev)
    if isinstance(want, type) or isinstance(got, type):
        assert got is want, f"device: {got!r}, host: {want!r}"
    else:
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


I8 = np.array([1, 2, 3])
F8 = np.array([1.0, 2.0, 3.0])


class Level(__import__("enum").IntEnum):
    HIGH = 3


class MyFloat(float):
    pass


@pytest.mark.parametrize("fn, args, kwargs, out_dtype", [
    # signature= fixes the scalar's type: NumPy converts the Python object itself
    (ex.add, (F8, 1 + 2j), dict(signature="dd->d"), "f8"),
    (ex.add, (F8, 1 + 2j), dict(signature=(None, "f8", None), casting="unsafe"), "f8"),
    (ex.add, (I8, float("nan")), dict(signature="ll->l"), "i8"),
    (ex.add, (I8, float("inf")), dict(signature="ll->l", casting="unsafe"), "i8"),
    (ex.add, (I8, 1e300), dict(signature="ll->l"), "i8"),
    (ex.add, (I8, 2.5), dict(signature="ll->l", casting="no"), "i8"),
    (ex.add, (I8, 2.5), dict(signature=(None, "l", None), casting="no"), "i8"),
    (ex.add, (I8, 2.5), dict(dtype="l", casting="no"), "i8"),
    (ex.add, (I8, 2.5), dict(dtype="l", casting="unsafe"), "i8"),
    # subclasses of the Python number types are not weak
    (ex.add, (F8.astype("f4"), Level.HIGH), {}, "f8"),
    (ex.add, (F8.astype("f4"), MyFloat(1e300)), {}, "f8"),
    (ex.add, (F8.astype("f4"), MyFloat(2.5)), dict(casting="no"), "f4"),
    # of two scalar inputs, a big int stays weak
    (ex.add, (2**70, 2.5), {}, "f8"),
    (ex.add, (2**64, 1.0), {}, "f8"),
    (ex.add, (2**63, 1), {}, "f8"),
    (ex.add, (1, 2**70), {}, "f8"),
    # a lone scalar input is typed as np.asarray types it
    (ex.gelu, (2.5,), dict(dtype="f4", casting="safe"), "f4"),
    (ex.gelu, (2.5,), dict(dtype="f4"), "f4"),
    (ex.lucas, (2.5,), dict(signature="l->l"), "i8"),
    (ex.lucas, (7,), {}, "i8"),
    (ex.lucas, (2**70,), {}, "i8"),
    # a lone int in [2**63, 2**64) is np.asarray's uint64, then cast (it stayed a Python int,
    # which overflowed the int64 loop's conversion)
    (ex.lucas, (2**63,), dict(signature="l->l", casting="unsafe"), "i8"),
    (ex.lucas, (2**64 - 1,), dict(dtype="l", casting="unsafe"), "i8"),
    (ex.gelu, (2j,), dict(signature="d->d"), "f8"),
    (ex.gelu, (1,), dict(casting="no"), "f8"),
    (ex.sincos, (2.5,), dict(dtype="f4", casting="safe"), "f4"),
])
def test_python_scalars_are_typed_and_converted_as_numpy_does(fn, args, kwargs, out_dtype):
    _scalar_calls_agree(fn, args, kwargs, out_dtype)


@pytest.mark.parametrize("first, second", [("l", "q"), ("q", "l"), ("d", "g")])
def test_a_dtype_spelling_numpy_refuses_is_refused_after_one_it_takes(first, second):
    """'q' names int64 here as 'l' does, but the loops are typed 'l': NumPy refuses dtype='q',
    and the device's cache of resolutions must not answer for it from a call with 'l'."""
    for dtype in (first, second):
        for fn, args in ((ex.add, (I8, I8)), (ex.add.outer, (I8, I8))):
            _agree(fn, lambda m: [m(a) for a in args], dtype=dtype)
        _agree(ex.add.reduce, lambda m: [m(I8)], dtype=dtype)


@pytest.mark.parametrize("dtype_class", [np.dtypes.Float64DType, np.dtypes.Float32DType,
                                         np.dtypes.Int64DType, np.dtypes.StrDType])
def test_dtype_given_as_a_dtype_class_names_that_type(dtype_class):
    _agree(ex.add, lambda m: [m(F8), m(F8)], dtype=dtype_class)
    _agree(ex.add.reduce, lambda m: [m(F8)], dtype=dtype_class)
    _agree(ex.l2_norm, lambda m: [m(A)], dtype=dtype_class)


@pytest.mark.parametrize("dtype, signature", [(None, None), ("f8", None), (None, "dd->d"),
                                              ("f8", "dd->d")])
def test_dtype_and_signature_together_are_refused_whatever_their_values(dtype, signature):
    _agree(ex.add, lambda m: [m(F8), m(F8)], dtype=dtype, signature=signature)
    _agree(ex.add.outer, lambda m: [m(F8), m(F8)], dtype=dtype, signature=signature)
    _agree(ex.matmul, lambda m: [m(A), m(A.T)], dtype=dtype, signature=signature)


EITHER = """\
ufunc either(a, b) -> y
    types: bool(bool, bool)
{
    y = a || b;
}
"""


@pytest.fixture(scope="module")
def either(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("either"), "ufg_either", EITHER,
                           "--cuda-arch", "none").either


@pytest.mark.parametrize("value", [2**63, -2**63 - 1, 2**64, 10**30, 5, -1, 0])
@pytest.mark.parametrize("casting", ["same_kind", "unsafe"])
def test_a_python_int_into_a_bool_loop_is_taken_as_an_int64_as_numpy_takes_it(
        either, value, casting):
    """NumPy converts the int to int64, then casts it: past int64 that is its OverflowError,
    whatever the casting; the device packed the int's truth into the bool."""
    _agree(either, lambda make: (make(np.array([True, False])), value), dtype=bool,
           casting=casting)


IDENT = """\
ufunc ident(x) -> y
    types: int8(int8), int64(int64), uint64(uint64), float64(float64)
{
    y = x;
}
"""


@pytest.fixture(scope="module")
def ident(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("ident"), "ufg_ident", IDENT,
                           "--cuda-arch", "none").ident


@pytest.mark.parametrize("value", [2**63, 2**64 - 1, 2**64, 10**30, -2**63 - 1, -10**30])
@pytest.mark.parametrize("dtype", ["i1", "i8", "u8", "f8"])
@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize("fixed_by", ["dtype", "signature"])
def test_a_lone_python_int_past_int64_is_the_object_array_numpy_makes_of_it(
        ident, value, dtype, casting, fixed_by):
    """A call's lone input is typed as np.asarray types it: an int past int64 (and past uint64,
    or negative) is an object array, whose cast to the loop NumPy checks first (its
    UFuncTypeError, a TypeError, under any casting but 'unsafe': ident(10**30,
    dtype=uint64)), then converts (its OverflowError past the loop's type under 'unsafe');
    the device converted first, an OverflowError under every casting.  One in [2**63, 2**64)
    is a uint64 array, cast as any (-2**63 for int64 under 'unsafe')."""
    fixed = dict(dtype=dtype) if fixed_by == "dtype" else dict(signature=(None, dtype))
    _scalar_calls_agree(ident, (value,), dict(fixed, casting=casting), dtype)
