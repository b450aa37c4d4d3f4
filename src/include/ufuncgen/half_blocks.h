/*
 * float16 elements to and from float a block at a time, for the host loops that convert
 * their float16 arguments before and after the body (a float16 elementwise loop, a gufunc's
 * float16 core inputs).  With F16C (every x86-64 CPU with AVX2) eight elements take one
 * instruction, sixteen an iteration; elsewhere half.h's branch-free conversions, which GCC vectorizes at about a
 * fifth of that speed.
 *
 * The bits are half.h's, and NumPy's, for every value: F16C rounds to nearest even as they
 * do and raises overflow where they do, but it quiets a signalling NaN and raises invalid
 * for it, where NumPy keeps the payload and raises nothing.  So NaN lanes go through F16C
 * as zeros, and a group of sixteen that holds a NaN is converted again by half.h.
 */
#ifndef UFUNCGEN_HALF_BLOCKS_H
#define UFUNCGEN_HALF_BLOCKS_H

#include <stddef.h>
#include <string.h>

#include "ufuncgen/half.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define UFG_HALF_BLOCKS_F16C 1
#endif

/* Elements an F16C iteration converts.  Fewer, from UFG_HALF_BLOCK_MIN on (a row of a column
 * sum over 8 columns, a short core row), are converted as one group, through a copy padded
 * with zeros: the inline conversions of 8 elements each way had taken twice as long as
 * NumPy's whole loop call (float16 column sums over 8 columns 0.53x np.add.reduce), and
 * cost as much as the padded group's from 5 elements on (AVX-512 EPYC).
 * A call of fewer elements still (one element of a reduction) is cheaper through the inline
 * conversions, so the loops and the dispatch below leave it to them.  That short loop is kept
 * scalar (UFG_NO_VECTORIZE_BARRIER): GCC 12 would run it on two-float vectors in four-lane
 * registers whose upper lanes hold the conversion's leftover bits, and multiplying those
 * raised underflow (or overflow) for elements no one stores. */
#define UFG_HALF_GROUP 16
#define UFG_HALF_BLOCK_MIN 5

static inline void
ufg_halves_to_floats_portable(const ufg_half *src, float *dst, ptrdiff_t n)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        dst[i] = ufg_half_to_float(src[i]);
    }
}

static inline void
ufg_floats_to_halves_portable(const float *src, ufg_half *dst, ptrdiff_t n)
{
    for (ptrdiff_t i = 0; i < n; i++) {
        dst[i] = ufg_float_to_half(src[i]);
    }
}

#ifdef UFG_HALF_BLOCKS_F16C

/* Whether this CPU has F16C and AVX2 (the NaN tests compare eight 32-bit lanes), asked
 * once per module. */
static inline int
ufg_cpu_converts_halves(void)
{
    static int answer = -1;     /* every thread computes the same answer */
    if (answer < 0) {
        __builtin_cpu_init();
#if defined(__clang__) && __clang_major__ < 16
        /* Clang before 16 knows no "f16c" here; every x86 CPU with AVX2 has F16C. */
        answer = __builtin_cpu_supports("avx2");
#else
        answer = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2");
#endif
    }
    return answer;
}

__attribute__((target("avx2,f16c"))) static void
ufg_halves_to_floats_f16c(const ufg_half *src, float *dst, ptrdiff_t n)
{
    const __m256i magnitude_mask = _mm256_set1_epi16(0x7fff), infinity = _mm256_set1_epi16(0x7c00);
    ptrdiff_t i = 0;
    for (; i + UFG_HALF_GROUP <= n; i += UFG_HALF_GROUP) {
        const __m256i h = _mm256_loadu_si256((const __m256i *)(src + i));
        /* A magnitude above Inf's is a NaN (a signed compare: magnitudes are below 0x8000). */
        const __m256i nan = _mm256_cmpgt_epi16(_mm256_and_si256(h, magnitude_mask), infinity);
        const __m256i numbers = _mm256_andnot_si256(nan, h);
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm256_castsi256_si128(numbers)));
        _mm256_storeu_ps(dst + i + 8, _mm256_cvtph_ps(_mm256_extracti128_si256(numbers, 1)));
        if (!_mm256_testz_si256(nan, nan)) {
            ufg_halves_to_floats_portable(src + i, dst + i, UFG_HALF_GROUP);
        }
    }
    if (n - i >= UFG_HALF_BLOCK_MIN) {
        ufg_half padded[UFG_HALF_GROUP] = {0};
        float widened[UFG_HALF_GROUP];
        memcpy(padded, src + i, (size_t)(n - i) * sizeof *src);
        ufg_halves_to_floats_f16c(padded, widened, UFG_HALF_GROUP);
        memcpy(dst + i, widened, (size_t)(n - i) * sizeof *dst);
        return;
    }
    ufg_halves_to_floats_portable(src + i, dst + i, n - i);
}

