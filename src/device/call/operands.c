/*
 * Operands: every argument of a device call as a buffer (ufuncgen's DeviceArray, recognised by
 * type; anything with __cuda_array_interface__ v3; a DLPack producer on a CUDA device) or a
 * scalar passed by value.  Anything else is refused with a message that names the argument
 * and says how to move it: nothing is copied between host and device behind the caller's back.
 */
#include "call.h"
#include "dtypes.h"

#include <string.h>

#include "dlpack_import.h"
#include "runtime.h"
#include "ufuncgen/device_probe.h"

static PyObject *ufg_cai_name, *ufg_dlpack_name, *ufg_dlpack_device_name, *ufg_module_name;

static int
ufg_operands_intern(void)
{
    if (ufg_cai_name != NULL) {
        return 0;
    }
    if (ufg_cai_keys_ready() < 0) {
        return -1;
    }
    ufg_module_name = PyUnicode_InternFromString("__module__");
    ufg_dlpack_name = PyUnicode_InternFromString("__dlpack__");
    ufg_dlpack_device_name = PyUnicode_InternFromString("__dlpack_device__");
    ufg_cai_name = PyUnicode_InternFromString("__cuda_array_interface__");
    return ufg_cai_name && ufg_dlpack_name && ufg_dlpack_device_name && ufg_module_name
        ? 0 : -1;
}

/* cai[key] (borrowed), or NULL when absent. */
static PyObject *
ufg_cai_get(PyObject *cai, ufg_cai_key key)
{
    return PyDict_GetItem(cai, ufg_cai_key_str(key));
}

/* How messages name an object's type, as type.__module__ and __name__ do ("numpy.ndarray",
 * "float"), written into a buffer: it runs on every CUDA array interface read, and a str made
 * and dropped per call there was seen to keep memory growing. */
static void
ufg_type_name_into(PyObject *obj, char *buffer, size_t size)
{
    PyTypeObject *type = Py_TYPE(obj);
    PyObject *module = type->tp_dict == NULL || ufg_operands_intern() < 0
        ? NULL : PyDict_GetItem(type->tp_dict, ufg_module_name);      /* borrowed */
    const char *module_name = module != NULL && PyUnicode_Check(module)
        ? PyUnicode_AsUTF8(module) : NULL;

    PyErr_Clear();
    if (module_name == NULL) {
        /* A static type: tp_name is "module.Name", or just "Name" for a builtin. */
        ufg_join(buffer, size, type->tp_name, (const char *)NULL);
    }
    else if (strcmp(module_name, "builtins") == 0) {
        ufg_join(buffer, size, _PyType_Name(type), (const char *)NULL);
    }
    else {
        ufg_join(buffer, size, module_name, ".", _PyType_Name(type), (const char *)NULL);
    }
}

const char *
ufg_describe(PyObject *obj, const char *what, char *buffer, size_t size)
{
    size_t used;

    ufg_join(buffer, size, what, " (", (const char *)NULL);
    used = strlen(buffer);
    ufg_type_name_into(obj, buffer + used, size - used);
    used = strlen(buffer);
    ufg_join(buffer + used, size - used, ")", (const char *)NULL);
    return buffer;
}

PyObject *
ufg_module_attribute(const char *module, const char *name)
{
    PyObject *imported = PyImport_ImportModule(module), *attribute;

    if (imported == NULL) {
        return NULL;
    }
    attribute = PyObject_GetAttrString(imported, name);
    Py_DECREF(imported);
    return attribute;
}

PyObject *
ufg_type_name(PyObject *obj)
{
    char name[256];

    ufg_type_name_into(obj, name, sizeof name);
    return PyUnicode_FromString(name);
}

static int
ufg_unsupported_dtype(PyArray_Descr *descr, const char *what)
{
    PyErr_Format(PyExc_TypeError, "%s has dtype %S, which device kernels do not support "
                 "(supported: %s)", what, (PyObject *)descr, UFG_ELEMENT_TYPE_NAMES);
    return -1;
}

/* ufuncgen._core's probe (ufuncgen/device_probe.h), fetched once: the dispatcher and the
 * device call must agree on what a CUDA buffer is, or an argument the dispatcher took for host
 * memory (a PyTorch CPU tensor) is read here as a broken device array. */
