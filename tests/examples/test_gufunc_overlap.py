"""A gufunc whose out= overlaps an input computes as if the inputs were copied (host path,
src/core/overlap.c).  NumPy's own gufunc machinery would hand the loop the aliased operands,
so `matmul(a, a, out=a)` would read rows it has already overwritten; the reference here is
the same function called on explicit copies (and NumPy's np.matmul, which copies too)."""
import re

import numpy as np
import pytest

import ufuncgen.examples as ex

DTYPES = [np.float32, np.float64]


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


def from_copies(function, *inputs):
    return function(*[np.array(x, copy=True) for x in inputs])


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_of_a_matrix_with_itself_into_itself_is_the_product_of_copies(dtype, rng):
    a = rng.uniform(-2, 2, (5, 5)).astype(dtype)
    original = a.copy()
    expected = from_copies(ex.matmul, a, a)
    result = ex.matmul(a, a, out=a)
    assert result is a
    np.testing.assert_array_equal(a, expected)
    np.testing.assert_allclose(a, original.astype(np.float64) @ original, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("out_of", ["a", "b"])
def test_matmul_into_either_operand_is_the_product_of_copies(dtype, out_of, rng):
    a = rng.uniform(-2, 2, (4, 4)).astype(dtype)
    b = rng.uniform(-2, 2, (4, 4)).astype(dtype)
    expected = from_copies(ex.matmul, a, b)
    reference = np.matmul(a, b)
    out = {"a": a, "b": b}[out_of]
    ex.matmul(a, b, out=out)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(out, reference, rtol=1e-5)


def test_a_stack_of_matrices_multiplied_in_place_by_position_and_tuple(rng):
    s = rng.uniform(-1, 1, (3, 4, 4))
    expected = from_copies(ex.matmul, s, s)
    t = s.copy()
    ex.matmul(t, t, t)                       # out by position
    np.testing.assert_array_equal(t, expected)
    ex.matmul(s, s, out=(s,))                # out as a one-entry tuple
    np.testing.assert_array_equal(s, expected)


def test_matmul_into_a_transposed_view_of_its_input(rng):
    a = rng.uniform(-1, 1, (4, 4))
    expected = from_copies(ex.matmul, a, a)
    ex.matmul(a, a, out=a.T)
    np.testing.assert_array_equal(a.T, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_pairwise_distances_into_a_buffer_its_points_are_a_view_of(dtype, rng):
    buffer = rng.uniform(-3, 3, (6, 6)).astype(dtype)
    points = buffer[:, :2]                   # (n, d) = (6, 2), inside the (n, n) output
    expected = from_copies(ex.pairwise_distances, points)
    ex.pairwise_distances(points, out=buffer)
    np.testing.assert_array_equal(buffer, expected)
    d = np.asarray(expected, dtype=np.float64)
    assert np.allclose(np.diag(d), 0.0) and np.allclose(d, d.T)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", ["first column reversed", "first column", "last row"])
def test_l2_norm_into_a_view_of_its_input(dtype, view, rng):
    x = rng.uniform(-2, 2, (6, 6)).astype(dtype)
    out = {"first column reversed": lambda: x[::-1, 0],   # later rows read what was written
           "first column": lambda: x[:, 0],
           "last row": lambda: x[-1]}[view]()
    original = x.astype(np.float64)
    expected = from_copies(ex.l2_norm, x)
    ex.l2_norm(x, out=out)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_allclose(out, np.linalg.norm(original, axis=1), rtol=1e-6)


def test_interleaved_views_that_share_no_element_still_compute_the_right_answer(rng):
    # Their spans overlap, so the exact check decides (no copy needed, none made).
    base = rng.uniform(-1, 1, 16)
    x, out = base[0::2].reshape(2, 4), base[1::2].reshape(2, 4)[:, 0]
    expected = from_copies(ex.l2_norm, x)
    ex.l2_norm(x, out=out)
    np.testing.assert_array_equal(out, expected)
    assert not np.shares_memory(x, out)


def test_outputs_apart_from_the_inputs_and_calls_without_out_are_unchanged(rng):
    a = rng.uniform(-1, 1, (3, 3))
    out = np.empty((3, 3))
    assert ex.matmul(a, a, out=out) is out
    np.testing.assert_array_equal(out, from_copies(ex.matmul, a, a))
    np.testing.assert_array_equal(ex.matmul(a, a), out)
    np.testing.assert_array_equal(ex.matmul(a, a, axes=[(0, 1), (0, 1), (0, 1)]), out)


def test_an_input_subclass_keeps_its_type_through_the_copy(rng):
    class Tagged(np.ndarray):
        pass

    a = rng.uniform(-1, 1, (3, 3)).view(Tagged)
    expected = from_copies(ex.matmul, np.asarray(a), np.asarray(a))
    result = ex.matmul(a, a, out=a)
    assert result is a and type(result) is Tagged
    np.testing.assert_array_equal(np.asarray(a), expected)


class WithArray:
    """Read by NumPy through __array__, without a copy."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a


class WithArrayInterface:
    """Read by NumPy through __array_interface__: the same memory, no copy."""

    def __init__(self, a):
        self.__array_interface__ = a.__array_interface__
        self.keep = a


# Every kind of input NumPy converts without copying: each is a view of the output here.
VIEWS = {"memoryview": memoryview, "__array__": WithArray,
         "__array_interface__": WithArrayInterface}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("which", ["first", "second", "both"])
def test_matmul_into_an_array_an_input_views_without_being_an_ndarray_is_the_product_of_copies(
        view, which):
    a = np.arange(1.0, 10.0).reshape(3, 3)
    expected = np.matmul(a, a.copy())
    first = VIEWS[view](a) if which in ("first", "both") else a
    second = VIEWS[view](a) if which in ("second", "both") else a
    assert ex.matmul(first, second, out=a) is a
    np.testing.assert_array_equal(a, expected)


@pytest.mark.parametrize("view", VIEWS)
def test_a_stack_multiplied_in_place_through_a_view_by_position_and_tuple(view, rng):
    s = rng.uniform(-1, 1, (3, 4, 4))
    expected = from_copies(ex.matmul, s, s)
    t = s.copy()
    ex.matmul(VIEWS[view](t), t, t)                   # out by position
    np.testing.assert_array_equal(t, expected)
    ex.matmul(s, VIEWS[view](s), out=(s,))            # out as a one-entry tuple
    np.testing.assert_array_equal(s, expected)


def test_inputs_numpy_makes_new_arrays_of_compute_as_before_with_out(rng):
    a = rng.uniform(-1, 1, (3, 3))
    out = np.empty((3, 3))
    assert ex.matmul(a.tolist(), WithArray(a), out=out) is out
    np.testing.assert_array_equal(out, from_copies(ex.matmul, a, a))
    np.testing.assert_array_equal(ex.inner1d(WithArray(a), (1.0, 2.0, 3.0), out=np.empty(3)),
                                  from_copies(ex.inner1d, a, [1.0, 2.0, 3.0]))


def test_errors_of_an_overlapping_call_are_numpys():
    a = np.ones((3, 3))
    with pytest.raises(ValueError, match="out"):
        ex.matmul(a, a, out=(a, a))
    with pytest.raises(TypeError):
        ex.matmul(a, out=a)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_input_broadcast_over_its_output_is_copied_once_per_element_it_reads(dtype, rng):
    # Its stride-0 axes stay broadcast in the copy: the product of copies, without a copy of
    # every repeat (10,000 rows of 300 here: 23 MB, where the elements read are 300 and 10,000).
    o = rng.uniform(-1, 1, 10_000).astype(dtype)
    x = np.broadcast_to(o[:, None], (10_000, 300))
    y = np.broadcast_to(rng.uniform(-1, 1, 300).astype(dtype), (10_000, 300))
    expected = from_copies(ex.inner1d, x, y)
    assert ex.inner1d(x, y, out=o) is o
    assert o.tobytes() == expected.tobytes()
    # Broadcast along a core dimension (a matrix of equal rows), and along the stack.
    for view in (lambda o: np.broadcast_to(o[:, :1, :], o.shape),
                 lambda o: np.broadcast_to(o[:1], o.shape)):
        o = rng.uniform(-1, 1, (4, 5, 5)).astype(dtype)
        x = view(o)
        expected = from_copies(ex.matmul, x, x)
        assert ex.matmul(x, x, out=o) is o
        assert o.tobytes() == expected.tobytes()


def test_an_overlapping_broadcast_input_too_large_to_copy_gets_numpys_shape_error():
    # A whole copy of it would be 24 TiB: its MemoryError came before NumPy's ValueError.
    o = np.zeros(3)
    x = np.broadcast_to(o[:1, None], (2**40, 3))
    with pytest.raises(ValueError) as numpys:
        ex.l2_norm.ufunc(x, out=o)
    with pytest.raises(ValueError, match=re.escape(str(numpys.value))):
        ex.l2_norm(x, out=o)
    assert not o.any()
