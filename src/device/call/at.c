/*
 * `function.at(a, indices, b=None, /, *, stream=None)` with a CUDA array: NumPy's unbuffered
 * in-place operation.  For each element that `a[indices]` selects, in NumPy's order and as
 * often as the indices repeat it, a[i] = function(a[i], b[j]) (function(a[i]) for a unary
 * function), b broadcast to a[indices]'s shape.
 *
 * As NumPy does it: the loop is the one NumPy resolves for (a's dtype, b's dtype), b taken
 * as np.asarray takes it (a Python scalar is strongly typed: 1.5 a float64), a's elements
 * converted to the loop's first input and the results back to a's dtype unsafely, one update
 * at a time (so a float32 array plus a Python float rounds to float32 after every update, as
 * NumPy's does).  NumPy's checks come in its order: the function (a gufunc, three inputs, two
 * outputs, b missing or extra), the types, then the indices and b's shape.
 *
 * `indices` are host objects, interpreted by NumPy's own indexing: for each axis k a view of
 * a's shape whose elements are their own k-th coordinate (stride 0 on every other axis) is
 * indexed with them, so NumPy selects, orders and refuses exactly as for a[indices], without
 * an array of a's size; the element offsets (sum of coordinate * stride) are copied to the
 * device.  A CUDA array of indices is refused.  b is converted to the loop's second input
 * type (a CUDA b into a temporary of a[indices]'s shape, which also keeps the values b had
 * before the call when it overlaps a, as NumPy's copy does).  Then the generated at kernel
 * applies every update on one thread, in order, when an element is selected more than once,
 * or on one thread per update when none is: NumPy's result bit for bit either way, whatever
 * the function.  Everything is queued on the call's stream; a refused call has written
 * nothing.
 */
#include "reduction.h"

#include <string.h>

#include "dtypes.h"
#include "launch.h"
#include "runtime.h"

/* What one .at holds: borrowed arguments, then what it took (released by ufg_at_end). */
typedef struct {
    const ufg_function_descriptor *fn;
    PyObject *ufunc;
    char prefix[160], what[200], b_what[200];
    PyObject *a_obj, *indices, *b_obj, *stream_obj;
    const ufg_backend *backend;
    uintptr_t stream;
    PyObject *default_keeper;
    ufg_operand a, b;
    int have_a, b_on_device;
    PyArrayObject *b_host;          /* a host scalar b as a 0-d array (np.asarray(b)) */
    ufg_dtype_code b_code;
    int loop_index;
    ufg_dtype_code in0, in1, result;
    ufg_reduce_launcher launcher;
    PyArrayObject *offsets;         /* int64 byte offsets into a, of a[indices]'s shape */
    ufg_call *c;
} ufg_at_session;

/* ------------------------------------------------------------------ arguments */

/* NumPy's refusals of the function and the argument count, in its order, then stream=, the
 * only keyword (NumPy's .at takes none). */
static int
ufg_at_parse(ufg_at_session *s, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const ufg_function_descriptor *fn = s->fn;

    if (fn->signature != NULL) {
        PyErr_Format(PyExc_TypeError, "%s.at does not support ufunc with non-trivial "
                     "signature: %s has signature %s.", fn->name, fn->name, fn->signature);
        return -1;
    }
    if (fn->nin > 2) {
        PyErr_Format(PyExc_ValueError, "%s: Only unary and binary ufuncs supported at this "
                     "time", s->prefix);
        return -1;
    }
    if (fn->nout != 1) {
        PyErr_Format(PyExc_ValueError, "%s: Only single output ufuncs supported at this time",
                     s->prefix);
        return -1;
    }
    if (nargs < 2 || nargs > 3) {
        PyErr_Format(PyExc_TypeError, "%s: at() takes %s %d arguments (%zd given)", s->prefix,
                     nargs < 2 ? "at least" : "at most", nargs < 2 ? 2 : 3, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        if (!PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name, "stream") != 0) {
            PyErr_Format(PyExc_TypeError, "%s: got an unexpected keyword argument %R; "
                         "device .at takes a, indices, b by position and stream= by keyword",
                         s->prefix, name);
            return -1;
        }
        s->stream_obj = args[nargs + i];
    }
    s->a_obj = args[0];
    s->indices = args[1];
    s->b_obj = nargs == 3 ? args[2] : NULL;
    if (fn->nin == 2 && s->b_obj == NULL) {
        PyErr_Format(PyExc_ValueError, "%s: second operand needed for ufunc", s->prefix);
        return -1;
    }
    if (fn->nin == 1 && s->b_obj != NULL) {
        PyErr_Format(PyExc_ValueError, "%s: second operand provided when ufunc is unary",
                     s->prefix);
        return -1;
    }
    return 0;
}

