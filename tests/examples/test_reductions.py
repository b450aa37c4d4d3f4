"""add.reduce / add.accumulate (identity 0) against plain Python sums and np.cumsum."""
import math

import numpy as np
import pytest

import ufuncgen.examples as ex

from .conftest import (LAYOUTS, SIZES, assert_exactly_equal, assert_within, eps, loop_dtypes,
                       with_layout)

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


# ----------------------------------------------------------------------------- associative add
#
# add is `associative: true`: its .reduce runs pairwise and vectorized on the host
# (src/include/ufuncgen/host_reduce.h): leaves of 4 rows of 16 float64 lanes or of 32 float32
# or int64 lanes (in order below 64 elements), the leaves combined as a balanced tree,
# large calls in 65,536-element parts.  The sizes below sit around those boundaries and
# NumPy's own (8 accumulators, 128-element blocks).

from ufuncgen import _core  # noqa: E402

import ufuncgen  # noqa: E402

PAIRWISE_SIZES = (2, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 513, 4095, 4096, 4097,
                  65535, 65536, 65537, 2 * 65536 + 5, 300_007)
FLOAT_DTYPES = [np.float32, np.float64]


def pairwise_bound(dtype, n, magnitude):
    """|error| of a pairwise sum: each term goes through at most 63 additions in its leaf (a
    bound for any leaf: a long one over 16 or 32 lanes, a short one over 8, under 16 elements
    in order), then log2(n / 128) + 1 tree levels, plus the accumulator's and the reference's
    roundings, each relative to the sum of magnitudes."""
    levels = min(n, 64 + max(0, math.ceil(math.log2(max(n, 1) / 128)))) + 3
    return levels * eps(dtype) * magnitude


def assert_pairwise_close(actual, values, dtype):
    values = np.asarray(values)
    expected = python_sum(values, dtype)
    if np.dtype(dtype).kind == "i":
        assert_exactly_equal(actual, expected)
        return
    magnitude = float(np.sum(np.abs(values.astype(np.float64))))
    assert_within(actual, expected, pairwise_bound(dtype, values.size, magnitude))


@pytest.mark.parametrize("layout", ["contiguous", "reversed", "strided"])
@pytest.mark.parametrize("size", PAIRWISE_SIZES)
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_reduce_is_within_the_pairwise_error_bound_around_every_block_boundary(dtype, size,
                                                                                  layout, rng):
    values = random_values(dtype, (size,), rng)
    result = ex.add.reduce(with_layout(values, layout))
    assert np.asarray(result).dtype == dtype
    assert_pairwise_close(result, values, dtype)


def short_row_values(dtype, rows, columns, rng):
    """Magnitudes from 1e-3 to 300 mixed in each row, so that the order of the additions
    shows in the low bits."""
    scale = rng.choice([1e-3, 1.0, 300.0], (rows, columns))
    return (rng.standard_normal((rows, columns)) * scale).astype(dtype)


@pytest.mark.parametrize("layout", ["contiguous", "fortran", "reversed", "strided"])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_add_reduce_of_rows_shorter_than_64_gives_np_add_reduce_bits(dtype, layout, rng):
    # NumPy hands a contiguous row to the loop whole: under 64 elements ours is then reduced
    # in the order of NumPy's pairwise sum (ufg_reduce_ops.few); a Fortran-ordered array is
    # reduced a column at a time, elementwise, by both
    for columns in range(1, 64):
        x = with_layout(short_row_values(dtype, 40, columns, rng), layout)
        assert_exactly_equal(ex.add.reduce(x, axis=1), np.add.reduce(x, axis=1))
        assert_exactly_equal(ex.add.reduce(x, axis=1, initial=dtype(0.1)),
                             np.add.reduce(x, axis=1, initial=dtype(0.1)))


