"""One body, one meaning (src/include/ufuncgen/prelude.h): a corpus of small bodies, one per
name a body may call × every element type it takes, built once and run on the same edge values
by the host loops and by the device path (the simulator here, the GPU under
UFUNCGEN_DEVICE=cuda), compared with each other bit for bit (or within the ULP bounds below),
and with NumPy or plain Python as the independent reference."""
from __future__ import annotations

import ctypes
import ctypes.util
import itertools
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from ufuncgen import device
from ufuncgen.gen import generate

from .ulps import assert_agree


INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
SIGNED = ["int8", "int16", "int32", "int64"]
FLOATS = ["float32", "float64"]
COMPLEX = ["complex64", "complex128"]
BACKEND = device.backend()
ON_GPU = BACKEND == "cuda" and device.is_available()


@dataclass(frozen=True)
class Case:
    """One corpus function: `body` over `arity` inputs of type T (or `inputs` when given), for
    each of `types`; `reference(*arrays)` is what NumPy or Python computes."""
    name: str
    body: str
    arity: int
    types: tuple
    reference: object
    output: str | None = None       # the output type, when it is not T
    libm: bool = False              # a libm function: host and device may differ by ULPS[...]
    numpy_rounds: bool = False      # NumPy's own loop rounds otherwise (an FMA, another
                                    # formula): host and device agree bit for bit, NumPy
                                    # within REFERENCE_ULPS
    normwise: bool = False          # complex results whose parts may cancel: the reference
                                    # within NORMWISE_EPS * |reference|
    ulps: tuple = ()                # (part type, ULPs): a libm bound of its own, for host vs
                                    # device and host vs reference alike


def _wrapped(values, dtype):
    """Python integers wrapped into dtype, as two's complement arithmetic gives them."""
    info = np.iinfo(dtype)
    span = 1 << info.bits
    return np.array([((v - int(info.min)) % span) + int(info.min) for v in values], dtype=dtype)


def _int_pow(base, exponent):
    out = []
    for b, e in zip(base.tolist(), exponent.tolist()):
        if e < 0:
            out.append(1 if b == 1 else ((-1 if e & 1 else 1) if b == -1 else 0))
        else:
            out.append(pow(b, e, 1 << 64))
    return _wrapped(out, base.dtype)


def _c_quotient(a, b):
    """C's integer a / b (truncated toward 0), 0 for b = 0: the prelude's ufg_div."""
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _c_remainder(a, b):
    """C's integer a % b (the dividend's sign), 0 for b = 0: the prelude's ufg_rem."""
    return 0 if b == 0 else a - b * _c_quotient(a, b)


def _by_python(op):
    def reference(*arrays):
        dtype = arrays[0].dtype
        return _wrapped([op(*vals) for vals in zip(*(a.tolist() for a in arrays))], dtype)
    return reference


def _as_double(fn):
    return lambda *arrays: fn(*(a.astype(np.float64) for a in arrays))


def _int32(fn):
    return lambda *arrays: fn(*arrays).astype(np.int32)


def _as_float(x):
    """A float array as it is, an integer one as doubles (the classification of an integer)."""
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def _in_double_int32(fn):
    """A comparison in the type of a + b: floats as they are, integers in double."""
    return lambda a, b: fn(_as_float(a), _as_float(b)).astype(np.int32)


FP_NAN, FP_INFINITE, FP_ZERO, FP_SUBNORMAL, FP_NORMAL = range(5)    # glibc's


def _fpclassify(x):
    with np.errstate(all="ignore"):
        return np.select([np.isnan(x), np.isinf(x), x == 0, np.abs(x) < np.finfo(x.dtype).tiny],
                         [FP_NAN, FP_INFINITE, FP_ZERO, FP_SUBNORMAL], FP_NORMAL).astype(np.int32)


def _exponent(k, of_zero):
    """logb of an integer's double value: its binary exponent, of_zero for 0."""
    mantissa, exponent = np.frexp(k.astype(np.float64))
    return np.where(mantissa == 0, of_zero, exponent - 1.0)


LIBM = ctypes.CDLL(ctypes.util.find_library("m"))


def _by_libm(name, order=None):
    """glibc's double function (jn and yn: of order `order`) of each element's double value,
    rounded once to the element type (double for an integer)."""
    fn = getattr(LIBM, name)
    fn.restype = ctypes.c_double
    fn.argtypes = [ctypes.c_double] if order is None else [ctypes.c_int, ctypes.c_double]
    args = () if order is None else (order,)

    def reference(x):
        out = np.array([fn(*args, v) for v in x.astype(np.float64).tolist()])
        return out.astype(x.dtype if x.dtype.kind == "f" else np.float64)
    return reference


