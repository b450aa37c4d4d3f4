"""__array_ufunc__ overrides receive the ufuncgen function itself (src/core/overrides.c).

NumPy's own protocol (NEP 13) is the reference: every call below is made once on a NumPy ufunc
and once on a ufuncgen.Function wrapping that very ufunc, and the overrides must see the same
method, operands and keywords (and the same errors), except that ours see the Function.  Then
the generated examples, device buffers, and dask, whose graphs must hold the Function.
"""
from __future__ import annotations

import io
import pickle

import numpy as np
import pytest

import ufuncgen
import ufuncgen.examples as ex
from ufuncgen._core import Function

def wrap(ufunc):
    return Function(ufunc, ufunc.__name__, "ufg_tests.generated", "Test doc.")


class Recorder:
    """Records what the override protocol hands it, and answers for the call."""

    def __init__(self):
        self.calls = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self.calls.append((ufunc, method, inputs, kwargs))
        return "overridden"

    def __repr__(self):
        return "Recorder()"


A = Recorder()
X = np.arange(3.0)

# (ufunc name, the call): one row per rule of the protocol; the outcome is compared with NumPy's.
CALLS = [
    ("add", lambda f: f(A, 1)),
    ("add", lambda f: f(X, A)),
    ("add", lambda f: f(A, 1, X)),                        # out by position
    ("add", lambda f: f(A, 1, None)),
    ("add", lambda f: f(A, 1, out=None)),
    ("add", lambda f: f(A, 1, out=(None,))),
    ("add", lambda f: f(A, 1, out=X)),                    # out normalised to a tuple
    ("add", lambda f: f(X, 1, out=A)),                    # an output that overrides
    ("add", lambda f: f(X, 1, out=(A,))),
    ("add", lambda f: f(X, 1, where=A)),                  # where is an operand too
    ("add", lambda f: f(A, 1, out=None, where=True)),
    ("add", lambda f: f(A, 1, sig="dd->d")),              # renamed signature=
    ("add", lambda f: f(A, 1, dtype=float, casting="unsafe", order="K", subok=True)),
    ("add", lambda f: f(A, 1, X, out=X)),                 # refused before any override
    ("add", lambda f: f(A, 1, X, X)),
    ("add", lambda f: f(A)),
    ("add", lambda f: f(A, 1, foo=1)),
    ("add", lambda f: f(A, 1, axis=0)),
    ("add", lambda f: f(A, 1, out=(X, X))),
    ("add", lambda f: f(A, 1, signature="dd->d", dtype=float)),
    ("add", lambda f: f(A, 1, sig="dd->d", signature="dd->d")),
    ("divmod", lambda f: f(A, 1)),                        # two outputs
    ("divmod", lambda f: f(A, 1, X)),
    ("divmod", lambda f: f(A, 1, None, X)),
    ("divmod", lambda f: f(A, 1, out=(X, None))),
    ("divmod", lambda f: f(A, 1, out=(None, None))),
    ("divmod", lambda f: f(A, 1, out=X)),
    ("matmul", lambda f: f(A, X)),                        # a gufunc
    ("matmul", lambda f: f(A, X, out=X, axes=None)),
    ("matmul", lambda f: f(A, X, axis=0)),
    ("matmul", lambda f: f(A, X, axis=0, axes=None)),
    ("matmul", lambda f: f(A, X, where=True)),
    ("add", lambda f: f.reduce(A)),
    ("add", lambda f: f.reduce(A, 0, None, X)),           # positional keywords named
    ("add", lambda f: f.reduce(A, 0, None, None, True, 5, True)),
    ("add", lambda f: f.reduce(A, 0, None, None, False, np._NoValue)),
    ("add", lambda f: f.reduce(A, initial=np._NoValue)),
    ("add", lambda f: f.reduce(A, out=(X,))),
    ("add", lambda f: f.reduce(A, 0, None, (X,))),        # a positional tuple stays a value
    ("add", lambda f: f.reduce(A, 0, None, (None,))),
    ("add", lambda f: f.reduce(X, 0, None, (A,))),
    ("add", lambda f: f.accumulate(A, 0, None, (X,))),
    ("add", lambda f: f.reduceat(A, [0, 2], 0, None, (X,))),
    ("add", lambda f: f.reduce(A, out=(None,))),
    ("add", lambda f: f.reduce(X, where=A)),
    ("add", lambda f: f.reduce(array=A)),
    ("add", lambda f: f.reduce(A, out=(X, X))),
    ("add", lambda f: f.reduce(A, 0, axis=0)),
    ("add", lambda f: f.reduce(A, foo=1)),
    ("add", lambda f: f.reduce()),
    ("matmul", lambda f: f.reduce(A)),
    ("divmod", lambda f: f.reduce(A)),
    ("negative", lambda f: f.reduce(A)),
    ("add", lambda f: f.accumulate(A, 0, None, X)),
    ("add", lambda f: f.accumulate(A, where=True)),
    ("add", lambda f: f.reduceat(A, [0, 2], 0, None, X)),
    ("add", lambda f: f.reduceat(X, A)),
    ("add", lambda f: f.reduceat(A)),
    ("add", lambda f: f.outer(A, X)),
    ("add", lambda f: f.outer(X, X, out=A)),
    ("add", lambda f: f.outer(X, X, where=A)),
    ("add", lambda f: f.outer(A, X, sig="dd->d")),
    ("add", lambda f: f.outer(A, X, X)),
    ("add", lambda f: f.outer(A, X, foo=1)),
    ("matmul", lambda f: f.outer(A, X)),
    ("add", lambda f: f.at(A, [0], 1)),
    ("add", lambda f: f.at(X, [0], A)),
    ("add", lambda f: f.at(A, [0], None)),
    ("add", lambda f: f.at(A, [0])),
    ("add", lambda f: f.at(A, [0], b=1)),
    ("negative", lambda f: f.at(A, [0])),
    ("negative", lambda f: f.at(A, [0], 1)),
    ("divmod", lambda f: f.at(A, [0], 1)),
]


