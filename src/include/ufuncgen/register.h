/*
 * Module registration, included by every generated module: each generated function is one
 * row of a table; this turns the rows into np.ufunc objects wrapped in ufuncgen.Function.
 */
#ifndef UFUNCGEN_REGISTER_H
#define UFUNCGEN_REGISTER_H

#include <Python.h>
#include <numpy/ndarraytypes.h>
#include <numpy/ufuncobject.h>

#include "ufuncgen/descriptor.h"
#include "ufuncgen/host_threads.h"
#include "ufuncgen/limits.h"

static PyObject *
ufg_identity_value(const ufg_function_descriptor *function)
{
    switch (function->identity_kind) {
    case 'i': return PyLong_FromString(function->identity_literal, NULL, 10);
    case 'f': {
        double value = PyOS_string_to_double(function->identity_literal, NULL, NULL);
        return value == -1.0 && PyErr_Occurred() ? NULL : PyFloat_FromDouble(value);
    }
    case 'b': return PyBool_FromLong(function->identity_literal[0] == 'T');
    default: Py_RETURN_NONE;
    }
}

static PyObject *
ufg_new_ufunc(const ufg_function_descriptor *function)
{
    PyObject *identity = ufg_identity_value(function);
    if (identity == NULL) {
        return NULL;
    }
    PyObject *ufunc = PyUFunc_FromFuncAndDataAndSignatureAndIdentity(
        function->loops, function->data, (char *)function->types, function->ntypes, function->nin, function->nout,
        function->identity, function->name, function->ufunc_doc, 0, function->signature,
        function->identity == PyUFunc_IdentityValue ? identity : NULL);
    Py_DECREF(identity);
    if (ufunc != NULL && function->process_core_dims != NULL) {
        ((PyUFuncObject *)ufunc)->process_core_dims_func = function->process_core_dims;
    }
    return ufunc;
}

/* Whether every module that defines a provided loop's dtypes can be imported: 1 yes, 0 no
 * (then arrays of those dtypes cannot exist either, and the loops are not needed), -1 when
 * the warning below is turned into an error.  A module that is installed but fails to import
 * (built for another NumPy, say) costs only its loops, with a RuntimeWarning saying why: the
 * module's other loops do not depend on it. */
static int
ufg_provided_modules_import(const ufg_function_descriptor *function)
{
    for (const char *const *name = function->provided_modules; *name != NULL; name++) {
        PyObject *module = PyImport_ImportModule(*name);
        if (module == NULL) {
            if (PyErr_ExceptionMatches(PyExc_ModuleNotFoundError)) {
                PyErr_Clear();
                return 0;
            }
            PyObject *type, *value, *traceback;
            PyErr_Fetch(&type, &value, &traceback);
            PyErr_NormalizeException(&type, &value, &traceback);
            /* One text for every function, so that the warning shows once. */
            int warned = PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "ufuncgen: loops for %s's "
                                          "dtypes are left out: importing %s failed: %R",
                                          *name, *name, value != NULL ? value : Py_None);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
            return warned < 0 ? -1 : 0;
        }
        Py_DECREF(module);
    }
    return 1;
}

/* One provided loop's argument type numbers, from its dtype names; returns the first
 * user-defined type number among them (the one NumPy files the loop under), or -1 with an
 * exception. */
static int
ufg_provided_type_numbers(const char *const *names, int nargs, int *type_nums)
{
    int user_type = -1;
    for (int k = 0; k < nargs; k++) {
        PyArray_Descr *descr = NULL;
        PyObject *name = PyUnicode_FromString(names[k]);
        int converted = name != NULL && PyArray_DescrConverter(name, &descr);
        Py_XDECREF(name);
        if (!converted) {
            return -1;
        }
        type_nums[k] = descr->type_num;
        if (user_type < 0 && PyTypeNum_ISUSERDEF(descr->type_num)) {
            user_type = descr->type_num;
        }
        Py_DECREF(descr);
    }
    if (user_type < 0) {
        PyErr_Format(PyExc_RuntimeError, "ufuncgen: a provided loop of %s names no "
                     "user-defined dtype", names[0]);
    }
    return user_type;
}

/* Adds the loops of dtypes another package defines (ml_dtypes' bfloat16) to `ufunc`. */
static int
ufg_register_provided_loops(PyObject *ufunc, const ufg_function_descriptor *function)
{
    if (function->nprovided == 0) {
        return 0;
    }
    int available = ufg_provided_modules_import(function);
    if (available <= 0) {
        return available;
    }
    const int nargs = function->nin + function->nout;
    int type_nums[UFG_MAX_ARGS];
    for (int i = 0; i < function->nprovided; i++) {
        int user_type = ufg_provided_type_numbers(function->provided_types + (size_t)i * nargs,
                                                  nargs, type_nums);
        if (user_type < 0 ||
            PyUFunc_RegisterLoopForType((PyUFuncObject *)ufunc, user_type,
                                        function->provided_loops[i], type_nums, NULL) < 0) {
            return -1;
        }
    }
    return 0;
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
                       const ufg_function_descriptor *descriptors, int count)
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
        PyObject *ufunc = ufg_new_ufunc(&descriptors[i]);
        if (ufunc != NULL && (ufg_name_ufunc(ufunc, qualified_name, descriptors[i].name) < 0 ||
                              ufg_register_provided_loops(ufunc, &descriptors[i]) < 0)) {
            Py_CLEAR(ufunc);
        }
        if (ufunc == NULL) {
            status = -1;
            break;
        }
        PyObject *descriptor = PyCapsule_New((void *)&descriptors[i], UFG_DESCRIPTOR_CAPSULE, NULL);
        if (descriptor == NULL) {
            Py_DECREF(ufunc);
            status = -1;
            break;
        }
        PyObject *function = PyObject_CallFunction(function_type, "OsssO", ufunc, descriptors[i].name,
                                                   qualified_name, descriptors[i].doc, descriptor);
        Py_DECREF(descriptor);
        Py_DECREF(ufunc);
        if (function == NULL) {
            status = -1;
            break;
        }
        status = PyModule_AddObjectRef(module, descriptors[i].name, function);
        Py_DECREF(function);
    }
    Py_DECREF(function_type);
    return status;
}

#endif /* UFUNCGEN_REGISTER_H */
