/*
 * The DeviceArray type: construction, lifetime (ownership, owner, DLPack deleter), attributes
 * and the refusals (__array__) that keep device data from being copied silently.  Exports
 * (CAI, DLPack) and copies live in their own files.
 */
#include "device_array.h"

#include <string.h>

#include "args.h"
#include "call/stream_arg.h"
#include "dtypes.h"
#include "runtime.h"
#include "stream_device.h"

#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#define Py_T_PYSSIZET T_PYSSIZET
#endif

/* ------------------------------------------------------------------ shape arithmetic */

/* The product of the nonzero extents, as NumPy bounds a shape even when another extent is 0
 * (np.empty((0, 2**63 - 1)) is refused: its strides would not fit); -1 past 2**63 / unit. */
static int64_t
ufg_nonzero_extents(int ndim, const int64_t *shape, int64_t unit)
{
    int64_t product = unit;

    for (int d = 0; d < ndim; d++) {
        if (shape[d] != 0) {
            if (product > INT64_MAX / shape[d]) {
                return -1;
            }
            product *= shape[d];
        }
    }
    return product;
}

int64_t
ufg_shape_size(int ndim, const int64_t *shape, const char *argname)
{
    int64_t size = 1;

    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: dimension %d is negative (%lld)", argname, d,
                         (long long)shape[d]);
            return -1;
        }
    }
    if (ufg_nonzero_extents(ndim, shape, 1) < 0) {
        PyErr_Format(PyExc_ValueError, "%s: the shape has more than 2**63 elements", argname);
        return -1;
    }
    for (int d = 0; d < ndim; d++) {
        size *= shape[d];           /* within the product above */
    }
    return size;
}

int
ufg_shape_bytes_fit(int ndim, const int64_t *shape, int64_t itemsize, PyObject *error_type,
                    const char *context)
{
    if (ufg_nonzero_extents(ndim, shape, itemsize) < 0) {
        PyErr_Format(error_type, "%s: the array would have more than 2**63 bytes", context);
        return -1;
    }
    return 0;
}

int
ufg_strides_span_fits(int ndim, const int64_t *shape, const int64_t *strides,
                      PyObject *error_type, const char *context)
{
    int64_t span = 0;

    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            return 0;
        }
    }
    for (int d = 0; d < ndim; d++) {
        /* INT64_MIN has no magnitude in int64: no extent of 2 or more fits with it. */
        const int64_t step = strides[d] == INT64_MIN ? INT64_MAX
                             : strides[d] < 0 ? -strides[d] : strides[d];

        if (shape[d] > 1 && step != 0 &&
            (strides[d] == INT64_MIN || shape[d] - 1 > (INT64_MAX - span) / step)) {
            PyErr_Format(error_type, "%s: the elements span more than 2**63 bytes (stride "
                         "%lld bytes in dimension %d, of extent %lld)", context,
                         (long long)strides[d], d, (long long)shape[d]);
            return -1;
        }
        if (shape[d] > 1) {
            span += (shape[d] - 1) * step;
        }
    }
    return 0;
}

int
ufg_view_in_allocation(const ufg_backend *backend, const char *ptr, int ndim,
                       const int64_t *shape, const int64_t *strides, int64_t itemsize,
                       PyObject *error_type, const char *context)
{
    int64_t below = 0, above = 0;     /* bytes before and after the first element's start */
    uintptr_t base;
    size_t size;
    uint64_t offset;

    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            return 0;
        }
    }
    if (backend->allocation_of == NULL || backend->allocation_of(ptr, &base, &size) != 0) {
        return 0;
    }
    for (int d = 0; d < ndim; d++) {
        /* No overflow: the magnitudes add up to the span, which fits in int64. */
        if (strides[d] < 0) {
            below += (shape[d] - 1) * -strides[d];
        }
        else {
            above += (shape[d] - 1) * strides[d];
        }
    }
    offset = (uint64_t)((uintptr_t)ptr - base);
    if ((uint64_t)below <= offset && (uint64_t)above + (uint64_t)itemsize <= size - offset) {
        return 0;
    }
    PyErr_Format(error_type, "%s: its elements span bytes %s to %s, beyond the %zu-byte "
                 "device allocation at %s that its pointer %s points into", context,
                 ufg_hex((uintptr_t)ptr - (uint64_t)below).text,
                 ufg_hex((uintptr_t)ptr + (uint64_t)above + (uint64_t)itemsize).text, size,
                 ufg_hex(base).text, ufg_hex((uintptr_t)ptr).text);
    return -1;
}

