/*
 * DLPack in both directions: DeviceArray.__dlpack__ / __dlpack_device__ (export) and
 * from_dlpack_capsule (import), following the Python specification of the protocol
 * (https://dmlc.github.io/dlpack/latest/python_spec.html).
 */
#include "dlpack_import.h"

#include <string.h>

#include "args.h"
#include "dtypes.h"
#include "runtime.h"
#include "stream_device.h"

/* DLPack's stream numbers for CUDA: None means the legacy default stream, -1 "do not
 * synchronize", 0 is forbidden as ambiguous. */
#define UFG_DLPACK_LEGACY_STREAM 1
#define UFG_DLPACK_NO_SYNC (-1)

/* ------------------------------------------------------------------ export */

/* One allocation per export: the managed tensor (either flavour), the array it keeps alive,
 * and the shape and strides (in elements) the tensor points to. */
typedef struct {
    DLManagedTensorVersioned versioned;
    DLManagedTensor legacy;
    PyObject *array;
    int64_t dims[];             /* ndim sizes, then ndim strides */
} ufg_dlpack_export;

/* Drops the export's reference to its array.  Consumers may call deleters from any thread,
 * so the GIL is taken; after interpreter shutdown there is nothing left to release. */
static void
ufg_dlpack_export_free(ufg_dlpack_export *export)
{
    if (Py_IsInitialized()) {
        PyGILState_STATE state = PyGILState_Ensure();
        Py_XDECREF(export->array);
        PyGILState_Release(state);
    }
    PyMem_RawFree(export);
}

static void
ufg_dlpack_versioned_deleter(DLManagedTensorVersioned *tensor)
{
    ufg_dlpack_export_free(tensor->manager_ctx);
}

static void
ufg_dlpack_legacy_deleter(DLManagedTensor *tensor)
{
    ufg_dlpack_export_free(tensor->manager_ctx);
}

/* Whether a managed tensor is one ufg_dlpack_export_capsule made. */
static int
ufg_dlpack_is_own_export(const void *managed, int versioned)
{
    return versioned
        ? ((const DLManagedTensorVersioned *)managed)->deleter == ufg_dlpack_versioned_deleter
        : ((const DLManagedTensor *)managed)->deleter == ufg_dlpack_legacy_deleter;
}

/* A capsule nobody consumed still owns its tensor; a consumed one was renamed "used_...". */
static void
ufg_dlpack_capsule_destructor(PyObject *capsule)
{
    PyObject *type, *value, *traceback;

    PyErr_Fetch(&type, &value, &traceback);
    if (PyCapsule_IsValid(capsule, UFG_DLPACK_VERSIONED_CAPSULE)) {
        DLManagedTensorVersioned *tensor =
            PyCapsule_GetPointer(capsule, UFG_DLPACK_VERSIONED_CAPSULE);
        if (tensor->deleter != NULL) {
            tensor->deleter(tensor);
        }
    }
    else if (PyCapsule_IsValid(capsule, UFG_DLPACK_CAPSULE)) {
        DLManagedTensor *tensor = PyCapsule_GetPointer(capsule, UFG_DLPACK_CAPSULE);
        if (tensor->deleter != NULL) {
            tensor->deleter(tensor);
        }
    }
    PyErr_Restore(type, value, traceback);
}

/* Fills the DLTensor both flavours share; -1 with BufferError if a stride that is ever
 * stepped is not a whole number of elements (DLPack counts strides in elements).  A size-1
 * dimension's stride, and every stride of an empty array, is never stepped: it is exported
 * as the C-contiguous one, as NumPy's __dlpack__ does. */
