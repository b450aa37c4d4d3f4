/*
 * Vector math for generated host loops.
 *
 * glibc's libmvec has SIMD versions of the common math functions.  GCC calls them from a
 * vectorized loop only when it knows they exist, which is what these
 * `#pragma omp declare simd` redeclarations say (they need -fopenmp-simd, and
 * -fno-math-errno so that a call has no side effect to preserve).  This keeps NumPy's
 * results for NaN and Inf, unlike fast math (a per-function opt-in).  Elsewhere the header is empty and the
 * loops call the scalar functions.
 */
#ifndef UFUNCGEN_VECMATH_H
#define UFUNCGEN_VECMATH_H

#include <math.h>

#if defined(__GLIBC__) && defined(__x86_64__) && !defined(__CUDACC__) && !defined(UFG_NO_LIBMVEC)

#define UFG_SIMD_1(name) \
    _Pragma("omp declare simd notinbranch") extern double name(double); \
    _Pragma("omp declare simd notinbranch") extern float name##f(float);
#define UFG_SIMD_2(name) \
    _Pragma("omp declare simd notinbranch") extern double name(double, double); \
    _Pragma("omp declare simd notinbranch") extern float name##f(float, float);

/* In libmvec since glibc 2.22. */
UFG_SIMD_1(exp)
UFG_SIMD_1(log)
UFG_SIMD_2(pow)

/*
 * sin and cos of the same value are merged by GCC into one scalar sincos call, which does
 * not vectorize.  Under other C names (same symbols, so the same libmvec variants) GCC does
 * not recognize them; host_loops.h points tgmath's sin and cos at these after <tgmath.h>.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define UFG_SIMD_ALIAS(alias, symbol, type) \
    _Pragma("omp declare simd notinbranch") \
    extern type alias(type) __asm__(symbol) __attribute__((const, nothrow));
UFG_SIMD_ALIAS(ufg_sinf, "sinf", float)
UFG_SIMD_ALIAS(ufg_sin, "sin", double)
UFG_SIMD_ALIAS(ufg_cosf, "cosf", float)
UFG_SIMD_ALIAS(ufg_cos, "cos", double)
#undef UFG_SIMD_ALIAS
#define UFG_SIMD_SIN_COS 1
#else
UFG_SIMD_1(sin)
UFG_SIMD_1(cos)
#endif

#if __GLIBC_PREREQ(2, 35)
UFG_SIMD_1(acos) UFG_SIMD_1(acosh) UFG_SIMD_1(asin) UFG_SIMD_1(asinh)
UFG_SIMD_1(atan) UFG_SIMD_1(atanh) UFG_SIMD_1(cbrt) UFG_SIMD_1(cosh)
UFG_SIMD_1(erf) UFG_SIMD_1(erfc) UFG_SIMD_1(exp10) UFG_SIMD_1(exp2)
UFG_SIMD_1(expm1) UFG_SIMD_1(log10) UFG_SIMD_1(log1p) UFG_SIMD_1(log2)
UFG_SIMD_1(sinh) UFG_SIMD_1(tan) UFG_SIMD_1(tanh)
UFG_SIMD_2(atan2)
/* Not hypot: libmvec's raises FE_INVALID for hypot(0, 0), so np.errstate would report an
 * error NumPy's own hypot does not; the scalar libm hypot is exact and quiet. */
#endif

#undef UFG_SIMD_1
#undef UFG_SIMD_2
#endif /* glibc on x86-64 */

#endif /* UFUNCGEN_VECMATH_H */