void
ufg_c_strides(int ndim, const int64_t *shape, int64_t itemsize, int64_t *strides)
{
    /* Wrapping, not overflowing: the strides of more than 2**63 bytes (a shape of 2**61
     * float64s) are garbage that ufg_strides_span_fits then refuses, naming the stride of
     * an inner dimension, whose span is already too long. */
    uint64_t stride = (uint64_t)itemsize;

    for (int d = ndim - 1; d >= 0; d--) {
        strides[d] = (int64_t)stride;
        stride *= (uint64_t)(shape[d] > 0 ? shape[d] : 1);
    }
}

int64_t
ufg_device_array_size(const ufg_DeviceArrayObject *self)
{
    int64_t size = 1;

    for (int d = 0; d < self->ndim; d++) {
        size *= self->shape[d];
    }
    return size;
}

int
ufg_strided_is_aligned(const char *ptr, int ndim, const int64_t *shape, const int64_t *strides,
                       int64_t alignment)
{
    int misaligned = (uintptr_t)ptr % (uintptr_t)alignment != 0;

    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 0) {
            return 1;
        }
        misaligned |= shape[d] > 1 && strides[d] % alignment != 0;
    }
    return !misaligned;
}

/* NumPy's rule: size-1 dimensions may have any stride; an empty array is contiguous. */
int
ufg_device_array_is_c_contiguous(const ufg_DeviceArrayObject *self)
{
    int64_t expected = (int64_t)self->dtype->elsize;

    if (ufg_device_array_size(self) == 0) {
        return 1;
    }
    for (int d = self->ndim - 1; d >= 0; d--) {
        if (self->shape[d] != 1 && self->strides[d] != expected) {
            return 0;
        }
        expected *= self->shape[d];
    }
    return 1;
}

/* ------------------------------------------------------------------ construction */

ufg_DeviceArrayObject *
ufg_device_array_new(char *ptr, int ndim, const int64_t *shape, const int64_t *strides,
                     PyArray_Descr *descr, int device, int readonly, uintptr_t stream,
                     PyObject *owner)
{
    ufg_DeviceArrayObject *self;

    if (ndim < 0 || ndim > UFG_DEVICE_ARRAY_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "device arrays have at most %d dimensions, got %d",
                     UFG_DEVICE_ARRAY_MAX_DIMS, ndim);
        return NULL;
    }
    self = PyObject_GC_New(ufg_DeviceArrayObject, &ufg_DeviceArray_Type);
    if (self == NULL) {
        return NULL;
    }
    /* One block for both arrays, never empty so a failed allocation is unambiguous. */
    self->shape = PyMem_Malloc(sizeof(int64_t) * (size_t)(2 * ndim + 1));
    if (self->shape == NULL) {
        self->ndim = 0;
        self->dtype = NULL;
        self->owner = NULL;
        self->stream_keeper = NULL;
        self->owns_allocation = 0;
        self->weakreflist = NULL;
        Py_DECREF(self);
        return (ufg_DeviceArrayObject *)PyErr_NoMemory();
    }
    self->strides = self->shape + ndim;
    self->ptr = ptr;
    self->ndim = ndim;
    memcpy(self->shape, shape, sizeof(int64_t) * (size_t)ndim);
    if (strides != NULL) {
        memcpy(self->strides, strides, sizeof(int64_t) * (size_t)ndim);
    }
    else {
        ufg_c_strides(ndim, shape, (int64_t)descr->elsize, self->strides);
    }
    Py_INCREF(descr);
    self->dtype = descr;
    self->code = ufg_dtype_code_of(descr);
    self->device = device;
    self->readonly = readonly != 0;
    self->owns_allocation = 0;
    self->stream = stream;
    self->stream_keeper = Py_XNewRef(ufg_stream_keeper_of(stream, NULL));
    self->exports_no_stream = 0;
    self->owner = Py_XNewRef(owner);
    self->queued_on = 0;
    self->weakreflist = NULL;
    PyObject_GC_Track(self);
    return self;
}