/* a: a writable CUDA array (a host one is a TypeError: another argument is a CUDA array, or
 * the call would not be here). */
static int
ufg_at_take_a(ufg_at_session *s)
{
    const int stream_given = s->stream_obj != NULL && s->stream_obj != Py_None;
    const int is_device = ufg_is_device_object(s->a_obj);
    PyObject *type_name;

    if (is_device <= 0) {
        if (is_device == 0 && (type_name = ufg_type_name(s->a_obj)) != NULL) {
            PyErr_Format(PyExc_TypeError, "%s is a %U, but another argument is a CUDA array; "
                         "host and device arrays do not mix (device .at updates a CUDA array "
                         "in place)", s->what, type_name);
            Py_DECREF(type_name);
        }
        return -1;
    }
    if (ufg_reduction_start(s->stream_obj, &s->stream, &s->backend) < 0) {
        return -1;
    }
    if (!stream_given && ufg_default_stream(&s->a_obj, 1, &s->stream, &s->default_keeper) < 0) {
        return -1;
    }
    memset(&s->a, 0, sizeof(s->a));
    if (ufg_operand_from_buffer(s->a_obj, s->what, &s->a, s->stream) < 0) {
        return -1;
    }
    s->have_a = 1;
    if (ufg_reduction_check_stream(s->prefix, s->stream, stream_given, s->a.device,
                                   "argument 'a'") < 0) {
        return -1;
    }
    return ufg_operand_check_writable(&s->a, s->what);
}

/* b: a CUDA array on a's device, or a host scalar taken as np.asarray takes it (a Python int
 * an int64, or uint64 past it; a float a float64); host arrays and sequences are refused, as
 * the device call refuses them. */
static int
ufg_at_take_b(ufg_at_session *s)
{
    PyObject *obj = s->b_obj, *type_name;
    int is_device, code;

    if (obj == NULL) {
        return 0;
    }
    is_device = ufg_is_device_object(obj);
    if (is_device < 0) {
        return -1;
    }
    if (is_device) {
        memset(&s->b, 0, sizeof(s->b));
        if (ufg_operand_from_buffer(obj, s->b_what, &s->b, s->stream) < 0) {
            return -1;
        }
        s->b_on_device = 1;
        s->b_code = s->b.code;
        if (s->b.device != s->a.device) {
            PyErr_Format(PyExc_ValueError, "%s is on CUDA device %d, but argument 'a' is on "
                         "CUDA device %d; all arrays of one call must be on the same GPU",
                         s->b_what, s->b.device, s->a.device);
            return -1;
        }
        return 0;
    }
    if (!PyArray_IsScalar(obj, Generic) && !PyLong_Check(obj) && !PyFloat_Check(obj) &&
        !PyComplex_Check(obj)) {
        if ((type_name = ufg_type_name(obj)) != NULL) {
            PyErr_Format(PyExc_TypeError, "%s is a %U, but argument 'a' is a CUDA array: host "
                         "and device arrays do not mix; pass a CUDA array or a Python or NumPy "
                         "scalar", s->b_what, type_name);
            Py_DECREF(type_name);
        }
        return -1;
    }
    s->b_host = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (s->b_host == NULL) {
        return -1;
    }
    code = ufg_dtype_code_of_supported(PyArray_DESCR(s->b_host));
    if (code < 0) {
        PyErr_Format(PyExc_TypeError, "%s: ufunc '%s' not supported for the input types, and "
                     "the inputs could not be safely coerced to any supported types according "
                     "to the casting rule ''safe'' (b is %S)", s->prefix, s->fn->name,
                     (PyObject *)PyArray_DESCR(s->b_host));
        return -1;
    }
    s->b_code = (ufg_dtype_code)code;
    return 0;
}

