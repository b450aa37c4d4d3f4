/*
 * What the device's .reduce (reduce.c) and .accumulate (accumulate.c) share: NumPy's objects
 * looked up once, the parsing of their vectorcall arguments, out=, NumPy's reduction type
 * resolution (cached per function and dtypes), and the checks of the casts around a launch.
 * Messages start with `prefix`, the method as the caller spelled it ("add.reduce").
 */
#include "reduction.h"

#include <string.h>

#include "dtypes.h"
#include "keepalive.h"
#include "runtime.h"
#include "stream_device.h"

/* Python objects looked up once: numpy._NoValue, and the strings of the resolution call. */
PyObject *ufg_reduction_no_value = NULL;
static PyObject *ufg_reduction_resolve_name = NULL;
static PyObject *ufg_reduction_resolve_kwnames = NULL;        /* reduction, casting */
static PyObject *ufg_reduction_resolve_kwnames_dtype = NULL;  /* ... and signature */
static PyObject *ufg_reduction_unsafe = NULL;

int
ufg_reduction_init(void)
{
    if (ufg_reduction_resolve_kwnames != NULL) {
        return 0;
    }
    if (ufg_axis_error() == NULL) {     /* imported now: the bounds checks raise it */
        return -1;
    }
    if (ufg_reduction_no_value == NULL &&
        (ufg_reduction_no_value = ufg_module_attribute("numpy", "_NoValue")) == NULL) {
        return -1;
    }
    if (ufg_reduction_resolve_name == NULL) {
        ufg_reduction_resolve_name = PyUnicode_InternFromString("resolve_dtypes");
        if (ufg_reduction_resolve_name == NULL) {
            return -1;
        }
    }
    if (ufg_reduction_unsafe == NULL) {
        ufg_reduction_unsafe = PyUnicode_InternFromString("unsafe");
        if (ufg_reduction_unsafe == NULL) {
            return -1;
        }
    }
    if (ufg_reduction_resolve_kwnames_dtype == NULL) {
        ufg_reduction_resolve_kwnames_dtype = Py_BuildValue("(sss)", "reduction", "casting",
                                                         "signature");
        if (ufg_reduction_resolve_kwnames_dtype == NULL) {
            return -1;
        }
    }
    ufg_reduction_resolve_kwnames = Py_BuildValue("(ss)", "reduction", "casting");
    return ufg_reduction_resolve_kwnames == NULL ? -1 : 0;
}

/* The code of a descriptor, or -1 for one device kernels do not take (or not native). */
static int
ufg_reduction_code_of_descr(PyArray_Descr *descr)
{
    return PyArray_DescrCheck(descr) ? ufg_dtype_code_of_supported(descr) : -1;
}

int64_t
ufg_reduction_chunk_count(int64_t n, int64_t n_out, int64_t threads, int64_t least)
{
    const int64_t by_threads = n_out < threads ? threads / n_out : 1;
    const int64_t n_chunks = n / least < by_threads ? n / least : by_threads;

    return n_chunks > 1 ? n_chunks : 1;
}

int64_t
ufg_reduction_product(int ndim, const int64_t *shape)
{
    int64_t n = 1;

    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            return 0;
        }
    }
    for (int d = 0; d < ndim; d++) {
        n *= shape[d];
    }
    return n;
}

/* Python's collapse(): ValueError past the kernels' dimension limit. */
int
ufg_reduction_collapse(int ndim, int64_t *shape, int nops,
                       int64_t (*strides)[UFG_CALL_MAX_NDIM])
{
    const int merged = ufg_collapse(ndim, shape, nops, strides);

    if (merged > UFG_DEVICE_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError,
                     "the device kernels handle at most %d dimensions after merging contiguous "
                     "ones; this call has %d", UFG_DEVICE_MAX_DIMS, merged);
        return -1;
    }
    return merged;
}

