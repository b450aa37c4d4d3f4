/*
 * float16: IEEE 754 binary16 elements, stored as their bits in a uint16_t and computed on as
 * float, as NumPy's own float16 loops do (npy_half_to_float, arithmetic in float32, one
 * rounding back with npy_float_to_half).
 *
 * The conversions give NumPy's bits: widening is exact; narrowing rounds to nearest even,
 * overflows to a signed Inf (raising the overflow flag, so NumPy warns "overflow encountered"
 * as its own float16 loops do) and keeps a NaN a NaN with the top bits of its payload.  They
 * are written without branches so that the host compiler vectorizes the loops around them.
 * Under nvcc the device's body loops use the hardware conversions (cvt.f32.f16, cvt.rn.f16.f32):
 * the same bits for every number, a NaN's payload aside, and no flags (the GPU has none).  The
 * _portable conversions are the integer code everywhere, the device included: the runtime's
 * casts use them, so that a NaN's payload comes out as NumPy's there too.
 *
 * float64 converts to and from float16 directly (ufg_half_to_double, ufg_double_to_half), in
 * integer code on every compiler: a double rounded to float first would be rounded twice.
 *
 * Included by the body prelude (ufuncgen/prelude.h) and by the runtime's cast kernel.
 */
#ifndef UFUNCGEN_HALF_H
#define UFUNCGEN_HALF_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define UFG_HALF_FN static __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define UFG_HALF_FN static inline __attribute__((always_inline, unused))
#else
#define UFG_HALF_FN static inline
#endif

/* The bits of one float16 element. */
typedef uint16_t ufg_half;

