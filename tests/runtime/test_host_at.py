"""function.at(a, indices, b) on the host through the generated indexed loops (src/core/host_at.c).

The reference for every result, error and warning is NumPy's own ufunc.at on the same ufunc
(fn.ufunc.at, which calls the legacy loop once per index), on a copy of the same array; where
the values can be computed independently, plain Python's element-by-element updates are too.
_core._host_at_calls() tells which calls ran the indexed loop, so that each test also checks
that it tested the path it meant to.
"""
import os
import warnings

import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import _core

# The shipped functions with an indexed loop: unary or binary, one output of the first input's
# type, and the dtypes of those loops.
AT_LOOPS = [
    pytest.param(name, np.dtype(types[0]), id=f"{name}-{np.dtype(types[0]).name}")
    for name in ("add", "custom_op", "hypot", "gelu", "lucas")
    for types in getattr(ex, name).ufunc.types
    if types[0] == types.split("->")[1]
]

@pytest.fixture
def rng():
    return np.random.default_rng(20261128)


EDGE_FLOATS = [0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 1e-300, 6e-8, 1e300, 65504.0]


def values_of(dtype, n, rng):
    """n values of `dtype` with its edge values among them (NaN, +-inf, -0.0, huge, tiny)."""
    if dtype.kind == "i":
        info = np.iinfo(dtype)
        values = rng.integers(-300, 300, n).astype(dtype)
        values[: 4] = [info.min, info.max, -1, 0][: n]
        return values
    with np.errstate(over="ignore"):
        values = rng.uniform(-8, 8, n).astype(dtype)
        edges = np.array(EDGE_FLOATS).astype(dtype)
    values[: min(n, edges.size)] = edges[: min(n, edges.size)]
    return rng.permutation(values)


def outcome(call, name=None):
    """(the exception's type and text or None, the warnings' texts) of call().  With `name`,
    NumPy's loop-per-index .at's "... encountered in at" reads "... encountered in <name>", as
    np.add.at's indexed loop and ufuncgen's say it."""
    def named(text):
        return text.replace(" encountered in at", f" encountered in {name}") if name else text

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
            error = None
        except Exception as e:                      # noqa: BLE001 -- compared with NumPy's
            error = (type(e), named(str(e)))
    return error, [(w.category, named(str(w.message))) for w in caught]


def at_both(fn, a, indices, *b, view=lambda array: array):
    """fn.at and NumPy's fn.ufunc.at on copies of `a` (seen through `view`): asserts the same
    arrays afterwards, bit for bit, the same exception and the same warnings; returns whether
    fn.at ran the indexed loop."""
    mine, theirs = a.copy(), a.copy()
    before = _core._host_at_calls()
    got = outcome(lambda: fn.at(view(mine), indices, *b))
    fast = _core._host_at_calls() > before
    want = outcome(lambda: fn.ufunc.at(view(theirs), indices, *b), fn.ufunc.__name__)
    assert got == want
    assert mine.tobytes() == theirs.tobytes(), (mine, theirs)
    return fast


def binary(name):
    return getattr(ex, name).nin == 2


@pytest.mark.parametrize("name, dtype", AT_LOOPS)
def test_every_loop_updates_as_numpys_at_with_repeated_and_negative_indices(name, dtype, rng):
    fn = getattr(ex, name)
    a = values_of(dtype, 40, rng)
    indices = rng.integers(-40, 40, 300)
    b = (values_of(dtype, 300, rng),) if binary(name) else ()
    with np.errstate(all="ignore"):
        assert at_both(fn, a, indices, *b)


@pytest.mark.parametrize("name, dtype", [p for p in AT_LOOPS if binary(p.values[0])])
def test_every_form_of_b_of_the_loops_type_takes_the_indexed_loop(name, dtype, rng):
    fn = getattr(ex, name)
    a, indices = values_of(dtype, 16, rng), rng.integers(0, 16, 50)
    value = values_of(dtype, 1, rng)
    forms = {"one element": value, "0-d": value.reshape(()), "NumPy scalar": value[0],
             "strided": values_of(dtype, 100, rng)[::2],
             "reversed": values_of(dtype, 50, rng)[::-1]}
    if dtype == np.float64:
        forms["Python float"] = float(value[0])
    if dtype == np.int64:
        forms["Python int"] = int(value[0])
    for form, b in forms.items():
        with np.errstate(all="ignore"):
            assert at_both(fn, a, indices, b), form


@pytest.mark.parametrize("name, dtype", AT_LOOPS)
def test_strided_and_reversed_arrays_and_indices_take_the_indexed_loop(name, dtype, rng):
    fn = getattr(ex, name)
    a = values_of(dtype, 60, rng)
    b = (values_of(dtype, 20, rng),) if binary(name) else ()
    every_third = rng.integers(-20, 20, 60)[::3]
    with np.errstate(all="ignore"):
        assert at_both(fn, a, every_third, *b, view=lambda x: x[::3])
        assert at_both(fn, a, every_third[::-1], *b, view=lambda x: x[::-3])


def _unaligned(indices):
    raw = np.zeros(indices.nbytes + 1, np.uint8)[1:]
    view = raw.view(indices.dtype)
    view[:] = indices
    return view


@pytest.mark.parametrize("kind", ["int8", "int16", "int32", ">i8", "uint8", "uint16", "uint32",
                                  "unaligned intp"])
def test_indices_of_every_integer_type_numpy_converts_safely_take_the_indexed_loop(kind, rng):
    indices = rng.integers(-30 if kind[0] != "u" else 0, 30, 200)
    indices = _unaligned(indices) if kind == "unaligned intp" else indices.astype(kind)
    a, b = rng.standard_normal(30), rng.standard_normal(200)
    assert at_both(ex.add, a, indices, b)
    assert at_both(ex.add, a, indices[::-2], b[::2])


