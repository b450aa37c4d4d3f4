/*
 * Copies out of a DeviceArray: copy_to_host, and the C-contiguous device copy it uses for
 * views whose elements are not one block (transposed, strided, negative or zero strides).
 */
#include "device_array.h"

#include "call/stream_arg.h"
#include "launch.h"
#include "runtime.h"

ufg_DeviceArrayObject *
ufg_device_array_contiguous_copy(ufg_DeviceArrayObject *self, uintptr_t stream,
                                 PyObject *keeper)
{
    const ufg_backend *backend = ufg_runtime_backend();
    ufg_DeviceArrayObject *copy;

    if (backend == NULL || ufg_device_array_wait_for(backend, self, stream) < 0) {
        return NULL;
    }
    copy = ufg_device_array_empty(self->ndim, self->shape, self->dtype, self->device, stream);
    if (copy == NULL) {
        return NULL;
    }
    if (ufg_launch_cast(backend, self->device, stream, self->ndim, self->shape, self->ptr,
                        self->strides, self->code, copy->ptr, copy->strides,
                        copy->code, NULL, NULL) < 0) {
        Py_DECREF(copy);
        return NULL;
    }
    ufg_device_array_used_on(self, stream, keeper);
    return copy;
}

/* Copies the contiguous `source` into the host array's buffer and waits for it. */
static int
ufg_copy_contiguous_to_host(const ufg_backend *backend, ufg_DeviceArrayObject *source,
                            PyArrayObject *host, uintptr_t stream)
{
    const size_t nbytes = (size_t)PyArray_NBYTES(host);
    int error;

    Py_BEGIN_ALLOW_THREADS
    error = backend->memcpy(PyArray_DATA(host), source->ptr, nbytes,
                            UFG_MEMCPY_DEVICE_TO_HOST, source->device, (void *)stream);
    Py_END_ALLOW_THREADS
    return error ? ufg_device_error_int(backend, error, "copying a device array to the host")
                 : 0;
}

PyObject *
ufg_device_array_copy_to_host(ufg_DeviceArrayObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"stream", NULL};
    const ufg_backend *backend;
    PyObject *stream_arg = Py_None;
    ufg_DeviceArrayObject *source = NULL;
    PyArrayObject *host = NULL;
    npy_intp dims[UFG_DEVICE_ARRAY_MAX_DIMS];
    uintptr_t stream = self->stream;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O:copy_to_host", keywords, &stream_arg)) {
        return NULL;
    }
    if (stream_arg != Py_None && ufg_stream_from_object(stream_arg, &stream) < 0) {
        return NULL;
    }
    backend = ufg_runtime_backend();
    if (backend == NULL) {
        return NULL;
    }
    for (int d = 0; d < self->ndim; d++) {
        dims[d] = (npy_intp)self->shape[d];
    }
    Py_INCREF(self->dtype);     /* stolen by PyArray_NewFromDescr */
    host = (PyArrayObject *)PyArray_NewFromDescr(&PyArray_Type, self->dtype, self->ndim, dims,
                                                 NULL, NULL, 0, NULL);
    if (host == NULL || PyArray_NBYTES(host) == 0) {
        return (PyObject *)host;
    }
    if (ufg_device_array_is_c_contiguous(self)) {
        source = (ufg_DeviceArrayObject *)Py_NewRef(self);
        if (ufg_device_array_wait_for(backend, self, stream) < 0) {
            goto fail;
        }
    }
    else {
        source = ufg_device_array_contiguous_copy(self, stream,
                                                  stream_arg == Py_None
                                                      ? self->stream_keeper
                                                      : ufg_stream_owner(stream_arg));
        if (source == NULL) {
            goto fail;
        }
    }
    if (ufg_copy_contiguous_to_host(backend, source, host, stream) < 0) {
        goto fail;
    }
    Py_DECREF(source);
    return (PyObject *)host;
fail:
    Py_XDECREF(source);
    Py_DECREF(host);
    return NULL;
}
