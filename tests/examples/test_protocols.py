"""NumPy protocols pass through: np.errstate, __array_ufunc__ overrides, ufunc methods."""
import warnings

import numpy as np
import pytest

import ufuncgen.examples as ex

from .conftest import FUNCTION_NAMES


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_overflow_under_errstate_raise_raises_floating_point_error_like_np_add(dtype):
    big = np.full(19, np.finfo(dtype).max, dtype=dtype)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError, match="overflow"):
            np.add(big, big)
        with pytest.raises(FloatingPointError, match="overflow"):
            ex.add(big, big)
        with pytest.raises(FloatingPointError):
            ex.add(big[0], big[0])
    with np.errstate(over="ignore"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert np.all(np.isinf(ex.add(big, big)))


def test_default_errstate_warns_like_numpy_and_ignore_silences():
    with pytest.warns(RuntimeWarning, match="invalid value"):
        ex.add(np.array([np.inf] * 5), np.array([-np.inf] * 5))
    with pytest.warns(RuntimeWarning, match="overflow"):
        ex.custom_op(np.array([1e300] * 5), np.array([1e300] * 5))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        ex.add(np.array([np.inf] * 5), np.array([-np.inf] * 5))
        ex.gaussian_pdf(np.ones(5), np.zeros(5), np.zeros(5))


def test_errstate_divide_and_invalid_raise_like_the_composed_numpy_expression():
    sigma = np.zeros(9)
    # (x - mean) / sigma with sigma = 0: 0/0 is invalid, 1/0 divides by zero.
    with np.errstate(invalid="raise", divide="ignore"):
        with pytest.raises(FloatingPointError, match="invalid"):
            ex.gaussian_pdf(np.zeros(1), np.zeros(1), sigma[:1])
    with np.errstate(divide="raise", invalid="ignore"):
        with pytest.raises(FloatingPointError):
            _ = np.float64(1.0) / sigma   # the reference: division by zero
        with pytest.raises(FloatingPointError):
            ex.gaussian_pdf(np.ones(1), np.zeros(1), sigma[:1])
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError):
            ex.sincos(np.array([np.inf] * 9))
        with pytest.raises(FloatingPointError):
            np.sin(np.array([np.inf] * 9))


def test_errstate_call_callback_is_called_like_for_numpy():
    calls = []
    with np.errstate(over="call", call=lambda kind, flag: calls.append(kind)):
        ex.add(np.array([1e308] * 3), np.array([1e308] * 3))
    assert calls and "overflow" in calls[0]


class Recorder:
    """An __array_ufunc__ override that records what NumPy hands it."""

    def __init__(self):
        self.calls = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        self.calls.append((ufunc, method, inputs, kwargs))
        return "overridden"


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_array_ufunc_override_on_a_custom_class_is_honoured(name):
    fn = getattr(ex, name)
    obj = Recorder()
    args = [np.ones(3)] * (fn.nin - 1) + [obj]
    assert fn(*args) == "overridden"
    (ufunc, method, inputs, kwargs), = obj.calls
    assert ufunc is fn and method == "__call__"
    assert inputs[-1] is obj and kwargs == {}
    obj.calls.clear()
    out = np.zeros(3)
    extra = {"axes": [(0,)] * fn.nin + [()]} if fn.signature == "(n)->()" else {}
    fn(*[np.ones(3)] * fn.nin, out=(obj,) * fn.nout, **extra)
    (_, _, _, kwargs), = obj.calls
    assert kwargs["out"] == (obj,) * fn.nout
    del out


def test_array_ufunc_override_sees_reduce_accumulate_and_outer():
    obj = Recorder()
    assert ex.add.reduce(obj, axis=0) == "overridden"
    assert ex.add.accumulate(obj) == "overridden"
    assert ex.add.outer(obj, 1) == "overridden"
    assert [c[1] for c in obj.calls] == ["reduce", "accumulate", "outer"]
    assert all(c[0] is ex.add for c in obj.calls)


def test_array_ufunc_none_opts_out_with_type_error_like_numpy():
    class OptOut:
        __array_ufunc__ = None

    with pytest.raises(TypeError):
        np.add(np.ones(2), OptOut())
    with pytest.raises(TypeError):
        ex.add(np.ones(2), OptOut())


def test_ndarray_subclass_survives_like_numpy():
    class Sub(np.ndarray):
        pass

    x = np.arange(4.0).view(Sub)
    assert type(ex.add(x, x)) is type(np.add(x, x)) is Sub
    assert type(ex.l2_norm(x[None])) is Sub
    assert type(ex.add(x, x, subok=False)) is np.ndarray