ufg_DeviceArrayObject *
ufg_device_array_empty(int ndim, const int64_t *shape, PyArray_Descr *descr, int device,
                       uintptr_t stream)
{
    const ufg_backend *backend = ufg_runtime_backend();
    ufg_DeviceArrayObject *self;
    int64_t size;
    void *ptr = NULL;
    int error;

    if (backend == NULL) {
        return NULL;
    }
    size = ufg_shape_size(ndim, shape, "shape");
    if (size < 0) {
        return NULL;
    }
    if (ufg_shape_bytes_fit(ndim, shape, (int64_t)descr->elsize, PyExc_ValueError, "shape") < 0) {
        return NULL;
    }
    error = backend->malloc_async(&ptr, (size_t)(size * (int64_t)descr->elsize), device,
                                  (void *)stream);
    if (error) {
        return (ufg_DeviceArrayObject *)ufg_device_error(backend, error,
                                                         "allocating a device array");
    }
    self = ufg_device_array_new(ptr, ndim, shape, NULL, descr, device, 0, stream, NULL);
    if (self == NULL) {
        (void)backend->free_async(ptr, device, (void *)stream);
        return NULL;
    }
    self->owns_allocation = 1;
    return self;
}

/* ------------------------------------------------------------------ lifetime */

/* Frees an owned allocation on the array's stream.  Runs in dealloc, where nothing can be
 * raised: a failure is reported as unraisable, keeping any exception in flight. */
static void
ufg_device_array_free_allocation(ufg_DeviceArrayObject *self)
{
    const ufg_backend *backend = ufg_runtime_backend();
    PyObject *type, *value, *traceback;
    int error;

    PyErr_Fetch(&type, &value, &traceback);
    if (backend == NULL) {
        PyErr_WriteUnraisable((PyObject *)self);
    }
    else if ((error = backend->free_async(self->ptr, self->device, (void *)self->stream))) {
        ufg_device_error(backend, error, "freeing a device array");
        PyErr_WriteUnraisable(NULL);
    }
    PyErr_Restore(type, value, traceback);
}

/* A foreign owner is not shown to the collector: were the view found in garbage, the
 * collector would clear the owner's own references (a foreign array's __dict__, its memory)
 * as well, at once, while a kernel queued on the view's stream may still read that memory.
 * Unseen, it stays whole until the view lets go of it in stream order.  The price: a foreign
 * owner that refers back to its view is a cycle the collector cannot see. */
static int
ufg_device_array_traverse(ufg_DeviceArrayObject *self, visitproc visit, void *arg)
{
    if (self->owner != NULL && ufg_DeviceArray_Check(self->owner)) {
        Py_VISIT(self->owner);
    }
    Py_VISIT(self->stream_keeper);
    Py_VISIT(self->dtype);
    return 0;
}

/* The stream keeper stays: the collector clears a cycle's objects in any order before it
 * deallocates them, and the array's free is queued on that stream at dealloc.  A cycle through
 * a keeper is broken by clearing the keeper's own references (a stream object's __dict__).
 * The owner goes in stream order, as at dealloc. */
static int
ufg_device_array_clear(ufg_DeviceArrayObject *self)
{
    ufg_device_array_release_owner(self);
    return 0;
}

static void
ufg_device_array_dealloc(ufg_DeviceArrayObject *self)
{
    PyObject_GC_UnTrack(self);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    if (self->owns_allocation) {
        ufg_device_array_free_allocation(self);
    }
    /* Before the stream keeper goes: the owner's release is ordered on that stream. */
    ufg_device_array_release_owner(self);
    Py_CLEAR(self->stream_keeper);
    Py_CLEAR(self->dtype);
    PyMem_Free(self->shape);
    PyObject_GC_Del(self);
}

/* ------------------------------------------------------------------ attributes */

static PyObject *
ufg_device_array_get_shape(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return ufg_int64_tuple_new(self->shape, self->ndim);
}