static const ufg_device_probe_api *
ufg_device_probe(void)
{
    static const ufg_device_probe_api *probe = NULL;
    PyObject *core, *capsule;

    if (probe != NULL) {
        return probe;
    }
    /* Imported by name: PyCapsule_Import only reads attributes of submodules imported
     * already, and a to_device() may come before anything imported ufuncgen._core. */
    core = PyImport_ImportModule("ufuncgen._core");
    capsule = core == NULL ? NULL : PyObject_GetAttrString(core, "_device_probe");
    Py_XDECREF(core);
    if (capsule == NULL) {
        return NULL;
    }
    probe = PyCapsule_GetPointer(capsule, UFG_DEVICE_PROBE_CAPSULE);
    Py_DECREF(capsule);     /* the module keeps it, and the table is static */
    if (probe != NULL && probe->version != UFG_DEVICE_PROBE_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "ufuncgen._core and ufuncgen._device come from different builds "
                     "(device probe version %d, expected %d); reinstall ufuncgen",
                     probe->version, UFG_DEVICE_PROBE_VERSION);
        probe = NULL;
    }
    return probe;
}

int
ufg_is_device_object(PyObject *obj)
{
    const ufg_device_probe_api *probe;

    if (ufg_DeviceArray_Check(obj)) {
        return 1;
    }
    probe = ufg_device_probe();
    return probe == NULL ? -1 : probe->is_device_buffer(obj);
}

void
ufg_operand_from_array(ufg_DeviceArrayObject *array, ufg_operand *op)
{
    op->kind = UFG_OPERAND_BUFFER;
    op->obj = (PyObject *)array;
    op->ptr = array->ptr;
    op->ndim = array->ndim;
    memcpy(op->shape, array->shape, sizeof(int64_t) * (size_t)array->ndim);
    memcpy(op->strides, array->strides, sizeof(int64_t) * (size_t)array->ndim);
    op->code = array->code;
    op->device = array->device;
    op->readonly = array->readonly;
    op->has_producer = 0;
    op->producer = 0;
    op->owner = NULL;
    op->weak = 0;
}

void
ufg_operand_release(ufg_operand *op)
{
    Py_CLEAR(op->owner);
}

int64_t
ufg_operand_size(const ufg_operand *op)
{
    int64_t n = 1;

    for (int d = 0; d < op->ndim; d++) {
        n *= op->shape[d];
    }
    return n;
}

/* ------------------------------------------------------------------ __cuda_array_interface__ */

/* A tuple of ints (not bools) into out[], at most UFG_CALL_MAX_NDIM; -1 with ValueError. */
static int
ufg_cai_int_tuple(PyObject *value, const char *where, const char *key, int64_t *out, int *len)
{
    Py_ssize_t n;

    if (!PyTuple_Check(value)) {
        goto bad;
    }
    n = PyTuple_GET_SIZE(value);
    if (n > UFG_CALL_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s['%s'] has %zd entries; device arrays have at most "
                     "%d dimensions", where, key, n, UFG_CALL_MAX_NDIM);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(value, i);
        long long v;
        if (!PyLong_Check(item) || PyBool_Check(item)) {
            goto bad;
        }
        v = PyLong_AsLongLong(item);
        if (v == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            goto bad;
        }
        out[i] = v;
    }
    *len = (int)n;
    return 0;
bad:
    PyErr_Format(PyExc_ValueError, "%s['%s'] must be a tuple of ints, not %R", where, key, value);
    return -1;
}

