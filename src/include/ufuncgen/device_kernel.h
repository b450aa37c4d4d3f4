/*
 * The device kernel contract: what the runtime (src/device) hands a generated kernel and how
 * the same kernel text compiles for the two backends.
 *
 *   nvcc (__CUDACC__)   real CUDA: __global__ kernels, launched with <<<grid, block, 0, stream>>>
 *   host compiler       the simulator: every "thread" of the grid is run in turn on the CPU,
 *                       with blockIdx/threadIdx emulated, so the grid-stride loops, the offset
 *                       arithmetic and the launch configuration are exercised for real
 *
 * Kernel parameters are passed by value, as CUDA passes them (they must stay under the 4 KiB
 * kernel parameter limit, hence the fixed, small maxima below).
 */
#ifndef UFUNCGEN_DEVICE_KERNEL_H
#define UFUNCGEN_DEVICE_KERNEL_H

#include <stdint.h>
#include <stddef.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

/* UFG_DEVICE_MAX_DIMS, _ARGS, _CORE_DIMS, _CORE_STRIDES: generated from gen/limits.py, which
 * the generator checks signature files against. */
#include "ufuncgen/limits.h"
#include "ufuncgen/element_types.h"     /* UFG_MAX_ITEMSIZE */

/* One scalar passed by value (a Python scalar argument), in the loop's C type. */
typedef union {
    int64_t i64;
    uint64_t u64;
    double f64;
    float f32;
    unsigned char bytes[UFG_MAX_ITEMSIZE];     /* complex128: two doubles */
} ufg_value;

/* An elementwise or gufunc launch: `n` outer elements over an N-d (collapsed) shape. */
typedef struct {
    int64_t n;                      /* outer elements: the product of shape */
    int32_t ndim;                   /* outer dimensions after collapsing, 0..UFG_DEVICE_MAX_DIMS */
    int32_t nargs;                  /* inputs + outputs (+ 1 for the mask, which comes last) */
    uint32_t by_value;              /* bit k: argument k is values[k], not data[k] */
    int32_t has_where;              /* argument nargs - 1 is a bool mask: skip elements where 0 */
    int32_t contiguous;             /* ndim <= 1: offset of element i is i * strides[k][0] */
    int32_t grid, block;            /* launch configuration, chosen by the runtime */
    int64_t shape[UFG_DEVICE_MAX_DIMS];
    char *data[UFG_DEVICE_MAX_ARGS];
    int64_t strides[UFG_DEVICE_MAX_ARGS][UFG_DEVICE_MAX_DIMS];   /* bytes */
    ufg_value values[UFG_DEVICE_MAX_ARGS];
    int64_t core_sizes[UFG_DEVICE_MAX_CORE_DIMS];     /* a gufunc's variable core dims, in layout order */
    int64_t core_strides[UFG_DEVICE_MAX_CORE_STRIDES];/* bytes, in NumPy's order (steps[nargs:]) */
} ufg_kernel_params;

/*
 * A reduction with a binary elementwise body (out = f(acc, x)) over the `reduce` dimensions of
 * `in`, for each element of the `keep` dimensions.  Thread t reduces chunk t % n_chunks of
 * output t / n_chunks (or chunk t / n_out of output t % n_out: outputs_fastest), starting
 * from `identity` (or, with start_from_first, from the chunk's first element: the function
 * has no identity, and every chunk has one element at least), in index order; chunk c holds
 * elements c, c + n_chunks, ...  With n_chunks > 1 the partial results land
 * `out_chunk_stride` bytes apart and the runtime reduces them in further launches.
 *
 * An accumulation takes the same parameters with one reduced dimension, the axis, and no
 * chunks: thread m scans kept element m, writing every partial result out_scan_stride bytes
 * apart, starting from its carry when there is one (a chunk of a longer line).  A reduceat
 * too, with n_segments segments of the axis starting at segments[]: thread t reduces
 * segment t % n_segments of kept element t / n_segments.
 *
 * An at (ufunc.at) takes n_segments byte offsets into the array `out` in segments[], in
 * NumPy's order, and a grid-stride loop updates the element at each (launched on one thread,
 * which then takes them in turn, unless the offsets are all distinct): the element is
 * converted to the loop's first input type (cast pair at_load), combined with the i-th
 * second input (at in + i * in_reduce_strides[0], or at_value for a scalar: at_by_value) by
 * the function's body, and the result converted back into the element (cast pair at_store;
 * pairs as ufuncgen/cast_element.h numbers them).  A unary function has no second input.
 */
