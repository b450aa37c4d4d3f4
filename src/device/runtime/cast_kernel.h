/*
 * The cast kernel, written once and compiled twice: by nvcc in cast_cuda.cu and by the host
 * compiler in cast_sim.c, through the same UFG_KERNEL / UFG_DEFINE_LAUNCHER macros as the
 * generated kernels (device_kernel.h).  The includer defines UFG_CAST_LAUNCHER, the name of
 * the launcher to define.
 *
 * Conversions are C's: to bool means != 0 (bool to bool copies the byte), from bool gives
 * 0 or 1, float to integer
 * truncates (undefined out of range, as in C), integer to float rounds to nearest.  Between
 * floating types they are NumPy's (ml_dtypes' for bfloat16), NaN payloads included: see
 * ufuncgen/cast_element.h.
 *
 * One kernel covers every (source, destination) pair (UFG_ELEMENT_TYPE_PAIRS, 196 of them)
 * with a switch per element.  The switch takes the same branch in every thread, so it costs
 * a few instructions in a kernel bound by memory; 121 separately specialised loops compiled 15 times slower under nvcc
 * (20 s against 1.4 s per architecture), which the 2-core CI build cannot afford.
 */
#ifndef UFG_DEVICE_CAST_KERNEL_H
#define UFG_DEVICE_CAST_KERNEL_H

#include "cast.h"   /* the per-element conversions: ufuncgen/cast_element.h */

#ifndef UFG_CAST_LAUNCHER
#error "define UFG_CAST_LAUNCHER before including cast_kernel.h"
#endif

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