static int
ufg_dlpack_fill_tensor(ufg_DeviceArrayObject *array, ufg_dlpack_export *export,
                       DLTensor *tensor)
{
    const int64_t itemsize = (int64_t)array->dtype->elsize;
    int64_t *shape = export->dims, *strides = export->dims + array->ndim;
    int64_t contiguous[UFG_DEVICE_ARRAY_MAX_DIMS];
    int empty = 0;

    ufg_c_strides(array->ndim, array->shape, itemsize, contiguous);
    for (int d = 0; d < array->ndim; d++) {
        empty |= array->shape[d] == 0;
    }
    for (int d = 0; d < array->ndim; d++) {
        if (empty || array->shape[d] == 1) {
            shape[d] = array->shape[d];
            strides[d] = contiguous[d] / itemsize;
            continue;
        }
        if (array->strides[d] % itemsize != 0) {
            PyErr_Format(PyExc_BufferError,
                         "__dlpack__: stride %lld of dimension %d is not a multiple of the "
                         "item size %lld, which DLPack cannot express",
                         (long long)array->strides[d], d, (long long)itemsize);
            return -1;
        }
        shape[d] = array->shape[d];
        strides[d] = array->strides[d] / itemsize;
    }
    tensor->data = array->ptr;
    tensor->device.device_type = kDLCUDA;
    tensor->device.device_id = array->device;
    tensor->ndim = array->ndim;
    tensor->dtype = ufg_dtype_to_dlpack(array->code);
    tensor->shape = shape;
    tensor->strides = strides;      /* always given: DLPack >= 1.2 no longer allows NULL */
    tensor->byte_offset = 0;
    return 0;
}

/* The capsule for `array` (which it keeps alive), versioned or not. */
static PyObject *
ufg_dlpack_export_capsule(ufg_DeviceArrayObject *array, int versioned, int copied)
{
    ufg_dlpack_export *export;
    PyObject *capsule;

    export = PyMem_RawCalloc(1, sizeof(*export) + sizeof(int64_t) * 2 * (size_t)array->ndim);
    if (export == NULL) {
        return PyErr_NoMemory();
    }
    if (ufg_dlpack_fill_tensor(array, export, versioned ? &export->versioned.dl_tensor
                                                        : &export->legacy.dl_tensor) < 0) {
        PyMem_RawFree(export);
        return NULL;
    }
    export->array = Py_NewRef((PyObject *)array);
    if (versioned) {
        export->versioned.version.major = UFG_DLPACK_MAJOR_VERSION;
        export->versioned.version.minor = UFG_DLPACK_MINOR_VERSION;
        export->versioned.manager_ctx = export;
        export->versioned.deleter = ufg_dlpack_versioned_deleter;
        export->versioned.flags = (array->readonly ? UFG_DLPACK_FLAG_READ_ONLY : 0) |
                                  (copied ? UFG_DLPACK_FLAG_IS_COPIED : 0);
        capsule = PyCapsule_New(&export->versioned, UFG_DLPACK_VERSIONED_CAPSULE,
                                ufg_dlpack_capsule_destructor);
    }
    else {
        export->legacy.manager_ctx = export;
        export->legacy.deleter = ufg_dlpack_legacy_deleter;
        capsule = PyCapsule_New(&export->legacy, UFG_DLPACK_CAPSULE,
                                ufg_dlpack_capsule_destructor);
    }
    if (capsule == NULL) {
        ufg_dlpack_export_free(export);
    }
    return capsule;
}

/* max_version: None or (major, minor); returns 1 when the consumer takes versioned capsules. */
static int
ufg_dlpack_parse_max_version(PyObject *max_version)
{
    int64_t major;

    if (max_version == Py_None) {
        return 0;
    }
    if (!PyTuple_Check(max_version) || PyTuple_GET_SIZE(max_version) != 2) {
        PyErr_Format(PyExc_TypeError,
                     "__dlpack__: max_version: expected None or a (major, minor) tuple, "
                     "got %R", max_version);
        return -1;
    }
    if (ufg_arg_int64(PyTuple_GET_ITEM(max_version, 0), "__dlpack__: max_version[0]",
                      &major) < 0) {
        return -1;
    }
    return major >= 1;
}

