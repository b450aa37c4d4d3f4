"""Generalized ufuncs against float64 / plain-Python references: every loop, core and loop
size and layout, broadcasting, axes=/axis=/keepdims=, frozen and computed core dims."""
import numpy as np
import pytest

import ufuncgen.examples as ex

from .conftest import (
    GUFUNC_NAMES,
    LAYOUTS,
    SIZES,
    assert_within,
    eps,
    function_dtype_cases,
    pdist_python,
    sum_bound,
    with_layout,
)

CASES = function_dtype_cases(GUFUNC_NAMES)
RGB_WEIGHTS = (0.299, 0.587, 0.114)


def gufunc_inputs(name, dtype, loop, size, rng):
    """Inputs with loop shape `loop`, their variable core dimension set to `size`."""
    def r(*shape, lo=-2.0, hi=2.0):
        return rng.uniform(lo, hi, loop + shape).astype(dtype)

    return {
        "l2_norm": lambda: [r(size)],
        "inner1d": lambda: [r(size), r(size)],
        "matmul": lambda: [r(5, size), r(size, 3)],
        "rgb_to_gray": lambda: [r(3, lo=0.0, hi=1.0)],
        "sq_norm3": lambda: [r(3)],
        "centroid_distances": lambda: [r(size), r(4, size)],
        "pairwise_distances": lambda: [r(size, 3)],
        "condensed_distances": lambda: [r(size, 3)],
    }[name]()