@pytest.mark.parametrize("layout", ["contiguous", "reversed", "unaligned"])
@pytest.mark.parametrize("dtype", [np.int64, np.float16, np.float32, np.float64])
def test_column_sums_are_numpys_bits_for_narrow_and_wide_rows(dtype, layout, rng):
    # Along axis 0 NumPy calls the loop once a row, out[j] = out[j] + row[j] (src/include/
    # ufuncgen/host_loops.h: a row of up to UFG_SMALL_CALL elements runs the kernel alone):
    # each column is summed in order, row after row, by both, so the bits are NumPy's (but a
    # NaN's sign and payload, which the operands' order in a vector add decides: README)
    for columns in (1, 3, 8, 100, 511, 512, 513):
        if np.dtype(dtype).kind == "i":
            values = rng.integers(-2 ** 62, 2 ** 62, (50, columns))
        else:
            values = (rng.standard_normal((50, columns)) * 100).astype(dtype)
            for row, edge in enumerate([np.nan, np.inf, -np.inf, -0.0]):
                values[row, row::5] = edge      # one kind in a column; every fifth finite
            if columns > 5:
                values[:, -1] = -0.0            # a column of negative zeros
        x = with_layout(values.astype(dtype), layout)
        with np.errstate(all="ignore"):
            got, want = ex.add.reduce(x, axis=0), np.add.reduce(x, axis=0)
            # An accumulator that starts past a cache line's first element.
            out_got, out_want = np.zeros(columns + 1, dtype)[1:], np.zeros(columns + 1, dtype)[1:]
            ex.add.reduce(x, axis=0, out=out_got)
            np.add.reduce(x, axis=0, out=out_want)
        assert got.dtype == want.dtype
        assert_same_bits_but_nan_payloads(got, want)
        assert_same_bits_but_nan_payloads(out_got, out_want)


def assert_same_bits_but_nan_payloads(got, want):
    if got.dtype.kind == "f":
        assert np.array_equal(np.isnan(got), np.isnan(want))
        got, want = got[~np.isnan(got)], want[~np.isnan(want)]
    assert got.tobytes() == want.tobytes()


def numpys_pairwise_sum(x):
    """NumPy's pairwise sum of fewer than 128 values (loops_utils.h.src) in x's type: under 8
    in order from -0.0; else 8 accumulators started with x[0..8), each then taking every 8th
    element over whole rows of 8, folded ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)),
    the rest added in order."""
    if len(x) < 8:
        r = x.dtype.type(-0.0)
        for v in x:
            r = r + v
        return r
    lane = list(x[:8])
    i = 8
    while i + 8 <= len(x):
        lane = [lane[j] + x[i + j] for j in range(8)]
        i += 8
    r = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]))
    for v in x[i:]:
        r = r + v
    return r


@pytest.mark.parametrize("columns", [2, 7, 8, 9, 15, 16, 17, 40, 63])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_shorter_than_64_is_numpys_pairwise_sum_added_to_the_accumulator(dtype, columns,
                                                                                rng):
    # NumPy starts each row from add's identity, 0, and hands the loop the whole row: 0 plus
    # the row's pairwise sum, whatever NumPy's version does
    x = short_row_values(dtype, 30, columns, rng)
    expected = np.array([dtype(0) + numpys_pairwise_sum(row) for row in x], dtype)
    assert_exactly_equal(ex.add.reduce(x, axis=1), expected)


@pytest.mark.parametrize("columns", [64, 65, 100, 127, 128 + 40])
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_reduce_of_rows_of_64_or_more_runs_over_lanes_within_the_pairwise_bound(dtype, columns,
                                                                                    rng):
    # From 64 elements on, a row is reduced over lanes (16 float64, 32 float32 or int64), its
    # last leaf, under two rows of those, over 8
    values = random_values(dtype, (300, columns), rng)
    for layout in ("contiguous", "fortran", "reversed"):
        got = ex.add.reduce(with_layout(values, layout), axis=1)
        for row, result in zip(values, got):
            assert_pairwise_close(result, row, dtype)


def lanes_sum(x, lanes):
    """Lane j starts as x[j] + x[j + lanes], takes every lanes-th element after, over whole
    rows of lanes; the lanes then fold pairwise, j with j + width, halving width."""
    lane = [x[j] + x[j + lanes] for j in range(lanes)]
    i = 2 * lanes
    while i + lanes <= len(x):
        lane = [lane[j] + x[i + j] for j in range(lanes)]
        i += lanes
    width = lanes // 2
    while width:
        lane[:width] = [lane[j] + lane[j + width] for j in range(width)]
        width //= 2
    return lane[0], i


