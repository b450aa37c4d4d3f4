"""Bad calls fail as the same call on a NumPy ufunc of the same arity and loops does, and
never write into out=."""
import numpy as np
import pytest

import ufuncgen.examples as ex

from .conftest import ELEMENTWISE_NAMES, FUNCTION_NAMES, GUFUNC_NAMES

SENTINEL = -12345


def same_arity_numpy_ufunc(fn):
    """A NumPy ufunc with `fn`'s nin and nout (object loops; arity checks are NumPy's)."""
    return np.frompyfunc(lambda *args: args[0] if fn.nout == 1 else args[:fn.nout],
                         fn.nin, fn.nout)


def valid_shapes(fn):
    """Input shapes every function accepts: a loop dimension of 4 and core dimensions 3."""
    if fn.__name__ == "centroid_distances":
        return [(4, 3), (4, 3, 3)]
    return [(4, 3, 3)] * fn.nin


def raised(call):
    try:
        call()
    except Exception as error:   # noqa: BLE001 -- comparing what is raised
        return error
    return None


def assert_raises_like(expected_call, our_call, expected_type=None):
    """Our call raises the type that the NumPy call raises (and `expected_type`)."""
    want = raised(expected_call)
    got = raised(our_call)
    assert want is not None, "the NumPy reference call did not fail"
    assert got is not None, f"did not raise {type(want).__name__}: {want}"
    assert type(got) is type(want), f"raised {type(got).__name__}: {got}; NumPy: {want!r}"
    if expected_type is not None:
        assert isinstance(got, expected_type)
    return got


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_wrong_number_of_arguments_raises_type_error_like_numpy(name):
    fn = getattr(ex, name)
    reference = same_arity_numpy_ufunc(fn)
    arrays = [np.ones((2, 3, 3))] * (fn.nin + fn.nout + 1)
    for count in (0, fn.nin - 1, fn.nin + fn.nout + 1):
        if count < 0:
            continue
        assert_raises_like(lambda: reference(*arrays[:count]), lambda: fn(*arrays[:count]),
                           TypeError)
    assert_raises_like(lambda: reference(*arrays[:fn.nin], bogus=1),
                       lambda: fn(*arrays[:fn.nin], bogus=1), TypeError)


@pytest.mark.parametrize("name", ELEMENTWISE_NAMES)
def test_read_only_out_raises_value_error_and_stays_untouched(name):
    fn = getattr(ex, name)
    dtype = np.dtype(fn.ufunc.types[-1][-1])
    args = [np.ones(5, dtype=np.dtype(fn.ufunc.types[-1][0]))] * fn.nin
    outs = [np.full(5, SENTINEL, dtype=dtype) for _ in range(fn.nout)]
    outs[-1].flags.writeable = False
    reference = np.add if fn.nout == 1 else np.divmod
    ref_args = [np.ones(5)] * reference.nin
    ref_outs = [np.zeros(5) for _ in range(reference.nout)]
    ref_outs[-1].flags.writeable = False
    assert_raises_like(lambda: reference(*ref_args, out=tuple(ref_outs)),
                       lambda: fn(*args, out=tuple(outs)), ValueError)
    for out in outs:
        assert np.all(out == SENTINEL)


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_mis_shaped_out_raises_value_error_and_stays_untouched(name):
    fn = getattr(ex, name)
    dtype = np.dtype(fn.ufunc.types[-1][0])
    args = [np.ones(shape, dtype=dtype) for shape in valid_shapes(fn)]
    good = fn(*args)
    good = good if isinstance(good, tuple) else (good,)
    for bad_shape in [(5,) + good[0].shape[1:], (4, 7, 7, 7)[:good[0].ndim + 1] + (2,)]:
        outs = tuple(np.full(bad_shape, SENTINEL, dtype=g.dtype) for g in good)
        with pytest.raises(ValueError):
            fn(*args, out=outs)
        for out in outs:
            assert np.all(out == SENTINEL)
    ref_out = np.zeros(5)
    assert_raises_like(lambda: np.add(np.ones(4), np.ones(4), out=ref_out),
                       lambda: ex.add(np.ones(4), np.ones(4), out=np.zeros(5)), ValueError)


def _no_loop_reference(fn):
    """A NumPy ufunc with only numeric loops of the same kind as fn's (no complex, no string):
    hypot (float loops) for float functions, invert (bool/int loops) for lucas."""
    kinds = {np.dtype(c).kind for t in fn.ufunc.types for c in t.replace("->", "")}
    return np.invert if kinds == {"i"} else np.hypot


