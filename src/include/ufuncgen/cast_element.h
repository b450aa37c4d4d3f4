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
 * (value != 0); every other conversion is a C cast.  Named by the element type's access token
 * (b, i, u, f, h, bf, c; ufuncgen/element_types.h), so UFG_CAST_ONE can paste it into their
 * names. */
#define UFG_CAST_READ_b(type, ptr) (*(const ufg_cast_bool *)(ptr) != 0)
#define UFG_CAST_READ_i(type, ptr) (*(const type *)(ptr))
#define UFG_CAST_READ_u UFG_CAST_READ_i
#define UFG_CAST_READ_f UFG_CAST_READ_i
#define UFG_CAST_WRITE_b(type, ptr, v) (*(ufg_cast_bool *)(ptr) = (ufg_cast_bool)((v) != 0))
#define UFG_CAST_WRITE_i(type, ptr, v) (*(type *)(ptr) = (type)(v))
#define UFG_CAST_WRITE_u UFG_CAST_WRITE_i
#define UFG_CAST_WRITE_f UFG_CAST_WRITE_i
/* A half is read as float (exactly) and written from double in one rounding: every source
 * value is exact in double (integers past 2**53 overflow a half anyway), so each conversion
 * rounds once, as NumPy's casts to float16 do. */
#define UFG_CAST_READ_h(type, ptr) ufg_half_to_float(*(const ufg_half *)(ptr))
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

/* One element of one (source, destination) pair, from `src` to `dst`: by the source's
 * access token, since only a complex source has more than one value to convert. */
#define UFG_CAST_ONE(S_KIND, S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_FROM_##S_KIND(S_TYPE, D_KIND, D_TYPE)
#define UFG_CAST_FROM_b(S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_WRITE_##D_KIND(D_TYPE, dst, UFG_CAST_READ_b(S_TYPE, src))
#define UFG_CAST_FROM_i(S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_WRITE_##D_KIND(D_TYPE, dst, UFG_CAST_READ_i(S_TYPE, src))
#define UFG_CAST_FROM_u UFG_CAST_FROM_i
#define UFG_CAST_FROM_f UFG_CAST_FROM_i
#define UFG_CAST_FROM_h(S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_WRITE_##D_KIND(D_TYPE, dst, UFG_CAST_READ_h(S_TYPE, src))
#define UFG_CAST_FROM_bf(S_TYPE, D_KIND, D_TYPE) \
    UFG_CAST_WRITE_##D_KIND(D_TYPE, dst, UFG_CAST_READ_bf(S_TYPE, src))
#define UFG_CAST_FROM_c(S_TYPE, D_KIND, D_TYPE) UFG_CAST_COMPLEX_TO_##D_KIND(S_TYPE, D_TYPE)
#define UFG_CAST_COMPLEX_TO_b(S_TYPE, D_TYPE) \
    UFG_CAST_WRITE_b(D_TYPE, dst, UFG_CAST_PARTS(S_TYPE, src)[0] != 0 || \
                                  UFG_CAST_PARTS(S_TYPE, src)[1] != 0)
#define UFG_CAST_COMPLEX_TO_i(S_TYPE, D_TYPE) \
    UFG_CAST_WRITE_i(D_TYPE, dst, UFG_CAST_READ_c(S_TYPE, src))
#define UFG_CAST_COMPLEX_TO_u UFG_CAST_COMPLEX_TO_i
#define UFG_CAST_COMPLEX_TO_f UFG_CAST_COMPLEX_TO_i
#define UFG_CAST_COMPLEX_TO_h(S_TYPE, D_TYPE) \
    UFG_CAST_WRITE_h(D_TYPE, dst, UFG_CAST_READ_c(S_TYPE, src))
#define UFG_CAST_COMPLEX_TO_bf(S_TYPE, D_TYPE) \
    UFG_CAST_WRITE_bf(D_TYPE, dst, UFG_CAST_READ_c(S_TYPE, src))
#define UFG_CAST_COMPLEX_TO_c(S_TYPE, D_TYPE) \
    (((UFG_CAST_PART_##D_TYPE *)dst)[0] = (UFG_CAST_PART_##D_TYPE)UFG_CAST_PARTS(S_TYPE, src)[0], \
     ((UFG_CAST_PART_##D_TYPE *)dst)[1] = (UFG_CAST_PART_##D_TYPE)UFG_CAST_PARTS(S_TYPE, src)[1])

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
