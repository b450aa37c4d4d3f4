/*
 * float16: IEEE 754 binary16 elements, stored as their bits in a uint16_t and computed on as
 * float, as NumPy's own float16 loops do (npy_half_to_float, arithmetic in float32, one
 * rounding back with npy_float_to_half).
 *
 * The conversions give NumPy's bits: widening is exact; narrowing rounds to nearest even,
 * overflows to a signed Inf (raising the overflow flag, so NumPy warns "overflow encountered"
 * as its own float16 loops do) and keeps a NaN a NaN with the top bits of its payload.  They
 * are written without branches so that the host compiler vectorizes the loops around them.
 * Under nvcc the device uses the hardware conversions (cvt.f32.f16, cvt.rn.f16.f32): the same
 * bits for every number, a NaN's payload aside, and no flags (the GPU has none).
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

UFG_HALF_FN float
ufg_half_to_float(ufg_half h)
{
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
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
#endif
}

UFG_HALF_FN ufg_half
ufg_float_to_half(float value)
{
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(value));
#else
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
#endif
}

/* float64 to float16 in one rounding (through float it would round twice), as NumPy's
 * npy_double_to_half: for the runtime's casts, where a float64 array becomes a float16 one. */
UFG_HALF_FN ufg_half
ufg_double_to_half(double value)
{
    uint64_t bits, magnitude, mantissa;
    uint32_t sign, h;
    int shift;

    memcpy(&bits, &value, sizeof bits);
    sign = (uint32_t)(bits >> 48) & 0x8000u;
    magnitude = bits & 0x7fffffffffffffffull;
    if (magnitude > 0x7ff0000000000000ull) {
        const uint32_t payload = (uint32_t)((magnitude & 0x000fffffffffffffull) >> 42);
        h = 0x7c00u | payload | (payload == 0);
    }
    else if (magnitude >= 0x40f0000000000000ull) {
        h = 0x7c00u;                        /* from 2**16 up, Inf included */
    }
    else if (magnitude >= 0x3f10000000000000ull) {
        /* Normal: rebias (1023 to 15), round the 42 dropped bits to nearest even (from 65520
         * up the carry reaches Inf). */
        h = (uint32_t)((magnitude - (1008ull << 52) + 0x1ffffffffffull +
                        ((magnitude >> 42) & 1u)) >> 42);
    }
    else {
        /* Subnormal: round(|value| * 2**24), from the 53-bit significand. */
        mantissa = (magnitude & 0x000fffffffffffffull) | 0x0010000000000000ull;
        shift = 1051 - (int)(magnitude >> 52);
        if (shift >= 54) {
            h = 0;
        }
        else {
            const uint64_t rest = mantissa & ((1ull << shift) - 1);
            const uint64_t half = 1ull << (shift - 1);
            h = (uint32_t)(mantissa >> shift);
            h += rest > half || (rest == half && (h & 1u));
        }
    }
    return (ufg_half)(h | sign);
}

#endif /* UFUNCGEN_HALF_H */
