/*
 * The conversions of a host `.at` whose array is of a narrower type than the loop NumPy
 * resolves for it (a float32 array with a Python float: the float64 loop): each element
 * converted to the loop's type, updated, and converted back before the next index is read, as
 * NumPy's .at does one index at a time.  The generated indexed loops (templates/module.c.j2,
 * ufg_host_at_*) call them inline, one update after another, for the pairs that
 * gen/element_types.py lists (ElementType.at_widened_from):
 *
 *   float16, float32 into a float64 loop; float16 into a float32 loop; integers of up to 32
 *   bits into an int64 loop.
 *
 * Each element widens exactly, and narrows back as NumPy's casts narrow it: rounded to nearest
 * (float64 to float16 in one rounding, half.h), or wrapped to the narrower integer.  Other
 * pairs -- a float loop's result stored into integers, which NumPy leaves to its C compiler's
 * conversion -- go to NumPy.  Not ufg_cast_element (cast_element.h), which the device's .at
 * converts with: made for a GPU, which has no flags, it converts a NaN in integer code, where
 * NumPy's cast on the CPU raises invalid for a signalling one.
 *
 * ufg_at_<to>_from_<from>: an element of type <from> (as stored) as one of type <to>.
 */
#ifndef UFUNCGEN_HOST_AT_CONVERT_H
#define UFUNCGEN_HOST_AT_CONVERT_H

#include <fenv.h>
#include <math.h>
#include <stdint.h>

#include "ufuncgen/half.h"

#if defined(__GNUC__)
#define UFG_AT_CONVERT_FN static inline __attribute__((always_inline, unused))
#else
#define UFG_AT_CONVERT_FN static inline
#endif

/* NumPy's float16 conversions raise underflow where a value below float16's smallest normal
 * number (2**-14) does not convert exactly; half.h's raise overflow only.  `stored` is
 * `value` converted; quiet on a NaN. */
UFG_AT_CONVERT_FN ufg_half
ufg_at_half_flagged(ufg_half stored, double value)
{
    if (isless(fabs(value), 0x1p-14) && ufg_half_to_double(stored) != value) {
        feraiseexcept(FE_UNDERFLOW);
    }
    return stored;
}

UFG_AT_CONVERT_FN double
ufg_at_float64_from_float32(float value)
{
    return (double)value;
}

/* Rounded to nearest, with the hardware's overflow and inexact, as NumPy's cast. */
UFG_AT_CONVERT_FN float
ufg_at_float32_from_float64(double value)
{
    return (float)value;
}

UFG_AT_CONVERT_FN double
ufg_at_float64_from_float16(ufg_half value)
{
    return ufg_half_to_double(value);
}

UFG_AT_CONVERT_FN ufg_half
ufg_at_float16_from_float64(double value)
{
    return ufg_at_half_flagged(ufg_double_to_half(value), value);
}

/* The portable conversions: a NaN's payload as NumPy's npy_half_to_float keeps it. */
UFG_AT_CONVERT_FN float
ufg_at_float32_from_float16(ufg_half value)
{
    return ufg_half_to_float_portable(value);
}

UFG_AT_CONVERT_FN ufg_half
ufg_at_float16_from_float32(float value)
{
    return ufg_at_half_flagged(ufg_float_to_half_portable(value), value);
}

/* An integer of up to 32 bits into int64 and back, wrapped as NumPy's cast wraps it (GCC and
 * Clang keep the low bits). */
#define UFG_AT_INTEGER_CONVERSIONS(name, c_type)                                            \
    UFG_AT_CONVERT_FN int64_t ufg_at_int64_from_##name(c_type value)                        \
    {                                                                                       \
        return (int64_t)value;                                                              \
    }                                                                                       \
    UFG_AT_CONVERT_FN c_type ufg_at_##name##_from_int64(int64_t value)                      \
    {                                                                                       \
        return (c_type)value;                                                               \
    }

UFG_AT_INTEGER_CONVERSIONS(int8, int8_t)
UFG_AT_INTEGER_CONVERSIONS(uint8, uint8_t)
UFG_AT_INTEGER_CONVERSIONS(int16, int16_t)
UFG_AT_INTEGER_CONVERSIONS(uint16, uint16_t)
UFG_AT_INTEGER_CONVERSIONS(int32, int32_t)
UFG_AT_INTEGER_CONVERSIONS(uint32, uint32_t)

#undef UFG_AT_INTEGER_CONVERSIONS

#endif /* UFUNCGEN_HOST_AT_CONVERT_H */
