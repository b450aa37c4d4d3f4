/*
 * Launch configuration and the call of a launcher, shared by the generated kernels' entry
 * points (launch_module.c) and the runtime's own cast kernel, which is launched from here.
 */
#include "launch.h"

#include <stdlib.h>
#include <string.h>

#include "device_array.h"
#include "runtime.h"

int
ufg_launch_grid(const ufg_backend *backend, int device, int64_t threads, int32_t *grid)
{
    const int multiprocessors = ufg_runtime_multiprocessors(backend, device);
    int64_t blocks;

    if (multiprocessors < 0) {
        return -1;
    }
    blocks = threads / UFG_DEVICE_BLOCK + (threads % UFG_DEVICE_BLOCK != 0);
    if (blocks > (int64_t)multiprocessors * 32) {
        blocks = (int64_t)multiprocessors * 32;
    }
    *grid = (int32_t)(blocks < 1 ? 1 : blocks);
    return 0;
}

/* ------------------------------------------------------------------ the launch record */

static _Thread_local uint64_t ufg_launches = 0;
static _Thread_local ufg_launch_record ufg_last;

uint64_t
ufg_launch_count(void)
{
    return ufg_launches;
}

const ufg_launch_record *
ufg_launch_last(void)
{
    return ufg_launches > 0 ? &ufg_last : NULL;
}

static ufg_elementwise_launcher ufg_cast_launcher(const ufg_backend *backend);

/* Notes the launch as this thread's last; called without the GIL (touches no Python). */
static void
ufg_launch_note(const ufg_backend *backend, const ufg_launch *launch, int device,
                uintptr_t stream, int ran)
{
    ufg_launch_record *r = &ufg_last;

    r->device = device;
    r->stream = stream;
    r->ran = ran;
    if (launch->reduce != NULL) {
        const ufg_reduce_params *p = launch->reduce_params;
        r->kind = UFG_LAUNCH_REDUCE;
        r->grid = p->grid;
        r->block = p->block;
        r->ndim = p->keep_ndim;
        r->reduce_ndim = p->reduce_ndim;
        memcpy(r->shape, p->keep_shape, sizeof(int64_t) * (size_t)p->keep_ndim);
        memcpy(r->reduce_shape, p->reduce_shape, sizeof(int64_t) * (size_t)p->reduce_ndim);
    }
    else {
        const ufg_kernel_params *p = launch->kernel_params;
        r->kind = launch->elementwise == ufg_cast_launcher(backend) ? UFG_LAUNCH_CAST
                                                                   : UFG_LAUNCH_ELEMENTWISE;
        r->grid = p->grid;
        r->block = p->block;
        r->ndim = p->ndim;
        r->reduce_ndim = 0;
        memcpy(r->shape, p->shape, sizeof(int64_t) * (size_t)p->ndim);
    }
    ufg_launches++;
}

/* ------------------------------------------------------------------ launching */

static int
ufg_launch_call(const ufg_backend *backend, const ufg_launch *launch, void *stream)
{
    if (launch->elementwise != NULL) {
        return backend->queue_elementwise != NULL
            ? backend->queue_elementwise(launch->elementwise, launch->kernel_params, stream)
            : launch->elementwise(launch->kernel_params, stream);
    }
    return backend->queue_reduce != NULL
        ? backend->queue_reduce(launch->reduce, launch->reduce_params, stream)
        : launch->reduce(launch->reduce_params, stream);
}

int
ufg_launch_run(const ufg_backend *backend, const ufg_launch *launch, int device,
               uintptr_t stream, const char *what)
{
    ufg_device_scope saved;
    int error, result = 0;

    Py_BEGIN_ALLOW_THREADS
    error = backend->device_enter(device, &saved);
    if (error == 0) {
        /* Skipping leaves out only the launcher: the device switch, the record and the
         * backend's post-launch check (and its injected errors) still happen. */
        const int run = backend->skip_kernels == NULL || !backend->skip_kernels();
        ufg_launch_note(backend, launch, device, stream, run);
        if (run) {
            result = ufg_launch_call(backend, launch, (void *)stream);
        }
        error = backend->after_launch(result, (void *)stream);
        backend->device_leave(&saved);
    }
    Py_END_ALLOW_THREADS
    if (error) {
        return ufg_device_error_int(backend, error, what);
    }
    return 0;
}

int
ufg_collapse(int ndim, int64_t *shape, int nops, int64_t (*strides)[UFG_DEVICE_ARRAY_MAX_DIMS])
{
    int out = 0;

    for (int d = 0; d < ndim; d++) {
        int merge = out > 0;
        if (shape[d] == 1) {
            continue;
        }
        for (int k = 0; merge && k < nops; k++) {
            merge = strides[k][out - 1] == strides[k][d] * shape[d];
        }
        if (merge) {
            shape[out - 1] *= shape[d];
            for (int k = 0; k < nops; k++) {
                strides[k][out - 1] = strides[k][d];
            }
            continue;
        }
        shape[out] = shape[d];
        for (int k = 0; k < nops; k++) {
            strides[k][out] = strides[k][d];
        }
        out++;
    }
    return out;
}

/* Whether dimension a belongs outside dimension b: every operand that steps through both
 * takes larger steps through a, and one operand at least does. */
