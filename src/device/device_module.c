/*
 * ufuncgen._device: the device runtime's Python surface.  This file holds the module
 * definition and the small functions (backend queries, streams, memory, construction);
 * DeviceArray, DLPack and the launch entry points live in their own files.
 *
 * Importing never touches CUDA: the backend is chosen, and the driver first called, by the
 * first function that needs a device.
 */
#define UFG_DEVICE_IMPORTS_NUMPY
#include "numpy_api.h"

#include "args.h"
#include "call/call.h"
#include "call/public.h"
#include "device_array.h"
#include "dlpack_import.h"
#include "dtypes.h"
#include "keepalive.h"
#include "hooks_module.h"
#include "launch_module.h"
#include "owned_stream.h"
#include "runtime.h"
#include "stream_device.h"

#include "ufuncgen/device_kernel.h"

/* ------------------------------------------------------------------ backend queries */

static PyObject *
ufg_backend_name(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    const ufg_backend *backend = ufg_runtime_backend();
    return backend == NULL ? NULL : PyUnicode_FromString(backend->name);
}

static PyObject *
ufg_is_available(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    const ufg_backend *backend = ufg_runtime_backend();
    const char *reason;

    return backend == NULL ? NULL : PyBool_FromLong(backend->is_available(&reason));
}

static PyObject *
ufg_unavailable_reason(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    const ufg_backend *backend = ufg_runtime_backend();
    const char *reason = NULL;

    if (backend == NULL) {
        return NULL;
    }
    if (backend->is_available(&reason)) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(reason);
}

/* 0 when the backend is unavailable, so callers can probe without catching. */
static PyObject *
ufg_device_count(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    const ufg_backend *backend = ufg_runtime_backend();
    const char *reason;
    int count = 0, error;

    if (backend == NULL) {
        return NULL;
    }
    if (!backend->is_available(&reason)) {
        return PyLong_FromLong(0);
    }
    error = backend->device_count(&count);
    if (error) {
        return ufg_device_error(backend, error, "counting devices");
    }
    return PyLong_FromLong(count);
}

static PyObject *
ufg_current_device(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    const ufg_backend *backend = ufg_runtime_backend();
    int device = 0, error;

    if (backend == NULL) {
        return NULL;
    }
    error = backend->current_device(&device);
    if (error) {
        return ufg_device_error(backend, error, "asking for the current device");
    }
    return PyLong_FromLong(device);
}

static PyObject *
ufg_multiprocessor_count(PyObject *Py_UNUSED(module), PyObject *device_obj)
{
    const ufg_backend *backend = ufg_runtime_backend();
    int device, count;

    if (backend == NULL || ufg_arg_device(backend, device_obj, "device", &device) < 0) {
        return NULL;
    }
    count = ufg_runtime_multiprocessors(backend, device);
    return count < 0 ? NULL : PyLong_FromLong(count);
}

/* ------------------------------------------------------------------ streams */

/* `device` if given, else the current device. */
static int
ufg_device_or_current(const ufg_backend *backend, PyObject *obj, int *device)
{
    int error;

    if (obj != Py_None) {
        return ufg_arg_device(backend, obj, "device", device);
    }
    error = backend->current_device(device);
    return error ? ufg_device_error_int(backend, error, "asking for the current device") : 0;
}

/* Every device's queued work, waited for with the GIL released. */
static PyObject *
ufg_synchronize_all(const ufg_backend *backend)
{
    int count = 0, error;

    error = backend->device_count(&count);
    if (error) {
        return ufg_device_error(backend, error, "counting devices");
    }
    for (int device = 0; device < count && error == 0; device++) {
        Py_BEGIN_ALLOW_THREADS
        error = backend->synchronize_device(device);
        Py_END_ALLOW_THREADS
    }
    if (error) {
        return ufg_device_error(backend, error, "synchronizing the device");
    }
    ufg_release_done(backend);
    Py_RETURN_NONE;
}