def documented_reduction(x):
    """The order host_reduce.h documents for a call of 64 or more elements of a float type:
    leaves of 4 rows of as many lanes as fill 128 bytes (16 float64, 32 float32), a last leaf
    under two rows of those over 8 lanes (in order under 16), the rest of a leaf in order; the
    leaves' results merged by a binary counter, its roots folded from the newest."""
    lanes = 128 // x.dtype.itemsize
    roots = []                                  # (value, level), oldest first
    for start in range(0, len(x), 4 * lanes):
        leaf = x[start:start + 4 * lanes]
        value, taken = leaf[0], 1
        if len(leaf) >= 2 * lanes:
            value, taken = lanes_sum(leaf, lanes)
        elif len(leaf) >= 16:
            value, taken = lanes_sum(leaf, 8)
        for v in leaf[taken:]:
            value = value + v
        level = 0
        while roots and roots[-1][1] == level:
            value = roots.pop()[0] + value
            level += 1
        roots.append((value, level))
    total = roots[-1][0]
    for value, _ in reversed(roots[:-1]):
        total = value + total
    return total


@pytest.mark.parametrize("size", [64, 65, 95, 96, 100, 127, 128, 129, 200, 256, 1000, 4097, 20_000])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_add_reduce_of_64_or_more_floats_is_the_documented_order_bit_for_bit(dtype, size,
                                                                            threads_restored, rng):
    # The order depends on the number of elements and the type's size alone: a model of it in
    # Python, NumPy scalars rounding each step, gives the same bits on any CPU and thread count
    # (NumPy adds the row's result to add's identity, 0)
    x = short_row_values(dtype, 1, size, rng)[0]
    expected = dtype(0) + documented_reduction(x)
    for threads in (1, 2):
        ufuncgen.set_num_threads(threads)
        assert_exactly_equal(ex.add.reduce(x), expected)
        assert_exactly_equal(ex.add.reduce(x[None, :], axis=1), np.array([expected]))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_add_reduce_of_standard_normal_values_is_as_accurate_as_numpys_pairwise_sum(dtype):
    # Both sums are within a few units in the last place of the exact one, so any single
    # array may favour either: over many arrays the mean errors compare.  (The serial sum
    # this replaced was about 100 times worse.)
    rng = np.random.default_rng(13)
    ours = numpys = 0.0
    for _ in range(40):
        x = rng.standard_normal(20_000).astype(dtype)
        exact = math.fsum(x.astype(np.float64).tolist())
        ours += abs(float(ex.add.reduce(x)) - exact)
        numpys += abs(float(np.add.reduce(x)) - exact)
    assert ours <= 1.25 * numpys, (ours, numpys)


@pytest.mark.parametrize("layout", ["contiguous", "fortran", "reversed", "strided"])
@pytest.mark.parametrize("shape", [(3, 1000), (1000, 3), (37, 4097), (129, 257)])
@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_reduce_along_each_axis_of_2d_input_matches_the_exact_sums_with_keepdims(dtype, shape,
                                                                                   layout, rng):
    values = random_values(dtype, shape, rng)
    x = with_layout(values, layout)
    for axis in (0, 1, -1):
        got = ex.add.reduce(x, axis=axis, keepdims=True)
        assert got.shape == tuple(1 if d == axis % 2 else s for d, s in enumerate(shape))
        moved = np.moveaxis(values, axis, -1)
        expected = np.array([python_sum(row, dtype) for row in moved], dtype=dtype)
        if np.dtype(dtype).kind == "i":
            assert_exactly_equal(got.reshape(-1), expected)
        else:
            bound = pairwise_bound(dtype, moved.shape[-1], np.sum(np.abs(moved.astype(np.float64)), axis=-1))
            assert_within(got.reshape(-1), expected, bound)
    assert_pairwise_close(ex.add.reduce(x, axis=None), values, dtype)