static int
ufg_dimension_is_outer(int nops, int64_t (*strides)[UFG_DEVICE_ARRAY_MAX_DIMS], int a, int b)
{
    int votes = 0;

    for (int k = 0; k < nops; k++) {
        const int64_t along_a = llabs(strides[k][a]), along_b = llabs(strides[k][b]);
        if (along_a == 0 || along_b == 0) {
            continue;                       /* broadcast along one: no say */
        }
        if (along_a < along_b) {
            return 0;
        }
        votes += along_a > along_b;
    }
    return votes > 0;
}

void
ufg_swap_dimensions(int64_t *shape, int nops, int64_t (*strides)[UFG_DEVICE_ARRAY_MAX_DIMS],
                    int a, int b)
{
    int64_t t = shape[a];

    shape[a] = shape[b];
    shape[b] = t;
    for (int k = 0; k < nops; k++) {
        t = strides[k][a];
        strides[k][a] = strides[k][b];
        strides[k][b] = t;
    }
}

int
ufg_collapse_in_memory_order(int ndim, int64_t *shape, int nops,
                             int64_t (*strides)[UFG_DEVICE_ARRAY_MAX_DIMS])
{
    int kept = 0;

    for (int d = 0; d < ndim; d++) {        /* size-1 dimensions first: they have no order */
        if (shape[d] != 1) {
            shape[kept] = shape[d];
            for (int k = 0; k < nops; k++) {
                strides[k][kept] = strides[k][d];
            }
            kept++;
        }
    }
    for (int i = 1; i < kept; i++) {        /* insertion sort, stable: ndim is small */
        for (int j = i; j > 0 && ufg_dimension_is_outer(nops, strides, j, j - 1); j--) {
            ufg_swap_dimensions(shape, nops, strides, j, j - 1);
        }
    }
    return ufg_collapse(kept, shape, nops, strides);
}

/* The cast kernel's launcher for the backend: the cast kernel is part of the runtime, so it
 * is missing only from the CUDA backend of a build without CUDA, which never gets this far
 * (it has no devices). */
static ufg_elementwise_launcher
ufg_cast_launcher(const ufg_backend *backend)
{
#ifdef UFG_HAVE_CUDA
    if (backend->id == UFG_BACKEND_CUDA) {
        return ufg_cast_launch_cuda;
    }
#endif
    return backend->id == UFG_BACKEND_SIM ? ufg_cast_launch_sim : NULL;
}

int
ufg_launch_cast(const ufg_backend *backend, int device, uintptr_t stream, int ndim,
                const int64_t *shape, const char *src, const int64_t *src_strides,
                ufg_dtype_code src_code, char *dst, const int64_t *dst_strides,
                ufg_dtype_code dst_code, const char *mask, const int64_t *mask_strides)
{
    int64_t merged_shape[UFG_DEVICE_ARRAY_MAX_DIMS];
    int64_t merged_strides[2][UFG_DEVICE_ARRAY_MAX_DIMS];       /* source, destination */
    ufg_launch launch = {ufg_cast_launcher(backend), NULL, NULL, NULL};
    ufg_kernel_params params;
    int64_t n = 1;

    if (ndim > UFG_DEVICE_ARRAY_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "shape: at most %d dimensions, got %d",
                     UFG_DEVICE_ARRAY_MAX_DIMS, ndim);
        return -1;
    }
    for (int d = 0; d < ndim; d++) {
        n *= shape[d];
    }
    if (n == 0) {
        return 0;       /* zero-size work launches nothing */
    }
    memcpy(merged_shape, shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(merged_strides[0], src_strides, sizeof(int64_t) * (size_t)ndim);
    memcpy(merged_strides[1], dst_strides, sizeof(int64_t) * (size_t)ndim);
    if (mask == NULL) {     /* with a mask the caller has merged dimensions already */
        ndim = ufg_collapse_in_memory_order(ndim, merged_shape, 2, merged_strides);
    }
    if (ndim > UFG_DEVICE_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError,
                     "shape: %d dimensions remain after merging contiguous ones; device "
                     "kernels take at most %d", ndim, UFG_DEVICE_MAX_DIMS);
        return -1;
    }
    memset(&params, 0, sizeof(params));
    params.n = n;
    params.ndim = ndim;
    params.nargs = 2;
    params.contiguous = ndim <= 1;
    params.block = UFG_DEVICE_BLOCK;
    memcpy(params.shape, merged_shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(params.strides[0], merged_strides[0], sizeof(int64_t) * (size_t)ndim);
    memcpy(params.strides[1], merged_strides[1], sizeof(int64_t) * (size_t)ndim);
    params.data[0] = (char *)src;
    params.data[1] = dst;
    params.values[0].i64 = src_code;
    params.values[1].i64 = dst_code;
    if (mask != NULL) {     /* a bool mask: elements where it is 0 are left alone */
        params.nargs = 3;
        params.has_where = 1;
        params.data[2] = (char *)mask;
        memcpy(params.strides[2], mask_strides, sizeof(int64_t) * (size_t)ndim);
    }
    if (launch.elementwise == NULL) {
        PyErr_SetString(ufg_DeviceError,
                        "ufuncgen: this build of ufuncgen has no CUDA cast kernel");
        return -1;
    }
    if (ufg_launch_grid(backend, device, n, &params.grid) < 0) {
        return -1;
    }
    launch.kernel_params = &params;
    return ufg_launch_run(backend, &launch, device, stream, "the cast kernel");
}