int
ufg_reduction_plan_lines(int ndim, const int64_t *shape, int axis, const int64_t *in_strides,
                         const int64_t *out_strides, ufg_reduction_lines *lines)
{
    int64_t kept[UFG_CALL_MAX_NDIM], strides[2][UFG_CALL_MAX_NDIM];
    int n = 0;

    for (int d = 0; d < ndim; d++) {
        if (d != axis) {
            kept[n] = shape[d];
            strides[0][n] = in_strides[d];
            strides[1][n] = out_strides[d];
            n++;
        }
    }
    lines->n_lines = ufg_reduction_product(n, kept);
    n = ufg_reduction_collapse(n, kept, 2, strides);
    if (n < 0) {
        return -1;
    }
    lines->keep_ndim = n;
    memcpy(lines->keep_shape, kept, sizeof(int64_t) * (size_t)n);
    memcpy(lines->in_keep, strides[0], sizeof(int64_t) * (size_t)n);
    memcpy(lines->out_keep, strides[1], sizeof(int64_t) * (size_t)n);
    return 0;
}

int
ufg_reduction_check_function(const char *prefix, const char *method,
                             const ufg_function_descriptor *fn)
{
    if (fn->signature != NULL) {
        PyErr_Format(PyExc_RuntimeError, "%s: Reduction not defined on ufunc with signature",
                     prefix);
        return -1;
    }
    if (fn->nin != 2) {         /* NumPy's reasons, in its order */
        PyErr_Format(PyExc_ValueError, "%s: %s only supported for binary functions", prefix,
                     method);
        return -1;
    }
    if (fn->nout != 1) {
        PyErr_Format(PyExc_ValueError, "%s: %s only supported for functions returning a single "
                     "value", prefix, method);
        return -1;
    }
    if (fn->device_loops == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: %s was built without device kernels", prefix,
                     fn->name);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ arguments */

/* The vectorcall arguments into values[count] (borrowed; NULL: not given): the first
 * `positional` names may come by position, all by keyword; `supported` lists them for the
 * message about any other keyword. */
int
ufg_reduction_parse(const char *prefix, const char *const *names, int count, int positional,
                    const char *supported, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames, PyObject **values)
{
    const Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *unknown = NULL;
    unsigned conflicts = 0;

    if (nargs > positional) {
        PyErr_Format(PyExc_TypeError, "%s takes at most %d arguments", prefix, positional);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        values[i] = args[i];
    }
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j);
        int k = count - 1;

        while (k >= 0 && PyUnicode_CompareWithASCIIString(key, names[k]) != 0) {
            k--;
        }
        if (k < 0) {
            if (unknown == NULL) {
                unknown = key;
            }
        }
        else if (k < nargs) {
            conflicts |= 1u << k;
        }
        else {
            values[k] = args[nargs + j];
        }
    }
    for (int k = 0; k < positional; k++) {
        if (conflicts & (1u << k)) {
            PyErr_Format(PyExc_TypeError, "%s: got multiple values for '%s'", prefix, names[k]);
            return -1;
        }
    }
    if (values[0] == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: missing the array", prefix);
        return -1;
    }
    if (unknown != NULL) {
        /* The device takes every keyword NumPy's method does: another is NumPy's error. */
        PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%S' (it takes: "
                     "%s)", prefix, unknown, supported);
        return -1;
    }
    return 0;
}

/* One entry of axis= as an integer (TypeError for anything else). */
static int
ufg_reduction_axis_value(const char *prefix, PyObject *obj, int *value)
{
    const int status = ufg_axis_from_object(obj, value);

    if (status > 0) {
        PyErr_Format(PyExc_TypeError, "%s: axis must be None, an integer or a tuple of "
                     "integers, got %.100s", prefix, Py_TYPE(obj)->tp_name);
    }
    return status == 0 ? 0 : -1;
}

/* An axis in [-ndim, ndim) (AxisError outside), normalized into *axis. */
static int
ufg_reduction_axis_in_bounds(const char *prefix, int value, int ndim, int *axis)
{
    if (value < -ndim || value >= ndim) {
        PyErr_Format(ufg_axis_error(),
                     "%s: axis %d is out of bounds for array of dimension %d", prefix, value,
                     ndim);
        return -1;
    }
    *axis = value < 0 ? value + ndim : value;
    return 0;
}

