/*
 * The launch entry points of ufuncgen._device: launch_elementwise and launch_reduce (the
 * generated kernels, reached through a module's device table capsule) and launch_cast (the
 * runtime's own kernel).  The Python dispatch layer has already resolved types, broadcast and
 * collapsed shapes; this file validates what it is handed, fills the kernel parameters,
 * chooses the launch configuration and launches.  All three are positional-only fast calls:
 * they are on the path of every device call.
 */
#include "launch_module.h"

#include <string.h>

#include "args.h"
#include "device_array.h"
#include "dtypes.h"
#include "launch.h"
#include "runtime.h"

/* ------------------------------------------------------------------ shared parsing */

static int
ufg_check_nargs(const char *function, Py_ssize_t nargs, Py_ssize_t expected)
{
    if (nargs != expected) {
        PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd positional arguments (%zd given)",
                     function, expected, nargs);
        return -1;
    }
    return 0;
}

/* The table in a "ufuncgen.device_table" capsule, or NULL with a TypeError. */
static const ufg_device_table *
ufg_parse_table(PyObject *table_obj)
{
    const ufg_device_table *table = PyCapsule_IsValid(table_obj, UFG_DEVICE_TABLE_CAPSULE)
        ? PyCapsule_GetPointer(table_obj, UFG_DEVICE_TABLE_CAPSULE) : NULL;
    if (table == NULL) {
        PyErr_Format(PyExc_TypeError,
                     "table: expected a \"%s\" capsule from a generated module, got %.100s",
                     UFG_DEVICE_TABLE_CAPSULE, Py_TYPE(table_obj)->tp_name);
    }
    return table;
}

/* The table in a "ufuncgen.device_table" capsule and a loop index within it. */
static const ufg_device_loop *
ufg_parse_loop(PyObject *table_obj, PyObject *index_obj)
{
    const ufg_device_table *table = ufg_parse_table(table_obj);
    int64_t index;

    if (table == NULL) {
        return NULL;
    }
    if (ufg_arg_int64(index_obj, "loop_index", &index) < 0) {
        return NULL;
    }
    if (index < 0 || index >= table->ntypes) {
        PyErr_Format(PyExc_ValueError,
                     "loop_index: expected 0 to %d (the function has %d type signatures), "
                     "got %lld", table->ntypes - 1, table->ntypes, (long long)index);
        return NULL;
    }
    return &table->loops[index];
}

/* table_associative(table): whether the function may split a reduction (device_kernel.h). */
PyObject *
ufg_table_associative(PyObject *Py_UNUSED(module), PyObject *table_obj)
{
    const ufg_device_table *table = ufg_parse_table(table_obj);
    return table == NULL ? NULL : PyBool_FromLong(table->associative);
}

/* Raised when the table has no launcher for the backend in use. */
static PyObject *
ufg_missing_launcher(const ufg_backend *backend, PyObject *index_obj)
{
    if (backend->id == UFG_BACKEND_CUDA) {
        PyErr_Format(ufg_DeviceError,
                     "ufuncgen: this module was built without CUDA kernels (no nvcc, or "
                     "UFUNCGEN_CUDA=OFF), so loop %S cannot run on a CUDA device; rebuild it "
                     "with nvcc, or set UFUNCGEN_DEVICE=sim to run its kernels on the host",
                     index_obj);
    }
    else {
        PyErr_Format(ufg_DeviceError,
                     "ufuncgen: this module has no %s kernel for loop %S", backend->name,
                     index_obj);
    }
    return NULL;
}

/* A tuple of exactly `expected` entries. */
static int
ufg_check_tuple(PyObject *obj, const char *argname, Py_ssize_t expected, const char *why)
{
    if (!PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a tuple, got %.100s", argname,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyTuple_GET_SIZE(obj) != expected) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd entries (%s), got %zd", argname,
                     expected, why, PyTuple_GET_SIZE(obj));
        return -1;
    }
    return 0;
}

/* A tuple of exactly `expected` ints. */
static int
ufg_parse_exact_int64s(PyObject *obj, const char *argname, int expected, const char *why,
                       int64_t *out)
{
    int len;

    if (ufg_check_tuple(obj, argname, expected, why) < 0) {
        return -1;
    }
    return ufg_arg_int64_tuple(obj, argname, expected, 0, out, &len);
}