/* dl_device: None or (device_type, device_id), which must be where the array is. */
static int
ufg_dlpack_check_device(ufg_DeviceArrayObject *array, PyObject *dl_device)
{
    int64_t type, id;

    if (dl_device == Py_None) {
        return 0;
    }
    if (!PyTuple_Check(dl_device) || PyTuple_GET_SIZE(dl_device) != 2) {
        PyErr_Format(PyExc_TypeError,
                     "__dlpack__: dl_device: expected None or a (device_type, device_id) "
                     "tuple, got %R", dl_device);
        return -1;
    }
    if (ufg_arg_int64(PyTuple_GET_ITEM(dl_device, 0), "__dlpack__: dl_device[0]", &type) < 0 ||
        ufg_arg_int64(PyTuple_GET_ITEM(dl_device, 1), "__dlpack__: dl_device[1]", &id) < 0) {
        return -1;
    }
    if (type != kDLCUDA || id != array->device) {
        PyErr_Format(PyExc_BufferError,
                     "__dlpack__: cannot export to dl_device (%lld, %lld): the array is on "
                     "(%d, %d) (kDLCUDA, device %d) and is never copied between devices",
                     (long long)type, (long long)id, kDLCUDA, array->device, array->device);
        return -1;
    }
    return 0;
}

/* Makes the consumer's stream wait for the array's, as the protocol asks of a producer. */
static int
ufg_dlpack_synchronize(ufg_DeviceArrayObject *array, PyObject *stream_arg)
{
    const ufg_backend *backend;
    int64_t stream = UFG_DLPACK_LEGACY_STREAM;
    uintptr_t producer = ufg_device_array_last_use(array);     /* the memory's, a view's too */
    int error;

    if (stream_arg != Py_None && ufg_arg_int64(stream_arg, "__dlpack__: stream", &stream) < 0) {
        return -1;
    }
    if (stream == UFG_DLPACK_NO_SYNC) {
        return 0;
    }
    if (stream == 0 || stream < UFG_DLPACK_NO_SYNC) {
        PyErr_Format(PyExc_ValueError,
                     "__dlpack__: stream: expected None, -1, 1 (legacy default stream), 2 "
                     "(per-thread default stream) or a stream handle; got %lld (0 is "
                     "ambiguous and not allowed for CUDA)", (long long)stream);
        return -1;
    }
    /* Our handle 0 is the legacy default stream. */
    if ((uintptr_t)stream == producer ||
        (producer == 0 && stream == UFG_DLPACK_LEGACY_STREAM)) {
        return 0;
    }
    backend = ufg_runtime_backend();
    if (backend == NULL) {
        return -1;
    }
    error = backend->stream_wait((void *)(uintptr_t)stream, (void *)producer, array->device);
    return error ? ufg_device_error_int(backend, error, "__dlpack__ (ordering streams)") : 0;
}

PyObject *
ufg_device_array_dlpack(ufg_DeviceArrayObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_device = Py_None;
    PyObject *copy = Py_None, *capsule;
    ufg_DeviceArrayObject *source;
    int versioned, copied;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO:__dlpack__", keywords, &stream,
                                     &max_version, &dl_device, &copy)) {
        return NULL;
    }
    versioned = ufg_dlpack_parse_max_version(max_version);
    if (versioned < 0 || ufg_dlpack_check_device(self, dl_device) < 0) {
        return NULL;
    }
    copied = copy == Py_None ? 0 : PyObject_IsTrue(copy);
    if (copied < 0) {
        return NULL;
    }
    if (self->readonly && !versioned && !copied) {
        PyErr_SetString(PyExc_BufferError,
                        "__dlpack__: the array is read-only, which only versioned DLPack "
                        "(max_version >= (1, 0)) can signal");
        return NULL;
    }
    /* copy=True: a fresh, writable C-contiguous copy made on the array's stream. */
    source = copied ? ufg_device_array_contiguous_copy(self, self->stream, self->stream_keeper)
                    : (ufg_DeviceArrayObject *)Py_NewRef(self);
    if (source == NULL) {
        return NULL;
    }
    if (ufg_dlpack_synchronize(source, stream) < 0) {
        Py_DECREF(source);
        return NULL;
    }
    capsule = ufg_dlpack_export_capsule(source, versioned, copied);
    Py_DECREF(source);
    return capsule;
}

PyObject *
ufg_device_array_dlpack_device(ufg_DeviceArrayObject *self, PyObject *Py_UNUSED(unused))
{
    return Py_BuildValue("(ii)", kDLCUDA, self->device);
}