int
ufg_reduction_axes(const char *prefix, PyObject *axis, int ndim, int *axes, Py_ssize_t *count)
{
    int value = 0, normalized;

    if (axis == Py_None) {
        for (int d = 0; d < ndim; d++) {
            axes[d] = d;
        }
        *count = ndim;
        return 0;
    }
    if (axis != NULL && PyTuple_Check(axis)) {
        *count = PyTuple_GET_SIZE(axis);
        for (Py_ssize_t i = 0; i < *count; i++) {
            if (ufg_reduction_axis_value(prefix, PyTuple_GET_ITEM(axis, i), &value) < 0 ||
                ufg_reduction_axis_in_bounds(prefix, value, ndim, &normalized) < 0) {
                return -1;
            }
            if (i < UFG_CALL_MAX_NDIM) {
                axes[i] = normalized;
            }
        }
        return 0;
    }
    /* One integer (0 when not given); NumPy lets 0 and -1 through for a 0-d array. */
    if (axis != NULL && ufg_reduction_axis_value(prefix, axis, &value) < 0) {
        return -1;
    }
    *count = ndim == 0 && (value == 0 || value == -1) ? 0 : 1;
    return *count == 0 ? 0 : ufg_reduction_axis_in_bounds(prefix, value, ndim, &axes[0]);
}

int
ufg_reduction_check_out(const char *prefix, const ufg_operand *array, int ndim,
                        const int64_t *shape, const ufg_operand *out)
{
    PyObject *got, *want;

    if (out->readonly) {
        PyErr_Format(PyExc_ValueError, "%s: out= is read-only", prefix);
        return -1;
    }
    if (out->ndim != ndim || memcmp(out->shape, shape, sizeof(int64_t) * (size_t)ndim) != 0) {
        got = ufg_shape_repr(out->ndim, out->shape);
        want = got == NULL ? NULL : ufg_shape_repr(ndim, shape);
        if (want != NULL) {
            PyErr_Format(PyExc_ValueError, "%s: out= has shape %U, but the result's shape is %U",
                         prefix, got, want);
        }
        Py_XDECREF(got);
        Py_XDECREF(want);
        return -1;
    }
    if (out->device != array->device) {
        PyErr_Format(PyExc_ValueError, "%s: out= is on CUDA device %d, the array on device %d",
                     prefix, out->device, array->device);
        return -1;
    }
    return 0;
}

/* out=: None, an array, or a tuple of one array.  *out_obj is borrowed (NULL: allocate). */
int
ufg_reduction_out_object(const char *prefix, PyObject *value, PyObject **out_obj)
{
    *out_obj = NULL;
    if (value == NULL || value == Py_None) {
        return 0;
    }
    if (PyTuple_Check(value)) {
        if (PyTuple_GET_SIZE(value) != 1) {
            PyErr_Format(PyExc_ValueError, "%s: out= must hold one array", prefix);
            return -1;
        }
        value = PyTuple_GET_ITEM(value, 0);
        if (value == Py_None) {     /* NumPy's reduce refuses it too (TypeError) */
            PyErr_Format(PyExc_TypeError,
                         "%s: out=(None,) holds no array; pass out=None for a new "
                         "result", prefix);
            return -1;
        }
    }
    *out_obj = value;
    return 0;
}

/* The caller's out= against the result: kind, writability, shape, device. */
int
ufg_reduction_out_operand(const char *prefix, PyObject *out_obj, const char *what,
                       const ufg_operand *array, uintptr_t stream, ufg_operand *out)
{
    PyObject *type_name;
    int is_device = ufg_is_device_object(out_obj);

    if (is_device < 0) {
        return -1;
    }
    if (!is_device) {
        type_name = ufg_type_name(out_obj);
        if (type_name != NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s: out= is a %U, but the array is on CUDA device %d; host "
                         "and device arrays do not mix", prefix, type_name, array->device);
            Py_DECREF(type_name);
        }
        return -1;
    }
    return ufg_operand_from_buffer(out_obj, what, out, stream);
}


/* NumPy's reduction resolution per (function, array dtype, dtype=, out= dtype): the loop and
 * the accumulator, or loop -1 (no device reduction loop).  Filled under the GIL; an entry is
 * written whole once resolve_dtypes has answered, so a duplicate is the worst a thread
 * switch can cause. */