/* NumPy's resolution for (a's dtype, b's dtype) under casting='unsafe', outputs left out, as
 * NumPy's .at resolves; the call's state is opened here, since the resolution reads it. */
static int
ufg_at_resolve(ufg_at_session *s)
{
    ufg_call *c;
    const ufg_device_loop *loop;

    s->c = c = ufg_reduction_call_new(s->fn, s->ufunc, s->backend, s->stream, s->stream_obj,
                                      s->default_keeper, s->a.device, -1);
    if (c == NULL) {
        return -1;
    }
    c->nin = s->fn->nin;
    c->nout = 1;
    c->nargs = c->nin + 1;
    c->casting = NPY_UNSAFE_CASTING;
    /* Only the codes take part (strongly typed; nothing here is released with the call). */
    c->ops[0].kind = UFG_OPERAND_BUFFER;
    c->ops[0].code = s->a.code;
    c->ops[0].obj = s->a_obj;
    if (c->nin == 2) {
        c->ops[1].kind = UFG_OPERAND_SCALAR;
        c->ops[1].code = s->b_code;
        c->ops[1].obj = s->b_obj;
    }
    c->ops[c->nin].kind = UFG_OPERAND_ABSENT;
    const int resolved = ufg_call_resolve_types(c);
    for (int k = 0; k < c->nargs; k++) {
        c->ops[k].kind = UFG_OPERAND_ABSENT;
    }
    if (resolved < 0) {
        return -1;
    }
    s->loop_index = c->loop_index;
    s->in0 = c->loop_codes[0];
    s->in1 = c->loop_codes[c->nin == 2 ? 1 : 0];
    s->result = c->loop_codes[c->nin];
    loop = &s->fn->device_loops[s->loop_index];
    s->launcher = loop->at[s->backend->id];
    if (s->launcher == NULL) {
        return ufg_call_missing_launcher(s->backend, s->fn->name, s->loop_index);
    }
    return ufg_operand_check_alignment(&s->a, s->what) < 0 ||
           (s->b_on_device && ufg_operand_check_alignment(&s->b, s->b_what) < 0) ? -1 : 0;
}

/* ------------------------------------------------------------------ the indices */

/* Whether obj, or an item of a tuple obj, is a CUDA array (1), refused with a TypeError. */
static int
ufg_at_refuse_device_indices(const char *prefix, PyObject *obj)
{
    int is_device = ufg_is_device_object(obj);

    for (Py_ssize_t i = 0; is_device == 0 && PyTuple_Check(obj) && i < PyTuple_GET_SIZE(obj);
         i++) {
        is_device = ufg_is_device_object(PyTuple_GET_ITEM(obj, i));
    }
    if (is_device > 0) {
        PyErr_Format(PyExc_TypeError, "%s: indices are a CUDA array; device .at takes host "
                     "indices (integers, slices, lists, NumPy integer or boolean arrays, or a "
                     "tuple of them), which NumPy interprets before the call", prefix);
    }
    return is_device != 0 ? -1 : 0;
}

/* view[indices] as a C-contiguous int64 array (a new reference), or NULL with NumPy's error
 * after the prefix. */
static PyArrayObject *
ufg_at_select(const char *prefix, PyObject *view, PyObject *indices)
{
    PyObject *selected = PyObject_GetItem(view, indices);
    PyArrayObject *array;

    if (selected == NULL) {
        ufg_prefix_error(prefix);
        return NULL;
    }
    array = (PyArrayObject *)PyArray_FromAny(selected, PyArray_DescrFromType(NPY_INT64), 0, 0,
                                             NPY_ARRAY_CARRAY, NULL);
    Py_DECREF(selected);
    return array;
}