@pytest.mark.parametrize("bad", [
    pytest.param(np.array([1 + 2j, 3j]), id="complex"),
    pytest.param(np.array(["a", "b"]), id="string"),
    pytest.param(np.array(["2020-01-01", "2021-01-01"], dtype="datetime64[D]"), id="datetime"),
], )
@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_unsupported_input_dtype_raises_numpys_no_loop_type_error(name, bad):
    fn = getattr(ex, name)
    if any(np.dtype(c).kind == bad.dtype.kind for t in fn.ufunc.types for c in t.split("->")[0]):
        pytest.skip(f"{name} has {bad.dtype.kind!r} loops")
    reference = _no_loop_reference(fn)
    args = [np.resize(bad, shape) for shape in valid_shapes(fn)]
    outs = tuple(np.full((4, 3, 3)[:1], SENTINEL, dtype=np.float64) for _ in range(fn.nout))
    err = assert_raises_like(lambda: reference(*[bad] * reference.nin), lambda: fn(*args),
                             TypeError)
    assert "not supported for the input types" in str(err)
    raised(lambda: fn(*args, out=outs))
    assert all(np.all(out == SENTINEL) for out in outs)


def test_lucas_rejects_float_and_uint64_input_like_an_int_only_numpy_ufunc():
    for bad in (np.array([1.5, 2.0]), np.float32(3), 2.5):
        assert_raises_like(lambda: np.invert(bad), lambda: ex.lucas(bad), TypeError)
    # uint64 does not cast safely to int64: no loop (np.invert has a uint64 loop itself).
    with pytest.raises(TypeError, match="not supported for the input types"):
        ex.lucas(np.array([1], dtype=np.uint64))
    out = np.full(2, SENTINEL, dtype=np.int64)
    with pytest.raises(TypeError):
        ex.lucas(np.array([1.5, 2.0]), out=out)
    assert np.all(out == SENTINEL)


def test_unsafe_output_casting_raises_like_numpy_and_leaves_out_untouched():
    x = np.linspace(0, 1, 9)
    out = np.full(9, SENTINEL, dtype=np.int64)
    assert_raises_like(lambda: np.add(x, x, out=np.zeros(9, np.int64)),
                       lambda: ex.add(x, x, out=out), TypeError)
    assert np.all(out == SENTINEL)
    out32 = np.full(9, SENTINEL, dtype=np.float32)
    assert_raises_like(lambda: np.hypot(x, x, out=np.zeros(9, np.float32), casting="no"),
                       lambda: ex.hypot(x, x, out=out32, casting="no"), TypeError)
    assert np.all(out32 == SENTINEL)
    # Allowed by same_kind, like NumPy: float64 loop, float32 out.
    np.testing.assert_allclose(ex.hypot(x, x, out=out32), np.hypot(x, x), rtol=1e-6)


@pytest.mark.parametrize("name", GUFUNC_NAMES)
def test_gufunc_broadcast_error_in_loop_dims_leaves_out_untouched(name):
    fn = getattr(ex, name)
    dtype = np.dtype(fn.ufunc.types[-1][0])
    args = [np.ones(shape, dtype=dtype) for shape in valid_shapes(fn)]
    good = fn(*args)
    out = np.full(good.shape, SENTINEL, dtype=dtype)
    # Loop dimension 5 where out= has 4.
    bad = [np.ones((5,) + a.shape[1:], dtype=dtype) for a in args]
    with pytest.raises(ValueError):
        fn(*bad, out=out)
    assert np.all(out == SENTINEL)


def test_elementwise_broadcast_error_leaves_out_untouched_like_numpy():
    out = np.full(4, SENTINEL, dtype=np.float64)
    assert_raises_like(lambda: np.add(np.ones(4), np.ones(3), out=np.zeros(4)),
                       lambda: ex.add(np.ones(4), np.ones(3), out=out), ValueError)
    assert np.all(out == SENTINEL)
    s, c = np.full(4, SENTINEL, float), np.full(4, SENTINEL, float)
    with pytest.raises(ValueError):
        ex.sincos(np.ones(4), out=(s, np.zeros(3)))
    assert np.all(s == SENTINEL) and np.all(c == SENTINEL)


def test_out_of_wrong_arity_raises_like_numpy():
    assert_raises_like(lambda: np.divmod(np.ones(3), np.ones(3), out=(np.zeros(3),)),
                       lambda: ex.sincos(np.ones(3), out=(np.zeros(3),)))
    assert_raises_like(lambda: np.add(np.ones(3), np.ones(3), out=(np.zeros(3), np.zeros(3))),
                       lambda: ex.add(np.ones(3), np.ones(3), out=(np.zeros(3), np.zeros(3))))
    assert_raises_like(lambda: np.add(np.ones(3), np.ones(3), out=[1, 2, 3]),
                       lambda: ex.add(np.ones(3), np.ones(3), out=[1, 2, 3]))