#define UFG_REDUCTION_CACHE_SIZE 64
static ufg_reduce_resolution ufg_reduction_cache[UFG_REDUCTION_CACHE_SIZE];
static int ufg_reduction_cache_used = 0, ufg_reduction_cache_next = 0;

static ufg_reduce_resolution *
ufg_reduction_cache_find(const ufg_function_descriptor *fn, int array_code, int dtype_code,
                         int out_code)
{
    for (int i = 0; i < ufg_reduction_cache_used; i++) {
        ufg_reduce_resolution *r = &ufg_reduction_cache[i];
        if (r->fn == fn && r->array_code == array_code && r->dtype_code == dtype_code &&
            r->out_code == out_code) {
            return r;
        }
    }
    return NULL;
}

static ufg_reduce_resolution *
ufg_reduction_cache_add(const ufg_reduce_resolution *entry)
{
    ufg_reduce_resolution *slot;

    if (ufg_reduction_cache_used < UFG_REDUCTION_CACHE_SIZE) {
        slot = &ufg_reduction_cache[ufg_reduction_cache_used++];
    }
    else {
        slot = &ufg_reduction_cache[ufg_reduction_cache_next];
        ufg_reduction_cache_next = (ufg_reduction_cache_next + 1) % UFG_REDUCTION_CACHE_SIZE;
    }
    *slot = *entry;
    return slot;
}

/* NumPy's reduction resolution: ufunc.resolve_dtypes((out, array, None), reduction=True,
 * casting='unsafe'[, signature=(dtype, None, None)]) → entry->loop_index, acc.  dtype= fixes
 * the loop's DType, not an operand's dtype (so a byte-swapped one is NumPy's TypeError), and
 * out= of another kind is cast into unsafely, as NumPy's reduce does. */
static int
ufg_reduction_resolve_dtypes(const char *prefix, const ufg_function_descriptor *fn,
                             PyObject *ufunc, PyArray_Descr *dtype, PyArray_Descr *out_descr,
                             ufg_dtype_code array_code, ufg_reduce_resolution *entry)
{
    PyArray_Descr *array_descr = ufg_call_descr(array_code);
    PyObject *dtypes, *signature = NULL, *resolved, *callargs[5];
    int codes[3];
    const int nops = fn->nin + fn->nout;

    if (array_descr == NULL) {
        return -1;
    }
    dtypes = PyTuple_Pack(3, out_descr != NULL ? (PyObject *)out_descr : Py_None,
                          (PyObject *)array_descr, Py_None);
    if (dtypes == NULL) {
        return -1;
    }
    if (dtype != NULL && (signature = PyTuple_Pack(3, (PyObject *)dtype, Py_None,
                                                   Py_None)) == NULL) {
        Py_DECREF(dtypes);
        return -1;
    }
    callargs[0] = ufunc;
    callargs[1] = dtypes;
    callargs[2] = Py_True;
    callargs[3] = ufg_reduction_unsafe;
    callargs[4] = signature;
    resolved = PyObject_VectorcallMethod(ufg_reduction_resolve_name, callargs, 2,
                                         signature != NULL ? ufg_reduction_resolve_kwnames_dtype
                                                           : ufg_reduction_resolve_kwnames);
    Py_DECREF(dtypes);
    Py_XDECREF(signature);
    if (resolved == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            ufg_prefix_error(prefix);
        }
        return -1;
    }
    if (!PyTuple_Check(resolved) || PyTuple_GET_SIZE(resolved) != 3) {
        PyErr_Format(PyExc_SystemError, "%s: resolve_dtypes returned %R", prefix,
                     resolved);
        Py_DECREF(resolved);
        return -1;
    }
    for (int k = 0; k < 3; k++) {
        codes[k] = ufg_reduction_code_of_descr((PyArray_Descr *)PyTuple_GET_ITEM(resolved, k));
    }
    Py_DECREF(resolved);
    entry->loop_index = -1;
    entry->acc = (signed char)codes[0];
    if (codes[0] < 0 || codes[1] != codes[0] || codes[2] != codes[0] || nops != 3) {
        return 0;
    }
    {
        const unsigned char loop[3] = {(unsigned char)codes[0], (unsigned char)codes[0],
                                       (unsigned char)codes[0]};
        entry->loop_index = ufg_device_loop_index(fn, loop);
    }
    return 0;
}

