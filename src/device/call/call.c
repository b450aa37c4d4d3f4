/*
 * A call of a generated function with CUDA arguments, top to bottom.  Every stage is a file
 * of this folder (see call.h); every check runs before the first allocation or launch, so a
 * refused call has written nothing.  The call is asynchronous, like CuPy's: the results are
 * queued on the call's stream.
 */
#include "call.h"

#include "keepalive.h"

#include <stdarg.h>
#include <string.h>

#include "runtime.h"
#include "stream_device.h"

char *
ufg_join(char *buffer, size_t size, ...)
{
    va_list parts;
    const char *part;
    size_t used = 0;

    va_start(parts, size);
    while ((part = va_arg(parts, const char *)) != NULL) {
        const size_t length = strlen(part);
        const size_t room = size - 1 - used;
        const size_t copied = length < room ? length : room;

        memcpy(buffer + used, part, copied);
        used += copied;
    }
    va_end(parts);
    buffer[used] = '\0';
    return buffer;
}

const char *
ufg_call_what(const ufg_call *c, int k, char *buffer, size_t size)
{
    return ufg_join(buffer, size, c->fn->name, k < c->nin ? ": argument '" : ": output '",
                    c->fn->arg_names[k], "'", (const char *)NULL);
}

void
ufg_prefix_error(const char *prefix)
{
    PyObject *type, *value, *traceback;

    PyTypeObject *builtin;

    if (ufg_numpy_error_is_ufunc_type_error()) {
        return;
    }
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    /* NumPy's own exception classes take constructor arguments of their own: raise the
     * built-in class they derive from, which is what callers catch. */
    builtin = (PyTypeObject *)type;
    while (builtin->tp_flags & Py_TPFLAGS_HEAPTYPE && builtin->tp_base != NULL) {
        builtin = builtin->tp_base;
    }
    PyErr_Format((PyObject *)builtin, "%s: %S", prefix, value);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
}

void
ufg_call_release(ufg_call *c)
{
    for (int k = 0; k < c->nargs; k++) {
        if (c->ops[k].kind == UFG_OPERAND_BUFFER) {
            ufg_operand_release(&c->ops[k]);
        }
    }
    if (c->where_kind == UFG_WHERE_MASK && c->mask.kind == UFG_OPERAND_BUFFER) {
        ufg_operand_release(&c->mask);
    }
    for (int i = 0; i < c->nowned; i++) {
        Py_DECREF(c->owned[i]);
    }
    c->nowned = 0;
    Py_CLEAR(c->dtype);
}

/* The fields every stage may read before it fills its own (ops[] are filled by operands.c). */
static int
ufg_call_init(ufg_call *c, const ufg_function_descriptor *fn, PyObject *ufunc)
{
    c->fn = fn;
    c->ufunc = ufunc;
    c->nin = fn->nin;
    c->nout = fn->nout;
    c->nargs = fn->nin + fn->nout;
    c->dtype = NULL;
    c->signature = NULL;
    c->axes = c->axis = c->where = NULL;
    c->keepdims_given = c->keepdims_set = 0;
    c->casting = NPY_SAME_KIND_CASTING;
    c->fortran_results = 0;
    c->order = NPY_KEEPORDER;
    c->where_kind = UFG_WHERE_ALL;
    c->where_without_out = 0;
    c->outer = 0;
    c->stream = 0;
    c->stream_given = 0;
    c->stream_keeper = NULL;
    c->nowned = 0;
    c->mask.kind = UFG_OPERAND_ABSENT;
    c->mask.owner = NULL;
    for (int k = 0; k < c->nargs; k++) {
        c->ops[k].kind = UFG_OPERAND_ABSENT;
        c->ops[k].owner = NULL;
    }
    c->backend = ufg_runtime_backend();
    return c->backend == NULL ? -1 : 0;
}