/* The dict's typestr as a supported native dtype code. */
static int
ufg_cai_dtype(PyObject *typestr, const char *where, const char *what, ufg_dtype_code *code)
{
    PyArray_Descr *descr;
    int found;

    /* A string, as the interface says: np.dtype would also take None (float64), a type or a
     * dtype, and read the buffer as what it is not. */
    if (!PyUnicode_Check(typestr)) {
        PyErr_Format(PyExc_ValueError, "%s['typestr'] %R is not a valid type string: a str "
                     "such as '<f4' is expected, not %s", where, typestr, Py_TYPE(typestr)->tp_name);
        return -1;
    }
    /* np.dtype(typestr): the C converter keeps memory alive on every invalid string. */
    descr = (PyArray_Descr *)PyObject_CallOneArg((PyObject *)&PyArrayDescr_Type, typestr);
    if (descr == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError)) {
            return -1;
        }
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s['typestr'] %R is not a valid type string", where,
                     typestr);
        return -1;
    }
    if (!PyArray_ISNBO(descr->byteorder)) {
        /* A dtype the device cannot compute in, like any other: TypeError. */
        PyErr_Format(PyExc_TypeError, "%s['typestr'] %R is not in native byte order", where,
                     typestr);
        Py_DECREF(descr);
        return -1;
    }
    found = ufg_dtype_code_of_supported(descr);
    if (found < 0) {
        ufg_unsupported_dtype(descr, what);
        Py_DECREF(descr);
        return -1;
    }
    Py_DECREF(descr);
    *code = (ufg_dtype_code)found;
    return 0;
}

static int
ufg_cai_data(PyObject *data, const char *where, ufg_operand *op)
{
    unsigned long long ptr;

    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2 ||
        !PyLong_Check(PyTuple_GET_ITEM(data, 0)) || !PyBool_Check(PyTuple_GET_ITEM(data, 1))) {
        PyErr_Format(PyExc_ValueError, "%s['data'] must be a (pointer: int, read_only: bool) "
                     "tuple, not %R", where, data);
        return -1;
    }
    ptr = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(data, 0));
    if (ptr == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s['data'] has a pointer out of range: %R", where, data);
        return -1;
    }
    op->ptr = (char *)(uintptr_t)ptr;
    op->readonly = PyTuple_GET_ITEM(data, 1) == Py_True;
    return 0;
}

static int
ufg_cai_stream(PyObject *cai, const char *where, ufg_operand *op)
{
    PyObject *stream = ufg_cai_get(cai, UFG_CAI_STREAM);     /* borrowed */

    op->has_producer = 0;
    if (stream == NULL || stream == Py_None) {
        return 0;
    }
    if (!PyLong_Check(stream) || PyBool_Check(stream)) {
        PyErr_Format(PyExc_ValueError, "%s['stream'] must be an int or None, not %R", where,
                     stream);
        return -1;
    }
    op->producer = (uintptr_t)PyLong_AsUnsignedLongLong(stream);
    if (op->producer == (uintptr_t)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "%s['stream'] is not a valid handle: %R", where, stream);
        return -1;
    }
    if (op->producer == 0) {
        PyErr_Format(PyExc_ValueError, "%s['stream'] is 0, which the protocol disallows "
                     "(1 is the legacy default stream, 2 the per-thread one)", where);
        return -1;
    }
    op->has_producer = 1;
    return 0;
}

/* The versions of the interface published so far: 0 to 3 (3 added 'stream'). */
#define UFG_CAI_MAX_VERSION 3

static int
ufg_cai_version(PyObject *version, const char *where)
{
    long value;

    if (!PyLong_Check(version) || PyBool_Check(version)) {
        PyErr_Format(PyExc_ValueError, "%s['version'] must be an int, not %R", where, version);
        return -1;
    }
    value = PyLong_AsLong(version);
    if (value == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        value = -1;
    }
    if (value < 0 || value > UFG_CAI_MAX_VERSION) {
        PyErr_Format(PyExc_ValueError, "%s['version'] is %R; the CUDA array interface defines "
                     "versions 0 to %d", where, version, UFG_CAI_MAX_VERSION);
        return -1;
    }
    return 0;
}

