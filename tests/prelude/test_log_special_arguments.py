"""log of a real where the host loops' vector log (glibc's libmvec) leaves its fast path: +-0
(-inf, divide-by-zero), a negative value or -inf (NaN, invalid), a subnormal, inf and NaN, alone
or beside ordinary values, in the plain kernel and in the kernel for the blocks of a group of
4,096 elements after blocks dense with zeros, whose log computes +-0 inline
(prelude.h, ufg_log_f_special; host_loops.h, ufg_run_chosen).  NumPy's values within the
libraries' few ULP (-inf, NaN and inf exactly), and the floating-point errors np.log reports."""
from __future__ import annotations

import numpy as np
import pytest

from .ulps import assert_agree

SIGNATURES = """\
ufunc log_of(x) -> y
    types: float32(float32), float64(float64)
{
    y = log(x);
}

ufunc log_plus_exp(x, z) -> y
    types: float32(float32, float32), float64(float64, float64)
{
    y = log(x) + exp(z);
}
"""

TYPES = ["float32", "float64"]
ULPS = {"float32": 4, "float64": 4}


@pytest.fixture(scope="module")
def fns(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("log_special"), "ufg_log_special_module",
                           SIGNATURES, "--cuda-arch", "none")


def _pool(t, rng):
    """Ordinary values over many binades, shuffled with every special argument, so that a run
    of a few elements mixes them within one vector."""
    info = np.finfo(t)
    ordinary = np.exp(rng.uniform(-80, 80, 6_000)).astype(t)
    specials = np.array([0.0, -0.0, -1.0, -1e-30, -np.inf, np.inf, np.nan, float(info.tiny) / 4,
                         float(info.smallest_subnormal), float(info.max), 1.0], dtype=t)
    pool = np.concatenate([ordinary, np.repeat(specials, 60)])
    rng.shuffle(pool)
    return pool


def _errors(fn, x):
    seen = set()
    with np.errstate(all="call", call=lambda kind, flag: seen.add(kind)):
        fn(x)
    return seen


def _assert_numpys(got, x, t, what):
    with np.errstate(all="ignore"):
        want = np.log(x)
    exact = ~np.isfinite(want) | (want == 0)
    assert_agree(got[exact], want[exact], 0, f"log({t}) where NumPy's is special ({what})")
    assert_agree(got[~exact], want[~exact], ULPS[t], f"log({t}) elsewhere ({what})")


def _after_zero_blocks(x):
    """x after three blocks of zeros: the blocks of x run through the special kernel."""
    return np.concatenate([np.zeros(3 * 256, dtype=x.dtype), x])


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("after_zeros", [False, True], ids=["plain", "after-zero-blocks"])
@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
def test_log_is_numpys_in_values_and_errors_in_either_kernel(fns, t, after_zeros, strided,
                                                             threads_restored):
    import ufuncgen
    ufuncgen.set_num_threads(1)
    pool = _pool(t, np.random.default_rng(31))
    for n in [1, 7, 8, 9, 16, 17, 40, 255, 300, 3328]:
        for start in range(0, pool.size - n, max(n, 1499)):
            x = pool[start:start + n]
            a = _after_zero_blocks(x) if after_zeros else x
            if strided:
                spread = np.ones(2 * a.size, dtype=t)
                spread[::2] = a
                a = spread[::2]
            with np.errstate(all="ignore"):
                got = fns.log_of(a)
            _assert_numpys(got, a, t, f"{n} elements from {start}")
            assert _errors(fns.log_of, a) == _errors(np.log, a), (n, start)


@pytest.mark.parametrize("t", TYPES)
def test_a_zero_in_every_vector_gives_the_same_bits_for_any_thread_count(fns, t,
                                                                         on_thread_counts):
    x = np.concatenate([_pool(t, np.random.default_rng(32))] * 30)
    x[::7] = 0
    with np.errstate(all="ignore"):
        results = on_thread_counts(lambda: fns.log_of(x))
    for r in results[1:]:
        np.testing.assert_array_equal(r.view(f"u{np.dtype(t).itemsize}"),
                                      results[0].view(f"u{np.dtype(t).itemsize}"))
    _assert_numpys(results[0], x, t, "a zero every 7th")


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("special", ["log of zero", "exp past underflow"])
def test_the_special_kernel_raises_the_flag_of_each_special_argument_itself(fns, t, special,
                                                                            threads_restored):
    """The first three blocks choose the special kernel through the other function (an exp
    that underflows, a log of zero), so that the flag of the special argument in the blocks
    after them can come from the special kernel alone."""
    import ufuncgen
    ufuncgen.set_num_threads(1)
    past = {"float32": -200.0, "float64": -1000.0}[t]
    x, z = np.ones(4096, dtype=t), np.zeros(4096, dtype=t)
    if special == "log of zero":
        z[:768] = past              # exp underflows in the first three blocks alone
        x[1000:1003] = 0
        want = {"divide by zero", "underflow"}
    else:
        x[:768] = 0                 # log divides by zero in the first three blocks alone
        z[1000:1003] = past
        want = {"divide by zero", "underflow"}
    with np.errstate(all="ignore"):
        expected = np.log(x) + np.exp(z)
    assert _errors(lambda v: np.log(v) + np.exp(z), x) == want
    assert _errors(lambda v: fns.log_plus_exp(v, z), x) == want
    for kind in ("divide", "under"):
        with np.errstate(all="ignore", **{kind: "raise"}):
            with pytest.raises(FloatingPointError):
                fns.log_plus_exp(x, z)
    with np.errstate(all="ignore"):
        got = fns.log_plus_exp(x, z)
    np.testing.assert_array_equal(got[np.isinf(expected)], expected[np.isinf(expected)])
    np.testing.assert_allclose(got[np.isfinite(expected)], expected[np.isfinite(expected)],
                               rtol=8 * np.finfo(t).eps)
