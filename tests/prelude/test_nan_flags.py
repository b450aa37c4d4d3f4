"""min, max, clamp, sign, fmin and fmax of floats (src/include/ufuncgen/prelude.h) raise no
floating-point flag for a NaN, quiet or signalling, as np.minimum, np.maximum, np.clip,
np.sign, np.fmin and np.fmax raise none.  test_agreement.py compares values with every flag
ignored; here bodies calling them run under np.errstate(all="raise") on NaN (with payloads),
+-Inf and +-0.0, in a vector loop and its tail, contiguous and strided, and must give NumPy's
bits and NumPy's flags (none), on the host and through the device path."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from ufuncgen import device

from .test_agreement import NVCC, _generated_kernels, _nvcc_ptx

ON_GPU = device.backend() == "cuda" and device.is_available()
FLOATS = ["float16", "float32", "float64"]

TYPES_1 = ", ".join(f"{t}({t})" for t in FLOATS)
TYPES_2 = ", ".join(f"{t}({t}, {t})" for t in FLOATS)
TYPES_3 = ", ".join(f"{t}({t}, {t}, {t})" for t in FLOATS)

# Classification, as NumPy's own (isnormal and fpclassify have none: from isfinite and the
# smallest normal), and C99's quiet comparisons (false where either is NaN).
# A float16 body sees a float: a float16 subnormal is a normal float there.
def _isnormal(x):
    x = x.astype(np.float32) if x.dtype == np.float16 else x
    return np.isfinite(x) & (np.abs(x) >= np.finfo(x.dtype).tiny)


def _fpclassify(x):      # glibc's FP_NAN, FP_INFINITE, FP_ZERO, FP_SUBNORMAL, FP_NORMAL
    x = x.astype(np.float32) if x.dtype == np.float16 else x
    return np.select([np.isnan(x), np.isinf(x), x == 0, np.abs(x) < np.finfo(x.dtype).tiny],
                     [0, 1, 2, 3], 4)


CLASSIFY = {"isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite,
            "signbit": np.signbit, "isnormal": _isnormal, "fpclassify": _fpclassify}
COMPARE = {"isless": np.less, "isgreater": np.greater, "islessequal": np.less_equal,
           "isgreaterequal": np.greater_equal,
           "islessgreater": lambda a, b: np.less(a, b) | np.greater(a, b),
           "isunordered": lambda a, b: np.isnan(a) | np.isnan(b)}

SIGNATURES = "".join(f"""\
ufunc {name}_of(a, b) -> y
    types: {TYPES_2}
{{
    y = {name}(a, b);
}}

""" for name in ("min", "max", "fmin", "fmax")) + f"""\
ufunc clamp_of(x, lo, hi) -> y
    types: {TYPES_3}
{{
    y = clamp(x, lo, hi);
}}

ufunc clamp_to_half(x) -> y
    types: {TYPES_1}
{{
    y = clamp(x, (T)-0.5, (T)0.5);
}}

ufunc max_with_half(x) -> y
    types: {TYPES_1}
{{
    y = max(x, (T)0.5);
}}

ufunc sign_of(x) -> y
    types: {TYPES_1}
{{
    y = sign(x);
}}
""" + "".join(f"""\
ufunc {name}_of(x) -> y
    types: {", ".join(f"int32({t})" for t in FLOATS)}
{{
    y = {name}(x);
}}

""" for name in CLASSIFY) + "".join(f"""\
ufunc {name}_of(a, b) -> y
    types: {", ".join(f"int32({t}, {t})" for t in FLOATS)}
{{
    y = {name}(a, b);
}}

