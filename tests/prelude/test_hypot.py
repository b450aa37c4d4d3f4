"""hypot and |z| (src/include/ufuncgen/prelude.h, ufg_hypot_f and ufg_hypot_d): computed inline so
that loops calling them vectorize, and still NumPy's results.  NumPy calls the C library's
hypot, and on x86-64 with glibc 2.35 or later the prelude computes
glibc's own operations, so the two agree to the bit; elsewhere (another libm, one built with
FMA) within an ULP.  |z| is within an ULP of hypot of its parts.  The values cover every exponent, pairs of every exponent gap, and the
special ones, in lengths that run the vector loop and its scalar tail."""
from __future__ import annotations

import platform

import numpy as np
import pytest

from ufuncgen import device

from .ulps import assert_agree

SIGNATURES = """\
ufunc hypot_of(x, y) -> r
    types: float32(float32, float32), float64(float64, float64)
{
    r = hypot(x, y);
}

ufunc modulus(z) -> r
    types: float32(complex64), float64(complex128)
{
    r = abs(z);
}
"""


def _glibc_at_least(major, minor):
    name, version = platform.libc_ver()
    if name != "glibc" or not version:
        return False
    return tuple(int(p) for p in version.split(".")[:2]) >= (major, minor)


# glibc's hypot since 2.35 is the algorithm the prelude follows; x86-64's build has no FMA.
SAME_AS_GLIBC = platform.machine() in ("x86_64", "AMD64") and _glibc_at_least(2, 35)
ULPS = 0 if SAME_AS_GLIBC else 1


@pytest.fixture(scope="module")
def fns(tmp_path_factory, module_importer, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("hypot"), "ufg_hypot_module", SIGNATURES,
                           "--cuda-arch", device_cuda_arch)


def _random_floats(dtype, n, rng):
    """Random bit patterns: every sign, exponent (subnormals, Inf and NaN included) and
    mantissa."""
    bits = rng.integers(0, np.iinfo(f"u{dtype.itemsize}").max, size=n, dtype=f"u{dtype.itemsize}",
                        endpoint=True)
    return bits.view(dtype)


def _specials(dtype, signaling=True):
    info = np.finfo(dtype)
    values = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan, info.max, -info.max,
                       info.tiny, info.smallest_subnormal, -info.smallest_subnormal, info.eps,
                       3.0, 4.0, 1e-30, 1e30], dtype=dtype)
    # Signaling NaNs (quiet bit clear, a payload): beside an infinity, NaN, not the infinity.
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    exponent = np.array(np.inf, dtype).view(bits)
    sign = np.array(-0.0, dtype).view(bits)
    nans = np.array([exponent | 1, exponent | sign | 5], dtype=bits).view(dtype)
    return np.concatenate([values, nans]) if signaling else values


