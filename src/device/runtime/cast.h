/*
 * The runtime's own kernel: converts an N-d strided array of one supported dtype into another
 * (or copies it when the dtypes are equal: copy_to_host gathers strided views with it).
 * Plain C, shared by the C runtime, cast_kernel.h and nvcc.
 */
#ifndef UFG_DEVICE_CAST_H
#define UFG_DEVICE_CAST_H

#include "ufuncgen/device_kernel.h"
#include "ufuncgen/half.h"
#include "ufuncgen/element_types.h"

/* The dtypes device arrays hold, as the cast kernel numbers them: the generator's element
 * types, in its order (ufuncgen/element_types.h is generated from gen/element_types.py). */
#define UFG_DT_ENUMERATOR(CODE, ...) UFG_DT_##CODE,
typedef enum {
    UFG_ELEMENT_TYPES(UFG_DT_ENUMERATOR)
    UFG_DT_COUNT
} ufg_dtype_code;
#undef UFG_DT_ENUMERATOR

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