/* A view of `shape` whose element at coordinates (..., i_k, ...) is i_k: arange(shape[k])
 * with stride 0 on every other axis (NumPy's as_strided). */
static PyObject *
ufg_at_coordinate_view(int ndim, const int64_t *shape, int k)
{
    npy_intp dims[UFG_CALL_MAX_NDIM], strides[UFG_CALL_MAX_NDIM], n = (npy_intp)shape[k];
    PyObject *coordinates = PyArray_Arange(0.0, (double)n, 1.0, NPY_INT64), *view;

    if (coordinates == NULL) {
        return NULL;
    }
    for (int d = 0; d < ndim; d++) {
        dims[d] = (npy_intp)shape[d];
        strides[d] = d == k ? (npy_intp)sizeof(int64_t) : 0;
    }
    view = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(NPY_INT64), ndim, dims,
                                strides, PyArray_DATA((PyArrayObject *)coordinates), 0, NULL);
    if (view == NULL) {
        Py_DECREF(coordinates);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)view, coordinates) < 0) {
        Py_DECREF(view);            /* SetBaseObject stole coordinates, even failing */
        return NULL;
    }
    return view;
}

/* s->offsets: the byte offset into a of every element a[indices] selects, in a[indices]'s
 * shape and order, with NumPy's IndexError (and its other refusals) for bad indices. */
static int
ufg_at_offsets(ufg_at_session *s)
{
    const ufg_operand *a = &s->a;
    int64_t *offsets;
    npy_intp n;

    if (ufg_at_refuse_device_indices(s->prefix, s->indices) < 0) {
        return -1;
    }
    if (a->ndim == 0) {
        /* Every selected element is a's one element, at offset 0. */
        PyObject *zero = PyArray_Zeros(0, NULL, PyArray_DescrFromType(NPY_INT64), 0);
        if (zero == NULL) {
            return -1;
        }
        s->offsets = ufg_at_select(s->prefix, zero, s->indices);
        Py_DECREF(zero);
        return s->offsets == NULL ? -1 : 0;
    }
    for (int k = 0; k < a->ndim; k++) {
        PyObject *view = ufg_at_coordinate_view(a->ndim, a->shape, k);
        PyArrayObject *coordinate;
        const int64_t *values;
        if (view == NULL) {
            return -1;
        }
        coordinate = ufg_at_select(s->prefix, view, s->indices);
        Py_DECREF(view);
        if (coordinate == NULL) {
            return -1;
        }
        if (k == 0) {
            s->offsets = (PyArrayObject *)PyArray_NewLikeArray(coordinate, NPY_CORDER, NULL, 0);
            if (s->offsets == NULL) {
                Py_DECREF(coordinate);
                return -1;
            }
            memset(PyArray_DATA(s->offsets), 0, (size_t)PyArray_NBYTES(s->offsets));
        }
        offsets = (int64_t *)PyArray_DATA(s->offsets);
        values = (const int64_t *)PyArray_DATA(coordinate);
        n = PyArray_SIZE(coordinate);
        for (npy_intp i = 0; i < n; i++) {
            offsets[i] += values[i] * a->strides[k];
        }
        Py_DECREF(coordinate);
    }
    return 0;
}