CORPUS = [
    Case("abs_", "y = abs(x0);", 1, tuple(INTS + FLOATS),
         lambda x: np.abs(x) if x.dtype.kind != "u" else x.copy()),
    Case("sign_", "y = sign(x0);", 1, tuple(INTS + FLOATS), np.sign),
    Case("min_", "y = min(x0, x1);", 2, tuple(INTS + FLOATS), np.minimum),
    Case("max_", "y = max(x0, x1);", 2, tuple(INTS + FLOATS), np.maximum),
    Case("clamp_", "y = clamp(x0, x1, x2);", 3, tuple(INTS + FLOATS),
         lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)),
    Case("ipow", "y = pow(x0, x1);", 2, tuple(INTS), _int_pow),
    Case("fpow", "y = pow(x0, x1);", 2, tuple(FLOATS), np.power, libm=True),
    # An integer literal exponent keeps the float type (<tgmath.h> alone would compute in double).
    Case("square", "y = pow(x0, 2);", 1, tuple(FLOATS), lambda x: np.power(x, x.dtype.type(2)),
         libm=True),
    Case("fabs_", "y = fabs(x0);", 1, tuple(FLOATS), np.fabs),
    Case("fmin_", "y = fmin(x0, x1);", 2, tuple(FLOATS), np.fmin),
    Case("fmax_", "y = fmax(x0, x1);", 2, tuple(FLOATS), np.fmax),
    Case("copysign_", "y = copysign(x0, x1);", 2, tuple(FLOATS), np.copysign),
    Case("fmod_", "y = fmod(x0, x1);", 2, tuple(FLOATS), np.fmod),
    Case("hypot_", "y = hypot(x0, x1);", 2, tuple(FLOATS), np.hypot, numpy_rounds=True),
    Case("hypot_one", "y = hypot(x0, 1);", 1, tuple(FLOATS),
         lambda x: np.hypot(x, x.dtype.type(1)), numpy_rounds=True),
    Case("atan2_", "y = atan2(x0, x1);", 2, tuple(FLOATS), np.arctan2, libm=True),
    Case("floor_", "y = floor(x0);", 1, tuple(FLOATS), np.floor),
    Case("ceil_", "y = ceil(x0);", 1, tuple(FLOATS), np.ceil),
    Case("trunc_", "y = trunc(x0);", 1, tuple(FLOATS), np.trunc),
    Case("rint_", "y = rint(x0);", 1, tuple(FLOATS), np.rint),
    Case("sqrt_", "y = sqrt(x0);", 1, tuple(FLOATS), np.sqrt),
    Case("exp_", "y = exp(x0);", 1, tuple(FLOATS), np.exp, libm=True),
    Case("log_", "y = log(x0);", 1, tuple(FLOATS), np.log, libm=True),
    Case("sin_", "y = sin(x0);", 1, tuple(FLOATS), np.sin, libm=True),
    Case("tanh_", "y = tanh(x0);", 1, tuple(FLOATS), np.tanh, libm=True),
    Case("pi_times", "y = x0 * PI;", 1, tuple(FLOATS), lambda x: x * x.dtype.type(np.pi)),
    # <math.h> functions of integers compute in double.
    Case("sqrt_of_int", "y = sqrt(x0);", 1, tuple(INTS), _as_double(np.sqrt),
         output="float64"),
    Case("fabs_of_int", "y = fabs(x0);", 1, tuple(INTS), _as_double(np.fabs),
         output="float64"),
    Case("floor_of_int", "y = floor(x0);", 1, tuple(INTS), _as_double(np.floor),
         output="float64"),
    # Signed arithmetic wraps, as NumPy's integer loops do.
    Case("wrap_add", "y = x0 + x1;", 2, tuple(SIGNED), _by_python(lambda a, b: a + b)),
    Case("wrap_mul", "y = x0 * x1;", 2, tuple(SIGNED), _by_python(lambda a, b: a * b)),
    Case("wrap_neg", "y = -x0;", 1, tuple(SIGNED), _by_python(lambda a: -a)),
    Case("wrap_increment_compares", "y = (T)(x0 + 1 > x0);", 1, ("int32", "int64"),
         lambda x: (x != np.iinfo(x.dtype).max).astype(x.dtype)),
    # Integer division is total (gen/operators.py): C's quotient and remainder, 0 for a divisor
    # of 0 and INT_MIN / -1 wrapping to INT_MIN, as NumPy's integer loops give them.
    Case("idiv", "y = x0 / x1;", 2, tuple(INTS), _by_python(lambda a, b: _c_quotient(a, b))),
    Case("irem", "y = x0 % x1;", 2, tuple(INTS), _by_python(lambda a, b: _c_remainder(a, b))),
    Case("idiv_chain", "y = x0 % 1000 * 3 / x1 % (x0 - 1);", 2, ("int32", "int64", "uint16"),
         _by_python(lambda a, b: _c_remainder(_c_quotient(_c_remainder(a, 1000) * 3, b), a - 1))),
    Case("idiv_assign", "T q = x0, r = x1; q /= x1; r %= (x0 & 7); y = q + r;", 2,
         ("int8", "int64", "uint32"),
         _by_python(lambda a, b: _c_quotient(a, b) + _c_remainder(b, a & 7))),
    # Complex numbers (ufuncgen/complex.h): C's operators under -fcx-fortran-rules, the C99
    # complex functions.  NumPy's multiply fuses a product into an FMA on AVX2 machines and
    # its division is another form of Smith's formula; a real operand touches only the parts
    # it meets, as in C.
    Case("cadd", "y = x0 + x1;", 2, tuple(COMPLEX), np.add),
    Case("csub", "y = x0 - x1;", 2, tuple(COMPLEX), np.subtract),
    Case("cmul", "y = x0 * x1;", 2, tuple(COMPLEX), lambda a, b: _plain_product(a, b)),
    Case("cdiv", "y = x0 / x1;", 2, tuple(COMPLEX), lambda a, b: _smith_quotient(a, b)),
    Case("cneg", "y = -x0;", 1, tuple(COMPLEX), np.negative),
    Case("cscale", "y = x0 * 2 + 1;", 1, tuple(COMPLEX),
         lambda z: _complex(z.real * 2 + 1, z.imag * 2, z.dtype)),
    Case("cconj", "y = conj(x0);", 1, tuple(COMPLEX), np.conj),
    Case("cunit", "y = x0 * I;", 1, tuple(COMPLEX),
         lambda z: _plain_product(z, np.full_like(z, 1j))),
    Case("creal", "y = real(x0);", 1, tuple(COMPLEX), np.real, output="part"),
    Case("cimag", "y = imag(x0);", 1, tuple(COMPLEX), np.imag, output="part"),
    Case("cabs", "y = abs(x0);", 1, tuple(COMPLEX), np.abs, output="part", numpy_rounds=True),
    Case("cfabs", "y = fabs(x0);", 1, tuple(COMPLEX), np.abs, output="part", numpy_rounds=True),
    Case("carg", "y = arg(x0);", 1, tuple(COMPLEX), np.angle, output="part", libm=True),
    # exp of a complex is the prelude's, from the vector exp, sin and cos (test_cexp.py).
    Case("cexp", "y = exp(x0);", 1, tuple(COMPLEX), np.exp, libm=True,
         ulps=(("float32", 4), ("float64", 6))),
    Case("clog", "y = log(x0);", 1, tuple(COMPLEX), np.log, libm=True),
    Case("csqrt", "y = sqrt(x0);", 1, tuple(COMPLEX), np.sqrt, libm=True),
    Case("csin", "y = sin(x0);", 1, tuple(COMPLEX), np.sin, libm=True),
    # C99 defines cpow as cexp(y clog x) (on ordinary values: the special ones are libm's own);
    # NumPy's power has other special values and multiplies out small integer exponents.
    Case("cpow", "y = pow(x0, x1);", 2, tuple(COMPLEX), lambda x, y: np.exp(y * np.log(x)),
         libm=True, normwise=True),
    Case("real_parts", "y = real(x0) + imag(x0) + conj(x0);", 1, tuple(FLOATS),
         lambda x: (x + x.dtype.type(0)) + x),
    # Classification and the quiet comparisons: an int 0 or 1 (fpclassify: glibc's FP_*), as
    # NumPy's isnan, isinf, isfinite and signbit; of an integer, that of its double value.
    Case("isnan_", "y = isnan(x0);", 1, tuple(INTS + FLOATS), _int32(np.isnan), output="int32"),
    Case("isinf_", "y = isinf(x0);", 1, tuple(INTS + FLOATS), _int32(np.isinf), output="int32"),
    Case("isinf_sum", "y = isinf(x0) + isinf(x1);", 2, tuple(FLOATS),
         lambda a, b: np.isinf(a).astype(np.int32) + np.isinf(b), output="int32"),
    Case("isfinite_", "y = isfinite(x0);", 1, tuple(INTS + FLOATS), _int32(np.isfinite),
         output="int32"),
    Case("isnormal_", "y = isnormal(x0);", 1, tuple(INTS + FLOATS), lambda x: _int32(
        lambda v: np.isfinite(v) & (np.abs(v) >= np.finfo(v.dtype).tiny))(_as_float(x)),
         output="int32"),
    Case("signbit_", "y = signbit(x0);", 1, tuple(INTS + FLOATS),
         lambda x: _int32(np.signbit)(_as_float(x)), output="int32"),
    Case("fpclassify_", "y = fpclassify(x0);", 1, tuple(INTS + FLOATS),
         lambda x: _fpclassify(_as_float(x)), output="int32"),
    Case("cisnan", "y = isnan(x0);", 1, tuple(COMPLEX), _int32(np.isnan), output="int32"),
    Case("cisinf", "y = isinf(x0);", 1, tuple(COMPLEX), _int32(np.isinf), output="int32"),
    Case("cisfinite", "y = isfinite(x0);", 1, tuple(COMPLEX), _int32(np.isfinite), output="int32"),
    Case("isless_", "y = isless(x0, x1);", 2, tuple(INTS + FLOATS), _in_double_int32(np.less),
         output="int32"),
    Case("isgreater_", "y = isgreater(x0, x1);", 2, tuple(INTS + FLOATS),
         _in_double_int32(np.greater), output="int32"),
    Case("islessequal_", "y = islessequal(x0, x1);", 2, tuple(INTS + FLOATS),
         _in_double_int32(np.less_equal), output="int32"),
    Case("isgreaterequal_", "y = isgreaterequal(x0, x1);", 2, tuple(INTS + FLOATS),
         _in_double_int32(np.greater_equal), output="int32"),
    Case("islessgreater_", "y = islessgreater(x0, x1);", 2, tuple(INTS + FLOATS),
         _in_double_int32(lambda a, b: np.less(a, b) | np.greater(a, b)), output="int32"),
    Case("isunordered_", "y = isunordered(x0, x1);", 2, tuple(INTS + FLOATS),
         _in_double_int32(lambda a, b: np.isnan(a) | np.isnan(b)), output="int32"),
    # The Bessel functions: of a float computed in double and rounded once, under nvcc too
    # (whose own j0f is off by up to 9 ULP); of an integer in double.
    *[Case(f"{name}_", f"y = {name}(x0);", 1, tuple(FLOATS), _by_libm(name), libm=True)
      for name in ("j0", "j1", "y0", "y1")],
    Case("j0_of_int", "y = j0(x0);", 1, ("int32", "uint8"), _by_libm("j0"), output="float64",
         libm=True, ulps=(("int32", 2), ("uint8", 2))),     # float64 results
    Case("jn_", "y = jn(2, x0);", 1, tuple(FLOATS), _by_libm("jn", 2), libm=True),
    Case("yn_", "y = yn(3, x0);", 1, tuple(FLOATS), _by_libm("yn", 3), libm=True),
    # A real value and an int, or a real value to an integer: float in float, an integer in
    # double, in C++ (nvcc) as in C.
    Case("ldexp_", "y = ldexp(x0, 3) + scalbn(x0, -2) - scalbln(x0, 1);", 1, tuple(FLOATS),
         lambda x: np.ldexp(x, 3) + np.ldexp(x, -2) - np.ldexp(x, 1)),
    Case("ldexp_of_int", "y = ldexp(1, x0);", 1, ("int8", "int16", "int32", "uint8", "uint16"),
         lambda k: np.ldexp(1.0, k.astype(np.int32)), output="float64"),
    Case("scalbn_of_int", "y = scalbn(x0, 2);", 1, tuple(INTS),
         lambda k: np.ldexp(k.astype(np.float64), 2), output="float64"),
    Case("frexp_", "int e; y = frexp(x0, &e); (void)e;", 1, tuple(FLOATS),
         lambda x: np.frexp(x)[0]),
    Case("frexp_of_int", "int e; double m = frexp(x0, &e); y = m + e;", 1, tuple(INTS),
         lambda k: np.frexp(k.astype(np.float64))[0] + np.frexp(k.astype(np.float64))[1],
         output="float64"),
    Case("logb_of_int", "y = logb(x0);", 1, tuple(INTS), lambda k: _exponent(k, -np.inf),
         output="float64"),
    Case("ilogb_of_int", "y = ilogb(x0);", 1, tuple(INTS),
         lambda k: _exponent(k, -2**31).astype(np.int32), output="int32"),
    Case("lround_of_int", "y = lround(x0) + llround(x0) + lrint(x0) + llrint(x0);", 1,
         ("int8", "int16", "int32", "uint8", "uint16", "uint32"),
         lambda k: 4 * k.astype(np.int64), output="int64"),
    Case("nexttoward_", "y = nexttoward(x0, x1);", 2, tuple(FLOATS), np.nextafter),
    Case("nexttoward_of_int", "y = nexttoward(x0, 0);", 1, ("int32",),
         lambda k: np.nextafter(k.astype(np.float64), 0), output="float64"),
    # Float to integer conversion truncates towards zero when the value fits (NaN, Inf and out
    # of range values are left undefined: x86 and the GPU give different answers).
    Case("to_int32", "y = (int32_t)x0;", 1, ("float64",),
         lambda x: np.trunc(x).astype(np.int32), output="int32"),
]