static PyObject *
ufg_synchronize(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"stream", "device", NULL};
    PyObject *stream_obj = Py_None, *device_obj = Py_None;
    const ufg_backend *backend;
    uintptr_t stream = 0;
    int device, error;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO:synchronize", keywords, &stream_obj,
                                     &device_obj) ||
        (backend = ufg_runtime_backend()) == NULL) {
        return NULL;
    }
    if (stream_obj == Py_None && device_obj == Py_None) {
        return ufg_synchronize_all(backend);
    }
    if ((stream_obj != Py_None && ufg_arg_uintptr(stream_obj, "stream", &stream) < 0) ||
        ufg_device_or_current(backend, device_obj, &device) < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    error = stream_obj == Py_None ? backend->synchronize_device(device)
                                  : backend->synchronize_stream((void *)stream, device);
    Py_END_ALLOW_THREADS
    if (error) {
        return ufg_device_error(backend, error, stream_obj == Py_None
                                ? "synchronizing the device" : "synchronizing a stream");
    }
    ufg_release_done(backend);
    Py_RETURN_NONE;
}

static PyObject *
ufg_stream_create(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"device", "non_blocking", NULL};
    PyObject *device_obj = Py_None;
    const ufg_backend *backend;
    void *stream = NULL;
    int device, error, non_blocking = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|Op:stream_create", keywords,
                                     &device_obj, &non_blocking) ||
        (backend = ufg_runtime_backend()) == NULL ||
        ufg_device_or_current(backend, device_obj, &device) < 0) {
        return NULL;
    }
    error = backend->stream_create(device, non_blocking, &stream);
    if (error) {
        return ufg_device_error(backend, error, "creating a stream");
    }
    return PyLong_FromUnsignedLongLong((uintptr_t)stream);
}

static PyObject *
ufg_stream_destroy(PyObject *Py_UNUSED(module), PyObject *handle_obj)
{
    const ufg_backend *backend;
    uintptr_t handle;
    int error;

    if (ufg_arg_uintptr(handle_obj, "handle", &handle) < 0 ||
        (backend = ufg_runtime_backend()) == NULL) {
        return NULL;
    }
    if (handle <= UFG_LAST_DEFAULT_STREAM) {
        PyErr_Format(PyExc_ValueError,
                     "handle: %llu is a default stream (0, 1 legacy, 2 per-thread), which "
                     "cannot be destroyed", (unsigned long long)handle);
        return NULL;
    }
    error = backend->stream_destroy((void *)handle);
    if (error) {
        return ufg_device_error(backend, error, "destroying a stream");
    }
    Py_RETURN_NONE;
}

static PyObject *
ufg_stream_wait(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"consumer", "producer", "device", NULL};
    PyObject *consumer_obj, *producer_obj, *device_obj = Py_None;
    const ufg_backend *backend;
    uintptr_t consumer, producer;
    int device, error;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O:stream_wait", keywords,
                                     &consumer_obj, &producer_obj, &device_obj) ||
        ufg_arg_uintptr(consumer_obj, "consumer", &consumer) < 0 ||
        ufg_arg_uintptr(producer_obj, "producer", &producer) < 0 ||
        (backend = ufg_runtime_backend()) == NULL ||
        ufg_device_or_current(backend, device_obj, &device) < 0) {
        return NULL;
    }
    if (consumer == producer) {
        Py_RETURN_NONE;     /* a stream is ordered with itself */
    }
    error = backend->stream_wait((void *)consumer, (void *)producer, device);
    if (error) {
        return ufg_device_error(backend, error, "ordering streams");
    }
    Py_RETURN_NONE;
}

static PyObject *
ufg_pointer_device(PyObject *Py_UNUSED(module), PyObject *ptr_obj)
{
    const ufg_backend *backend;
    uintptr_t ptr;

    if (ufg_arg_uintptr(ptr_obj, "ptr", &ptr) < 0 ||
        (backend = ufg_runtime_backend()) == NULL) {
        return NULL;
    }
    return PyLong_FromLong(backend->pointer_device((const void *)ptr));
}

/* ------------------------------------------------------------------ arrays */