typedef struct {
    int64_t n_out;                  /* elements of the kept dimensions */
    int64_t n_reduce;               /* elements reduced into each output */
    int64_t n_chunks;
    int64_t chunk_len;
    int32_t keep_ndim, reduce_ndim;
    int32_t grid, block;
    int64_t keep_shape[UFG_DEVICE_MAX_DIMS];
    int64_t reduce_shape[UFG_DEVICE_MAX_DIMS];
    const char *in;
    int64_t in_keep_strides[UFG_DEVICE_MAX_DIMS];
    int64_t in_reduce_strides[UFG_DEVICE_MAX_DIMS];
    char *out;
    int64_t out_keep_strides[UFG_DEVICE_MAX_DIMS];
    int64_t out_chunk_stride;
    int32_t outputs_fastest;        /* thread t takes chunk t / n_out of output t % n_out
                                     * (neighbouring threads, neighbouring outputs), not
                                     * chunk t % n_chunks of output t / n_chunks */
    ufg_value identity;
    int32_t start_from_first;
    int32_t partials_in, partials_out;  /* a loop that steps wider than it stores (its
                                     * steps_in_float): `in`, `out` hold a split reduction's
                                     * partial results as floats, not yet rounded */
    int64_t out_scan_stride;        /* accumulate: bytes between the results along the axis;
                                     * reduceat: between the segments' results */
    const char *carry;              /* accumulate: NULL, or each kept element's total of what
                                     * comes before it on its line (at carry_keep_strides),
                                     * which its scan continues from */
    int64_t carry_keep_strides[UFG_DEVICE_MAX_DIMS];
    const int64_t *segments;        /* reduceat: n_segments start indices, in device memory;
                                     * at: n_segments byte offsets into out */
    int64_t n_segments;
    int32_t at_load_pair, at_store_pair;
    int32_t at_by_value;
    ufg_value at_value;
} ufg_reduce_params;

/* A generated launcher: 0, or the backend's error code (a cudaError_t under CUDA). */
typedef int (*ufg_elementwise_launcher)(const ufg_kernel_params *params, void *stream);
typedef int (*ufg_reduce_launcher)(const ufg_reduce_params *params, void *stream);

enum { UFG_BACKEND_SIM = 0, UFG_BACKEND_CUDA = 1, UFG_BACKEND_COUNT = 2 };

/* One type signature's launchers, per backend; NULL where not built. */
typedef struct {
    ufg_elementwise_launcher elementwise[UFG_BACKEND_COUNT];
    ufg_reduce_launcher reduce[UFG_BACKEND_COUNT];
    ufg_reduce_launcher accumulate[UFG_BACKEND_COUNT];   /* the reduce kernels' loops */
    ufg_reduce_launcher reduceat[UFG_BACKEND_COUNT];     /* the same loops */
    /* The same loops of an associative function, over one whole contiguous line: its
     * reduction and its scan (CUB's under CUDA). */
    ufg_reduce_launcher total[UFG_BACKEND_COUNT];
    ufg_reduce_launcher scan[UFG_BACKEND_COUNT];
    ufg_reduce_launcher at[UFG_BACKEND_COUNT];           /* every loop of a unary or binary
                                                          * function of one output */
    int32_t steps_in_float;         /* a float16 or bfloat16 reduction that steps in float:
                                     * its partial results are float32 */
} ufg_device_loop;


/* ------------------------------------------------------------------ kernel-side helpers */

