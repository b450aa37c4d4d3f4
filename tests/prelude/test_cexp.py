"""exp of a complex (src/include/ufuncgen/prelude.h, ufg_cexp_d and ufg_cexp_f): computed inline
so that a loop calling it vectorizes with the vector exp, sin and cos, and still NumPy's values
and floating-point errors.  NumPy calls the C library's cexp; the prelude follows glibc's
formula, so a scalar run (the simulator) gives glibc's bits in complex128, the vector loops are
within the vector functions' few ULP, and every special value and every flag NumPy reports is
glibc's.  complex64 computes in double and rounds once."""
from __future__ import annotations

import itertools
import platform

import numpy as np
import pytest

from ufuncgen import device

from .ulps import assert_agree, ulp_distance

SIGNATURES = """\
ufunc cexp_of(z) -> w
    types: complex64(complex64), complex128(complex128)
{
    w = exp(z);
}

ufunc rotate(z, angle) -> w
    types: complex64(complex64, float32), complex128(complex128, float64)
{
    w = z * exp(I * angle);
}
"""

# Per part, against NumPy's (glibc's cexp): the vector exp, sin and cos are each within 3 ULP
# of glibc's in double, and their product within 6; complex64, computed in double and rounded
# once, lands within 2 ULP of cexpf's float arithmetic.
VECTOR_ULPS = {"complex64": 2, "complex128": 6}
TYPICAL_ULPS = {"complex64": 1, "complex128": 2}
# A scalar run is glibc's formula with glibc's functions: its bits in double.
GLIBC = platform.machine() in ("x86_64", "AMD64") and platform.libc_ver()[0] == "glibc"
SCALAR_ULPS = {"complex64": 2, "complex128": 0 if GLIBC else 6}
TYPES = ["complex64", "complex128"]


@pytest.fixture(scope="module")
def fns(tmp_path_factory, module_importer, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("cexp"), "ufg_cexp_module", SIGNATURES,
                           "--cuda-arch", device_cuda_arch)


def _specials(t):
    """Real or imaginary parts where glibc takes another path: zeros, infinities, NaNs, values
    whose exp overflows or underflows (and the x > 709 rescue), tiny, huge and near pi/2."""
    info = np.finfo(np.dtype(t).type(0).real.dtype)
    return [0.0, -0.0, 1.0, -1.0, 0.5, 88.5, 89.0, 100.0, -100.0, 700.0, 709.5, 710.0, 750.0,
            1400.0, 1500.0, -750.0, -800.0, float(info.tiny), float(info.smallest_subnormal),
            -float(info.smallest_subnormal), float(info.max), -float(info.max), np.pi / 2, 1e22,
            np.inf, -np.inf, np.nan, -np.nan]


def _special_pairs(t):
    parts = _specials(t)
    part = np.dtype(t).type(0).real.dtype
    with np.errstate(all="ignore"):
        re, im = (np.array(v, dtype=part) for v in zip(*itertools.product(parts, repeat=2)))
    z = np.empty(re.size, dtype=t)
    z.real, z.imag = re, im
    return z


