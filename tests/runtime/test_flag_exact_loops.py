"""Floating-point errors of guarded operations and of gufuncs follow np.errstate as NumPy's own
functions' do.

GCC's vectorizer if-converts a guarded operation (`x < 0 ? -1 : sqrt(x)`) into one computed on
every lane, the guarded-off ones too, and libmvec raises flags scalar libm does not
(`exp(-inf)` invalid, `sin(1e300)` overflow), in a gufunc's loops as in an elementwise one's.
A function whose body has a conditional or calls vector math is flag-exact: a block that raised
an error re-runs through a scalar copy of its loop (host_loops.h, host_threads.h).  Each case
here is checked against NumPy's own functions on the same values: values close, and an error
raised exactly where NumPy raises one.
"""
import numpy as np
import pytest


SIGNATURES = """\
ufunc sqrt_or_minus_one(x) -> y
    types: float64(float64), float32(float32)
{
    if (x < 0) { y = -1; goto done; }
    y = sqrt(x);
done:;
}

ufunc sqrt_if_positive(x) -> y
    types: float64(float64), float32(float32)
{
    y = 0;
    if (x > 0) y = sqrt(x);
}

ufunc reciprocal_or_zero(x) -> y
    types: float64(float64), float32(float32)
{
    if (x == 0) { y = 0; goto done; }
    y = (T)1 / x;
done:;
}

ufunc square_below_1e150(x) -> y
    types: float64(float64)
{
    y = fabs(x) < (T)1e150 ? x * x : INFINITY;
}

ufunc truncated_if_finite(x) -> y
    types: int64(float64)
{
    y = (x == x && fabs(x) < (T)9e18) ? (int64_t)x : 0;
}

ufunc ratio_if_positive(x, s) -> y
    types: float64(float64, float64)
{
    y = x > 0 ? x / s : (T)0;
}

ufunc exp_unless_tiny(a) -> y
    types: float64(float64), float32(float32)
{
    y = a < -80 ? 0 : exp(a);
}

ufunc log_of(x) -> y
    types: float64(float64), float32(float32)
{
    y = log(x);
}

ufunc exp_of(a) -> y
    types: float64(float64), float32(float32)
{
    y = exp(a);
}

ufunc exp_if_negative(a) -> y
    types: float64(float64), float32(float32)
{
    y = a < 0 ? exp(a) : 1;
}

gufunc exp_rows_unless_tiny(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    for (int64_t i = 0; i < n; i++)
        y(i) = x(i) < -80 ? (T)0 : exp(x(i));
}

gufunc exp_rows(x) -> y
    layout: (n)->(n)
    types: float32(float32), float64(float64)
    specialize: n=4
    specialize: n=16
{
    for (int64_t i = 0; i < n; i++)
        y(i) = exp(x(i));
}

gufunc logsumexp(x) -> s
    layout: (n)->()
    types: float32(float32), float64(float64)
{
    T mx = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        mx = fmax(mx, x(i));
    T acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += exp(x(i) - mx);
    s = mx + log(acc);
}

gufunc log_likelihood(p) -> s
    layout: (n)->()
    types: float32(float32), float64(float64)
{
    T acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += log(p(i));
    s = acc;
}

gufunc sin_sum3(v) -> y
    layout: (3)->()
    types: float64(float64)
{
    y = sin(v(0)) + sin(v(1)) + sin(v(2));
}

gufunc log_if_positive_rows(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    for (int64_t i = 0; i < n; i++)
        y(i) = x(i) > 0 ? log(x(i)) : (T)0;
}

gufunc sqrt_if_positive_rows(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    for (int64_t i = 0; i < n; i++)
        y(i) = x(i) > 0 ? sqrt(x(i)) : (T)0;
}

gufunc add_exp_rows(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    for (int64_t i = 0; i < n; i++)
        y(i) += exp(x(i));
}

gufunc scaled_rows(x) -> y
    layout: (n)->(n)
    types: float64(float64)
    specialize: n=4
{
    T acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += x(i) * x(i);
    const T inv = acc > 0 ? (T)1 / sqrt(acc) : (T)0;
    for (int64_t i = 0; i < n; i++)
        y(i) = x(i) * inv + x(i) / (T)3;
}
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("flag_exact"), "ufg_flag_exact", SIGNATURES,
                           "--cuda-arch", "none")


KINDS = ("invalid", "divide", "over")


def errors(fn, *args):
    """The floating-point errors `fn(*args)` raises under np.errstate (each kind alone), and
    its result computed with all of them ignored."""
    raised = set()
    for kind in KINDS:
        with np.errstate(all="ignore", **{kind: "raise"}):
            try:
                fn(*args)
            except FloatingPointError:
                raised.add(kind)
    with np.errstate(all="ignore"):
        return raised, fn(*args)


def layouts(x):
    """`x` (2-D) C-contiguous, Fortran-ordered and as a strided view."""
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
    wide[:, ::2] = x
    return {"C": np.ascontiguousarray(x), "F": np.asfortranarray(x), "strided": wide[:, ::2]}


# ---------------------------------------------------------------- guarded elementwise bodies

def underflows(fn, *args):
    """Whether `fn(*args)` raises underflow under np.errstate(under='raise')."""
    with np.errstate(all="ignore", under="raise"):
        try:
            fn(*args)
        except FloatingPointError:
            return True
    return False

SIZES = (1, 3, 7, 8, 17, 300, 5000)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_a_sqrt_behind_an_early_exit_raises_nothing_for_negative_values_at_any_length(m, dtype, n):
    x = -np.ones(n, dtype)
    for f, guarded in ((m.sqrt_or_minus_one, -1), (m.sqrt_if_positive, 0)):
        raised, y = errors(f, x)
        want_raised, want = errors(lambda v: np.where(v < 0, dtype(guarded), np.sqrt(np.abs(v))), x)
        assert raised == want_raised == set()
        np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_guarded_sqrt_still_gives_numpys_values_and_flags_on_mixed_data(m, dtype, threading_mode):
    x = np.linspace(-3, 3, 40_001).astype(dtype)
    x[::7] = np.inf
    raised, y = errors(m.sqrt_or_minus_one, x)
    want_raised, want = errors(lambda v: np.where(v < 0, dtype(-1), np.sqrt(np.abs(v))), x)
    assert raised == want_raised == set()
    np.testing.assert_array_equal(y, want)
    raised, y = errors(m.sqrt_or_minus_one, x[::3])
    assert raised == set()
    np.testing.assert_array_equal(y, want[::3])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_a_division_guarded_against_zero_raises_no_divide_error(m, dtype, n):
    x = np.zeros(n, dtype)
    x[::2] = 4
    raised, y = errors(m.reciprocal_or_zero, x)
    assert raised == set()
    np.testing.assert_array_equal(y, np.where(x == 0, 0, 0.25).astype(dtype))


def test_a_guarded_product_and_a_guarded_conversion_raise_nothing(m, threading_mode):
    x = np.tile([2.0, 1e200, -1e300, np.inf, -np.inf, 3.5, -7.25, 1e19], 1000)
    raised, y = errors(m.square_below_1e150, x)
    assert raised == set()
    np.testing.assert_array_equal(y, [v * v if abs(v) < 1e150 else np.inf for v in x])
    x[4::8] = np.nan            # `x == x` is quiet; `fabs(x) < ...` of a NaN is not, but guarded
    raised, y = errors(m.truncated_if_finite, x)
    assert raised == set()
    np.testing.assert_array_equal(y, [int(v) if v == v and abs(v) < 9e18 else 0 for v in x])


def test_a_real_division_by_zero_behind_a_guard_is_still_reported(m, threading_mode):
    n = 20_000
    s = np.ones(n)
    s[12_345] = 0
    x = np.full(n, -1.0)
    assert errors(m.ratio_if_positive, x, s)[0] == set()       # guarded off: nothing
    x[12_345] = 2.0
    raised, y = errors(m.ratio_if_positive, x, s)
    want_raised, want = errors(lambda a, b: np.where(a > 0, np.divide(a, b), 0), x, s)
    assert raised == want_raised == {"divide"}
    np.testing.assert_array_equal(y, want)


# ---------------------------------------------------------------- gufuncs calling vector math


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [4, 5, 16, 37])
def test_exp_over_rows_of_minus_infinity_raises_what_np_exp_raises(m, dtype, n, threading_mode):
    x = np.full((3000, n), -np.inf, dtype)
    x[:, 0] = 0
    x[1234, :] = 1000          # overflow, as np.exp's
    want_raised, want = errors(np.exp, x)
    assert want_raised == {"over"}
    x_ok = x.copy()
    x_ok[1234] = 0
    for (name, a), a_ok in zip(layouts(x).items(), layouts(x_ok).values()):
        raised, y = errors(m.exp_rows, a)
        assert raised == want_raised, name
        np.testing.assert_allclose(y, want, rtol=1e-6 if dtype == np.float32 else 1e-15)
        assert errors(m.exp_rows, a_ok)[0] == set(), name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logsumexp_of_rows_with_minus_infinity_raises_what_numpy_raises(m, dtype, threading_mode):
    with np.errstate(divide="ignore"):
        x = np.log(np.tile(np.array([0.5, 0.5, 0, 0, 0, 0, 0, 0], dtype), (5000, 1)))

    def numpy_logsumexp(a):
        mx = a.max(axis=1)
        return mx + np.log(np.sum(np.exp(a - mx[:, None]), axis=1))

    for name, a in layouts(x).items():
        raised, s = errors(m.logsumexp, a)
        want_raised, want = errors(numpy_logsumexp, a)
        assert raised == want_raised == set(), name
        np.testing.assert_allclose(s, want, rtol=1e-6)
    # A row of -inf only: -inf - -inf is NaN, a real invalid operation, in NumPy's too.
    x[4321] = -np.inf
    raised, s = errors(m.logsumexp, x)
    want_raised, want = errors(numpy_logsumexp, x)
    assert raised == want_raised == {"invalid"}
    np.testing.assert_allclose(s, want, rtol=1e-6)


def test_sin_of_huge_values_in_a_frozen_core_raises_what_np_sin_raises(m, threading_mode):
    v = np.full((6000, 3), 1e300)
    raised, y = errors(m.sin_sum3, v)
    want_raised, want = errors(lambda a: np.sin(a).sum(axis=1), v)
    assert raised == want_raised == set()
    np.testing.assert_allclose(y, want, rtol=1e-12)
    v[17, 1] = np.inf
    assert errors(m.sin_sum3, v)[0] == errors(np.sin, v)[0] == {"invalid"}


def test_guarded_log_and_sqrt_in_a_gufunc_raise_nothing_for_the_guarded_values(m, threading_mode):
    x = np.linspace(-3, 3, 7 * 1430).reshape(70, 143)
    x[:, ::5] = 0
    for name, a in layouts(x).items():
        raised, y = errors(m.log_if_positive_rows, a)
        assert raised == set(), name
        np.testing.assert_allclose(y, np.where(x > 0, np.log(np.where(x > 0, x, 1)), 0))
        raised, y = errors(m.sqrt_if_positive_rows, a)
        assert raised == set(), name
        np.testing.assert_array_equal(y, np.where(x > 0, np.sqrt(np.abs(x)), 0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
def test_an_exp_guarded_against_underflow_raises_no_underflow_at_any_length(m, dtype, n,
                                                                          threading_mode):
    """Its vector run computes exp(-1000) on the guarded-off lanes; NumPy's exp, masked as the
    guard masks it, raises nothing."""
    x = np.full(n, -1000, dtype)
    x[::3] = -2
    want = np.zeros(n, dtype)
    np.exp(x, out=want, where=x >= -80)
    assert not underflows(lambda v: np.exp(v, out=np.zeros(n, dtype), where=v >= -80), x)
    assert not underflows(m.exp_unless_tiny, x)
    np.testing.assert_allclose(m.exp_unless_tiny(x), want, rtol=4e-7)
    if dtype == np.float64:
        rows = np.concatenate([x, np.full(-n % 10, -1000.0)]).reshape(-1, 10)
        assert not underflows(m.exp_rows_unless_tiny, rows)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_underflow_behind_a_guard_that_lets_it_through_is_still_reported(m, dtype,
                                                                            threading_mode):
    x = np.linspace(-5, 5, 20_000).astype(dtype)
    assert not underflows(m.exp_if_negative, x) and not underflows(np.exp, x)
    x[12_345] = -1000
    assert underflows(m.exp_if_negative, x) and underflows(np.exp, x)
    want = np.where(x < 0, np.exp(np.minimum(x, 0)), dtype(1))
    with np.errstate(under="ignore"):
        np.testing.assert_allclose(m.exp_if_negative(x), want, rtol=4e-7)


# ---------------------------------------------------------------- blocks whose flags a group confirmed

# A flag-exact loop re-runs a block only while its vector run raised a flag that no re-run of
# an earlier block of its group (4,096 elements from the call's start, 16 blocks of 256) has
# raised: the later blocks keep their vector results (host_loops.h, ufg_run_block).

def group_layouts(x):
    """`x` (1-D) contiguous, as a strided view, and as its own out= (a copy)."""
    wide = np.zeros(2 * x.size, x.dtype)
    wide[::2] = x
    return {"contiguous": (x, None), "strided": (wide[::2], None), "out=x": (x.copy(), "self")}


def call(fn, x, out):
    return fn(x, out=x) if out == "self" else fn(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("later", [1, 5, 255, 256, 3000, 4095, 4096, 9000])
def test_an_error_a_later_block_of_the_group_raises_is_reported_after_another_was_confirmed(
        m, dtype, later, threading_mode):
    x = np.random.default_rng(later).uniform(0.5, 2, 12_000).astype(dtype)
    zeros = np.setdiff1d(np.arange(0, x.size, 7), [later])
    x[zeros] = 0                    # divide-by-zero, in every block
    x[later] = -1                   # invalid, in one block only
    want_raised, want = errors(np.log, x)
    assert want_raised == {"divide", "invalid"}
    for name, (a, out) in group_layouts(x).items():
        raised, y = errors(lambda v: call(m.log_of, v.copy() if out else v, out), a)
        assert raised == want_raised, name
        assert np.isnan(y[later]) and np.all(y[zeros] == -np.inf), name
        finite = np.isfinite(want)
        np.testing.assert_allclose(y[finite], want[finite], rtol=4 * np.finfo(dtype).eps,
                                   err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("tiny", [None, 3, 300, 4000, 5000])
def test_an_underflow_after_a_confirmed_overflow_is_reported_exactly_where_np_exp_reports_one(
        m, dtype, tiny, threading_mode):
    """exp has no conditional, so underflow sends no block to its scalar copy: a group whose
    overflow the first block's re-run confirmed keeps the rest's vector results and must
    still raise underflow for the rest's values, and none where no value underflows."""
    x = np.random.default_rng(7).uniform(-5, 5, 9_000).astype(dtype)
    x[0] = 1000                     # overflow, in the group's first block
    if tiny is not None:
        x[tiny] = -1000
    for name, (a, out) in group_layouts(x).items():
        assert underflows(lambda v: call(m.exp_of, v.copy() if out else v, out), a) \
            == underflows(np.exp, x) == (tiny is not None), name
        raised, y = errors(lambda v: call(m.exp_of, v.copy() if out else v, out), a)
        want_raised, want = errors(np.exp, x)
        assert raised == want_raised == {"over"}, name
        np.testing.assert_allclose(y, want, rtol=4 * np.finfo(dtype).eps, err_msg=name)


