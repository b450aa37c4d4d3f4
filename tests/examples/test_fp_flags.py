"""Floating-point errors under np.errstate: the vectorized loops (libmvec) raise no flag that
NumPy's scalar math would not, and every real overflow, invalid operation and division by zero
is still reported, on every path of the host runtime (contiguous, strided, in place, several
threads).  A block whose vector run raised an error re-runs through the loop's scalar kernel
(host_loops.h, ufg_run_block)."""
import numpy as np
import pytest

import ufuncgen.examples as ex


def raises(kind, fn, *args, **kwargs):
    with np.errstate(all="ignore", **{kind: "raise"}):
        try:
            fn(*args, **kwargs)
        except FloatingPointError:
            return True
    return False


N = 40_000   # several blocks of 256, and enough for the pool


def one_at(n, index, value, fill, dtype):
    x = np.full(n, fill, dtype=dtype)
    x[index] = value
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index", [0, 300, N - 1])
def test_spurious_vector_flags_never_reach_numpy(dtype, index, threading_mode):
    x = one_at(N, index, np.inf, 0.5, dtype)
    ones = np.ones(N, dtype)
    with np.errstate(all="raise"):
        pdf = ex.gaussian_pdf(x, np.zeros(N, dtype), ones)       # exp(-inf) = 0: no flag
        assert pdf[index] == 0
        big = one_at(N, index, 1e30 if dtype == np.float32 else 1e200, 0.5, dtype)
        s, c = ex.sincos(big)                                     # sin(1e30): no flag
    np.testing.assert_allclose(s[index], np.sin(big[index]), rtol=1e-6)
    np.testing.assert_allclose(c[index], np.cos(big[index]), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index", [0, 300, N - 1])
def test_real_errors_are_still_reported(dtype, index, threading_mode):
    zeros, ones = np.zeros(N, dtype), np.ones(N, dtype)
    x = np.full(N, 0.5, dtype)
    # invalid: sin(inf), and 0/0 in (x - mean) / sigma
    assert raises("invalid", ex.sincos, one_at(N, index, np.inf, 0.5, dtype))
    assert raises("invalid", ex.gaussian_pdf, zeros, zeros, one_at(N, index, 0, 1, dtype))
    # divide: (x - mean) / 0 with x != mean
    assert raises("divide", ex.gaussian_pdf, x, zeros, one_at(N, index, 0, 1, dtype))
    # overflow: z * z overflows for a tiny sigma
    tiny = np.finfo(dtype).tiny
    assert raises("over", ex.gaussian_pdf, x, zeros, one_at(N, index, tiny, 1, dtype))
    # and none of them on the same inputs without the bad element
    assert not raises("invalid", ex.sincos, x)
    assert not raises("divide", ex.gaussian_pdf, x, zeros, ones)
    assert not raises("over", ex.gaussian_pdf, x, zeros, ones)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_re_run_block_in_place_reads_its_original_inputs(dtype, threading_mode):
    x = np.linspace(-3, 3, N).astype(dtype)
    x[[5, 700, N - 2]] = [-np.inf, np.inf, np.nan]
    mean, sigma = np.full(N, 0.25, dtype), np.full(N, 1.5, dtype)
    with np.errstate(all="ignore"):
        expected = ex.gaussian_pdf(x.copy(), mean, sigma)
    with np.errstate(all="raise"):
        out = ex.gaussian_pdf(x, mean, sigma, out=x)
    assert out is x
    np.testing.assert_array_equal(x, expected)
    y = np.full(N, 0.5, dtype)
    y[[3, 900]] = [1e30, -1e30]
    want = ex.sincos(y.copy())
    with np.errstate(all="raise"):
        ex.sincos(y, out=(y, np.empty_like(y)))
    np.testing.assert_array_equal(y, want[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strided_calls_are_flag_exact_too(dtype, threading_mode):
    x = np.full(2 * N, 0.5, dtype)
    x[601] = -np.inf
    x[600] = np.inf
    with np.errstate(all="raise"):
        r = ex.gaussian_pdf(x[::2], dtype(0), dtype(1))         # exp(-inf): no flag
    assert r[300] == 0
    assert raises("invalid", ex.sincos, x[::2])                 # sin(inf): invalid
    assert not raises("invalid", ex.sincos, x[1::2][:300])


def test_flags_set_before_the_call_are_left_alone():
    # NumPy clears the flags before a loop and reads them after; a flag raised by an earlier
    # element of the same call (add's overflow, another loop) must survive a checked block.
    big = np.full(1000, np.finfo(np.float64).max)
    with np.errstate(over="raise"):
        with pytest.raises(FloatingPointError):
            ex.add(big, big)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_re_run_blocks_give_the_same_bits_for_any_thread_count(dtype, on_thread_counts):
    # Re-run blocks compute with scalar libm (values within the libraries' ULP of the vector
    # ones): which blocks re-run must not depend on how the call is cut between threads.
    rng = np.random.default_rng(7)
    x = rng.uniform(-10, 10, 300_000).astype(dtype)
    x[rng.integers(0, x.size, 40)] = 1e30
    x[rng.integers(0, x.size, 40)] = -np.inf
    with np.errstate(all="ignore"):
        results = on_thread_counts(lambda: (ex.sincos(x), ex.gaussian_pdf(x, dtype(0.5), dtype(2))))
    for (s, c), pdf in results[1:]:
        np.testing.assert_array_equal(s.view(np.uint8), results[0][0][0].view(np.uint8))
        np.testing.assert_array_equal(c.view(np.uint8), results[0][0][1].view(np.uint8))
        np.testing.assert_array_equal(pdf.view(np.uint8), results[0][1].view(np.uint8))
