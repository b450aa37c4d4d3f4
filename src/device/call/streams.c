/*
 * Streams: the stream= value of a call as a raw cudaStream_t, the CUDA array interface's
 * rule that a consumer waits for the work its producer queued (v3 'stream'), and the stream
 * a call runs on when it gets no stream= (the library's current stream; README, "Streams").
 */
#include "call.h"

#include "runtime.h"

static int
ufg_stream_from_int(PyObject *value, uintptr_t *stream)
{
    unsigned long long handle = PyLong_AsUnsignedLongLong(value);

    if (handle == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "stream= must be a handle from 0 to 2**64 - 1, got %R",
                     value);
        return -1;
    }
    *stream = (uintptr_t)handle;
    return 0;
}

/* ufuncgen's and Numba's streams (`handle`, Numba's a c_void_p), CuPy's (`ptr`), PyTorch's
 * (`cuda_stream`). */
static int
ufg_stream_from_attribute(PyObject *obj, uintptr_t *stream)
{
    static const char *const names[] = {"handle", "ptr", "cuda_stream"};

    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        PyObject *value = PyObject_GetAttrString(obj, names[i]), *inner;
        int status;
        if (value == NULL) {
            PyErr_Clear();
            continue;
        }
        if (value == Py_None) {
            Py_DECREF(value);
            continue;
        }
        inner = PyObject_GetAttrString(value, "value");
        if (inner == NULL) {
            PyErr_Clear();
            inner = Py_NewRef(value);
        }
        Py_DECREF(value);
        if (inner == Py_None) {
            *stream = 0;
            status = 0;
        }
        else if (PyLong_Check(inner)) {
            status = ufg_stream_from_int(inner, stream);
        }
        else {
            PyErr_Format(PyExc_TypeError, "stream=: its %s is not an int", names[i]);
            status = -1;
        }
        Py_DECREF(inner);
        return status;
    }
    return 1;
}

int
ufg_stream_from_object(PyObject *obj, uintptr_t *stream)
{
    PyObject *pair;
    int status;

    *stream = 0;
    if (obj == NULL || obj == Py_None) {
        return 0;
    }
    if (PyLong_Check(obj) && !PyBool_Check(obj)) {
        return ufg_stream_from_int(obj, stream);
    }
    if (PyObject_HasAttrString(obj, "__cuda_stream__")) {
        pair = PyObject_CallMethod(obj, "__cuda_stream__", NULL);
        if (pair == NULL) {
            return -1;
        }
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            !PyLong_Check(PyTuple_GET_ITEM(pair, 1))) {
            PyErr_Format(PyExc_TypeError, "stream=: __cuda_stream__() must return (version, "
                         "handle), not %R", pair);
            Py_DECREF(pair);
            return -1;
        }
        status = ufg_stream_from_int(PyTuple_GET_ITEM(pair, 1), stream);
        Py_DECREF(pair);
        return status;
    }
    status = ufg_stream_from_attribute(obj, stream);
    if (status <= 0) {
        return status;
    }
    /* Last: a stream object may define __index__ too, and means its handle. */
    if (PyIndex_Check(obj) && !PyBool_Check(obj)) {
        PyObject *index = PyNumber_Index(obj);
        status = index == NULL ? -1 : ufg_stream_from_int(index, stream);
        Py_XDECREF(index);
        return status;
    }
    PyErr_Format(PyExc_TypeError, "stream= must be an int handle or a CUDA stream object "
                 "(CuPy, PyTorch, Numba, ufuncgen), not %.200s", Py_TYPE(obj)->tp_name);
    return -1;
}

int
ufg_wait_for_producer(const ufg_backend *backend, const ufg_operand *op, uintptr_t consumer)
{
    uintptr_t producer;
    int error;

    if (op->kind != UFG_OPERAND_BUFFER || !op->has_producer) {
        return 0;
    }
    /* CAI v3 spells the legacy default stream 1 (0 is disallowed); our handle for it is 0. */
    producer = op->producer == UFG_STREAM_LEGACY ? 0 : op->producer;
    if (producer == consumer) {
        return 0;       /* a stream is ordered with itself */
    }
    error = backend->stream_wait((void *)consumer, (void *)producer, op->device);
    return error ? ufg_device_error_int(backend, error, "ordering streams") : 0;
}

/* ------------------------------------------------------------------ the default stream */

/*
 * Without stream=, a call runs where its caller's library queues work: the current stream of
 * the library whose array comes first (PyTorch's, CuPy's; ufuncgen.device asks each library
 * through a "stream source", looked up once per type), else ufuncgen's own current stream (a
 * `with ufuncgen.device.Stream():` block), else the legacy default stream.  Results then
 * order with what the library does next on its own stream, with no wait on the host.
 */
static PyObject *ufg_stream_sources = NULL;    /* see ufg_stream_source */
static PyObject *ufg_device_module = NULL;     /* ufuncgen.device, imported on first need */
static PyObject *ufg_current_stream_var = NULL;/* its ContextVar of the current Stream */
static PyObject *ufg_stream_class = NULL;       /* ufuncgen.device.Stream */

static int
ufg_streams_import(void)
{
    if (ufg_device_module != NULL) {
        return 0;
    }
    if (ufg_stream_sources == NULL && (ufg_stream_sources = PyDict_New()) == NULL) {
        return -1;
    }
    ufg_device_module = PyImport_ImportModule("ufuncgen.device");
    if (ufg_device_module == NULL) {
        return -1;
    }
    ufg_current_stream_var = PyObject_GetAttrString(ufg_device_module, "_current_stream");
    ufg_stream_class = PyObject_GetAttrString(ufg_device_module, "Stream");
    return ufg_current_stream_var == NULL || ufg_stream_class == NULL ? -1 : 0;
}