ND_VIEWS = {
    "C": lambda x: x,
    "transposed": lambda x: x.T,
    "reversed and strided": lambda x: x[::-1, ::2] if x.ndim == 2 else x[::-1, ::2, ::-1],
}


@pytest.mark.parametrize("view", ND_VIEWS)
@pytest.mark.parametrize("shape", [(7, 12), (5, 6, 8)])
@pytest.mark.parametrize("name, dtype", [p for p in AT_LOOPS if p.values[0] in ("add", "lucas")])
def test_a_tuple_of_one_index_array_per_axis_takes_the_indexed_loop(name, dtype, shape, view, rng):
    fn = getattr(ex, name)
    a = values_of(dtype, int(np.prod(shape)), rng).reshape(shape)
    seen = ND_VIEWS[view](a).shape
    indices = tuple(rng.integers(-n, n, 400) for n in seen)
    b = (values_of(dtype, 400, rng),) if binary(name) else ()
    with np.errstate(all="ignore"):
        assert at_both(fn, a, indices, *b, view=ND_VIEWS[view])
        if binary(name):
            assert at_both(fn, a, indices, b[0][:1], view=ND_VIEWS[view])
            assert at_both(fn, a, tuple(i.astype(np.int32) for i in indices), b[0][0],
                           view=ND_VIEWS[view])


def test_two_dimensional_add_at_is_a_histogram(rng):
    x, y = rng.integers(0, 10, 5000), rng.integers(0, 20, 5000)
    counts = np.zeros((10, 20), np.int64)
    before = _core._host_at_calls()
    ex.add.at(counts, (x, y), 1)
    assert _core._host_at_calls() == before + 1
    expected, _, _ = np.histogram2d(x, y, bins=(np.arange(11), np.arange(21)))
    assert counts.tolist() == expected.astype(np.int64).tolist()


@pytest.mark.parametrize("ix, iy", [([0, 5], [9, 0]), ([0, 1], [9, 0]), ([0, -4], [1, -5]),
                                    ([0, 1], [2, 7]), ([-3, 2], [-4, 4])])
def test_indices_out_of_bounds_are_checked_axis_after_axis_as_numpy_does(ix, iy):
    a = np.arange(12.0).reshape(3, 4)
    assert at_both(ex.add, a, (np.array(ix), np.array(iy)), 1.0) is False
    with pytest.raises(IndexError, match="out of bounds for axis"):
        ex.add.at(a.copy(), (np.array(ix), np.array(iy)), 1.0)


def test_repeated_indices_accumulate_as_plain_python_updates_do(rng):
    a = rng.standard_normal(5)
    indices = rng.integers(-5, 5, 1000)
    values = rng.standard_normal(1000)
    expected = a.tolist()
    for k, v in zip(indices.tolist(), values.tolist()):
        expected[k] += v                             # Python floats: IEEE double addition
    before = _core._host_at_calls()
    ex.add.at(a, indices, values)
    assert _core._host_at_calls() == before + 1
    assert a.tolist() == expected


def test_nothing_selected_changes_nothing(rng):
    a = rng.standard_normal(4)
    assert at_both(ex.add, a, np.zeros(0, np.intp), np.zeros(0))
    assert at_both(ex.add, np.zeros(0), np.zeros(0, np.intp), 1.0)


@pytest.mark.parametrize("indices", [[0, 5, -7], [-4], [3], [2, -3, 1, 9]])
def test_an_index_out_of_bounds_is_numpys_index_error_and_nothing_is_updated(indices):
    a = np.arange(3.0)
    mine = a.copy()
    with pytest.raises(IndexError) as error:
        ex.add.at(mine, np.array(indices), np.ones(len(indices)))
    with pytest.raises(IndexError) as numpys:
        ex.add.ufunc.at(a.copy(), np.array(indices), np.ones(len(indices)))
    assert str(error.value) == str(numpys.value)
    assert mine.tobytes() == a.tobytes()
    with pytest.raises(IndexError, match="index 0 is out of bounds for axis 0 with size 0"):
        ex.add.at(np.zeros(0), np.zeros(1, np.intp), 1.0)


@pytest.mark.parametrize("dtype", [np.intp, np.int32, np.uint32, np.int16])
@pytest.mark.parametrize("view", [slice(None), slice(None, None, -1), slice(None, None, 2),
                                  slice(None, None, -3)], ids=["as is", "reversed", "every other",
                                                               "every third reversed"])
def test_the_index_named_out_of_bounds_is_the_one_numpy_meets_first(dtype, view):
    # An index array of another type NumPy casts in memory order, naming the first bad index
    # it meets there: the last one of a reversed array.
    indices = np.array([0, 3, 1, 1, 4, 3, 0, 5, 1, 1, 6, 2], dtype=dtype)[view]
    a = np.arange(3.0)
    mine = a.copy()
    with pytest.raises(IndexError) as error:
        ex.add.at(mine, indices, 1.0)
    with pytest.raises(IndexError) as numpys:
        ex.add.ufunc.at(a.copy(), indices, 1.0)
    assert str(error.value) == str(numpys.value)
    assert mine.tobytes() == a.tobytes()


CASES_OF_FLAGS = [
    pytest.param("add", [1e308], [1e308], "over", id="add-overflow"),
    pytest.param("add", [np.inf], [-np.inf], "invalid", id="add-invalid"),
    pytest.param("custom_op", [1e-300], [1e-300], "under", id="custom_op-underflow"),
    pytest.param("hypot", [1e308], [1e308], "over", id="hypot-overflow"),
    pytest.param("gelu", [np.nan], None, "invalid", id="gelu-nan-quiet"),
]


@pytest.mark.parametrize("mode", ["raise", "warn", "ignore"])
@pytest.mark.parametrize("name, a, b, kind", CASES_OF_FLAGS)
def test_floating_point_errors_follow_errstate_as_numpys_do(name, a, b, kind, mode):
    fn = getattr(ex, name)
    a = np.array(a * 3)
    extra = (np.array(b * 3),) if b is not None else ()
    with np.errstate(all="ignore", **{kind: mode}):
        assert at_both(fn, a, np.array([0, 2, 0]), *extra)