def _pairs(dtype, rng, signaling=True):
    """x, y: random against random, y a scaled copy of x (every exponent gap, the cases where
    neither part is negligible), and every special (signaling NaNs unless told not) against
    every special and some randoms."""
    dtype = np.dtype(dtype)
    n = 200_003                                        # odd: the vector loop and its tail
    x = _random_floats(dtype, n, rng)
    y = _random_floats(dtype, n, rng)
    mant = 1 + rng.random(n)
    gap = rng.integers(-70, 71, size=n).astype(np.float64)
    with np.errstate(all="ignore"):
        near = (x.astype(np.float64) * mant * np.exp2(gap)).astype(dtype)
    s = _specials(dtype, signaling)
    sx, sy = (a.ravel() for a in np.meshgrid(s, np.concatenate([s, x[:50]])))
    return (np.concatenate([x, x, sx, sy]), np.concatenate([y, near, sy, sx]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hypot_is_numpys_over_every_exponent_and_special_value(fns, dtype):
    x, y = _pairs(dtype, np.random.default_rng(35))
    with np.errstate(all="ignore"):
        assert_agree(fns.hypot_of(x, y), np.hypot(x, y), ULPS, f"hypot {dtype}")
        assert_agree(fns.hypot_of(y, x), np.hypot(y, x), ULPS, f"hypot {dtype}, swapped")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hypot_of_nans_is_the_first_nan_quieted_as_numpys_on_host_and_device(fns, dtype):
    """Which NaN: the first (x + y, as glibc and np.hypot give it); the float32 loops left it
    to the operand order each compiler chose for the sum of squares, and the simulator's
    build gave the second."""
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    exponent = int(np.array(np.inf, dtype).view(bits))
    sign = int(np.array(-0.0, dtype).view(bits))
    quiet = (exponent >> 1) & ~exponent                       # the mantissa's top bit
    payloads = [1, 0x123, quiet | 1, quiet | 0x45, quiet]
    nans = np.array([s | exponent | p for p in payloads for s in (0, sign)], bits).view(dtype)
    x, y = (a.ravel() for a in np.meshgrid(nans, nans))
    x, y = np.tile(x, 3), np.tile(y, 3)                       # the vector loop and its tail
    with np.errstate(all="ignore"):
        want = np.hypot(x, y).view(bits)
        assert (fns.hypot_of(x, y).view(bits) == want).all()
        if device.is_available():
            got = fns.hypot_of(device.to_device(x), device.to_device(y)).copy_to_host()
            assert (got.view(bits) == want).all()


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_the_modulus_of_a_complex_is_within_an_ulp_of_hypot_and_two_of_numpys_abs(fns, dtype):
    # |z| is a square root of the parts scaled by a power of two (cheaper than hypot's
    # correction), as np.abs's own SIMD loops are not correctly rounded either.
    part = np.dtype(dtype).type(0).real.dtype
    # No signaling NaN beside an infinity: np.abs gives inf there (as the modulus does), and
    # np.hypot NaN.
    re, im = _pairs(part, np.random.default_rng(36), signaling=False)
    z = np.empty(re.size, dtype=dtype)
    z.real, z.imag = re, im
    with np.errstate(all="ignore"):
        got = fns.modulus(z)
        assert_agree(got, np.hypot(re, im), 1, f"abs {dtype} against hypot")
        assert_agree(got, np.abs(z), 2, f"abs {dtype} against np.abs")
        # The strided loop gathers blocks for the same kernel: the same bits.
        assert_agree(fns.modulus(z[::3]), got[::3], 0, f"abs {dtype}, strided")


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_the_modulus_raises_no_underflow_for_a_normal_result_however_small_the_other_part(fns, dtype):
    # The square of a part far below the other used to underflow (and raise under
    # np.errstate(under="raise")) although it cannot change |z|, which np.abs never flags.
    part = np.dtype(np.dtype(dtype).char.lower()).type
    info = np.finfo(part)
    small = np.array([info.smallest_subnormal, info.tiny, info.eps * info.tiny, 1e-30, 1e-20,
                      info.eps ** 2, info.eps], dtype=part)
    big = np.array([1.0, 3.0, info.tiny / info.eps, 1e10, info.max / 4], dtype=part)
    re, im = (a.ravel() for a in np.meshgrid(big, small))
    z = np.concatenate([re + 1j * im, im + 1j * re, -re - 1j * im]).astype(dtype)
    with np.errstate(all="raise"):
        expected = np.abs(z)
        got = fns.modulus(z)
    assert_agree(got, expected, 2, f"abs {dtype} of parts far apart")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_hypot_overflows_where_the_result_does_and_raises_nothing_else(fns, dtype):
    info = np.finfo(dtype)
    big = np.array([info.max, info.max / 2, info.max / 4 * 3], dtype=dtype)
    tiny = np.array([info.tiny, info.smallest_subnormal, 0.0], dtype=dtype)
    finite_results = [(big, tiny), (tiny, tiny), (big[1:2], big[1:2] / 4),
                      (np.full(64, 3, dtype), np.full(64, 4, dtype)),
                      (np.array([np.inf, np.nan, -np.inf], dtype),
                       np.array([np.nan, 1, -np.inf], dtype))]
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for x, y in finite_results:
            assert np.array_equal(fns.hypot_of(x, y), np.hypot(x, y), equal_nan=True)
    x = np.full(17, info.max, dtype)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        np.hypot(x, x)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        fns.hypot_of(x, x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_negligible_part_raises_nothing_and_gives_numpys_bits_at_every_exponent(fns, dtype):
    # The float64 hypot computes its correction with the smaller part even where that part
    # is negligible (a gap of 54 to 60 binary orders) and chooses the sum after; that work
    # must raise no flag, from the largest finite values down to subnormal ones.
    info = np.finfo(dtype)
    exponents = np.arange(info.minexp, info.maxexp, 7, dtype=np.float64)
    gaps = np.arange(48, 66, dtype=np.float64)
    e, g = (a.ravel() for a in np.meshgrid(exponents, gaps))
    big = (1.6180339887 * np.exp2(e)).astype(dtype)
    small = (1.4142135623 * np.exp2(e - g)).astype(dtype)
    x = np.concatenate([big, -small, [0.0, -0.0]]).astype(dtype)
    y = np.concatenate([small, big, [0.0, 0.0]]).astype(dtype)
    # A reduction's chain: each step adds a part negligible beside what came before.
    chain = np.concatenate([[info.max / 4], small[small < info.max / 2**60]]).astype(dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        assert_agree(fns.hypot_of(x, y), np.hypot(x, y), ULPS, f"hypot {dtype}, negligible parts")
        assert_agree(fns.hypot_of.reduce(chain), np.hypot.reduce(chain), ULPS,
                     f"hypot.reduce {dtype}, negligible parts")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reductions_accumulations_and_at_take_the_scalar_variant_with_the_same_bits_and_flags(fns, dtype):
    # A .reduce, an .accumulate and each element of a .at call hypot's variant for scalar code
    # (branches where the vector code masks): NumPy's bits over every exponent and special
    # value, and no flag NumPy's hypot does not raise.
    x, y = _pairs(dtype, np.random.default_rng(36))
    ordinary = np.isfinite(x) & (np.abs(x) < np.finfo(dtype).max / 4)
    with np.errstate(all="ignore"):
        for values in (x, y, x[::-7], np.concatenate([x[ordinary][:4000], y[-400:]])):
            assert_agree(fns.hypot_of.accumulate(values), np.hypot.accumulate(values), ULPS,
                         f"hypot.accumulate {dtype}")
            assert_agree(np.asarray(fns.hypot_of.reduce(values)), np.asarray(np.hypot.reduce(values)),
                         ULPS, f"hypot.reduce {dtype}")
        rows = y[:60_000].reshape(-1, 12)
        assert_agree(fns.hypot_of.reduce(rows, axis=1), np.hypot.reduce(rows, axis=1), ULPS,
                     f"hypot.reduce {dtype} of rows")
        assert_agree(fns.hypot_of.accumulate(rows, axis=1), np.hypot.accumulate(rows, axis=1), ULPS,
                     f"hypot.accumulate {dtype} of rows")
        indices = np.random.default_rng(38).integers(0, 1000, x.size)
        mine, numpys = y[:1000].copy(), y[:1000].copy()
        fns.hypot_of.at(mine, indices, x)
        np.hypot.at(numpys, indices, x)
        assert_agree(mine, numpys, ULPS, f"hypot.at {dtype}")
    small = np.random.default_rng(37).uniform(-1e3, 1e3, 5000).astype(dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        assert_agree(fns.hypot_of.accumulate(small), np.hypot.accumulate(small), ULPS,
                     f"hypot.accumulate {dtype}, raising nothing")
        mine, numpys = small[:100].copy(), small[:100].copy()
        fns.hypot_of.at(mine, np.arange(5000) % 100, small)
        np.hypot.at(numpys, np.arange(5000) % 100, small)
        assert_agree(mine, numpys, ULPS, f"hypot.at {dtype}, raising nothing")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_device_path_computes_the_host_loops_bits(fns, dtype):
    x, y = _pairs(dtype, np.random.default_rng(37))
    x, y = x[:20_000], y[:20_000]
    with np.errstate(all="ignore"):
        host = fns.hypot_of(x, y)
        on_device = fns.hypot_of(device.to_device(x), device.to_device(y)).copy_to_host()
    assert np.array_equal(host.view(f"u{host.itemsize}"), on_device.view(f"u{host.itemsize}"))
