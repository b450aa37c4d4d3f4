/*
 * Results as the caller's library's arrays: a call on CuPy arrays returns a CuPy array, on
 * PyTorch tensors a tensor, on Numba device arrays a Numba device array, each a view of the
 * DeviceArray's memory (no copy).  The converter is looked up once per library.
 *
 * The library gets the result ordered on its current stream already (a stream wait when the
 * call ran on another one), through a view whose __cuda_array_interface__ names no stream:
 * CuPy and Numba would otherwise synchronise the named stream, blocking the host on every
 * call until the kernel had run.
 */
#include "call.h"

#include <string.h>

#include "runtime.h"

typedef enum { UFG_LIBRARY_NONE, UFG_LIBRARY_CUPY, UFG_LIBRARY_TORCH, UFG_LIBRARY_NUMBA } ufg_library;

/* The library an array type comes from, by its module's root package. */
static ufg_library
ufg_library_of(PyTypeObject *type)
{
    /* The last type asked, by a weak reference: a pointer alone could be a new type's once
     * the old one is freed, which would get its library; a strong one would keep a class made
     * per call alive, with all it refers to. */
    static PyObject *last_type;
    static ufg_library last_library;
    PyObject *module, *ref;
    const char *name;
    ufg_library library = UFG_LIBRARY_NONE;

    if (last_type != NULL && PyWeakref_GetObject(last_type) == (PyObject *)type) {
        return last_library;
    }
    module = PyObject_GetAttrString((PyObject *)type, "__module__");
    if (module == NULL) {
        PyErr_Clear();
        return UFG_LIBRARY_NONE;
    }
    name = PyUnicode_Check(module) ? PyUnicode_AsUTF8(module) : NULL;
    if (name != NULL) {
        size_t root = strcspn(name, ".");
        if (root == 4 && strncmp(name, "cupy", 4) == 0) {
            library = UFG_LIBRARY_CUPY;
        }
        else if (root == 5 && strncmp(name, "torch", 5) == 0) {
            library = UFG_LIBRARY_TORCH;
        }
        else if (root == 5 && strncmp(name, "numba", 5) == 0) {
            library = UFG_LIBRARY_NUMBA;
        }
    }
    PyErr_Clear();
    Py_DECREF(module);
    if ((ref = PyWeakref_NewRef((PyObject *)type, NULL)) == NULL) {
        PyErr_Clear();          /* asked again next time */
    }
    Py_XSETREF(last_type, ref);
    last_library = library;
    return library;
}

/* cupy.asarray, torch.as_tensor, numba.cuda.as_cuda_array: imported once, kept. */
static PyObject *
ufg_converter(ufg_library library)
{
    static PyObject *converters[4];
    static const char *const modules[4] = {NULL, "cupy", "torch", "numba.cuda"};
    static const char *const names[4] = {NULL, "asarray", "as_tensor", "as_cuda_array"};
    PyObject *module;

    if (converters[library] == NULL) {
        module = PyImport_ImportModule(modules[library]);
        if (module == NULL) {
            return NULL;
        }
        converters[library] = PyObject_GetAttrString(module, names[library]);
        Py_DECREF(module);
    }
    return converters[library];
}

/* The converter called on the view (PyTorch's with the device, which as_tensor needs). */
static PyObject *
ufg_wrap_view(ufg_library library, PyObject *converter, PyObject *array)
{
    PyObject *device, *kwargs, *args, *result;

    if (library != UFG_LIBRARY_TORCH) {
        return PyObject_CallOneArg(converter, array);
    }
    device = PyUnicode_FromFormat("cuda:%d", ((ufg_DeviceArrayObject *)array)->device);
    kwargs = device == NULL ? NULL : Py_BuildValue("{s:O}", "device", device);
    args = kwargs == NULL ? NULL : PyTuple_Pack(1, array);
    result = args == NULL ? NULL : PyObject_Call(converter, args, kwargs);
    Py_XDECREF(device);
    Py_XDECREF(kwargs);
    Py_XDECREF(args);
    return result;
}

/* A view of `array` for the library of `anchor`, ordered on that library's current stream. */
static PyObject *
ufg_export_view(PyObject *anchor, ufg_DeviceArrayObject *array)
{
    const ufg_backend *backend = ufg_runtime_backend();
    ufg_DeviceArrayObject *view;
    PyObject *keeper;
    uintptr_t current;
    int error;

    if (backend == NULL || ufg_default_stream(&anchor, 1, &current, &keeper) < 0) {
        return NULL;
    }
    if (current != array->stream) {
        error = backend->stream_wait((void *)current, (void *)array->stream, array->device);
        if (error) {
            Py_XDECREF(keeper);
            return ufg_device_error(backend, error, "ordering a result on its library's stream");
        }
    }
    view = ufg_device_array_new(array->ptr, array->ndim, array->shape, array->strides,
                                array->dtype, array->device, array->readonly, current,
                                (PyObject *)array);
    if (view != NULL) {
        view->exports_no_stream = 1;
        ufg_device_array_used_on(view, current, keeper);
    }
    Py_XDECREF(keeper);
    return (PyObject *)view;
}

PyObject *
ufg_wrap_like(PyObject *anchor, PyObject *array)
{
    const ufg_library library = ufg_library_of(Py_TYPE(anchor));
    PyObject *converter, *result, *view;

    if (library == UFG_LIBRARY_NONE) {
        return Py_NewRef(array);
    }
    converter = ufg_converter(library);
    if (converter == NULL) {
        return NULL;
    }
    view = ufg_export_view(anchor, (ufg_DeviceArrayObject *)array);
    if (view == NULL) {
        return NULL;
    }
    result = ufg_wrap_view(library, converter, view);
    Py_DECREF(view);
    return result;
}