static int
ufg_cai_checked_fields(PyObject *cai, const char *where, const char *what, ufg_operand *op)
{
    static const ufg_cai_key required[] = {
        UFG_CAI_SHAPE, UFG_CAI_TYPESTR, UFG_CAI_DATA, UFG_CAI_VERSION};
    PyObject *strides, *mask;
    int nstrides;

    char missing[64] = "";

    for (size_t i = 0; i < 4; i++) {
        if (ufg_cai_get(cai, required[i]) == NULL) {
            const size_t used = strlen(missing);
            ufg_join(missing + used, sizeof missing - used, used ? ", '" : "'",
                     ufg_cai_key_names[required[i]], "'", (const char *)NULL);
        }
    }
    if (missing[0] != '\0') {
        PyErr_Format(PyExc_ValueError, "%s lacks the required key(s) %s", where, missing);
        return -1;
    }
    if (ufg_cai_version(ufg_cai_get(cai, UFG_CAI_VERSION), where) < 0) {
        return -1;
    }
    if (ufg_cai_int_tuple(ufg_cai_get(cai, UFG_CAI_SHAPE), where, "shape", op->shape,
                          &op->ndim) < 0) {
        return -1;
    }
    for (int d = 0; d < op->ndim; d++) {
        if (op->shape[d] < 0) {
            PyErr_Format(PyExc_ValueError, "%s['shape'] has a negative extent: %R", where,
                         ufg_cai_get(cai, UFG_CAI_SHAPE));
            return -1;
        }
    }
    if (ufg_shape_size(op->ndim, op->shape, where) < 0 ||
        ufg_cai_dtype(ufg_cai_get(cai, UFG_CAI_TYPESTR), where, what, &op->code) < 0 ||
        ufg_cai_data(ufg_cai_get(cai, UFG_CAI_DATA), where, op) < 0) {
        return -1;
    }
    strides = ufg_cai_get(cai, UFG_CAI_STRIDES);
    if (strides == NULL || strides == Py_None) {
        ufg_c_strides(op->ndim, op->shape, ufg_dtype_itemsize(op->code), op->strides);
    }
    else {
        if (ufg_cai_int_tuple(strides, where, "strides", op->strides, &nstrides) < 0) {
            return -1;
        }
        if (nstrides != op->ndim) {
            PyErr_Format(PyExc_ValueError, "%s['strides'] has %d entries for %d dimensions",
                         where, nstrides, op->ndim);
            return -1;
        }
    }
    if (ufg_shape_bytes_fit(op->ndim, op->shape, ufg_dtype_itemsize(op->code),
                            PyExc_ValueError, where) < 0 ||
        ufg_strides_span_fits(op->ndim, op->shape, op->strides, PyExc_ValueError, where) < 0) {
        return -1;
    }
    mask = ufg_cai_get(cai, UFG_CAI_MASK);
    if (mask != NULL && mask != Py_None) {
        PyErr_Format(PyExc_ValueError, "%s has a mask; masked device arrays are not supported",
                     where);
        return -1;
    }
    return ufg_cai_stream(cai, where, op);
}

static int
ufg_cai_device(const char *what, PyObject *obj, ufg_operand *op)
{
    const ufg_backend *backend = ufg_runtime_backend();
    PyObject *type_name;
    int device;

    if (backend == NULL) {
        return -1;
    }
    /* An empty array reads nothing: its pointer need not be device memory (the DLPack
     * import takes any, as the specification allows). */
    if (op->ptr == NULL || ufg_operand_size(op) == 0) {
        if (op->ptr == NULL && ufg_operand_size(op) != 0) {
            type_name = ufg_type_name(obj);
            PyErr_Format(PyExc_ValueError, "%s (%S): __cuda_array_interface__['data'] is a "
                         "null pointer for a non-empty array", what, type_name);
            Py_XDECREF(type_name);
            return -1;
        }
        device = op->ptr != NULL ? backend->pointer_device(op->ptr) : -1;
        if (device < 0 && backend->current_device(&device) != 0) {
            device = 0;
        }
        op->device = device;
        return 0;
    }
    device = backend->pointer_device(op->ptr);
    if (device < 0) {
        type_name = ufg_type_name(obj);
        PyErr_Format(PyExc_ValueError, "%s (%S): its pointer %p is not device memory", what,
                     type_name, (void *)op->ptr);
        Py_XDECREF(type_name);
        return -1;
    }
    op->device = device;
    return ufg_view_in_allocation(backend, op->ptr, op->ndim, op->shape, op->strides,
                                  ufg_dtype_itemsize(op->code), PyExc_ValueError, what);
}

