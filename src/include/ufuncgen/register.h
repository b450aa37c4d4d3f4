/*
 * Module registration, included by every generated module: each generated function is one
 * row of a table; this turns the rows into np.ufunc objects wrapped in ufuncgen.Function.
 */
#ifndef UFUNCGEN_REGISTER_H
#define UFUNCGEN_REGISTER_H

#include <Python.h>
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>

#include "ufuncgen/device_kernel.h"
#include "ufuncgen/host_threads.h"

typedef struct {
    const char *name;
    const char *doc;                /* the wrapper's docstring: call signature, text, types */
    const char *ufunc_doc;          /* the bare ufunc's: text and types */
    int nin, nout, ntypes;
    PyUFuncGenericFunction *loops;
    void **data;
    const char *types;              /* ntypes * (nin + nout) NumPy type numbers */
    const char *signature;          /* gufunc layout, NULL for an elementwise ufunc */
    int identity;                   /* PyUFunc_None, PyUFunc_ReorderableNone, PyUFunc_IdentityValue */
    char identity_kind;             /* 'i', 'f', 'b' for a value identity */
    const char *identity_literal;
    PyUFunc_ProcessCoreDimsFunc *process_core_dims;
    const ufg_device_table *device; /* the launchers the device runtime calls */
} ufg_function_spec;

static PyObject *
ufg_identity_value(const ufg_function_spec *spec)
{
    switch (spec->identity_kind) {
    case 'i': return PyLong_FromString(spec->identity_literal, NULL, 10);
    case 'f': {
        double value = PyOS_string_to_double(spec->identity_literal, NULL, NULL);
        return value == -1.0 && PyErr_Occurred() ? NULL : PyFloat_FromDouble(value);
    }
    case 'b': return PyBool_FromLong(spec->identity_literal[0] == 'T');
    default: Py_RETURN_NONE;
    }
}

static PyObject *
ufg_new_ufunc(const ufg_function_spec *spec)
{
    PyObject *identity = ufg_identity_value(spec);
    if (identity == NULL) {
        return NULL;
    }
    PyObject *ufunc = PyUFunc_FromFuncAndDataAndSignatureAndIdentity(
        spec->loops, spec->data, (char *)spec->types, spec->ntypes, spec->nin, spec->nout,
        spec->identity, spec->name, spec->ufunc_doc, 0, spec->signature,
        spec->identity == PyUFunc_IdentityValue ? identity : NULL);
    Py_DECREF(identity);
    if (ufunc != NULL && spec->process_core_dims != NULL) {
        ((PyUFuncObject *)ufunc)->process_core_dims_func = spec->process_core_dims;
    }
    return ufunc;
}

/* The bare ufunc pickles by reference to `module.name` (ufuncgen/_pickling.py): dask's graphs hold it. */
static int
ufg_name_ufunc(PyObject *ufunc, const char *qualified_name, const char *name)
{
    PyObject *module = PyUnicode_FromString(qualified_name);
    PyObject *qualname = PyUnicode_FromFormat("%s.ufunc", name);
    int status = module == NULL || qualname == NULL ||
                 PyObject_SetAttrString(ufunc, "__module__", module) < 0 ||
                 PyObject_SetAttrString(ufunc, "__qualname__", qualname) < 0 ? -1 : 0;
    Py_XDECREF(module);
    Py_XDECREF(qualname);
    return status;
}

/* Adds each function to `module` as a ufuncgen.Function; 0 on success, -1 with an exception. */
static int
ufg_register_functions(PyObject *module, const char *qualified_name,
                       const ufg_function_spec *specs, int count)
{
    PyObject *core = PyImport_ImportModule("ufuncgen._core");
    if (core == NULL) {
        return -1;
    }
    PyObject *function_type = PyObject_GetAttrString(core, "Function");
    if (function_type != NULL && ufg_threads_import(core) < 0) {
        Py_CLEAR(function_type);
    }
    Py_DECREF(core);
    if (function_type == NULL) {
        return -1;
    }
    int status = 0;
    for (int i = 0; i < count && status == 0; i++) {
        PyObject *ufunc = ufg_new_ufunc(&specs[i]);
        if (ufunc != NULL && ufg_name_ufunc(ufunc, qualified_name, specs[i].name) < 0) {
            Py_CLEAR(ufunc);
        }
        if (ufunc == NULL) {
            status = -1;
            break;
        }
        PyObject *device = PyCapsule_New((void *)specs[i].device, UFG_DEVICE_TABLE_CAPSULE, NULL);
        if (device == NULL) {
            Py_DECREF(ufunc);
            status = -1;
            break;
        }
        PyObject *function = PyObject_CallFunction(function_type, "OsssO", ufunc, specs[i].name,
                                                   qualified_name, specs[i].doc, device);
        Py_DECREF(device);
        Py_DECREF(ufunc);
        if (function == NULL) {
            status = -1;
            break;
        }
        status = PyModule_AddObjectRef(module, specs[i].name, function);
        Py_DECREF(function);
    }
    Py_DECREF(function_type);
    return status;
}

#endif /* UFUNCGEN_REGISTER_H */