/* The resolution, from the cache or NumPy.  NULL with an exception; else an entry whose
 * loop_index may be -1.  A dtype= or out= outside the supported codes is resolved uncached into
 * *scratch. */
ufg_reduce_resolution *
ufg_reduction_resolve(const char *prefix, const ufg_function_descriptor *fn, PyObject *ufunc,
                      PyArray_Descr *dtype, const ufg_operand *array, const ufg_operand *out,
                      ufg_reduce_resolution *scratch)
{
    const int dtype_code = dtype != NULL && PyArray_DescrCheck(dtype)
                           ? ufg_dtype_keyword_code(dtype) : -1;
    const int out_code = out != NULL ? (int)out->code : -1;
    const int cacheable = dtype == NULL || dtype_code >= 0;
    ufg_reduce_resolution *known;
    PyArray_Descr *out_descr = NULL;

    if (cacheable) {
        known = ufg_reduction_cache_find(fn, (int)array->code, dtype_code, out_code);
        if (known != NULL) {
            return known;
        }
    }
    if (out != NULL && (out_descr = ufg_call_descr(out->code)) == NULL) {
        return NULL;
    }
    memset(scratch, 0, sizeof(*scratch));
    scratch->fn = fn;
    scratch->array_code = (signed char)array->code;
    scratch->dtype_code = (signed char)dtype_code;
    scratch->out_code = (signed char)out_code;
    if (ufg_reduction_resolve_dtypes(prefix, fn, ufunc, dtype, out_descr, array->code,
                                  scratch) < 0) {
        return NULL;
    }
    return cacheable ? ufg_reduction_cache_add(scratch) : scratch;
}


/* Whether a cast over `shape` with these strides fits the kernels after merging. */
int
ufg_reduction_check_cast(int ndim, const int64_t *shape, const int64_t *src_strides,
                         const int64_t *dst_strides)
{
    int64_t merged_shape[UFG_CALL_MAX_NDIM], strides[2][UFG_CALL_MAX_NDIM];

    if (ufg_reduction_product(ndim, shape) == 0) {
        return 0;                   /* nothing is cast */
    }
    for (int d = 0; d < ndim; d++) {
        /* An axis both step 0 along is one element to the cast: a broadcast axis of a copy
         * of the data (ufg_call_copy_data), which casts it once. */
        merged_shape[d] = src_strides[d] == 0 && dst_strides[d] == 0 ? 1 : shape[d];
    }
    memcpy(strides[0], src_strides, sizeof(int64_t) * (size_t)ndim);
    memcpy(strides[1], dst_strides, sizeof(int64_t) * (size_t)ndim);
    return ufg_reduction_collapse(ndim, merged_shape, 2, strides) < 0 ? -1 : 0;
}


/* ------------------------------------------------------------------ the array, the call */

int
ufg_reduction_start(PyObject *stream_obj, uintptr_t *stream, const ufg_backend **backend)
{
    if ((stream_obj != NULL && ufg_stream_from_object(stream_obj, stream) < 0) ||
        ufg_reduction_init() < 0 || (*backend = ufg_runtime_backend()) == NULL) {
        return -1;
    }
    ufg_release_done(*backend);
    return 0;
}

void
ufg_reduction_finish(ufg_call *c, PyArray_Descr *dtype, PyObject *default_keeper,
                     ufg_operand *out, ufg_operand *array)
{
    ufg_reduction_call_free(c);
    Py_XDECREF(dtype);
    Py_XDECREF(default_keeper);
    if (out != NULL) {
        ufg_operand_release(out);
    }
    if (array != NULL) {
        ufg_operand_release(array);
    }
}

int
ufg_reduction_check_stream(const char *prefix, uintptr_t stream, int stream_given, int device,
                           const char *argument)
{
    const ufg_backend *backend = ufg_runtime_backend();
    char stream_what[200], data_what[64];

    if (backend == NULL) {
        return -1;
    }
    ufg_join(stream_what, sizeof stream_what, prefix,
             stream_given ? ": stream=" : ": the current stream", (const char *)NULL);
    ufg_join(data_what, sizeof data_what, argument, " is on", (const char *)NULL);
    return ufg_check_stream_device(backend, stream, device, stream_what, data_what);
}

