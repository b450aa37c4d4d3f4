"""exp of a real where the host loops' vector exp (glibc's libmvec) leaves its fast path: an
argument whose exp is subnormal or rounds to +0 (float32 below -87.3, float64 below -708.4), a
huge one whose exp overflows, -inf, inf and NaN, alone or beside ordinary values in one vector,
in calls of every length up to a few vectors and in long ones, contiguous and strided.  NumPy's
values within the libraries' few ULP (+0 exactly where NumPy's is 0, the special values bit for
bit), and for each element the floating-point errors NumPy's np.exp reports.  A guard for any
change to how a body's exp reaches libmvec (prelude.h): libmvec computes such a vector lane by
lane through scalar expf, about 10x slower, so that path is one a change may want to avoid."""
from __future__ import annotations

import numpy as np
import pytest

from .ulps import assert_agree

SIGNATURES = """\
ufunc exp_of(x) -> y
    types: float32(float32), float64(float64)
{
    y = exp(x);
}
"""

TYPES = ["float32", "float64"]
# Against NumPy's own exp (its SIMD float32 loop, glibc's float64 exp here): libmvec is within
# 4 ULP of exp; measured at most 4 (float32) and 3 (float64) ULP from NumPy over these values.
ULPS = {"float32": 5, "float64": 4}
LOWEST = {"float32": -120.0, "float64": -800.0}
LENGTHS = list(range(1, 41)) + [10_000]


@pytest.fixture(scope="module")
def fns(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("exp_underflow"), "ufg_exp_underflow_module",
                           SIGNATURES, "--cuda-arch", "none")


def _edges(t):
    """Where exp changes regime: the ends of libmvec's fast range, the last subnormal results
    and the first +0, overflow, and every special value."""
    f = np.dtype(t).type
    info = np.finfo(t)
    if t == "float32":
        near = [-87.33654, -87.3366, -88.0, -100.0, -103.97, -103.972, -103.98, -104.0,
                -104.00001, -104.5, 88.72, 88.73, 89.0]
    else:
        near = [-708.39, -708.4, -709.0, -745.13, -745.1332, -745.14, -746.0, -746.0000001,
                -746.5, 709.78, 709.79, 710.0]
    # Not a value near the smallest normal, +-2^-126 (2^-1022): libmvec's 4-lane float32
    # (2-lane float64) exp, the vector loops' tail, raises underflow for it, NumPy's does not.
    values = near + [-1.0, -0.5, 0.0, -0.0, 1.0, -1e-30, -1e10, -1e30, float(-info.max),
                     -np.inf, np.inf, np.nan, -np.nan]
    with np.errstate(all="ignore"):
        return np.array([f(v) for v in values], dtype=t)


def _pool(t, rng):
    """Values spanning [LOWEST, 10] (most of them ordinary, a third of them past underflow), the
    edges, shuffled, so that a run of a few elements mixes the cases within one vector."""
    spanning = rng.uniform(LOWEST[t], 10.0, 9_000).astype(t)
    ordinary = rng.uniform(-20.0, 10.0, 3_000).astype(t)
    edges = np.repeat(_edges(t), 20)
    pool = np.concatenate([spanning, ordinary, edges])
    rng.shuffle(pool)
    return pool


def _numpys(x):
    with np.errstate(all="ignore"):
        return np.exp(x)


def _assert_numpys_values(got, x, t, what):
    want = _numpys(x)
    exact = ~np.isfinite(want) | (want == 0) | (x == 0)
    # +0 where NumPy's is 0 (never -0.0, nor a subnormal), Inf, NaN and exp(+-0) = 1: the bits.
    assert_agree(got[exact], want[exact], 0, f"exp({t}) where NumPy's is special ({what})")
    assert_agree(got[~exact], want[~exact], ULPS[t], f"exp({t}) elsewhere ({what})")


def _errors(fn, x, out=None):
    """The floating-point errors a call reports, as np.errstate's callback names them."""
    seen = set()
    with np.errstate(all="call", call=lambda kind, flag: seen.add(kind)):
        fn(x) if out is None else fn(x, out=out)
    return seen


