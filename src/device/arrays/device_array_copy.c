/*
 * Copies out of a DeviceArray: copy_to_host, and the C-contiguous device copy it uses for
 * views whose elements are not one block (transposed, strided, negative or zero strides).
 */
#include "device_array.h"

#include <string.h>

#include "args.h"
#include "call/stream_arg.h"
#include "keepalive.h"
#include "launch.h"
#include "runtime.h"
#include "stream_device.h"

/* Copies a view whose elements are not all aligned to their size (a foreign array's view
 * with odd strides or offset) byte by byte: a kernel loading such an element as its type
 * faults on a GPU.  Each element becomes a last dimension of itemsize bytes, which the cast
 * kernel copies as uint8. */
static int
ufg_copy_misaligned(const ufg_backend *backend, ufg_DeviceArrayObject *self,
                    ufg_DeviceArrayObject *copy, uintptr_t stream)
{
    int64_t shape[UFG_DEVICE_ARRAY_MAX_DIMS + 1], src_strides[UFG_DEVICE_ARRAY_MAX_DIMS + 1];
    int64_t dst_strides[UFG_DEVICE_ARRAY_MAX_DIMS + 1];
    const int ndim = self->ndim;

    memcpy(shape, self->shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(src_strides, self->strides, sizeof(int64_t) * (size_t)ndim);
    memcpy(dst_strides, copy->strides, sizeof(int64_t) * (size_t)ndim);
    shape[ndim] = (int64_t)self->dtype->elsize;
    src_strides[ndim] = dst_strides[ndim] = 1;
    return ufg_launch_cast(backend, self->device, stream, ndim + 1, shape, self->ptr,
                           src_strides, UFG_DT_UINT8, copy->ptr, dst_strides, UFG_DT_UINT8,
                           NULL, NULL);
}

ufg_DeviceArrayObject *
ufg_device_array_contiguous_copy(ufg_DeviceArrayObject *self, uintptr_t stream,
                                 PyObject *keeper)
{
    const ufg_backend *backend = ufg_runtime_backend();
    ufg_DeviceArrayObject *copy;
    int status;

    if (backend == NULL || ufg_device_array_wait_for(backend, self, stream) < 0) {
        return NULL;
    }
    copy = ufg_device_array_empty(self->ndim, self->shape, self->dtype, self->device, stream);
    if (copy == NULL) {
        return NULL;
    }
    if (ufg_strided_is_aligned(self->ptr, self->ndim, self->shape, self->strides,
                               (int64_t)self->dtype->elsize)) {
        status = ufg_launch_cast(backend, self->device, stream, self->ndim, self->shape,
                                 self->ptr, self->strides, self->code, copy->ptr, copy->strides,
                                 copy->code, NULL, NULL);
    }
    else {
        status = ufg_copy_misaligned(backend, self, copy, stream);
    }
    if (status < 0) {
        Py_DECREF(copy);
        return NULL;
    }
    ufg_device_array_used_on(self, stream, keeper);
    /* The copy's free is queued on that stream too: the stream object stays alive with it. */
    ufg_device_array_used_on(copy, stream, keeper);
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
    if (backend == NULL ||
        ufg_check_stream_device(backend, stream, self->device, "copy_to_host: stream=",
                                "the array is on") < 0) {
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
    /* The host has waited for the stream: what was kept for work on it may go. */
    ufg_release_done(backend);
    return (PyObject *)host;
fail:
    Py_XDECREF(source);
    Py_DECREF(host);
    return NULL;
}
