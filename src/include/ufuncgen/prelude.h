/*
 * The body prelude: every name a signature file's body may call gets one meaning for every
 * element type, whichever compiler builds the body.
 *
 * A body is compiled three times: as C for the host loops, as C again for the simulator, and
 * as CUDA C++ by nvcc.  Left to themselves the three disagree: C's `abs` is the int one
 * (abs(-1.5f) is 1), an undeclared call in the simulator reads garbage, nvcc picks float
 * overloads and refuses `fabs` of an int, and <tgmath.h> computes `pow(x_float32, 2)` in
 * double.  This header is included by the generated bodies header after every system header,
 * and routes the names below to small functions written once here: in C through _Generic, in
 * C++ through overloads.  The README's "Names a body can call" table is the user's view.
 *
 * The type rule, the same in both languages: a call computes in the type of C's usual
 * arithmetic conversions of its arguments (the type of `a + b`), so integers narrower than int
 * are promoted, an integer beside a float adopts the float type (pow(x_float32, 2) stays
 * float32), and float beside double is double.  The <math.h> functions of an integer
 * argument (or of integers only) compute in double, as <tgmath.h> does.
 *
 * Every function is a macro over a ufg_ name, so a body's variables named min, abs, ... still
 * work (a function-like macro expands only before a parenthesis).  The header must come after
 * the system headers and before the bodies: it redefines names those headers declare.
 */
#ifndef UFUNCGEN_PRELUDE_H
#define UFUNCGEN_PRELUDE_H

#include <stdint.h>
#include <string.h>
#ifndef __CUDACC__
#include <math.h>
#ifndef __cplusplus
#include <tgmath.h>
#endif
#endif

#include "ufuncgen/half.h"     /* float16 elements: loaded as float, stored rounded */
#include "ufuncgen/bfloat16.h" /* bfloat16 elements: loaded as float, stored rounded */
#include "ufuncgen/complex.h"  /* complex64, complex128: C99 complex, or a class in CUDA C++ */

#if defined(__CUDACC__)
#define UFG_PRELUDE_FN static __device__ __forceinline__
#elif defined(__GNUC__)
#define UFG_PRELUDE_FN static inline __attribute__((always_inline, unused))
#else
#define UFG_PRELUDE_FN static inline
#endif

/* ---------------------------------------------------------------- one definition per type */

/* The types `a + b` can have (suffix, type, its unsigned twin): every integer computation
 * happens in one of these after C's promotions. */
#define UFG_SIGNED_TYPES(X) \
    X(i, int, unsigned int) X(l, long, unsigned long) X(ll, long long, unsigned long long)
#define UFG_UNSIGNED_TYPES(X) \
    X(u, unsigned int, unsigned int) X(ul, unsigned long, unsigned long) \
    X(ull, unsigned long long, unsigned long long)
#define UFG_FLOAT_TYPES(X) X(f, float, float) X(d, double, double)

/* min and max as NumPy's minimum and maximum: a NaN argument is the result (the first one, when
 * both are), and of two equal values (-0.0 and +0.0) the second.  clamp(x, lo, hi) is
 * min(max(x, lo), hi), as np.clip.  sign is -1, 0 or +1 (0 for -0.0, NaN for NaN), as np.sign.
 * fmin and fmax (floats only) as NumPy's: a NaN argument is ignored, and of two equal values
 * the second is the result.  libm leaves the sign of fmin(0.0, -0.0) open, and glibc's scalar
 * call and GCC's vector instructions answer differently, so they are written out here. */
