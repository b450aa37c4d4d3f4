"""add.reduce / add.accumulate (identity 0) against plain Python sums and np.cumsum."""
import math

import numpy as np
import pytest

import ufuncgen.examples as ex

from .conftest import LAYOUTS, SIZES, assert_exactly_equal, assert_within, eps, with_layout

ADD_DTYPES = [np.int64, np.float32, np.float64]


def random_values(dtype, shape, rng):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-2**62, 2**62, shape, dtype=dtype)
    return rng.uniform(-100, 100, shape).astype(dtype)


def python_sum(values, dtype):
    """Exact sum in plain Python: wrapped to int64, or math.fsum rounded to `dtype`."""
    values = [v for v in np.asarray(values).ravel().tolist()]
    if np.dtype(dtype).kind == "i":
        total = sum(values) % 2**64
        return np.int64(total - 2**64 if total >= 2**63 else total)
    return np.dtype(dtype).type(math.fsum(values))


def assert_sum_close(actual, values, dtype, axis=None):
    """actual == the plain-Python sum over `axis` (exact for int64; within n*eps of the
    sum of magnitudes for floats: n additions rounded in any order)."""
    values = np.asarray(values)
    moved = np.moveaxis(values, axis, -1) if axis is not None else values.reshape(-1)
    flat = moved.reshape(int(np.prod(moved.shape[:-1])), moved.shape[-1])
    expected = np.array([python_sum(row, dtype) for row in flat], dtype=dtype)
    expected = expected.reshape(moved.shape[:-1])
    actual = np.asarray(actual)
    if np.dtype(dtype).kind == "i":
        assert_exactly_equal(actual, expected)
    else:
        n = moved.shape[-1]
        magnitude = np.sum(np.abs(moved.astype(np.float64)), axis=-1)
        assert_within(actual, expected, (n + 1) * eps(dtype) * magnitude)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_reduce_matches_plain_python_sum_for_every_size_and_layout(dtype, size, layout, rng):
    values = random_values(dtype, (size,), rng)
    result = ex.add.reduce(with_layout(values, layout))
    assert np.asarray(result).dtype == dtype
    assert_sum_close(result, values, dtype, axis=0)


@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_reduce_of_empty_input_is_the_identity_0(dtype):
    assert ex.add.identity == 0
    for empty in (np.zeros(0, dtype), np.zeros((3, 0), dtype), np.zeros((0, 4), dtype)):
        result = ex.add.reduce(empty, axis=None)
        assert result == 0 and np.asarray(result).dtype == dtype
    np.testing.assert_array_equal(ex.add.reduce(np.zeros((3, 0), dtype), axis=1),
                                  np.zeros(3, dtype))
    assert ex.add.reduce(np.zeros((0, 4), dtype), axis=0).shape == (4,)
    assert ex.add.reduce(np.zeros((0, 4), dtype), axis=1).shape == (0,)
    assert ex.add.reduce(np.zeros(0, dtype), initial=5) == 5


@pytest.mark.parametrize("layout", ["contiguous", "fortran", "reversed", "strided"])
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_reduce_over_none_tuple_and_single_axes_of_nd_input(dtype, layout, rng):
    values = random_values(dtype, (5, 6, 7), rng)
    x = with_layout(values, layout)
    assert_sum_close(ex.add.reduce(x, axis=None), values, dtype)
    for axis in (0, 1, 2, -1):
        assert_sum_close(ex.add.reduce(x, axis=axis), values, dtype, axis=axis)
    for axes in [(0, 2), (1, 2), (0, 1), (2, 0)]:
        got = ex.add.reduce(x, axis=axes)
        rest = [a for a in range(3) if a not in [ax % 3 for ax in axes]]
        merged = np.moveaxis(values, rest, 0).reshape(values.shape[rest[0]], -1)
        assert_sum_close(got, merged, dtype, axis=1)
    got = ex.add.reduce(x, axis=(0, 2), keepdims=True)
    assert got.shape == (1, 6, 1)
    assert ex.add.reduce(x, axis=(), keepdims=False).shape == (5, 6, 7)


@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_reduce_with_where_and_initial_like_numpy(dtype, rng):
    values = random_values(dtype, (4, 9), rng)
    mask = rng.random((4, 9)) < 0.5
    got = ex.add.reduce(values, axis=1, where=mask, initial=0)
    masked = np.where(mask, values, 0)
    assert_sum_close(got, masked, dtype, axis=1)
    out = np.full(4, 3, dtype)
    assert ex.add.reduce(values, axis=1, out=out) is out
    assert_sum_close(out, values, dtype, axis=1)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_accumulate_matches_numpy_cumsum_bit_for_bit(dtype, size, layout, rng):
    # Accumulation is sequential by definition, so floats match exactly too.
    values = random_values(dtype, (size,), rng)
    with np.errstate(over="ignore"):
        assert_exactly_equal(ex.add.accumulate(with_layout(values, layout)), np.cumsum(values))


@pytest.mark.parametrize("layout", ["contiguous", "fortran", "reversed", "strided", "unaligned"])
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_accumulate_along_every_axis_of_nd_input(dtype, layout, rng):
    values = random_values(dtype, (6, 300, 3), rng)
    x = with_layout(values, layout)
    with np.errstate(over="ignore"):
        for axis in (0, 1, 2):
            assert_exactly_equal(ex.add.accumulate(x, axis=axis), np.cumsum(values, axis=axis))
    empty = np.zeros((0, 3), dtype)
    assert ex.add.accumulate(empty).shape == (0, 3)


def test_add_reduceat_and_outer_match_numpy(rng):
    values = rng.integers(-1000, 1000, 50, dtype=np.int64)
    idx = [0, 3, 3, 10, 49]
    assert_exactly_equal(ex.add.reduceat(values, idx), np.add.reduceat(values, idx))
    x, y = values[:7], values[:5]
    assert_exactly_equal(ex.add.outer(x, y), x[:, None] + y[None, :])


def test_reduce_of_functions_without_identity_or_with_core_dims_raises_like_numpy():
    with pytest.raises(ValueError) as ours:
        ex.hypot.reduce(np.zeros(0))
    with pytest.raises(ValueError) as numpy_error:
        np.maximum.reduce(np.zeros(0))
    assert "identity" in str(ours.value) and "identity" in str(numpy_error.value)
    np.testing.assert_array_equal(ex.hypot.reduce(np.array([3.0, 4.0, 12.0])), 13.0)
    with pytest.raises(RuntimeError) as ours:
        ex.inner1d.reduce(np.zeros((2, 2)))
    with pytest.raises(RuntimeError) as numpy_error:
        np.matmul.reduce(np.zeros((2, 2)))
    assert type(ours.value) is type(numpy_error.value)
    with pytest.raises(ValueError):
        ex.sincos.reduce(np.zeros(3))
