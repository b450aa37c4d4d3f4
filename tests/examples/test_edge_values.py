"""NaN, +-Inf, -0.0, huge and tiny inputs: results match NumPy's (integers bit-exact, floats
within each function's ULP bound, NaN at the same places, signs of zero where defined)."""
import itertools

import numpy as np
import pytest

import ufuncgen.examples as ex

from .conftest import (
    ELEMENTWISE_NAMES,
    HYPOT_MAX_ULP,
    LIBMVEC_LOADED,
    assert_exactly_equal,
    assert_ulp_close,
    check_elementwise,
    elementwise_reference,
    function_dtype_cases,
    lucas_mod_2_64,
    lucas_table,
)

FLOAT_CASES = [c for c in function_dtype_cases(ELEMENTWISE_NAMES) if c.values[1].kind == "f"]


def edge_values(dtype):
    info = np.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 100.0, -3.75, np.inf, -np.inf, np.nan,
              float(info.max), -float(info.max), float(info.tiny), float(info.smallest_subnormal),
              -float(info.smallest_subnormal), float(info.max) / 3, float(info.tiny) * 3]
    if dtype == np.float64:
        values += [1e300, -1e300, 1e-300, -1e-300, 1e154, 1e-160]
    elif dtype == np.float16:
        values += [65504.0, -65504.0, 6.1e-5, 1e-7, 256.0, 1e-3]
    else:
        values += [3e38, -3e38, 1e-38, 1e-44, 1.8e19, 1e-20]
    return np.array(values, dtype=dtype)


def edge_inputs(name, dtype, rng):
    """Every pair of edge values for the first two arguments; for functions of more
    arguments the others also take edge values, in a seeded random sample of combinations
    (plus the first two's full product with the rest held at ordinary values)."""
    fn = getattr(ex, name)
    values = edge_values(dtype)
    pairs = np.array(list(itertools.product(values, repeat=2)), dtype=dtype)
    if fn.nin == 1:
        return [values]
    if fn.nin == 2:
        return [pairs[:, 0].copy(), pairs[:, 1].copy()]
    ordinary = {"gaussian_pdf": [1.5], "polar_distance": [2.0, 0.75]}[name]
    columns = [pairs[:, 0], pairs[:, 1]] + [np.full(len(pairs), v, dtype) for v in ordinary]
    sample = rng.choice(values, size=(2000, fn.nin))
    return [np.concatenate([c, sample[:, i]]).astype(dtype) for i, c in enumerate(columns)]


@pytest.mark.parametrize("call", ["vector", "one_element_at_a_time"])
@pytest.mark.parametrize("name, dtype", FLOAT_CASES)
def test_float_function_matches_numpy_on_nan_inf_signed_zero_huge_and_tiny_inputs(
        name, dtype, call, rng):
    fn = getattr(ex, name)
    inputs = edge_inputs(name, dtype, rng)
    expected = elementwise_reference(name, *inputs)
    with np.errstate(all="ignore"):
        if call == "vector":
            actual = fn(*inputs)
        else:
            # n = 1 per call: the loops' scalar tails.
            results = [fn(*[a[i:i + 1] for a in inputs]) for i in range(len(inputs[0]))]
            if fn.nout == 1:
                actual = np.concatenate(results)
            else:
                actual = tuple(np.concatenate([r[k] for r in results]) for k in range(fn.nout))
    check_elementwise(name, actual if isinstance(actual, tuple) else (actual,), expected, inputs)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hypot_neither_overflows_nor_underflows_in_the_intermediate_squares(dtype):
    if dtype == np.float64:
        big, tiny = 1e300, 1e-300
    else:
        big, tiny = 3e38, 1e-38
    x = np.array([big, big, tiny, tiny, big / 2, 3 * tiny] * 3, dtype=dtype)
    y = np.array([big / 4, tiny, tiny, 0.0, big / 2, 4 * tiny] * 3, dtype=dtype)
    with np.errstate(all="ignore"):
        result = ex.hypot(x, y)
    assert np.all(np.isfinite(result)) and np.all(result > 0)
    assert_ulp_close(result, np.hypot(x, y), HYPOT_MAX_ULP)
    # Exactly representable: 3-4-5 triangles scaled to the edges of the range.
    scale = dtype(2.0) ** (np.finfo(dtype).maxexp - 4)
    assert ex.hypot(dtype(3) * scale, dtype(4) * scale) == dtype(5) * scale
    small = dtype(2.0) ** (np.finfo(dtype).minexp - 2)
    assert ex.hypot(dtype(3) * small, dtype(4) * small) == dtype(5) * small


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hypot_of_an_infinity_is_inf_even_with_nan_like_numpy(dtype):
    x = np.array([np.inf, -np.inf, np.nan, np.nan, 1.0] * 4, dtype=dtype)
    y = np.array([np.nan, np.nan, np.inf, -np.inf, np.nan] * 4, dtype=dtype)
    assert_exactly_equal(ex.hypot(x, y), np.hypot(x, y))
    assert_exactly_equal(ex.hypot(x, y), np.tile(np.array([np.inf] * 4 + [np.nan], dtype), 4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sincos_keeps_the_sign_of_zero_and_gives_nan_for_infinities(dtype):
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan] * 4, dtype=dtype)
    with np.errstate(invalid="ignore"):
        s, c = ex.sincos(x)
    assert_exactly_equal(np.signbit(s[np.isfinite(x)]), np.signbit(x[np.isfinite(x)]))
    assert np.all(c[np.isfinite(x)] == 1)
    assert np.all(np.isnan(s[~np.isfinite(x)])) and np.all(np.isnan(c[~np.isfinite(x)]))