/* ------------------------------------------------------------------ import */

/* The holder of a consumed tensor, an imported array's owner: a private capsule whose
 * destructor runs the producer's deleter.  An object, so that the array can hand it to the
 * keep-alive list when it dies and the deleter runs once the array's last stream has passed
 * its work (device_array_release.c).  Its context says which flavour the tensor is. */
#define UFG_DLPACK_HOLDER_CAPSULE "ufuncgen._device.dlpack_tensor"
static int ufg_dlpack_legacy_flavour, ufg_dlpack_versioned_flavour;

/* The deleter may be Python (a ctypes callback, a producer written in Python), which must not
 * run with an exception set: a failed call drops its imports while its error propagates. */
static void
ufg_dlpack_holder_destructor(PyObject *holder)
{
    void *managed = PyCapsule_GetPointer(holder, UFG_DLPACK_HOLDER_CAPSULE);
    const int versioned = PyCapsule_GetContext(holder) == &ufg_dlpack_versioned_flavour;
    PyObject *type, *value, *traceback;

    PyErr_Fetch(&type, &value, &traceback);
    if (versioned) {
        DLManagedTensorVersioned *tensor = managed;
        if (tensor->deleter != NULL) {
            tensor->deleter(tensor);
        }
    }
    else {
        DLManagedTensor *tensor = managed;
        if (tensor->deleter != NULL) {
            tensor->deleter(tensor);
        }
    }
    PyErr_Restore(type, value, traceback);
}

/* The holder of `managed`, which runs no deleter until ufg_dlpack_holder_arm: until the
 * producer's capsule is renamed, its own destructor still owns the tensor. */
static PyObject *
ufg_dlpack_holder_new(void *managed, int versioned)
{
    PyObject *holder = PyCapsule_New(managed, UFG_DLPACK_HOLDER_CAPSULE, NULL);

    if (holder != NULL &&
        PyCapsule_SetContext(holder, versioned ? &ufg_dlpack_versioned_flavour
                                               : &ufg_dlpack_legacy_flavour) < 0) {
        Py_CLEAR(holder);
    }
    return holder;
}

static int
ufg_dlpack_holder_arm(PyObject *holder)
{
    return PyCapsule_SetDestructor(holder, ufg_dlpack_holder_destructor);
}

static const char *
ufg_dlpack_device_name(int32_t type)
{
    switch (type) {
    case kDLCPU: return "kDLCPU";
    case kDLCUDA: return "kDLCUDA";
    case kDLCUDAHost: return "kDLCUDAHost";
    case kDLOpenCL: return "kDLOpenCL";
    case kDLVulkan: return "kDLVulkan";
    case kDLMetal: return "kDLMetal";
    case kDLVPI: return "kDLVPI";
    case kDLROCM: return "kDLROCM";
    case kDLROCMHost: return "kDLROCMHost";
    case kDLExtDev: return "kDLExtDev";
    case kDLCUDAManaged: return "kDLCUDAManaged";
    case kDLOneAPI: return "kDLOneAPI";
    case kDLWebGPU: return "kDLWebGPU";
    case kDLHexagon: return "kDLHexagon";
    default: return "unknown";
    }
}

/* The BufferError for memory on a DLPack device kernels cannot read. */
static int
ufg_dlpack_refuse_device(const char *context, long long type, long long id)
{
    PyErr_Format(PyExc_BufferError,
                 "%s: the tensor is on DLPack device type %lld (%s), device %lld; device "
                 "arrays take kDLCUDA (2) or kDLCUDAManaged (13) memory%s", context, type,
                 ufg_dlpack_device_name((int32_t)type), id,
                 type == kDLCPU ? " (copy host data with ufuncgen.device.to_device)" : "");
    return -1;
}

