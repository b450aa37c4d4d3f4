/*
 * Launching kernels: launch configuration, the GIL-free call of a launcher with its device
 * made current, and the runtime's own cast kernel.
 */
#ifndef UFG_DEVICE_LAUNCH_H
#define UFG_DEVICE_LAUNCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "backend.h"
#include "cast.h"
#include "device_array.h"

/* grid = min(ceil(threads / UFG_DEVICE_BLOCK), multiprocessors * 32), at least 1: enough
 * blocks to fill the device, and grid-stride loops for the rest.  -1 with an exception. */
int ufg_launch_grid(const ufg_backend *backend, int device, int64_t threads, int32_t *grid);

/* One launch: exactly one of the two launchers is set, with its own kind of parameters. */
typedef struct {
    ufg_elementwise_launcher elementwise;
    const ufg_kernel_params *kernel_params;
    ufg_reduce_launcher reduce;
    const ufg_reduce_params *reduce_params;
} ufg_launch;

/*
 * Calls the launcher with `device` current and the GIL released, then the backend's
 * post-launch check.  Returns 0, or -1 with DeviceError naming the error and `what`.
 * Every launch is recorded (below) first; under the simulator's skip switch
 * (backend->skip_kernels) the launcher itself is not called.
 */
int ufg_launch_run(const ufg_backend *backend, const ufg_launch *launch, int device,
                   uintptr_t stream, const char *what);

/*
 * What the calling thread launched: a count and the last launch, recorded by ufg_launch_run
 * for every backend, so that tests and benchmarks observe launches below the Python layer
 * (ufuncgen._device.launch_count / last_launch).  Per thread, so launches made by other
 * threads (a dask worker, a test's background thread) do not disturb what a thread sees.
 */
typedef enum { UFG_LAUNCH_ELEMENTWISE, UFG_LAUNCH_REDUCE, UFG_LAUNCH_CAST } ufg_launch_kind;

typedef struct {
    ufg_launch_kind kind;
    int device;
    int ran;                    /* 0: the kernel was skipped (backend->skip_kernels) */
    uintptr_t stream;           /* the handle it was queued on (0: the legacy default) */
    int32_t grid, block;
    /* Elementwise and cast: the collapsed shape.  Reduce: the kept dimensions in shape,
     * the reduced ones in reduce_shape. */
    int ndim, reduce_ndim;
    int64_t shape[UFG_DEVICE_MAX_DIMS];
    int64_t reduce_shape[UFG_DEVICE_MAX_DIMS];
} ufg_launch_record;

uint64_t ufg_launch_count(void);
/* The calling thread's last launch, or NULL before its first. */
const ufg_launch_record *ufg_launch_last(void);

/*
 * Drops size-1 dimensions and merges neighbours every operand steps through as one (an
 * operand steps over d exactly as over a whole row of d + 1): a C-contiguous view of any shape
 * becomes 1-d.  Works in place on shape and the nops stride rows; returns the new ndim.
 */
int ufg_collapse(int ndim, int64_t *shape, int nops,
                 int64_t (*strides)[UFG_DEVICE_ARRAY_MAX_DIMS]);

/* Exchanges dimensions a and b of shape and of the nops stride rows. */
void ufg_swap_dimensions(int64_t *shape, int nops, int64_t (*strides)[UFG_DEVICE_ARRAY_MAX_DIMS],
                         int a, int b);

/*
 * ufg_collapse for work whose elements are independent (elementwise kernels, casts), after
 * putting the dimensions in the operands' memory order: a dimension moves outward past one
 * that every operand stepping through both steps through in smaller steps.  A transposed
 * array and a result laid out like it then become 1-d, and neighbouring threads take
 * neighbouring elements; dimensions the operands order differently keep their order.
 */
int ufg_collapse_in_memory_order(int ndim, int64_t *shape, int nops,
                                 int64_t (*strides)[UFG_DEVICE_ARRAY_MAX_DIMS]);

/*
 * Casts (or copies, for equal codes) the N-d strided array at src into dst, element by element,
 * with the cast kernel.  Strides are in bytes; contiguous dimensions are merged first.
 * ndim may exceed UFG_DEVICE_MAX_DIMS as long as merging brings it within.  With a mask (a
 * bool array, NULL for none) only elements where it is nonzero are written, and nothing is
 * merged: the caller passes at most UFG_DEVICE_MAX_DIMS dimensions.
 */
int ufg_launch_cast(const ufg_backend *backend, int device, uintptr_t stream, int ndim,
                    const int64_t *shape, const char *src, const int64_t *src_strides,
                    ufg_dtype_code src_code, char *dst, const int64_t *dst_strides,
                    ufg_dtype_code dst_code, const char *mask, const int64_t *mask_strides);

#endif /* UFG_DEVICE_LAUNCH_H */