UFG_HALF_FN uint32_t
ufg_half_float_bits(float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

UFG_HALF_FN float
ufg_half_bits_float(uint32_t bits)
{
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* `when` (all ones where a condition holds, else zero) ? a : b, in bits.  The conversions
 * choose among results computed for every element this way, not with ?: or if: GCC does not
 * turn a choice between floating-point results back into straight-line code (the operations
 * might trap), and a loop with branches in it is not vectorized. */
UFG_HALF_FN uint32_t
ufg_half_choose(uint32_t when, uint32_t a, uint32_t b)
{
    return (a & when) | (b & ~when);
}

/* All ones when `condition` is true. */
UFG_HALF_FN uint32_t
ufg_half_mask(int condition)
{
    return (uint32_t)0 - (uint32_t)(condition != 0);
}

/* The same four for double's 64 bits. */
UFG_HALF_FN uint64_t
ufg_half_double_bits(double value)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}

UFG_HALF_FN double
ufg_half_bits_double(uint64_t bits)
{
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

UFG_HALF_FN uint64_t
ufg_half_choose64(uint64_t when, uint64_t a, uint64_t b)
{
    return (a & when) | (b & ~when);
}

UFG_HALF_FN uint64_t
ufg_half_mask64(int condition)
{
    return (uint64_t)0 - (uint64_t)(condition != 0);
}

/* NumPy's npy_half_to_float, in integer code on every compiler: a NaN keeps its payload and
 * stays signalling if it was. */
UFG_HALF_FN float
ufg_half_to_float_portable(ufg_half h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t magnitude = h & 0x7fffu;
    /* A normal number moves its exponent from bias 15 to bias 127; Inf and NaN keep an
     * all-ones exponent and their payload; a subnormal is its 10 bits times 2**-24, exactly. */
    const uint32_t normal = (magnitude << 13) + (112u << 23);
    const uint32_t special = (magnitude << 13) | 0x7f800000u;
    const uint32_t subnormal = ufg_half_float_bits((float)magnitude * 0x1p-24f);
    const uint32_t bits = ufg_half_choose(ufg_half_mask(magnitude < 0x0400u), subnormal,
                                          ufg_half_choose(ufg_half_mask(magnitude < 0x7c00u),
                                                          normal, special));
    return ufg_half_bits_float(bits | sign);
}

/* A body's float16 argument as the float it computes on: the GPU's instruction under nvcc. */
UFG_HALF_FN float
ufg_half_to_float(ufg_half h)
{
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
    return ufg_half_to_float_portable(h);
#endif
}

/* NumPy's npy_float_to_half, in integer code on every compiler. */
UFG_HALF_FN ufg_half
ufg_float_to_half_portable(float value)
{
    const uint32_t bits = ufg_half_float_bits(value);
    const uint32_t sign = (bits >> 16) & 0x8000u;
    uint32_t magnitude = bits & 0x7fffffffu;
    /* A finite number from 65520 (half-way between 65504, the largest half, and 2**16) up
     * overflows: it becomes Inf through a multiplication that overflows, so that the flag is
     * raised as NumPy's conversion raises it.  The factor is chosen per element (1 elsewhere),
     * so no other element's multiplication can overflow when the loop is vectorized. */
    const uint32_t overflows = ufg_half_mask(magnitude >= 0x477ff000u && magnitude < 0x7f800000u);
    const float factor = ufg_half_bits_float(0x3f800000u + (overflows & (127u << 23)));
    /* The float arithmetic below sees a NaN as 0: on a signalling NaN it would raise invalid,
     * where NumPy's conversion raises nothing (a NaN's result comes from its bits alone). */
    const uint32_t not_nan = ~ufg_half_mask(magnitude > 0x7f800000u);
    magnitude = ufg_half_choose(overflows,
                                ufg_half_float_bits(ufg_half_bits_float(magnitude & not_nan) * factor),
                                magnitude);
    {
        /* Normal: rebias, then round the 13 dropped bits to nearest even (a carry out of the
         * mantissa moves the exponent up, to Inf past 65504). */
        const uint32_t normal = (magnitude - (112u << 23) + 0x0fffu + ((magnitude >> 13) & 1u)) >> 13;
        /* Subnormal or zero: adding 0.5 leaves the 10 bits a half keeps at the bottom of the
         * sum, rounded to nearest even by the addition itself. */
        const uint32_t subnormal =
            ufg_half_float_bits(ufg_half_bits_float(magnitude & not_nan) + 0.5f) - 0x3f000000u;
        /* NaN keeps its payload's top bits, and stays a NaN when those are all zero. */
        const uint32_t payload = (magnitude & 0x007fffffu) >> 13;
        const uint32_t nan = 0x7c00u | payload | (payload == 0);
        const uint32_t finite = ufg_half_choose(ufg_half_mask(magnitude >= 0x38800000u), normal,
                                                subnormal);
        const uint32_t h = ufg_half_choose(
            ufg_half_mask(magnitude > 0x7f800000u), nan,
            ufg_half_choose(ufg_half_mask(magnitude >= 0x47800000u), 0x7c00u, finite));
        return (ufg_half)(h | sign);
    }
}

/* A body's float result stored as float16: the GPU's instruction under nvcc. */
UFG_HALF_FN ufg_half
ufg_float_to_half(float value)
{
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(value));
#else
    return ufg_float_to_half_portable(value);
#endif
}

/* float16 to float64, exactly, as NumPy's npy_half_to_double: a NaN keeps its payload and stays
 * signalling if it was (widening through float would quiet it: the CPU's float-to-double
 * conversion does).  For the runtime's casts. */
UFG_HALF_FN double
ufg_half_to_double(ufg_half h)
{
    const uint64_t sign = (uint64_t)(h & 0x8000u) << 48;
    const uint64_t magnitude = h & 0x7fffu;
    /* As ufg_half_to_float_portable: exponent bias 15 to 1023, Inf and NaN keep their bits. */
    const uint64_t normal = (magnitude << 42) + (1008ull << 52);
    const uint64_t special = (magnitude << 42) | 0x7ff0000000000000ull;
    const uint64_t subnormal = ufg_half_double_bits((double)magnitude * 0x1p-24);
    const uint64_t bits = ufg_half_choose64(ufg_half_mask64(magnitude < 0x0400u), subnormal,
                                            ufg_half_choose64(ufg_half_mask64(magnitude < 0x7c00u),
                                                              normal, special));
    return ufg_half_bits_double(bits | sign);
}

/* float64 to float16 in one rounding, as NumPy's npy_double_to_half (through float it would
 * round twice: 1 + 2**-11 + 2**-40 would become 1.0, 65519.999 Inf).  For the runtime's casts,
 * and for a body computing in double whose output is float16.  ufg_float_to_half_portable's
 * method on 64 bits, without branches so that the loops around it vectorize, with the same
 * flags: overflow where a finite value becomes Inf, no invalid for a signalling NaN. */
UFG_HALF_FN ufg_half
ufg_double_to_half(double value)
{
    const uint64_t bits = ufg_half_double_bits(value);
    const uint32_t sign = (uint32_t)(bits >> 48) & 0x8000u;
    uint64_t magnitude = bits & 0x7fffffffffffffffull;
    /* From 65520 up (finite), Inf through a multiplication by 2**1023 that overflows, so that
     * the flag is raised; 1 for every other element, whose product is then exact. */
    const uint64_t overflows = ufg_half_mask64(magnitude >= 0x40effe0000000000ull &&
                                               magnitude < 0x7ff0000000000000ull);
    const double factor = ufg_half_bits_double(0x3ff0000000000000ull + (overflows & (1023ull << 52)));
    /* A NaN is 0 to the arithmetic (a signalling one would raise invalid). */
    const uint64_t not_nan = ~ufg_half_mask64(magnitude > 0x7ff0000000000000ull);
    magnitude = ufg_half_choose64(overflows,
                                  ufg_half_double_bits(ufg_half_bits_double(magnitude & not_nan) * factor),
                                  magnitude);
    {
        /* Normal: rebias (1023 to 15), then round the 42 dropped bits to nearest even. */
        const uint64_t normal = (magnitude - (1008ull << 52) + 0x1ffffffffffull +
                                 ((magnitude >> 42) & 1u)) >> 42;
        /* Subnormal or zero: |value| + 2**28 is rounded to a multiple of 2**-24 (the sum's
         * unit in the last place), to nearest even, in one rounding, and the half's bits are
         * the sum's lowest (up to 0x400, the smallest normal half, where it rounds up). */
        const uint64_t subnormal =
            ufg_half_double_bits(ufg_half_bits_double(magnitude & not_nan) + 268435456.0) -
            0x41b0000000000000ull;
        /* NaN keeps its payload's top bits, and stays a NaN when those are all zero. */
        const uint32_t payload = (uint32_t)((magnitude & 0x000fffffffffffffull) >> 42);
        const uint32_t nan = 0x7c00u | payload | (payload == 0);
        const uint32_t finite = ufg_half_choose(ufg_half_mask(magnitude >= 0x3f10000000000000ull),
                                                (uint32_t)normal, (uint32_t)subnormal);
        const uint32_t h = ufg_half_choose(
            ufg_half_mask(magnitude > 0x7ff0000000000000ull), nan,
            ufg_half_choose(ufg_half_mask(magnitude >= 0x40f0000000000000ull), 0x7c00u, finite));
        return (ufg_half)(h | sign);
    }
}

#endif /* UFUNCGEN_HALF_H */