static int
ufg_operand_from_cai(PyObject *obj, const char *what, ufg_operand *op)
{
    PyObject *cai;
    char where[320];
    int status;

    cai = PyObject_GetAttr(obj, ufg_cai_name);
    if (cai == NULL) {
        /* A Ctrl-C, an exit or a MemoryError while the property ran is no bad argument: it
         * goes on as raised. */
        if (!PyErr_ExceptionMatches(PyExc_Exception) ||
            PyErr_ExceptionMatches(PyExc_MemoryError)) {
            return -1;
        }
        PyObject *type, *value, *traceback, *new_type, *new_value, *new_traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (traceback != NULL) {
            PyException_SetTraceback(value, traceback);
        }
        PyErr_Format(PyExc_TypeError, "%s: reading __cuda_array_interface__ failed: %S", what,
                     value);
        PyErr_Fetch(&new_type, &new_value, &new_traceback);
        PyErr_NormalizeException(&new_type, &new_value, &new_traceback);
        PyException_SetCause(new_value, Py_NewRef(value));      /* `raise ... from` it */
        PyException_SetContext(new_value, value);               /* steals */
        PyErr_Restore(new_type, new_value, new_traceback);
        Py_XDECREF(type);
        Py_XDECREF(traceback);
        return -1;
    }
    ufg_describe(obj, what, where, sizeof where);
    ufg_join(where + strlen(where), sizeof where - strlen(where), ": __cuda_array_interface__",
             (const char *)NULL);
    if (!PyDict_Check(cai)) {
        PyObject *cai_type = ufg_type_name(cai);
        PyErr_Format(PyExc_TypeError, "%s must be a dict, not %S", where, cai_type);
        Py_XDECREF(cai_type);
        Py_DECREF(cai);
        return -1;
    }
    op->kind = UFG_OPERAND_BUFFER;
    op->obj = obj;
    op->owner = NULL;
    op->weak = 0;
    status = ufg_cai_checked_fields(cai, where, what, op);
    Py_DECREF(cai);
    return status < 0 ? -1 : ufg_cai_device(what, obj, op);
}

/* ------------------------------------------------------------------ DLPack */

/* The producer orders its work before the consumer's stream, as the DLPack protocol asks
 * (stream=: 1 for the legacy default stream, which is our 0).  A producer whose __dlpack__
 * predates the stream keyword is asked without it. */
static PyObject *
ufg_dlpack_capsule(PyObject *obj, uintptr_t consumer)
{
    PyObject *method = PyObject_GetAttr(obj, ufg_dlpack_name), *kwargs, *args, *capsule;

    if (method == NULL) {
        return NULL;
    }
    /* A versioned capsule first, as device.from_dlpack asks: it carries the read-only flag,
     * without which a producer may refuse to export a read-only array at all (NumPy's
     * BufferError) or export one that out= would then write.  A producer older than DLPack
     * 1.0 refuses max_version; one older still, stream too. */
    args = PyTuple_New(0);
    kwargs = Py_BuildValue("{s:K,s:(ii)}", "stream",
                           (unsigned long long)(consumer ? consumer : 1), "max_version", 1, 0);
    capsule = args == NULL || kwargs == NULL ? NULL : PyObject_Call(method, args, kwargs);
    if (capsule == NULL && PyErr_ExceptionMatches(PyExc_TypeError) &&
        PyDict_DelItemString(kwargs, "max_version") == 0) {
        PyErr_Clear();
        capsule = PyObject_Call(method, args, kwargs);
    }
    if (capsule == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        capsule = PyObject_CallNoArgs(method);
    }
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    Py_DECREF(method);
    return capsule;
}

static int
ufg_operand_from_dlpack(PyObject *obj, const char *what, uintptr_t consumer, ufg_operand *op)
{
    PyObject *capsule, *imported;
    char where[320];

    ufg_describe(obj, what, where, sizeof where);
    if (_PyType_Lookup(Py_TYPE(obj), ufg_dlpack_name) == NULL) {
        PyErr_Format(PyExc_TypeError, "%s is not a CUDA array: it has neither "
                     "__cuda_array_interface__ nor __dlpack__", where);
        return -1;
    }
    /* A host producer (NumPy) refuses the CUDA stream it is about to be handed with an error
     * of its own: where its memory is says more. */
    if (_PyType_Lookup(Py_TYPE(obj), ufg_dlpack_device_name) != NULL &&
        ufg_dlpack_check_producer_device(obj, where) < 0) {
        return -1;
    }
    capsule = ufg_dlpack_capsule(obj, consumer);
    /* On the consumer's stream: the import dies with the call, and its producer's deleter
     * then waits for the call's work on that stream (device_array_release.c). */
    imported = capsule == NULL ? NULL : ufg_from_dlpack_capsule(capsule, consumer, NULL);
    Py_XDECREF(capsule);
    if (imported == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
            PyErr_ExceptionMatches(PyExc_BufferError)) {
            ufg_prefix_error(what);
        }
        return -1;
    }
    ufg_operand_from_array((ufg_DeviceArrayObject *)imported, op);
    op->obj = obj;
    op->owner = imported;
    return 0;
}