def _subnormal_results(x):
    """Elements whose exp is a nonzero subnormal: IEEE flags underflow there only when the
    computed result is inexact, and two libraries' results need not be inexact alike (NumPy's
    float32 exp leaves it unraised for exp(-88)); each is compared by value alone."""
    want = _numpys(x)
    return (want != 0) & (np.abs(want) < np.finfo(x.dtype).tiny)


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_exp_is_numpys_within_a_few_ulps_and_exactly_zero_where_numpys_is(fns, t, strided):
    pool = _pool(t, np.random.default_rng(21))
    for n in LENGTHS:
        for start in range(0, pool.size - n, max(n, 397)):
            x = pool[start:start + n]
            if strided:
                spread = np.full(3 * n, np.nan, dtype=t)
                spread[1::3] = x
                out = np.full(2 * n, 7.0, dtype=t)
                with np.errstate(all="ignore"):
                    fns.exp_of(spread[1::3], out=out[::2])
                assert (out[1::2] == 7.0).all(), f"exp({t}) wrote between its strided outputs"
                got = out[::2]
            else:
                with np.errstate(all="ignore"):
                    got = fns.exp_of(x)
            _assert_numpys_values(got, x, t, f"{n} elements from {start}")


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("length", [1, 7, 8, 9, 40, 10_000])
def test_a_call_of_one_value_reports_the_errors_np_exp_reports_for_it(fns, t, length):
    """A whole call of one value: the scalar tail alone, one vector, vectors and a tail."""
    mismatched = []
    for value in _edges(t):
        x = np.full(length, value, dtype=t)
        if _subnormal_results(x[:1])[0]:
            continue
        ours, numpys = _errors(fns.exp_of, x), _errors(np.exp, x)
        if ours != numpys:
            mismatched.append((float(value), sorted(ours), sorted(numpys)))
        with np.errstate(all="ignore"):
            got = fns.exp_of(x)
        _assert_numpys_values(got, x, t, f"{length} of {value}")
    assert not mismatched, mismatched


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_mixed_vectors_raise_only_what_np_exp_raises_for_their_elements(fns, t, strided):
    """Runs of up to 40 elements of the pool, then 10,000: a vector holding an underflowing
    lane beside ordinary ones raises underflow and nothing else (no invalid or overflow from
    the lanes libmvec hands to scalar expf), under np.errstate(under='raise',
    invalid='raise') as np.exp does."""
    pool = _pool(t, np.random.default_rng(22))
    pool = pool[~_subnormal_results(pool)]
    mismatched = []
    for n in LENGTHS:
        for start in range(0, min(pool.size - n, 40 * max(n, 97)), max(n, 97)):
            x = pool[start:start + n]
            if strided:
                spread = np.empty(2 * n, dtype=t)
                spread[::2] = x
                x_arg, out = spread[::2], np.empty(3 * n, dtype=t)[::3]
                ours = _errors(fns.exp_of, x_arg, out)
            else:
                ours = _errors(fns.exp_of, x)
            numpys = _errors(np.exp, x)
            if ours != numpys:
                mismatched.append((n, start, sorted(ours), sorted(numpys)))
            raised = {}
            for name, fn in (("ours", fns.exp_of), ("numpy", np.exp)):
                with np.errstate(under="raise", invalid="raise", over="ignore"):
                    try:
                        fn(x)
                        raised[name] = None
                    except FloatingPointError as error:
                        raised[name] = str(error).split()[0]
            assert raised["ours"] == raised["numpy"], (n, start, raised)
    assert not mismatched, mismatched[:5]


@pytest.mark.parametrize("t", TYPES)
def test_a_long_call_spanning_underflow_is_numpys_in_values_and_errors(fns, t):
    """Two million values from 10 down past underflow, as a narrow Gaussian's exponents make
    them: contiguous blocks of +0, of subnormals and of ordinary values."""
    z = np.linspace(-10.0, 10.0, 2_000_001)
    x = (-0.5 * (z / 0.1) ** 2).astype(t)
    with np.errstate(all="ignore"):
        got = fns.exp_of(x)
    _assert_numpys_values(got, x, t, "a narrow Gaussian's exponents")
    keep = ~_subnormal_results(x)
    assert _errors(fns.exp_of, x[keep]) == _errors(np.exp, x[keep]) == {"underflow"}


# ---------------------------------------------------------------- after an underflowing block

# The blocks of a group of 4,096 elements (from the call's start) that follow blocks dense with
# exp arguments past underflow run through a second kernel, whose exp gives +0 inline where exp
# rounds to +0 (prelude.h, ufg_exp_f_special; host_loops.h, ufg_run_chosen): here after three
# blocks of them (the first two chose it), from the call's start.
PAST_UNDERFLOW = {"float32": -200.0, "float64": -1000.0}


def _after_underflowing_blocks(x, t):
    return np.concatenate([np.full(3 * 256, PAST_UNDERFLOW[t], dtype=t), x])


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_the_blocks_after_underflowing_ones_are_numpys_in_values_and_errors(
        fns, t, strided, threads_restored):
    import ufuncgen
    ufuncgen.set_num_threads(1)
    pool = _pool(t, np.random.default_rng(23))
    for n in [1, 7, 8, 9, 17, 40, 255, 256, 300, 3328]:
        for start in range(0, pool.size - n, max(n, 1999)):
            a = _after_underflowing_blocks(pool[start:start + n], t)
            if strided:
                spread = np.zeros(2 * a.size, dtype=t)
                spread[::2] = a
                a = spread[::2]
            with np.errstate(all="ignore"):
                got = fns.exp_of(a)
            _assert_numpys_values(got, a, t, f"{n} elements from {start}")
            kept = a[~_subnormal_results(a)]
            assert _errors(fns.exp_of, kept) == _errors(np.exp, kept), (n, start)


@pytest.mark.parametrize("t", TYPES)
def test_which_kernel_runs_a_block_does_not_depend_on_the_thread_count(fns, t, on_thread_counts):
    """Where libmvec raises a flag for an argument it hands to scalar exp (exp(-1e10):
    invalid), the plain kernel's block re-runs through scalar libm and the other kernel's
    keeps libmvec's bits: the blocks each kernel runs are the same for any thread count."""
    pool = _pool(t, np.random.default_rng(24))
    x = np.concatenate([pool] * 20)
    x[::997] = -1e10
    with np.errstate(all="ignore"):
        results = on_thread_counts(lambda: fns.exp_of(x))
    for r in results[1:]:
        np.testing.assert_array_equal(r.view(f"u{np.dtype(t).itemsize}"),
                                      results[0].view(f"u{np.dtype(t).itemsize}"))
