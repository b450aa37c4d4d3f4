"""Shared helpers for the seed-example test matrix (`ufuncgen.examples`).

Every reference here is independent of the ufunc under test: NumPy's own ufuncs composed
into the same expression, or plain Python.  Tests import the helpers with
`from .conftest import ...`.
"""
import math

import numpy as np
import pytest

import ufuncgen.examples as ex

# ----------------------------------------------------------------------------- the functions

FUNCTION_NAMES = sorted(name for name in dir(ex) if hasattr(getattr(ex, name), "ufunc"))
ELEMENTWISE_NAMES = [n for n in FUNCTION_NAMES if getattr(ex, n).signature is None]
GUFUNC_NAMES = [n for n in FUNCTION_NAMES if getattr(ex, n).signature is not None]

# Sizes around the SIMD widths (8 float32 in AVX2, 16 in AVX-512), the runtime's block of
# 256 elements (519 = two blocks and a tail) and a large odd size.
SIZES = (0, 1, 7, 8, 15, 16, 17, 519, 10007)

# Memory layouts that `with_layout` makes from a contiguous array.
LAYOUTS = ("contiguous", "strided", "reversed", "unaligned", "fortran")


def loop_dtypes(fn):
    """[(input dtypes, output dtypes)] of every loop of `fn`, from its ufunc's type table."""
    result = []
    for chars in fn.ufunc.types:
        ins, outs = chars.split("->")
        result.append((tuple(np.dtype(c) for c in ins), tuple(np.dtype(c) for c in outs)))
    return result


def function_dtype_cases(names):
    """pytest params (name, dtype) for every loop of every named function."""
    return [
        pytest.param(name, ins[0], id=f"{name}-{ins[0].name}")
        for name in names
        for ins, _ in loop_dtypes(getattr(ex, name))
    ]


# ----------------------------------------------------------------------------- layouts


def with_layout(values, layout):
    """An array equal to `values` whose memory has the given layout.

    contiguous: a C-contiguous copy.  strided: every other element along every axis of a
    larger buffer.  reversed: negative strides along every axis.  unaligned: a view into a
    uint8 buffer at byte offset 1.  fortran: the transpose of a C-contiguous transpose.
    """
    a = np.asarray(values)
    if layout == "contiguous":
        return np.array(a, order="C", copy=True)
    if layout == "strided":
        big = np.full(tuple(2 * s for s in a.shape), 99, dtype=a.dtype)
        view = big[(slice(None, None, 2),) * a.ndim] if a.ndim else big[...]
        view[...] = a
        return view
    if layout == "reversed":
        return np.flip(np.flip(a).copy())
    if layout == "unaligned":
        buf = np.zeros(a.nbytes + a.itemsize + 1, dtype=np.uint8)
        view = buf[1:1 + a.nbytes].view(a.dtype).reshape(a.shape)
        view[...] = a
        assert a.size == 0 or not view.flags.aligned
        return view
    if layout == "fortran":
        return a.T.copy().T
    raise ValueError(layout)


# ----------------------------------------------------------------------------- comparisons

_INT_OF = {2: np.int16, 4: np.int32, 8: np.int64}
_MAG_MASK = {2: 0x7FFF, 4: 0x7FFFFFFF, 8: 0x7FFFFFFFFFFFFFFF}


def ulp_distance(a, b):
    """Elementwise distance in units in the last place between two float arrays of one dtype
    (uint64; +0.0 and -0.0 are 0 apart; meaningless for NaN)."""
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    assert a.dtype == b.dtype and a.dtype.kind == "f"
    size = a.dtype.itemsize
    ia = a.view(_INT_OF[size]).astype(np.int64)
    ib = b.view(_INT_OF[size]).astype(np.int64)
    mask = _MAG_MASK[size]
    # Map sign-magnitude onto an ordered integer line.
    oa = np.where(ia < 0, -(ia & mask), ia)
    ob = np.where(ib < 0, -(ib & mask), ib)
    ua, ub = oa.view(np.uint64), ob.view(np.uint64)
    # Exact in modular uint64 arithmetic: the true distance is below 2**64.
    return np.where(oa >= ob, ua - ub, ub - ua)


def _check_same_specials(actual, expected, check_zero_sign):
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape}, expected {expected.shape}"
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected),
                                  err_msg="NaN positions differ")
    inf = np.isinf(expected)
    np.testing.assert_array_equal(np.isinf(actual), inf, err_msg="Inf positions differ")
    np.testing.assert_array_equal(actual[inf], expected[inf], err_msg="Inf signs differ")
    if check_zero_sign:
        zero = expected == 0
        np.testing.assert_array_equal(np.signbit(actual[zero]), np.signbit(expected[zero]),
                                      err_msg="signs of zero differ")