""" for name in COMPARE)


@pytest.fixture(scope="module")
def fns(tmp_path_factory, module_importer, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("nan_flags"), "ufg_nan_flags", SIGNATURES,
                           "--cuda-arch", device_cuda_arch)


def _unsigned(dtype):
    return np.dtype(f"u{np.dtype(dtype).itemsize}")


def _bits(a):
    return np.ascontiguousarray(a).view(_unsigned(a.dtype))


# Quiet NaNs of either sign with payloads, and a signalling NaN, as bits.
NANS = {
    "float16": [0x7E00, 0xFE00, 0x7E01, 0xFE02, 0x7D01],
    "float32": [0x7FC00000, 0xFFC00000, 0x7FC00001, 0xFFC00002, 0x7FA00001],
    "float64": [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001,
                0xFFF8000000000002, 0x7FF4000000000001],
}


def _values(t):
    info = np.finfo(t)
    ordinary = np.array([0.0, -0.0, 1.0, -1.0, 0.5, -2.5, np.inf, -np.inf, float(info.max),
                         -float(info.max), float(info.smallest_subnormal)], dtype=t)
    nans = np.array(NANS[t], dtype=_unsigned(t)).view(t)
    return np.concatenate([ordinary, nans])


def _with_a_tail(columns, t):
    """The columns repeated to three times their length and 13 more: a vector loop and a
    scalar tail (and, every third element, a strided loop) all meet every combination."""
    return [np.resize(np.array(c, dtype=t), 3 * len(c) + 13) for c in columns]


def _pairs(t):
    """Every value against every value."""
    return _with_a_tail(zip(*itertools.product(_values(t), repeat=2)), t)


def _triples(t):
    """Every value between a few bounds, NaN among them, in every order."""
    values = _values(t)
    bounds = values[[0, 1, 2, 4, 6, 7, -1]]
    return _with_a_tail(zip(*itertools.product(values, bounds, bounds)), t)


def _run(fn, *arrays):
    """fn(*arrays) under np.errstate(all="raise"): (result, None), or (None, the error)."""
    with np.errstate(all="raise"):
        try:
            return fn(*arrays), None
        except FloatingPointError as error:
            return None, str(error)


def _assert_same(got, want, *, both_nan=None, what=""):
    """Same bits; where `both_nan` (both operands NaN and NumPy returns either, quieted or
    not) any NaN."""
    assert got.dtype == want.dtype and got.shape == want.shape, what
    same = _bits(got) == _bits(want)
    if both_nan is not None:
        same |= both_nan & np.isnan(got) & np.isnan(want)
    bad = ~same
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} differ, first {got[bad][:4]} "
                           f"({[hex(b) for b in _bits(got)[bad][:4]]}), expected {want[bad][:4]} "
                           f"({[hex(b) for b in _bits(want)[bad][:4]]})")


def _second_of_two_zeros(reference):
    """NumPy's function, but of +0.0 and -0.0 the second, as the prelude always gives it
    (README): NumPy's float32 and float64 vector loops do, its float16 loops and its scalar
    fmin and fmax give the first."""
    def fn(a, b):
        out = reference(a, b)
        zeros = (a == 0) & (b == 0)
        out[zeros] = np.broadcast_to(b, out.shape)[zeros]
        return out
    return fn


def _nan_ignored(reference):
    """NumPy's fmin or fmax, but of a NaN and a number always the number, as the prelude
    gives it (README): NumPy's vector loops do, its scalar ones (strided calls, tails) call
    libm, whose fmax of a signalling NaN is NaN."""
    def fn(a, b):
        out = reference(a, b)
        a_nan, b_nan = np.isnan(a), np.isnan(b)
        out[a_nan & ~b_nan] = b[a_nan & ~b_nan]
        out[b_nan & ~a_nan] = a[b_nan & ~a_nan]
        return out
    return fn


MINIMUM, MAXIMUM = _second_of_two_zeros(np.minimum), _second_of_two_zeros(np.maximum)
TWO = [("min_of", MINIMUM, np.minimum, False), ("max_of", MAXIMUM, np.maximum, False),
       ("fmin_of", _nan_ignored(_second_of_two_zeros(np.fmin)), np.fmin, True),
       ("fmax_of", _nan_ignored(_second_of_two_zeros(np.fmax)), np.fmax, True)]


def _clip(x, lo, hi):
    return MINIMUM(MAXIMUM(x, lo), hi)


def _cases_2():
    return [pytest.param(name, reference, numpys, payload_free, t, id=f"{name}-{t}")
            for name, reference, numpys, payload_free in TWO for t in FLOATS]


@pytest.mark.parametrize("name, reference, numpys, payload_free, t", _cases_2())
def test_two_argument_functions_raise_what_numpy_raises_and_give_its_bits(
        fns, name, reference, numpys, payload_free, t):
    x, y = _pairs(t)
    fn = getattr(fns, name)
    # np.fmin and np.fmax of two NaNs return either, quieted or not, by loop: any NaN then.
    both_nan = np.isnan(x) & np.isnan(y) if payload_free else None
    for sl in (slice(None), slice(None, None, 3), slice(None, None, -1)):
        _, numpy_error = _run(numpys, x[sl], y[sl])
        got, error = _run(fn, x[sl], y[sl])
        assert error == numpy_error, f"{name}({t}) raised {error!r}, NumPy {numpy_error!r}"
        with np.errstate(all="raise"):
            want = reference(x[sl], y[sl])
        _assert_same(got, want, both_nan=None if both_nan is None else both_nan[sl],
                     what=f"{name}({t})[{sl}]")


@pytest.mark.parametrize("t", FLOATS)
def test_clamp_raises_what_np_clip_raises_and_gives_its_bits(fns, t):
    x, lo, hi = _triples(t)
    clipped, numpy_error = _run(np.clip, x, lo, hi)
    got, error = _run(fns.clamp_of, x, lo, hi)
    assert numpy_error is None and error is None, error
    # np.clip is minimum(maximum(x, lo), hi): the first NaN of x, lo and hi, if any.
    with np.errstate(all="raise"):
        want = _clip(x, lo, hi)
    _assert_same(got, want, what=f"clamp({t})")
    two_zeros = ((x == 0) & (lo == 0)) | ((lo == 0) & (hi == 0)) | ((x == 0) & (hi == 0))
    _assert_same(got[~two_zeros], clipped[~two_zeros], what=f"clamp({t}) vs np.clip")


@pytest.mark.parametrize("t", FLOATS)
def test_clamp_and_max_against_constants_raise_nothing_for_a_nan(fns, t):
    x = np.resize(_values(t), 5 * len(_values(t)) + 3)
    half = np.array(0.5, dtype=t)
    for fn, reference in ((fns.clamp_to_half, lambda v: np.clip(v, -half, half)),
                          (fns.max_with_half, lambda v: np.maximum(v, half))):
        # No zero bound: NumPy's values whatever its rule for two zeros.
        want, numpy_error = _run(reference, x)
        got, error = _run(fn, x)
        assert numpy_error is None and error is None, error
        _assert_same(got, want, what=f"{fn.__name__}({t})")


@pytest.mark.parametrize("t", FLOATS)
def test_sign_raises_what_np_sign_raises_and_gives_its_bits(fns, t):
    x = np.resize(_values(t), 5 * len(_values(t)) + 3)
    for sl in (slice(None), slice(None, None, 2)):
        want, numpy_error = _run(np.sign, x[sl])
        got, error = _run(fns.sign_of, x[sl])
        assert numpy_error is None and error is None, error
        _assert_same(got, want, what=f"sign({t})[{sl}]")


def test_a_body_taking_the_max_of_a_nan_and_a_constant_warns_of_nothing(fns):
    x = np.array([np.nan, 1.0], dtype=np.float32)
    with np.errstate(invalid="raise"):
        got = fns.max_with_half(x)
    assert np.isnan(got[0]) and got[1] == 1.0


def _on_device(fn, *arrays):
    with np.errstate(all="raise"):
        return fn(*[device.to_device(a) for a in arrays]).copy_to_host()


@pytest.mark.parametrize("t", FLOATS)
def test_the_device_path_gives_numpys_values_for_nan_inf_and_signed_zeros(fns, t):
    """The device reports no flags (a GPU has none); its values are the host's, NaN payloads
    included but on a GPU."""
    x, y = _pairs(t)
    lo_hi = _triples(t)
    for name, reference, _, payload_free in TWO:
        with np.errstate(all="ignore"):
            want = reference(x, y)
        both_nan = np.isnan(x) & np.isnan(y)
        _assert_same(_on_device(getattr(fns, name), x, y), want,
                     both_nan=both_nan if payload_free or ON_GPU else None,
                     what=f"{name}({t}) on {device.backend()}")
    with np.errstate(all="ignore"):
        clipped, signs = _clip(*lo_hi), np.sign(x)
    any_nan = np.isnan(lo_hi[0]) | np.isnan(lo_hi[1]) | np.isnan(lo_hi[2])
    _assert_same(_on_device(fns.clamp_of, *lo_hi), clipped,
                 both_nan=any_nan if ON_GPU else None, what=f"clamp({t}) on the device")
    _assert_same(_on_device(fns.sign_of, x), signs,
                 both_nan=np.isnan(x) if ON_GPU else None, what=f"sign({t}) on the device")


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit)")
def test_nvcc_compiles_these_bodies_for_every_float_type(fns, tmp_path):
    ptx = _nvcc_ptx(_generated_kernels(fns), tmp_path)
    for name in ("min_of", "max_of", "fmin_of", "fmax_of", "clamp_of", "sign_of",
                 *(f"{n}_of" for n in (*CLASSIFY, *COMPARE))):
        for t in FLOATS:
            assert f"ufg_kernel_{name}_{t}" in ptx, (name, t)


@pytest.mark.parametrize("name, t", [pytest.param(n, t, id=f"{n}-{t}") for n in CLASSIFY
                                     for t in FLOATS])
def test_classification_raises_what_numpy_raises_and_gives_an_int_0_or_1(fns, name, t):
    """isnan and isfinite were vectorized with comparisons that raise invalid for a NaN, and
    isinf(-inf) and signbit were -1 and the sign bit itself in scalar code; np.isnan,
    np.isinf, np.isfinite and np.signbit raise nothing and give True."""
    x = np.resize(_values(t), 5 * len(_values(t)) + 3)
    numpys = CLASSIFY[name]
    for sl in (slice(None), slice(None, None, 3)):
        want, numpy_error = _run(numpys, x[sl])
        got, error = _run(getattr(fns, f"{name}_of"), x[sl])
        assert error == numpy_error is None, f"{name}({t}) raised {error!r}, NumPy {numpy_error!r}"
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got, want.astype(np.int32), err_msg=f"{name}({t})[{sl}]")
        np.testing.assert_array_equal(_on_device(getattr(fns, f"{name}_of"), x[sl]), got,
                                      err_msg=f"{name}({t}) on {device.backend()}")


@pytest.mark.parametrize("name, t", [pytest.param(n, t, id=f"{n}-{t}") for n in COMPARE
                                     for t in FLOATS])
def test_the_quiet_comparisons_raise_nothing_for_any_nan(fns, name, t):
    x, y = _pairs(t)
    got, error = _run(getattr(fns, f"{name}_of"), x, y)
    assert error is None, f"{name}({t}) raised {error!r}"
    with np.errstate(all="ignore"):
        want = COMPARE[name](x, y).astype(np.int32)
    np.testing.assert_array_equal(got, want, err_msg=f"{name}({t})")
    np.testing.assert_array_equal(_on_device(getattr(fns, f"{name}_of"), x, y), want,
                                  err_msg=f"{name}({t}) on {device.backend()}")