static PyObject *
ufg_empty(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"shape", "dtype", "device", "stream", NULL};
    PyObject *shape_obj, *dtype_obj, *device_obj = NULL, *stream_obj = NULL, *result;
    int64_t shape[UFG_DEVICE_ARRAY_MAX_DIMS];
    const ufg_backend *backend;
    PyArray_Descr *descr;
    uintptr_t stream = 0;
    int ndim, device = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|OO:empty", keywords, &shape_obj,
                                     &dtype_obj, &device_obj, &stream_obj) ||
        ufg_arg_shape(shape_obj, "shape", UFG_DEVICE_ARRAY_MAX_DIMS, shape, &ndim) < 0 ||
        (stream_obj != NULL && PyLong_Check(stream_obj) &&
         ufg_arg_uintptr(stream_obj, "stream", &stream) < 0) ||
        (stream_obj != NULL && !PyLong_Check(stream_obj) &&
         ufg_stream_from_object(stream_obj, &stream) < 0) ||
        (backend = ufg_runtime_backend()) == NULL) {
        return NULL;
    }
    if (device_obj != NULL) {
        if (ufg_arg_device(backend, device_obj, "device", &device) < 0) {
            return NULL;
        }
    }
    else if (ufg_runtime_check_device(backend, 0, "device") < 0) {
        return NULL;
    }
    if (ufg_check_stream_device(backend, stream, device, "stream=", "device= is") < 0 ||
        ufg_dtype_convert(dtype_obj, "dtype", &descr) < 0) {
        return NULL;
    }
    result = (PyObject *)ufg_device_array_empty(ndim, shape, descr, device, stream);
    Py_DECREF(descr);
    if (result != NULL && ufg_stream_owner(stream_obj) != NULL) {
        /* A stream object (ufuncgen's, CuPy's, ...) lives as long as the array may use it. */
        ufg_device_array_used_on((ufg_DeviceArrayObject *)result, stream, stream_obj);
    }
    return result;
}

/* from_pointer's device: given, or where the backend says ptr points. */
static int
ufg_from_pointer_device(const ufg_backend *backend, PyObject *device_obj, uintptr_t ptr,
                        int *device)
{
    if (device_obj != Py_None) {
        return ufg_arg_device(backend, device_obj, "device", device);
    }
    *device = backend->pointer_device((const void *)ptr);
    if (*device < 0) {
        /* Not %p, which prints NULL as "0x(nil)". */
        PyErr_Format(PyExc_ValueError,
                     "ptr: %s is not device memory the %s backend knows; pass device=",
                     ufg_hex(ptr).text, backend->name);
        return -1;
    }
    return 0;
}

/* device= vouches for memory CUDA cannot place (pinned host memory a kernel reads through
 * UVA), not for memory a backend that knows all of its own never allocated: the simulator's
 * kernel would read or write the host there.  An empty view reads nothing. */
static int
ufg_from_pointer_check_allocated(const ufg_backend *backend, uintptr_t ptr, int ndim,
                                 const int64_t *shape)
{
    uintptr_t base;
    size_t size;

    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            return 0;
        }
    }
    if (backend->allocation_of == NULL ||
        backend->allocation_of((const void *)ptr, &base, &size) == 0) {
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "ptr: %s is not device memory: the %s backend allocated "
                 "nothing there", ufg_hex(ptr).text, backend->name);
    return -1;
}