int
ufg_operand_from_buffer(PyObject *obj, const char *what, ufg_operand *op, uintptr_t consumer)
{
    const ufg_device_probe_api *probe;
    int reads_cai;

    if (ufg_DeviceArray_Check(obj)) {
        ufg_operand_from_array((ufg_DeviceArrayObject *)obj, op);
        return 0;
    }
    if (ufg_operands_intern() < 0) {
        return -1;
    }
    probe = ufg_device_probe();
    if (probe != NULL && probe->is_torch_tensor(obj)) {
        const int taken = ufg_operand_from_torch(obj, what, op);
        if (taken != 0) {
            return taken < 0 ? -1 : 0;
        }
    }
    reads_cai = probe == NULL ? -1 : probe->reads_cuda_array_interface(obj);
    if (reads_cai < 0) {
        return -1;
    }
    return reads_cai ? ufg_operand_from_cai(obj, what, op)
                     : ufg_operand_from_dlpack(obj, what, consumer, op);
}

int
ufg_operand_check_alignment(const ufg_operand *op, const char *what)
{
    const int64_t size = ufg_dtype_itemsize(op->code);
    PyObject *strides;

    if (ufg_strided_is_aligned(op->ptr, op->ndim, op->shape, op->strides, size)) {
        return 0;
    }
    strides = PyTuple_New(op->ndim);
    for (int d = 0; strides != NULL && d < op->ndim; d++) {
        PyTuple_SET_ITEM(strides, d, PyLong_FromLongLong(op->strides[d]));
    }
    PyErr_Format(PyExc_ValueError, "%s is misaligned for %S (pointer %p, strides %S): device "
                 "kernels need every element at a multiple of %lld bytes", what,
                 (PyObject *)ufg_call_descr(op->code), (void *)op->ptr, strides,
                 (long long)size);
    Py_XDECREF(strides);
    return -1;
}

/* ------------------------------------------------------------------ classification */

static int
ufg_classify_numpy_scalar(PyObject *obj, const char *what, ufg_operand *op)
{
    PyArray_Descr *descr = PyArray_DescrFromScalar(obj);
    int code;

    if (descr == NULL) {
        return -1;
    }
    code = ufg_dtype_code_of_supported(descr);
    if (code < 0) {
        PyErr_Format(PyExc_TypeError, "%s is a NumPy %S scalar; device kernels take %s", what,
                     (PyObject *)descr, UFG_ELEMENT_TYPE_NAMES);
        Py_DECREF(descr);
        return -1;
    }
    Py_DECREF(descr);
    op->code = (ufg_dtype_code)code;
    op->weak = 0;
    return 0;
}

/* An instance of a subclass of int, float or complex (an IntEnum member): NEP 50 makes only
 * the exact types weak, so it is typed as np.asarray types it (int64, float64, complex128;
 * an int past int64's range as object, which no loop takes). */
static int
ufg_classify_python_scalar_subclass(PyObject *obj, const char *what, ufg_operand *op)
{
    PyArrayObject *array = (PyArrayObject *)PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    int code;

    if (array == NULL) {
        return -1;
    }
    code = ufg_dtype_code_of_supported(PyArray_DESCR(array));
    if (code < 0) {
        PyObject *type_name = ufg_type_name(obj);
        if (type_name != NULL) {
            PyErr_Format(PyExc_TypeError, "%s is a %S, which NumPy types as %S (not as a Python "
                         "scalar: it is a subclass); device kernels take %s", what, type_name,
                         (PyObject *)PyArray_DESCR(array), UFG_ELEMENT_TYPE_NAMES);
            Py_DECREF(type_name);
        }
        Py_DECREF(array);
        return -1;
    }
    Py_DECREF(array);
    op->code = (ufg_dtype_code)code;
    op->weak = 0;
    return 0;
}