def test_flags_raised_before_the_call_are_not_reported_as_its_own():
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            np.multiply(np.float64(1e308), np.float64(10))
        a = np.ones(3)
        ex.add.at(a, np.array([0]), 1.0)             # raises nothing: its own flags only
    assert a.tolist() == [2.0, 1.0, 1.0]


def _overlapping_b():
    a = np.arange(6.0)
    return a, a[1:4]


DECLINED = {
    "a list of bools (a mask)": (lambda: np.arange(3.0), [True, False, True], 1.5),
    "a nested list (a 2-D index)": (lambda: np.arange(5.0), [[0, 1], [4, 4]], 1.5),
    "an empty list": (lambda: np.arange(5.0), [], 1.5),
    "a list of floats": (lambda: np.arange(5.0), [0.0, 1.0], 1.5),
    "a list of ints too large for intp": (lambda: np.arange(5.0), [0, 2 ** 70], 1.5),
    "a list of a slice": (lambda: np.arange(5.0), [slice(None)], 1.5),
    "a list of lists b": (lambda: np.arange(5.0), [0, 1], [[1.0], [2.0]]),
    "a list b of the wrong length": (lambda: np.arange(5.0), [0, 1], [1.0, 2.0, 3.0]),
    "uint64 indices": (lambda: np.arange(5.0), np.array([0, 0, 4], np.uint64), 1.5),
    "boolean indices": (lambda: np.arange(3.0), np.array([True, False, True]), 1.5),
    "index arrays of two lengths": (lambda: np.arange(6.0).reshape(2, 3),
                                    (np.array([0, 1]), np.array([2, 2, 1])), 1.0),
    "an index array and an integer": (lambda: np.arange(6.0).reshape(2, 3),
                                      (np.array([0, 1, 1]), 2), 1.0),
    "an index array and a part of each row": (lambda: np.arange(6.0).reshape(2, 3),
                                              (np.array([0, 1]), slice(1, None)), 1.0),
    "an index array and every other element of each row":
        (lambda: np.arange(6.0).reshape(2, 3), (np.array([0, 1]), slice(None, None, 2)), 1.0),
    "an index array, an ellipsis and a slice": (lambda: np.arange(24.0).reshape(2, 3, 4),
                                                (np.array([0, 1]), Ellipsis, slice(None)), 1.0),
    "fewer index arrays than axes": (lambda: np.arange(24.0).reshape(2, 3, 4),
                                     (np.array([0, 1]), np.array([2, 2])), 1.0),
    "a boolean mask": (lambda: np.arange(4.0), np.array([True, False, True, True]), 1.0),
    "a slice": (lambda: np.arange(4.0), slice(None, None, 2), 1.0),
    "np.uint64 into int64 (the float64 loop)":
        (lambda: np.arange(3), np.array([0, 0, 2]), np.uint64(3)),
    "rows of b that do not broadcast to the rows of a": (lambda: np.arange(6.0).reshape(2, 3),
                                                         np.array([0, 1, 1]), np.ones((3, 2))),
    "rows of b broadcast within a row": (lambda: np.arange(24.0).reshape(3, 2, 4),
                                         np.array([1, 1]), np.arange(8.0).reshape(2, 1, 4)),
    "a 2-D index array (a block of rows)": (lambda: np.arange(6.0).reshape(3, 2),
                                            np.array([[0, 1], [2, 2]]), 1.0),
    "rows of no elements": (lambda: np.ones((3, 0)), np.array([0, 1, 1]), 1.0),
    "a Python float into int32 (the float64 loop, stored as an integer)":
        (lambda: np.arange(4, dtype=np.int32), np.array([1, 1]), 1.5),
    "an int64 array into uint64 (the float64 loop)":
        (lambda: np.arange(4, dtype=np.uint64), np.array([1, 1]), np.array([3, 4])),
    "a Python int too large for int64": (lambda: np.arange(4.0), np.array([0]), 2 ** 70),
    "b of the wrong length": (lambda: np.arange(4.0), np.array([0, 1]), np.ones(3)),
    "a byte-swapped array": (lambda: np.arange(4.0).astype(">f8"), np.array([0, 3]), 1.0),
    "a 0-d array": (lambda: np.array(2.5), (), 1.0),
}


BIG = np.array([2 ** 53 + 1, -(2 ** 62) - 3, 7, 2 ** 63 - 1])   # round on their way to float64
CAST = {   # (name, a, b): b of another type, which NumPy's .at casts safely to the loop's
    "a Python int into float64": ("add", lambda: np.arange(5.0), 3),
    "a Python bool into float64": ("add", lambda: np.arange(5.0), True),
    "np.int32 into float64": ("add", lambda: np.arange(5.0), np.int32(-7)),
    "np.float16 into float64": ("add", lambda: np.arange(5.0), np.float16(0.1)),
    "float32 values into float64": ("add", lambda: np.arange(5.0),
                                    np.array([0.1, -np.inf, np.nan, 3e38], np.float32)),
    "int64 values that round into float64": ("add", lambda: np.zeros(5), BIG),
    "reversed int16 values into float64": ("add", lambda: np.zeros(5),
                                           np.arange(-4, 4, dtype=np.int16)[::-2]),
    "an int32 value broadcast (stride 0)": ("add", lambda: np.zeros(5),
                                            np.broadcast_to(np.int32(9), (4,))),
    "uint8 values into int64": ("add", lambda: np.arange(5), np.array([255, 0, 1, 128], np.uint8)),
    "bool values into int64": ("add", lambda: np.arange(5), np.array([True, False, True, True])),
    "np.uint32 into int64": ("add", lambda: np.arange(5), np.uint32(2 ** 32 - 1)),
    "int8 values into float32": ("add", lambda: np.ones(5, np.float32),
                                 np.array([-128, 127, 0, 5], np.int8)),
    "a Python bool into float16": ("add", lambda: np.ones(5, np.float16), True),
    "float32 values into float64 hypot": ("hypot", lambda: np.arange(5.0),
                                          np.array([3e38, -4.0, np.nan, 1e-45], np.float32)),
}