int
ufg_stream_is_ufuncgens(PyObject *keeper)
{
    return keeper != NULL && ufg_stream_class != NULL && PyType_Check(ufg_stream_class) &&
           PyObject_TypeCheck(keeper, (PyTypeObject *)ufg_stream_class);
}

/* The stream sources asked of types, by the type's address: {address: (weak reference to the
 * type, source)}.  Holding the types would keep a class made per call (an adapter) alive
 * forever, with all it refers to; an entry whose type died (its address perhaps another
 * type's now) is answered afresh, and the dead are swept as the table grows. */
#define UFG_STREAM_SOURCES_SWEEP 64

static int
ufg_stream_sources_sweep(void)
{
    PyObject *key, *entry, *dead = PyList_New(0);
    Py_ssize_t pos = 0;
    int status = 0;

    if (dead == NULL) {
        return -1;
    }
    while (PyDict_Next(ufg_stream_sources, &pos, &key, &entry)) {
        if (PyWeakref_GetObject(PyTuple_GET_ITEM(entry, 0)) == Py_None &&
            PyList_Append(dead, key) < 0) {
            status = -1;
            break;
        }
    }
    for (Py_ssize_t i = 0; status == 0 && i < PyList_GET_SIZE(dead); i++) {
        status = PyDict_DelItem(ufg_stream_sources, PyList_GET_ITEM(dead, i));
    }
    Py_DECREF(dead);
    return status;
}

/* The type's stream source (borrowed; Py_None when it has none), asked once per type. */
static PyObject *
ufg_stream_source(PyTypeObject *type)
{
    PyObject *key = PyLong_FromVoidPtr(type), *entry, *source, *ref;

    if (key == NULL) {
        return NULL;
    }
    entry = PyDict_GetItemWithError(ufg_stream_sources, key);
    if (entry != NULL && PyWeakref_GetObject(PyTuple_GET_ITEM(entry, 0)) == (PyObject *)type) {
        Py_DECREF(key);
        return PyTuple_GET_ITEM(entry, 1);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    }
    source = PyObject_CallMethod(ufg_device_module, "_stream_source", "O", (PyObject *)type);
    ref = source == NULL ? NULL : PyWeakref_NewRef((PyObject *)type, NULL);
    entry = ref == NULL ? NULL : PyTuple_Pack(2, ref, source);
    Py_XDECREF(ref);
    Py_XDECREF(source);
    if (entry == NULL ||
        (PyDict_GET_SIZE(ufg_stream_sources) % UFG_STREAM_SOURCES_SWEEP ==
             UFG_STREAM_SOURCES_SWEEP - 1 && ufg_stream_sources_sweep() < 0) ||
        PyDict_SetItem(ufg_stream_sources, key, entry) < 0) {
        Py_XDECREF(entry);
        Py_DECREF(key);
        return NULL;
    }
    Py_DECREF(key);
    Py_DECREF(entry);       /* the dict holds it */
    return PyTuple_GET_ITEM(entry, 1);
}

PyObject *
ufg_stream_owner(PyObject *obj)
{
    return obj == NULL || obj == Py_None || PyLong_Check(obj) ||
           PyArray_IsScalar(obj, Integer) ? NULL : obj;
}

/* Sets *stream and *keeper (a new reference, or NULL) from a stream object. */
static int
ufg_stream_take(PyObject *obj, uintptr_t *stream, PyObject **keeper)
{
    if (ufg_stream_from_object(obj, stream) < 0) {
        return -1;
    }
    *keeper = Py_XNewRef(ufg_stream_owner(obj));
    return 0;
}

int
ufg_default_stream(PyObject *const *objs, int n, uintptr_t *stream, PyObject **keeper)
{
    PyObject *current;

    *stream = 0;
    *keeper = NULL;
    for (int k = 0; k < n; k++) {
        PyObject *source, *found;
        int status;
        if (objs[k] == NULL || ufg_DeviceArray_Check(objs[k]) || PyFloat_Check(objs[k]) ||
            PyLong_Check(objs[k]) || PyArray_IsScalar(objs[k], Generic)) {
            continue;
        }
        if (ufg_streams_import() < 0 || (source = ufg_stream_source(Py_TYPE(objs[k]))) == NULL) {
            return -1;
        }
        if (source == Py_None) {
            continue;
        }
        found = PyObject_CallOneArg(source, objs[k]);
        if (found == NULL) {
            return -1;
        }
        status = found == Py_None ? 1 : ufg_stream_take(found, stream, keeper);
        Py_DECREF(found);
        if (status <= 0) {
            return status;
        }
    }
    if (ufg_current_stream_var == NULL && ufg_streams_import() < 0) {
        return -1;
    }
    if (PyContextVar_Get(ufg_current_stream_var, Py_None, &current) < 0) {
        return -1;
    }
    int status = current == Py_None ? 0 : ufg_stream_take(current, stream, keeper);
    Py_DECREF(current);
    return status;
}

PyObject *
ufg_forget_stream_sources(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    if (ufg_stream_sources != NULL) {
        PyDict_Clear(ufg_stream_sources);
    }
    Py_RETURN_NONE;
}