#define UFG_DEFINE_ORDER(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_min_##S(TYPE a, TYPE b) { return a < b ? a : b; } \
    UFG_PRELUDE_FN TYPE ufg_max_##S(TYPE a, TYPE b) { return a > b ? a : b; } \
    UFG_PRELUDE_FN TYPE ufg_clamp_##S(TYPE x, TYPE lo, TYPE hi) \
    { return ufg_min_##S(ufg_max_##S(x, lo), hi); }
#define UFG_DEFINE_SIGN(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_sign_##S(TYPE x) \
    { return x > 0 ? (TYPE)1 : x < 0 ? (TYPE)-1 : (TYPE)0; }
#define UFG_DEFINE_SIGN_UNSIGNED(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_sign_##S(TYPE x) { return x > 0 ? (TYPE)1 : (TYPE)0; }
UFG_SIGNED_TYPES(UFG_DEFINE_ORDER)
UFG_UNSIGNED_TYPES(UFG_DEFINE_ORDER)
UFG_SIGNED_TYPES(UFG_DEFINE_SIGN)
UFG_UNSIGNED_TYPES(UFG_DEFINE_SIGN_UNSIGNED)

/* Integer division and remainder made total (gen/operators.py rewrites a body's integer `/`,
 * `%`, `/=` and `%=` into these): C leaves a divisor of 0, and INT_MIN / -1, undefined, and
 * x86-64 stops the process with SIGFPE there.  They give NumPy's answers instead: a / 0 and
 * a % 0 are 0 with the divide-by-zero flag raised (np.floor_divide, np.fmod), INT_MIN / -1
 * wraps to INT_MIN with the overflow flag, INT_MIN % -1 is 0.  The GPU has no flags; on the
 * host NumPy turns them into its warnings.  Otherwise C's: the quotient truncated toward 0,
 * the remainder with the dividend's sign. */
#if defined(__CUDACC__)
#define UFG_RAISE_DIVIDE_BY_ZERO() ((void)0)
#define UFG_RAISE_OVERFLOW() ((void)0)
#else
#include <fenv.h>
#define UFG_RAISE_DIVIDE_BY_ZERO() ((void)feraiseexcept(FE_DIVBYZERO))
#define UFG_RAISE_OVERFLOW() ((void)feraiseexcept(FE_OVERFLOW))
#endif
/* The dividend of a signed division made opaque to the optimizer: GCC 12 at -O2 folds
 * ufg_div(-a, b) into -(a / b) where a / b is computed too, under -fwrapv as well, and the
 * quotient of INT_MIN then has the wrong sign (-INT_MIN wraps to INT_MIN; INT_MIN / 2 is
 * negative).  Such a division does not vectorize on x86 anyway: nothing is lost. */
#if defined(__GNUC__) && !defined(__CUDACC__)
#define UFG_OPAQUE(x) __asm__("" : "+r"(x))
#else
#define UFG_OPAQUE(x) ((void)0)
#endif
#define UFG_DEFINE_DIVISION(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_div_##S(TYPE a, TYPE b) \
    { \
        UFG_OPAQUE(a); \
        if (b == 0) { UFG_RAISE_DIVIDE_BY_ZERO(); return 0; } \
        if (b == -1) {          /* -a, wrapping: INT_MIN is the nonzero value equal to it */ \
            const UTYPE negated = (UTYPE)0 - (UTYPE)a; \
            if (a != 0 && (UTYPE)a == negated) { UFG_RAISE_OVERFLOW(); } \
            return (TYPE)negated; \
        } \
        return a / b; \
    } \
    UFG_PRELUDE_FN TYPE ufg_rem_##S(TYPE a, TYPE b) \
    { \
        UFG_OPAQUE(a); \
        if (b == 0) { UFG_RAISE_DIVIDE_BY_ZERO(); return 0; } \
        return b == -1 ? 0 : a % b; \
    }
#define UFG_DEFINE_UNSIGNED_DIVISION(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_div_##S(TYPE a, TYPE b) \
    { \
        if (b == 0) { UFG_RAISE_DIVIDE_BY_ZERO(); return 0; } \
        return a / b; \
    } \
    UFG_PRELUDE_FN TYPE ufg_rem_##S(TYPE a, TYPE b) \
    { \
        if (b == 0) { UFG_RAISE_DIVIDE_BY_ZERO(); return 0; } \
        return a % b; \
    }
UFG_SIGNED_TYPES(UFG_DEFINE_DIVISION)
UFG_UNSIGNED_TYPES(UFG_DEFINE_UNSIGNED_DIVISION)
#undef UFG_DEFINE_DIVISION
#undef UFG_DEFINE_UNSIGNED_DIVISION
/* Of floating operands (a division the generator took for an integer one), plain division. */
#define UFG_DEFINE_FLOAT_DIVISION(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_div_##S(TYPE a, TYPE b) { return a / b; }
UFG_FLOAT_TYPES(UFG_DEFINE_FLOAT_DIVISION)
#undef UFG_DEFINE_FLOAT_DIVISION

UFG_PRELUDE_FN uint32_t ufg_bits_of_f(float x) { uint32_t b; memcpy(&b, &x, sizeof b); return b; }
UFG_PRELUDE_FN float ufg_f_of_bits(uint32_t b) { float x; memcpy(&x, &b, sizeof x); return x; }
UFG_PRELUDE_FN uint64_t ufg_bits_of_d(double x) { uint64_t b; memcpy(&b, &x, sizeof b); return b; }
UFG_PRELUDE_FN double ufg_d_of_bits(uint64_t b) { double x; memcpy(&x, &b, sizeof x); return x; }

/* Of floats, the same, raising no flag: NumPy's own loops raise none for a NaN, quiet or
 * signalling, and a body's max(x, 0) must not fail under np.errstate(invalid='raise') where
 * np.maximum passes the NaN through.  An ordered comparison (a < b) raises invalid for any NaN.
 * C99's isless and GCC's __builtin_isless are quiet in scalar code, but GCC 12 vectorizes them
 * with signalling predicates (cmpnltps, vcmpps GT_OS), and no x86 comparison is quiet for a
 * signalling NaN.  So floats are compared as integers, on their bits: a NaN is a magnitude
 * above Inf's, and other values order as their magnitudes, negated where the sign bit is set
 * (so -0.0 and +0.0 are both 0, equal).  The result is chosen with bit masks, not ?:, with
 * which GCC 12 leaves clamp (min of max's result) of three arrays unvectorized.  The loops'
 * x86-64-v3 and v4 clones vectorize all of it; the SSE2 clone (CPUs without AVX2) only the
 * float32 loops, SSE2 having no 64-bit integer comparison.  The simulator, and nvcc for the
 * GPU (which has no flags), compile the same code to the same values. */
#define UFG_DEFINE_FLOAT_ORDER(S, TYPE, BITS, SIGNED_BITS, INF_BITS, ONE_BITS) \
    UFG_PRELUDE_FN int ufg_is_nan_##S(TYPE x) \
    { return (ufg_bits_of_##S(x) & (~(BITS)0 >> 1)) > (INF_BITS); } \
    UFG_PRELUDE_FN SIGNED_BITS ufg_order_key_##S(TYPE x) \
    { \
        const BITS bits = ufg_bits_of_##S(x), magnitude = bits & (~(BITS)0 >> 1); \
        return bits == magnitude ? (SIGNED_BITS)magnitude : -(SIGNED_BITS)magnitude; \
    } \
    /* a < b, false where either is NaN (C99's isless). */ \
    UFG_PRELUDE_FN int ufg_less_##S(TYPE a, TYPE b) \
    { \
        const int ordered = !(ufg_is_nan_##S(a) | ufg_is_nan_##S(b)); \
        return ordered & (ufg_order_key_##S(a) < ufg_order_key_##S(b)); \
    } \
    UFG_PRELUDE_FN TYPE ufg_choose_##S(int when, TYPE a, TYPE b) \
    { \
        const BITS mask = (BITS)0 - (BITS)(when != 0); \
        return ufg_##S##_of_bits((ufg_bits_of_##S(a) & mask) | (ufg_bits_of_##S(b) & ~mask)); \
    } \
    UFG_PRELUDE_FN TYPE ufg_min_##S(TYPE a, TYPE b) \
    { return ufg_choose_##S(ufg_less_##S(a, b) | ufg_is_nan_##S(a), a, b); } \
    UFG_PRELUDE_FN TYPE ufg_max_##S(TYPE a, TYPE b) \
    { return ufg_choose_##S(ufg_less_##S(b, a) | ufg_is_nan_##S(a), a, b); } \
    UFG_PRELUDE_FN TYPE ufg_clamp_##S(TYPE x, TYPE lo, TYPE hi) \
    { return ufg_min_##S(ufg_max_##S(x, lo), hi); } \
    UFG_PRELUDE_FN TYPE ufg_fmin_##S(TYPE a, TYPE b) \
    { return ufg_choose_##S(ufg_less_##S(a, b) | ufg_is_nan_##S(b), a, b); } \
    UFG_PRELUDE_FN TYPE ufg_fmax_##S(TYPE a, TYPE b) \
    { return ufg_choose_##S(ufg_less_##S(b, a) | ufg_is_nan_##S(b), a, b); } \
    /* A NaN is itself; +-0.0 is +0.0; anything else 1.0 with x's sign. */ \
    UFG_PRELUDE_FN TYPE ufg_sign_##S(TYPE x) \
    { \
        const BITS bits = ufg_bits_of_##S(x), magnitude = bits & (~(BITS)0 >> 1); \
        const BITS unit = (bits ^ magnitude) | (ONE_BITS); \
        return ufg_##S##_of_bits(ufg_is_nan_##S(x) ? bits : magnitude == 0 ? 0 : unit); \
    }
UFG_DEFINE_FLOAT_ORDER(f, float, uint32_t, int32_t, 0x7f800000u, 0x3f800000u)
UFG_DEFINE_FLOAT_ORDER(d, double, uint64_t, int64_t, 0x7ff0000000000000ull, 0x3ff0000000000000ull)
#undef UFG_DEFINE_FLOAT_ORDER

/* The classification macros and the quiet comparisons, as an int 0 or 1 (fpclassify: one of
 * FP_NAN, FP_INFINITE, FP_ZERO, FP_SUBNORMAL, FP_NORMAL), as NumPy's isnan, isinf, isfinite
 * and signbit give them, for every type.  Left to the compilers they disagree: glibc's isinf
 * is __builtin_isinf_sign (isinf(-inf) is -1, so isinf(a) + isinf(b) of -inf and inf is 0),
 * its signbit is "nonzero" (1 in a vector lane, the sign bit itself, -2147483648, in scalar
 * code), GCC vectorizes isnan and isfinite with comparisons that raise invalid for a NaN (where
 * np.isnan raises nothing), and nvcc refuses isnormal, fpclassify and isgreater.  So they are
 * read from the bits, as min and max compare (above): exact, quiet for every NaN, vectorized.
 * isless and its family follow the type rule (float, else double) and are false where either
 * argument is NaN; of an integer the classification is that of its double value: never NaN nor
 * infinite, normal unless 0. */
#ifndef FP_NAN /* nvcc's device code without <math.h>: C leaves the values open, glibc's */
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_ZERO 2
#define FP_SUBNORMAL 3
#define FP_NORMAL 4
#endif
#define UFG_DEFINE_FLOAT_CLASS(S, TYPE, BITS, INF_BITS, MIN_NORMAL_BITS) \
    UFG_PRELUDE_FN BITS ufg_magnitude_bits_##S(TYPE x) { return ufg_bits_of_##S(x) & (~(BITS)0 >> 1); } \
    UFG_PRELUDE_FN int ufg_isnan_##S(TYPE x) { return ufg_is_nan_##S(x); } \
    UFG_PRELUDE_FN int ufg_isinf_##S(TYPE x) { return ufg_magnitude_bits_##S(x) == (INF_BITS); } \
    UFG_PRELUDE_FN int ufg_isfinite_##S(TYPE x) { return ufg_magnitude_bits_##S(x) < (INF_BITS); } \
    UFG_PRELUDE_FN int ufg_isnormal_##S(TYPE x) \
    { return (BITS)(ufg_magnitude_bits_##S(x) - (MIN_NORMAL_BITS)) < (INF_BITS) - (MIN_NORMAL_BITS); } \
    UFG_PRELUDE_FN int ufg_signbit_##S(TYPE x) { return (int)(ufg_bits_of_##S(x) >> (8 * sizeof(BITS) - 1)); } \
    UFG_PRELUDE_FN int ufg_fpclassify_##S(TYPE x) \
    { \
        const BITS magnitude = ufg_magnitude_bits_##S(x); \
        return magnitude > (INF_BITS) ? FP_NAN : magnitude == (INF_BITS) ? FP_INFINITE \
               : magnitude >= (MIN_NORMAL_BITS) ? FP_NORMAL : magnitude != 0 ? FP_SUBNORMAL : FP_ZERO; \
    } \
    UFG_PRELUDE_FN int ufg_isunordered_##S(TYPE a, TYPE b) { return ufg_is_nan_##S(a) | ufg_is_nan_##S(b); } \
    UFG_PRELUDE_FN int ufg_isless_##S(TYPE a, TYPE b) { return ufg_less_##S(a, b); } \
    UFG_PRELUDE_FN int ufg_isgreater_##S(TYPE a, TYPE b) { return ufg_less_##S(b, a); } \
    UFG_PRELUDE_FN int ufg_islessequal_##S(TYPE a, TYPE b) \
    { return !ufg_isunordered_##S(a, b) & (ufg_order_key_##S(a) <= ufg_order_key_##S(b)); } \
    UFG_PRELUDE_FN int ufg_isgreaterequal_##S(TYPE a, TYPE b) \
    { return !ufg_isunordered_##S(a, b) & (ufg_order_key_##S(a) >= ufg_order_key_##S(b)); } \
    UFG_PRELUDE_FN int ufg_islessgreater_##S(TYPE a, TYPE b) \
    { return !ufg_isunordered_##S(a, b) & (ufg_order_key_##S(a) != ufg_order_key_##S(b)); }
UFG_DEFINE_FLOAT_CLASS(f, float, uint32_t, 0x7f800000u, 0x00800000u)
UFG_DEFINE_FLOAT_CLASS(d, double, uint64_t, 0x7ff0000000000000ull, 0x0010000000000000ull)
#undef UFG_DEFINE_FLOAT_CLASS
#define UFG_DEFINE_INTEGER_CLASS(S, TYPE, NEGATIVE) \
    UFG_PRELUDE_FN int ufg_isnan_##S(TYPE x) { (void)x; return 0; } \
    UFG_PRELUDE_FN int ufg_isinf_##S(TYPE x) { (void)x; return 0; } \
    UFG_PRELUDE_FN int ufg_isfinite_##S(TYPE x) { (void)x; return 1; } \
    UFG_PRELUDE_FN int ufg_isnormal_##S(TYPE x) { return x != 0; } \
    UFG_PRELUDE_FN int ufg_signbit_##S(TYPE x) { (void)x; return NEGATIVE; } \
    UFG_PRELUDE_FN int ufg_fpclassify_##S(TYPE x) { return x != 0 ? FP_NORMAL : FP_ZERO; }
#define UFG_DEFINE_SIGNED_CLASS(S, TYPE, UTYPE) UFG_DEFINE_INTEGER_CLASS(S, TYPE, x < 0)
#define UFG_DEFINE_UNSIGNED_CLASS(S, TYPE, UTYPE) UFG_DEFINE_INTEGER_CLASS(S, TYPE, 0)
UFG_SIGNED_TYPES(UFG_DEFINE_SIGNED_CLASS)
UFG_UNSIGNED_TYPES(UFG_DEFINE_UNSIGNED_CLASS)
#undef UFG_DEFINE_SIGNED_CLASS
#undef UFG_DEFINE_UNSIGNED_CLASS
#undef UFG_DEFINE_INTEGER_CLASS

/* The Bessel functions, of a float computed in double and rounded once (glibc's j0f, as CUDA's,
 * is off by up to 9 ULP, with a large relative error near the zeros; j0 in double, rounded,
 * is within 1 ULP of float32), of a double or an integer in double.  jn and yn take the order
 * first, an int.  Not in <tgmath.h>: the host would compute a float32 body's j0(x) in double
 * and nvcc in float. */
#define UFG_DEFINE_BESSEL(name) \
    UFG_PRELUDE_FN float ufg_##name##_f(float x) { return (float)(name)((double)x); } \
    UFG_PRELUDE_FN double ufg_##name##_d(double x) { return (name)(x); }
#define UFG_DEFINE_BESSEL_N(name) \
    UFG_PRELUDE_FN float ufg_##name##_f(int n, float x) { return (float)(name)(n, (double)x); } \
    UFG_PRELUDE_FN double ufg_##name##_d(int n, double x) { return (name)(n, x); }
UFG_DEFINE_BESSEL(j0)
UFG_DEFINE_BESSEL(j1)
UFG_DEFINE_BESSEL(y0)
UFG_DEFINE_BESSEL(y1)
UFG_DEFINE_BESSEL_N(jn)
UFG_DEFINE_BESSEL_N(yn)
#undef UFG_DEFINE_BESSEL
#undef UFG_DEFINE_BESSEL_N

/* nexttoward(x, y): the next value of x's type after x towards y, y itself where they are
 * equal.  C's y is a long double, which the GPU has not: here it is a double (a body has no
 * long double), so of a double (or an integer, in double) it is nextafter, and of a float it
 * steps towards the infinity on y's side, chosen on the bits (quiet for a NaN), x with y's
 * sign where they are equal, a NaN where either is. */
UFG_PRELUDE_FN float ufg_nexttoward_f(float x, double y)
{
    const double xd = (double)x;
    const uint32_t up = -(uint32_t)ufg_less_d(xd, y), down = -(uint32_t)ufg_less_d(y, xd);
    const uint32_t nan = -(uint32_t)(ufg_is_nan_f(x) | ufg_is_nan_d(y));
    const uint32_t equal = ~(up | down | nan);
    const uint32_t y_sign = (uint32_t)(ufg_bits_of_d(y) >> 32) & 0x80000000u;
    const uint32_t toward = (0x7f800000u & up) | (0xff800000u & down) | (0x7fc00000u & nan)
                            | (((ufg_bits_of_f(x) & 0x7fffffffu) | y_sign) & equal);
    return (nextafterf)(x, ufg_f_of_bits(toward));
}
UFG_PRELUDE_FN double ufg_nexttoward_d(double x, double y) { return (nextafter)(x, y); }

/* abs of the most negative integer wraps to itself, as np.abs does: negate in the unsigned
 * twin, where overflow is defined. */
#define UFG_DEFINE_ABS_SIGNED(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_abs_##S(TYPE x) { return x < 0 ? (TYPE)((UTYPE)0 - (UTYPE)x) : x; }
#define UFG_DEFINE_ABS_UNSIGNED(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_abs_##S(TYPE x) { return x; }
UFG_SIGNED_TYPES(UFG_DEFINE_ABS_SIGNED)
UFG_UNSIGNED_TYPES(UFG_DEFINE_ABS_UNSIGNED)
UFG_PRELUDE_FN float ufg_abs_f(float x) { return (fabsf)(x); }
UFG_PRELUDE_FN double ufg_abs_d(double x) { return (fabs)(x); }

/* pow of integers: exact (wrapping) repeated squaring, as np.power of integers.  NumPy refuses
 * a negative exponent; a body cannot raise, so it gets 1 / base**-e truncated towards zero:
 * 1 for base 1, +-1 for base -1, 0 otherwise (base 0 included). */
#define UFG_DEFINE_POW_SIGNED(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_pow_##S(TYPE base, TYPE exponent) \
    { \
        if (exponent < 0) { \
            return base == 1 ? (TYPE)1 : base == -1 ? ((exponent & 1) ? (TYPE)-1 : (TYPE)1) : (TYPE)0; \
        } \
        return (TYPE)ufg_pow_unsigned_##S((UTYPE)base, (UTYPE)exponent); \
    }
#define UFG_DEFINE_POW_UNSIGNED(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN UTYPE ufg_pow_unsigned_##S(UTYPE base, UTYPE exponent) \
    { \
        UTYPE result = 1; \
        for (; exponent != 0; exponent >>= 1) { \
            if (exponent & 1) { \
                result *= base; \
            } \
            base *= base; \
        } \
        return result; \
    }
UFG_SIGNED_TYPES(UFG_DEFINE_POW_UNSIGNED)
UFG_UNSIGNED_TYPES(UFG_DEFINE_POW_UNSIGNED)
UFG_SIGNED_TYPES(UFG_DEFINE_POW_SIGNED)
#define UFG_DEFINE_POW_UNSIGNED_NAME(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_pow_##S(TYPE base, TYPE exponent) { return ufg_pow_unsigned_##S(base, exponent); }
UFG_UNSIGNED_TYPES(UFG_DEFINE_POW_UNSIGNED_NAME)
UFG_PRELUDE_FN float ufg_pow_f(float base, float exponent) { return (powf)(base, exponent); }
UFG_PRELUDE_FN double ufg_pow_d(double base, double exponent) { return (pow)(base, exponent); }

/* hypot of float32, inline so that a loop calling it vectorizes (a libm call would keep the
 * whole loop scalar, its sin and cos included).  The squares of two floats and their sum are
 * exact or rounded once in double, which cannot overflow there, so one sqrt gives the result
 * glibc's own hypotf computes the same way, with the same flags.  An infinite argument wins
 * over a quiet NaN one, as C requires (over a signaling one NaN, as glibc's): chosen with
 * integer masks, because GCC will not turn a floating-point comparison or a branch around sqrt
 * into vector code without -fno-trapping-math. */
UFG_PRELUDE_FN float ufg_hypot_f(float x, float y)
{
    const double xd = (double)x, yd = (double)y;
    const float r = (float)(sqrt)(xd * xd + yd * yd);
    uint32_t r_bits, x_bits, y_bits;
    memcpy(&r_bits, &r, sizeof r);
    memcpy(&x_bits, &x, sizeof x);
    memcpy(&y_bits, &y, sizeof y);
    /* Beside an infinity, the other argument's magnitude is the larger only if it is a NaN. */
    const uint32_t xa = x_bits & 0x7fffffffu, ya = y_bits & 0x7fffffffu, big = xa > ya ? xa : ya;
    const uint32_t infinite = -(uint32_t)(((xa == 0x7f800000u) | (ya == 0x7f800000u))
                                          & !((big > 0x7f800000u) & !(big & 0x00400000u)));
    /* A NaN argument: the first one, quieted, as glibc's hypotf and np.hypot give it (x + y);
     * the square root of the squares' sum leaves the pick to the compiler's operand order. */
    const uint32_t nan = -(uint32_t)(big > 0x7f800000u);
    const uint32_t nan_bits = (xa > 0x7f800000u ? x_bits : y_bits) | 0x00400000u;
    r_bits = (r_bits & ~nan) | (nan_bits & nan);
    r_bits = (r_bits & ~infinite) | (0x7f800000u & infinite);
    float result;
    memcpy(&result, &r_bits, sizeof result);
    return result;
}

/* real, imag, conj and arg of a real value, as np.real, np.imag, np.conj and np.angle give
 * them: itself, 0, itself, and 0 or pi (arg computes in double for integers, as <math.h>). */
#define UFG_DEFINE_REAL_PARTS(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_real_##S(TYPE x) { return x; } \
    UFG_PRELUDE_FN TYPE ufg_imag_##S(TYPE x) { (void)x; return (TYPE)0; } \
    UFG_PRELUDE_FN TYPE ufg_conj_##S(TYPE x) { return x; }
UFG_SIGNED_TYPES(UFG_DEFINE_REAL_PARTS)
UFG_UNSIGNED_TYPES(UFG_DEFINE_REAL_PARTS)
UFG_FLOAT_TYPES(UFG_DEFINE_REAL_PARTS)
#define UFG_DEFINE_ARG_INTEGER(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN double ufg_arg_##S(TYPE x) { return (atan2)(0.0, (double)x); }
UFG_SIGNED_TYPES(UFG_DEFINE_ARG_INTEGER)
UFG_UNSIGNED_TYPES(UFG_DEFINE_ARG_INTEGER)
UFG_PRELUDE_FN float ufg_arg_f(float x) { return (atan2f)(0.0f, x); }
UFG_PRELUDE_FN double ufg_arg_d(double x) { return (atan2)(0.0, x); }

/* glibc's hypot of float64 corrects h = sqrt(ax*ax + ay*ay) by (these) / (2h), the first where
 * h <= 2ay, the second elsewhere: written once for ufg_hypot_d and ufg_hypot_d_scalar. */
UFG_PRELUDE_FN double ufg_hypot_near_y(double ax, double ay, double h)
{
    const double dy = h - ay;
    return ax * (2.0 * dy - ax) + (dy - 2.0 * (ax - ay)) * dy;
}
UFG_PRELUDE_FN double ufg_hypot_near_x(double ax, double ay, double h)
{
    const double dx = h - ax;
    return 2.0 * dx * (ax - 2.0 * ay) + ((4.0 * dx - ay) * ay + dx * dx);
}

/* hypot of float64, inline and branch-free so that a loop calling it vectorizes (libm's hypot
 * is a scalar call: a loop calling it ran at 12 ns an element, its sin and cos scalar too).
 * Bit for bit glibc's hypot (2.35 and later, built without FMA, as Debian's x86-64 glibc is):
 * it returns ax + ay where ay <= ax * 2^-54, and otherwise corrects sqrt(ax*ax + ay*ay) by the
 * same operations, on arguments scaled by the power of two that brings ax to [1, 4).  Scaling
 * by a power of two changes no rounding, so every lane gets glibc's result, the one np.hypot
 * returns; a CPU test compares them over the whole exponent range.  Each lane computes every
 * case, so a case's inputs are masked (integer masks: GCC will not if-convert floating-point
 * work around a branch without -fno-trapping-math) to values that raise no spurious flag:
 * overflow only where the result overflows, invalid and divide never.  Unlike glibc it does
 * not force the underflow flag for an exact subnormal result (NumPy ignores underflow). */
UFG_PRELUDE_FN double ufg_hypot_d(double x, double y)
{
    const int64_t inf_bits = 0x7ff0000000000000ll;
    const uint64_t one_bits = 0x3ff0000000000000ull;
    const uint64_t x_bits = ufg_bits_of_d(x), y_bits = ufg_bits_of_d(y);
    const int64_t xa = (int64_t)(x_bits & 0x7fffffffffffffffull);
    const int64_t ya = (int64_t)(y_bits & 0x7fffffffffffffffull);
    const int64_t big = xa > ya ? xa : ya, small = xa > ya ? ya : xa;
    /* Beside an infinity, the other argument's magnitude is the larger only if it is a NaN. */
    const uint64_t infinite = -(uint64_t)(((xa == inf_bits) | (ya == inf_bits))
                                          & !((big > inf_bits) & !(big & 0x0008000000000000ll)));
    const uint64_t nonfinite = -(uint64_t)(big >= inf_bits);
    /* Lanes whose result is not the corrected square root compute it of (1, 0), so that a
     * NaN, an infinity or hypot(0, 0)'s 0/0 raises nothing; a negligible ay needs no such
     * care (it is at least ax * 2^-60 here, its square far from underflow), and keeping it
     * off the square root's inputs keeps its test off their dependency chain, the one a
     * reduction's chain of hypots waits on. */
    const uint64_t unused = nonfinite | -(uint64_t)(big == 0);
    /* ay < ax * 2^-59: negligible, and left out of the scaling, where it would underflow. */
    const uint64_t far = -(uint64_t)((big >> 52) - (small >> 52) > 60);
    int64_t e = big >> 52;
    e = e < 1 ? 1 : e > 2045 ? 2045 : e;
    e = (e & (int64_t)~unused) | (1023 & (int64_t)unused);
    const double scale = ufg_d_of_bits((uint64_t)(2046 - e) << 52);
    const double unscale = ufg_d_of_bits((uint64_t)e << 52);
    const double ax = ufg_d_of_bits(((uint64_t)big & ~unused) | (one_bits & unused)) * scale;
    const double ay = ufg_d_of_bits((uint64_t)small & ~(unused | far)) * scale;
    /* glibc's correction, both of its branches, the one it takes chosen after. */
    double h = (sqrt)(ax * ax + ay * ay);
    const double near_y = ufg_hypot_near_y(ax, ay, h), near_x = ufg_hypot_near_x(ax, ay, h);
    const uint64_t y_branch = -(uint64_t)(ufg_bits_of_d(h) <= ufg_bits_of_d(2.0 * ay));
    h -= ufg_d_of_bits((ufg_bits_of_d(near_y) & y_branch) | (ufg_bits_of_d(near_x) & ~y_branch))
         / (2.0 * h);
    const uint64_t corrected = ufg_bits_of_d(h * unscale);
    /* ay <= ax * 2^-54, non-negative doubles compared as their bits: glibc returns ax + ay. */
    const double two_to_minus_54 = 5.5511151231257827021181583404541015625e-17;
    const uint64_t negligible = far | -(uint64_t)(ufg_bits_of_d(ay)
                                                  <= ufg_bits_of_d(ax * two_to_minus_54));
    const uint64_t direct = nonfinite | negligible;
    const uint64_t sum = ufg_bits_of_d(ufg_d_of_bits((uint64_t)big)
                                       + ufg_d_of_bits((uint64_t)small & negligible));
    /* A NaN argument: glibc's x + y, the first NaN's payload, quieted; an infinite one wins
     * over a quiet NaN (glibc's invalid flag for a signaling one is not raised here). */
    const uint64_t nan = (xa > inf_bits ? x_bits : y_bits) | 0x0008000000000000ull;
    return ufg_d_of_bits((corrected & ~direct) | (sum & direct & ~nonfinite)
                         | (nan & nonfinite & ~infinite) | ((uint64_t)inf_bits & infinite));
}

/* hypot for scalar code (the host loops' `_scalar` copies of a body: UFG_BODY_FLAVOUR, below):
 * the results and flags of ufg_hypot_f and ufg_hypot_d, behind branches that scalar code
 * predicts, so that a call waits on a square root and glibc's correction, not on the masks and
 * domain crossings that keep the vector code branch-free (float64: a .reduce's chain took 24
 * ns a step through ufg_hypot_d, 16 through this, 15 through glibc's hypot).  Where both
 * arguments are finite, the larger in [2^-400, 2^400) and the smaller at most 2^60 times
 * smaller, no square, product or sum below can overflow or be subnormal, so ufg_hypot_d's
 * operations on its arguments scaled by a power of two give the same bits on the arguments
 * themselves; anything else takes ufg_hypot_d. */
UFG_PRELUDE_FN double ufg_hypot_d_scalar(double x, double y)
{
    const uint64_t xa = ufg_bits_of_d(x) & 0x7fffffffffffffffull;
    const uint64_t ya = ufg_bits_of_d(y) & 0x7fffffffffffffffull;
    const uint64_t big = xa > ya ? xa : ya, small = xa > ya ? ya : xa;
    const uint64_t lowest = (uint64_t)(1023 - 400) << 52, span = (uint64_t)800 << 52;
    if (__builtin_expect(big - lowest < span && (small >> 52) + 60 >= (big >> 52), 1)) {
        /* Finite here: compared as doubles, raising nothing. */
        const double fx = (fabs)(x), fy = (fabs)(y);
        const double ax = fx > fy ? fx : fy, ay = fx > fy ? fy : fx;
        if (ay <= ax * 5.5511151231257827021181583404541015625e-17) {   /* ax * 2^-54 */
            return ax + ay;
        }
        const double h = (sqrt)(ax * ax + ay * ay);
        double near;
        if (h <= 2.0 * ay) {
            near = ufg_hypot_near_y(ax, ay, h);
        }
        else {
            near = ufg_hypot_near_x(ax, ay, h);
        }
        return h - near / (2.0 * h);
    }
    return ufg_hypot_d(x, y);
}

/* The float32 one: both finite, the square root in double, as ufg_hypot_f computes it. */
UFG_PRELUDE_FN float ufg_hypot_f_scalar(float x, float y)
{
    uint32_t x_bits, y_bits;
    memcpy(&x_bits, &x, sizeof x);
    memcpy(&y_bits, &y, sizeof y);
    if (__builtin_expect(((x_bits & 0x7fffffffu) < 0x7f800000u)
                         & ((y_bits & 0x7fffffffu) < 0x7f800000u), 1)) {
        const double xd = (double)x, yd = (double)y;
        return (float)(sqrt)(xd * xd + yd * yd);
    }
    return ufg_hypot_f(x, y);
}

/* The variant of a prelude function a body calls: empty, or _scalar where the generated bodies
 * header compiles a body's copy for the host loops' scalar code, or _special for their kernel
 * of the blocks after one whose exp underflowed or whose log divided by zero (bodies.h.j2;
 * that kernel's hypot is the plain one). */
#define ufg_hypot_f_special ufg_hypot_f
#define ufg_hypot_d_special ufg_hypot_d
#define UFG_BODY_FLAVOUR
#define UFG_FLAVOURED(name) UFG_FLAVOURED_(name, UFG_BODY_FLAVOUR)
#define UFG_FLAVOURED_(name, flavour) UFG_FLAVOURED_PASTE_(name, flavour)
#define UFG_FLAVOURED_PASTE_(name, flavour) name##flavour

/* |z| of a complex from its parts, inline and branch-free so that a loop calling it vectorizes
 * (glibc's cabs is a scalar call, 10x slower than np.abs).  Both parts are scaled by the power
 * of two that brings the larger near 1 (exact), so the squares can neither overflow nor
 * underflow to nothing; the sum of the squares is within 1.5 ULP, its square root within
 * 1.25 ULP of |z|: correctly rounded for 91% of random values, never off by more than 1 ULP
 * in a test of 20 million (np.abs, also not correctly rounded, is within 2 ULP of |z|).  An
 * infinite part wins over a NaN one, as for hypot.  Not ufg_hypot_f or ufg_hypot_d: the
 * former's square root in double, the latter's correction step and division, cost 2x (complex
 * abs through them: complex64 0.48x np.abs, complex128 0.32x). */
#define UFG_DEFINE_MODULUS(S, FLOAT, BITS, SBITS, MANTISSA, MAX_EXPONENT, GAP, SQRT) \
    UFG_PRELUDE_FN FLOAT ufg_modulus_##S(FLOAT re, FLOAT im) \
    { \
        /* Signed throughout: with the sign bits cleared, a signed compare orders the parts \
         * as an unsigned one would, and AVX2 has the signed 64-bit compare only (GCC 12 \
         * spent four instructions a lane on each unsigned one: complex128 0.86x np.abs). */ \
        const SBITS inf_bits = (SBITS)(MAX_EXPONENT) << (MANTISSA); \
        SBITS re_bits, im_bits, r_bits; \
        FLOAT scale, unscale, r; \
        memcpy(&re_bits, &re, sizeof re); \
        memcpy(&im_bits, &im, sizeof im); \
        re_bits &= (SBITS)(~(BITS)0 >> 1); \
        im_bits &= (SBITS)(~(BITS)0 >> 1); \
        /* A part GAP binades below the other cannot change the sum of squares; scaled, or \
         * squared, it would underflow and raise a flag np.abs does not, so it is dropped. */ \
        SBITS big_bits = re_bits > im_bits ? re_bits : im_bits; \
        const SBITS floor_bits = big_bits - ((SBITS)(GAP) << (MANTISSA)); \
        re_bits &= -(SBITS)(re_bits >= floor_bits); \
        im_bits &= -(SBITS)(im_bits >= floor_bits); \
        /* The larger part's exponent bits, clamped so that both powers are normal. */ \
        const SBITS lowest = (SBITS)1 << (MANTISSA); \
        const SBITS highest = (SBITS)((MAX_EXPONENT) - 2) << (MANTISSA); \
        big_bits = big_bits < highest ? big_bits : highest; \
        big_bits = big_bits > lowest ? big_bits : lowest; \
        const SBITS unscale_bits = big_bits & inf_bits; \
        const SBITS scale_bits = ((SBITS)((MAX_EXPONENT) - 1) << (MANTISSA)) - unscale_bits; \
        FLOAT re_abs, im_abs; \
        memcpy(&re_abs, &re_bits, sizeof re_abs); \
        memcpy(&im_abs, &im_bits, sizeof im_abs); \
        memcpy(&scale, &scale_bits, sizeof scale); \
        memcpy(&unscale, &unscale_bits, sizeof unscale); \
        const FLOAT x = re_abs * scale, y = im_abs * scale; \
        r = SQRT(x * x + y * y) * unscale; \
        memcpy(&r_bits, &r, sizeof r); \
        const SBITS infinite = -(SBITS)((re_bits == inf_bits) | (im_bits == inf_bits)); \
        r_bits = (r_bits & ~infinite) | (inf_bits & infinite); \
        memcpy(&r, &r_bits, sizeof r); \
        return r; \
    }
UFG_DEFINE_MODULUS(f, float, uint32_t, int32_t, 23, 255, 60, (sqrtf))
UFG_DEFINE_MODULUS(d, double, uint64_t, int64_t, 52, 2047, 500, (sqrt))
#undef UFG_DEFINE_MODULUS

#ifndef __cplusplus
UFG_PRELUDE_FN float ufg_cabs_f(float _Complex z) { return ufg_modulus_f(crealf(z), cimagf(z)); }
UFG_PRELUDE_FN double ufg_cabs_d(double _Complex z) { return ufg_modulus_d(creal(z), cimag(z)); }
UFG_PRELUDE_FN int ufg_isnan_cf(float _Complex z) { return ufg_isnan_f(crealf(z)) | ufg_isnan_f(cimagf(z)); }
UFG_PRELUDE_FN int ufg_isnan_cd(double _Complex z) { return ufg_isnan_d(creal(z)) | ufg_isnan_d(cimag(z)); }
UFG_PRELUDE_FN int ufg_isinf_cf(float _Complex z) { return ufg_isinf_f(crealf(z)) | ufg_isinf_f(cimagf(z)); }
UFG_PRELUDE_FN int ufg_isinf_cd(double _Complex z) { return ufg_isinf_d(creal(z)) | ufg_isinf_d(cimag(z)); }
UFG_PRELUDE_FN int ufg_isfinite_cf(float _Complex z) { return ufg_isfinite_f(crealf(z)) & ufg_isfinite_f(cimagf(z)); }
UFG_PRELUDE_FN int ufg_isfinite_cd(double _Complex z) { return ufg_isfinite_d(creal(z)) & ufg_isfinite_d(cimag(z)); }

/* exp of a complex, inline and branch-free so that a loop calling it vectorizes with the
 * vector exp, sin and cos (glibc's cexpf is a scalar call of 15-50 ns an element).  On
 * ordinary values it is glibc's own formula, exp(x) cos(y) + i exp(x) sin(y), including its
 * rescue of an x whose exp alone overflows (x > t = 709: exp(x - t) times cos(y) exp(t)),
 * so a scalar loop (the simulator, a flag-exact re-run) gives cexp's bits; every other
 * value, and every flag that NumPy reports (invalid, overflow), is glibc's too: each special
 * case is computed from arguments replaced by 0, so no lane raises what glibc would not, and
 * invalid is raised by a product inf * 0 exactly where glibc raises it.  complex64 computes
 * in double and rounds once: within 2 ULP of cexpf, where float arithmetic would compound the
 * vector functions' errors to 5. */
#define UFG_CEXP_T 709.0                      /* glibc's t: (int)(1023 ln 2) */
#define UFG_CEXP_EXP_T 8.218407461554972e307  /* exp(t) */
UFG_PRELUDE_FN uint64_t ufg_select_bits(uint64_t mask, uint64_t a, uint64_t b)
{
    return (a & mask) | (b & ~mask);
}

UFG_PRELUDE_FN double _Complex ufg_cexp_d(double _Complex z)
{
    const double x = creal(z), y = cimag(z);
    const uint64_t sign = 0x8000000000000000ull, inf = 0x7ff0000000000000ull;
    const uint64_t quiet_nan = 0x7ff8000000000000ull;
    const uint64_t xb = ufg_bits_of_d(x), yb = ufg_bits_of_d(y);
    /* Masks, all ones where true. */
    const uint64_t x_finite = -(uint64_t)((xb & ~sign) < inf);
    const uint64_t y_finite = -(uint64_t)((yb & ~sign) < inf);
    const uint64_t y_zero = -(uint64_t)((yb & ~sign) == 0);
    const uint64_t x_plus_inf = -(uint64_t)(xb == inf), x_minus_inf = -(uint64_t)(xb == (inf | sign));
    const uint64_t x_nan = ~x_finite & ~x_plus_inf & ~x_minus_inf;

    /* y finite and x not NaN: glibc's formula on the finite parts (x = +-inf has |exp| inf
     * or 0, and its sign from cos and sin).  sin is not computed but taken as 1 where y is 0,
     * whose imaginary part is y itself, as in glibc. */
    const double xs = ufg_d_of_bits(xb & x_finite & y_finite), ys = ufg_d_of_bits(yb & y_finite);
    const uint64_t rescue = -(uint64_t)(xs > UFG_CEXP_T);
    const double e = exp(ufg_d_of_bits(ufg_select_bits(rescue, ufg_bits_of_d(xs - UFG_CEXP_T),
                                                       ufg_bits_of_d(xs))));
    const double factor = ufg_d_of_bits(ufg_select_bits(rescue, ufg_bits_of_d(UFG_CEXP_EXP_T),
                                                        ufg_bits_of_d(1.0)));
    const double c = cos(ys), s = sin(ys);
    const double magnitude = ufg_d_of_bits((ufg_bits_of_d(e) & x_finite) | (inf & x_plus_inf));
    const double sine = ufg_d_of_bits(ufg_select_bits(y_zero | ~y_finite, ufg_bits_of_d(1.0),
                                                      ufg_bits_of_d(s)));
    const uint64_t re = ufg_bits_of_d(magnitude * (c * factor));
    const uint64_t im = ufg_select_bits(y_zero, yb, ufg_bits_of_d(magnitude * (sine * factor)));

    /* glibc raises invalid for a finite x beside an infinite or NaN y, and for a NaN x beside
     * a y that is neither 0 nor NaN; its NaN results are the positive quiet NaN. */
    const uint64_t y_nan = -(uint64_t)((yb & ~sign) > inf);
    const uint64_t invalid = (x_finite & ~y_finite) | (x_nan & ~y_zero & ~y_nan);
    const uint64_t nan = (ufg_bits_of_d(ufg_d_of_bits(inf & invalid) * 0.0) & ~sign) | quiet_nan;
    /* An infinite or NaN y beside x = +inf gives (inf, y - y), beside -inf (0, +-0). */
    const double y_if_plus_inf = ufg_d_of_bits(yb & x_plus_inf);
    const uint64_t y_minus_y = ufg_bits_of_d(y_if_plus_inf - y_if_plus_inf);
    const uint64_t re_other = (inf & x_plus_inf) | (nan & (x_finite | x_nan));
    const uint64_t im_other = (y_minus_y & x_plus_inf) | (yb & sign & x_minus_inf)
                              | (nan & (x_finite | x_nan));

    const uint64_t formula = y_finite & ~x_nan;
    return CMPLX(ufg_d_of_bits(ufg_select_bits(formula, re, re_other)),
                 ufg_d_of_bits(ufg_select_bits(formula | (x_nan & y_zero), im, im_other)));
}

UFG_PRELUDE_FN float _Complex ufg_cexp_f(float _Complex z)
{
    const double _Complex w = ufg_cexp_d(CMPLX((double)crealf(z), (double)cimagf(z)));
    return CMPLXF((float)creal(w), (float)cimag(w));
}
#undef UFG_CEXP_T
#undef UFG_CEXP_EXP_T
#endif

/* ---------------------------------------------------------------- the math functions' lists */

/* One argument: float computes in float, double and integers in double. */
#define UFG_MATH_1(X) \
    X(sqrt) X(cbrt) X(exp) X(exp2) X(expm1) X(log) X(log2) X(log10) X(log1p) \
    X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) \
    X(asinh) X(acosh) X(atanh) X(erf) X(erfc) X(tgamma) X(lgamma) \
    X(logb) X(floor) X(ceil) X(trunc) X(round) X(rint) X(nearbyint) X(fabs)
/* Two arguments: the type of `a + b` when it is float or double, else double. */
#define UFG_MATH_2(X) \
    X(atan2) X(fmod) X(copysign) X(fdim) X(remainder) X(nextafter)

/* ---------------------------------------------------------------- C: _Generic dispatch */
#ifndef __cplusplus

#define UFG_INTEGER_ARMS(name) \
    int: ufg_##name##_i, long: ufg_##name##_l, long long: ufg_##name##_ll, \
    unsigned int: ufg_##name##_u, unsigned long: ufg_##name##_ul, \
    unsigned long long: ufg_##name##_ull
#define UFG_ARMS(name) UFG_INTEGER_ARMS(name), float: ufg_##name##_f, double: ufg_##name##_d
/* A <math.h> function of a real type: float_fn for float, double_fn for double and every
 * integer (computing in double).  No arm for a complex value, nor a default one, which C would
 * take for a complex value and convert it to its real part: such a call does not compile
 * ("'_Generic' selector of type 'complex double' is not compatible with any association"). */
#define UFG_REAL_ARMS(float_fn, double_fn) \
    float: float_fn, double: double_fn, int: double_fn, long: double_fn, long long: double_fn, \
    unsigned int: double_fn, unsigned long: double_fn, unsigned long long: double_fn

/* The arguments of a call that computes in the type of `a + b`, each converted to that type
 * where the body wrote the call: `1 ? (a) : (b)` has the type of `a + b` and evaluates `a`
 * only.  _Generic's controlling expression `(a) + (b)` is not evaluated, and GCC warns of
 * nothing there: a float beside a double, `max(x, 0.0)` of a float32 `x`, would compute in
 * double without the -Wdouble-promotion warning that `x * 0.0` draws.  Converted here, in
 * evaluated code, it draws that warning ("to match other result of conditional") at the
 * body's call, through the macro expansion notes.  The values are those a + b would give. */
#define UFG_SUM_ARGS_2(a, b) (1 ? (a) : (b)), (0 ? (a) : (b))
#define UFG_SUM_ARGS_3(a, b, c) \
    (1 ? (1 ? (a) : (b)) : (c)), (1 ? (0 ? (a) : (b)) : (c)), (0 ? (0 ? (a) : (b)) : (c))

/* A body's integer `/` and `%`, rewritten (gen/operators.py): total on integers; of floating
 * or complex operands (a division the generator took for an integer one), plain division. */
UFG_PRELUDE_FN long double ufg_div_ld(long double a, long double b) { return a / b; }
UFG_PRELUDE_FN float _Complex ufg_div_cf(float _Complex a, float _Complex b) { return a / b; }
UFG_PRELUDE_FN double _Complex ufg_div_cd(double _Complex a, double _Complex b) { return a / b; }
#define ufg_div(a, b) _Generic((a) + (b), UFG_ARMS(div), long double: ufg_div_ld, \
    float _Complex: ufg_div_cf, double _Complex: ufg_div_cd)(UFG_SUM_ARGS_2(a, b))
#define ufg_rem(a, b) _Generic((a) + (b), UFG_INTEGER_ARMS(rem))(UFG_SUM_ARGS_2(a, b))

#undef pow
#undef fma
/*
 * exp and log for the host loops' kernel of the blocks after one whose exp underflowed or
 * whose log divided by zero (a body's `_special` copy: UFG_BODY_FLAVOUR, bodies.h.j2;
 * host_loops.h, ufg_run_chosen).  libmvec computes a vector holding an argument outside its
 * fast range through scalar exp or log, lane by lane: exp of float32 data that mostly
 * underflows ran at 0.07x np.exp, log of data with a zero in every vector at 0.2x np.log.
 * Here such an argument reaches the vector function as one it computes fast, and the result
 * is made from that one's by operations that give it the bits and flags of the function's:
 *   - exp of an argument whose exp rounds to +0 (finite, below -104 for float, -746 for
 *     double: exp(x) < 2^-150, 2^-1075): exp(+0) = 1, scaled twice by 2^-100 (2^-600), which
 *     rounds to +0 with underflow and inexact; every other result is scaled by 1, exactly;
 *   - log of +-0: log(1) = +0, less 1 / +0 - 1 = +inf (divide-by-zero): -inf; every other
 *     result less 1 / 1 - 1 = +0, exactly.
 * The masks are integer arithmetic, where the compiler cannot see that the lanes replaced are
 * the lanes whose result is replaced (GCC 12 then passed exp the original arguments), nor fold
 * the constants' products, which would drop the flags.  Slower than the plain functions on
 * ordinary data (exp 1.6x for float32): the kernel is not the first choice.
 */
UFG_PRELUDE_FN float ufg_exp_f_special(float x)
{
    const uint32_t bits = ufg_bits_of_f(x), magnitude = bits & 0x7fffffffu;
    const uint32_t zero = -(uint32_t)((bits >> 31) & (magnitude > 0x42d00000u)   /* 104.0f */
                                      & (magnitude < 0x7f800000u));
    const float scale = ufg_f_of_bits((ufg_bits_of_f(0x1p-100f) & zero)
                                      | (ufg_bits_of_f(1.0f) & ~zero));
    return (expf)(ufg_f_of_bits(bits & ~zero)) * scale * scale;
}

UFG_PRELUDE_FN double ufg_exp_d_special(double x)
{
    const uint64_t bits = ufg_bits_of_d(x), magnitude = bits & 0x7fffffffffffffffull;
    const uint64_t zero = -(uint64_t)((bits >> 63) & (magnitude > 0x4087500000000000ull)  /* 746.0 */
                                      & (magnitude < 0x7ff0000000000000ull));
    const double scale = ufg_d_of_bits((ufg_bits_of_d(0x1p-600) & zero)
                                       | (ufg_bits_of_d(1.0) & ~zero));
    return (exp)(ufg_d_of_bits(bits & ~zero)) * scale * scale;
}

UFG_PRELUDE_FN float ufg_log_f_special(float x)
{
    const uint32_t bits = ufg_bits_of_f(x);
    const uint32_t zero = -(uint32_t)((bits & 0x7fffffffu) == 0);
    const float divisor = ufg_f_of_bits(ufg_bits_of_f(1.0f) & ~zero);     /* +0 for +-0 */
    return (logf)(ufg_f_of_bits((bits & ~zero) | (ufg_bits_of_f(1.0f) & zero)))
           - (1.0f / divisor - 1.0f);
}

UFG_PRELUDE_FN double ufg_log_d_special(double x)
{
    const uint64_t bits = ufg_bits_of_d(x);
    const uint64_t zero = -(uint64_t)((bits & 0x7fffffffffffffffull) == 0);
    const double divisor = ufg_d_of_bits(ufg_bits_of_d(1.0) & ~zero);
    return (log)(ufg_d_of_bits((bits & ~zero) | (ufg_bits_of_d(1.0) & zero)))
           - (1.0 / divisor - 1.0);
}

/* exp and log of a complex are the prelude's (ufg_cexp_*: vectorizes) or <complex.h>'s, of a
 * real <math.h>'s, or in a body's `_special` copy the ones above. */
UFG_PRELUDE_FN float ufg_exp_f(float x) { return (expf)(x); }
UFG_PRELUDE_FN float ufg_exp_f_scalar(float x) { return (expf)(x); }
UFG_PRELUDE_FN double ufg_exp_d(double x) { return (exp)(x); }
UFG_PRELUDE_FN double ufg_exp_d_scalar(double x) { return (exp)(x); }
UFG_PRELUDE_FN float ufg_log_f(float x) { return (logf)(x); }
UFG_PRELUDE_FN float ufg_log_f_scalar(float x) { return (logf)(x); }
UFG_PRELUDE_FN double ufg_log_d(double x) { return (log)(x); }
UFG_PRELUDE_FN double ufg_log_d_scalar(double x) { return (log)(x); }
#undef exp
#define exp(x) _Generic(+(x), float _Complex: ufg_cexp_f, double _Complex: ufg_cexp_d, \
                        long double _Complex: cexpl, float: UFG_FLAVOURED(ufg_exp_f), \
                        long double: expl, default: UFG_FLAVOURED(ufg_exp_d))(x)
#undef log
#define log(x) _Generic(+(x), float _Complex: clogf, double _Complex: (clog), \
                        long double _Complex: clogl, float: UFG_FLAVOURED(ufg_log_f), \
                        long double: logl, default: UFG_FLAVOURED(ufg_log_d))(x)
#define abs(x) _Generic(+(x), UFG_ARMS(abs), float _Complex: ufg_cabs_f, double _Complex: ufg_cabs_d)(x)
#define sign(x) _Generic(+(x), UFG_ARMS(sign))(x)
#define min(a, b) _Generic((a) + (b), UFG_ARMS(min))(UFG_SUM_ARGS_2(a, b))
#define max(a, b) _Generic((a) + (b), UFG_ARMS(max))(UFG_SUM_ARGS_2(a, b))
#define clamp(x, lo, hi) _Generic((x) + (lo) + (hi), UFG_ARMS(clamp))(UFG_SUM_ARGS_3(x, lo, hi))
#define pow(a, b) _Generic((a) + (b), UFG_ARMS(pow), float _Complex: cpowf, \
                          double _Complex: (cpow))(UFG_SUM_ARGS_2(a, b))
/* The parts of a complex value, its conjugate and its argument; a real value is its own real
 * part and conjugate, with imaginary part 0 (np.real, np.imag, np.conj, np.angle). */
#undef conj
#define real(x) _Generic(+(x), UFG_ARMS(real), float _Complex: crealf, double _Complex: (creal))(x)
#define imag(x) _Generic(+(x), UFG_ARMS(imag), float _Complex: cimagf, double _Complex: (cimag))(x)
#define conj(x) _Generic(+(x), UFG_ARMS(conj), float _Complex: conjf, double _Complex: (conj))(x)
/* The imaginary unit in the precision of the loop's floating type UFG_CONSTANT_T (T where T
 * is floating or complex; below, with the constants): complex128 where that is double or
 * complex128 (so `I * angle` of a float64 angle converts nothing, nor `n * I` in a
 * complex128(int64) loop), complex64 elsewhere, as <complex.h>'s I. */
#undef I
#define I _Generic((UFG_CONSTANT_T)0, double: (double _Complex)_Complex_I, \
                   double _Complex: (double _Complex)_Complex_I, default: _Complex_I)
#define arg(x) _Generic(+(x), UFG_ARMS(arg), float _Complex: cargf, double _Complex: (carg))(x)
#define fma(a, b, c) _Generic((a) + (b) + (c), UFG_REAL_ARMS(fmaf, (fma)))(UFG_SUM_ARGS_3(a, b, c))
/* <tgmath.h> already gives the one-argument functions this file's meaning; the two-argument
 * ones follow `a + b` here, where <tgmath.h> would compute float beside an integer in double. */
/* fabs of a complex is its modulus, as abs (<tgmath.h> would call libm's cabs). */
#undef fabs
#define fabs(x) _Generic(+(x), float _Complex: ufg_cabs_f, double _Complex: ufg_cabs_d, \
                         float: fabsf, default: (fabs))(x)
#undef atan2
#undef hypot
#undef fmod
#undef fmin
#undef fmax
#undef copysign
#undef fdim
#undef remainder
#undef nextafter
#define atan2(a, b) _Generic((a) + (b), UFG_REAL_ARMS(atan2f, (atan2)))(UFG_SUM_ARGS_2(a, b))
#define hypot(a, b) _Generic((a) + (b), \
                            UFG_REAL_ARMS(UFG_FLAVOURED(ufg_hypot_f), UFG_FLAVOURED(ufg_hypot_d))) \
    (UFG_SUM_ARGS_2(a, b))
#define fmod(a, b) _Generic((a) + (b), UFG_REAL_ARMS(fmodf, (fmod)))(UFG_SUM_ARGS_2(a, b))
#define fmin(a, b) _Generic((a) + (b), UFG_REAL_ARMS(ufg_fmin_f, ufg_fmin_d))(UFG_SUM_ARGS_2(a, b))
#define fmax(a, b) _Generic((a) + (b), UFG_REAL_ARMS(ufg_fmax_f, ufg_fmax_d))(UFG_SUM_ARGS_2(a, b))
#define copysign(a, b) _Generic((a) + (b), UFG_REAL_ARMS(copysignf, (copysign)))(UFG_SUM_ARGS_2(a, b))
#define fdim(a, b) _Generic((a) + (b), UFG_REAL_ARMS(fdimf, (fdim)))(UFG_SUM_ARGS_2(a, b))
#define remainder(a, b) _Generic((a) + (b), UFG_REAL_ARMS(remainderf, (remainder)))(UFG_SUM_ARGS_2(a, b))
#define nextafter(a, b) _Generic((a) + (b), UFG_REAL_ARMS(nextafterf, (nextafter)))(UFG_SUM_ARGS_2(a, b))
/* Classification: of a complex value isnan, isinf and isfinite as NumPy's (either part NaN,
 * either part infinite, both finite); signbit, isnormal and fpclassify take none. */
#undef isnan
#undef isinf
#undef isfinite
#undef isnormal
#undef signbit
#undef fpclassify
#undef isless
#undef isgreater
#undef islessequal
#undef isgreaterequal
#undef islessgreater
#undef isunordered
#define isnan(x) _Generic(+(x), UFG_ARMS(isnan), float _Complex: ufg_isnan_cf, double _Complex: ufg_isnan_cd)(x)
#define isinf(x) _Generic(+(x), UFG_ARMS(isinf), float _Complex: ufg_isinf_cf, double _Complex: ufg_isinf_cd)(x)
#define isfinite(x) _Generic(+(x), UFG_ARMS(isfinite), float _Complex: ufg_isfinite_cf, \
                             double _Complex: ufg_isfinite_cd)(x)
#define isnormal(x) _Generic(+(x), UFG_ARMS(isnormal))(x)
#define signbit(x) _Generic(+(x), UFG_ARMS(signbit))(x)
#define fpclassify(x) _Generic(+(x), UFG_ARMS(fpclassify))(x)
#define isless(a, b) _Generic((a) + (b), UFG_REAL_ARMS(ufg_isless_f, ufg_isless_d))(UFG_SUM_ARGS_2(a, b))
#define isgreater(a, b) _Generic((a) + (b), UFG_REAL_ARMS(ufg_isgreater_f, ufg_isgreater_d))(UFG_SUM_ARGS_2(a, b))
#define islessequal(a, b) _Generic((a) + (b), UFG_REAL_ARMS(ufg_islessequal_f, ufg_islessequal_d)) \
    (UFG_SUM_ARGS_2(a, b))
#define isgreaterequal(a, b) _Generic((a) + (b), UFG_REAL_ARMS(ufg_isgreaterequal_f, ufg_isgreaterequal_d)) \
    (UFG_SUM_ARGS_2(a, b))
#define islessgreater(a, b) _Generic((a) + (b), UFG_REAL_ARMS(ufg_islessgreater_f, ufg_islessgreater_d)) \
    (UFG_SUM_ARGS_2(a, b))
#define isunordered(a, b) _Generic((a) + (b), UFG_REAL_ARMS(ufg_isunordered_f, ufg_isunordered_d)) \
    (UFG_SUM_ARGS_2(a, b))
/* The functions of a real value and an int (or an int's address): float in float, double and
 * integers in double, as <tgmath.h> has them, but refusing a complex value, and the same under
 * nvcc, which refuses an integer (std::ldexp of an int is a constexpr host function there). */
#undef ldexp
#undef scalbn
#undef scalbln
#undef frexp
#undef ilogb
#undef lround
#undef llround
#undef lrint
#undef llrint
#undef nexttoward
#define ldexp(x, n) _Generic(+(x), UFG_REAL_ARMS(ldexpf, (ldexp)))(x, n)
#define scalbn(x, n) _Generic(+(x), UFG_REAL_ARMS(scalbnf, (scalbn)))(x, n)
#define scalbln(x, n) _Generic(+(x), UFG_REAL_ARMS(scalblnf, (scalbln)))(x, n)
#define frexp(x, e) _Generic(+(x), UFG_REAL_ARMS(frexpf, (frexp)))(x, e)
#define ilogb(x) _Generic(+(x), UFG_REAL_ARMS(ilogbf, (ilogb)))(x)
#define lround(x) _Generic(+(x), UFG_REAL_ARMS(lroundf, (lround)))(x)
#define llround(x) _Generic(+(x), UFG_REAL_ARMS(llroundf, (llround)))(x)
#define lrint(x) _Generic(+(x), UFG_REAL_ARMS(lrintf, (lrint)))(x)
#define llrint(x) _Generic(+(x), UFG_REAL_ARMS(llrintf, (llrint)))(x)
#define nexttoward(x, y) _Generic(+(x), UFG_REAL_ARMS(ufg_nexttoward_f, ufg_nexttoward_d))(x, y)
#define j0(x) _Generic(+(x), UFG_REAL_ARMS(ufg_j0_f, ufg_j0_d))(x)
#define j1(x) _Generic(+(x), UFG_REAL_ARMS(ufg_j1_f, ufg_j1_d))(x)
#define y0(x) _Generic(+(x), UFG_REAL_ARMS(ufg_y0_f, ufg_y0_d))(x)
#define y1(x) _Generic(+(x), UFG_REAL_ARMS(ufg_y1_f, ufg_y1_d))(x)
#define jn(n, x) _Generic(+(x), UFG_REAL_ARMS(ufg_jn_f, ufg_jn_d))(n, x)
#define yn(n, x) _Generic(+(x), UFG_REAL_ARMS(ufg_yn_f, ufg_yn_d))(n, x)

/* ---------------------------------------------------------------- C++ (nvcc): overloads */
#else

/* C99's spellings that C++ lacks, with their C meaning: a helper's `T *restrict p`, a `_Bool`
 * local, `_Static_assert(...)`. */
#define restrict __restrict__
#define _Bool bool
#define _Static_assert static_assert

#define UFG_OVERLOADS(name) \
    UFG_PRELUDE_FN int ufg_##name##_of(int x) { return ufg_##name##_i(x); } \
    UFG_PRELUDE_FN long ufg_##name##_of(long x) { return ufg_##name##_l(x); } \
    UFG_PRELUDE_FN long long ufg_##name##_of(long long x) { return ufg_##name##_ll(x); } \
    UFG_PRELUDE_FN unsigned int ufg_##name##_of(unsigned int x) { return ufg_##name##_u(x); } \
    UFG_PRELUDE_FN unsigned long ufg_##name##_of(unsigned long x) { return ufg_##name##_ul(x); } \
    UFG_PRELUDE_FN unsigned long long ufg_##name##_of(unsigned long long x) { return ufg_##name##_ull(x); } \
    UFG_PRELUDE_FN float ufg_##name##_of(float x) { return ufg_##name##_f(x); } \
    UFG_PRELUDE_FN double ufg_##name##_of(double x) { return ufg_##name##_d(x); } \
    template <class A> UFG_PRELUDE_FN auto ufg_##name(A x) -> decltype(+x) \
    { return ufg_##name##_of(static_cast<decltype(+x)>(x)); }
#define UFG_OVERLOADS_2(name) \
    UFG_PRELUDE_FN int ufg_##name##_of(int a, int b) { return ufg_##name##_i(a, b); } \
    UFG_PRELUDE_FN long ufg_##name##_of(long a, long b) { return ufg_##name##_l(a, b); } \
    UFG_PRELUDE_FN long long ufg_##name##_of(long long a, long long b) { return ufg_##name##_ll(a, b); } \
    UFG_PRELUDE_FN unsigned int ufg_##name##_of(unsigned int a, unsigned int b) { return ufg_##name##_u(a, b); } \
    UFG_PRELUDE_FN unsigned long ufg_##name##_of(unsigned long a, unsigned long b) { return ufg_##name##_ul(a, b); } \
    UFG_PRELUDE_FN unsigned long long ufg_##name##_of(unsigned long long a, unsigned long long b) \
    { return ufg_##name##_ull(a, b); } \
    UFG_PRELUDE_FN float ufg_##name##_of(float a, float b) { return ufg_##name##_f(a, b); } \
    UFG_PRELUDE_FN double ufg_##name##_of(double a, double b) { return ufg_##name##_d(a, b); } \
    template <class A, class B> UFG_PRELUDE_FN auto ufg_##name(A a, B b) -> decltype(a + b) \
    { return ufg_##name##_of(static_cast<decltype(a + b)>(a), static_cast<decltype(a + b)>(b)); }
UFG_OVERLOADS(abs)
UFG_OVERLOADS(sign)
UFG_OVERLOADS_2(min)
UFG_OVERLOADS_2(max)
UFG_OVERLOADS_2(pow)
/* A body's integer `/` and `%`, rewritten (gen/operators.py): total on integers, plain
 * division of anything else (float, double, complex). */
#define UFG_DIVISION_OVERLOADS(S, TYPE, UTYPE) \
    UFG_PRELUDE_FN TYPE ufg_div_of(TYPE a, TYPE b) { return ufg_div_##S(a, b); } \
    UFG_PRELUDE_FN TYPE ufg_rem_of(TYPE a, TYPE b) { return ufg_rem_##S(a, b); }
UFG_SIGNED_TYPES(UFG_DIVISION_OVERLOADS)
UFG_UNSIGNED_TYPES(UFG_DIVISION_OVERLOADS)
#undef UFG_DIVISION_OVERLOADS
template <class R> UFG_PRELUDE_FN R ufg_div_of(R a, R b) { return a / b; }
template <class A, class B> UFG_PRELUDE_FN auto ufg_div(A a, B b) -> decltype(a / b)
{ return ufg_div_of(static_cast<decltype(a / b)>(a), static_cast<decltype(a / b)>(b)); }
template <class A, class B> UFG_PRELUDE_FN auto ufg_rem(A a, B b) -> decltype(a % b)
{ return ufg_rem_of(static_cast<decltype(a % b)>(a), static_cast<decltype(a % b)>(b)); }
/* A body's integer +, -, * and unary - in this C++ compile only (gen/operators.py): nvcc has no
 * -fwrapv, which makes the C compiles' signed overflow wrap, and may fold `x + 1 > x` to true.
 * A signed type's sum, difference, product and negation are computed in its unsigned twin,
 * which wraps, and converted back (modulo 2^N in GCC and nvcc); anything else (unsigned types,
 * floats, pointers, complex values) with the plain operator. */
template <class R, class A, class B = A> struct ufg_wraps_in_unsigned {
    static constexpr bool value =
        UFG_COMPLEX_STD::is_integral<R>::value && UFG_COMPLEX_STD::is_signed<R>::value &&
        UFG_COMPLEX_STD::is_arithmetic<A>::value && UFG_COMPLEX_STD::is_arithmetic<B>::value;
};      /* not a pointer difference, q - p, whose result is a signed integer too */
#define UFG_DEFINE_WRAPPING(name, op) \
    template <class A, class B> UFG_PRELUDE_FN auto name(A a, B b) -> decltype(a op b) \
    { \
        typedef decltype(a op b) R; \
        if constexpr (ufg_wraps_in_unsigned<R, A, B>::value) { \
            typedef typename UFG_COMPLEX_STD::make_unsigned<R>::type U; \
            return static_cast<R>(static_cast<U>(static_cast<R>(a)) op static_cast<U>(static_cast<R>(b))); \
        } \
        else { \
            return a op b; \
        } \
    }
UFG_DEFINE_WRAPPING(ufg_add, +)
UFG_DEFINE_WRAPPING(ufg_sub, -)
UFG_DEFINE_WRAPPING(ufg_mul, *)
#undef UFG_DEFINE_WRAPPING
template <class A> UFG_PRELUDE_FN auto ufg_neg(A a) -> decltype(-a)
{
    typedef decltype(-a) R;
    if constexpr (ufg_wraps_in_unsigned<R, A>::value) {
        typedef typename UFG_COMPLEX_STD::make_unsigned<R>::type U;
        return static_cast<R>(static_cast<U>(0) - static_cast<U>(static_cast<R>(a)));
    }
    else {
        return -a;
    }
}
template <class A, class B, class C>
UFG_PRELUDE_FN auto ufg_clamp(A x, B lo, C hi) -> decltype(x + lo + hi)
{
    typedef decltype(x + lo + hi) R;
    return ufg_min(ufg_max(static_cast<R>(x), static_cast<R>(lo)), static_cast<R>(hi));
}
/* The <math.h> functions of integers compute in double; of a complex value (which converts to
 * its real part only explicitly) there is no overload, and the call does not compile ("no
 * instance of overloaded function ufg_atan2 matches the argument list"), as in C. */
#define UFG_IF_INTEGER(I) typename = typename UFG_COMPLEX_STD::enable_if< \
    UFG_COMPLEX_STD::is_integral<I>::value>::type
UFG_PRELUDE_FN float ufg_fma_of(float a, float b, float c) { return fmaf(a, b, c); }
UFG_PRELUDE_FN double ufg_fma_of(double a, double b, double c) { return ::fma(a, b, c); }
template <class I, UFG_IF_INTEGER(I)> UFG_PRELUDE_FN double ufg_fma_of(I a, I b, I c)
{ return ::fma(static_cast<double>(a), static_cast<double>(b), static_cast<double>(c)); }
template <class A, class B, class C>
UFG_PRELUDE_FN auto ufg_fma(A a, B b, C c) -> decltype(ufg_fma_of(a + b + c, a + b + c, a + b + c))
{
    typedef decltype(a + b + c) R;
    return ufg_fma_of(static_cast<R>(a), static_cast<R>(b), static_cast<R>(c));
}

/* float in float, double in double, an integer in double (a template loses to the exact
 * float and double overloads, and wins over converting an integer to float). */
#define UFG_DEFINE_MATH_1(name) \
    UFG_PRELUDE_FN float ufg_##name(float x) { return ::name##f(x); } \
    UFG_PRELUDE_FN double ufg_##name(double x) { return ::name(x); } \
    template <class I, UFG_IF_INTEGER(I)> \
    UFG_PRELUDE_FN double ufg_##name(I x) { return ::name(static_cast<double>(x)); }
#define UFG_DEFINE_MATH_2(name) UFG_DEFINE_MATH_2_AS(name, ::name##f, ::name)
#define UFG_DEFINE_MATH_2_AS(name, float_fn, double_fn) \
    UFG_DEFINE_MATH_2_RETURNING(name, float, float_fn, double, double_fn)
#define UFG_DEFINE_MATH_2_RETURNING(name, float_result, float_fn, double_result, double_fn) \
    UFG_PRELUDE_FN float_result ufg_##name##_of(float a, float b) { return float_fn(a, b); } \
    UFG_PRELUDE_FN double_result ufg_##name##_of(double a, double b) { return double_fn(a, b); } \
    template <class I, UFG_IF_INTEGER(I)> UFG_PRELUDE_FN double_result ufg_##name##_of(I a, I b) \
    { return double_fn(static_cast<double>(a), static_cast<double>(b)); } \
    template <class A, class B> \
    UFG_PRELUDE_FN auto ufg_##name(A a, B b) -> decltype(ufg_##name##_of(a + b, a + b)) \
    { return ufg_##name##_of(static_cast<decltype(a + b)>(a), static_cast<decltype(a + b)>(b)); }
UFG_MATH_1(UFG_DEFINE_MATH_1)
UFG_MATH_2(UFG_DEFINE_MATH_2)
UFG_DEFINE_MATH_2_AS(hypot, ufg_hypot_f, ufg_hypot_d)
UFG_DEFINE_MATH_2_AS(fmin, ufg_fmin_f, ufg_fmin_d)
UFG_DEFINE_MATH_2_AS(fmax, ufg_fmax_f, ufg_fmax_d)
#define UFG_DEFINE_COMPARE(name) UFG_DEFINE_MATH_2_RETURNING(name, int, ufg_##name##_f, int, ufg_##name##_d)
UFG_DEFINE_COMPARE(isless)
UFG_DEFINE_COMPARE(isgreater)
UFG_DEFINE_COMPARE(islessequal)
UFG_DEFINE_COMPARE(isgreaterequal)
UFG_DEFINE_COMPARE(islessgreater)
UFG_DEFINE_COMPARE(isunordered)

/* The classification (above), an int for every real type; isnan, isinf and isfinite of a
 * complex value as NumPy's, as in C. */
#define UFG_CLASS_OVERLOADS(name) \
    UFG_PRELUDE_FN int ufg_##name##_of(int x) { return ufg_##name##_i(x); } \
    UFG_PRELUDE_FN int ufg_##name##_of(long x) { return ufg_##name##_l(x); } \
    UFG_PRELUDE_FN int ufg_##name##_of(long long x) { return ufg_##name##_ll(x); } \
    UFG_PRELUDE_FN int ufg_##name##_of(unsigned int x) { return ufg_##name##_u(x); } \
    UFG_PRELUDE_FN int ufg_##name##_of(unsigned long x) { return ufg_##name##_ul(x); } \
    UFG_PRELUDE_FN int ufg_##name##_of(unsigned long long x) { return ufg_##name##_ull(x); } \
    UFG_PRELUDE_FN int ufg_##name##_of(float x) { return ufg_##name##_f(x); } \
    UFG_PRELUDE_FN int ufg_##name##_of(double x) { return ufg_##name##_d(x); } \
    template <class A> UFG_PRELUDE_FN auto ufg_##name(A x) -> decltype(ufg_##name##_of(+x)) \
    { return ufg_##name##_of(+x); }
UFG_CLASS_OVERLOADS(isnan)
UFG_CLASS_OVERLOADS(isinf)
UFG_CLASS_OVERLOADS(isfinite)
UFG_CLASS_OVERLOADS(isnormal)
UFG_CLASS_OVERLOADS(signbit)
UFG_CLASS_OVERLOADS(fpclassify)
template <class R> UFG_PRELUDE_FN int ufg_isnan(ufg_complex<R> z) { return ufg_isnan(z.re) | ufg_isnan(z.im); }
template <class R> UFG_PRELUDE_FN int ufg_isinf(ufg_complex<R> z) { return ufg_isinf(z.re) | ufg_isinf(z.im); }
template <class R> UFG_PRELUDE_FN int ufg_isfinite(ufg_complex<R> z) { return ufg_isfinite(z.re) & ufg_isfinite(z.im); }

/* A real value and an int: float in float, double and integers in double, as in C. */
#define UFG_DEFINE_WITH_INT(name, int_type) \
    UFG_PRELUDE_FN float ufg_##name(float x, int_type n) { return ::name##f(x, n); } \
    UFG_PRELUDE_FN double ufg_##name(double x, int_type n) { return ::name(x, n); } \
    template <class I, UFG_IF_INTEGER(I)> \
    UFG_PRELUDE_FN double ufg_##name(I x, int_type n) { return ::name(static_cast<double>(x), n); }
UFG_DEFINE_WITH_INT(ldexp, int)
UFG_DEFINE_WITH_INT(scalbn, int)
UFG_DEFINE_WITH_INT(scalbln, long)
UFG_DEFINE_WITH_INT(frexp, int *)
/* A real value to an integer: float in float, double and integers in double. */
#define UFG_DEFINE_TO_INTEGER(name, result) \
    UFG_PRELUDE_FN result ufg_##name(float x) { return ::name##f(x); } \
    UFG_PRELUDE_FN result ufg_##name(double x) { return ::name(x); } \
    template <class I, UFG_IF_INTEGER(I)> \
    UFG_PRELUDE_FN result ufg_##name(I x) { return ::name(static_cast<double>(x)); }
UFG_DEFINE_TO_INTEGER(ilogb, int)
UFG_DEFINE_TO_INTEGER(lround, long)
UFG_DEFINE_TO_INTEGER(llround, long long)
UFG_DEFINE_TO_INTEGER(lrint, long)
UFG_DEFINE_TO_INTEGER(llrint, long long)
/* The prelude's own functions of one real value (an int first, for jn and yn). */
#define UFG_DEFINE_OWN_1(name) \
    UFG_PRELUDE_FN float ufg_##name(float x) { return ufg_##name##_f(x); } \
    UFG_PRELUDE_FN double ufg_##name(double x) { return ufg_##name##_d(x); } \
    template <class I, UFG_IF_INTEGER(I)> \
    UFG_PRELUDE_FN double ufg_##name(I x) { return ufg_##name##_d(static_cast<double>(x)); }
#define UFG_DEFINE_OWN_N(name) \
    UFG_PRELUDE_FN float ufg_##name(int n, float x) { return ufg_##name##_f(n, x); } \
    UFG_PRELUDE_FN double ufg_##name(int n, double x) { return ufg_##name##_d(n, x); } \
    template <class I, UFG_IF_INTEGER(I)> \
    UFG_PRELUDE_FN double ufg_##name(int n, I x) { return ufg_##name##_d(n, static_cast<double>(x)); }
UFG_DEFINE_OWN_1(j0)
UFG_DEFINE_OWN_1(j1)
UFG_DEFINE_OWN_1(y0)
UFG_DEFINE_OWN_1(y1)
UFG_DEFINE_OWN_N(jn)
UFG_DEFINE_OWN_N(yn)
UFG_PRELUDE_FN float ufg_nexttoward(float x, double y) { return ufg_nexttoward_f(x, y); }
UFG_PRELUDE_FN double ufg_nexttoward(double x, double y) { return ufg_nexttoward_d(x, y); }
template <class I, UFG_IF_INTEGER(I)>
UFG_PRELUDE_FN double ufg_nexttoward(I x, double y) { return ufg_nexttoward_d(static_cast<double>(x), y); }

/* Complex arguments: the C99 complex functions, as <tgmath.h> picks them in C. */
#define UFG_COMPLEX_MATH_1(X) \
    X(sqrt) X(exp) X(log) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) \
    X(sinh) X(cosh) X(tanh) X(asinh) X(acosh) X(atanh)
#define UFG_DEFINE_COMPLEX_MATH_1(name) \
    template <class R> UFG_PRELUDE_FN ufg_complex<R> ufg_##name(ufg_complex<R> z) \
    { return ufg_complex_from_std(UFG_COMPLEX_STD::name(ufg_complex_to_std(z))); }
UFG_COMPLEX_MATH_1(UFG_DEFINE_COMPLEX_MATH_1)
template <class R> UFG_PRELUDE_FN ufg_complex<R> ufg_complex_pow(ufg_complex<R> a, ufg_complex<R> b)
{ return ufg_complex_from_std(UFG_COMPLEX_STD::pow(ufg_complex_to_std(a), ufg_complex_to_std(b))); }
template <class A, class B> UFG_PRELUDE_FN UFG_COMPLEX_OF(A, B) ufg_pow(ufg_complex<A> a, ufg_complex<B> b)
{ return ufg_complex_pow<typename ufg_complex_common<A, B>::type>(a, b); }
template <class A, class S, UFG_IF_REAL(S)> UFG_PRELUDE_FN UFG_COMPLEX_OF(A, S) ufg_pow(ufg_complex<A> a, S b)
{ return ufg_complex_pow<typename ufg_complex_common<A, S>::type>(a, b); }
template <class A, class S, UFG_IF_REAL(S)> UFG_PRELUDE_FN UFG_COMPLEX_OF(A, S) ufg_pow(S a, ufg_complex<A> b)
{ return ufg_complex_pow<typename ufg_complex_common<A, S>::type>(a, b); }
/* |z| as the C prelude computes it. */
UFG_PRELUDE_FN float ufg_modulus(ufg_complex<float> z) { return ufg_modulus_f(z.re, z.im); }
UFG_PRELUDE_FN double ufg_modulus(ufg_complex<double> z) { return ufg_modulus_d(z.re, z.im); }
template <class R> UFG_PRELUDE_FN R ufg_abs(ufg_complex<R> z) { return ufg_modulus(z); }
template <class R> UFG_PRELUDE_FN R ufg_fabs(ufg_complex<R> z) { return ufg_modulus(z); }
UFG_OVERLOADS(real)
UFG_OVERLOADS(imag)
UFG_OVERLOADS(conj)
UFG_PRELUDE_FN float ufg_arg(float x) { return ufg_arg_f(x); }
template <class A> UFG_PRELUDE_FN double ufg_arg(A x) { return ufg_arg_d(static_cast<double>(x)); }
template <class R> UFG_PRELUDE_FN R ufg_real(ufg_complex<R> z) { return z.re; }
template <class R> UFG_PRELUDE_FN R ufg_imag(ufg_complex<R> z) { return z.im; }
template <class R> UFG_PRELUDE_FN ufg_complex<R> ufg_conj(ufg_complex<R> z) { return {z.re, -z.im}; }
template <class R> UFG_PRELUDE_FN R ufg_arg(ufg_complex<R> z) { return ufg_atan2(z.im, z.re); }
/* The imaginary unit in the precision of the loop's floating type, as in C (above). */
template <class R> struct ufg_unit_of { typedef float type; };
template <> struct ufg_unit_of<double> { typedef double type; };
template <> struct ufg_unit_of<ufg_complex<double>> { typedef double type; };
#define I (ufg_complex<ufg_unit_of<UFG_CONSTANT_T>::type>(0, 1))

#define real(x) ufg_real(x)
#define imag(x) ufg_imag(x)
#define conj(x) ufg_conj(x)
#define arg(x) ufg_arg(x)
#define abs(x) ufg_abs(x)
#define sign(x) ufg_sign(x)
#define min(a, b) ufg_min((a), (b))
#define max(a, b) ufg_max((a), (b))
#define clamp(x, lo, hi) ufg_clamp((x), (lo), (hi))
#define pow(a, b) ufg_pow((a), (b))
#define fma(a, b, c) ufg_fma((a), (b), (c))
#define sqrt(x) ufg_sqrt(x)
#define cbrt(x) ufg_cbrt(x)
#define exp(x) ufg_exp(x)
#define exp2(x) ufg_exp2(x)
#define expm1(x) ufg_expm1(x)
#define log(x) ufg_log(x)
#define log2(x) ufg_log2(x)
#define log10(x) ufg_log10(x)
#define log1p(x) ufg_log1p(x)
#define sin(x) ufg_sin(x)
#define cos(x) ufg_cos(x)
#define tan(x) ufg_tan(x)
#define asin(x) ufg_asin(x)
#define acos(x) ufg_acos(x)
#define atan(x) ufg_atan(x)
#define sinh(x) ufg_sinh(x)
#define cosh(x) ufg_cosh(x)
#define tanh(x) ufg_tanh(x)
#define asinh(x) ufg_asinh(x)
#define acosh(x) ufg_acosh(x)
#define atanh(x) ufg_atanh(x)
#define erf(x) ufg_erf(x)
#define erfc(x) ufg_erfc(x)
#define tgamma(x) ufg_tgamma(x)
#define lgamma(x) ufg_lgamma(x)
#define floor(x) ufg_floor(x)
#define ceil(x) ufg_ceil(x)
#define trunc(x) ufg_trunc(x)
#define round(x) ufg_round(x)
#define rint(x) ufg_rint(x)
#define nearbyint(x) ufg_nearbyint(x)
#define fabs(x) ufg_fabs(x)
#define atan2(a, b) ufg_atan2((a), (b))
#define hypot(a, b) ufg_hypot((a), (b))
#define fmod(a, b) ufg_fmod((a), (b))
#define fmin(a, b) ufg_fmin((a), (b))
#define fmax(a, b) ufg_fmax((a), (b))
#define copysign(a, b) ufg_copysign((a), (b))
#define fdim(a, b) ufg_fdim((a), (b))
#define remainder(a, b) ufg_remainder((a), (b))
#define nextafter(a, b) ufg_nextafter((a), (b))
#define logb(x) ufg_logb(x)
#define isnan(x) ufg_isnan(x)
#define isinf(x) ufg_isinf(x)
#define isfinite(x) ufg_isfinite(x)
#define isnormal(x) ufg_isnormal(x)
#define signbit(x) ufg_signbit(x)
#define fpclassify(x) ufg_fpclassify(x)
#define isless(a, b) ufg_isless((a), (b))
#define isgreater(a, b) ufg_isgreater((a), (b))
#define islessequal(a, b) ufg_islessequal((a), (b))
#define isgreaterequal(a, b) ufg_isgreaterequal((a), (b))
#define islessgreater(a, b) ufg_islessgreater((a), (b))
#define isunordered(a, b) ufg_isunordered((a), (b))
#define ldexp(x, n) ufg_ldexp((x), (n))
#define scalbn(x, n) ufg_scalbn((x), (n))
#define scalbln(x, n) ufg_scalbln((x), (n))
#define frexp(x, e) ufg_frexp((x), (e))
#define ilogb(x) ufg_ilogb(x)
#define lround(x) ufg_lround(x)
#define llround(x) ufg_llround(x)
#define lrint(x) ufg_lrint(x)
#define llrint(x) ufg_llrint(x)
#define nexttoward(x, y) ufg_nexttoward((x), (y))
#define j0(x) ufg_j0(x)
#define j1(x) ufg_j1(x)
#define y0(x) ufg_y0(x)
#define y1(x) ufg_y1(x)
#define jn(n, x) ufg_jn((n), (x))
#define yn(n, x) ufg_yn((n), (x))

#endif /* C++ */

/* ---------------------------------------------------------------- constants
 * In the loop's floating type UFG_CONSTANT_T, which the bodies header defines beside T: T
 * where T is floating or complex; where T is an integer or bool (a mixed signature such as
 * float64(int64)), the first floating type among the signature's outputs and inputs (of a
 * complex one, its component type), double if none.  In type T there, PI would be 3. */
#define PI ((UFG_CONSTANT_T)3.141592653589793238462643383279502884)
#define TWO_PI ((UFG_CONSTANT_T)6.283185307179586476925286766559005768)
#define SQRT2 ((UFG_CONSTANT_T)1.414213562373095048801688724209698079)
#define LN2 ((UFG_CONSTANT_T)0.693147180559945309417232121458176568)

#endif /* UFUNCGEN_PRELUDE_H */