@pytest.mark.parametrize("case", CAST)
def test_b_of_another_type_is_cast_once_as_numpy_casts_it_and_takes_the_indexed_loop(case):
    name, make, b = CAST[case]
    indices = np.array([0, 4, 4, -1])
    with np.errstate(all="ignore"):
        assert at_both(getattr(ex, name), make(), indices, b)


# Just above 2**-24: float32(1 + TIE) is 1 + 2**-23, but float32(1) + float32(TIE) is 1 (a tie,
# to even), so a float32 element updated in the float64 loop tells which NumPy's .at computes.
TIE = 2.0 ** -24 + 2.0 ** -50

CONVERTED = {   # (name, a, b): a's elements converted to the loop's wider type and back
    "a Python float into float32 (the float64 loop)": ("add", lambda: np.ones(5, np.float32), TIE),
    "a Python int into float32": ("add", lambda: np.ones(5, np.float32), 3),
    "float64 values into float32": ("add", lambda: np.ones(5, np.float32),
                                    np.array([0.1, TIE, -np.inf, 1e-300])),
    "a list of ints into float32": ("add", lambda: np.ones(5, np.float32), [1, 2, -3, 2 ** 40]),
    "float32's edge values and a float that overflows it":
        ("add", lambda: np.array([np.nan, -0.0, np.inf, 3e38, -1e-45], np.float32), 1e300),
    "float32 values a float64 NaN and -0.0 update":
        ("add", lambda: np.array([-0.0, 1.0, -1.0, 0.0, np.nan], np.float32),
         np.array([-0.0, np.nan, -np.inf, 6e-46])),
    "a float32 signalling NaN (invalid, as NumPy's cast raises)":
        ("add", lambda: np.array([0x7F800001, 0xFFA00000, 0, 1, 0x7FC00000], np.uint32)
         .view(np.float32), 1.0),
    "a float16 signalling NaN (kept signalling into float64)":
        ("add", lambda: np.array([0x7C01, 0xFE00, 0, 1, 0x7D00], np.uint16).view(np.float16),
         np.array([0.0, 1.0, -0.0, 2.0])),
    "a Python float into float16 (one rounding from float64)":
        ("add", lambda: np.ones(5, np.float16), 2.0 ** -11 + 2.0 ** -40),
    "a Python float that overflows float16": ("add", lambda: np.ones(5, np.float16), 65519.0),
    "float16 subnormals from float64": ("add", lambda: np.zeros(5, np.float16),
                                        np.array([2.0 ** -25, 3e-8, -6e-8, 2.0 ** -24 * 1.5])),
    "float32 values into float16 (the float32 loop)":
        ("add", lambda: np.ones(5, np.float16),
         np.array([0.1, 65504.0, np.nan, -2.0 ** -25], np.float32)),
    "hypot of float32 and a Python float": ("hypot", lambda: np.arange(5, dtype=np.float32), 0.1),
    "hypot of float16 (the float32 loop)": ("hypot", lambda: np.arange(5, dtype=np.float16),
                                            np.array([3.0, 4.0, np.inf, -0.0], np.float16)),
    "custom_op of float32 (float64 only)": ("custom_op", lambda: np.full(5, 1.5, np.float32),
                                            np.array([0.1, -2.0, 1e30, 7.0], np.float32)),
    "a Python int into uint8 (the int64 loop), wrapping":
        ("add", lambda: np.array([250, 1, 2, 3, 255], np.uint8), 10),
    "int8 values that wrap": ("add", lambda: np.array([127, -128, 0, 5, -1], np.int8),
                              np.array([1, -1, 127, -128], np.int8)),
    "int16 and a negative Python int": ("add", lambda: np.arange(5, dtype=np.int16), -40000),
    "int32 and a Python int (no int32 loop)": ("add", lambda: np.arange(5, dtype=np.int32), 7),
    "uint32 at its top and int64 values":
        ("add", lambda: np.full(5, 2 ** 32 - 1, np.uint32), np.array([1, 2, -2 ** 40, 0])),
    "uint16 and a Python bool": ("add", lambda: np.arange(5, dtype=np.uint16), True),
}


@pytest.mark.parametrize("errstate", ["ignore", "warn"])
@pytest.mark.parametrize("case", CONVERTED)
def test_a_of_a_narrower_type_is_converted_and_back_at_each_update_as_numpy_does(case, errstate):
    name, make, b = CONVERTED[case]
    indices = np.array([0, 4, 4, -1])
    with np.errstate(all=errstate):
        assert at_both(getattr(ex, name), make(), indices, b)


def test_a_repeated_index_of_a_converted_a_rounds_after_every_update():
    # Kept in float64 between the updates, 1 + TIE + TIE would round to 1 + 2**-22.
    a = np.ones(2, np.float32)
    ex.add.at(a, [0, 0, 0], TIE)
    expected = 1.0
    for _ in range(3):
        expected = float(np.float32(expected + TIE))       # in float64, rounded to float32
    assert a[0] == expected == 1 + 3 * 2.0 ** -23
    assert at_both(ex.add, np.ones(2, np.float32), np.zeros(9, np.intp), TIE)