def outcome(call, f):
    """What the override saw (its ufunc replaced by a marker), or the error raised."""
    A.calls.clear()
    try:
        result = call(f)
    except Exception as error:  # noqa: BLE001 - the exception is the outcome
        return ("raised", type(error), str(error)), None
    (ufunc, method, inputs, kwargs), = A.calls
    return ("overridden", result, method, inputs, kwargs), ufunc


@pytest.mark.parametrize("index", range(len(CALLS)))
def test_overrides_see_what_numpy_hands_them_but_the_function_itself(index):
    name, call = CALLS[index]
    numpy_ufunc = getattr(np, name)
    function = wrap(numpy_ufunc)
    expected, numpy_seen = outcome(call, numpy_ufunc)
    actual, ours_seen = outcome(call, function)
    assert actual == expected
    if expected[0] == "overridden":
        assert numpy_seen is numpy_ufunc and ours_seen is function


def test_a_user_class_receives_the_generated_function_for_every_method():
    obj = Recorder()
    assert ex.add(obj, 1.0) == "overridden"
    assert ex.add.reduce(obj, axis=0) == "overridden"
    assert ex.add.accumulate(obj) == "overridden"
    assert ex.add.reduceat(obj, [0, 1]) == "overridden"
    assert ex.add.outer(obj, X) == "overridden"
    assert ex.add.at(obj, [0], 1.0) == "overridden"
    assert [c[1] for c in obj.calls] == [
        "__call__", "reduce", "accumulate", "reduceat", "outer", "at"]
    assert all(c[0] is ex.add for c in obj.calls)


def test_a_gufunc_override_receives_the_gufunc_as_in_numpys_own_test():
    # NumPy's test_gufunc_override, with a generated gufunc in place of its inner1d.
    class Returns:
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return self, ufunc, method, inputs, kwargs

    a = Returns()
    assert ex.inner1d(a, a) == (a, ex.inner1d, "__call__", (a, a), {})
    assert ex.inner1d(1, 1, out=a) == (a, ex.inner1d, "__call__", (1, 1), {"out": (a,)})
    # A wrong number of arguments is NumPy's error, before any override.
    with pytest.raises(TypeError):
        ex.inner1d(a, out="two")
    with pytest.raises(TypeError):
        ex.inner1d(a, a, "one", out="two")
    with pytest.raises(TypeError):
        ex.inner1d(a, a, "one", "two")
    with pytest.raises(ValueError):
        ex.inner1d(a, a, out=("one", "two"))
    with pytest.raises(ValueError):
        ex.inner1d(a, a, out=())