/* where= as a bool mask on the call's device. */
static int
ufg_call_classify_mask(ufg_call *c)
{
    int is_device;

    if (c->where_kind != UFG_WHERE_MASK) {
        return 0;
    }
    is_device = ufg_is_device_object(c->where);
    if (is_device <= 0) {
        PyObject *type_name = is_device == 0 ? ufg_type_name(c->where) : NULL;
        if (type_name != NULL) {
            PyErr_Format(PyExc_TypeError, "%s: where= is a host %S; with CUDA arrays it must "
                         "be True, False or a CUDA bool array (nothing is copied to the device "
                         "behind your back)", c->fn->name, type_name);
            Py_DECREF(type_name);
        }
        return -1;
    }
    if (ufg_operand_from_buffer(c->where, "where=", &c->mask, c->stream) < 0) {
        return -1;
    }
    if (c->mask.code != UFG_DT_BOOL) {
        PyErr_Format(PyExc_TypeError, "%s: where= must have dtype bool, not %S", c->fn->name,
                     (PyObject *)ufg_call_descr(c->mask.code));
        return -1;
    }
    if (c->mask.device != c->device) {
        PyErr_Format(PyExc_ValueError, "%s: where= is on CUDA device %d, but the call's data is "
                     "on device %d", c->fn->name, c->mask.device, c->device);
        return -1;
    }
    return 0;
}