/* ------------------------------------------------------------------ launch_elementwise */

/* data, strides and values: one entry per argument. */
static int
ufg_parse_arguments(PyObject *data, PyObject *strides, PyObject *values,
                    ufg_kernel_params *p)
{
    char name[64];
    uintptr_t pointer;

    if (!PyTuple_Check(data)) {
        PyErr_Format(PyExc_TypeError, "data: expected a tuple of pointers, got %.100s",
                     Py_TYPE(data)->tp_name);
        return -1;
    }
    p->nargs = (int32_t)PyTuple_GET_SIZE(data);
    if (p->nargs < 1 || p->nargs > UFG_DEVICE_MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "data: expected 1 to %d arguments, got %zd",
                     UFG_DEVICE_MAX_ARGS, PyTuple_GET_SIZE(data));
        return -1;
    }
    if (ufg_check_tuple(strides, "strides", p->nargs, "one per argument") < 0 ||
        ufg_check_tuple(values, "values", p->nargs, "one per argument") < 0) {
        return -1;
    }
    for (int k = 0; k < p->nargs; k++) {
        PyOS_snprintf(name, sizeof(name), "data[%d]", k);
        if (ufg_arg_uintptr(PyTuple_GET_ITEM(data, k), name, &pointer) < 0) {
            return -1;
        }
        p->data[k] = (char *)pointer;
        PyOS_snprintf(name, sizeof(name), "strides[%d]", k);
        if (ufg_parse_exact_int64s(PyTuple_GET_ITEM(strides, k), name, p->ndim,
                                   "one per dimension of shape", p->strides[k]) < 0) {
            return -1;
        }
        PyOS_snprintf(name, sizeof(name), "values[%d]", k);
        if (ufg_arg_value_bytes(PyTuple_GET_ITEM(values, k), name, p->values[k].bytes) < 0) {
            return -1;
        }
    }
    return 0;
}

/* by_value, has_where, core_sizes and core_strides. */
static int
ufg_parse_options(PyObject *by_value, PyObject *has_where, PyObject *core_sizes,
                  PyObject *core_strides, ufg_kernel_params *p)
{
    int64_t mask;
    int len, where;

    if (ufg_arg_int64(by_value, "by_value", &mask) < 0) {
        return -1;
    }
    if (mask < 0 || mask >= ((int64_t)1 << p->nargs)) {
        PyErr_Format(PyExc_ValueError,
                     "by_value: expected a bit mask over the %d arguments (0 to %lld), got "
                     "%lld", p->nargs, (long long)(((int64_t)1 << p->nargs) - 1),
                     (long long)mask);
        return -1;
    }
    p->by_value = (uint32_t)mask;
    where = PyObject_IsTrue(has_where);
    if (where < 0) {
        return -1;
    }
    p->has_where = where;
    if (ufg_arg_int64_tuple(core_sizes, "core_sizes", UFG_DEVICE_MAX_CORE_DIMS, 1,
                            p->core_sizes, &len) < 0 ||
        ufg_arg_int64_tuple(core_strides, "core_strides", UFG_DEVICE_MAX_CORE_STRIDES, 0,
                            p->core_strides, &len) < 0) {
        return -1;
    }
    return 0;
}