def test_out_is_always_a_tuple_with_one_entry_per_output():
    obj = Recorder()
    s, c = np.empty(3), np.empty(3)
    ex.sincos(obj, s, c)
    ex.sincos(obj, out=(s, None))
    ex.sincos(obj, None, c)
    ex.sincos(obj, out=(None, None))
    ex.add(obj, 1.0, out=s)
    assert [kwargs.get("out", "absent") for *_, kwargs in obj.calls] == [
        (s, c), (s, None), (None, c), "absent", (s,)]


class Declines:
    order: list = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        Declines.order.append(type(self).__name__)
        return NotImplemented


class DeclinesToo(Declines):
    pass


class Unrelated:
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        Declines.order.append(type(self).__name__)
        return NotImplemented


@pytest.mark.parametrize("operands", [
    (Declines(), DeclinesToo()),
    (DeclinesToo(), Declines()),
    (Unrelated(), Declines(), DeclinesToo()),
    (Declines(), Unrelated(), DeclinesToo()),
    (Declines(), Declines(), Unrelated()),
])
def test_subclasses_are_asked_before_superclasses_otherwise_left_to_right(operands):
    numpy_ufunc = {2: np.add, 3: np._core.umath.clip}[len(operands)]  # clip: a 3-input ufunc
    orders = []
    for f in (numpy_ufunc, wrap(numpy_ufunc)):
        Declines.order = []
        with pytest.raises(TypeError, match="all returned NotImplemented"):
            f(*operands)
        orders.append(Declines.order)
    assert orders[1] == orders[0] and len(orders[0]) == len({type(o) for o in operands})


def test_when_every_override_declines_the_type_error_names_the_function_and_operand_types():
    declines = Declines()
    with pytest.raises(TypeError) as numpy_error:
        np.add(declines, X, out=X)
    with pytest.raises(TypeError) as ours:
        ex.add(declines, X, out=X)
    # NumPy's message, with the function the caller called in place of the bare ufunc.
    assert str(ours.value) == str(numpy_error.value).replace(repr(np.add), repr(ex.add))
    assert "'Declines', 'ndarray', 'ndarray'" in str(ours.value)
    assert "ufuncgen.examples.add" in str(ours.value)


def test_array_ufunc_none_refuses_the_call_with_numpys_type_error():
    class OptOut:
        __array_ufunc__ = None

    with pytest.raises(TypeError) as numpy_error:
        np.add(X, OptOut())
    with pytest.raises(TypeError) as ours:
        ex.add(X, OptOut())
    assert str(ours.value) == str(numpy_error.value)
    assert "does not support ufuncs (__array_ufunc__=None)" in str(ours.value)
    with pytest.raises(TypeError, match="does not support ufuncs"):
        ex.add.reduce(OptOut())


def test_an_override_that_raises_propagates_its_exception():
    class Fails:
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            raise KeyError("from the override")

    with pytest.raises(KeyError, match="from the override"):
        ex.add(Fails(), 1.0)


def test_an_ndarray_subclass_that_defers_to_ndarray_computes_numpys_result():
    # The usual pattern: unwrap, call ndarray.__array_ufunc__ with the ufunc received (the
    # Function), wrap again.  ndarray's implementation calls that Function's own method.
    class Tagged(np.ndarray):
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            self.seen = ufunc
            inputs = tuple(np.asarray(i) if isinstance(i, Tagged) else i for i in inputs)
            return super().__array_ufunc__(ufunc, method, *inputs, **kwargs)

    t = np.linspace(0.0, 2.0, 5).view(Tagged)
    np.testing.assert_array_equal(ex.add(t, 1.0), np.add(np.asarray(t), 1.0))
    assert t.seen is ex.add
    np.testing.assert_array_equal(ex.add.accumulate(t), np.add.accumulate(np.asarray(t)))
    np.testing.assert_array_equal(ex.l2_norm(t), np.linalg.norm(np.asarray(t)))
    assert t.seen is ex.l2_norm


def test_a_numpy_scalar_subclass_with_an_override_is_honoured_like_numpy():
    class Scalar(np.float64):
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            return ufunc

    assert np.add(Scalar(1.0), 1.0) is np.add
    assert ex.add(Scalar(1.0), 1.0) is ex.add