#if defined(__CUDACC__)
#include <cuda_runtime.h>
#define UFG_DEVICE_FN static __device__ __forceinline__
#define UFG_KERNEL static __global__ void __launch_bounds__(UFG_DEVICE_BLOCK)
#define UFG_THREAD_INDEX ((int64_t)blockIdx.x * (int64_t)blockDim.x + (int64_t)threadIdx.x)
#define UFG_THREAD_COUNT ((int64_t)gridDim.x * (int64_t)blockDim.x)
#define UFG_RESTRICT __restrict__
#define UFG_EXTERN_C extern "C"
/* Defines `int name(const params_type *p, void *stream)`: launches `kernel` on the stream and
 * returns the launch's cudaError_t (errors inside the kernel surface at the next sync). */
#define UFG_DEFINE_LAUNCHER(name, kernel, params_type)                                   \
    extern "C" int name(const params_type *p, void *stream)                            \
    {                                                                                   \
        kernel<<<p->grid, p->block, 0, (cudaStream_t)stream>>>(*p);                     \
        return (int)cudaGetLastError();                                                 \
    }
#else
/* The simulator's grid coordinates.  Thread-local so that simulated launches made from
 * several Python threads at once (the GIL is released around them) keep apart. */
typedef struct { int64_t block, thread, grid_dim, block_dim; } ufg_sim_coordinates;
/* Marked unused: files that include this header only for the structs (the runtime) define no
 * kernel. */
static _Thread_local ufg_sim_coordinates ufg_sim_at __attribute__((unused));
#define UFG_DEVICE_FN static inline
#define UFG_KERNEL static void
#define UFG_THREAD_INDEX (ufg_sim_at.block * ufg_sim_at.block_dim + ufg_sim_at.thread)
#define UFG_THREAD_COUNT (ufg_sim_at.grid_dim * ufg_sim_at.block_dim)
#define UFG_RESTRICT restrict
#define UFG_EXTERN_C
/* Runs every (block, thread) of the grid in turn, as one CPU thread. */
#define UFG_DEFINE_LAUNCHER(name, kernel, params_type)                                   \
    int name(const params_type *p, void *stream)                                        \
    {                                                                                   \
        (void)stream;                                                                   \
        for (int64_t b = 0; b < p->grid; b++) {                                         \
            for (int64_t t = 0; t < p->block; t++) {                                    \
                ufg_sim_at = (ufg_sim_coordinates){b, t, p->grid, p->block};            \
                kernel(*p);                                                             \
            }                                                                           \
        }                                                                               \
        return 0;                                                                       \
    }
#endif

/* The launcher a kernel file defines for `name`: ufg_launch_cuda_<name> or ufg_launch_sim_<name>. */
#ifdef __CUDACC__
#define UFG_LAUNCHER(name) ufg_launch_cuda_##name
#else
#define UFG_LAUNCHER(name) ufg_launch_sim_##name
#endif

/* Input k of a launch as a value of type T: the scalar passed by value, or the element at
 * byte offset `offset`. */
#define UFG_ARGUMENT(T, p, k, offset)                                                     \
    ((((p)->by_value >> (k)) & 1u) ? *(const T *)(p)->values[k].bytes                       \
                                   : *(const T *)((p)->data[k] + (offset)))

/* Threads per block: a multiple of the warp size that leaves registers to the body. */
#define UFG_DEVICE_BLOCK 256

/* Byte offsets of outer element i in each argument: one unravel of i, shared by all. */
UFG_DEVICE_FN void
ufg_element_offsets(const ufg_kernel_params *p, int64_t i, int64_t *offsets)
{
    for (int k = 0; k < p->nargs; k++) {
        offsets[k] = 0;
    }
    for (int d = p->ndim - 1; d >= 0; d--) {
        const int64_t index = i % p->shape[d];
        i /= p->shape[d];
        for (int k = 0; k < p->nargs; k++) {
            offsets[k] += index * p->strides[k][d];
        }
    }
}

/* Byte offset of element i of an N-d index space with the given shape and strides. */
UFG_DEVICE_FN int64_t
ufg_unravel_offset(int ndim, const int64_t *shape, const int64_t *strides, int64_t i)
{
    int64_t offset = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        offset += (i % shape[d]) * strides[d];
        i /= shape[d];
    }
    return offset;
}

#endif /* UFUNCGEN_DEVICE_KERNEL_H */
