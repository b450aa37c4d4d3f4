/*
 * bfloat16: the top 16 bits of an IEEE float32 (8 exponent bits, 7 fraction bits), stored as
 * those bits in a uint16_t and computed on as float, as ml_dtypes' own bfloat16 loops do
 * (widen, compute in float32, round once).  NumPy has no bfloat16 of its own: host arrays of
 * this type are ml_dtypes.bfloat16 arrays, whose loops a module registers when ml_dtypes can
 * be imported.
 *
 * The conversions give ml_dtypes' bits: widening is exact (a shift); narrowing rounds to
 * nearest even on the bits, so a float above bfloat16's largest finite value rounds to a
 * signed Inf, subnormals stay subnormal, and every NaN becomes the quiet NaN 0x7fc0 with the
 * NaN's sign.  Integer code without branches, so the loops around it vectorize; the same code
 * runs in the host loops, the simulator and (as __host__ __device__ functions) under nvcc.
 * Narrowing raises no floating-point flag: ml_dtypes' casts raise none either.
 *
 * Included by the body prelude (ufuncgen/prelude.h).
 */
#ifndef UFUNCGEN_BFLOAT16_H
#define UFUNCGEN_BFLOAT16_H

#include "ufuncgen/half.h"    /* the bit helpers: ufg_half_float_bits, _choose, _mask */

/* The bits of one bfloat16 element. */
typedef uint16_t ufg_bfloat16;

UFG_HALF_FN float
ufg_bfloat16_to_float(ufg_bfloat16 b)
{
    return ufg_half_bits_float((uint32_t)b << 16);
}

UFG_HALF_FN ufg_bfloat16
ufg_float_to_bfloat16(float value)
{
    const uint32_t bits = ufg_half_float_bits(value);
    /* Round to nearest even on the 16 bits dropped: add just under a half, plus the kept
     * part's lowest bit.  A carry runs into the exponent, up to Inf, as it should. */
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
    const uint32_t quiet_nan = ((bits >> 16) & 0x8000u) | 0x7fc0u;
    const uint32_t is_nan = ufg_half_mask((bits & 0x7fffffffu) > 0x7f800000u);
    return (ufg_bfloat16)ufg_half_choose(is_nan, quiet_nan, rounded);
}

#endif /* UFUNCGEN_BFLOAT16_H */
