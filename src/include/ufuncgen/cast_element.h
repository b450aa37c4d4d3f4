/*
 * One element converted from one element type into another, as the runtime's cast kernel
 * converts it (and so as NumPy's unsafe casts do): the dtype codes of the element types, the
 * per-pair conversion macros the cast kernel's switch is made of, and ufg_cast_element, the
 * same switch as a function for generated kernels that convert single elements (.at reads
 * and writes an array of any dtype through its loop's types).
 *
 * Plain C, compiled by the host compiler (the runtime, the simulator's kernels) and by nvcc.
 */
#ifndef UFUNCGEN_CAST_ELEMENT_H
#define UFUNCGEN_CAST_ELEMENT_H

#include "ufuncgen/device_kernel.h"
#include "ufuncgen/half.h"
#include "ufuncgen/bfloat16.h"
#include "ufuncgen/element_types.h"

/* The dtypes device arrays hold, as the cast kernel numbers them: the generator's element
 * types, in its order (ufuncgen/element_types.h is generated from gen/element_types.py). */
#define UFG_DT_ENUMERATOR(CODE, ...) UFG_DT_##CODE,
typedef enum {
    UFG_ELEMENT_TYPES(UFG_DT_ENUMERATOR)
    UFG_DT_COUNT
} ufg_dtype_code;
#undef UFG_DT_ENUMERATOR

/* NumPy's bool: one byte, 0 or 1. */
typedef uint8_t ufg_cast_bool;

#define UFG_CAST_PAIR(src, dst) ((src) * UFG_DT_COUNT + (dst))

/* Reading a bool yields 0/1 whatever nonzero byte it holds; writing a bool stores
 * (value != 0); every other conversion from or to an integer is a C cast.  Named by the
 * element type's access token (b, i, u, f, h, bf, c; ufuncgen/element_types.h), so
 * UFG_CAST_ONE can paste it into their names. */
#define UFG_CAST_READ_b(type, ptr) (*(const ufg_cast_bool *)(ptr) != 0)
#define UFG_CAST_READ_i(type, ptr) (*(const type *)(ptr))
#define UFG_CAST_READ_u UFG_CAST_READ_i
#define UFG_CAST_READ_f UFG_CAST_READ_i
#define UFG_CAST_WRITE_b(type, ptr, v) (*(ufg_cast_bool *)(ptr) = (ufg_cast_bool)((v) != 0))
#define UFG_CAST_WRITE_i(type, ptr, v) (*(type *)(ptr) = (type)(v))
#define UFG_CAST_WRITE_u UFG_CAST_WRITE_i
#define UFG_CAST_WRITE_f UFG_CAST_WRITE_i
/* A half is read as float (exactly) and written from an integer through double in one
 * rounding: every integer is exact in double up to 2**53, and a larger one overflows a half
 * anyway, so each conversion rounds once, as NumPy's casts to float16 do. */
#define UFG_CAST_READ_h(type, ptr) ufg_half_to_float_portable(*(const ufg_half *)(ptr))
#define UFG_CAST_WRITE_h(type, ptr, v) (*(ufg_half *)(ptr) = ufg_double_to_half((double)(v)))
/* A bfloat16 is read as float (exactly) and written through float: ml_dtypes' casts to
 * bfloat16 round a float64 or an int64 to float32 first and then to bfloat16 (two roundings,
 * which this repeats bit for bit: 1 + 2**-8 + 2**-30 becomes 1.0, not 1 + 2**-7). */
#define UFG_CAST_READ_bf(type, ptr) ufg_bfloat16_to_float(*(const ufg_bfloat16 *)(ptr))
#define UFG_CAST_WRITE_bf(type, ptr, v) (*(ufg_bfloat16 *)(ptr) = ufg_float_to_bfloat16((float)(v)))

/* A complex element is its two parts, real then imaginary, in UFG_CAST_PART_<type>.  A real
 * value written to a complex element is its real part (imaginary +0); a complex read as a
 * real type is its real part (NumPy's unsafe cast, which warns on the host), and as a bool
 * whether either part is nonzero. */