def test_unary_functions_and_two_dimensional_arrays_convert_too():
    with np.errstate(all="ignore"):
        assert at_both(ex.lucas, np.arange(-3, 60, 7, dtype=np.int32), np.array([0, 3, 3, -1]))
        assert at_both(ex.lucas, np.arange(9, dtype=np.uint8), [8, 8, 0])
        assert at_both(ex.add, np.ones((3, 4), np.float32), ([0, 2, 2, -1], [3, 0, 0, 1]), TIE)
        assert at_both(ex.add, np.zeros((3, 4), np.int8)[:, ::-2], (np.array([0, 2, 2]),
                                                                    np.array([1, 0, 0])), 200)



# Each (a's type, the loop's type) whose elements the indexed loop converts inline
# (ufuncgen/host_at_convert.h), and NumPy's own ufunc of the same operation as the reference:
# np.add.at and np.multiply.at resolve the same loop for (a, b of the loop's type), convert a's
# elements to it and back index by index, and are no part of ufuncgen.
CONVERTING_PAIRS = [
    pytest.param(np.dtype(a), np.dtype(loop), id=f"{a}-in-{loop}")
    for a, loop in [("float32", "float64"), ("float16", "float64"), ("float16", "float32"),
                    ("int8", "int64"), ("uint8", "int64"), ("int16", "int64"),
                    ("uint16", "int64"), ("int32", "int64"), ("uint32", "int64")]
]

# Floats whose sums round differently kept in float32 (or float16) than in float64, that
# overflow the narrow type, that are subnormal or below it, signed zeros, NaN and infinities.
EDGE_UPDATES = [0.0, -0.0, 1.0, TIE, -TIE, 2.0 ** -11 + 2.0 ** -40, 1e300, -1e300, 3.5e38,
                65519.0, 6e-8, 2.0 ** -25, 1e-45, np.nan, np.inf, -np.inf, 0.1, -7.25]


def narrow_values(dtype, n, rng):
    """n values of the narrow `dtype`, its edges among them."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        values = rng.integers(info.min, info.max, n, endpoint=True).astype(dtype)
        values[:4] = [info.min, info.max, 0, 1]
        return values
    return values_of(dtype, n, rng)


def wide_values(dtype, n, rng):
    """n values of the loop's `dtype` that reach past the narrow types' ranges."""
    if dtype.kind in "iu":
        values = rng.integers(-2 ** 40, 2 ** 40, n)
        values[:6] = [2 ** 63 - 1, -2 ** 63, 255, -129, 65536, 2 ** 32 + 1]
        return rng.permutation(values).astype(dtype)
    values = rng.uniform(-4, 4, n)
    values[:len(EDGE_UPDATES)] = EDGE_UPDATES
    with np.errstate(over="ignore"):
        return rng.permutation(values).astype(dtype)


def at_as_numpy(fn, reference, a, indices, b):
    """fn.at and NumPy's own `reference`.at (np.add, np.multiply) on copies of a: asserts the
    same bits afterwards, the same exception and the same warnings, and that fn.at ran the
    indexed loop."""
    mine, theirs = a.copy(), a.copy()
    before = _core._host_at_calls()
    got = outcome(lambda: fn.at(mine, indices, b))
    assert _core._host_at_calls() == before + 1, "not the indexed loop"
    want = outcome(lambda: reference.at(theirs, indices, b), fn.ufunc.__name__)
    assert got == want
    assert mine.tobytes() == theirs.tobytes(), (mine, theirs)


@pytest.fixture(scope="module")
def multiply():
    import ufuncgen
    return ufuncgen.load("""\
