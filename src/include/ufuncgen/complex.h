/*
 * complex64 and complex128 elements: two floats (or doubles), real part first, as NumPy
 * stores them.  A body computes on them with C's operators, written once:
 *
 *   C (host loops, simulator)   C99's float _Complex / double _Complex, compiled with
 *                               -fcx-fortran-rules (ufuncgen.cmake)
 *   CUDA C++ (nvcc)             ufg_complex<float> / ufg_complex<double>, below
 *
 * -fcx-fortran-rules makes C's complex product the plain formula NumPy's multiply uses,
 * (ar br - ai bi) + (ar bi + ai br) i, with no C99 Annex G recovery of infinities from a
 * NaN result (NumPy gives nan+nanj for (inf+infj) * 2j; Annex G would give an infinity), and
 * the quotient Smith's scaled formula, without the Annex G checks either.  The class below
 * implements exactly what GCC emits under that flag (tests/prelude checks it bit for bit), so
 * the three compiles of a body agree.  As in C, an operation with a real operand works on the
 * parts it touches: r * z is (r zr) + (r zi) i, r + z leaves zi alone, and the result's real
 * type is C's usual conversion of the two real types (complex64 * double is complex128,
 * complex64 * int stays complex64).
 *
 * The functions of a complex argument are the prelude's (prelude.h): exp, log, sqrt, sin, ...,
 * pow from C's <complex.h> in C and libcu++ on the GPU; abs its own, the same in both.
 */
#ifndef UFUNCGEN_COMPLEX_H
#define UFUNCGEN_COMPLEX_H

#ifndef __cplusplus

#include <complex.h>
/* glibc's <complex.h> defines CMPLX and CMPLXF (C11) for GCC only: Clang has the builtin. */
#if !defined(CMPLX) && defined(__clang__)
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif
#if !defined(CMPLXF) && defined(__clang__)
#define CMPLXF(x, y) __builtin_complex((float)(x), (float)(y))
#endif

typedef float _Complex ufg_complex64;
typedef double _Complex ufg_complex128;
/* The names a body declares complex locals with, the same in C and C++ (README, "Complex
 * numbers"); C99's `double complex`, `float _Complex` are C only. */
typedef ufg_complex64 complex64_t;
typedef ufg_complex128 complex128_t;

#else /* C++: nvcc's kernels, and g++ in tests/prelude */

#ifdef __CUDACC__
#include <cuda/std/complex>
#include <cuda/std/type_traits>
#define UFG_COMPLEX_STD cuda::std
#define UFG_COMPLEX_FN __host__ __device__ __forceinline__
#else
#include <complex>
#include <type_traits>
#define UFG_COMPLEX_STD std
#define UFG_COMPLEX_FN inline
#endif

template <class R>
struct ufg_complex {
    R re, im;

    ufg_complex() = default;
    UFG_COMPLEX_FN constexpr ufg_complex(R real, R imag) : re(real), im(imag) {}
    /* A real value converts with imaginary part +0, as in C. */
    template <class S, typename = typename UFG_COMPLEX_STD::enable_if<
                           UFG_COMPLEX_STD::is_arithmetic<S>::value>::type>
    UFG_COMPLEX_FN constexpr ufg_complex(S real) : re(static_cast<R>(real)), im(0) {}
    template <class S>
    UFG_COMPLEX_FN constexpr ufg_complex(const ufg_complex<S> &z)
        : re(static_cast<R>(z.re)), im(static_cast<R>(z.im)) {}
    /* (double)z is the real part, as a cast in C; never implicit, so that a real operand
     * beside a complex one is not silently narrowed. */
    template <class S, typename = typename UFG_COMPLEX_STD::enable_if<
                           UFG_COMPLEX_STD::is_arithmetic<S>::value>::type>
    UFG_COMPLEX_FN explicit operator S() const { return static_cast<S>(re); }
    UFG_COMPLEX_FN explicit operator double() const { return static_cast<double>(re); }
    /* A conditional between a complex64 and a double, `c ? z64 : x`, has the type complex128
     * in C.  C++ gives a conditional the type of one of its operands, and the converting
     * constructor above would make it complex64, x rounded to float (pi became
     * 3.1415927410125732, 1e300 inf).  This conversion, deleted, is never used, but it makes
     * the conditional ambiguous, so that C++ refuses it rather than narrow x (the host warns
     * there, README "Complex numbers"); `(double)z64` takes the explicit one above.  A
     * complex64 beside a complex128 is ambiguous already (both constructors convert), and a
     * float or an integer beside either converts to it, as in C. */
    template <class S, typename UFG_COMPLEX_STD::enable_if<
                           UFG_COMPLEX_STD::is_same<S, double>::value &&
                           UFG_COMPLEX_STD::is_same<R, float>::value, int>::type = 0>
    operator S() const = delete;
    /* In a condition, as C tests a complex: true when either part is nonzero. */
    UFG_COMPLEX_FN explicit operator bool() const { return re != 0 || im != 0; }

    template <class V> UFG_COMPLEX_FN ufg_complex &operator+=(const V &v) { return *this = *this + v; }
    template <class V> UFG_COMPLEX_FN ufg_complex &operator-=(const V &v) { return *this = *this - v; }
    template <class V> UFG_COMPLEX_FN ufg_complex &operator*=(const V &v) { return *this = *this * v; }
    template <class V> UFG_COMPLEX_FN ufg_complex &operator/=(const V &v) { return *this = *this / v; }
};

typedef ufg_complex<float> ufg_complex64;
typedef ufg_complex<double> ufg_complex128;
typedef ufg_complex64 complex64_t;
typedef ufg_complex128 complex128_t;

