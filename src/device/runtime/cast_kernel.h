/*
 * The cast kernel, written once and compiled twice: by nvcc in cast_cuda.cu and by the host
 * compiler in cast_sim.c, through the same UFG_KERNEL / UFG_DEFINE_LAUNCHER macros as the
 * generated kernels (device_kernel.h).  The includer defines UFG_CAST_LAUNCHER, the name of
 * the launcher to define.
 *
 * Conversions are C's: to bool means != 0, from bool gives 0 or 1, float to integer
 * truncates (undefined out of range, as in C), integer to float rounds to nearest.
 *
 * One kernel covers every (source, destination) pair (UFG_ELEMENT_TYPE_PAIRS, 196 of them)
 * with a switch per element.  The switch takes the same branch in every thread, so it costs
 * a few instructions in a kernel bound by memory; 121 separately specialised loops compiled 15 times slower under nvcc
 * (20 s against 1.4 s per architecture), which the 2-core CI build cannot afford.
 */
#ifndef UFG_DEVICE_CAST_KERNEL_H
#define UFG_DEVICE_CAST_KERNEL_H

#include "cast.h"

#ifndef UFG_CAST_LAUNCHER
#error "define UFG_CAST_LAUNCHER before including cast_kernel.h"
#endif

/* NumPy's bool: one byte, 0 or 1. */
typedef uint8_t ufg_cast_bool;

#define UFG_CAST_PAIR(src, dst) ((src) * UFG_DT_COUNT + (dst))

/* Reading a bool yields 0/1 whatever nonzero byte it holds; writing a bool stores
 * (value != 0); every other conversion is a C cast.  Named by the element type's access token
 * (b, i, u, f, h, c; ufuncgen/element_types.h), so UFG_CAST_ONE can paste it into their names. */
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
#define UFG_CAST_COMPLEX_TO_c(S_TYPE, D_TYPE) \
    (((UFG_CAST_PART_##D_TYPE *)dst)[0] = (UFG_CAST_PART_##D_TYPE)UFG_CAST_PARTS(S_TYPE, src)[0], \
     ((UFG_CAST_PART_##D_TYPE *)dst)[1] = (UFG_CAST_PART_##D_TYPE)UFG_CAST_PARTS(S_TYPE, src)[1])

/* One case of the switch per (source, destination) pair of element types. */
#define UFG_CAST_CASE(S_CODE, S_TYPE, S_KIND, D_CODE, D_TYPE, D_KIND)                          \
    case UFG_CAST_PAIR(UFG_DT_##S_CODE, UFG_DT_##D_CODE):                                       \
        UFG_CAST_ONE(S_KIND, S_TYPE, D_KIND, D_TYPE);                                           \
        break;

/* Contiguous launches (ndim <= 1) skip the unravel: offset = i * stride. */
UFG_DEVICE_FN void
ufg_cast_offsets(const ufg_kernel_params *p, int64_t i, int64_t *offsets)
{
    if (p->contiguous) {
        offsets[0] = i * p->strides[0][0];
        offsets[1] = i * p->strides[1][0];
        offsets[2] = i * p->strides[2][0];     /* zero when there is no mask */
    }
    else {
        ufg_element_offsets(p, i, offsets);
    }
}

UFG_KERNEL
ufg_cast_kernel(const ufg_kernel_params p)
{
    const int64_t pair = UFG_CAST_PAIR(p.values[0].i64, p.values[1].i64);
    const int64_t step = UFG_THREAD_COUNT;

    for (int64_t i = UFG_THREAD_INDEX; i < p.n; i += step) {
        int64_t offsets[3] = {0, 0, 0}; /* set below; initialised for -Wmaybe-uninitialized */
        ufg_cast_offsets(&p, i, offsets);
        if (p.has_where && !*(const ufg_cast_bool *)(p.data[2] + offsets[2])) {
            continue;                   /* where=False: the destination keeps its value */
        }
        const char *src = p.data[0] + offsets[0];
        char *dst = p.data[1] + offsets[1];

        switch (pair) {
            UFG_ELEMENT_TYPE_PAIRS(UFG_CAST_CASE)
            default:
                break;      /* the runtime validates the codes before launching */
        }
    }
}

UFG_DEFINE_LAUNCHER(UFG_CAST_LAUNCHER, ufg_cast_kernel, ufg_kernel_params)

#endif /* UFG_DEVICE_CAST_KERNEL_H */
