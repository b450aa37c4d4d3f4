/*
 * The runtime's own kernel: converts an N-d strided array of one supported dtype into another
 * (or copies it when the dtypes are equal: copy_to_host gathers strided views with it).
 * Plain C, shared by the C runtime, cast_kernel.h and nvcc.
 */
#ifndef UFG_DEVICE_CAST_H
#define UFG_DEVICE_CAST_H

/* ufg_dtype_code, the dtype codes (UFG_DT_<CODE>), and the per-element conversions. */
#include "ufuncgen/cast_element.h"

/*
 * Cast launches use ufg_kernel_params with nargs = 2 (argument 0 the source, 1 the
 * destination), nothing by value, and the dtype codes in the otherwise unused
 * values[0].i64 (source) and values[1].i64 (destination).
 */
#ifdef __cplusplus
extern "C" {
#endif
int ufg_cast_launch_sim(const ufg_kernel_params *params, void *stream);
#ifdef UFG_HAVE_CUDA
int ufg_cast_launch_cuda(const ufg_kernel_params *params, void *stream);
#endif
#ifdef __cplusplus
}
#endif

#endif /* UFG_DEVICE_CAST_H */