def test_plain_arguments_never_reach_an_override_and_compute_numpys_result():
    x = np.linspace(-1.0, 1.0, 7)
    np.testing.assert_array_equal(ex.add(x, np.float64(2.0)), x + 2.0)
    np.testing.assert_array_equal(ex.add(x, [1.0] * 7, where=x > 0, out=np.zeros(7)),
                                  np.add(x, 1.0, where=x > 0, out=np.zeros(7)))


# --------------------------------------------------------------------------- device buffers

class CupyLike:
    """A CUDA buffer whose __array_ufunc__, like CuPy's, refuses ufuncs not its own."""

    @property
    def __cuda_array_interface__(self):
        raise AssertionError("the interface is not evaluated to find device buffers")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise AssertionError("a device buffer's __array_ufunc__ was asked")


def test_a_cuda_buffer_that_defines_array_ufunc_takes_the_device_path():
    # The device path reads the buffer's interface (here an AssertionError): the override,
    # which would refuse the function, is never asked.
    buffer = CupyLike()
    with pytest.raises(TypeError, match="reading __cuda_array_interface__ failed"):
        ex.add(buffer, 1.0)
    with pytest.raises(TypeError, match="reading __cuda_array_interface__ failed"):
        ex.add(np.ones(3), buffer)


def test_other_arguments_overrides_are_asked_before_the_device_path():
    obj, buffer = Recorder(), CupyLike()
    assert ex.add(buffer, obj) == "overridden"
    (ufunc, method, inputs, _), = obj.calls
    assert ufunc is ex.add and inputs == (buffer, obj)


# --------------------------------------------------------------------------- dask

class _FindFunctions(pickle.Pickler):
    """Walks a pickled object and notes every ufuncgen.Function and np.ufunc in it."""

    def __init__(self):
        super().__init__(io.BytesIO())
        self.found = []

    def reducer_override(self, obj):
        if isinstance(obj, (ufuncgen.Function, np.ufunc)):
            self.found.append(obj)
        return NotImplemented


def functions_in_graph(array):
    finder = _FindFunctions()
    finder.dump(dict(array.__dask_graph__()))
    return finder.found


V = np.random.default_rng(7).standard_normal((240, 3))
STACK = np.random.default_rng(8).standard_normal((40, 2, 3))
M = np.random.default_rng(9).standard_normal((3, 4))
XS = np.linspace(-3.0, 3.0, 500)


def dask_cases():
    da = pytest.importorskip("dask.array", reason="dask is in the [test] extra")
    import ufuncgen.dask
    x = da.from_array(XS, chunks=128)
    v = da.from_array(V, chunks=(64, 3))
    return [
        (ex.add, lambda: ex.add(x, x), ex.add(XS, XS)),
        (ex.gaussian_pdf, lambda: ex.gaussian_pdf(x, 0.5, 1.5), ex.gaussian_pdf(XS, 0.5, 1.5)),
        (ex.l2_norm, lambda: ex.l2_norm(v), ex.l2_norm(V)),
        (ex.matmul, lambda: ex.matmul(da.from_array(STACK, chunks=(8, 2, 3)), M),
         ex.matmul(STACK, M)),
        (ex.sincos, lambda: ufuncgen.dask.apply(ex.sincos, x)[1], ex.sincos(XS)[1]),
    ]


@pytest.mark.parametrize("index", range(5))
def test_a_dask_graph_holds_the_function_and_computes_the_host_result(index):
    da = pytest.importorskip("dask.array", reason="dask is in the [test] extra")
    function, lazy, expected = dask_cases()[index]
    y = lazy()
    assert isinstance(y, da.Array)
    held = functions_in_graph(y)
    assert function in held and function.ufunc not in held
    # A chunk is a call of its own: transcendental results may differ by a few ULP from one
    # whole-array call (libmvec's vector and libm's scalar paths), as tests/test_dask.py says.
    np.testing.assert_array_max_ulp(y.compute(scheduler="sync"), expected, maxulp=8)
    again = pickle.loads(pickle.dumps(y))
    np.testing.assert_array_equal(again.compute(scheduler="sync"), y.compute(scheduler="sync"))


def test_a_dask_graph_pickles_the_function_by_module_and_name():
    pytest.importorskip("dask.array", reason="dask is in the [test] extra")
    _, lazy, _ = dask_cases()[1]
    data = pickle.dumps(dict(lazy().__dask_graph__()))
    assert b"_load_function" in data and b"_load_ufunc" not in data