/* The tensor's device: CUDA memory, on a device the backend has. */
static int
ufg_dlpack_read_device(const DLTensor *tensor, const char *context)
{
    const ufg_backend *backend;
    int count;

    if (tensor->device.device_type != kDLCUDA && tensor->device.device_type != kDLCUDAManaged) {
        return ufg_dlpack_refuse_device(context, tensor->device.device_type,
                                        tensor->device.device_id);
    }
    if ((backend = ufg_runtime_backend()) == NULL ||
        (count = ufg_runtime_device_count(backend)) < 0) {
        return -1;
    }
    if (tensor->device.device_id < 0 || tensor->device.device_id >= count) {
        PyErr_Format(PyExc_BufferError,
                     "%s: the tensor is on CUDA device %d, but the %s backend has device%s 0 "
                     "to %d", context, (int)tensor->device.device_id, backend->name,
                     count == 1 ? "" : "s", count - 1);
        return -1;
    }
    return 0;
}

/* ndim and the sizes (into shape[]); *size: the element count, within 2**63 bytes. */
static int
ufg_dlpack_read_shape(const DLTensor *tensor, const char *context, int64_t itemsize,
                      int64_t *shape, int64_t *size)
{
    if (tensor->ndim < 0 || tensor->ndim > UFG_DEVICE_ARRAY_MAX_DIMS) {
        PyErr_Format(PyExc_BufferError, "%s: ndim must be 0 to %d, got %d", context,
                     UFG_DEVICE_ARRAY_MAX_DIMS, (int)tensor->ndim);
        return -1;
    }
    if (tensor->ndim > 0 && tensor->shape == NULL) {
        PyErr_Format(PyExc_BufferError, "%s: the tensor has %d dimensions but no shape",
                     context, (int)tensor->ndim);
        return -1;
    }
    *size = 1;
    for (int d = 0; d < tensor->ndim; d++) {
        shape[d] = tensor->shape[d];
        if (shape[d] < 0) {
            PyErr_Format(PyExc_BufferError, "%s: dimension %d has negative size %lld",
                         context, d, (long long)shape[d]);
            return -1;
        }
        *size = *size > 0 && shape[d] > INT64_MAX / itemsize / *size ? -1 : *size * shape[d];
        if (*size < 0) {
            PyErr_Format(PyExc_BufferError, "%s: the shape has more than 2**63 bytes of "
                         "elements", context);
            return -1;
        }
    }
    return 0;
}

/* The consumer's stream is one of the tensor's device (stream_device.h). */
static int
ufg_dlpack_check_stream(uintptr_t stream, int device)
{
    const ufg_backend *backend = ufg_runtime_backend();

    return backend == NULL ? -1
        : ufg_check_stream_device(backend, stream, device, "from_dlpack_capsule: stream=",
                                  "the tensor is on");
}

/* The strides in bytes (DLPack counts elements; NULL means C-contiguous), each within
 * int64, and the elements' span too: byte offsets must not wrap.  An empty tensor's strides
 * address nothing: it gets C-contiguous ones, whatever it says. */
static int
ufg_dlpack_read_strides(const DLTensor *tensor, const char *context, int64_t itemsize,
                        const int64_t *shape, int64_t size, int64_t *strides)
{
    if (tensor->strides == NULL || size == 0) {
        ufg_c_strides(tensor->ndim, shape, itemsize, strides);
        return 0;
    }
    for (int d = 0; d < tensor->ndim; d++) {
        const int64_t stride = tensor->strides[d];
        if (stride < -(INT64_MAX / itemsize) || stride > INT64_MAX / itemsize) {
            PyErr_Format(PyExc_BufferError, "%s: stride %lld of dimension %d, times the item "
                         "size %lld, does not fit in 64 bits", context, (long long)stride, d,
                         (long long)itemsize);
            return -1;
        }
        strides[d] = stride * itemsize;
    }
    return ufg_strides_span_fits(tensor->ndim, shape, strides, PyExc_BufferError, context);
}

/* The first element's address: data + byte_offset, not wrapping, and device memory unless
 * the tensor is empty (the CUDA array interface's rule for its pointer). */