def gufunc_reference(name, *inputs):
    """(expected in float64 or wider, absolute error bound) for the loop's dtype.  A float16
    loop sums in float32 (T is float) and rounds once: its sums are bounded as float32's, and
    check_gufunc adds the final rounding."""
    dtype = np.dtype(np.float32) if inputs[0].dtype == np.float16 else inputs[0].dtype
    wide = [np.asarray(a, dtype=np.longdouble) for a in inputs]
    if name == "l2_norm":
        (x,) = wide
        sq = np.sum(x * x, axis=-1)
        ref = np.sqrt(sq)
        return ref, sum_bound(dtype, x.shape[-1], ref)
    if name == "inner1d":
        x, y = wide
        return np.sum(x * y, axis=-1), sum_bound(dtype, x.shape[-1], np.sum(np.abs(x * y), -1))
    if name == "matmul":
        a, b = wide
        ref = np.einsum("...ik,...kj->...ij", a, b)
        mag = np.einsum("...ik,...kj->...ij", np.abs(a), np.abs(b))
        return ref, sum_bound(dtype, a.shape[-1], mag)
    if name == "rgb_to_gray":
        (rgb,) = wide
        w = np.array([dtype.type(v) for v in RGB_WEIGHTS], dtype=np.longdouble)
        ref = np.sum(rgb * w, axis=-1)
        return ref, sum_bound(dtype, 3, ref)
    if name == "sq_norm3":
        (v,) = wide
        ref = np.sum(v * v, axis=-1)
        return ref, sum_bound(dtype, 3, ref)
    if name == "centroid_distances":
        point, centroids = inputs
        diff = np.asarray(point[..., None, :] - centroids, dtype=np.longdouble)
        ref = np.sqrt(np.sum(diff * diff, axis=-1))
        return ref, sum_bound(dtype, point.shape[-1], ref)
    if name == "pairwise_distances":
        (points,) = inputs
        diff = np.asarray(points[..., :, None, :] - points[..., None, :, :], dtype=np.longdouble)
        ref = np.sqrt(np.sum(diff * diff, axis=-1))
        return ref, sum_bound(dtype, points.shape[-1], ref)
    if name == "condensed_distances":
        (points,) = inputs
        n = points.shape[-2]
        stack = points.reshape((int(np.prod(points.shape[:-2])),) + points.shape[-2:])
        ref = np.array([pdist_python(p) for p in stack], dtype=np.float64)
        ref = ref.reshape(points.shape[:-2] + (n * (n - 1) // 2,))
        return ref, sum_bound(dtype, points.shape[-1], ref)
    raise KeyError(name)


def check_gufunc(name, actual, inputs):
    ref, bound = gufunc_reference(name, *inputs)
    assert actual.dtype == inputs[0].dtype
    assert_within(actual, ref.astype(actual.dtype), bound + eps(actual.dtype) * np.abs(ref))


# The variable core dimension's sizes (for frozen (3) layouts: the loop size instead).
CORE_SIZES = {
    "l2_norm": SIZES,
    "inner1d": SIZES,
    "matmul": (0, 1, 7, 8, 17, 33),
    "centroid_distances": SIZES[:-1],
    "pairwise_distances": (0, 1, 2, 7, 17, 40),
    "condensed_distances": (0, 1, 2, 7, 17, 40),
}


def size_cases():
    for case in CASES:
        name = case.values[0]
        for size in CORE_SIZES.get(name, SIZES):
            yield pytest.param(*case.values, size, id=f"{case.id}-{size}")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name, dtype, size", list(size_cases()))
def test_gufunc_matches_reference_for_every_core_size_and_layout(name, dtype, size, layout, rng):
    fn = getattr(ex, name)
    frozen = name in ("rgb_to_gray", "sq_norm3")
    loop = (size,) if frozen else (2,)
    inputs = gufunc_inputs(name, dtype, loop, 0 if frozen else size, rng)
    args = [with_layout(a, layout) for a in inputs]
    check_gufunc(name, fn(*args), inputs)


@pytest.mark.parametrize("loop", [(), (1,), (3, 2), (2, 0, 3)], ids=str)
@pytest.mark.parametrize("name, dtype", CASES)
def test_gufunc_matches_reference_for_0d_and_nd_loop_shapes(name, dtype, loop, rng):
    inputs = gufunc_inputs(name, dtype, loop, 5, rng)
    result = getattr(ex, name)(*inputs)
    assert result.shape[:len(loop)] == loop
    check_gufunc(name, result, inputs)


@pytest.mark.parametrize("name, dtype", CASES)
def test_gufunc_core_dims_may_be_transposed_views(name, dtype, rng):
    inputs = gufunc_inputs(name, dtype, (3,), 6, rng)
    # Swap the loop axis to the end in memory: core dims strided, loop dim contiguous.
    args = [np.moveaxis(np.moveaxis(a, 0, -1).copy(), -1, 0) for a in inputs]
    check_gufunc(name, getattr(ex, name)(*args), inputs)


def test_gufunc_loop_dims_broadcast_between_inputs_and_against_stride_0(rng):
    x = rng.uniform(-1, 1, (4, 1, 9))
    y = rng.uniform(-1, 1, (3, 9))
    result = ex.inner1d(x, y)
    assert result.shape == (4, 3)
    full = np.broadcast_arrays(x, y)
    check_gufunc("inner1d", result, [a.copy() for a in full])
    # A stride-0 broadcast core and loop dimension.
    x0 = np.broadcast_to(x[:1, :1, :1], (4, 3, 9))
    check_gufunc("inner1d", ex.inner1d(x0, y), [x0.copy(), np.broadcast_to(y, (4, 3, 9)).copy()])
    point = rng.uniform(-1, 1, (5, 1, 3))
    centroids = rng.uniform(-1, 1, (2, 4, 3))
    result = ex.centroid_distances(point, centroids)
    assert result.shape == (5, 2, 4)
    a = np.broadcast_to(point, (5, 2, 3)).copy()
    b = np.broadcast_to(centroids, (5, 2, 4, 3)).copy()
    check_gufunc("centroid_distances", result, [a, b])
    m1 = rng.uniform(-1, 1, (2, 1, 4, 5)).astype(np.float32)
    m2 = rng.uniform(-1, 1, (3, 5, 2)).astype(np.float32)
    result = ex.matmul(m1, m2)
    assert result.shape == (2, 3, 4, 2) and result.dtype == np.float32
    check_gufunc("matmul", result, [np.broadcast_to(m1, (2, 3, 4, 5)).copy(),
                                    np.broadcast_to(m2, (2, 3, 5, 2)).copy()])


# ----------------------------------------------------------------------------- axes / axis

def test_gufunc_axes_match_numpy_gufuncs_of_the_same_layout(rng):
    x = rng.uniform(-1, 1, (7, 4, 5))
    y = rng.uniform(-1, 1, (4, 7, 5))
    for axes in ([(0,), (1,), ()], [(-1,), (-1,), ()], [(2,), (2,), ()]):
        try:
            want = np.vecdot(x, y, axes=axes)
        except ValueError:
            with pytest.raises(ValueError):
                ex.inner1d(x, y, axes=axes)
            continue
        got = ex.inner1d(x, y, axes=axes)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    a = rng.uniform(-1, 1, (3, 4, 2))
    b = rng.uniform(-1, 1, (4, 5, 2))
    axes = [(0, 1), (0, 1), (1, 0)]
    want = np.matmul(a, b, axes=axes)
    got = ex.matmul(a, b, axes=axes)
    assert got.shape == want.shape == (5, 3, 2)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    norms = ex.l2_norm(x, axes=[(0,), ()])
    np.testing.assert_allclose(norms, np.sqrt(np.vecdot(x, x, axes=[(0,), (0,), ()])),
                               rtol=1e-13)
    rgb = rng.uniform(0, 1, (3, 6))
    np.testing.assert_array_equal(ex.rgb_to_gray(rgb, axes=[(0,), ()]), ex.rgb_to_gray(rgb.T))
    dist = ex.condensed_distances(rng.uniform(-1, 1, (3, 5, 4)), axes=[(2, 0), (1,)])
    assert dist.shape == (5, 6)


def test_gufunc_axis_and_keepdims_match_numpy_vecdot(rng):
    x = rng.uniform(-1, 1, (6, 5, 4))
    y = rng.uniform(-1, 1, (6, 5, 4))
    for axis in (0, 1, -1):
        for keepdims in (False, True):
            want = np.vecdot(x, y, axis=axis, keepdims=keepdims)
            got = ex.inner1d(x, y, axis=axis, keepdims=keepdims)
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
            got = ex.l2_norm(x, axis=axis, keepdims=keepdims)
            np.testing.assert_allclose(got, np.sqrt(np.vecdot(x, x, axis=axis,
                                                              keepdims=keepdims)), rtol=1e-13)
    got = ex.sq_norm3(rng.uniform(-1, 1, (3, 2)), axis=0, keepdims=True)
    assert got.shape == (1, 2)


def assert_raises_like(numpy_call, our_call):
    """Our call raises exactly the exception type the NumPy call raises."""
    with pytest.raises(Exception) as numpy_error:
        numpy_call()
    with pytest.raises(Exception) as our_error:
        our_call()
    assert type(our_error.value) is type(numpy_error.value), (our_error.value,
                                                              numpy_error.value)
    return our_error.value


def test_gufunc_bad_axes_axis_and_keepdims_raise_like_numpy(rng):
    x = rng.uniform(-1, 1, (3, 4))
    a = rng.uniform(-1, 1, (3, 3))
    assert_raises_like(lambda: np.vecdot(x, x, axes=[(5,), (0,), ()]),
                       lambda: ex.inner1d(x, x, axes=[(5,), (0,), ()]))
    assert_raises_like(lambda: np.vecdot(x, x, axes=[(0,), ()]),
                       lambda: ex.inner1d(x, x, axes=[(0,), ()]))
    assert_raises_like(lambda: np.vecdot(x, x, axes=[(0,), (0,), ()], axis=0),
                       lambda: ex.inner1d(x, x, axes=[(0,), (0,), ()], axis=0))
    assert_raises_like(lambda: np.matmul(a, a, axis=0), lambda: ex.matmul(a, a, axis=0))
    assert_raises_like(lambda: np.matmul(a, a, keepdims=True),
                       lambda: ex.matmul(a, a, keepdims=True))
    assert_raises_like(lambda: np.matmul(a, a, axes=[(0, 1), (0, 1)]),
                       lambda: ex.matmul(a, a, axes=[(0, 1), (0, 1)]))


# ----------------------------------------------------------------------------- core dims

@pytest.mark.parametrize("last", [0, 1, 2, 4, 5])
@pytest.mark.parametrize("name", ["rgb_to_gray", "sq_norm3"])
def test_frozen_core_dim_mismatch_raises_value_error_like_numpy(name, last):
    x = np.zeros((2, last))
    with pytest.raises(ValueError, match="mismatch in its core dimension") as error:
        getattr(ex, name)(x)
    assert f"size {last} is different from 3" in str(error.value)
    # NumPy's own test gufunc with a frozen dimension, cross1d (3),(3)->(3), fails alike.
    umath_tests = pytest.importorskip("numpy._core._umath_tests")
    with pytest.raises(ValueError, match="mismatch in its core dimension") as numpy_error:
        umath_tests.cross1d(x, x)
    assert type(numpy_error.value) is type(error.value)


def test_frozen_core_dim_mismatch_leaves_out_untouched():
    out = np.full(2, -7.0)
    with pytest.raises(ValueError):
        ex.rgb_to_gray(np.zeros((2, 4)), out=out)
    assert np.all(out == -7.0)


@pytest.mark.parametrize("name, shapes, numpy_call", [
    ("inner1d", [(3,), (4,)], lambda x, y: np.vecdot(x, y)),
    ("matmul", [(2, 3), (4, 5)], lambda a, b: np.matmul(a, b)),
    ("matmul", [(3,), (3, 3)], None),
    ("l2_norm", [()], None),
    ("centroid_distances", [(3,), (4, 2)], None),
    ("pairwise_distances", [(4,)], None),
], ids=lambda v: v if isinstance(v, str) else None)
def test_gufunc_wrong_core_dim_shapes_raise_value_error(name, shapes, numpy_call):
    args = [np.ones(s) for s in shapes]
    with pytest.raises(ValueError) as error:
        getattr(ex, name)(*args)
    if numpy_call is not None:
        with pytest.raises(ValueError) as numpy_error:
            numpy_call(*args)
        assert type(error.value) is type(numpy_error.value)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 9])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_condensed_distances_output_has_n_times_n_minus_1_over_2_elements(n, dtype, rng):
    points = rng.uniform(-3, 3, (n, 4)).astype(dtype)
    result = ex.condensed_distances(points)
    assert result.shape == (n * (n - 1) // 2,) and result.dtype == dtype
    check_gufunc("condensed_distances", result, [points])
    stacked = rng.uniform(-3, 3, (2, 3, n, 4)).astype(dtype)
    result = ex.condensed_distances(stacked)
    assert result.shape == (2, 3, n * (n - 1) // 2)
    check_gufunc("condensed_distances", result, [stacked])


@pytest.mark.parametrize("n", [0, 1])
def test_condensed_distances_of_zero_or_one_point_is_empty(n):
    assert ex.condensed_distances(np.zeros((n, 3))).shape == (0,)
    assert ex.condensed_distances(np.zeros((n, 0))).shape == (0,)


@pytest.mark.parametrize("n", [2923175692643, 2**32 + 1, 2**32])
def test_condensed_distances_of_more_points_than_int64_pairs_is_an_error_not_an_overrun(n):
    # n*(n-1) wraps int64 (2923175692643 to a small positive size): zero-size rows cost nothing
    points = np.lib.stride_tricks.as_strided(np.zeros(1), (n, 0), (0, 8))
    with pytest.raises(ValueError, match=r"p = n\*\(n-1\)/2 overflows a 64-bit integer"):
        ex.condensed_distances(points)
    with pytest.raises(ValueError, match="overflows"):
        ex.condensed_distances(points, out=np.empty(207219))


def test_condensed_distances_writes_out_of_the_right_size(rng):
    points = rng.uniform(-1, 1, (6, 2))
    out = np.full(15, -1.0)
    assert ex.condensed_distances(points, out=out) is out
    check_gufunc("condensed_distances", out, [points])
    out = np.full((3, 15), -1.0)[:, ::-1]
    ex.condensed_distances(np.stack([points] * 3), out=out)
    for row in out:
        check_gufunc("condensed_distances", row, [points])


@pytest.mark.parametrize("p", [0, 14, 16, 36])
def test_condensed_distances_out_of_the_wrong_size_raises_and_stays_untouched(p, rng):
    out = np.full(p, -5.0)
    with pytest.raises(ValueError):
        ex.condensed_distances(rng.uniform(-1, 1, (6, 2)), out=out)
    assert np.all(out == -5.0)


def test_pairwise_distances_are_symmetric_with_a_zero_diagonal(rng):
    for dtype in (np.float32, np.float64):
        d = ex.pairwise_distances(rng.uniform(-1, 1, (3, 12, 5)).astype(dtype))
        np.testing.assert_array_equal(d, np.swapaxes(d, -1, -2))
        np.testing.assert_array_equal(np.diagonal(d, axis1=-2, axis2=-1), 0)
        assert not np.any(np.signbit(d))


def test_pairwise_and_condensed_distances_agree_exactly(rng):
    points = rng.uniform(-1, 1, (4, 9, 3))
    full = ex.pairwise_distances(points)
    i, j = np.triu_indices(9, 1)
    np.testing.assert_array_equal(ex.condensed_distances(points), full[..., i, j])


@pytest.mark.parametrize("name, dtype", CASES)
def test_gufunc_writes_out_including_strided_out(name, dtype, rng):
    fn = getattr(ex, name)
    inputs = gufunc_inputs(name, dtype, (4,), 5, rng)
    expected = fn(*inputs)
    big = np.full((2,) + expected.shape, -3, dtype=dtype)
    out = big[1, ::-1] if expected.ndim else big[1]
    assert fn(*[a[::-1] for a in inputs], out=out) is out
    check_gufunc(name, out[::-1], inputs)
    assert np.all(big[0] == -3)


def test_gufunc_nan_and_inf_propagate_like_the_math(rng):
    x = np.array([[1.0, np.nan, 2.0], [1.0, np.inf, 2.0], [-np.inf, 0.0, 1.0], [0.0, -0.0, 0.0]])
    np.testing.assert_array_equal(ex.l2_norm(x), [np.nan, np.inf, np.inf, 0.0])
    np.testing.assert_array_equal(ex.sq_norm3(x), [np.nan, np.inf, np.inf, 0.0])
    assert not np.signbit(ex.l2_norm(x)[3])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(ex.inner1d(x, x[::-1]), np.vecdot(x, x[::-1]))
    # Empty core dimension: sums are 0, norms 0.
    assert ex.l2_norm(np.zeros((3, 0))).tolist() == [0.0] * 3
    assert ex.inner1d(np.zeros((2, 0)), np.zeros((2, 0))).tolist() == [0.0] * 2
    assert ex.matmul(np.zeros((2, 0)), np.zeros((0, 3))).tolist() == [[0.0] * 3] * 2


@pytest.mark.parametrize("loop", [(), (1,), (7,), (300,)], ids=str)
@pytest.mark.parametrize("name, dtype", CASES)
def test_contiguous_and_strided_gufunc_calls_give_the_same_bits(name, dtype, loop, rng):
    # A C-contiguous call runs the loop's contiguous specialization (constant strides the
    # compiler vectorizes); any other layout the general loop.  Same operations per element,
    # so the same bits, whatever the loop length (vector body or tail).
    inputs = gufunc_inputs(name, dtype, loop, 9, rng)
    contiguous = getattr(ex, name)(*[np.ascontiguousarray(a) for a in inputs])
    for layout in ("strided", "reversed", "fortran"):
        other = getattr(ex, name)(*[with_layout(a, layout) for a in inputs])
        assert contiguous.tobytes() == np.ascontiguousarray(other).tobytes(), layout
    out = np.zeros_like(contiguous)[..., None][..., 0]      # a contiguous out= of its own
    getattr(ex, name)(*inputs, out=out)
    assert out.tobytes() == contiguous.tobytes()
    check_gufunc(name, contiguous, inputs)


@pytest.mark.parametrize("loop", [(7,), (300,)], ids=str)
@pytest.mark.parametrize("name, dtype", CASES)
def test_an_input_broadcast_along_the_loop_gives_the_bits_of_its_repeated_copy(
        name, dtype, loop, rng):
    # One input shared by every outer iteration (outer step 0: one matrix for a stack of
    # them), its core slice C-contiguous: the loop takes its contiguous-cores copy, the same
    # operations per element as the general loop, so the bits of the input repeated in memory
    # (a strided copy, the general loop), and within the reference's bound.
    fn = getattr(ex, name)
    inputs = gufunc_inputs(name, dtype, loop, 9, rng)
    shape = fn(*inputs).shape
    for which in range(len(inputs)):
        shared = [a[:1] if k == which else a for k, a in enumerate(inputs)]
        repeated = [np.broadcast_to(a, inputs[k].shape) for k, a in enumerate(shared)]
        got = fn(*shared, out=np.empty(shape, inputs[0].dtype))
        strided = fn(*[with_layout(a, "strided") for a in repeated])
        assert got.tobytes() == np.ascontiguousarray(strided).tobytes(), which
        check_gufunc(name, got, repeated)


# `specialize:` lines of signatures/examples.ufunc: (name, the sizes each line fixes, inputs of
# core size k).  Sizes around them take the general contiguous loop.
SPECIALIZED = [
    ("matmul", (2, 3, 4, 8, 16), lambda r, k: [r(k, k), r(k, k)]),
    ("l2_norm", (2, 3, 4), lambda r, k: [r(k)]),
    ("centroid_distances", (2, 3), lambda r, k: [r(k), r(6, k)]),
    ("pairwise_distances", (2, 3), lambda r, k: [r(19, k)]),
    ("condensed_distances", (2, 3), lambda r, k: [r(19, k)]),
]


def specialized_cases():
    for name, sizes, make in SPECIALIZED:
        for dtype in ([np.float16] if name == "l2_norm" else []) + [np.float32, np.float64]:
            yield pytest.param(name, sizes, make, dtype, id=f"{name}-{np.dtype(dtype).name}")


@pytest.mark.parametrize("loop", [(1,), (7,), (1000,)], ids=str)
@pytest.mark.parametrize("name, sizes, make, dtype", list(specialized_cases()))
def test_specialized_sizes_give_the_bits_of_the_general_loop(name, sizes, make, dtype, loop,
                                                              rng):
    # The specialized loop is the same body with constant sizes: the same operations in the
    # same order, so a contiguous call of a specialized size gives the bits of a strided call
    # (the general loop), and both are within the reference's bound.
    fn = getattr(ex, name)
    for k in sizes:     # the docstring lists each specialization
        assert {"matmul": f"Specialized loop: m={k}, n={k}, p={k}",
                "l2_norm": f"Specialized loop: n={k}"}.get(
                    name, f"Specialized loop: d={k}") in fn.__doc__

    def r(*shape):
        return rng.uniform(-2.0, 2.0, loop + shape).astype(dtype)

    for k in range(1, max(sizes) + 3):
        inputs = make(r, k)
        contiguous = fn(*inputs)
        strided = fn(*[with_layout(a, "strided") for a in inputs])
        assert contiguous.tobytes() == np.ascontiguousarray(strided).tobytes(), k
        check_gufunc(name, contiguous, inputs)


def size_one_axes_with_odd_strides(a):
    """A C-contiguous copy of `a` whose axes of size 1 have the stride 7 elements, which no
    C-contiguous array has (nothing is read through it: the index along such an axis is 0)."""
    copy = np.ascontiguousarray(a)
    strides = tuple(7 * a.itemsize if n == 1 else s for n, s in zip(a.shape, copy.strides))
    return np.lib.stride_tricks.as_strided(copy, strides=strides)


@pytest.mark.parametrize("name, shapes", [
    ("matmul", [(1, 4), (4, 1)]),          # a row times a column: every size-1 axis odd
    ("matmul", [(3, 1, 5), (3, 5, 1)]),
    ("pairwise_distances", [(1, 3)]),
    ("pairwise_distances", [(1, 40, 3)]),
    ("l2_norm", [(1, 9)]),
    ("inner1d", [(1, 1), (1, 1)]),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strides_of_size_one_axes_do_not_keep_a_call_off_the_contiguous_loop(
        name, shapes, dtype, rng):
    # An axis of size 1 is never stepped along, so its stride is whatever the view had (NumPy
    # passes 0 for the outer loop of a call with no loop dimensions): the call is contiguous
    # for the loop, and gives the bits of a C-contiguous copy and of a strided call.
    fn = getattr(ex, name)
    inputs = [rng.uniform(-2, 2, shape).astype(dtype) for shape in shapes]
    odd = [size_one_axes_with_odd_strides(a) for a in inputs]
    assert all(v.strides != a.strides for v, a in zip(odd, inputs))
    got = fn(*odd)
    assert got.tobytes() == fn(*inputs).tobytes()
    strided = fn(*[with_layout(a, "strided") for a in inputs])
    assert got.tobytes() == np.ascontiguousarray(strided).tobytes()
    check_gufunc(name, got, inputs)


def test_a_call_matching_some_specialized_sizes_only_takes_the_general_loop(rng):
    # m=4, n=4 but p=3: no `specialize:` line matches all three.
    a = rng.uniform(-2, 2, (50, 4, 4))
    b = rng.uniform(-2, 2, (50, 4, 3))
    got = ex.matmul(a, b)
    assert got.shape == (50, 4, 3)
    assert got.tobytes() == ex.matmul(with_layout(a, "strided"), with_layout(b, "strided")).tobytes()
    check_gufunc("matmul", got, [a, b])


@pytest.mark.parametrize("n, loop", [(1, 5000), (7, 1000), (2048, 3), (2049, 2), (5000, 3)],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("name", ["inner1d", "l2_norm"])
def test_float16_core_inputs_converted_a_block_at_a_time_give_the_general_loops_bits(
        name, n, loop, rng):
    # A C-contiguous call converts float16 core inputs to float in blocks of up to 2048
    # elements (whole rows; a longer row on its own, on the heap) before the body runs: block
    # edges and both buffers, against the strided call (the general loop) and the reference.
    fn = getattr(ex, name)
    inputs = [rng.uniform(-2, 2, (loop, n)).astype(np.float16) for _ in range(fn.nin)]
    contiguous = fn(*inputs)
    strided = fn(*[with_layout(a, "strided") for a in inputs])
    assert contiguous.tobytes() == np.ascontiguousarray(strided).tobytes()
    check_gufunc(name, contiguous, inputs)


@pytest.mark.parametrize("size", [3, 9, 128, 129])
@pytest.mark.parametrize("name, dtype", CASES)
def test_a_call_large_enough_to_be_prefetched_gives_the_bits_of_the_strided_call(
        name, dtype, size, threading_mode, rng):
    # Over 256 KiB of input per thread (ufuncgen/prefetch.h's threshold), with an outer count
    # that no chunk divides, so the chunked loop runs whole chunks and a short last one; core
    # sizes around the 1 KiB chunk (128 and 129 doubles).  The strided call runs the general
    # loop, never prefetched.
    probe = gufunc_inputs(name, dtype, (1,), size, rng)
    per_iteration = max(1, sum(a.nbytes for a in probe))
    loop = ((1200 * 1024) // per_iteration + 37,)
    if loop[0] * per_iteration > 64 * 1024 * 1024:
        pytest.skip("a core this wide is never prefetched")
    inputs = gufunc_inputs(name, dtype, loop, size, rng)
    fn = getattr(ex, name)
    contiguous = fn(*inputs)
    strided = fn(*[with_layout(a, "strided") for a in inputs])
    assert contiguous.tobytes() == np.ascontiguousarray(strided).tobytes()
    for ends in (slice(None, 37), slice(-37, None)):    # the first and the last chunks
        check_gufunc(name, contiguous[ends], [a[ends] for a in inputs])


# Core sizes around those whose float32 rows a C-contiguous call runs in blocks, a row in each
# SIMD lane (gen/render.py, lane_sizes: 2 to 16, l2_norm's specialized 2 to 4 apart).
LANE_CORE_SIZES = (1, 2, 4, 5, 8, 10, 16, 17)


@pytest.mark.parametrize("loop", [(1,), (7,), (8,), (9,), (61,), (3, 40), (5003,)], ids=str)
@pytest.mark.parametrize("name", ["l2_norm", "inner1d"])
def test_rows_run_in_lanes_give_the_bits_of_one_row_at_a_time(name, loop, threading_mode, rng):
    # Blocks of eight rows from where the call (or its thread's share) begins, the rest one at
    # a time: every row gets the bits of the strided call (the general loop, a row at a time),
    # whatever block it falls in, and is within the reference's bound.
    fn = getattr(ex, name)
    for size in LANE_CORE_SIZES:
        inputs = gufunc_inputs(name, np.float32, loop, size, rng)
        contiguous = fn(*inputs)
        strided = fn(*[with_layout(a, "strided") for a in inputs])
        assert contiguous.tobytes() == np.ascontiguousarray(strided).tobytes(), size
        check_gufunc(name, contiguous, inputs)
        if loop[0] > 3:
            shifted = fn(*[a[3:] for a in inputs])      # the blocks begin three rows later
            assert shifted.tobytes() == contiguous[3:].tobytes(), size


@pytest.mark.parametrize("errstate", ["ignore", "raise"])
@pytest.mark.parametrize("name", ["l2_norm", "inner1d"])
def test_rows_of_edge_values_in_lanes_give_the_bits_and_errors_of_one_row_at_a_time(
        name, errstate, rng):
    # NaN, infinities, signed zeros, values whose squares overflow or underflow, subnormals:
    # each lane the operations of its row, so the same bits, and an error only where some row
    # raises it, the same one.
    pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -2.5, 3e38, -2e19, 1e-30,
                     1e-45, -1e-40], dtype=np.float32)
    fn = getattr(ex, name)
    for size in (5, 10, 16):
        inputs = [rng.choice(pool, (64, size)) for _ in range(fn.nin)]
        inputs[0][:8] = 1.0                      # one block of ordinary rows
        outcomes = []
        for layout in ("contiguous", "strided"):
            with np.errstate(all=errstate):
                try:
                    got = fn(*[with_layout(a, layout) for a in inputs])
                    outcomes.append(np.ascontiguousarray(got).tobytes())
                except FloatingPointError as error:
                    outcomes.append(str(error))
        assert outcomes[0] == outcomes[1], size
    with np.errstate(all="raise"), pytest.raises(FloatingPointError, match="overflow"):
        fn(*[np.full((16, 10), 3e38, np.float32)] * fn.nin)
