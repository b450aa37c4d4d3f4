/*
 * Results as the caller's library's arrays: a call on CuPy arrays returns a CuPy array, on
 * PyTorch tensors a tensor, on Numba device arrays a Numba device array, each a view of the
 * DeviceArray's memory (no copy).  The converter is looked up once per library.
 */
#include "call.h"

#include <string.h>

typedef enum { UFG_LIBRARY_NONE, UFG_LIBRARY_CUPY, UFG_LIBRARY_TORCH, UFG_LIBRARY_NUMBA } ufg_library;

/* The library an array type comes from, by its module's root package. */
static ufg_library
ufg_library_of(PyTypeObject *type)
{
    static PyTypeObject *last_type;
    static ufg_library last_library;
    PyObject *module;
    const char *name;
    ufg_library library = UFG_LIBRARY_NONE;

    if (type == last_type) {
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
    last_type = type;
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

PyObject *
ufg_wrap_like(PyObject *anchor, PyObject *array)
{
    const ufg_library library = ufg_library_of(Py_TYPE(anchor));
    PyObject *converter, *device, *kwargs, *args, *result;

    if (library == UFG_LIBRARY_NONE) {
        return Py_NewRef(array);
    }
    converter = ufg_converter(library);
    if (converter == NULL) {
        return NULL;
    }
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