def test_add_of_opposite_zeros_and_int64_overflow_match_numpy():
    x = np.array([0.0, -0.0, -0.0, 0.0] * 5)
    y = np.array([-0.0, -0.0, 0.0, 0.0] * 5)
    assert_exactly_equal(np.signbit(ex.add(x, y)), np.signbit(x + y))
    i = np.array([np.iinfo(np.int64).max, np.iinfo(np.int64).min, -1] * 7, dtype=np.int64)
    j = np.array([1, -1, np.iinfo(np.int64).min] * 7, dtype=np.int64)
    assert_exactly_equal(ex.add(i, j), np.add(i, j))
    assert ex.add(np.int64(2**63 - 1), np.int64(1)) == -2**63


# ----------------------------------------------------------------------------- lucas

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
LUCAS_EDGES = [0, 1, -1, 2, -2, 3, -3, 63, 64, 90, 91, 92, 93, -93, 94, -94, 127, 128,
               10**6, -10**6 - 1, 2**31, 2**32 + 1, 10**18, -10**18, 10**18 + 1, -(10**18 + 1),
               INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1, INT64_MIN + 2]


def test_lucas_reference_agrees_with_the_plain_recurrence():
    table = lucas_table(-400, 400)
    assert [table[n] for n in range(6)] == [2, 1, 3, 4, 7, 11]
    for n in range(-400, 401):
        assert lucas_mod_2_64(n) == table[n], n


@pytest.mark.parametrize("repeat", [1, 21])
def test_lucas_is_bit_exact_with_wrap_modulo_2_64_at_edges_and_huge_n(repeat):
    n = np.array(LUCAS_EDGES * repeat, dtype=np.int64)
    expected = np.array([lucas_mod_2_64(int(v)) for v in n], dtype=np.int64)
    assert_exactly_equal(ex.lucas(n), expected)


def test_lucas_of_negative_n_is_minus_one_to_the_n_times_lucas_of_n():
    n = np.concatenate([np.arange(0, 400), np.array([10**18, 2**62 + 7, INT64_MAX])])
    n = n.astype(np.int64)
    sign = np.where(n % 2 == 1, -1, 1).astype(np.int64)
    assert_exactly_equal(ex.lucas(-n), ex.lucas(n) * sign)


def test_lucas_satisfies_its_recurrence_with_int64_wrap_for_random_large_n(rng):
    n = rng.integers(INT64_MIN + 2, INT64_MAX - 1, 10007, dtype=np.int64)
    with np.errstate(over="ignore"):
        assert_exactly_equal(ex.lucas(n + 1), ex.lucas(n) + ex.lucas(n - 1))


def test_lucas_of_huge_n_on_scalars_matches_plain_python():
    for v in LUCAS_EDGES:
        result = ex.lucas(np.int64(v))
        assert isinstance(result, np.int64)
        assert int(result) == lucas_mod_2_64(v), v
        assert int(ex.lucas(v)) == lucas_mod_2_64(v), v