static PyObject *
ufg_from_pointer(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"ptr", "shape", "dtype", "strides", "device", "owner",
                               "readonly", "stream", NULL};
    PyObject *ptr_obj, *shape_obj, *dtype_obj, *strides_obj = Py_None, *device_obj = Py_None;
    PyObject *owner = Py_None, *readonly_obj = Py_False, *stream_obj = NULL, *result;
    int64_t shape[UFG_DEVICE_ARRAY_MAX_DIMS], strides[UFG_DEVICE_ARRAY_MAX_DIMS];
    const ufg_backend *backend;
    PyArray_Descr *descr;
    uintptr_t ptr, stream = 0;
    int ndim, nstrides, device, readonly;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|OOOOO:from_pointer", keywords,
                                     &ptr_obj, &shape_obj, &dtype_obj, &strides_obj,
                                     &device_obj, &owner, &readonly_obj, &stream_obj) ||
        ufg_arg_uintptr(ptr_obj, "ptr", &ptr) < 0 ||
        ufg_arg_shape(shape_obj, "shape", UFG_DEVICE_ARRAY_MAX_DIMS, shape, &ndim) < 0 ||
        ufg_shape_size(ndim, shape, "shape") < 0 ||
        (strides_obj != Py_None &&
         ufg_arg_int64_tuple(strides_obj, "strides", UFG_DEVICE_ARRAY_MAX_DIMS, 0, strides,
                             &nstrides) < 0) ||
        (stream_obj != NULL && ufg_arg_uintptr(stream_obj, "stream", &stream) < 0) ||
        (readonly = PyObject_IsTrue(readonly_obj)) < 0 ||
        (backend = ufg_runtime_backend()) == NULL ||
        ufg_from_pointer_device(backend, device_obj, ptr, &device) < 0) {
        return NULL;
    }
    if (device_obj != Py_None && ufg_from_pointer_check_allocated(backend, ptr, ndim, shape) < 0) {
        return NULL;
    }
    if (strides_obj != Py_None && nstrides != ndim) {
        PyErr_Format(PyExc_ValueError,
                     "strides: expected %d entries (one per dimension of shape), got %d",
                     ndim, nstrides);
        return NULL;
    }
    if (ufg_dtype_convert(dtype_obj, "dtype", &descr) < 0) {
        return NULL;
    }
    if (strides_obj == Py_None) {
        ufg_c_strides(ndim, shape, descr->elsize, strides);
    }
    /* nbytes too, as for device_array: a view of stride 0 spans little, but its size * its
     * itemsize is what nbytes and every copy of it reckon with. */
    if (ufg_strides_span_fits(ndim, shape, strides, PyExc_ValueError,
                              strides_obj != Py_None ? "strides" : "shape") < 0 ||
        ufg_shape_bytes_fit(ndim, shape, (int64_t)descr->elsize, PyExc_ValueError, "shape") < 0 ||
        ufg_view_in_allocation(backend, (const char *)ptr, ndim, shape, strides, descr->elsize,
                               PyExc_ValueError, strides_obj != Py_None ? "strides" : "shape") < 0) {
        Py_DECREF(descr);
        return NULL;
    }
    result = (PyObject *)ufg_device_array_new(
        (char *)ptr, ndim, shape, strides_obj != Py_None ? strides : NULL, descr, device,
        readonly, stream, owner != Py_None ? owner : NULL);
    Py_DECREF(descr);
    return result;
}

/* stream: the consumer's stream as any stream= value (an object is kept alive by the array). */
static PyObject *
ufg_from_dlpack_capsule_function(PyObject *Py_UNUSED(module), PyObject *args,
                                 PyObject *kwargs)
{
    static char *keywords[] = {"", "stream", NULL};
    PyObject *capsule, *stream_obj = Py_None;
    uintptr_t stream;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:from_dlpack_capsule", keywords,
                                     &capsule, &stream_obj) ||
        ufg_stream_from_object(stream_obj, &stream) < 0) {
        return NULL;
    }
    return ufg_from_dlpack_capsule(capsule, stream, ufg_stream_owner(stream_obj));
}

/* ------------------------------------------------------------------ memory copies */

/* nbytes: a non-negative int, at most `limit` (the host buffer's size) unless limit < 0. */
static int
ufg_arg_nbytes(PyObject *obj, Py_ssize_t limit, const char *buffer_name, int64_t *nbytes)
{
    if (ufg_arg_int64(obj, "nbytes", nbytes) < 0) {
        return -1;
    }
    if (*nbytes < 0) {
        PyErr_Format(PyExc_ValueError, "nbytes: expected a non-negative int, got %lld",
                     (long long)*nbytes);
        return -1;
    }
    if (limit >= 0 && *nbytes > limit) {
        PyErr_Format(PyExc_ValueError, "nbytes: %lld is more than the %zd bytes of %s",
                     (long long)*nbytes, limit, buffer_name);
        return -1;
    }
    return 0;
}