static int
ufg_dlpack_read_data(const DLTensor *tensor, const char *context, int64_t size, char **ptr)
{
    const uintptr_t data = (uintptr_t)tensor->data;
    const ufg_backend *backend;

    if (data == 0 && size > 0) {
        PyErr_Format(PyExc_BufferError, "%s: the tensor's data is a null pointer for a "
                     "non-empty tensor", context);
        return -1;
    }
    if (tensor->byte_offset > (uint64_t)(UINTPTR_MAX - data) ||
        tensor->byte_offset > (uint64_t)INT64_MAX) {
        PyErr_Format(PyExc_BufferError, "%s: byte_offset %llu past the data pointer %s "
                     "leaves the address space", context,
                     (unsigned long long)tensor->byte_offset, ufg_hex(data).text);
        return -1;
    }
    *ptr = (char *)(data + (uintptr_t)tensor->byte_offset);
    if (size > 0 && ((backend = ufg_runtime_backend()) == NULL ||
                     backend->pointer_device(*ptr) < 0)) {
        if (backend != NULL) {
            PyErr_Format(PyExc_BufferError, "%s: the tensor's data %s is not device "
                         "memory", context, ufg_hex((uintptr_t)*ptr).text);
        }
        return -1;
    }
    return 0;
}

/* Checks a producer's tensor as thoroughly as the CUDA array interface's dict is checked
 * (operands.c): a tensor that fails is refused here, never read by a kernel.  shape/strides
 * (bytes) hold ndim entries; *ptr is the first element. */
static int
ufg_dlpack_read_tensor(const DLTensor *tensor, int64_t *shape, int64_t *strides,
                       int *code, char **ptr)
{
    const char *context = "from_dlpack_capsule";
    int64_t itemsize, size;

    if (ufg_dlpack_read_device(tensor, context) < 0) {
        return -1;
    }
    *code = ufg_dtype_from_dlpack(tensor->dtype, context);
    if (*code < 0) {
        return -1;
    }
    itemsize = tensor->dtype.bits / 8;     /* a whole number of bytes: the dtype checked it */
    if (ufg_dlpack_read_shape(tensor, context, itemsize, shape, &size) < 0 ||
        ufg_dlpack_read_strides(tensor, context, itemsize, shape, size, strides) < 0) {
        return -1;
    }
    if (ufg_dlpack_read_data(tensor, context, size, ptr) < 0) {
        return -1;
    }
    return size > 0 ? ufg_view_in_allocation(ufg_runtime_backend(), *ptr, tensor->ndim, shape,
                                             strides, itemsize, PyExc_BufferError, context)
                    : 0;
}

int
ufg_dlpack_check_producer_device(PyObject *obj, const char *what)
{
    PyObject *device = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    long long type, id;
    int type_overflow, id_overflow;

    if (device == NULL) {
        return -1;
    }
    if (!PyTuple_Check(device) || PyTuple_GET_SIZE(device) != 2 ||
        !PyLong_Check(PyTuple_GET_ITEM(device, 0)) || !PyLong_Check(PyTuple_GET_ITEM(device, 1))) {
        PyErr_Format(PyExc_TypeError, "%s: __dlpack_device__() must return a (device_type, "
                     "device_id) tuple of ints, not %R", what, device);
        Py_DECREF(device);
        return -1;
    }
    type = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(device, 0), &type_overflow);
    id = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(device, 1), &id_overflow);
    if (type_overflow != 0 || id_overflow != 0) {
        PyErr_Format(PyExc_TypeError, "%s: __dlpack_device__() must return a (device_type, "
                     "device_id) tuple of ints of 64 bits, not %R", what, device);
    }
    Py_DECREF(device);
    if (PyErr_Occurred()) {
        return -1;
    }
    return type == kDLCUDA || type == kDLCUDAManaged ? 0
                                                     : ufg_dlpack_refuse_device(what, type, id);
}