/* b broadcasts to a[indices]'s shape (NumPy's one-way rule and its ValueError). */
static int
ufg_at_check_b_shape(const ufg_at_session *s)
{
    const int ndim = PyArray_NDIM(s->offsets);
    int64_t shape[UFG_CALL_MAX_NDIM];

    if (!s->b_on_device) {
        return 0;                   /* a scalar */
    }
    for (int d = 0; d < ndim; d++) {
        shape[d] = PyArray_DIM(s->offsets, d);
    }
    if (!ufg_broadcasts_to(s->b.ndim, s->b.shape, ndim, shape)) {
        PyObject *b_shape = ufg_shape_repr(s->b.ndim, s->b.shape);
        PyObject *selected = ufg_shape_repr(ndim, shape);
        if (b_shape != NULL && selected != NULL) {
            PyErr_Format(PyExc_ValueError, "%s: array is not broadcastable to correct shape "
                         "(b of shape %U, a[indices] of shape %U)", s->prefix, b_shape,
                         selected);
        }
        Py_XDECREF(b_shape);
        Py_XDECREF(selected);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the run */

/* b in the loop's second input type: n contiguous elements of a[indices]'s shape (*step the
 * bytes between them), or the scalar's bytes in params->at_value. */
static int
ufg_at_second_input(ufg_at_session *s, ufg_reduce_params *p)
{
    ufg_call *c = s->c;

    if (s->fn->nin == 1) {
        return 0;
    }
    if (!s->b_on_device) {
        PyArrayObject *cast = (PyArrayObject *)PyArray_CastToType(
            s->b_host, (PyArray_Descr *)Py_NewRef(ufg_call_descr(s->in1)), 0);
        if (cast == NULL) {
            return -1;
        }
        memcpy(p->at_value.bytes, PyArray_DATA(cast), (size_t)ufg_dtype_itemsize(s->in1));
        Py_DECREF(cast);
        p->at_by_value = 1;
        return 0;
    }
    {
        int64_t shape[UFG_CALL_MAX_NDIM];
        const int ndim = PyArray_NDIM(s->offsets);
        ufg_DeviceArrayObject *copy;
        ufg_operand view;
        for (int d = 0; d < ndim; d++) {
            shape[d] = PyArray_DIM(s->offsets, d);
        }
        copy = ufg_call_empty(c, ndim, shape, s->in1);
        if (copy == NULL) {
            return -1;
        }
        ufg_operand_from_array(copy, &view);
        if (ufg_call_cast(c, &s->b, &view, NULL) < 0) {
            return -1;
        }
        p->in = copy->ptr;
        p->in_reduce_strides[0] = ufg_dtype_itemsize(s->in1);
        return 0;
    }
}

/* Whether the n offsets are all distinct, `itemsize` bytes apart at least (elements of a
 * view whose strides are smaller than its items overlap): each element is then updated once,
 * and the updates may run in any order, on as many threads (for any function: NumPy's result
 * whatever the order).  Monotonic offsets (slices, masks, sorted indices) are checked as they
 * are; others are sorted, a copy, on the host: O(n log n) on the CPU against n dependent
 * updates on one GPU thread.  -1 with an exception. */
static int
ufg_at_offsets_distinct(PyArrayObject *offsets_array, int64_t itemsize)
{
    const int64_t *offsets = (const int64_t *)PyArray_DATA(offsets_array);
    const npy_intp n = PyArray_SIZE(offsets_array);
    PyArrayObject *sorted;
    const int64_t *values;
    int increasing = 1, decreasing = 1, distinct = 1;

    for (npy_intp i = 1; i < n && (increasing || decreasing); i++) {
        increasing &= offsets[i] - offsets[i - 1] >= itemsize;
        decreasing &= offsets[i - 1] - offsets[i] >= itemsize;
    }
    if (increasing || decreasing) {
        return 1;
    }
    sorted = (PyArrayObject *)PyArray_NewCopy(offsets_array, NPY_CORDER);
    if (sorted == NULL) {
        return -1;
    }
    if (PyArray_Sort(sorted, -1, NPY_QUICKSORT) < 0) {
        Py_DECREF(sorted);
        return -1;
    }
    values = (const int64_t *)PyArray_DATA(sorted);
    for (npy_intp i = 1; i < n && distinct; i++) {
        distinct = values[i] - values[i - 1] >= itemsize;
    }
    Py_DECREF(sorted);
    return distinct;
}

/* Everything checked: the producers waited for, the offsets and b on the device, the kernel. */
static int
ufg_at_run(ufg_at_session *s)
{
    ufg_call *c = s->c;
    ufg_launch launch = {NULL, NULL, NULL, NULL};
    ufg_reduce_params p;
    const int64_t n = PyArray_SIZE(s->offsets);
    ufg_DeviceArrayObject *offsets;
    int error, distinct;

    if (ufg_call_wait_for_operand(c, &s->a) < 0 ||
        (s->b_on_device && ufg_call_wait_for_operand(c, &s->b) < 0) ||
        ufg_call_note_use(c, &s->a) < 0 ||
        (s->b_on_device && ufg_call_note_use(c, &s->b) < 0)) {
        return -1;
    }
    if (n == 0) {
        return 0;
    }
    memset(&p, 0, sizeof(p));
    if ((distinct = ufg_at_offsets_distinct(s->offsets, ufg_dtype_itemsize(s->a.code))) < 0) {
        return -1;
    }
    if (distinct) {
        if (ufg_launch_grid(c->backend, c->device, n, &p.grid) < 0) {
            return -1;
        }
        p.block = UFG_DEVICE_BLOCK;
    }
    else {
        p.grid = 1;                 /* one thread: repeated offsets are updated in order */
        p.block = 1;
    }
    if (ufg_at_second_input(s, &p) < 0 ||
        (offsets = ufg_call_empty(c, 1, &n, UFG_DT_INT64)) == NULL) {
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    error = c->backend->memcpy(offsets->ptr, PyArray_DATA(s->offsets),
                               sizeof(int64_t) * (size_t)n, UFG_MEMCPY_HOST_TO_DEVICE,
                               c->device, (void *)c->stream);
    Py_END_ALLOW_THREADS
    if (error) {
        ufg_device_error_int(c->backend, error, "copying .at's element offsets to the device");
        return -1;
    }
    p.n_out = 1;
    p.n_reduce = n;
    p.out = s->a.ptr;
    p.segments = (const int64_t *)offsets->ptr;
    p.n_segments = n;
    p.at_load_pair = (int32_t)UFG_CAST_PAIR(s->a.code, s->in0);
    p.at_store_pair = (int32_t)UFG_CAST_PAIR(s->result, s->a.code);
    p.n_chunks = 1;
    launch.reduce = s->launcher;
    launch.reduce_params = &p;
    return ufg_launch_run(c->backend, &launch, c->device, c->stream, "an at kernel launch");
}

/* ------------------------------------------------------------------ the entry point */

static PyObject *
ufg_at_end(ufg_at_session *s, PyObject *result)
{
    ufg_reduction_call_free(s->c);
    Py_XDECREF(s->default_keeper);
    Py_XDECREF(s->b_host);
    Py_XDECREF(s->offsets);
    if (s->b_on_device) {
        ufg_operand_release(&s->b);
    }
    if (s->have_a) {
        ufg_operand_release(&s->a);
    }
    return result;
}

PyObject *
ufg_device_at(PyObject *function, const ufg_function_descriptor *fn, PyObject *ufunc,
              PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ufg_at_session s;

    (void)function;
    memset(&s, 0, sizeof(s));
    s.fn = fn;
    s.ufunc = ufunc;
    ufg_join(s.prefix, sizeof(s.prefix), fn->name, ".at", (const char *)NULL);
    ufg_join(s.what, sizeof(s.what), s.prefix, ": argument 'a'", (const char *)NULL);
    ufg_join(s.b_what, sizeof(s.b_what), s.prefix, ": argument 'b'", (const char *)NULL);
    /* In NumPy's order: the function and the arguments, the types, the indices, b's shape. */
    if (ufg_at_parse(&s, args, nargs, kwnames) < 0 || ufg_at_take_a(&s) < 0 ||
        ufg_at_take_b(&s) < 0 || ufg_at_resolve(&s) < 0 || ufg_at_offsets(&s) < 0 ||
        ufg_at_check_b_shape(&s) < 0) {
        return ufg_at_end(&s, NULL);
    }
    /* Everything is checked: from here on the call runs. */
    if (ufg_at_run(&s) < 0) {
        return ufg_at_end(&s, NULL);
    }
    return ufg_at_end(&s, Py_NewRef(Py_None));
}