/* The part every copy shares: device, stream, the copy with the GIL released. */
static PyObject *
ufg_memcpy_common(PyObject *device_obj, PyObject *stream_obj, void *dst, const void *src,
                  int64_t nbytes, ufg_memcpy_kind kind, const char *what)
{
    const ufg_backend *backend = ufg_runtime_backend();
    uintptr_t stream = 0;
    int device, error;

    if (backend == NULL || ufg_arg_device(backend, device_obj, "device", &device) < 0 ||
        (stream_obj != NULL && ufg_arg_uintptr(stream_obj, "stream", &stream) < 0) ||
        ufg_check_stream_device(backend, stream, device, "stream=", "device= is") < 0) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    error = backend->memcpy(dst, src, (size_t)nbytes, kind, device, (void *)stream);
    Py_END_ALLOW_THREADS
    if (error) {
        return ufg_device_error(backend, error, what);
    }
    Py_RETURN_NONE;
}

static PyObject *
ufg_memcpy_htod(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"dst_ptr", "src", "nbytes", "device", "stream", NULL};
    PyObject *dst_obj, *src_obj, *nbytes_obj, *device_obj, *stream_obj = NULL, *result = NULL;
    Py_buffer view;
    uintptr_t dst;
    int64_t nbytes;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|O:memcpy_htod", keywords, &dst_obj,
                                     &src_obj, &nbytes_obj, &device_obj, &stream_obj) ||
        ufg_arg_uintptr(dst_obj, "dst_ptr", &dst) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(src_obj, &view, PyBUF_C_CONTIGUOUS) < 0) {
        PyErr_Format(PyExc_TypeError,
                     "src: expected a C-contiguous object supporting the buffer protocol, got "
                     "%.100s", Py_TYPE(src_obj)->tp_name);
        return NULL;
    }
    if (ufg_arg_nbytes(nbytes_obj, view.len, "src", &nbytes) == 0) {
        result = ufg_memcpy_common(device_obj, stream_obj, (void *)dst, view.buf, nbytes,
                                   UFG_MEMCPY_HOST_TO_DEVICE, "copying host to device");
    }
    PyBuffer_Release(&view);
    return result;
}

static PyObject *
ufg_memcpy_dtoh(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"dst", "src_ptr", "nbytes", "device", "stream", NULL};
    PyObject *dst_obj, *src_obj, *nbytes_obj, *device_obj, *stream_obj = NULL, *result = NULL;
    Py_buffer view;
    uintptr_t src;
    int64_t nbytes;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|O:memcpy_dtoh", keywords, &dst_obj,
                                     &src_obj, &nbytes_obj, &device_obj, &stream_obj) ||
        ufg_arg_uintptr(src_obj, "src_ptr", &src) < 0) {
        return NULL;
    }
    if (PyObject_GetBuffer(dst_obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyErr_Format(PyExc_TypeError,
                     "dst: expected a writable, C-contiguous object supporting the buffer "
                     "protocol, got %.100s", Py_TYPE(dst_obj)->tp_name);
        return NULL;
    }
    if (ufg_arg_nbytes(nbytes_obj, view.len, "dst", &nbytes) == 0) {
        result = ufg_memcpy_common(device_obj, stream_obj, view.buf, (const void *)src,
                                   nbytes, UFG_MEMCPY_DEVICE_TO_HOST,
                                   "copying device to host");
    }
    PyBuffer_Release(&view);
    return result;
}

static PyObject *
ufg_memcpy_dtod(PyObject *Py_UNUSED(module), PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"dst_ptr", "src_ptr", "nbytes", "device", "stream", NULL};
    PyObject *dst_obj, *src_obj, *nbytes_obj, *device_obj, *stream_obj = NULL;
    uintptr_t dst, src;
    int64_t nbytes;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOO|O:memcpy_dtod", keywords, &dst_obj,
                                     &src_obj, &nbytes_obj, &device_obj, &stream_obj) ||
        ufg_arg_uintptr(dst_obj, "dst_ptr", &dst) < 0 ||
        ufg_arg_uintptr(src_obj, "src_ptr", &src) < 0 ||
        ufg_arg_nbytes(nbytes_obj, -1, NULL, &nbytes) < 0) {
        return NULL;
    }
    return ufg_memcpy_common(device_obj, stream_obj, (void *)dst, (const void *)src, nbytes,
                             UFG_MEMCPY_DEVICE_TO_DEVICE, "copying device to device");
}