def _plain_product(a, b):
    """a * b as NumPy's formula, each product rounded on its own (NumPy's AVX2 loop fuses one
    product of each part into an FMA: checked against it below)."""
    with np.errstate(all="ignore"):
        return _complex(a.real * b.real - a.imag * b.imag, a.real * b.imag + a.imag * b.real,
                        a.dtype)


def _smith_quotient(a, b):
    """a / b as GCC's -fcx-fortran-rules (and complex.h's class) compute it: Smith's formula,
    divided through by the larger part of b.  NumPy's own quotient differs by an ULP, and
    gives (inf or nan) parts where b is 0; this reference is checked against it below."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    small_real = np.abs(br) < np.abs(bi)
    with np.errstate(all="ignore"):
        ratio = np.where(small_real, br / bi, bi / br)
        scale = np.where(small_real, br * ratio + bi, bi * ratio + br)
        re = np.where(small_real, ar * ratio + ai, ai * ratio + ar) / scale
        im = np.where(small_real, ai * ratio - ar, ai - ar * ratio) / scale
    return _complex(re, im, a.dtype)


def _complex(re, im, dtype):
    out = np.empty(re.shape, dtype=dtype)
    out.real, out.imag = re, im
    return out


def _output_type(case: Case, t: str) -> str:
    if case.output == "part":
        return {"complex64": "float32", "complex128": "float64"}[t]
    return case.output or t


def _types_line(case: Case, t: str) -> str:
    ins = [t] * case.arity
    return f"{_output_type(case, t)}({', '.join(ins)})"


def _corpus_file() -> str:
    parts = []
    for case in CORPUS:
        args = ", ".join(f"x{k}" for k in range(case.arity))
        types = ", ".join(_types_line(case, t) for t in case.types)
        parts.append(f"ufunc {case.name}({args}) -> y\n    types: {types}\n{{\n    {case.body}\n}}\n")
    return "\n".join(parts)


# --------------------------------------------------------------------------- values


def _float_values(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    special = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 2.0, 3.0, np.pi, -np.e, 1e-3,
               float(info.max), -float(info.max), float(info.tiny), float(info.smallest_subnormal),
               -float(info.smallest_subnormal), np.inf, -np.inf, np.nan, 100.0, -700.0, 88.5]
    return np.array(special, dtype=dtype)


def _int_values(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    values = [0, 1, 2, 3, 7, info.max, info.max - 1, info.min, info.min + 1, 100 % (info.max + 1)]
    if info.min < 0:
        values += [-1, -2, -3, -7]
    return np.array(values, dtype=dtype)


def _complex_values(dtype) -> np.ndarray:
    """Every pair of a few edge values as (real, imaginary) parts, and some ordinary ones."""
    part = np.dtype(dtype).type(0).real.dtype
    info = np.finfo(part)
    edges = [0.0, -0.0, 1.0, -2.5, 0.75, float(info.max), float(info.smallest_subnormal),
             np.inf, -np.inf, np.nan]
    re, im = np.meshgrid(np.array(edges, part), np.array(edges, part))
    rng = np.random.default_rng(15)
    return np.concatenate([_complex(re.ravel(), im.ravel(), dtype),
                           _complex(rng.normal(size=20), rng.normal(size=20), dtype)])


def _operands(case: Case, t: str) -> list[np.ndarray]:
    values = (_float_values(t) if t in FLOATS else _complex_values(t) if t in COMPLEX
              else _int_values(t))
    if case.name == "ipow":     # exponents that stay meaningful: small, negative, huge
        exponents = np.array([0, 1, 2, 3, 5, 63, 64, 65, 127] + ([-1, -2, -3] if t in SIGNED else []),
                             dtype=t)
        pairs = list(itertools.product(values, exponents))
        return [np.array([p[0] for p in pairs], dtype=t), np.array([p[1] for p in pairs], dtype=t)]
    if case.name == "cpow":     # ordinary values only (see CORPUS)
        values = values[np.isfinite(values) & (np.abs(values) > 0.1) & (np.abs(values) < 10)]
        pairs = list(itertools.product(values, values))
        return [np.array([p[k] for p in pairs], dtype=t) for k in range(2)]
    if case.name == "to_int32":
        return [np.array([0.0, -0.0, 0.5, -0.5, 2.9, -2.9, 2**31 - 1, -2**31, 1e9, -1e9,
                          2147483647.9, -2147483648.9], dtype=t)]
    if case.arity == 3:         # clamp: every value against a few bounds, in both orders
        bounds = values[[0, 2, 3, -1, 4]] if t in FLOATS else values[:5]
        triples = list(itertools.product(values, bounds, bounds))
        return [np.array([p[k] for p in triples], dtype=t) for k in range(3)]
    if case.arity == 2:
        pairs = list(itertools.product(values, values))
        return [np.array([p[k] for p in pairs], dtype=t) for k in range(2)]
    return [values]


# --------------------------------------------------------------------------- comparing

# ULPs two correct libm implementations may differ by, per part type: the host's vector math
# (glibc's libmvec, whose functions glibc documents within 4 ULP; its AVX-512 atan2f differs
# from scalar atan2f by 2 ULP at (0.5, 3.0)) against its scalar libm in the simulator, and
# CUDA's math library (its documented maximum errors) against glibc on a GPU.
HOST_VS_SIM_ULPS = {"float32": 4, "float64": 2}
HOST_VS_GPU_ULPS = {"float32": 4, "float64": 2}
REFERENCE_ULPS = {"float32": 4, "float64": 2}    # against NumPy's own (SIMD) math
NORMWISE_EPS = 8


def _assert_close_normwise(got, want, scale, what):
    """|got - want| <= NORMWISE_EPS * eps * scale, elementwise (complex: the modulus), or a
    few subnormals where the scale underflows."""
    info = np.finfo(got.real.dtype)
    with np.errstate(all="ignore"):
        bad = ~((got == want) |
                (np.abs(got - want) <= NORMWISE_EPS * (info.eps * scale + info.smallest_subnormal)))
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} differ by more than "
                           f"{NORMWISE_EPS} eps: got {got[bad][:3]}, expected {want[bad][:3]}")


# --------------------------------------------------------------------------- the corpus module


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, module_importer, device_cuda_arch):
    """The corpus built once: for the GPU present when the tests run on one, else host and
    simulator only (the nvcc compile of the same text is checked below)."""
    return module_importer(tmp_path_factory.mktemp("prelude"), "ufg_prelude_corpus",
                           _corpus_file(), "--cuda-arch", device_cuda_arch)


def _cases():
    return [pytest.param(case, t, id=f"{case.name}-{t}") for case in CORPUS for t in case.types]


@pytest.mark.parametrize("case, t", _cases())
def test_host_and_device_compute_the_same_and_what_the_reference_computes(corpus, case, t):
    fn = getattr(corpus, case.name)
    operands = _operands(case, t)
    with np.errstate(all="ignore"):
        host = fn(*operands)
        want = case.reference(*operands)
    on_device = fn(*[device.to_device(a) for a in operands]).copy_to_host()

    part = np.dtype(t).type(0).real.dtype.name
    own = dict(case.ulps)
    between = 0
    if case.libm:
        between = own[part] if part in own else (HOST_VS_GPU_ULPS if ON_GPU else HOST_VS_SIM_ULPS)[part]
    assert_agree(on_device, host, between, f"{case.name}({t}) on {BACKEND} vs host")
    if case.normwise:
        _assert_close_normwise(host, want.astype(host.dtype), np.abs(want),
                               f"{case.name}({t}) on the host vs the reference")
        return
    reference = REFERENCE_ULPS.get(part, 0) if case.libm or case.numpy_rounds else 0
    assert_agree(host, want.astype(host.dtype), own.get(part, reference),
                  f"{case.name}({t}) on the host vs the reference")


def _complex_pairs(t):
    return (np.array(p, dtype=t) for p in zip(*itertools.product(_complex_values(t), repeat=2)))


@pytest.mark.parametrize("t", COMPLEX)
def test_the_complex_product_is_numpys_within_rounding_where_both_are_finite(t):
    a, b = _complex_pairs(t)
    with np.errstate(all="ignore"):
        ours, numpy = _plain_product(a, b), np.multiply(a, b)
    finite = np.isfinite(ours) & np.isfinite(numpy) & np.isfinite(a) & np.isfinite(b)
    assert finite.sum() > 1000
    # An FMA rounds a product once less: the parts may differ by an ULP of |a| |b|.  Where a
    # modulus overflows, the scale is inf (any finite difference passes), or NaN where it
    # meets a zero one (the parts must then be equal).
    with np.errstate(over="ignore", invalid="ignore"):
        scale = np.abs(a[finite]) * np.abs(b[finite])
    _assert_close_normwise(ours[finite], numpy[finite], scale, f"the product ({t}) vs np.multiply")


@pytest.mark.parametrize("t", COMPLEX)
def test_the_complex_quotient_is_numpys_within_two_ulps_but_nan_for_a_zero_divisor(t):
    a, b = _complex_pairs(t)
    with np.errstate(all="ignore"):
        ours, numpy = _smith_quotient(a, b), np.divide(a, b)
    zero = b == 0
    assert np.isnan(ours[zero].real).all() and np.isnan(ours[zero].imag).all()
    # NumPy multiplies by the reciprocal of the scaled divisor, which overflows when b's
    # larger part is below 1/max: nan there, where dividing gives the quotient.
    tiny = ~zero & (np.maximum(np.abs(b.real), np.abs(b.imag)) < 1 / np.finfo(b.real.dtype).max)
    assert not np.isnan(ours[tiny & np.isfinite(a)]).any()
    rest = ~zero & ~tiny
    assert_agree(ours[rest], numpy[rest], 2, f"Smith's quotient ({t}) vs np.divide")


def test_the_corpus_covers_every_prelude_name_and_type():
    names = {c.body.split("(")[0].split("=")[-1].strip() for c in CORPUS}
    assert {"abs", "sign", "min", "max", "clamp", "pow", "fabs", "fmin", "fmax", "copysign",
            "fmod", "hypot", "atan2", "floor", "ceil", "trunc", "rint", "sqrt", "exp", "log",
            "sin", "tanh", "conj", "real", "imag", "arg", "isnan", "isinf", "isfinite",
            "isnormal", "signbit", "fpclassify", "isless", "isgreater", "islessequal",
            "isgreaterequal", "islessgreater", "isunordered", "j0", "j1", "y0", "y1", "jn", "yn",
            "ldexp", "scalbn", "logb", "ilogb", "lround", "nexttoward"} <= names
    assert {t for c in CORPUS for t in c.types} == set(INTS + FLOATS + COMPLEX)
    values = sum(len(_operands(c, t)[0]) for c in CORPUS for t in c.types)
    assert values > 10_000, values


# --------------------------------------------------------------------------- nvcc

NVCC = shutil.which("nvcc") or (Path("/usr/local/cuda/bin/nvcc") if Path(
    "/usr/local/cuda/bin/nvcc").exists() else None)


def _generated_kernels(corpus) -> Path:
    module_dir = Path(corpus.__file__).parent
    found = list(module_dir.glob(".ufuncgen-build/*/cmake/*_generated/*_kernels.cu"))
    assert len(found) == 1, found
    return found[0]


def _include_dir() -> Path:
    import ufuncgen
    installed = Path(ufuncgen.__file__).parent / "include"
    return installed if installed.is_dir() else Path(__file__).parents[2] / "src" / "include"


def _nvcc_ptx(source: Path, tmp_path: Path) -> str:
    ptx = tmp_path / "kernels.ptx"
    result = subprocess.run(
        [str(NVCC), "-ptx", "-arch=compute_90", "-O3", "--fmad=false", f"-I{_include_dir()}",
         f"-I{source.parent}", str(source), "-o", str(ptx)],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr
    return ptx.read_text()


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit)")
def test_nvcc_compiles_every_corpus_body_for_every_type(corpus, tmp_path):
    ptx = _nvcc_ptx(_generated_kernels(corpus), tmp_path)
    for case in CORPUS:
        for t in case.types:
            assert f"ufg_kernel_{case.name}_" in ptx


def _including(bodies_name: str, device: bool) -> str:
    """The start of C++ that includes a generated bodies header as a kernel file does (nvcc,
    device functions) or as a host harness (g++, with <math.h>)."""
    body, helper = (("static __device__ __forceinline__", "static __device__ inline") if device
                    else ("static inline", "static inline"))
    return ("#include <stdint.h>\n" + ("" if device else "#include <math.h>\n") +
            f"#define UFG_BODY_FN {body}\n#define UFG_HELPER_FN {helper}\n"
            f'typedef int64_t ufg_stride_t;\n#include "{bodies_name}"\n')


WRAP_PROBE = """\
ufunc increment_compares(x) -> y
    types: int64(int64)
{
    y = x + 1 > x;
}
"""


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit)")
def test_nvcc_keeps_the_comparison_that_wrapping_makes_false_at_the_maximum(tmp_path):
    """Signed overflow wraps on the GPU too: nvcc has no -fwrapv, so the C++ text of a body
    computes signed +, -, * in the prelude's ufg_add, ... (gen/operators.py).  The control,
    the same comparison written in plain CUDA C++, is folded to the constant 1."""
    (tmp_path / "probe.ufunc").write_text(WRAP_PROBE)
    generate("ufg_wrap_probe", [str(tmp_path / "probe.ufunc")], str(tmp_path / "generated"))
    # The body alone in a kernel without a loop: any comparison in its PTX is the body's.
    probe = tmp_path / "generated" / "probe.cu"
    probe.write_text(_including("ufg_wrap_probe_bodies.h", device=True) +
                     'extern "C" __global__ void probe(const int64_t *x, int64_t *y)\n'
                     '{ ufg_body_increment_compares_int64(*x, y); }\n'
                     'extern "C" __global__ void control(const int64_t *x, int64_t *y)\n'
                     '{ *y = *x + 1 > *x; }\n')
    ptx = _nvcc_ptx(probe, tmp_path)
    entries = {m.group(1): m.group(2) for m in re.finditer(
        r"\.entry (\w+)\((.*?)\n}", ptx, re.DOTALL)}
    assert "setp." not in entries["control"], "nvcc no longer folds the control: rethink the test"
    assert "setp." in entries["probe"], "the comparison was folded away: y is the constant 1"


# --------------------------------------------------------------------------- the C++ side

GXX = shutil.which("g++")
C_TYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
           "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
           "float32": "float", "float64": "double", "complex64": "ufg_complex64",
           "complex128": "ufg_complex128"}
# Every case, the wrapping ones included: g++ compiles without -fwrapv, as nvcc does, so they
# wrap through the prelude's ufg_add, ufg_sub, ufg_mul and ufg_neg (gen/operators.py).
CXX_CASES = CORPUS


def _cxx_harness(bodies: Path) -> str:
    """C++ that includes the generated bodies as nvcc does (the prelude's overloads, not
    _Generic) and exports one loop per corpus function and type."""
    text = bodies.read_text()
    lines = [_including(bodies.name, device=False).rstrip("\n")]
    for case in CXX_CASES:
        for t in case.types:
            # A mixed signature's body is named for its inputs and output: f_int8_int8__int32.
            body = re.search(rf"\bufg_body_{case.name}_{t}(?:_{t})*(?:__\w+)?(?=\()", text).group(0)
            ins = ", ".join(f"((const {C_TYPES[t]} *)args[{k}])[i]" for k in range(case.arity))
            out = C_TYPES[_output_type(case, t)]
            lines.append(f'extern "C" void run_{case.name}_{t}(char **args, int64_t n)\n'
                         f"{{ for (int64_t i = 0; i < n; i++) "
                         f"{body}({ins}, &(({out} *)args[{case.arity}])[i]); }}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def cxx_corpus(corpus, tmp_path_factory):
    """The corpus bodies compiled as C++ by g++ (without -fwrapv, like nvcc): the overloads
    nvcc uses, run on this machine."""
    bodies = _generated_kernels(corpus).with_name("ufg_prelude_corpus_bodies.h")
    work = tmp_path_factory.mktemp("cxx")
    source = work / "harness.cpp"
    source.write_text(_cxx_harness(bodies))
    library = work / "harness.so"
    result = subprocess.run([GXX, "-std=c++17", "-O2", "-fno-math-errno", "-ffp-contract=off",
                             "-shared", "-fPIC", "-Wall", f"-I{_include_dir()}",
                             f"-I{bodies.parent}", str(source), "-o", str(library)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return ctypes.CDLL(str(library))


@pytest.mark.skipif(GXX is None, reason="needs g++")
@pytest.mark.parametrize("case, t", [pytest.param(c, t, id=f"{c.name}-{t}")
                                     for c in CXX_CASES for t in c.types])
def test_the_cplusplus_prelude_computes_what_the_c_prelude_computes(corpus, cxx_corpus, case, t):
    operands = _operands(case, t)
    with np.errstate(all="ignore"):
        host = getattr(corpus, case.name)(*operands)
    got = np.empty_like(host)
    arrays = [np.ascontiguousarray(a) for a in operands] + [got]
    pointers = (ctypes.c_char_p * len(arrays))(*[a.ctypes.data_as(ctypes.c_char_p) for a in arrays])
    getattr(cxx_corpus, f"run_{case.name}_{t}")(pointers, ctypes.c_int64(host.size))
    part = np.dtype(t).type(0).real.dtype.name
    own = dict(case.ulps)
    assert_agree(got, host, (own[part] if part in own else HOST_VS_SIM_ULPS[part]) if case.libm else 0,
                  f"{case.name}({t}) as C++ vs the host's C")


# --------------------------------------------------------------------------- refused

# The <math.h> functions of real values, given a complex one: C's _Generic and C++'s templates
# used to convert it to its real part, silently (README: they do not compile).
REFUSED = {
    "atan2": "y = atan2(z, 2);", "fmod": "y = fmod(z, 2);", "hypot": "y = hypot(z, 1);",
    "fmin": "y = fmin(z, 1);", "fma": "y = fma(z, z, 1);", "copysign": "y = copysign(1, z);",
    "floor": "y = floor(z);", "signbit": "y = signbit(z);", "ldexp": "y = ldexp(z, 2);",
    "j0": "y = j0(z);",
}
REFUSED_FILE = "".join(f"ufunc c_{name}(z) -> y\n    types: complex128(complex128)\n{{\n    {body}\n}}\n"
                       for name, body in REFUSED.items())
REFUSED_LINES = {name: 4 + 5 * k for k, name in enumerate(REFUSED)}


def _refused_bodies(tmp_path: Path) -> Path:
    (tmp_path / "refused.ufunc").write_text(REFUSED_FILE)
    generate("ufg_refused", [str(tmp_path / "refused.ufunc")], str(tmp_path / "generated"))
    return tmp_path / "generated" / "ufg_refused_bodies.h"


def _assert_refused_at_every_line(stderr: str, what: str, said: str = "error"):
    for name, line in REFUSED_LINES.items():
        assert re.search(rf"refused\.ufunc[:(]{line}\b.*{said}", stderr), (what, name, stderr)


def test_c_refuses_a_complex_argument_to_a_real_function_at_the_users_line(tmp_path):
    (tmp_path / "refused.ufunc").write_text(REFUSED_FILE)
    result = subprocess.run([sys.executable, "-m", "ufuncgen", "build", "refused.ufunc", "--name",
                             "ufg_refused", "-o", "out", "--cuda-arch", "none"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    _assert_refused_at_every_line(result.stderr, "C")


@pytest.mark.skipif(GXX is None, reason="needs g++")
def test_cplusplus_refuses_a_complex_argument_to_a_real_function_at_the_users_line(tmp_path):
    bodies = _refused_bodies(tmp_path)
    source = tmp_path / "harness.cpp"
    source.write_text(_including(bodies.name, device=False))
    result = subprocess.run([GXX, "-std=c++17", "-fsyntax-only", f"-I{_include_dir()}",
                             f"-I{bodies.parent}", str(source)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    # g++ places the error in the prelude, "in expansion of macro" at the body's line.
    _assert_refused_at_every_line(result.stderr, "g++", "note: in expansion of macro")


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit)")
def test_nvcc_refuses_a_complex_argument_to_a_real_function_at_the_users_line(tmp_path):
    bodies = _refused_bodies(tmp_path)
    source = tmp_path / "probe.cu"
    source.write_text(_including(bodies.name, device=True))
    result = subprocess.run([str(NVCC), "-ptx", "-arch=compute_90", f"-I{_include_dir()}",
                             f"-I{bodies.parent}", str(source), "-o", str(tmp_path / "p.ptx")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    _assert_refused_at_every_line(result.stderr, "nvcc")