def _ordinary(t, rng, n=100_003):
    """Random values in the ranges people use (phases of any size, moderate magnitudes) and
    near where exp overflows."""
    part = np.dtype(t).type(0).real.dtype
    top = 88.0 if t == "complex64" else 709.0
    re = np.concatenate([rng.uniform(-20, 20, n), rng.uniform(top - 30, top + 20, n // 10)])
    im = np.concatenate([rng.uniform(-1e4, 1e4, n), rng.uniform(-4, 4, n // 10)])
    z = np.empty(re.size, dtype=t)
    z.real, z.imag = re.astype(part), im.astype(part)
    return z


def _special_results(want):
    """Where a part of NumPy's result is Inf, NaN or zero: those are exact, not rounded."""
    parts = np.ascontiguousarray(want).view(want.real.dtype)
    return ~np.isfinite(parts) | (parts == 0)


@pytest.mark.parametrize("t", TYPES)
def test_special_values_are_numpys_bit_for_bit(fns, t):
    z = _special_pairs(t)
    with np.errstate(all="ignore"):
        got, want = fns.cexp_of(z), np.exp(z)
    exact = _special_results(want)
    got_parts, want_parts = got.view(got.real.dtype), want.view(want.real.dtype)
    assert_agree(got_parts[exact], want_parts[exact], 0, f"exp({t}) where NumPy's is special")
    assert_agree(got_parts[~exact], want_parts[~exact], VECTOR_ULPS[t],
                 f"exp({t}) of special pairs, elsewhere")


@pytest.mark.parametrize("t", TYPES)
def test_ordinary_values_are_within_the_stated_ulps_of_numpys(fns, t):
    z = _ordinary(t, np.random.default_rng(7))
    with np.errstate(all="ignore"):
        got, want = fns.cexp_of(z), np.exp(z)
    assert_agree(got, want, VECTOR_ULPS[t], f"exp({t}) vs np.exp")
    # The bound is the tail: measured, 99.8% (complex64) and 96% (complex128) of the parts
    # are within 1 and 2 ULP of NumPy's.
    distance = ulp_distance(got.view(got.real.dtype), want.view(want.real.dtype))
    assert (distance <= TYPICAL_ULPS[t]).mean() > 0.95, np.bincount(distance.astype(int))


@pytest.mark.parametrize("t", TYPES)
def test_a_scalar_run_in_the_simulator_is_glibcs_formula(fns, t):
    z = np.concatenate([_ordinary(t, np.random.default_rng(8), 20_001), _special_pairs(t)])
    with np.errstate(all="ignore"):
        simulated = fns.cexp_of(device.to_device(z)).copy_to_host()
        want = np.exp(z)
    if device.backend() != "sim":
        pytest.skip("the scalar formula runs in the simulator; a GPU computes with libcu++")
    assert_agree(simulated, want, SCALAR_ULPS[t], f"exp({t}) in the simulator vs np.exp")


def _errors(fn, z):
    """The floating-point errors a call reports, as np.errstate's callback names them."""
    seen = set()
    with np.errstate(all="call", call=lambda kind, flag: seen.add(kind)):
        fn(z)
    return seen


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("length", [1, 67])
def test_each_special_pair_reports_the_errors_numpy_reports(fns, t, length):
    """One pair a call, alone (the scalar tail) and as a whole vector of it."""
    mismatched = []
    for value in _special_pairs(t):
        z = np.full(length, value, dtype=t)
        ours, numpys = _errors(fns.cexp_of, z), _errors(np.exp, z)
        ours.discard("underflow"), numpys.discard("underflow")
        if ours != numpys:
            mismatched.append((complex(value), sorted(ours), sorted(numpys)))
    assert not mismatched, mismatched[:5]


@pytest.mark.parametrize("t", TYPES)
def test_a_vector_that_meets_one_special_pair_reports_its_error_and_keeps_the_rest(fns, t):
    z = _ordinary(t, np.random.default_rng(9), 1_001)[:1_000]
    z[517] = complex(1.0, np.inf)
    with np.errstate(invalid="raise"):
        with pytest.raises(FloatingPointError, match="invalid"):
            fns.cexp_of(z)
    with np.errstate(invalid="ignore"):
        got, want = fns.cexp_of(z), np.exp(z)
    assert np.isnan(got[517].real) and np.isnan(got[517].imag)
    assert_agree(np.delete(got, 517), np.delete(want, 517), VECTOR_ULPS[t], f"exp({t}) beside it")


@pytest.mark.parametrize("t", TYPES)
def test_rotating_by_an_angle_is_numpys_rotation(fns, t):
    rng = np.random.default_rng(10)
    n = 50_001
    part = np.dtype(t).type(0).real.dtype
    z = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(t)
    angle = rng.uniform(-50, 50, n).astype(part)
    got, want = fns.rotate(z, angle), z * np.exp(1j * angle.astype(t))
    # A product after the exp: within a few ULP of |z|, part by part.
    eps = np.finfo(part).eps
    assert (np.abs(got - want) <= 8 * eps * np.abs(z)).all()