int
ufg_reduction_array(const char *prefix, const char *what, PyObject *array_obj,
                    const char *device_what, int stream_given, uintptr_t *stream,
                    PyObject **keeper, ufg_operand *array)
{
    PyObject *type_name;
    const int is_device = ufg_is_device_object(array_obj);

    *keeper = NULL;
    if (is_device <= 0) {
        if (is_device == 0 && (type_name = ufg_type_name(array_obj)) != NULL) {
            PyErr_Format(PyExc_TypeError,
                         "%s is a %U, but %s is a CUDA array; host and device arrays do not "
                         "mix", what, type_name, device_what);
            Py_DECREF(type_name);
        }
        return -1;
    }
    if (!stream_given && ufg_default_stream(&array_obj, 1, stream, keeper) < 0) {
        return -1;
    }
    memset(array, 0, sizeof(*array));
    if (ufg_operand_from_buffer(array_obj, what, array, *stream) < 0) {
        Py_CLEAR(*keeper);
        return -1;
    }
    if (ufg_reduction_check_stream(prefix, *stream, stream_given, array->device,
                                   "argument 'array'") < 0) {
        ufg_operand_release(array);
        Py_CLEAR(*keeper);
        return -1;
    }
    return 0;
}

ufg_call *
ufg_reduction_call_new(const ufg_function_descriptor *fn, PyObject *ufunc,
                       const ufg_backend *backend, uintptr_t stream, PyObject *stream_obj,
                       PyObject *default_keeper, int device, int loop_index)
{
    const int stream_given = stream_obj != NULL && stream_obj != Py_None;
    ufg_call *c = PyMem_Calloc(1, sizeof(*c));

    if (c == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    c->fn = fn;
    c->ufunc = ufunc;
    c->backend = backend;
    c->nin = 2;
    c->nout = 1;
    c->nargs = 3;
    c->casting = NPY_SAME_KIND_CASTING;
    c->order = NPY_KEEPORDER;
    c->where_kind = UFG_WHERE_ALL;
    c->stream = stream;
    c->stream_given = stream_given;
    c->stream_keeper = stream_given ? ufg_stream_owner(stream_obj) : default_keeper;
    c->device = device;
    c->loop_index = loop_index;
    return c;
}

void
ufg_reduction_call_free(ufg_call *c)
{
    if (c != NULL) {
        ufg_call_release(c);
        PyMem_Free(c);
    }
}

/* ------------------------------------------------------------------ buffers */

int
ufg_reduction_buffers_new(ufg_call *c, const ufg_operand *array, const ufg_operand *out,
                          ufg_dtype_code acc, int copy_input, int direct, int result_ndim,
                          const int64_t *result_shape, ufg_reduction_buffers *b)
{
    memset(b, 0, sizeof(*b));
    b->in = array;
    b->target = out;
    if (ufg_call_wait_for_operand(c, array) < 0 ||
        (out != NULL && ufg_call_wait_for_operand(c, out) < 0) ||
        ufg_call_note_use(c, array) < 0 || (out != NULL && ufg_call_note_use(c, out) < 0)) {
        return -1;
    }
    if (copy_input) {
        if (ufg_call_copy_data(c, array, acc, &b->copy) < 0) {
            return -1;
        }
        b->in = &b->copy;
    }
    if (!direct) {
        if ((b->result = ufg_call_empty(c, result_ndim, result_shape, acc)) == NULL) {
            return -1;
        }
        ufg_operand_from_array(b->result, &b->fresh);
        b->target = &b->fresh;
    }
    return 0;
}

PyObject *
ufg_reduction_buffers_finish(ufg_call *c, const ufg_reduction_buffers *b, PyObject *array_obj,
                             PyObject *out_obj, const ufg_operand *out)
{
    if (out_obj == NULL) {
        return ufg_wrap_like(array_obj, (PyObject *)b->result);
    }
    if (b->result != NULL && ufg_call_cast(c, &b->fresh, out, NULL) < 0) {
        return NULL;
    }
    return Py_NewRef(out_obj);
}

/* ------------------------------------------------------------------ one call, in order */

int
ufg_reduction_begin(ufg_reduction_session *s, const ufg_function_descriptor *fn,
                    PyObject *ufunc, ufg_reduction_method method, const char *const *names,
                    int count, int positional, const char *supported, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const method_names[] = {"accumulate", "reduceat"};
    PyObject *stream_obj;

    memset(s, 0, sizeof(*s));
    s->fn = fn;
    s->ufunc = ufunc;
    s->method = method;
    s->count = count;
    ufg_join(s->prefix, sizeof(s->prefix), fn->name, ".", method_names[method],
             (const char *)NULL);
    ufg_join(s->what, sizeof(s->what), s->prefix, ": argument 'array'", (const char *)NULL);
    ufg_join(s->out_what, sizeof(s->out_what), s->prefix, ": out=", (const char *)NULL);
    if (ufg_reduction_check_function(s->prefix, method_names[method], fn) < 0 ||
        ufg_reduction_parse(s->prefix, names, count, positional, supported, args, nargs,
                            kwnames, s->values) < 0) {
        return -1;
    }
    stream_obj = s->values[count - 1];
    if (ufg_reduction_start(stream_obj, &s->stream, &s->backend) < 0 ||
        ufg_reduction_array(s->prefix, s->what, s->values[0], "out=",
                            stream_obj != NULL && stream_obj != Py_None, &s->stream,
                            &s->default_keeper, &s->array) < 0) {
        return -1;
    }
    s->have_array = 1;
    return 0;
}

int
ufg_reduction_take_out(ufg_reduction_session *s, PyObject *value, int ndim,
                       const int64_t *shape)
{
    if (ufg_reduction_out_object(s->prefix, value, &s->out_obj) < 0) {
        return -1;
    }
    if (s->out_obj == NULL) {
        return 0;
    }
    s->have_out = 1;
    return ufg_reduction_out_operand(s->prefix, s->out_obj, s->out_what, &s->array, s->stream,
                                     &s->out) < 0 ||
           ufg_reduction_check_out(s->prefix, &s->array, ndim, shape, &s->out) < 0 ? -1 : 0;
}

int
ufg_reduction_pick_loop(ufg_reduction_session *s)
{
    const ufg_reduce_resolution *resolution;
    const ufg_device_loop *loop;

    resolution = ufg_reduction_resolve(s->prefix, s->fn, s->ufunc, s->dtype, &s->array,
                                       s->have_out ? &s->out : NULL, &s->scratch);
    if (resolution == NULL) {
        return -1;
    }
    if (resolution->loop_index < 0) {
        PyErr_Format(PyExc_TypeError, "%s: no device loop for %s", s->prefix,
                     ufg_dtype_name(s->array.code));
        return -1;
    }
    s->loop_index = resolution->loop_index;
    s->acc = (ufg_dtype_code)resolution->acc;
    loop = &s->fn->device_loops[s->loop_index];
    s->launcher = s->method == UFG_REDUCTION_ACCUMULATE ? loop->accumulate[s->backend->id]
                                                        : loop->reduceat[s->backend->id];
    if (s->launcher == NULL) {
        return ufg_call_missing_launcher(s->backend, s->fn->name, s->loop_index);
    }
    return ufg_operand_check_alignment(&s->array, s->what) < 0 ||
           (s->have_out && ufg_operand_check_alignment(&s->out, s->out_what) < 0) ? -1 : 0;
}

int
ufg_reduction_open_call(ufg_reduction_session *s)
{
    s->c = ufg_reduction_call_new(s->fn, s->ufunc, s->backend, s->stream,
                                  s->values[s->count - 1], s->default_keeper, s->array.device,
                                  s->loop_index);
    return s->c == NULL ? -1 : 0;
}

PyObject *
ufg_reduction_end(ufg_reduction_session *s, PyObject *result)
{
    ufg_reduction_finish(s->c, s->dtype, s->default_keeper, s->have_out ? &s->out : NULL,
                         s->have_array ? &s->array : NULL);
    return result;
}