__attribute__((target("avx2,f16c"))) static void
ufg_floats_to_halves_f16c(const float *src, ufg_half *dst, ptrdiff_t n)
{
    const __m256i magnitude_mask = _mm256_set1_epi32(0x7fffffff);
    const __m256i infinity = _mm256_set1_epi32(0x7f800000);
    ptrdiff_t i = 0;
    for (; i + UFG_HALF_GROUP <= n; i += UFG_HALF_GROUP) {
        /* Tested as integers: a floating-point compare raises invalid for a signalling NaN. */
        const __m256i low = _mm256_loadu_si256((const __m256i *)(src + i));
        const __m256i high = _mm256_loadu_si256((const __m256i *)(src + i + 8));
        const __m256i nan_low = _mm256_cmpgt_epi32(_mm256_and_si256(low, magnitude_mask), infinity);
        const __m256i nan_high = _mm256_cmpgt_epi32(_mm256_and_si256(high, magnitude_mask), infinity);
        const __m128i h_low = _mm256_cvtps_ph(_mm256_castsi256_ps(_mm256_andnot_si256(nan_low, low)),
                                              _MM_FROUND_TO_NEAREST_INT);
        const __m128i h_high = _mm256_cvtps_ph(_mm256_castsi256_ps(_mm256_andnot_si256(nan_high, high)),
                                               _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_si256((__m256i *)(dst + i), _mm256_set_m128i(h_high, h_low));
        const __m256i nan = _mm256_or_si256(nan_low, nan_high);
        if (!_mm256_testz_si256(nan, nan)) {
            ufg_floats_to_halves_portable(src + i, dst + i, UFG_HALF_GROUP);
        }
    }
    if (n - i >= UFG_HALF_BLOCK_MIN) {
        float padded[UFG_HALF_GROUP] = {0};     /* zeros round to zeros, raising nothing */
        ufg_half rounded[UFG_HALF_GROUP];
        memcpy(padded, src + i, (size_t)(n - i) * sizeof *src);
        ufg_floats_to_halves_f16c(padded, rounded, UFG_HALF_GROUP);
        memcpy(dst + i, rounded, (size_t)(n - i) * sizeof *dst);
        return;
    }
    ufg_floats_to_halves_portable(src + i, dst + i, n - i);
}

/* One element each way, for scalar code compiled for F16C: NaN through half.h, as above. */
__attribute__((target("f16c"))) static inline float
ufg_half_to_float_f16c(ufg_half h)
{
    return (h & 0x7fffu) > 0x7c00u ? ufg_half_to_float_portable(h) : _cvtsh_ss(h);
}

__attribute__((target("f16c"))) static inline ufg_half
ufg_float_to_half_f16c(float value)
{
    return (ufg_half_float_bits(value) & 0x7fffffffu) > 0x7f800000u
               ? ufg_float_to_half_portable(value)
               : (ufg_half)_cvtss_sh(value, _MM_FROUND_TO_NEAREST_INT);
}

#endif /* UFG_HALF_BLOCKS_F16C */

/* n float16 elements widened to float (exact). */
static inline void
ufg_halves_to_floats(const ufg_half *src, float *dst, ptrdiff_t n)
{
#ifdef UFG_HALF_BLOCKS_F16C
    if (n >= UFG_HALF_BLOCK_MIN && ufg_cpu_converts_halves()) {
        ufg_halves_to_floats_f16c(src, dst, n);
        return;
    }
#endif
    ufg_halves_to_floats_portable(src, dst, n);
}

/* n floats rounded to float16 (nearest even; overflow raised where a finite value becomes
 * Inf). */
static inline void
ufg_floats_to_halves(const float *src, ufg_half *dst, ptrdiff_t n)
{
#ifdef UFG_HALF_BLOCKS_F16C
    if (n >= UFG_HALF_BLOCK_MIN && ufg_cpu_converts_halves()) {
        ufg_floats_to_halves_f16c(src, dst, n);
        return;
    }
#endif
    ufg_floats_to_halves_portable(src, dst, n);
}

#endif /* UFUNCGEN_HALF_BLOCKS_H */