PyObject *
ufg_launch_elementwise(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    const ufg_backend *backend;
    const ufg_device_loop *loop;
    ufg_launch launch = {NULL, NULL, NULL, NULL};
    ufg_kernel_params p;
    uintptr_t stream;
    int device, ndim;

    if (ufg_check_nargs("launch_elementwise", nargs, 12) < 0 ||
        (loop = ufg_parse_loop(args[0], args[1])) == NULL ||
        (backend = ufg_runtime_backend()) == NULL ||
        ufg_arg_device(backend, args[2], "device", &device) < 0 ||
        ufg_arg_uintptr(args[3], "stream", &stream) < 0) {
        return NULL;
    }
    memset(&p, 0, sizeof(p));
    if (ufg_arg_int64_tuple(args[4], "shape", UFG_DEVICE_MAX_DIMS, 1, p.shape, &ndim) < 0) {
        return NULL;
    }
    p.ndim = ndim;
    p.contiguous = ndim <= 1;
    p.block = UFG_DEVICE_BLOCK;
    p.n = ufg_shape_size(ndim, p.shape, "shape");
    if (p.n < 0 ||
        ufg_parse_arguments(args[5], args[6], args[7], &p) < 0 ||
        ufg_parse_options(args[8], args[9], args[10], args[11], &p) < 0) {
        return NULL;
    }
    launch.elementwise = loop->elementwise[backend->id];
    if (launch.elementwise == NULL) {
        return ufg_missing_launcher(backend, args[1]);
    }
    if (p.n == 0) {
        Py_RETURN_NONE;     /* zero-size work launches nothing */
    }
    if (ufg_launch_grid(backend, device, p.n, &p.grid) < 0) {
        return NULL;
    }
    launch.kernel_params = &p;
    if (ufg_launch_run(backend, &launch, device, stream, "an elementwise kernel launch") < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ launch_reduce */

/* The shapes and the strides that must match them. */
static int
ufg_parse_reduce_layout(PyObject *const *args, ufg_reduce_params *p)
{
    int keep_ndim, reduce_ndim;

    if (ufg_arg_int64_tuple(args[4], "keep_shape", UFG_DEVICE_MAX_DIMS, 1, p->keep_shape,
                            &keep_ndim) < 0 ||
        ufg_arg_int64_tuple(args[5], "reduce_shape", UFG_DEVICE_MAX_DIMS, 1, p->reduce_shape,
                            &reduce_ndim) < 0) {
        return -1;
    }
    p->keep_ndim = keep_ndim;
    p->reduce_ndim = reduce_ndim;
    if (ufg_parse_exact_int64s(args[7], "in_keep_strides", keep_ndim,
                               "one per dimension of keep_shape", p->in_keep_strides) < 0 ||
        ufg_parse_exact_int64s(args[8], "in_reduce_strides", reduce_ndim,
                               "one per dimension of reduce_shape", p->in_reduce_strides) < 0 ||
        ufg_parse_exact_int64s(args[10], "out_keep_strides", keep_ndim,
                               "one per dimension of keep_shape", p->out_keep_strides) < 0) {
        return -1;
    }
    p->n_out = ufg_shape_size(keep_ndim, p->keep_shape, "keep_shape");
    p->n_reduce = ufg_shape_size(reduce_ndim, p->reduce_shape, "reduce_shape");
    return p->n_out < 0 || p->n_reduce < 0 ? -1 : 0;
}

/* Pointers, the chunking and the identity. */
static int
ufg_parse_reduce_operands(PyObject *const *args, ufg_reduce_params *p)
{
    uintptr_t in, out;

    if (ufg_arg_uintptr(args[6], "in_ptr", &in) < 0 ||
        ufg_arg_uintptr(args[9], "out_ptr", &out) < 0 ||
        ufg_arg_int64(args[11], "out_chunk_stride", &p->out_chunk_stride) < 0 ||
        ufg_arg_int64(args[12], "n_chunks", &p->n_chunks) < 0 ||
        ufg_arg_value_bytes(args[13], "identity_bytes", p->identity.bytes) < 0) {
        return -1;
    }
    if (p->n_chunks < 1) {
        PyErr_Format(PyExc_ValueError, "n_chunks: expected a positive int, got %lld",
                     (long long)p->n_chunks);
        return -1;
    }
    if (p->n_out > 0 && p->n_chunks > INT64_MAX / p->n_out) {
        PyErr_SetString(PyExc_ValueError, "n_chunks: n_out * n_chunks exceeds 2**63");
        return -1;
    }
    p->in = (const char *)in;
    p->out = (char *)out;
    p->chunk_len = p->n_reduce / p->n_chunks + (p->n_reduce % p->n_chunks != 0);
    return 0;
}

PyObject *
ufg_launch_reduce(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    const ufg_backend *backend;
    const ufg_device_loop *loop;
    ufg_launch launch = {NULL, NULL, NULL, NULL};
    ufg_reduce_params p;
    uintptr_t stream;
    int device;

    if (ufg_check_nargs("launch_reduce", nargs, 14) < 0 ||
        (loop = ufg_parse_loop(args[0], args[1])) == NULL ||
        (backend = ufg_runtime_backend()) == NULL ||
        ufg_arg_device(backend, args[2], "device", &device) < 0 ||
        ufg_arg_uintptr(args[3], "stream", &stream) < 0) {
        return NULL;
    }
    memset(&p, 0, sizeof(p));
    p.block = UFG_DEVICE_BLOCK;
    if (ufg_parse_reduce_layout(args, &p) < 0 || ufg_parse_reduce_operands(args, &p) < 0) {
        return NULL;
    }
    launch.reduce = loop->reduce[backend->id];
    if (launch.reduce == NULL) {
        return ufg_missing_launcher(backend, args[1]);
    }
    if (p.n_out == 0) {
        Py_RETURN_NONE;     /* no outputs: nothing to launch */
    }
    if (ufg_launch_grid(backend, device, p.n_out * p.n_chunks, &p.grid) < 0) {
        return NULL;
    }
    launch.reduce_params = &p;
    if (ufg_launch_run(backend, &launch, device, stream, "a reduction kernel launch") < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ launch_cast */

/* One side of a cast: pointer, strides (one per dimension) and dtype. */
static int
ufg_parse_cast_side(PyObject *const *args, const char *side, int ndim, char **ptr,
                    int64_t *strides, int *code)
{
    char name[32];
    PyArray_Descr *descr;
    uintptr_t pointer;

    PyOS_snprintf(name, sizeof(name), "%s_ptr", side);
    if (ufg_arg_uintptr(args[0], name, &pointer) < 0) {
        return -1;
    }
    *ptr = (char *)pointer;
    PyOS_snprintf(name, sizeof(name), "%s_strides", side);
    if (ufg_parse_exact_int64s(args[1], name, ndim, "one per dimension of shape",
                               strides) < 0) {
        return -1;
    }
    PyOS_snprintf(name, sizeof(name), "%s_dtype", side);
    *code = ufg_dtype_convert(args[2], name, &descr);
    if (*code < 0) {
        return -1;
    }
    Py_DECREF(descr);
    return 0;
}

/* launch_cast merges contiguous dimensions itself, so it takes NumPy's maximum. */
PyObject *
ufg_launch_cast_entry(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    int64_t shape[UFG_DEVICE_ARRAY_MAX_DIMS], src_strides[UFG_DEVICE_ARRAY_MAX_DIMS];
    int64_t dst_strides[UFG_DEVICE_ARRAY_MAX_DIMS], mask_strides[UFG_DEVICE_ARRAY_MAX_DIMS];
    const ufg_backend *backend;
    char *src, *dst, *mask = NULL;
    uintptr_t mask_pointer;
    int src_code, dst_code, device, ndim;
    uintptr_t stream;

    if (ufg_check_nargs("launch_cast", nargs, nargs == 11 ? 11 : 9) < 0 ||
        (backend = ufg_runtime_backend()) == NULL ||
        ufg_arg_device(backend, args[0], "device", &device) < 0 ||
        ufg_arg_uintptr(args[1], "stream", &stream) < 0 ||
        ufg_arg_int64_tuple(args[2], "shape", UFG_DEVICE_ARRAY_MAX_DIMS, 1, shape, &ndim) < 0 ||
        ufg_shape_size(ndim, shape, "shape") < 0 ||
        ufg_parse_cast_side(args + 3, "src", ndim, &src, src_strides, &src_code) < 0 ||
        ufg_parse_cast_side(args + 6, "dst", ndim, &dst, dst_strides, &dst_code) < 0) {
        return NULL;
    }
    if (nargs == 11) {      /* mask_ptr, mask_strides: a bool array choosing what is written */
        if (ndim > UFG_DEVICE_MAX_DIMS) {
            PyErr_Format(PyExc_ValueError, "shape: a masked cast takes at most %d dimensions",
                         UFG_DEVICE_MAX_DIMS);
            return NULL;
        }
        if (ufg_arg_uintptr(args[9], "mask_ptr", &mask_pointer) < 0 ||
            ufg_parse_exact_int64s(args[10], "mask_strides", ndim, "one per dimension of shape",
                                   mask_strides) < 0) {
            return NULL;
        }
        mask = (char *)mask_pointer;
    }
    if (ufg_launch_cast(backend, device, stream, ndim, shape, src, src_strides,
                        (ufg_dtype_code)src_code, dst, dst_strides,
                        (ufg_dtype_code)dst_code, mask, mask_strides) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}