/* ------------------------------------------------------------------ the module */

#define UFG_KW METH_VARARGS | METH_KEYWORDS
#define UFG_FN(f) (PyCFunction)(void (*)(void))(f)

/* _kept_count(): foreign arrays kept alive for queued work (keepalive.h). */
static PyObject *
ufg_kept_count_function(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    return PyLong_FromSsize_t(ufg_kept_count());
}

/* _sim_stream_waits(): the (consumer, producer) waits the simulator saw since the last call. */
static PyObject *
ufg_sim_stream_waits(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    uintptr_t waits[UFG_SIM_MAX_WAITS][2];
    const int n = ufg_sim_take_waits(waits);
    PyObject *list = PyList_New(n);

    for (int i = 0; list != NULL && i < n; i++) {
        PyObject *pair = Py_BuildValue("(KK)", (unsigned long long)waits[i][0],
                                       (unsigned long long)waits[i][1]);
        if (pair == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, pair);
    }
    return list;
}

/* _sim_contexts(): the devices whose context the simulated process has created, sorted. */
static PyObject *
ufg_sim_contexts(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    const uint64_t devices = ufg_sim_context_devices();
    PyObject *list = PyList_New(0);

    for (int d = 0; list != NULL && d < 64; d++) {
        PyObject *ordinal = (devices >> d & 1u) ? PyLong_FromLong(d) : NULL;
        if ((devices >> d & 1u) && (ordinal == NULL || PyList_Append(list, ordinal) < 0)) {
            Py_CLEAR(list);
        }
        Py_XDECREF(ordinal);
    }
    return list;
}