@pytest.mark.parametrize("size", [1, 7, 31, 32, 300, 5000])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_add_reduce_propagates_nan_infinities_and_negative_zero_like_numpy(dtype, size):
    def same(x, **kwargs):
        with np.errstate(invalid="ignore", over="ignore"):
            ours, theirs = ex.add.reduce(x, **kwargs), np.add.reduce(x, **kwargs)
        assert np.asarray(ours).dtype == np.asarray(theirs).dtype
        assert (np.isnan(ours) and np.isnan(theirs)) or (
            ours == theirs and np.signbit(ours) == np.signbit(theirs)), (ours, theirs)

    base = np.ones(size, dtype)
    for position in {0, size // 2, size - 1}:
        for special in (np.nan, np.inf, -np.inf):
            x = base.copy()
            x[position] = special
            same(x)
    if size > 1:
        x = base.copy()
        x[0], x[-1] = np.inf, -np.inf           # inf + -inf in any order: NaN
        same(x)
    negative_zeros = np.full(size, -0.0, dtype)
    same(negative_zeros)
    same(negative_zeros, initial=-0.0)
    same(negative_zeros[::-1], initial=0.0)
    same(np.array([-0.0] * (size - 1) + [0.0], dtype))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_add_reduce_raises_overflow_and_invalid_under_errstate_like_numpy(dtype):
    big = np.full(1000, np.finfo(dtype).max / 4, dtype)
    for fn in (ex.add, np.add):
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            fn.reduce(big)
        with np.errstate(over="ignore"):
            assert fn.reduce(big) == np.inf
    mixed = np.ones(1000, dtype)
    mixed[10], mixed[900] = np.inf, -np.inf
    for fn in (ex.add, np.add):
        with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
            fn.reduce(mixed)
    with np.errstate(all="raise"):                # a finite sum raises nothing
        ex.add.reduce(np.linspace(-1, 1, 1001, dtype=dtype))


@pytest.mark.parametrize("layout", ["contiguous", "reversed", "strided"])
@pytest.mark.parametrize("size", [33, 4097, 2 * 65536 + 5])
def test_add_reduce_of_int64_wraps_on_overflow_exactly_like_numpy(size, layout):
    values = np.full(size, 2**62 + 12345, np.int64)
    values[::3] = -2**63 + 7
    assert_exactly_equal(ex.add.reduce(with_layout(values, layout)), np.add.reduce(values))
    assert_pairwise_close(ex.add.reduce(with_layout(values, layout)), values, np.int64)


@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_reduce_with_where_initial_and_out_on_long_rows_matches_the_exact_sums(dtype, rng):
    values = random_values(dtype, (3, 5000), rng)
    mask = rng.random((3, 5000)) < 0.7
    got = ex.add.reduce(values, axis=1, where=mask, initial=0)
    for row, keep, result in zip(values, mask, got):
        assert_pairwise_close(result, row[keep], dtype)
    start = dtype(5)
    got = ex.add.reduce(values[0], initial=start)
    assert_pairwise_close(got, np.concatenate([[start], values[0]]).astype(dtype), dtype)
    out = np.zeros(3, dtype)
    assert ex.add.reduce(values, axis=1, out=out) is out
    for row, result in zip(values, out):
        assert_pairwise_close(result, row, dtype)


@pytest.mark.parametrize("dtype", ADD_DTYPES)
def test_add_reduce_gives_the_same_bits_on_one_two_and_three_threads(dtype, threads_restored, rng):
    elements, work, _ = _core._parallel_threshold()
    _core._set_parallel_threshold(elements, work, 0)       # the pool takes every large call
    n = 5 * 65536 + 1234
    values = random_values(dtype, (n,), rng)
    # Whole parts only; and a rest of 511 leaves, then of 512 (its last one short), which in
    # one range call merges with the parts' subtree.
    cases = [values, values[::-1], with_layout(values, "strided"), values[:3 * 65536],
             values[:2 * 65536 + 510 * 128 + 1], values[:2 * 65536 + 511 * 128 + 1]]
    wide = random_values(dtype, (3, 2 * 65536 + 77), rng)
    results = {}
    for threads in (1, 2, 3):
        ufuncgen.set_num_threads(threads)
        before = _core._thread_pool_stats()["parallel_calls"]
        results[threads] = [np.asarray(ex.add.reduce(x)).tobytes() for x in cases] + [
            ex.add.reduce(wide, axis=1).tobytes()]
        ran_parallel = _core._thread_pool_stats()["parallel_calls"] > before
        assert ran_parallel == (threads > 1)
    assert results[1] == results[2] == results[3]
    for x, got in zip(cases, results[1]):
        assert_pairwise_close(np.frombuffer(got, dtype)[0], x, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("step", [2, 3])
def test_add_reduce_of_a_reversed_or_strided_view_is_its_memory_orders_sum(dtype, step, rng):
    """Reordered anyway (associative), a reversed view is summed forward in memory, as NumPy's
    iterator reads it, and a strided view as its gathered copy: the same bits as those."""
    values = random_values(dtype, (100_003 * step,), rng)
    reversed_view = values[::-1]
    assert ex.add.reduce(reversed_view).tobytes() == ex.add.reduce(values).tobytes()
    strided = values[::step]
    assert ex.add.reduce(strided).tobytes() == ex.add.reduce(strided.copy()).tobytes()
    assert ex.add.reduce(strided[::-1]).tobytes() == ex.add.reduce(strided.copy()).tobytes()
    assert_pairwise_close(ex.add.reduce(reversed_view), values, dtype)


@pytest.mark.parametrize("dtype", [np.float64])
@pytest.mark.parametrize("name", ["custom_op", "hypot"])
def test_reduce_of_a_function_without_associative_keeps_numpys_order_bit_for_bit(name, dtype, rng):
    values = rng.uniform(-0.01, 0.01, 3000).astype(dtype)     # custom_op: acc * (1 + v)
    values[0] = 1
    fn = getattr(ex, name)
    step = {"custom_op": lambda a, b: a * b + a, "hypot": np.hypot}[name]
    expected = values[0]
    for v in values[1:]:
        expected = step(expected, v)
    with np.errstate(over="ignore"):
        got = fn.reduce(values)
    assert_exactly_equal(np.asarray(got), np.asarray(expected))


@pytest.mark.parametrize("layout", ["contiguous", "fortran", "reversed", "strided"])
@pytest.mark.parametrize("columns", [2, 10, 63, 1000])
def test_reduce_of_a_function_without_associative_along_rows_is_the_in_order_chain(columns, layout,
                                                                                 rng):
    # One call of the loop's in-order reduction per NumPy loop call (it was one kernel call
    # per element): the same chain, from each row's start, whatever the layout
    values = rng.uniform(-0.01, 0.01, (30, columns))
    x = with_layout(values, layout)
    expected = values[:, 0].copy()
    for j in range(1, columns):
        expected = expected * values[:, j] + expected
    assert_exactly_equal(ex.custom_op.reduce(x, axis=1), expected)
    assert_exactly_equal(ex.custom_op.reduce(x, axis=1, where=values > -0.005, initial=1.0),
                         np.frompyfunc(lambda a, b: a * b + a, 2, 1).reduce(
                             values, axis=1, where=values > -0.005, initial=1.0).astype(float))


def test_a_reduction_without_associative_raises_its_flags_as_numpys_would(rng):
    big = np.full(100, 1e300)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ex.custom_op.reduce(big)                   # 1e300 * 1e300 overflows at the first step
    with np.errstate(all="raise"):
        ex.custom_op.reduce(rng.uniform(-0.01, 0.01, 1000))


# ----------------------------------------------------------------------------- accumulate
#
# NumPy's accumulate calls a binary loop with its first input the output one step back; the
# host loops of a binary function of one type run such a call as one scalar chain
# (host_reduce_impl.h, `accumulate`), which must be the element-by-element loop's results.


def accumulate_in_python(step, values, axis):
    """The chain out[i] = step(out[i - 1], x[i]) along `axis`, each step rounded to the
    array's type as NumPy's loop stores it."""
    moved = np.moveaxis(np.asarray(values), axis, 0)
    out = np.empty_like(moved)
    out[0] = moved[0]
    with np.errstate(all="ignore"):
        for i in range(1, len(moved)):
            out[i] = step(out[i - 1], moved[i])
    return np.moveaxis(out, 0, axis)


STEPS = {"custom_op": lambda a, b: a * b + a, "hypot": np.hypot, "add": np.add}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["custom_op", "hypot"])
def test_accumulate_of_a_function_without_associative_is_the_element_by_element_chain(name, dtype,
                                                                                     layout, rng):
    fn = getattr(ex, name)
    if np.dtype(dtype) not in [d[0][0] for d in loop_dtypes(fn)]:
        pytest.skip(f"{name} has no {np.dtype(dtype)} loop")
    values = rng.uniform(-0.5, 0.5, (7, 300)).astype(dtype)
    values[:, 0] = 1
    x = with_layout(values, layout)
    for axis in (0, 1):
        got = fn.accumulate(x, axis=axis)
        assert_exactly_equal(got, accumulate_in_python(STEPS[name], values, axis))
        if name == "hypot":
            assert_exactly_equal(got, np.hypot.accumulate(values, axis=axis))


@pytest.mark.parametrize("name", ["add", "custom_op", "hypot"])
def test_accumulate_in_place_and_into_a_shifted_view_of_its_input_is_numpys(name, rng):
    # In place: each input read after the step before has stored, as the element-by-element
    # loop reads it
    fn = getattr(ex, name)
    values = rng.uniform(-0.5, 0.5, 1000)
    x = values.copy()
    assert fn.accumulate(x, out=x) is x
    assert_exactly_equal(x, accumulate_in_python(STEPS[name], values, 0))
    # NumPy copies an input that overlaps the output otherwise (as np.add.accumulate does)
    shifted = values.copy()
    fn.accumulate(shifted[:-1], out=shifted[1:])
    assert_exactly_equal(shifted[1:], accumulate_in_python(STEPS[name], values[:-1], 0))
    shifted = values.copy()
    fn.accumulate(shifted[1:], out=shifted[:-1])
    assert_exactly_equal(shifted[:-1], accumulate_in_python(STEPS[name], values[1:], 0))


def test_accumulate_raises_its_flags_as_numpys_element_by_element_loop_would(rng):
    big = np.full(100, 1e300)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ex.custom_op.accumulate(big)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ex.add.accumulate(np.full(10, np.finfo(np.float64).max))
    specials = np.array([0.0, np.nan, -np.inf, 3.0, -0.0, np.inf, 1e-310, 5.0, 1e308])
    with np.errstate(all="raise", under="ignore"):
        ex.custom_op.accumulate(rng.uniform(-0.01, 0.01, 1000))
        assert_exactly_equal(ex.hypot.accumulate(specials), np.hypot.accumulate(specials))
        assert_exactly_equal(ex.add.accumulate(specials[:3]), np.add.accumulate(specials[:3]))


def test_int64_and_float16_accumulate_along_rows_is_numpys(rng):
    ints = rng.integers(-2**62, 2**62, (40, 13))
    halves = rng.standard_normal((40, 13)).astype(np.float16)
    for axis in (0, 1):
        assert_exactly_equal(ex.add.accumulate(ints, axis=axis), np.add.accumulate(ints, axis=axis))
        assert_exactly_equal(ex.add.accumulate(halves, axis=axis), np.add.accumulate(halves, axis=axis))
        assert_exactly_equal(ex.add.accumulate(halves[::-1, ::2], axis=axis),
                             np.add.accumulate(halves[::-1, ::2], axis=axis))


# ----------------------------------------------------------------------------- float16 add
#
# add's float16 loop is associative too, and a type stored narrower than the body computes
# in: its reductions step in float and round once per loop call (host_reduce.h), as NumPy's
# own float16 add does.  Rounding each step to float16 had lost all but a few bits of a long
# sum (|error| 5.9 for 100,000 standard normal values, where NumPy's is 0.05).


def half_ulp(value):
    """A float16 ULP at |value| (the spacing of float16 numbers there)."""
    return float(np.spacing(np.abs(np.float16(value))))


@pytest.mark.parametrize("layout", ["contiguous", "reversed", "strided"])
@pytest.mark.parametrize("size", [2, 7, 63, 64, 65, 129, 4097, 65537, 2 * 65536 + 5])
def test_float16_add_reduce_steps_in_float_and_rounds_once(size, layout, rng):
    values = rng.standard_normal(size).astype(np.float16)
    got = ex.add.reduce(with_layout(values, layout))
    assert np.asarray(got).dtype == np.float16
    exact = math.fsum(values.astype(np.float64).tolist())
    # One rounding to float16 (half an ULP), after float steps in any order.
    magnitude = float(np.sum(np.abs(values.astype(np.float64))))
    assert abs(float(got) - exact) <= 0.5 * half_ulp(exact) + pairwise_bound(np.float32, size, magnitude)


@pytest.mark.parametrize("size", [2, 5, 15, 40, 63])
def test_float16_add_reduce_of_fewer_than_64_elements_gives_numpys_bits(size, rng):
    """In the order of NumPy's pairwise sum, in float, added to the accumulator and rounded
    once: NumPy's own loop."""
    for _ in range(50):
        values = (rng.standard_normal(size) * 100).astype(np.float16)
        assert_exactly_equal(np.asarray(ex.add.reduce(values)), np.asarray(np.add.reduce(values)))
        assert_exactly_equal(np.asarray(ex.add.reduce(values, initial=np.float16(0.1))),
                             np.asarray(np.add.reduce(values, initial=np.float16(0.1))))


def test_float16_add_reduce_with_where_gives_numpys_bits_where_runs_are_short(rng):
    """NumPy's masked loop calls the loop once per run of kept elements: under 64 elements,
    in NumPy's order and its bits; longer runs (some, at 90% kept) over lanes, within one
    float16 ULP of NumPy's float32 sum rounded once."""
    values = (rng.standard_normal((6, 3000)) * 10).astype(np.float16)
    for keep in (0.3, 0.5, 0.9):
        mask = rng.random(values.shape) < keep
        for axis in (1, None):
            ours = ex.add.reduce(values, axis=axis, where=mask, initial=0)
            numpys = np.add.reduce(values, axis=axis, where=mask, initial=0)
            if keep < 0.6:      # runs of 64 or more: 0.5**63 of them, none here
                assert_exactly_equal(ours, numpys)
            ulps = np.abs(np.asarray(ours).view(np.int16).astype(np.int64)
                          - np.asarray(numpys).view(np.int16).astype(np.int64))
            assert ulps.max() <= 1


def test_float16_add_reduce_is_as_accurate_as_numpys_float32_sum():
    rng = np.random.default_rng(17)
    ours = numpys = 0.0
    for _ in range(40):
        x = rng.standard_normal(20_000).astype(np.float16)
        exact = math.fsum(x.astype(np.float64).tolist())
        ours += abs(float(ex.add.reduce(x)) - exact)
        numpys += abs(float(np.add.reduce(x)) - exact)
    assert ours <= 1.01 * numpys, (ours, numpys)
    # Each step rounded to float16 is some 100 times worse: the rounding this replaced.
    step_by_step = np.float16(0)
    for v in x:
        step_by_step = np.float16(step_by_step + v)
    assert abs(float(step_by_step) - exact) > 10 * abs(float(ex.add.reduce(x)) - exact)


def test_float16_partial_sums_beyond_65504_do_not_overflow_a_finite_result():
    values = np.array([60000, 60000, -60000, -60000] * 40 + [1.5], np.float16)
    with np.errstate(over="raise"):
        assert ex.add.reduce(values) == np.add.reduce(values) == np.float16(1.5)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ex.add.reduce(np.full(100, 60000, np.float16))        # the result itself overflows
    with np.errstate(over="ignore"):
        assert ex.add.reduce(np.full(100, 60000, np.float16)) == np.inf


def test_float16_short_rows_keep_nan_bits_and_flags_of_numpys_conversions(rng):
    # A short row converts one element at a time, with F16C where the CPU has it; NaN goes
    # through half.h's conversions, which keep a payload and raise nothing, as NumPy's do.
    # Then the float additions quiet a signalling NaN and raise invalid, in both
    nans = np.array([0x7e00, 0xfe00, 0x7c01, 0xfc01, 0x7d55, 0x7fff], np.uint16).view(np.float16)
    for columns in (1, 3, 9, 40):
        x = short_row_values(np.float16, len(nans), columns, rng)
        x[:, columns // 2] = nans
        with np.errstate(invalid="ignore"):
            ours, numpys = ex.add.reduce(x, axis=1), np.add.reduce(x, axis=1)
        assert_exactly_equal(ours.view(np.uint16), numpys.view(np.uint16))
        with np.errstate(invalid="raise"):
            for row in x:
                outcomes = []
                for fn in (ex.add, np.add):
                    try:
                        outcomes.append(fn.reduce(row[None, :], axis=1).view(np.uint16).tolist())
                    except FloatingPointError as error:
                        outcomes.append(str(error))
                assert outcomes[0] == outcomes[1], (row, outcomes)


@pytest.mark.parametrize("columns", [2, 9, 40])
def test_a_short_float16_row_that_overflows_raises_overflow_as_numpy_does(columns):
    x = np.full((3, columns), 60000, np.float16)
    x[1] = 1000                               # a finite row beside them
    x[2, 1:] = -60000 / (columns - 1)         # a row whose float partials pass 65504
    with np.errstate(over="ignore"):
        assert_exactly_equal(ex.add.reduce(x, axis=1), np.add.reduce(x, axis=1))
    for row in x:
        outcomes = []
        for fn in (ex.add, np.add):
            with np.errstate(over="raise"):
                try:
                    outcomes.append(fn.reduce(row[None, :], axis=1).view(np.uint16).tolist())
                except FloatingPointError as error:
                    outcomes.append(str(error))
        assert outcomes[0] == outcomes[1], (row, outcomes)


@pytest.mark.parametrize("size", [1, 7, 100, 5000])
def test_float16_add_reduce_propagates_nan_infinities_and_negative_zero_like_numpy(size):
    def same(x, **kwargs):
        with np.errstate(invalid="ignore", over="ignore"):
            ours, theirs = ex.add.reduce(x, **kwargs), np.add.reduce(x, **kwargs)
        assert np.asarray(ours).dtype == np.float16
        assert (np.isnan(ours) and np.isnan(theirs)) or (
            ours == theirs and np.signbit(ours) == np.signbit(theirs)), (ours, theirs)

    for special in (np.nan, np.inf, -np.inf):
        x = np.ones(size, np.float16)
        x[size // 2] = special
        same(x)
    same(np.full(size, -0.0, np.float16))
    same(np.full(size, -0.0, np.float16), initial=-0.0)


def test_float16_add_reduce_gives_the_same_bits_on_one_two_and_three_threads(threads_restored, rng):
    elements, work, _ = _core._parallel_threshold()
    _core._set_parallel_threshold(elements, work, 0)       # the pool takes every large call
    cases = [rng.standard_normal(5 * 65536 + 1234).astype(np.float16),
             rng.standard_normal((3, 2 * 65536 + 77)).astype(np.float16)]
    results = {}
    for threads in (1, 2, 3):
        ufuncgen.set_num_threads(threads)
        results[threads] = [ex.add.reduce(cases[0]).tobytes(), ex.add.reduce(cases[1], axis=1).tobytes(),
                            ex.add.reduce(cases[0][::-3]).tobytes()]
    assert results[1] == results[2] == results[3]


def test_float16_add_accumulate_still_rounds_every_step_as_numpy_does(rng):
    """Every partial sum of a scan is an output element, stored as float16."""
    values = rng.standard_normal(3000).astype(np.float16)
    assert_exactly_equal(ex.add.accumulate(values), np.add.accumulate(values))