/* The real type C's usual conversions give two real types (or a real type and an integer). */
template <class A, class B> struct ufg_complex_common { typedef decltype(A() + B()) type; };
#define UFG_COMPLEX_OF(A, B) ufg_complex<typename ufg_complex_common<A, B>::type>
#define UFG_IF_REAL(S) typename = typename UFG_COMPLEX_STD::enable_if< \
    UFG_COMPLEX_STD::is_arithmetic<S>::value>::type

template <class A> UFG_COMPLEX_FN ufg_complex<A> operator+(ufg_complex<A> z) { return z; }
template <class A> UFG_COMPLEX_FN ufg_complex<A> operator-(ufg_complex<A> z) { return {-z.re, -z.im}; }

/* Two complex operands: the narrower converted to the wider first. */
template <class A, class B> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, B)
operator+(ufg_complex<A> a, ufg_complex<B> b)
{
    typedef typename ufg_complex_common<A, B>::type R;
    return {(R)a.re + (R)b.re, (R)a.im + (R)b.im};
}
template <class A, class B> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, B)
operator-(ufg_complex<A> a, ufg_complex<B> b)
{
    typedef typename ufg_complex_common<A, B>::type R;
    return {(R)a.re - (R)b.re, (R)a.im - (R)b.im};
}
template <class A, class B> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, B)
operator*(ufg_complex<A> a, ufg_complex<B> b)
{
    typedef typename ufg_complex_common<A, B>::type R;
    const R ar = a.re, ai = a.im, br = b.re, bi = b.im;
    return {ar * br - ai * bi, ar * bi + ai * br};
}
/* Smith's formula: divide through by the larger part of b, so that b's squares cannot
 * overflow. */
template <class R> UFG_COMPLEX_FN ufg_complex<R>
ufg_complex_quotient(R ar, R ai, R br, R bi)
{
    const R abs_br = br < 0 ? -br : br, abs_bi = bi < 0 ? -bi : bi;
    if (abs_br < abs_bi) {
        const R ratio = br / bi, scale = br * ratio + bi;
        return {(ar * ratio + ai) / scale, (ai * ratio - ar) / scale};
    }
    const R ratio = bi / br, scale = bi * ratio + br;
    return {(ai * ratio + ar) / scale, (ai - ar * ratio) / scale};
}
template <class A, class B> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, B)
operator/(ufg_complex<A> a, ufg_complex<B> b)
{
    typedef typename ufg_complex_common<A, B>::type R;
    return ufg_complex_quotient<R>(a.re, a.im, b.re, b.im);
}

/* A complex and a real operand: only the parts the real one touches change. */
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, S)
operator+(ufg_complex<A> z, S s)
{
    typedef typename ufg_complex_common<A, S>::type R;
    return {(R)z.re + (R)s, (R)z.im};
}
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, S)
operator+(S s, ufg_complex<A> z)
{
    typedef typename ufg_complex_common<A, S>::type R;
    return {(R)s + (R)z.re, (R)z.im};
}
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, S)
operator-(ufg_complex<A> z, S s)
{
    typedef typename ufg_complex_common<A, S>::type R;
    return {(R)z.re - (R)s, (R)z.im};
}
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, S)
operator-(S s, ufg_complex<A> z)
{
    typedef typename ufg_complex_common<A, S>::type R;
    return {(R)s - (R)z.re, -(R)z.im};
}
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, S)
operator*(ufg_complex<A> z, S s)
{
    typedef typename ufg_complex_common<A, S>::type R;
    return {(R)z.re * (R)s, (R)z.im * (R)s};
}
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, S)
operator*(S s, ufg_complex<A> z)
{
    typedef typename ufg_complex_common<A, S>::type R;
    return {(R)s * (R)z.re, (R)s * (R)z.im};
}
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, S)
operator/(ufg_complex<A> z, S s)
{
    typedef typename ufg_complex_common<A, S>::type R;
    return {(R)z.re / (R)s, (R)z.im / (R)s};
}
/* A real divided by a complex is the full quotient with a zero imaginary part, as GCC does. */
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN UFG_COMPLEX_OF(A, S)
operator/(S s, ufg_complex<A> z)
{
    typedef typename ufg_complex_common<A, S>::type R;
    return ufg_complex_quotient<R>((R)s, (R)0, (R)z.re, (R)z.im);
}

template <class A, class B> UFG_COMPLEX_FN bool operator==(ufg_complex<A> a, ufg_complex<B> b)
{
    typedef typename ufg_complex_common<A, B>::type R;
    return (R)a.re == (R)b.re && (R)a.im == (R)b.im;
}
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN bool operator==(ufg_complex<A> z, S s)
{ return z == ufg_complex<S>(s); }
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN bool operator==(S s, ufg_complex<A> z)
{ return z == ufg_complex<S>(s); }
template <class A, class B> UFG_COMPLEX_FN bool operator!=(ufg_complex<A> a, B b) { return !(a == b); }
template <class A, class S, UFG_IF_REAL(S)> UFG_COMPLEX_FN bool operator!=(S s, ufg_complex<A> z)
{ return !(z == s); }

/* To and from the standard library's complex, whose functions the prelude calls. */
template <class R> UFG_COMPLEX_FN UFG_COMPLEX_STD::complex<R> ufg_complex_to_std(ufg_complex<R> z)
{ return UFG_COMPLEX_STD::complex<R>(z.re, z.im); }
template <class R> UFG_COMPLEX_FN ufg_complex<R> ufg_complex_from_std(UFG_COMPLEX_STD::complex<R> z)
{ return {z.real(), z.imag()}; }

#endif /* C++ */

#endif /* UFUNCGEN_COMPLEX_H */