static PyObject *
ufg_device_array_get_strides(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return ufg_int64_tuple_new(self->strides, self->ndim);
}

static PyObject *
ufg_device_array_get_dtype(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef((PyObject *)self->dtype);
}

static PyObject *
ufg_device_array_get_ndim(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(self->ndim);
}

static PyObject *
ufg_device_array_get_size(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(ufg_device_array_size(self));
}

static PyObject *
ufg_device_array_get_nbytes(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(ufg_device_array_size(self) * (int64_t)self->dtype->elsize);
}

static PyObject *
ufg_device_array_get_itemsize(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong((long long)self->dtype->elsize);
}

static PyObject *
ufg_device_array_get_device(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(self->device);
}

static PyObject *
ufg_device_array_get_ptr(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong((uintptr_t)self->ptr);
}

static PyObject *
ufg_device_array_get_readonly(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->readonly);
}

static PyObject *
ufg_device_array_get_owner(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return Py_NewRef(self->owner != NULL ? self->owner : Py_None);
}

static PyObject *
ufg_device_array_get_stream(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(self->stream);
}

static int
ufg_device_array_set_stream(ufg_DeviceArrayObject *self, PyObject *value,
                            void *Py_UNUSED(closure))
{
    const ufg_backend *backend;
    uintptr_t stream;

    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "DeviceArray.stream cannot be deleted");
        return -1;
    }
    /* Refused here, as stream= is: the array's later uses (its CAI, a copy, its free) would
     * fail naming an argument nobody passed. */
    if (ufg_stream_from_object(value, &stream) < 0 ||
        (backend = ufg_runtime_backend()) == NULL ||
        ufg_check_stream_device(backend, stream, self->device, "DeviceArray.stream:",
                                "the array is on") < 0) {
        return -1;
    }
    self->stream = stream;
    /* A stream object is kept alive while the array may queue its free there; a bare
     * handle's owner is the caller's concern, unless ufuncgen.device.Stream made it. */
    Py_XSETREF(self->stream_keeper,
               Py_XNewRef(ufg_stream_keeper_of(stream, ufg_stream_owner(value))));
    return 0;
}

