/*
 * Streams: the stream= value of a call as a raw cudaStream_t, and the CUDA array interface's
 * rule that a consumer waits for the work its producer queued (v3 'stream').
 */
#include "call.h"

#include "runtime.h"

/* CAI v3 spells the legacy default stream 1 (0 is disallowed); our handle for it is 0. */
#define UFG_CAI_LEGACY_DEFAULT_STREAM 1

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
    producer = op->producer == UFG_CAI_LEGACY_DEFAULT_STREAM ? 0 : op->producer;
    if (producer == consumer) {
        return 0;       /* a stream is ordered with itself */
    }
    error = backend->stream_wait((void *)consumer, (void *)producer, op->device);
    return error ? ufg_device_error_int(backend, error, "ordering streams") : 0;
}