#define UFG_CAST_PART_ufg_complex64 float
#define UFG_CAST_PART_ufg_complex128 double
#define UFG_CAST_PARTS(type, ptr) ((const UFG_CAST_PART_##type *)(ptr))
#define UFG_CAST_READ_c(type, ptr) (UFG_CAST_PARTS(type, ptr)[0])
#define UFG_CAST_WRITE_c(type, ptr, v) \
    (((UFG_CAST_PART_##type *)(ptr))[0] = (UFG_CAST_PART_##type)(v), \
     ((UFG_CAST_PART_##type *)(ptr))[1] = (UFG_CAST_PART_##type)0)

/*
 * Between two floating types (float16, bfloat16, float32, float64, and complex parts) a value
 * goes from its own format straight into the other's, by one of the sixteen functions
 * ufg_cast_<from>_to_<to> below, each giving NumPy's (or, for bfloat16, ml_dtypes') bits for
 * every value, a NaN's payload included.  Through a third format that would not hold: the
 * CPU's float-to-double conversion quiets a signalling NaN, which NumPy's float16 to float64
 * keeps signalling (0x7c01 is 0x7ff0040000000000, not 0x7ff8040000000000), and NumPy's float32
 * to float16 keeps a payload that a detour through double would quiet (0x7f800001 is 0x7c01,
 * not 0x7e00).  The format of a storage type, for pasting: UFG_CAST_FORMAT_<type>.
 */
#define UFG_CAST_FORMAT_ufg_half half
#define UFG_CAST_FORMAT_ufg_bfloat16 bfloat16
#define UFG_CAST_FORMAT_float float
#define UFG_CAST_FORMAT_double double
#define UFG_CAST_FORMAT_ufg_complex64 float
#define UFG_CAST_FORMAT_ufg_complex128 double
#define UFG_CAST_CONVERTER(S_TYPE, D_TYPE) \
    UFG_CAST_CONVERTER_(UFG_CAST_FORMAT_##S_TYPE, UFG_CAST_FORMAT_##D_TYPE)
#define UFG_CAST_CONVERTER_(from, to) UFG_CAST_CONVERTER__(from, to)
#define UFG_CAST_CONVERTER__(from, to) ufg_cast_##from##_to_##to

#if defined(__CUDACC__)
#define UFG_CAST_FN static __host__ __device__ __forceinline__
#else
#define UFG_CAST_FN static inline __attribute__((unused))
#endif

/* float32 to and from float64 as NumPy casts them, with the CPU's conversion: a NaN is
 * quieted and keeps its payload's top bits (x86-64 and AArch64 alike).  The GPU's conversion
 * instruction is not known to keep payloads, so a NaN is converted in integer code, on every
 * backend (the simulator tests the code the GPU runs); numbers by the conversion, which rounds
 * to nearest even and keeps subnormals on both. */
UFG_CAST_FN double
ufg_cast_float_to_double(float value)
{
    const uint32_t bits = ufg_half_float_bits(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return ufg_half_bits_double((uint64_t)(bits & 0x80000000u) << 32 | 0x7ff8000000000000ull |
                                    (uint64_t)(bits & 0x007fffffu) << 29);
    }
    return (double)value;
}

UFG_CAST_FN float
ufg_cast_double_to_float(double value)
{
    const uint64_t bits = ufg_half_double_bits(value);
    if ((bits & 0x7fffffffffffffffull) > 0x7ff0000000000000ull) {
        return ufg_half_bits_float((uint32_t)(bits >> 32 & 0x80000000u) | 0x7fc00000u |
                                   (uint32_t)(bits >> 29 & 0x007fffffu));
    }
    return (float)value;
}

/* float16: NumPy's npy_half_to_float, npy_half_to_double, npy_float_to_half and
 * npy_double_to_half, in integer code on the device too (the GPU's conversions may not keep
 * a payload); to and from bfloat16 as ml_dtypes converts, through float32, where every NaN
 * becomes the quiet NaN of its sign (0x7fc0 in bfloat16, 0x7e00 in float16). */
UFG_CAST_FN ufg_half ufg_cast_half_to_half(ufg_half h) { return h; }
UFG_CAST_FN float ufg_cast_half_to_float(ufg_half h) { return ufg_half_to_float_portable(h); }
UFG_CAST_FN double ufg_cast_half_to_double(ufg_half h) { return ufg_half_to_double(h); }
UFG_CAST_FN ufg_bfloat16
ufg_cast_half_to_bfloat16(ufg_half h)
{
    return ufg_float_to_bfloat16(ufg_half_to_float_portable(h));
}
UFG_CAST_FN ufg_half ufg_cast_float_to_half(float v) { return ufg_float_to_half_portable(v); }
UFG_CAST_FN float ufg_cast_float_to_float(float v) { return v; }
UFG_CAST_FN ufg_bfloat16 ufg_cast_float_to_bfloat16(float v) { return ufg_float_to_bfloat16(v); }
UFG_CAST_FN ufg_half ufg_cast_double_to_half(double v) { return ufg_double_to_half(v); }
UFG_CAST_FN double ufg_cast_double_to_double(double v) { return v; }
UFG_CAST_FN ufg_bfloat16
ufg_cast_double_to_bfloat16(double v)
{
    return ufg_float_to_bfloat16(ufg_cast_double_to_float(v));
}
UFG_CAST_FN ufg_half
ufg_cast_bfloat16_to_half(ufg_bfloat16 b)
{
    const uint16_t sign = (uint16_t)(b & 0x8000u);
    return (b & 0x7fffu) > 0x7f80u ? (ufg_half)(sign | 0x7e00u)
                                   : ufg_float_to_half_portable(ufg_bfloat16_to_float(b));
}
UFG_CAST_FN float ufg_cast_bfloat16_to_float(ufg_bfloat16 b) { return ufg_bfloat16_to_float(b); }
UFG_CAST_FN double
ufg_cast_bfloat16_to_double(ufg_bfloat16 b)
{
    return ufg_cast_float_to_double(ufg_bfloat16_to_float(b));
}
UFG_CAST_FN ufg_bfloat16 ufg_cast_bfloat16_to_bfloat16(ufg_bfloat16 b) { return b; }

/* A floating value (of format UFG_CAST_FORMAT_<S_TYPE>, in `value`) into a floating element
 * of type D_TYPE and kind D_KIND (f, h, bf, c) at dst. */
#define UFG_CAST_FLOATING_h(S_TYPE, D_TYPE, value) \
    (*(ufg_half *)dst = UFG_CAST_CONVERTER(S_TYPE, ufg_half)(value))
#define UFG_CAST_FLOATING_bf(S_TYPE, D_TYPE, value) \
    (*(ufg_bfloat16 *)dst = UFG_CAST_CONVERTER(S_TYPE, ufg_bfloat16)(value))
#define UFG_CAST_FLOATING_f(S_TYPE, D_TYPE, value) \
    (*(D_TYPE *)dst = UFG_CAST_CONVERTER(S_TYPE, D_TYPE)(value))
#define UFG_CAST_FLOATING_c(S_TYPE, D_TYPE, value) \
    (((UFG_CAST_PART_##D_TYPE *)dst)[0] = UFG_CAST_CONVERTER(S_TYPE, D_TYPE)(value), \
     ((UFG_CAST_PART_##D_TYPE *)dst)[1] = (UFG_CAST_PART_##D_TYPE)0)

/* One element of one (source, destination) pair, from `src` to `dst`: by the source's
 * access token, then (for a floating source) the destination's. */
#define UFG_CAST_ONE(S_KIND, S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_FROM_##S_KIND(S_TYPE, D_KIND, D_TYPE)
#define UFG_CAST_FROM_b(S_TYPE, D_KIND, D_TYPE) UFG_CAST_BOOL_TO_##D_KIND(S_TYPE, D_KIND, D_TYPE)
/* bool to bool is a copy of the byte, as NumPy copies an array into its own dtype: a bool
 * byte of 2 (a view of int8 memory) stays 2. */
#define UFG_CAST_BOOL_TO_b(S_TYPE, D_KIND, D_TYPE) \
    (*(ufg_cast_bool *)(dst) = *(const ufg_cast_bool *)(src))
#define UFG_CAST_BOOL_TO_i(S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_WRITE_##D_KIND(D_TYPE, dst, UFG_CAST_READ_b(S_TYPE, src))
#define UFG_CAST_BOOL_TO_u UFG_CAST_BOOL_TO_i
#define UFG_CAST_BOOL_TO_f UFG_CAST_BOOL_TO_i
#define UFG_CAST_BOOL_TO_h UFG_CAST_BOOL_TO_i
#define UFG_CAST_BOOL_TO_bf UFG_CAST_BOOL_TO_i
#define UFG_CAST_BOOL_TO_c UFG_CAST_BOOL_TO_i
#define UFG_CAST_FROM_i(S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_WRITE_##D_KIND(D_TYPE, dst, UFG_CAST_READ_i(S_TYPE, src))
#define UFG_CAST_FROM_u UFG_CAST_FROM_i
/* A floating source: to a bool or an integer through its value (read exactly), to a
 * floating destination by the converter of the two formats. */
#define UFG_CAST_FROM_f(S_TYPE, D_KIND, D_TYPE) UFG_CAST_REAL_TO_##D_KIND(S_TYPE, D_KIND, D_TYPE, f)
#define UFG_CAST_FROM_h(S_TYPE, D_KIND, D_TYPE) UFG_CAST_REAL_TO_##D_KIND(S_TYPE, D_KIND, D_TYPE, h)
#define UFG_CAST_FROM_bf(S_TYPE, D_KIND, D_TYPE) UFG_CAST_REAL_TO_##D_KIND(S_TYPE, D_KIND, D_TYPE, bf)
#define UFG_CAST_REAL_TO_b(S_TYPE, D_KIND, D_TYPE, S_KIND) \
    UFG_CAST_WRITE_b(D_TYPE, dst, UFG_CAST_READ_##S_KIND(S_TYPE, src))
#define UFG_CAST_REAL_TO_i(S_TYPE, D_KIND, D_TYPE, S_KIND) \
    UFG_CAST_WRITE_i(D_TYPE, dst, UFG_CAST_READ_##S_KIND(S_TYPE, src))
#define UFG_CAST_REAL_TO_u UFG_CAST_REAL_TO_i
#define UFG_CAST_REAL_TO_f(S_TYPE, D_KIND, D_TYPE, S_KIND) \
    UFG_CAST_FLOATING_##D_KIND(S_TYPE, D_TYPE, *(const S_TYPE *)src)
#define UFG_CAST_REAL_TO_h UFG_CAST_REAL_TO_f
#define UFG_CAST_REAL_TO_bf UFG_CAST_REAL_TO_f
#define UFG_CAST_REAL_TO_c UFG_CAST_REAL_TO_f
#define UFG_CAST_FROM_c(S_TYPE, D_KIND, D_TYPE) UFG_CAST_COMPLEX_TO_##D_KIND(S_TYPE, D_KIND, D_TYPE)
#define UFG_CAST_COMPLEX_TO_b(S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_WRITE_b(D_TYPE, dst, UFG_CAST_PARTS(S_TYPE, src)[0] != 0 || \
                                  UFG_CAST_PARTS(S_TYPE, src)[1] != 0)
#define UFG_CAST_COMPLEX_TO_i(S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_WRITE_i(D_TYPE, dst, UFG_CAST_READ_c(S_TYPE, src))
#define UFG_CAST_COMPLEX_TO_u UFG_CAST_COMPLEX_TO_i
#define UFG_CAST_COMPLEX_TO_f(S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_FLOATING_##D_KIND(S_TYPE, D_TYPE, UFG_CAST_READ_c(S_TYPE, src))
#define UFG_CAST_COMPLEX_TO_h UFG_CAST_COMPLEX_TO_f
#define UFG_CAST_COMPLEX_TO_bf UFG_CAST_COMPLEX_TO_f
#define UFG_CAST_COMPLEX_TO_c(S_TYPE, D_KIND, D_TYPE) \
    (((UFG_CAST_PART_##D_TYPE *)dst)[0] = \
         UFG_CAST_CONVERTER(S_TYPE, D_TYPE)(UFG_CAST_PARTS(S_TYPE, src)[0]), \
     ((UFG_CAST_PART_##D_TYPE *)dst)[1] = \
         UFG_CAST_CONVERTER(S_TYPE, D_TYPE)(UFG_CAST_PARTS(S_TYPE, src)[1]))

/* One case of the switch per (source, destination) pair of element types. */
#define UFG_CAST_CASE(S_CODE, S_TYPE, S_KIND, D_CODE, D_TYPE, D_KIND)                          \
    case UFG_CAST_PAIR(UFG_DT_##S_CODE, UFG_DT_##D_CODE):                                       \
        UFG_CAST_ONE(S_KIND, S_TYPE, D_KIND, D_TYPE);                                           \
        break;

/* dst = src converted, for the pair UFG_CAST_PAIR(source code, destination code); nothing for
 * a pair out of range.  Under nvcc not inlined: one copy of the switch per file of kernels,
 * which every kernel calling it shares (the kernels that call it run on one thread). */
#if defined(__CUDACC__)
#define UFG_CAST_ELEMENT_FN static __device__ __noinline__
#else
#define UFG_CAST_ELEMENT_FN static inline __attribute__((unused))
#endif
UFG_CAST_ELEMENT_FN void
ufg_cast_element(int64_t pair, const char *src, char *dst)
{
    switch (pair) {
        UFG_ELEMENT_TYPE_PAIRS(UFG_CAST_CASE)
        default:
            break;
    }
}

#endif /* UFUNCGEN_CAST_ELEMENT_H */