static int
ufg_call_check_alignments(ufg_call *c)
{
    char what[160];

    for (int k = 0; k < c->nargs; k++) {
        if (c->ops[k].kind == UFG_OPERAND_BUFFER &&
            ufg_operand_check_alignment(&c->ops[k], ufg_call_what(c, k, what, sizeof what)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The DeviceArray an operand is, or NULL (a foreign array, a scalar, absent). */
static ufg_DeviceArrayObject *
ufg_operand_device_array(const ufg_operand *op)
{
    return op->kind == UFG_OPERAND_BUFFER && ufg_DeviceArray_Check(op->obj)
        ? (ufg_DeviceArrayObject *)op->obj : NULL;
}

int
ufg_call_wait_for_operand(ufg_call *c, const ufg_operand *op)
{
    ufg_DeviceArrayObject *array = ufg_operand_device_array(op);

    return array != NULL ? ufg_device_array_wait_for(c->backend, array, c->stream)
                         : ufg_wait_for_producer(c->backend, op, c->stream);
}

int
ufg_call_note_use(ufg_call *c, const ufg_operand *op)
{
    ufg_DeviceArrayObject *array = ufg_operand_device_array(op);

    if (array != NULL) {
        ufg_device_array_used_on(array, c->stream, c->stream_keeper);
        return 0;
    }
    /* A DLPack operand's import (dropped with the call) runs the producer's deleter only
     * once the call's stream has passed the work. */
    if (op->kind == UFG_OPERAND_BUFFER && op->owner != NULL &&
        ufg_DeviceArray_Check(op->owner)) {
        ufg_device_array_used_on((ufg_DeviceArrayObject *)op->owner, c->stream,
                                 c->stream_keeper);
    }
    /* A foreign array on a stream its library does not know about (stream= given, or a
     * `with device.Stream():` block's) stays alive until the work has passed; on the
     * library's own stream, its allocator's reuse is ordered after the work already. */
    if (op->kind == UFG_OPERAND_BUFFER &&
        (c->stream_given || ufg_stream_is_ufuncgens(c->stream_keeper))) {
        return ufg_keep_until_done(c->backend, op->obj, c->stream, c->device);
    }
    return 0;
}

static int
ufg_call_wait_for_producers(ufg_call *c)
{
    for (int k = 0; k < c->nargs; k++) {
        if (ufg_call_wait_for_operand(c, &c->ops[k]) < 0) {
            return -1;
        }
    }
    return c->where_kind == UFG_WHERE_MASK ? ufg_call_wait_for_operand(c, &c->mask) : 0;
}

static int
ufg_call_note_uses(ufg_call *c)
{
    for (int k = 0; k < c->nargs; k++) {
        if (ufg_call_note_use(c, &c->ops[k]) < 0) {
            return -1;
        }
    }
    return c->where_kind == UFG_WHERE_MASK ? ufg_call_note_use(c, &c->mask) : 0;
}

int
ufg_call_default_stream(ufg_call *c, PyObject *const *objs, int n)
{
    PyObject *keeper;

    if (c->stream_given) {
        return 0;
    }
    if (ufg_default_stream(objs, n, &c->stream, &keeper) < 0) {
        return -1;
    }
    if (keeper != NULL) {
        if (c->nowned >= (int)(sizeof c->owned / sizeof c->owned[0])) {
            Py_DECREF(keeper);
            PyErr_SetString(PyExc_RuntimeError, "ufuncgen: too many temporaries in one call");
            return -1;
        }
        c->owned[c->nowned++] = keeper;
        c->stream_keeper = keeper;
    }
    return 0;
}

/* The call's stream is one of its arrays' device (stream_device.h). */
static int
ufg_call_check_stream(ufg_call *c)
{
    char what[160];

    ufg_join(what, sizeof what, c->fn->name,
             c->stream_given ? ": stream=" : ": the current stream", (const char *)NULL);
    return ufg_check_stream_device(c->backend, c->stream, c->device, what,
                                   "the call's arrays are on");
}

static int
ufg_call_check(ufg_call *c, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *outs[UFG_CALL_MAX_OPERANDS], *objs[2 * UFG_CALL_MAX_OPERANDS];

    if (ufg_call_parse_keywords(c, args, nargs, kwnames, outs) < 0) {
        return -1;
    }
    for (int k = 0; k < c->nargs; k++) {
        objs[k] = k < c->nin ? args[k] : outs[k - c->nin];
    }
    if (ufg_call_default_stream(c, objs, c->nargs) < 0 ||
        ufg_call_classify_operands(c, args, outs) < 0 ||
        ufg_call_check_stream(c) < 0 ||
        ufg_call_classify_mask(c) < 0 ||
        ufg_call_resolve_types(c) < 0) {
        return -1;
    }
    if (c->where_without_out &&
        PyErr_WarnFormat(PyExc_UserWarning, 1, "%s: 'where' used without 'out', expect "
                         "uninitialized memory in output. If this is intentional, use out=None.",
                         c->fn->name) < 0) {
        return -1;
    }
    if ((c->fn->signature == NULL ? ufg_call_broadcast(c) : ufg_call_core_dims(c)) < 0) {
        return -1;
    }
    return ufg_call_check_alignments(c);
}

/* A call, or with `outer` the outer product: input 0 gets one size-1 axis per axis of input
 * 1 after its own (ufg_call_broadcast), as NumPy's ufunc.outer computes
 * ufunc(A[(..., None, ...)], B). */
static PyObject *
ufg_device_call_run(const ufg_function_descriptor *fn, PyObject *ufunc, int outer,
                    PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ufg_call c;
    PyObject *result = NULL;

    if (ufg_call_init(&c, fn, ufunc) < 0) {
        return NULL;
    }
    c.outer = outer;
    ufg_release_done(c.backend);
    /* Everything is checked before anything is queued: from the producers' wait on, the
     * call runs. */
    if (ufg_call_check(&c, args, nargs, kwnames) == 0 && ufg_call_wait_for_producers(&c) == 0) {
        result = ufg_call_run(&c);
        if (result != NULL || !PyErr_ExceptionMatches(ufg_DeviceError)) {
            /* After any error but a device error (an allocation that failed), work already
             * queued may still use the arrays. */
            if (ufg_call_note_uses(&c) < 0) {
                Py_CLEAR(result);
            }
        }
        else {
            /* A device error may be an earlier one reported now (the simulator's report of
             * a misuse comes at the next launch, after it queued): the work queued may
             * run, so its arrays are noted as used, keeping the error.  After CUDA's sticky
             * errors nothing runs, and noting them may fail, harmlessly. */
            PyObject *type, *value, *traceback;
            PyErr_Fetch(&type, &value, &traceback);
            if (ufg_call_note_uses(&c) < 0) {
                PyErr_Clear();
            }
            PyErr_Restore(type, value, traceback);
        }
    }
    ufg_call_release(&c);
    return result;
}

PyObject *
ufg_device_call(PyObject *function, const ufg_function_descriptor *fn, PyObject *ufunc,
                PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    (void)function;     /* the descriptor says all the call needs to know of it */
    return ufg_device_call_run(fn, ufunc, 0, args, nargs, kwnames);
}

/* An outer argument as NumPy's outer takes it: through np.asarray, so a Python scalar is
 * strongly typed (2.5 a float64, 3 an int64: a NumPy scalar, which the call passes by value),
 * and one NumPy can only hold as an object is refused.  A new reference. */
static PyObject *
ufg_outer_argument(const ufg_function_descriptor *fn, PyObject *obj)
{
    PyObject *array, *scalar;

    if (!PyLong_Check(obj) && !PyFloat_Check(obj) && !PyComplex_Check(obj)) {
        return Py_NewRef(obj);      /* bool is an int; device arrays and NumPy scalars stay */
    }
    array = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (array == NULL) {
        return NULL;
    }
    if (PyArray_TYPE((PyArrayObject *)array) == NPY_OBJECT) {
        Py_DECREF(array);
        PyErr_Format(PyExc_TypeError, "%s.outer: ufunc '%s' not supported for the input types, "
                     "and the inputs could not be safely coerced to any supported types "
                     "according to the casting rule ''safe''", fn->name, fn->name);
        return NULL;
    }
    scalar = PyArray_Return((PyArrayObject *)array);       /* steals the array */
    return scalar;
}

/* NumPy's refusals, in its order, then the call. */
static PyObject *
ufg_device_outer(PyObject *function, const ufg_function_descriptor *fn, PyObject *ufunc,
                 PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *small[16], **converted = small, *result = NULL;
    const Py_ssize_t total = nargs + (kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0);

    (void)function;
    if (fn->signature != NULL) {
        PyErr_Format(PyExc_TypeError, "%s.outer: method outer is not allowed in ufunc with "
                     "non-trivial signature", fn->name);
        return NULL;
    }
    if (fn->nin != 2) {
        PyErr_Format(PyExc_ValueError, "%s.outer: outer product only supported for binary "
                     "functions", fn->name);
        return NULL;
    }
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s.outer: exactly two arguments expected", fn->name);
        return NULL;
    }
    if (total > 16 && (converted = PyMem_Malloc(sizeof(PyObject *) * (size_t)total)) == NULL) {
        return PyErr_NoMemory();
    }
    memcpy(converted, args, sizeof(PyObject *) * (size_t)total);
    converted[0] = converted[1] = NULL;
    if ((converted[0] = ufg_outer_argument(fn, args[0])) != NULL &&
        (converted[1] = ufg_outer_argument(fn, args[1])) != NULL) {
        result = ufg_device_call_run(fn, ufunc, 1, converted, nargs, kwnames);
    }
    Py_XDECREF(converted[0]);
    Py_XDECREF(converted[1]);
    if (converted != small) {
        PyMem_Free(converted);
    }
    return result;
}

/* The table ufuncgen._core reaches the device call through (ufuncgen/device_call.h). */
static const ufg_device_call_api ufg_call_api = {
    UFG_DEVICE_CALL_VERSION, ufg_device_call, ufg_device_reduce, ufg_device_outer,
    ufg_device_accumulate, ufg_device_reduceat, ufg_device_at,
};

int
ufg_call_api_register(PyObject *module)
{
    PyObject *capsule = PyCapsule_New((void *)&ufg_call_api, UFG_DEVICE_CALL_CAPSULE, NULL);

    if (capsule == NULL) {
        return -1;
    }
    int status = PyModule_AddObjectRef(module, "_call_api", capsule);

    Py_DECREF(capsule);
    return status;
}