@pytest.mark.parametrize("later", [300, 4000, 4100])
def test_a_block_kept_after_a_confirmed_overflow_raises_no_underflow_libmvec_made_up(
        m, later, threading_mode):
    """libmvec's expf raises underflow for an argument it overflows on (89.8 to 90.1), which
    scalar expf does not: a block is kept only where re-runs confirmed its underflow too."""
    x = np.ones(8200, np.float32)
    x[5] = 1000                     # overflow, confirmed by the first block's re-run
    x[later] = 90                   # overflow, and libmvec's underflow
    for name, (a, out) in group_layouts(x).items():
        assert not underflows(lambda v: call(m.exp_of, v.copy() if out else v, out), a), name
        assert not underflows(np.exp, x)
        raised, y = errors(lambda v: call(m.exp_of, v.copy() if out else v, out), a)
        assert raised == {"over"}, name
        with np.errstate(over="ignore"):
            want = np.exp(x)
        np.testing.assert_allclose(y, want, rtol=4 * np.finfo(np.float32).eps, err_msg=name)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocks_kept_from_the_vector_run_are_the_same_bits_for_any_thread_count(
        m, dtype, on_thread_counts):
    """libmvec's log differs from scalar libm's in the last bit of some values, so which blocks
    keep their vector results must not depend on where the thread parts start: parts of a
    flag-exact loop start on the groups' boundaries."""
    rng = np.random.default_rng(13)
    x = rng.uniform(0.1, 100, 300_000).astype(dtype)
    x[rng.integers(0, x.size, 60)] = 0
    x[rng.integers(0, x.size, 60)] = -1
    with np.errstate(all="ignore"):
        results = on_thread_counts(lambda: m.log_of(x), (1, 2, 3, 5))
    for r in results[1:]:
        np.testing.assert_array_equal(r.view(np.uint8), results[0].view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("later", [1, 15, 16, 200, 3000])
def test_a_gufunc_row_raising_an_error_after_a_confirmed_one_is_still_reported(
        m, dtype, later, threading_mode):
    """A gufunc's chunk re-runs its blocks of rows through the scalar copy only until they
    confirmed every flag the chunk raised: a row with a zero in each (divide-by-zero), one
    with a negative value (invalid) after them."""
    p = np.random.default_rng(later).uniform(0.01, 1, (4000, 16)).astype(dtype)
    p[:, 3] = 0
    p[later, 7] = -1
    with np.errstate(all="ignore"):
        want = np.log(p).sum(axis=1)
    for name, a in layouts(p).items():
        raised, got = errors(m.log_likelihood, a)
        assert raised == {"divide", "invalid"}, name
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=name)
        np.testing.assert_array_equal(got[~np.isnan(want)], want[~np.isnan(want)], err_msg=name)
    rows = np.random.default_rng(0).uniform(0.01, 1, (4000, 16)).astype(dtype)
    raised, got = errors(m.log_likelihood, rows)
    assert raised == set()
    np.testing.assert_allclose(got, np.log(rows).sum(axis=1), rtol=16 * np.finfo(dtype).eps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gufunc_rows_kept_after_a_confirmed_block_are_the_same_bits_for_any_thread_count(
        m, dtype, on_thread_counts):
    p = np.random.default_rng(12).uniform(0.01, 1, (40_000, 16)).astype(dtype)
    p[::50, 3] = 0
    with np.errstate(all="ignore"):
        results = on_thread_counts(lambda: m.log_likelihood(p), (1, 2, 3, 5))
    for r in results[1:]:
        np.testing.assert_array_equal(r.view(np.uint8), results[0].view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_re_run_gufunc_blocks_give_the_same_bits_for_any_thread_count(m, dtype, on_thread_counts):
    rng = np.random.default_rng(11)
    x = rng.uniform(-10, 10, (40_000, 5)).astype(dtype)
    x[rng.integers(0, x.shape[0], 40), 2] = -np.inf
    with np.errstate(all="ignore"):
        results = on_thread_counts(lambda: m.exp_rows(x))
    for r in results[1:]:
        np.testing.assert_array_equal(r.view(np.uint8), results[0].view(np.uint8))


# ---------------------------------------------------------------- bits and memory layouts


@pytest.mark.parametrize("n", [3, 4, 5, 16])
def test_a_body_without_vector_math_gives_the_same_bits_for_every_layout_and_size(m, n):
    x = np.random.default_rng(5).uniform(-4, 4, (300, n))
    c = m.scaled_rows(x)                 # n = 4: the specialized loop; else the contiguous one
    for name, a in layouts(x).items():
        np.testing.assert_array_equal(m.scaled_rows(a), c, err_msg=name)
    rows = np.stack([m.scaled_rows(row) for row in x])
    np.testing.assert_array_equal(rows, c)
    want = x / np.sqrt((x * x).sum(axis=1))[:, None] + x / 3
    np.testing.assert_allclose(c, want, rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [4, 5, 16, 17])
def test_a_body_calling_vector_math_agrees_across_layouts_within_the_libraries_ulps(m, dtype, n):
    # libmvec (within 4 ULP) where the compiler vectorized a loop, scalar libm where it did
    # not: the bits may differ between layouts, each within 4 ULP of np.exp.
    x = np.random.default_rng(3).uniform(-5, 5, (200, n)).astype(dtype)
    want = np.exp(x)
    results = {name: m.exp_rows(a) for name, a in layouts(x).items()}
    results["row by row"] = np.stack([m.exp_rows(row) for row in x])
    for name, y in results.items():
        ulps = np.abs(y.astype(np.float64) - want) / np.spacing(want)
        assert ulps.max() <= 4, name


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_call_of_one_contiguous_row_runs_the_loop_a_stack_of_such_rows_runs(m, dtype):
    # NumPy gives a call without loop dimensions the outer step 0, which had sent it to the
    # strided copy as if its rows shared an output: its one row is as contiguous as each row of
    # a C-contiguous stack, and gets the same vectorized loop (libmvec's exp, not scalar libm's)
    x = np.random.default_rng(7).uniform(-5, 5, 256).astype(dtype)
    stacked = m.exp_rows(np.stack([x, x]))
    spread = np.empty(512, dtype)
    spread[::2] = x
    if np.array_equal(m.exp_rows(spread[::2]), stacked[0]):
        pytest.skip("the strided and the vectorized loop give the same bits here")
    np.testing.assert_array_equal(m.exp_rows(x), stacked[0])
    out = np.empty_like(x)
    m.exp_rows(x, out=out)
    np.testing.assert_array_equal(out, stacked[0])


def test_a_gufunc_adding_into_its_out_adds_once_where_its_vector_run_raised(m, threading_mode):
    """A body that reads its output before it writes it (`y(i) += ...` into out=) is not
    re-run: a re-run would add again to what the first run wrote."""
    x = np.zeros((64, 8))
    x[:, 3] = -np.inf               # libmvec's exp(-inf) raises invalid
    out = np.ones((64, 8))
    with np.errstate(all="ignore"):
        m.add_exp_rows(x, out=out)
    np.testing.assert_array_equal(out, 1 + np.exp(x))