def assert_ulp_close(actual, expected, max_ulp, *, check_zero_sign=True):
    """Same dtype and shape, NaN and Inf at the same places, and every other element within
    `max_ulp` units in the last place of `expected` (0 means bit-equal up to the NaN payload)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    _check_same_specials(actual, expected, check_zero_sign)
    finite = np.isfinite(expected)
    if not finite.any():
        return
    dist = ulp_distance(actual[finite], expected[finite])
    worst = int(np.argmax(dist))
    assert dist[worst] <= max_ulp, (
        f"{int(dist[worst])} ULP apart (bound {max_ulp}): got {actual[finite][worst]!r}, "
        f"expected {expected[finite][worst]!r}"
    )


def assert_within(actual, expected, bound):
    """Same dtype and shape, NaN/Inf at the same places, |actual - expected| <= bound
    (an array broadcast against them) everywhere else, compared in float64 or wider."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    _check_same_specials(actual, expected, check_zero_sign=False)
    finite = np.isfinite(expected)
    wide = np.longdouble
    with np.errstate(invalid="ignore"):   # inf - inf where both are inf: masked below
        err = np.abs(actual.astype(wide) - expected.astype(wide))
    bound = np.broadcast_to(np.asarray(bound, dtype=wide), err.shape)
    bad = finite & ~(err <= bound)
    assert not bad.any(), (
        f"{int(bad.sum())} elements off: first got {actual[bad][0]!r}, expected "
        f"{expected[bad][0]!r}, error {err[bad][0]!r} > bound {bound[bad][0]!r}"
    )