/* The one input of a call, a Python scalar: NumPy types it as np.asarray does, not weakly
 * (gelu(2.5, dtype='f4', casting='safe') refuses the float64; lucas(2.5) is no int).  An int
 * past int64 stays weak here: the type resolution asks NumPy about it (resolve.c). */
static void
ufg_type_lone_python_scalar(ufg_operand *op)
{
    int overflow = 0;

    if (op->kind != UFG_OPERAND_SCALAR || op->weak == 0) {
        return;
    }
    if (op->weak == 'i') {
        (void)PyLong_AsLongLongAndOverflow(op->obj, &overflow);
        if (overflow > 0) {         /* np.asarray(2**63) is a uint64, 2**64 no integer */
            (void)PyLong_AsUnsignedLongLong(op->obj);
            if (PyErr_Occurred()) {
                PyErr_Clear();
                return;
            }
            op->code = UFG_DT_UINT64;
            op->weak = 0;
            return;
        }
        if (overflow != 0) {
            return;
        }
    }
    op->code = op->weak == 'i' ? UFG_DT_INT64 : op->weak == 'f' ? UFG_DT_FLOAT64
                                                                : UFG_DT_COMPLEX128;
    op->weak = 0;
}

/* A host array or an object of no known kind, refused with a hint at where the call's data
 * lives. */
/* Whether NumPy reads obj as an array of host memory: an ndarray, or an object with the
 * buffer protocol or __array__ (a PyTorch CPU tensor, which the probe found on the host). */
static int
ufg_is_host_array(PyObject *obj)
{
    return PyArray_Check(obj) || PyObject_CheckBuffer(obj) ||
           PyObject_HasAttrString(obj, "__array__") ||
           PyObject_HasAttrString(obj, "__array_interface__");
}

static int
ufg_refuse_host_object(PyObject *obj, const char *what, const char *hint)
{
    PyObject *type_name = ufg_type_name(obj);

    if (type_name == NULL) {
        return -1;
    }
    if (ufg_is_host_array(obj)) {
        PyErr_Format(PyExc_TypeError,
                     "%s is a host %S, but %s: host and device arrays do not mix. "
                     "Move it with ufuncgen.device.to_device(...) (or cupy.asarray, "
                     "torch.as_tensor(..., device='cuda')), or pass a Python scalar", what,
                     type_name, hint);
    }
    else {
        PyErr_Format(PyExc_TypeError,
                     "%s is a %S, which is neither a CUDA buffer nor a scalar, but %s; device "
                     "calls take CUDA arrays (__cuda_array_interface__ or DLPack) and Python "
                     "scalars", what, type_name, hint);
    }
    Py_DECREF(type_name);
    return -1;
}

/* An input: a buffer or a scalar; hint says where the call's device data is. */
static int
ufg_classify(PyObject *obj, const char *what, const char *hint, uintptr_t consumer,
             ufg_operand *op)
{
    int is_device;

    memset(op, 0, offsetof(ufg_operand, shape));
    op->obj = obj;
    op->owner = NULL;
    op->has_producer = 0;
    op->ndim = 0;
    op->weak = 0;           /* after shape[]: the memset does not reach it */
    if (PyArray_IsScalar(obj, Generic)) {
        op->kind = UFG_OPERAND_SCALAR;
        return ufg_classify_numpy_scalar(obj, what, op);
    }
    if (PyBool_Check(obj)) {
        op->kind = UFG_OPERAND_SCALAR;
        op->code = UFG_DT_BOOL;
        return 0;
    }
    if (PyLong_CheckExact(obj) || PyFloat_CheckExact(obj) || PyComplex_CheckExact(obj)) {
        op->kind = UFG_OPERAND_SCALAR;
        op->weak = PyLong_Check(obj) ? 'i' : PyFloat_Check(obj) ? 'f' : 'c';
        return 0;
    }
    if (PyLong_Check(obj) || PyFloat_Check(obj) || PyComplex_Check(obj)) {
        op->kind = UFG_OPERAND_SCALAR;
        return ufg_classify_python_scalar_subclass(obj, what, op);
    }
    is_device = ufg_is_device_object(obj);
    if (is_device < 0) {
        return -1;
    }
    if (is_device) {
        return ufg_operand_from_buffer(obj, what, op, consumer);
    }
    return ufg_refuse_host_object(obj, what, hint);
}