static PyMethodDef ufg_device_methods[] = {
    {"backend_name", ufg_backend_name, METH_NOARGS,
     "backend_name()\n--\n\n'cuda' or 'sim', as chosen by UFUNCGEN_DEVICE at first use."},
    {"is_available", ufg_is_available, METH_NOARGS,
     "is_available()\n--\n\nWhether the backend has a device to run on."},
    {"unavailable_reason", ufg_unavailable_reason, METH_NOARGS,
     "unavailable_reason()\n--\n\nWhy is_available() is False, or None."},
    {"device_count", ufg_device_count, METH_NOARGS,
     "device_count()\n--\n\nNumber of devices (0 when the backend is unavailable)."},
    {"current_device", ufg_current_device, METH_NOARGS,
     "current_device()\n--\n\nThe ordinal of the calling thread's current device."},
    {"multiprocessor_count", ufg_multiprocessor_count, METH_O,
     "multiprocessor_count(device, /)\n--\n\nStreaming multiprocessors of the device."},
    {"synchronize", UFG_FN(ufg_synchronize), UFG_KW,
     "synchronize(stream=None, device=None)\n--\n\n"
     "Wait for the stream's work (on `device`, default current, for the default streams); "
     "with neither given, for all work on every device."},
    {"stream_create", UFG_FN(ufg_stream_create), UFG_KW,
     "stream_create(device=None, non_blocking=False)\n--\n\nA new stream's handle "
     "(non_blocking: not ordered with the legacy default stream)."},
    {"stream_destroy", ufg_stream_destroy, METH_O,
     "stream_destroy(handle, /)\n--\n\nDestroy a stream made by stream_create."},
    {"stream_wait", UFG_FN(ufg_stream_wait), UFG_KW,
     "stream_wait(consumer, producer, device=None)\n--\n\n"
     "Make work queued on `consumer` after this call wait for the work queued on `producer` "
     "so far (`device`: the producer's, default current)."},
    {"pointer_device", ufg_pointer_device, METH_O,
     "pointer_device(ptr, /)\n--\n\nThe device ordinal ptr points into, or -1 for host "
     "memory."},
    {"empty", UFG_FN(ufg_empty), UFG_KW,
     "empty(shape, dtype, device=0, stream=0)\n--\n\n"
     "A new, uninitialised C-contiguous DeviceArray, allocated stream-ordered."},
    {"from_pointer", UFG_FN(ufg_from_pointer), UFG_KW,
     "from_pointer(ptr, shape, dtype, strides=None, device=None, owner=None, readonly=False, "
     "stream=0)\n--\n\n"
     "A DeviceArray viewing memory it does not own (strides in bytes; None: C-contiguous; "
     "device None: ask the backend where ptr points); `owner` is kept alive."},
    {"from_dlpack_capsule", UFG_FN(ufg_from_dlpack_capsule_function), UFG_KW,
     "from_dlpack_capsule(capsule, /, stream=None)\n--\n\n"
     "A DeviceArray viewing a \"dltensor\" or \"dltensor_versioned\" capsule's CUDA tensor, "
     "last used on `stream` (the consumer's stream the capsule was asked for)."},
    {"memcpy_htod", UFG_FN(ufg_memcpy_htod), UFG_KW,
     "memcpy_htod(dst_ptr, src, nbytes, device, stream=0)\n--\n\n"
     "Copy nbytes from a C-contiguous host buffer to device memory."},
    {"memcpy_dtoh", UFG_FN(ufg_memcpy_dtoh), UFG_KW,
     "memcpy_dtoh(dst, src_ptr, nbytes, device, stream=0)\n--\n\n"
     "Copy nbytes from device memory into a writable host buffer, and wait for it."},
    {"memcpy_dtod", UFG_FN(ufg_memcpy_dtod), UFG_KW,
     "memcpy_dtod(dst_ptr, src_ptr, nbytes, device, stream=0)\n--\n\n"
     "Copy nbytes between device allocations."},
    {"launch_cast", UFG_FN(ufg_launch_cast_entry), METH_FASTCALL,
     "launch_cast(device, stream, shape, src_ptr, src_strides, src_dtype, dst_ptr, "
     "dst_strides, dst_dtype, /)\n--\n\n"
     "Convert an N-d strided device array into another (C conversions; to bool: != 0)."},
    {"is_device_object", ufg_public_is_device_object, METH_O,
     "is_device_object(obj)\n--\n\nWhether obj holds CUDA memory (DeviceArray, "
     "__cuda_array_interface__, DLPack on a CUDA device)."},
    {"stream_handle", ufg_public_stream_handle, METH_O,
     "stream_handle(stream)\n--\n\nThe cudaStream_t of a stream= value."},
    {"check_dlpack_device", UFG_FN(ufg_public_check_dlpack_device), METH_FASTCALL,
     "check_dlpack_device(obj, what)\n--\n\nBufferError unless obj's __dlpack_device__() "
     "is a CUDA device (kDLCUDA or kDLCUDAManaged); `what` names obj."},
    {"as_device_array", UFG_FN(ufg_public_as_device_array), METH_FASTCALL,
     "as_device_array(obj, what)\n--\n\nA DeviceArray viewing any CUDA array (no copy)."},
    {"_sim_stream_waits", ufg_sim_stream_waits, METH_NOARGS,
     "_sim_stream_waits()\n--\n\n"
     "Test hook (simulator): the (consumer, producer) stream waits since the last call."},
    {"_sim_contexts", ufg_sim_contexts, METH_NOARGS,
     "_sim_contexts()\n--\n\n"
     "Test hook (simulator): the devices whose primary context the process has created, "
     "which making a device current does (as CUDA 12's cudaSetDevice)."},
    {"launch_count", ufg_launch_count_function, METH_NOARGS,
     "launch_count()\n--\n\n"
     "Kernel launches made by the calling thread so far (skipped ones included)."},
    {"last_launch", ufg_last_launch_function, METH_NOARGS,
     "last_launch()\n--\n\n"
     "The calling thread's last kernel launch as a dict: kind ('elementwise', 'reduce' or "
     "'cast'), shape (the collapsed shape; a reduction's kept dimensions), reduce_shape, "
     "grid, block, device, stream (the handle it was queued on, 0 the legacy default "
     "stream), ran (False when the simulator skipped the kernel); None before "
     "the first."},
    {"sim_set_skip_kernels", ufg_sim_set_skip_kernels_function, METH_O,
     "sim_set_skip_kernels(skip, /)\n--\n\n"
     "Simulator only: whether launches skip running their kernels from now on (everything "
     "else about a launch still happens), to measure dispatch cost; returns the previous "
     "setting.  UFUNCGEN_SIM_SKIP_KERNELS=1 sets it at startup."},
    {"_kept_count", ufg_kept_count_function, METH_NOARGS,
     "_kept_count()\n--\n\n"
     "How many foreign arrays are kept alive until the streams they were used on pass."},
    {"_forget_stream_sources", ufg_forget_stream_sources, METH_NOARGS,
     "_forget_stream_sources()\n--\n\n"
     "Forget the stream sources asked so far (ufuncgen.device.register_stream_source)."},
    {"sim_stall", UFG_FN(ufg_sim_stall_function), UFG_KW,
     "sim_stall(stream, seconds, device=None)\n--\n\n"
     "Simulator only: work queued on `stream` after this starts no earlier than `seconds` "
     "from now, as behind a long GPU kernel (a late producer, for stream-ordering tests)."},
    {"sim_is_async", ufg_sim_is_async_function, METH_NOARGS,
     "sim_is_async()\n--\n\n"
     "Simulator only: whether streams run asynchronously (False under UFUNCGEN_SIM_SYNC=1)."},
    {"_sim_stream_count", ufg_sim_stream_count_function, METH_NOARGS,
     "_sim_stream_count()\n--\n\n"
     "Test hook (simulator only): how many streams it made are still in its table (a "
     "destroyed one leaves once its queued work has run and nothing names it)."},
    {"_sim_inject_error", ufg_sim_inject_error_function, METH_O,
     "_sim_inject_error(name, /)\n--\n\n"
     "Test hook (simulator only): the next launch fails with the named CUDA error."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(ufg_device_doc,
"The device runtime of ufuncgen: DeviceArray, memory, streams and kernel launches, on the\n"
"CUDA backend or the host simulator (UFUNCGEN_DEVICE=sim).  The public API is\n"
"ufuncgen.device; this module is its implementation.");

static struct PyModuleDef ufg_device_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ufuncgen._device",
    .m_doc = ufg_device_doc,
    .m_size = -1,
    .m_methods = ufg_device_methods,
};

/* The kernel contract's limits, for the Python layer to check against before launching. */
static int
ufg_device_add_constants(PyObject *module)
{
    PyObject *dtypes;

    if (PyModule_AddIntConstant(module, "MAX_DIMS", UFG_DEVICE_MAX_DIMS) < 0 ||
        PyModule_AddIntConstant(module, "MAX_ARGS", UFG_DEVICE_MAX_ARGS) < 0 ||
        PyModule_AddIntConstant(module, "MAX_CORE_DIMS", UFG_DEVICE_MAX_CORE_DIMS) < 0 ||
        PyModule_AddIntConstant(module, "MAX_CORE_STRIDES", UFG_DEVICE_MAX_CORE_STRIDES) < 0 ||
        PyModule_AddIntConstant(module, "BLOCK", UFG_DEVICE_BLOCK) < 0) {
        return -1;
    }
    /* The element types device arrays hold, named in the generator's order. */
    dtypes = ufg_dtype_supported_names();
    if (dtypes == NULL || PyModule_AddObjectRef(module, "SUPPORTED_DTYPES", dtypes) < 0) {
        Py_XDECREF(dtypes);
        return -1;
    }
    Py_DECREF(dtypes);
#ifdef UFG_HAVE_CUDA
    return PyModule_AddObjectRef(module, "BUILT_WITH_CUDA", Py_True);
#else
    return PyModule_AddObjectRef(module, "BUILT_WITH_CUDA", Py_False);
#endif
}

PyMODINIT_FUNC
PyInit__device(void)
{
    PyObject *module;

    if (PyArray_ImportNumPyAPI() < 0) {
        return NULL;
    }
    module = PyModule_Create(&ufg_device_module);
    if (module == NULL) {
        return NULL;
    }
    if (ufg_runtime_init(module) < 0 || ufg_device_array_register(module) < 0 ||
        ufg_owned_stream_register(module) < 0 ||
        ufg_device_add_constants(module) < 0 || ufg_call_api_register(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