PyObject *
ufg_from_dlpack_capsule(PyObject *capsule, uintptr_t stream, PyObject *keeper)
{
    int64_t shape[UFG_DEVICE_ARRAY_MAX_DIMS], strides[UFG_DEVICE_ARRAY_MAX_DIMS];
    const char *name = PyCapsule_CheckExact(capsule) ? PyCapsule_GetName(capsule) : NULL;
    const int versioned = name != NULL && strcmp(name, UFG_DLPACK_VERSIONED_CAPSULE) == 0;
    void *managed;
    const DLTensor *tensor;
    ufg_DeviceArrayObject *array;
    PyArray_Descr *descr;
    ufg_dlpack_export *own;
    PyObject *owner;
    char *ptr;
    int code, readonly = 0;

    if (!PyCapsule_CheckExact(capsule)) {
        PyErr_Format(PyExc_TypeError,
                     "from_dlpack_capsule: expected a DLPack capsule (from __dlpack__()), got "
                     "%.100s", Py_TYPE(capsule)->tp_name);
        return NULL;
    }
    PyErr_Clear();      /* a nameless capsule makes PyCapsule_GetName raise */
    if (!versioned && (name == NULL || strcmp(name, UFG_DLPACK_CAPSULE) != 0)) {
        PyErr_Format(PyExc_ValueError,
                     "from_dlpack_capsule: expected a capsule named \"%s\" or \"%s\", got "
                     "\"%s\"%s", UFG_DLPACK_CAPSULE, UFG_DLPACK_VERSIONED_CAPSULE,
                     name != NULL ? name : "(no name)",
                     name != NULL && strncmp(name, "used_", 5) == 0
                         ? " (it was consumed already: a capsule can be imported once)" : "");
        return NULL;
    }
    managed = PyCapsule_GetPointer(capsule, name);
    if (managed == NULL) {
        return NULL;
    }
    if (versioned) {
        const DLManagedTensorVersioned *v = managed;
        if (v->version.major > UFG_DLPACK_MAJOR_VERSION) {
            PyErr_Format(PyExc_BufferError,
                         "from_dlpack_capsule: DLPack version %u.%u is newer than the %d.x "
                         "this runtime reads", (unsigned)v->version.major,
                         (unsigned)v->version.minor, UFG_DLPACK_MAJOR_VERSION);
            return NULL;
        }
        tensor = &v->dl_tensor;
        readonly = (v->flags & UFG_DLPACK_FLAG_READ_ONLY) != 0;
    }
    else {
        tensor = &((const DLManagedTensor *)managed)->dl_tensor;
    }
    if (ufg_dlpack_read_tensor(tensor, shape, strides, &code, &ptr) < 0 ||
        ufg_dlpack_check_stream(stream, tensor->device.device_id) < 0) {
        return NULL;
    }
    descr = ufg_dtype_descr((ufg_dtype_code)code);
    if (descr == NULL) {
        return NULL;
    }
    /* A capsule ufuncgen exported: the view's owner is the exported DeviceArray itself, so
     * that their uses order with each other as a view's and its array's do (a holder would
     * hide it), and the export is let go at once.  Any other's holder runs its deleter. */
    own = ufg_dlpack_is_own_export(managed, versioned)
        ? (versioned ? ((DLManagedTensorVersioned *)managed)->manager_ctx
                     : ((DLManagedTensor *)managed)->manager_ctx)
        : NULL;
    owner = own != NULL ? Py_NewRef(own->array) : ufg_dlpack_holder_new(managed, versioned);
    /* The producer ordered the tensor before the consumer's stream: its last use so far. */
    array = owner == NULL ? NULL
        : ufg_device_array_new(ptr, tensor->ndim, shape, strides, descr,
                               tensor->device.device_id, readonly, stream, owner);
    Py_DECREF(descr);
    /* From here the owner lets the tensor go; the renamed capsule's destructor leaves it. */
    if (array == NULL ||
        PyCapsule_SetName(capsule, versioned ? UFG_DLPACK_USED_VERSIONED_CAPSULE
                                             : UFG_DLPACK_USED_CAPSULE) < 0) {
        Py_XDECREF(array);
        Py_XDECREF(owner);
        return NULL;
    }
    Py_DECREF(owner);       /* the array holds it */
    if (own != NULL) {
        ufg_dlpack_export_free(own);
    }
    else if (ufg_dlpack_holder_arm(owner) < 0) {
        Py_DECREF(array);
        return NULL;
    }
    if (keeper != NULL) {
        ufg_device_array_used_on(array, stream, keeper);
    }
    return (PyObject *)array;
}