def assert_exactly_equal(actual, expected):
    """Same dtype, shape and values (bit-exact for integers; NaN matches NaN)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype}, expected {expected.dtype}"
    assert actual.shape == expected.shape, f"shape {actual.shape}, expected {expected.shape}"
    np.testing.assert_array_equal(actual, expected, strict=True)


def eps(dtype):
    return float(np.finfo(dtype).eps)


# ----------------------------------------------------------------------------- bounds
#
# ULP bounds between a generated loop and NumPy's composed expression in the same dtype.

# One IEEE addition, rounded once in the loop's type, exactly as np.add does.
ADD_MAX_ULP = 0
# x*y + x: two correctly rounded operations in NumPy's order.  A compiler that contracts them
# into one fused multiply-add rounds once instead, which is not NumPy's result (it even
# turns NumPy's overflow to -inf into a finite value).
CUSTOM_OP_MAX_ULP = 0
# libm's hypot (not vectorized: libmvec's raises spurious flags) and NumPy's np.hypot are
# each within 1 ULP of the exact result.
HYPOT_MAX_ULP = 2
# libmvec exp is within 4 ULP, NumPy's own SIMD exp within 3 (float32) / 1 (float64); the
# final division by sigma*sqrt(2 pi) adds at most one more rounding step.
GAUSSIAN_PDF_MAX_ULP = 8
# libmvec sin/cos are within 4 ULP; NumPy's own sin/cos within 1.5 (float32) / 1 (float64).
SINCOS_MAX_ULP = 6
# polar_distance subtracts Cartesian coordinates, so its error is absolute, relative to the
# radii rather than to the (possibly tiny) distance: each of the eight sin/cos products is
# within 4 + 1.5 ULP on each side and the subtraction/hypot add a few roundings more.
POLAR_DISTANCE_EPS_OF_RADII = 32
# gelu = x/2 * erfc(-x/sqrt(2)): a float16 loop computes in float32 and rounds once, so it is
# within 1 ULP of the exact value rounded to float16 (the reference rounds once more).  In
# float32 and float64 the argument -x/sqrt(2) carries a rounding error of up to 1 ULP in the
# loop (the constant, the product) and in the reference (a division), each amplified by
# erfc's slope, |d log erfc(z) / d log z| <= 2 z**2 + 1 = x**2 + 1; libm's erfc adds up to a
# few ULP on each side.
GELU_FLOAT16_MAX_ULP = 1
GELU_LIBM_ULP = 8


def gelu_bound(x, want):
    """Absolute error bound of gelu in float32/float64 at x, around the result `want`."""
    x = np.clip(np.asarray(x, dtype=np.float64), -1e3, 1e3)   # Inf: want is 0 or Inf
    ulps = 2 * (x * x + 1) + GELU_LIBM_ULP
    return ulps * eps(want.dtype) * np.abs(want.astype(np.float64))


# A sum of n terms rounded n times in any order is within about n*eps of the exact sum,
# relative to the sum of the terms' magnitudes; sqrt only halves relative error.  The
# extra 2 covers the reference's own rounding and the final square root.
SUM_EXTRA_EPS = 2


def sum_bound(dtype, n, magnitude):
    """Absolute error bound for a sum of n rounded terms of total `magnitude`."""
    return (n + SUM_EXTRA_EPS) * eps(dtype) * np.asarray(magnitude, dtype=np.float64)


# ----------------------------------------------------------------------------- references


def mandelbrot_python(c):
    """The escape time, z -> z*z + c from 0, stepped with NumPy scalars of c's part type, in
    the body's order ((zr zr - zi zi) + cr, (zr zi + zi zr) + ci): the same roundings, so the
    same counts."""
    part = c.real.dtype.type
    flat = []
    for value in np.asarray(c).ravel():
        cr, ci = part(value.real), part(value.imag)
        zr = zi = part(0)
        k = 0
        with np.errstate(all="ignore"):
            while k < 100 and zr * zr + zi * zi <= 4:
                zr, zi = (zr * zr - zi * zi) + cr, (zr * zi + zi * zr) + ci
                k += 1
        flat.append(k)
    return np.array(flat, dtype=np.int32).reshape(np.shape(c))


def lucas_mod_2_64(n):
    """L(n) wrapped to int64 like NumPy's int64 arithmetic: plain Python, by 2x2 matrix
    power of [[1, 1], [1, 0]] (Fibonacci numbers) modulo 2**64, a different algorithm from
    the fast doubling under test.  L(k) = F(k-1) + F(k+1); L(-k) = (-1)**k L(k)."""
    mod = 1 << 64
    k = abs(int(n))

    def mul(p, q):
        return (
            ((p[0] * q[0] + p[1] * q[2]) % mod, (p[0] * q[1] + p[1] * q[3]) % mod,
             (p[2] * q[0] + p[3] * q[2]) % mod, (p[2] * q[1] + p[3] * q[3]) % mod)
        )

    result, base, e = (1, 0, 0, 1), (1, 1, 1, 0), k
    while e:
        if e & 1:
            result = mul(result, base)
        base = mul(base, base)
        e >>= 1
    # [[F(k+1), F(k)], [F(k), F(k-1)]]
    value = (result[0] + result[3]) % mod
    if n < 0 and k % 2 == 1:
        value = (-value) % mod
    return value - mod if value >= 1 << 63 else value


def lucas_table(lo, hi):
    """{n: L(n) wrapped to int64} for lo <= n <= hi, by the plain recurrence
    L(n+1) = L(n) + L(n-1) on exact Python integers (wrapped at the end)."""
    exact = {0: 2, 1: 1}
    for n in range(2, max(hi, -lo) + 1):
        exact[n] = exact[n - 1] + exact[n - 2]
    table = {}
    for n in range(lo, hi + 1):
        value = exact[abs(n)] * (-1 if n < 0 and n % 2 else 1)
        value %= 1 << 64
        table[n] = value - (1 << 64) if value >= 1 << 63 else value
    return table


def pdist_python(points):
    """scipy.spatial.distance.pdist's condensed Euclidean distances, in plain Python."""
    rows = [[float(v) for v in row] for row in points]
    return [
        math.sqrt(sum((a - b) ** 2 for a, b in zip(rows[i], rows[j])))
        for i in range(len(rows))
        for j in range(i + 1, len(rows))
    ]


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


# ----------------------------------------------------------------------------- elementwise specs

LUCAS_RANGE = (-300, 300)
_LUCAS_TABLE = lucas_table(*LUCAS_RANGE)


def elementwise_inputs(name, dtype, shape, rng):
    """Contiguous random inputs of `dtype` in each function's natural domain."""
    dtype = np.dtype(dtype)

    def uniform(lo, hi):
        return rng.uniform(lo, hi, shape).astype(dtype)

    if name == "add":
        if dtype.kind == "i":
            return [rng.integers(-2**62, 2**62, shape, dtype=dtype) for _ in range(2)]
        return [uniform(-1e3, 1e3), uniform(-1e3, 1e3)]
    if name == "custom_op":
        return [uniform(-10, 10), uniform(-10, 10)]
    if name == "hypot":
        return [uniform(-1e3, 1e3), uniform(-1e3, 1e3)]
    if name == "gaussian_pdf":
        return [uniform(-5, 5), uniform(-1, 1), uniform(0.5, 3)]
    if name == "polar_distance":
        return [uniform(0, 10), uniform(-np.pi, np.pi), uniform(0, 10), uniform(-np.pi, np.pi)]
    if name == "lucas":
        return [rng.integers(LUCAS_RANGE[0], LUCAS_RANGE[1] + 1, shape, dtype=dtype)]
    if name == "sincos":
        return [uniform(-100, 100)]
    if name == "gelu":
        return [uniform(-12, 12)]
    if name == "mandelbrot":
        part = np.dtype(dtype).type(0).real.dtype
        c = np.empty(shape, dtype)
        c.real = rng.uniform(-2.2, 0.8, shape).astype(part)
        c.imag = rng.uniform(-1.3, 1.3, shape).astype(part)
        return [c]
    raise KeyError(name)