static int
ufg_check_output(ufg_call *c, int k, const char *what)
{
    ufg_operand *op = &c->ops[k];

    if (op->kind != UFG_OPERAND_BUFFER) {
        PyObject *type_name = ufg_type_name(op->obj);
        PyErr_Format(PyExc_TypeError, "%s must be a CUDA array, not a %S", what, type_name);
        Py_XDECREF(type_name);
        return -1;
    }
    return ufg_operand_check_writable(op, what);
}

int
ufg_operand_check_writable(const ufg_operand *op, const char *what)
{
    if (op->readonly) {
        PyErr_Format(PyExc_ValueError,
                     "%s is read-only (as its exporter says: the interface's data flag, or "
                     "DLPack's read-only flag)", what);
        return -1;
    }
    return 0;
}

/* A device ordinal in decimal, into buffer. */
static const char *
ufg_decimal(int value, char *buffer, size_t size)
{
    char digits[16];
    size_t n = 0;
    unsigned magnitude = value < 0 ? 0u - (unsigned)value : (unsigned)value;

    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude > 0);
    if (value < 0) {
        digits[n++] = '-';
    }
    for (size_t i = 0; i < n && i + 1 < size; i++) {
        buffer[i] = digits[n - 1 - i];
    }
    buffer[n < size ? n : size - 1] = '\0';
    return buffer;
}

int
ufg_call_classify_operands(ufg_call *c, PyObject *const *inputs, PyObject *const *outs)
{
    char what[160], anchor_what[160], hint[256], device[16];
    int first = -1;

    for (int k = 0; k < c->nargs && first < 0; k++) {
        PyObject *obj = k < c->nin ? inputs[k] : outs[k - c->nin];
        int is_device = obj == NULL ? 0 : ufg_is_device_object(obj);
        if (is_device < 0) {
            return -1;
        }
        if (is_device) {
            first = k;
        }
    }
    if (first < 0) {
        /* A CUDA where= mask sent the call here (src/core/dispatch.c): say so. */
        if (c->where_kind == UFG_WHERE_MASK) {
            PyErr_Format(PyExc_TypeError, "%s: where= is a CUDA array, but no argument is; "
                         "host and device arrays do not mix (pass the arguments as CUDA "
                         "arrays, or where= as a host array)", c->fn->name);
        }
        else {
            PyErr_Format(PyExc_TypeError, "%s: no argument is a CUDA array", c->fn->name);
        }
        return -1;
    }
    ufg_call_what(c, first, anchor_what, sizeof anchor_what);
    if (ufg_operand_from_buffer(first < c->nin ? inputs[first] : outs[first - c->nin],
                                anchor_what, &c->ops[first], c->stream) < 0) {
        return -1;
    }
    c->anchor = first;
    c->device = c->ops[first].device;
    ufg_join(hint, sizeof hint, anchor_what + strlen(c->fn->name) + 2, " is on CUDA device ",
             ufg_decimal(c->device, device, sizeof device), (const char *)NULL);
    for (int k = 0; k < c->nargs; k++) {
        PyObject *obj = k < c->nin ? inputs[k] : outs[k - c->nin];
        ufg_call_what(c, k, what, sizeof what);
        if (k != first) {
            if (obj == NULL) {
                memset(&c->ops[k], 0, offsetof(ufg_operand, shape));
                c->ops[k].kind = UFG_OPERAND_ABSENT;
                continue;
            }
            if (ufg_classify(obj, what, hint, c->stream, &c->ops[k]) < 0) {
                return -1;
            }
        }
        if (k >= c->nin && ufg_check_output(c, k, what) < 0) {
            return -1;
        }
        if (k == 0 && c->nin == 1) {
            ufg_type_lone_python_scalar(&c->ops[0]);
        }
        if (c->ops[k].kind == UFG_OPERAND_BUFFER && c->ops[k].device != c->device) {
            PyErr_Format(PyExc_ValueError, "%s is on CUDA device %d, but %s; all arrays of one "
                         "call must be on the same GPU", what, c->ops[k].device, hint);
            return -1;
        }
    }
    return 0;
}
