/*
 * ufuncgen._device.OwnedStream (owned_stream.h says why it exists).  The live ones are kept
 * in a list, touched only with the GIL held, so that an array can find the owner of a handle
 * whichever object named the stream (the Stream, another library's wrapper of its handle, a
 * bare int): a process holds a few streams, and the default streams skip the search.
 */
#include "owned_stream.h"

#include "args.h"
#include "runtime.h"

typedef struct ufg_OwnedStreamObject {
    PyObject_HEAD
    uintptr_t handle;           /* 0 until created */
    int device;
    struct ufg_OwnedStreamObject *next;
} ufg_OwnedStreamObject;

static ufg_OwnedStreamObject *ufg_owned_streams = NULL;

PyObject *
ufg_owned_stream_find(uintptr_t handle)
{
    if (handle <= UFG_LAST_DEFAULT_STREAM) {
        return NULL;
    }
    for (ufg_OwnedStreamObject *s = ufg_owned_streams; s != NULL; s = s->next) {
        if (s->handle == handle) {
            return (PyObject *)s;
        }
    }
    return NULL;
}

int
ufg_owned_stream_device(uintptr_t handle)
{
    const PyObject *owned = ufg_owned_stream_find(handle);

    return owned != NULL ? ((const ufg_OwnedStreamObject *)owned)->device : -1;
}

static void
ufg_owned_stream_unlink(ufg_OwnedStreamObject *self)
{
    for (ufg_OwnedStreamObject **link = &ufg_owned_streams; *link != NULL;
         link = &(*link)->next) {
        if (*link == self) {
            *link = self->next;
            return;
        }
    }
}

static PyObject *
ufg_owned_stream_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"device", "non_blocking", NULL};
    const ufg_backend *backend;
    ufg_OwnedStreamObject *self;
    PyObject *device_obj;
    void *stream = NULL;
    int device, error, non_blocking = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p:OwnedStream", keywords, &device_obj,
                                     &non_blocking) ||
        (backend = ufg_runtime_backend()) == NULL ||
        ufg_arg_device(backend, device_obj, "device", &device) < 0) {
        return NULL;
    }
    self = (ufg_OwnedStreamObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    error = backend->stream_create(device, non_blocking, &stream);
    if (error) {
        Py_DECREF(self);
        return ufg_device_error(backend, error, "creating a stream");
    }
    self->handle = (uintptr_t)stream;
    self->device = device;
    self->next = ufg_owned_streams;
    ufg_owned_streams = self;
    return (PyObject *)self;
}

/* Destroys the stream; its queued work still runs.  Nothing can be raised here: a failure
 * is reported as unraisable, except the CUDA runtime's own unloading at process exit. */
static void
ufg_owned_stream_dealloc(ufg_OwnedStreamObject *self)
{
    const ufg_backend *backend;
    PyObject *type, *value, *traceback;
    int error;

    ufg_owned_stream_unlink(self);
    if (self->handle != 0) {
        PyErr_Fetch(&type, &value, &traceback);
        backend = ufg_runtime_backend();
        if (backend == NULL) {
            PyErr_WriteUnraisable((PyObject *)self);
        }
        else if ((error = backend->stream_destroy((void *)self->handle)) &&
                 error != UFG_ERROR_CUDART_UNLOADING) {
            ufg_device_error(backend, error, "destroying a stream");
            PyErr_WriteUnraisable(NULL);
        }
        PyErr_Restore(type, value, traceback);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
ufg_owned_stream_repr(ufg_OwnedStreamObject *self)
{
    return PyUnicode_FromFormat("<ufuncgen._device.OwnedStream %s on device %d>",
                                ufg_hex((uintptr_t)self->handle).text, self->device);
}

static PyObject *
ufg_owned_stream_get_handle(ufg_OwnedStreamObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromUnsignedLongLong(self->handle);
}

static PyObject *
ufg_owned_stream_get_device(ufg_OwnedStreamObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(self->device);
}

static PyGetSetDef ufg_owned_stream_getset[] = {
    {"handle", (getter)ufg_owned_stream_get_handle, NULL, "The cudaStream_t.", NULL},
    {"device", (getter)ufg_owned_stream_get_device, NULL, "The device ordinal.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Not GC-tracked and not subclassable on purpose: it holds no references, so it is never
 * part of a cycle, and a subclass could add a finalizer or a __dict__. */
static PyTypeObject ufg_OwnedStream_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ufuncgen._device.OwnedStream",
    .tp_doc = PyDoc_STR(
        "OwnedStream(device, non_blocking=False)\n--\n\n"
        "A new stream, destroyed when the last reference goes: the Stream that made it, and "
        "each DeviceArray whose last use was on it."),
    .tp_basicsize = sizeof(ufg_OwnedStreamObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = ufg_owned_stream_new,
    .tp_dealloc = (destructor)ufg_owned_stream_dealloc,
    .tp_repr = (reprfunc)ufg_owned_stream_repr,
    .tp_getset = ufg_owned_stream_getset,
};

int
ufg_owned_stream_register(PyObject *module)
{
    if (PyType_Ready(&ufg_OwnedStream_Type) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "OwnedStream", (PyObject *)&ufg_OwnedStream_Type);
}
