"""Generalized ufuncs through the device path: core loops per outer element, frozen and
computed core dimensions, and NumPy's axes=/axis=/keepdims=, checked against NumPy."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from examples.conftest import GUFUNC_NAMES, function_dtype_cases, pdist_python
from .conftest import host, to_dev

CASES = function_dtype_cases(GUFUNC_NAMES)


def _inputs(name, dtype, rng, outer=(3, 4)):
    def u(*shape):
        return rng.uniform(-2, 2, outer + shape).astype(dtype)
    return {
        "l2_norm": lambda: [u(7)],
        "inner1d": lambda: [u(9), u(9)],
        "matmul": lambda: [u(3, 5), u(5, 2)],
        "rgb_to_gray": lambda: [u(3)],
        "sq_norm3": lambda: [u(3)],
        "centroid_distances": lambda: [u(4), u(6, 4)],
        "pairwise_distances": lambda: [u(5, 3)],
        "condensed_distances": lambda: [u(6, 2)],
    }[name]()


def _numpy_reference(name, *a):
    a = [np.asarray(x, dtype=np.float64) for x in a]
    if name == "l2_norm":
        return np.sqrt((a[0] ** 2).sum(-1))
    if name == "inner1d":
        return (a[0] * a[1]).sum(-1)
    if name == "matmul":
        return np.matmul(a[0], a[1])
    if name == "rgb_to_gray":
        return a[0] @ np.array([0.299, 0.587, 0.114])
    if name == "sq_norm3":
        return (a[0] ** 2).sum(-1)
    if name == "centroid_distances":
        return np.sqrt(((a[0][..., None, :] - a[1]) ** 2).sum(-1))
    if name == "pairwise_distances":
        return np.sqrt(((a[0][..., :, None, :] - a[0][..., None, :, :]) ** 2).sum(-1))
    if name == "condensed_distances":
        flat = a[0].reshape(-1, *a[0].shape[-2:])
        return np.array([pdist_python(p) for p in flat]).reshape(a[0].shape[:-2] + (-1,))
    raise KeyError(name)


def _close(got, want, dtype):
    # float16 loops sum in float32 and round once (half an ULP of 2**-10).
    tol = {np.float16: 2e-3, np.float32: 1e-5}.get(np.dtype(dtype).type, 1e-12)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("name, dtype", CASES)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed"])
def test_gufunc_results_match_numpy_for_every_layout(name, dtype, layout, rng):
    inputs = _inputs(name, dtype, rng)
    got = host(getattr(ex, name)(*[to_dev(a, layout) for a in inputs]))
    want = _numpy_reference(name, *inputs)
    assert got.shape == want.shape and got.dtype == np.dtype(dtype)
    _close(got, want, dtype)


@pytest.mark.parametrize("name, dtype", CASES)
def test_gufunc_device_results_match_the_host_call(name, dtype, rng):
    inputs = _inputs(name, dtype, rng, outer=(2, 1, 3))
    _close(host(getattr(ex, name)(*[to_dev(a) for a in inputs])), getattr(ex, name)(*inputs), dtype)


def test_loop_dimensions_broadcast_between_core_operands(rng):
    a = rng.standard_normal((4, 1, 3, 5))
    b = rng.standard_normal((6, 5, 2))
    _close(host(ex.matmul(to_dev(a), to_dev(b))), np.matmul(a, b), np.float64)


def test_empty_loop_and_empty_core_dimensions_give_numpys_shapes(rng):
    a = np.zeros((0, 3, 4))
    b = np.zeros((4, 2))
    assert host(ex.matmul(to_dev(a), to_dev(b))).shape == (0, 3, 2)
    x = np.zeros((5, 0))
    np.testing.assert_array_equal(host(ex.l2_norm(to_dev(x))), np.zeros(5))


def test_a_computed_output_dimension_is_sized_by_its_expression(rng):
    points = rng.standard_normal((2, 7, 3))
    got = host(ex.condensed_distances(to_dev(points)))
    assert got.shape == (2, 21)


def test_gufunc_out_is_written_in_place(rng):
    a, b = rng.standard_normal((2, 10, 3, 3))
    out = device.device_array((10, 3, 3))
    assert ex.matmul(to_dev(a), to_dev(b), out=out) is out
    _close(host(out), a @ b, np.float64)


def test_gufunc_out_that_is_an_input_is_computed_as_from_copies(rng):
    a, b = rng.standard_normal((2, 10, 3, 3))
    d = to_dev(a)
    ex.matmul(d, to_dev(b), out=d)
    _close(host(d), a @ b, np.float64)


@pytest.mark.parametrize("kwargs", [
    dict(axes=[(0, 1), (0, 1), (0, 1)]),
    dict(axes=[(-1, -3), (1, 0), (2, 0)]),
    dict(axes=[(1, 2), (0, 1), (1, 2)]),
])
def test_matmul_axes_mean_what_they_mean_in_numpy(kwargs, rng):
    a = rng.standard_normal((4, 4, 4))
    b = rng.standard_normal((4, 4, 4))
    want = ex.matmul(a, b, **kwargs)
    got = host(ex.matmul(to_dev(a), to_dev(b), **kwargs))
    assert got.shape == want.shape
    _close(got, want, np.float64)


@pytest.mark.parametrize("kwargs", [dict(axis=0), dict(axis=1), dict(axis=-1), dict(axis=0, keepdims=True),
                                    dict(keepdims=True), dict(axes=[0, 0]), dict(axes=[(1,), (1,), ()])])
def test_inner1d_axis_axes_and_keepdims_mean_what_they_mean_in_numpy(kwargs, rng):
    a = rng.standard_normal((5, 6, 7)) if "axes" not in kwargs else rng.standard_normal((6, 6))
    b = a[::-1].copy()
    want = ex.inner1d(a, b, **kwargs)
    got = host(ex.inner1d(to_dev(a), to_dev(b), **kwargs))
    assert got.shape == want.shape
    _close(got, want, np.float64)


def test_keepdims_with_a_given_out_checks_its_kept_size_one_axes(rng):
    a = rng.standard_normal((5, 6))
    out = device.device_array((5, 1))
    ex.l2_norm(to_dev(a), out=out, keepdims=True)
    _close(host(out), np.linalg.norm(a, axis=-1, keepdims=True), np.float64)
    with pytest.raises(ValueError, match="shape"):
        ex.l2_norm(to_dev(a), out=device.device_array((5, 2)), keepdims=True)


MINMAX = """\
gufunc minmax(x) -> (lo, hi)
    layout: (n)->(),()
    types: (float64, float64)(float64)
{
    T a = x(0), b = x(0);
    for (int64_t i = 1; i < n; i++) { a = min(a, x(i)); b = max(b, x(i)); }
    lo = a;
    hi = b;
}
"""


@pytest.fixture(scope="module")
def minmax(tmp_path_factory, module_importer, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("minmax"), "ufg_minmax", MINMAX,
                           "--cuda-arch", device_cuda_arch).minmax


@pytest.mark.parametrize("axes", [[1, 1, 2], [2, 0, 1], [-1, 0, -2], [0, 2, 2], [1, 1, 1]])
def test_with_keepdims_each_output_keeps_its_axis_where_its_own_axes_entry_puts_it(minmax, axes,
                                                                                    rng):
    # Every output took the first output's kept axis: (3, 1, 5) twice for NumPy's
    # (3, 1, 5) and (3, 5, 1).
    x = rng.standard_normal((3, 4, 5))
    lo = np.expand_dims(x.min(axis=axes[0]), axes[1])
    hi = np.expand_dims(x.max(axis=axes[0]), axes[2])
    on_host = minmax(x, axes=axes, keepdims=True)
    np.testing.assert_array_equal(on_host[0], lo)
    np.testing.assert_array_equal(on_host[1], hi)
    got = minmax(to_dev(x), axes=axes, keepdims=True)
    np.testing.assert_array_equal(host(got[0]), lo)
    np.testing.assert_array_equal(host(got[1]), hi)
    outs = (device.device_array(lo.shape), device.device_array(hi.shape))
    minmax(to_dev(x), axes=axes, keepdims=True, out=outs)
    np.testing.assert_array_equal(host(outs[0]), lo)
    np.testing.assert_array_equal(host(outs[1]), hi)


@pytest.mark.parametrize("call, message", [
    (lambda x, empty: ex.sincos(x, out=None), r"'out' must be a tuple of arrays"),
    (lambda x, empty: ex.inner1d(x, x, empty(()), out=None),
     r"cannot specify 'out' as both a positional and (a )?keyword argument"),
    (lambda x, empty: ex.add(x, x, None, out=None),
     r"cannot specify 'out' as both a positional and (a )?keyword argument"),
], ids=["None for two outputs", "a positional out beside out=None", "None beside out=None"])
def test_out_none_where_numpy_refuses_it_is_refused_as_numpy_refuses_it(call, message):
    # The device took out=None before its other checks, and went ahead.
    x = np.ones(3)
    with pytest.raises(TypeError, match=message):
        call(x, np.empty)
    with pytest.raises(TypeError, match=message):
        call(to_dev(x), device.device_array)


@pytest.mark.parametrize("call, error", [
    (lambda a, b: ex.matmul(a, b), "mismatch in its core dimension"),
    (lambda a, b: ex.rgb_to_gray(a), "core dimension"),
    (lambda a, b: ex.inner1d(a, b, axis=0, axes=[0, 0]), "both 'axis' and 'axes'"),
    (lambda a, b: ex.matmul(a, b, axis=0), "axis can only be used"),
    (lambda a, b: ex.matmul(a, b, axes=[(0, 1)]), "axes= should be a list"),
    (lambda a, b: ex.inner1d(a, b, axes=[(5,), (0,)]), "out of bounds"),
])
def test_core_dimension_and_axes_errors_are_clear_and_name_the_function(call, error):
    a = to_dev(np.ones((2, 4)))
    b = to_dev(np.ones((3, 4)))
    with pytest.raises((ValueError, TypeError, np.exceptions.AxisError), match=error):
        call(a, b)