# ----------------------------------------------------------------------------- fp flags

FLAG_KINDS = ("invalid", "divide", "over", "under")


def raised_flags(fn, *args, kinds=FLAG_KINDS):
    raised = []
    for kind in kinds:
        with np.errstate(all="ignore", **{kind: "raise"}):
            try:
                fn(*args)
            except FloatingPointError:
                raised.append(kind)
    return raised


def _gaussian_pdf_numpy(x, mean, sigma):
    t = x.dtype.type
    z = (x - mean) / sigma
    return np.exp(t(-0.5) * z * z) / (sigma * t(2.50662827463100050242))


FLAG_REFERENCES = {
    "add": np.add,
    "custom_op": lambda x, y: x * y + x,
    "hypot": np.hypot,
    "sincos": lambda x: (np.sin(x), np.cos(x)),
    "gaussian_pdf": _gaussian_pdf_numpy,
}
FLAG_CASES = [
    # Length 64 runs the vector loop (libmvec): a block whose vector math raised a spurious
    # flag (vector exp(-inf) raises invalid, vector sin/cos of |x| > ~1e19 overflow) re-runs
    # through the scalar kernel, so the flags match NumPy's for both lengths.
    pytest.param(*c.values, length, id=f"{c.id}-length{length}")
    for c in FLOAT_CASES if c.values[0] in FLAG_REFERENCES
    for length in (1, 64)
]


@pytest.mark.parametrize("name, dtype, length", FLAG_CASES)
def test_float_function_raises_the_same_floating_point_errors_as_numpy_on_edge_values(
        name, dtype, length):
    fn = getattr(ex, name)
    values = edge_values(dtype)
    # Arithmetic is IEEE-exact, flags included.  For transcendental functions underflow is
    # implementation-specific (NumPy's own float32 sin flags it for sin(1e-20) = 1e-20) and
    # ignored by NumPy's default errstate, so only invalid, divide and overflow count.
    kinds = FLAG_KINDS if name in ("add", "custom_op") else ("invalid", "divide", "over")
    mismatches = []
    for combo in itertools.product(values, repeat=min(fn.nin, 2)):
        combo = combo + (1.5,) * (fn.nin - len(combo))
        args = [np.full(length, v, dtype=dtype) for v in combo]
        got = raised_flags(fn, *args, kinds=kinds)
        want = raised_flags(FLAG_REFERENCES[name], *args, kinds=kinds)
        if got != want:
            mismatches.append((combo, got, want))
    assert not mismatches, f"{len(mismatches)} mismatches, e.g. {mismatches[:3]}"


def test_hypot_of_zeros_warns_about_nothing_like_numpy():
    x = np.zeros(16)
    with np.errstate(all="raise"):
        np.hypot(x, x)
        assert_exactly_equal(ex.hypot(x, x), np.zeros(16))


BINARY_FLOAT_CASES = [c for c in FLOAT_CASES if getattr(ex, c.values[0]).nin == 2]


@pytest.mark.parametrize("name, dtype", BINARY_FLOAT_CASES)
def test_an_edge_value_broadcast_against_every_edge_value_gives_numpys_values_and_flags(
        name, dtype):
    # One input a stride-0 view (`x + 2.0`): the loop's kernel that reads that value once,
    # where it has one, or blocks of its copies.  64 elements run its vector loop.
    fn = getattr(ex, name)
    values = np.resize(edge_values(dtype), 64)
    kinds = FLAG_KINDS if name in ("add", "custom_op") else ("invalid", "divide", "over")
    mismatches = []
    for value in edge_values(dtype):
        shared = np.broadcast_to(np.array(value, dtype=dtype), values.shape)
        for args in ((shared, values), (values, shared)):
            with np.errstate(all="ignore"):
                got = fn(*args)
            check_elementwise(name, (got,), elementwise_reference(name, *args), args)
            if raised_flags(fn, *args, kinds=kinds) != raised_flags(FLAG_REFERENCES[name], *args,
                                                                   kinds=kinds):
                mismatches.append((value, args[0] is shared))
    assert not mismatches, f"{len(mismatches)} flag mismatches, e.g. {mismatches[:3]}"