ufunc multiply(x, y) -> z
    types: int64(int64, int64), float32(float32, float32), float64(float64, float64)
{
    z = x * y;
}
""", name="ufg_test_host_at_multiply", cuda_arch="none").multiply


@pytest.mark.parametrize("a_type, loop_type", CONVERTING_PAIRS)
def test_a_converted_array_is_updated_bit_for_bit_as_numpys_own_add_at_updates_it(
        a_type, loop_type, rng):
    a = narrow_values(a_type, 24, rng)
    indices = rng.integers(-24, 24, 400)            # repeated and negative
    with np.errstate(all="ignore"):
        at_as_numpy(ex.add, np.add, a, indices, wide_values(loop_type, 400, rng))
        at_as_numpy(ex.add, np.add, a, indices, wide_values(loop_type, 400, rng)[7])  # a scalar
        if loop_type.kind == "f" and a_type == np.float32:
            at_as_numpy(ex.add, np.add, a, indices, TIE)             # a Python float
        if loop_type.kind == "i":
            at_as_numpy(ex.add, np.add, a, indices, -(2 ** 33) - 3)  # a Python int


@pytest.mark.parametrize("a_type, loop_type", CONVERTING_PAIRS)
def test_a_converted_array_is_updated_bit_for_bit_as_numpys_own_multiply_at_updates_it(
        a_type, loop_type, multiply, rng):
    a = narrow_values(a_type, 24, rng)
    indices = rng.integers(-24, 24, 300)
    b = wide_values(loop_type, 300, rng)
    if loop_type.kind == "f":
        b[::3] = rng.choice([0.5, -2.0, 1.0 + TIE, 3.0, 1e20, 1e-20], b[::3].size)
    with np.errstate(all="ignore"):
        at_as_numpy(multiply, np.multiply, a, indices, b)


@pytest.mark.parametrize("a_type, loop_type", CONVERTING_PAIRS)
def test_the_updates_of_a_converted_array_round_or_wrap_after_each_one_in_order(
        a_type, loop_type):
    # 1 + TIE + TIE ... kept in the wide type would round (or wrap) once, at the end.
    step = TIE if a_type == np.float32 else 2.0 ** -11 + 2.0 ** -40 if a_type.kind == "f" else 2 ** 31
    a = np.ones(3, a_type)
    b = np.full(7, step, loop_type)
    expected = a.copy()
    for value in b:
        with np.errstate(all="ignore"):
            expected[0] = (expected[0].astype(loop_type) + value).astype(a_type)
    before = _core._host_at_calls()
    ex.add.at(a, np.zeros(7, np.intp), b)
    assert _core._host_at_calls() == before + 1
    assert a.tobytes() == expected.tobytes()


@pytest.mark.parametrize("a_type, loop_type", CONVERTING_PAIRS)
def test_an_empty_index_leaves_a_converted_array_as_it_was(a_type, loop_type, rng):
    at_as_numpy(ex.add, np.add, narrow_values(a_type, 5, rng), np.zeros(0, np.intp),
                np.zeros(0, loop_type))


FLAGS_OF_CONVERSIONS = [   # (a, b of the loop's type): the flag NumPy raises for them
    pytest.param(np.float32, 1e300, id="float32-overflows-to-inf"),
    pytest.param(np.float32, np.inf, id="float32-plus-inf-is-quiet"),
    pytest.param(np.float16, 65520.0, id="float16-overflows-from-float64"),
    pytest.param(np.float16, 2.0 ** -25 + 2.0 ** -40, id="float16-underflows-from-float64"),
    pytest.param(np.float16, np.float32(7e4), id="float16-overflows-from-float32"),
    pytest.param(np.float16, np.float32(3e-8), id="float16-underflows-from-float32"),
    pytest.param(np.float32, np.nan, id="float32-nan-is-quiet"),
]


@pytest.mark.parametrize("mode", ["raise", "warn", "ignore"])
@pytest.mark.parametrize("a_type, b", FLAGS_OF_CONVERSIONS)
def test_the_flags_of_a_converted_update_follow_errstate_as_numpys_add_at_does(a_type, b, mode):
    b = np.full(3, b, np.float32 if isinstance(b, np.float32) else np.float64)
    with np.errstate(all=mode):
        at_as_numpy(ex.add, np.add, np.zeros(4, a_type), np.array([0, 2, -1]), b)


def _rows(shape, dtype=np.float64, order="C"):
    return lambda: np.asarray(np.arange(np.prod(shape)).reshape(shape), dtype=dtype, order=order)


ROWS = {   # (name, a, indices, b): a indexed along its first axis alone, b broadcast to the rows
    "rows of float64 from an (n, m) b": ("add", _rows((5, 3)), [0, 4, 4, -1],
                                         np.array([[0.5, -0.0, np.inf], [1, 2, 3],
                                                   [np.nan, -np.inf, 1e308], [7, 8, 9]])),
    "rows of float32, one row of b for all": ("add", _rows((5, 4), np.float32), [1, 1, -5],
                                              np.array([0.1, 3e38, -1.0, 6e-46], np.float32)),
    "rows of int64 and a Python int": ("add", _rows((4, 3), np.int64), [3, 0, 3], 2 ** 62),
    "rows and a column of b (n, 1)": ("add", _rows((4, 3)), [2, 2, 0], np.array([[1.0], [2.0],
                                                                                  [4.0]])),
    "rows and a 0-d b": ("add", _rows((4, 3)), [0, 3], np.array(0.25)),
    "rows and a list of lists": ("add", _rows((3, 2)), [1, 0, 1], [[1, 2], [3, 4], [5, 6]]),
    "rows of a Fortran-ordered a": ("add", _rows((4, 3), order="F"), [0, 3, 3], np.ones((3, 3))),
    "rows of a 3-D a": ("add", _rows((3, 2, 4)), [2, 0, 2, -1], np.arange(32.0).reshape(4, 2, 4)),
    "rows of a 3-D a, one row of b for all": ("add", _rows((3, 2, 4)), [1, 1, 0],
                                              np.arange(8.0).reshape(1, 2, 4)),
    "rows from a strided, reversed b": ("add", _rows((4, 5)), [3, 1, 3],
                                        np.arange(30.0).reshape(3, 10)[::-1, ::2]),
    "rows cast from float32 b into float64": ("add", _rows((4, 3)), [0, 0],
                                              np.array([[0.1, 3e38, -1e-45]] * 2, np.float32)),
    "rows in a tuple of one index array": ("add", _rows((4, 3)), (np.array([1, 1, 2]),), 1.5),
    "rows as an index array and a full slice": ("add", _rows((4, 3)),
                                                (np.array([1, 1, 2]), slice(None)), 1.5),
    "rows of a 3-D a as an index array and an ellipsis":
        ("add", _rows((3, 2, 4)), ([2, -1, 2], Ellipsis), np.arange(8.0).reshape(2, 4)),
    "rows of a 3-D a as an index list and two full slices":
        ("add", _rows((3, 2, 4)), ([0, 0], slice(None), slice(None)), 0.5),
    "rows longer than a part (4,096 elements)":
        ("add", _rows((3, 9000), np.float32), [2, 0, 2],
         np.linspace(-1, 1, 9000, dtype=np.float32)),
    "long rows converted": ("add", _rows((2, 5000), np.float16), [1, 1], 0.1),
    "rows of hypot": ("hypot", _rows((4, 3)), [1, 3, 1], np.array([3.0, -0.0, np.nan])),
    "rows of custom_op": ("custom_op", _rows((4, 3)), [0, 0, -1], np.array([[0.1, 1e308, -2.0]])),
    "rows of float16": ("add", _rows((4, 3), np.float16), [1, 1], np.array([0.1, 65000.0, 6e-8],
                                                                          np.float16)),
    "rows of float32 and a Python float (converted)": ("add", _rows((4, 3), np.float32),
                                                       [0, 3, 3], 2.0 ** -24 + 2.0 ** -50),
    "rows of uint8 and a Python int (converted, wrapping)": ("add", _rows((4, 3), np.uint8),
                                                             [1, 1, 2], 250),
    "rows of a unary function": ("lucas", _rows((4, 3), np.int64), [3, 3, 0], None),
    "rows of a unary function with vector math":
        ("gelu", lambda: np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8), [1, 1, -1], None),
}


@pytest.mark.parametrize("errstate", ["ignore", "warn"])
@pytest.mark.parametrize("case", ROWS)
def test_rows_indexed_along_the_first_axis_update_as_numpys_at_one_row_per_index(case, errstate):
    name, make, indices, b = ROWS[case]
    with np.errstate(all=errstate):
        assert at_both(getattr(ex, name), make(), indices, *(() if b is None else (b,)))


def test_a_scatter_add_of_rows_matches_a_python_loop_of_row_additions(rng):
    weights = rng.standard_normal((50, 16)).astype(np.float32)
    ids, rows = rng.integers(-50, 50, 400), rng.standard_normal((400, 16)).astype(np.float32)
    expected = weights.copy()
    for i, k in enumerate(ids):
        expected[k] = expected[k] + rows[i]        # in order: repeated ids accumulate
    before = _core._host_at_calls()
    ex.add.at(weights, ids, rows)
    assert _core._host_at_calls() == before + 1
    assert weights.tobytes() == expected.tobytes()


def test_rows_walked_with_one_step_take_the_loop_and_others_get_numpys_answer():
    a = np.arange(48.0).reshape(2, 3, 8)
    assert not at_both(ex.add, a, np.array([1, 0, 1]), 1.0, view=lambda x: x[:, :, ::3])
    assert at_both(ex.add, a, np.array([1, 0, 1]), 1.0, view=lambda x: x[:, 1:, :])     # one step


def test_a_row_index_out_of_bounds_is_numpys_index_error_and_a_stays_as_it_was():
    a = np.zeros((3, 2))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        ex.add.at(a, np.array([0, 3]), 1.0)
    assert not a.any()


LISTED = {
    "a list of indices": (lambda: np.arange(5.0), [0, 0, -1, 4], 1.5),
    "a list of NumPy integers": (lambda: np.arange(5.0), [np.int8(0), np.int64(-2)], 1.5),
    "a list of a bool and an int (ints)": (lambda: np.arange(5.0), [True, 1], 1.5),
    "a list of an int and a 0-d array": (lambda: np.arange(5.0), [1, np.array(2)], 1.5),
    "a list of indices and a list b": (lambda: np.arange(5.0), [4, 0, 4], [0.5, -0.0, np.inf]),
    "an index array and a list b": (lambda: np.arange(5.0), np.array([1, 1]), [2.0, 3.0]),
    "a list b of one element": (lambda: np.arange(5.0), np.array([1, 3, 1]), [2.5]),
    "a list of ints b into float64": (lambda: np.arange(5.0), [0, 4], [2 ** 53 + 1, -3]),
    "a list of ints b into int64": (lambda: np.arange(5), [1, 3, 1], [7, -2 ** 63, 9]),
    "a tuple of lists into 2-D": (lambda: np.arange(12.0).reshape(3, 4),
                                  ([0, 2, 2, -1], [3, 0, 0, 1]), 1.0),
    "a list and an index array into 2-D": (lambda: np.arange(12.0).reshape(3, 4),
                                           ([0, 2], np.array([3, 3])), [1.0, 2.0]),
}


@pytest.mark.parametrize("case", LISTED)
def test_lists_as_indices_or_b_take_the_indexed_loop_as_the_arrays_numpy_makes_of_them(case):
    make, indices, b = LISTED[case]
    with np.errstate(over="ignore"):
        assert at_both(ex.add, make(), indices, b)


def test_a_list_index_out_of_bounds_is_numpys_index_error():
    assert at_both(ex.add, np.arange(3.0), [0, 1, 3], 1.0) is False
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        ex.add.at(np.arange(3.0), [0, 1, 3], 1.0)


def test_an_array_made_read_only_while_a_list_converts_is_left_to_numpy():
    class FreezesTheArray:      # np.asarray asks __array__ for the dtype, __int__ for the value
        def __init__(self, target, index):
            self.target, self.index = target, index

        def __array__(self, dtype=None, copy=None):
            self.target.flags.writeable = False
            return np.array(self.index)

        def __int__(self):
            return self.index

    results = []
    for at in (ex.add.at, ex.add.ufunc.at):
        a = np.arange(4.0)
        before = _core._host_at_calls()
        at(a, [FreezesTheArray(a, 1), 3], 1.0)
        assert _core._host_at_calls() == before
        results.append(a.tolist())
    assert results[0] == results[1]


@pytest.mark.parametrize("case", DECLINED)
def test_calls_the_indexed_loop_does_not_take_get_numpys_answers(case):
    make, indices, b = DECLINED[case]
    assert not at_both(ex.add, make(), indices, b)


def test_b_sharing_memory_with_the_array_is_read_before_the_updates_as_numpy_copies_it():
    a, b = _overlapping_b()
    before = _core._host_at_calls()
    ex.add.at(a, np.array([0, 1, 2]), b)
    assert _core._host_at_calls() == before          # NumPy's path, which copies b
    assert a.tolist() == [1.0, 3.0, 5.0, 3.0, 4.0, 5.0]


def test_indices_sharing_memory_with_the_array_get_numpys_answer():
    a = np.array([0, 1, 2, 3])
    mine, theirs = a.copy(), a.copy()
    before = _core._host_at_calls()
    ex.add.at(mine, mine[::-1], 1)
    ex.add.ufunc.at(theirs, theirs[::-1], 1)
    assert _core._host_at_calls() == before
    assert mine.tolist() == theirs.tolist()


@pytest.mark.parametrize("shape", [(3,), (3, 1), ()])
def test_a_read_only_array_is_a_value_error_and_stays_as_it_was(shape):
    # NumPy 2.4's ufunc.at writes into a read-only array; ufuncgen's refuses it.
    a = np.arange(3.0).reshape(shape) if shape else np.array(1.0)
    a.flags.writeable = False
    before = a.copy()
    with pytest.raises(ValueError, match=r"^add\.at: argument 'a' must be a writeable array, "
                                         r"got a read-only one$"):
        ex.add.at(a, np.array([0]) if shape else (), 1.0)
    assert a.tobytes() == before.tobytes()


def test_a_read_only_array_is_refused_by_functions_without_an_indexed_loop_too():
    # mandelbrot's loops (complex -> int32) have none: NumPy's ufunc.at would run them.
    a = np.zeros(3, np.complex64)
    a.flags.writeable = False
    with pytest.raises(ValueError, match=r"^mandelbrot\.at: argument 'a' must be a writeable "):
        ex.mandelbrot.at(a, np.array([0]))
    assert a.tolist() == [0j, 0j, 0j]


def test_a_subclass_goes_to_numpy_and_keeps_its_type():
    m = np.ma.masked_array(np.arange(4.0), mask=[False, True, False, False])
    before = _core._host_at_calls()
    ex.add.at(m, np.array([0, 1]), 1.0)
    assert _core._host_at_calls() == before
    assert isinstance(m, np.ma.MaskedArray)


def test_unary_at_given_b_and_binary_at_without_it_are_numpys_errors():
    for call, numpys in ((lambda: ex.lucas.at(np.arange(3), np.array([0]), 1),
                          lambda: ex.lucas.ufunc.at(np.arange(3), np.array([0]), 1)),
                         (lambda: ex.add.at(np.arange(3.0), np.array([0])),
                          lambda: ex.add.ufunc.at(np.arange(3.0), np.array([0])))):
        assert outcome(call) == outcome(numpys)
        assert outcome(call)[0] is not None


def test_keywords_are_numpys_type_error():
    assert outcome(lambda: ex.add.at(np.ones(3), np.array([0]), b=1.0)) == \
        outcome(lambda: ex.add.ufunc.at(np.ones(3), np.array([0]), b=1.0))


@pytest.mark.parametrize("shape, dtype, index, b", [
    ((1,) * 32 + (2,), "float64", "slice(None)", 1.0),
    ((2,) + (1,) * 32, "float64", "np.array([True, False])", 1.0),
    ((1,) * 63 + (2,), "int8", "np.array([0, 0])", 1.5),
], ids=["slice", "mask", "a cast"])
def test_an_at_numpy_would_stop_the_process_on_is_a_value_error_and_nothing_is_updated(
        shape, dtype, index, b):
    # NumPy 2.4's ufunc.at takes at most 32 dimensions where the indexed loop declines the
    # call, and dies beyond: np.add.at itself, in a subprocess, is the control.
    import subprocess
    import sys
    control = f"import numpy as np\nnp.add.at(np.zeros({shape}, '{dtype}'), {index}, {b})"
    # Without tools/sanitize.sh's preloaded sanitizers: NumPy's crash is no report of ours.
    plain = {k: v for k, v in os.environ.items()
             if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    died = subprocess.run([sys.executable, "-c", control], capture_output=True, env=plain)
    assert died.returncode < 0, died
    a = np.zeros(shape, dtype)
    with pytest.raises(ValueError, match=rf"add.at: the array has {len(shape)} dimensions, "
                                         r"and NumPy's ufunc.at takes at most 32"):
        ex.add.at(a, eval(index, {"np": np}), b)
    assert not a.any()
    # Up to 32 it is NumPy's answer.
    small = np.zeros((1,) * 31 + (2,))
    ex.add.at(small, slice(None), 1.0)
    assert small.tolist() == np.ones((1,) * 31 + (2,)).tolist()


@pytest.mark.parametrize("shape, index", [
    ((3,), "np.zeros((1,) * 33, np.intp)"),
    ((3, 3), "np.zeros((1,) * 32, np.intp)"),
    ((3,), "np.zeros((1,) * 40, np.int32)"),
    ((3,), "np.zeros((1,) * 34, np.intp).tolist()"),
], ids=["33-d index", "32-d index of a 2-d array", "int32", "nested lists"])
def test_an_index_whose_result_has_more_than_32_dimensions_is_a_value_error(shape, index):
    """a itself is small: a[indices] is what NumPy's map iterator walks, and dies beyond 32."""
    import subprocess
    import sys
    control = f"import numpy as np\nnp.add.at(np.zeros({shape}), {index}, 1.0)"
    plain = {k: v for k, v in os.environ.items()
             if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")}
    died = subprocess.run([sys.executable, "-c", control], capture_output=True, env=plain)
    assert died.returncode < 0, died
    a = np.zeros(shape)
    indices = eval(index, {"np": np})
    result_ndim = np.zeros(shape)[np.asarray(indices)].ndim
    with pytest.raises(ValueError, match=rf"add.at: a\[indices\] has {result_ndim} dimensions, "
                                         r"and NumPy's ufunc.at takes at most 32"):
        ex.add.at(a, indices, 1.0)
    assert not a.any()
    # A 32-dimensional result is NumPy's answer.
    fine = np.zeros(3)
    ex.add.at(fine, np.zeros((1,) * 32, np.intp), 1.0)
    assert fine.tolist() == [1.0, 0.0, 0.0]


def test_a_loaded_module_gets_indexed_loops_too(tmp_path, rng):
    import ufuncgen
    module = ufuncgen.load("""\
ufunc clamp_add(x, y) -> z
    types: int32(int32, int32), float32(float32, float32)
{
    z = x + y > 10 ? 10 : x + y;
}
""", name="ufg_test_host_at_loaded", cuda_arch="none")
    for dtype in (np.int32, np.float32):
        a = np.zeros(5, dtype)
        indices = rng.integers(0, 5, 200)
        ones = np.ones(200, dtype)
        expected = [0] * 5
        for k in indices.tolist():
            expected[k] = min(expected[k] + 1, 10)
        before = _core._host_at_calls()
        module.clamp_add.at(a, indices, ones)
        assert _core._host_at_calls() == before + 1
        assert a.tolist() == expected