static PyGetSetDef ufg_device_array_getset[] = {
    {"shape", (getter)ufg_device_array_get_shape, NULL, "Size of each dimension.", NULL},
    {"strides", (getter)ufg_device_array_get_strides, NULL,
     "Bytes to step in each dimension (may be negative or zero).", NULL},
    {"dtype", (getter)ufg_device_array_get_dtype, NULL, "The NumPy dtype of the elements.",
     NULL},
    {"ndim", (getter)ufg_device_array_get_ndim, NULL, "Number of dimensions.", NULL},
    {"size", (getter)ufg_device_array_get_size, NULL, "Number of elements.", NULL},
    {"nbytes", (getter)ufg_device_array_get_nbytes, NULL, "size * itemsize.", NULL},
    {"itemsize", (getter)ufg_device_array_get_itemsize, NULL, "Bytes per element.", NULL},
    {"device", (getter)ufg_device_array_get_device, NULL, "The device ordinal.", NULL},
    {"ptr", (getter)ufg_device_array_get_ptr, NULL, "Address of the first element.", NULL},
    {"readonly", (getter)ufg_device_array_get_readonly, NULL,
     "Whether writing through this array is refused.", NULL},
    {"owner", (getter)ufg_device_array_get_owner, NULL,
     "The object keeping the memory alive for a view, or None.", NULL},
    {"stream", (getter)ufg_device_array_get_stream, (setter)ufg_device_array_set_stream,
     "Handle of the stream the array was last used on (0: the default stream); set it with "
     "anything stream= takes.", NULL},
    {"__cuda_array_interface__", (getter)ufg_device_array_cai, NULL,
     "The CUDA array interface, version 3.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* ------------------------------------------------------------------ protocols */

static PyObject *
ufg_device_array_repr(ufg_DeviceArrayObject *self)
{
    PyObject *shape = ufg_device_array_get_shape(self, NULL);
    PyObject *result;

    if (shape == NULL) {
        return NULL;
    }
    result = PyUnicode_FromFormat("DeviceArray(shape=%R, dtype=%S, device=%d)", shape,
                                  (PyObject *)self->dtype, self->device);
    Py_DECREF(shape);
    return result;
}

static Py_ssize_t
ufg_device_array_length(ufg_DeviceArrayObject *self)
{
    if (self->ndim == 0) {
        PyErr_SetString(PyExc_TypeError, "len() of a 0-d DeviceArray");
        return -1;
    }
    return (Py_ssize_t)self->shape[0];
}

/* NumPy would otherwise turn the array into an object scalar or read device pointers on the
 * host; moving data is always explicit. */
static PyObject *
ufg_device_array_array(ufg_DeviceArrayObject *self, PyObject *Py_UNUSED(args),
                       PyObject *Py_UNUSED(kwargs))
{
    PyErr_Format(PyExc_TypeError,
                 "DeviceArray: the data lives on device %d, so it cannot be used as a NumPy "
                 "array; call .copy_to_host() to copy it to the host explicitly",
                 self->device);
    return NULL;
}

static PySequenceMethods ufg_device_array_as_sequence = {
    .sq_length = (lenfunc)ufg_device_array_length,
};

/* Without it Python would take len() > 0 for the truth value: True for [0.0], where NumPy
 * says False, and for two elements, which NumPy refuses as ambiguous.  The values are on the
 * device: reading them is as explicit as __array__'s copy. */
static int
ufg_device_array_bool(ufg_DeviceArrayObject *self)
{
    PyErr_Format(PyExc_TypeError,
                 "DeviceArray: the truth value of an array on device %d would need its values "
                 "on the host; call .copy_to_host() first (and .any() or .all() of that)",
                 self->device);
    return -1;
}

static PyNumberMethods ufg_device_array_as_number = {
    .nb_bool = (inquiry)ufg_device_array_bool,
};

static PyMethodDef ufg_device_array_methods[] = {
    {"copy_to_host", (PyCFunction)(void (*)(void))ufg_device_array_copy_to_host,
     METH_VARARGS | METH_KEYWORDS,
     "copy_to_host(stream=None)\n--\n\n"
     "A new C-contiguous NumPy array with the same shape and dtype, copied on `stream` "
     "(anything stream= takes; default: the array's own) and waited for."},
    {"__array__", (PyCFunction)(void (*)(void))ufg_device_array_array,
     METH_VARARGS | METH_KEYWORDS, "Refuses: device data is never copied implicitly."},
    {"__dlpack__", (PyCFunction)(void (*)(void))ufg_device_array_dlpack,
     METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "Export as a DLPack capsule (\"dltensor_versioned\" when max_version >= (1, 0))."},
    {"__dlpack_device__", (PyCFunction)ufg_device_array_dlpack_device, METH_NOARGS,
     "(2, device): kDLCUDA.  Under the simulator too: simulated arrays are host memory that "
     "claims to be CUDA memory, and must not be handed to real CUDA libraries."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject ufg_DeviceArray_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ufuncgen._device.DeviceArray",
    .tp_doc = PyDoc_STR(
        "An N-d strided array in device memory (CUDA, or host RAM under the simulator).\n\n"
        "Made by ufuncgen._device.empty / from_pointer / from_dlpack_capsule; exports the "
        "CUDA array interface v3 and DLPack."),
    .tp_basicsize = sizeof(ufg_DeviceArrayObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_dealloc = (destructor)ufg_device_array_dealloc,
    .tp_traverse = (traverseproc)ufg_device_array_traverse,
    .tp_clear = (inquiry)ufg_device_array_clear,
    .tp_repr = (reprfunc)ufg_device_array_repr,
    .tp_as_sequence = &ufg_device_array_as_sequence,
    .tp_as_number = &ufg_device_array_as_number,
    .tp_methods = ufg_device_array_methods,
    .tp_getset = ufg_device_array_getset,
    .tp_weaklistoffset = offsetof(ufg_DeviceArrayObject, weakreflist),
};

int
ufg_device_array_register(PyObject *module)
{
    if (PyType_Ready(&ufg_DeviceArray_Type) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "DeviceArray", (PyObject *)&ufg_DeviceArray_Type);
}