def elementwise_reference(name, *inputs):
    """Each output of `name` from NumPy's composed expression in the inputs' dtype (plain
    Python for lucas), as a tuple."""
    inputs = [np.asarray(a) for a in inputs]
    t = inputs[0].dtype.type
    if name == "add":
        x, y = inputs
        with np.errstate(over="ignore", invalid="ignore"):
            return (np.asarray(x + y),)
    if name == "custom_op":
        x, y = inputs
        with np.errstate(all="ignore"):
            return (np.asarray(x * y + x),)
    if name == "hypot":
        with np.errstate(all="ignore"):
            return (np.asarray(np.hypot(*inputs)),)
    if name == "gaussian_pdf":
        x, mean, sigma = inputs
        with np.errstate(all="ignore"):
            z = (x - mean) / sigma
            return (np.asarray(np.exp(t(-0.5) * z * z) / (sigma * t(2.50662827463100050242))),)
    if name == "polar_distance":
        rho1, theta1, rho2, theta2 = inputs
        with np.errstate(all="ignore"):
            x1, y1 = rho1 * np.cos(theta1), rho1 * np.sin(theta1)
            x2, y2 = rho2 * np.cos(theta2), rho2 * np.sin(theta2)
            return (np.asarray(np.hypot(x1 - x2, y1 - y2)),)
    if name == "lucas":
        (n,) = inputs
        flat = [_LUCAS_TABLE[int(v)] if LUCAS_RANGE[0] <= v <= LUCAS_RANGE[1]
                else lucas_mod_2_64(int(v)) for v in n.ravel()]
        return (np.array(flat, dtype=np.int64).reshape(n.shape),)
    if name == "sincos":
        (x,) = inputs
        with np.errstate(invalid="ignore"):
            return (np.asarray(np.sin(x)), np.asarray(np.cos(x)))
    if name == "mandelbrot":
        return (mandelbrot_python(inputs[0]),)
    if name == "gelu":
        # Plain Python in double: x * Phi(x), Phi from math.erfc; -0.0 where Phi underflows
        # (x -> -Inf), NaN for NaN.
        (x,) = inputs

        def gelu(v):
            if math.isnan(v):
                return math.nan
            phi = 0.5 * math.erfc(-v / math.sqrt(2.0))
            return -0.0 if phi == 0.0 else v * phi
        flat = [gelu(float(v)) for v in x.ravel()]
        return (np.array(flat, dtype=np.float64).astype(x.dtype).reshape(x.shape),)
    raise KeyError(name)


def check_elementwise(name, actual, expected, inputs):
    """Asserts each output of `name` matches the reference within that function's bound."""
    if not isinstance(actual, tuple):
        actual = (actual,)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        if name in ("lucas", "mandelbrot") or want.dtype.kind == "i":
            assert_exactly_equal(got, want)
        elif name == "add":
            assert_ulp_close(got, want, ADD_MAX_ULP)
        elif name == "custom_op":
            assert_ulp_close(got, want, CUSTOM_OP_MAX_ULP)
        elif name == "hypot":
            assert_ulp_close(got, want, HYPOT_MAX_ULP)
        elif name == "gaussian_pdf":
            assert_ulp_close(got, want, GAUSSIAN_PDF_MAX_ULP)
        elif name == "sincos":
            assert_ulp_close(got, want, SINCOS_MAX_ULP)
        elif name == "gelu" and want.dtype == np.float16:
            assert_ulp_close(got, want, GELU_FLOAT16_MAX_ULP)
        elif name == "gelu":
            assert_within(got, want, gelu_bound(inputs[0], want))
        elif name == "polar_distance":
            rho1, _, rho2, _ = (np.asarray(a, dtype=np.float64) for a in inputs)
            with np.errstate(over="ignore"):
                bound = (POLAR_DISTANCE_EPS_OF_RADII * eps(want.dtype)
                         * (np.abs(rho1) + np.abs(rho2)))
            assert_within(got, want, np.broadcast_to(bound, want.shape))
        else:
            raise KeyError(name)


def _libmvec_loaded():
    """Whether the examples module runs glibc's libmvec (its vector loops call it)."""
    try:
        with open("/proc/self/maps") as maps:
            return any("libmvec" in line for line in maps)
    except OSError:
        return False


LIBMVEC_LOADED = _libmvec_loaded()
