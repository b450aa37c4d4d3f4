/*
 * ufuncgen._core: the hand-written runtime shared by all generated modules.
 *
 * This translation unit owns the NumPy C-API tables (the other files
 * define NO_IMPORT_ARRAY / NO_IMPORT_UFUNC and reach them through the same
 * unique symbols), so it is the only place that imports them.
 */
#define UFG_CORE_IMPORTS_NUMPY
#include "numpy_api.h"

#include "dispatch.h"
#include "function_object.h"
#include "host_at.h"
#include "threads.h"

PyDoc_STRVAR(ufg_core_doc,
"Runtime support for ufuncgen-generated modules.");

/* Single-phase init: the Function type is static and the NumPy API tables
 * are process globals, so per-interpreter module state would buy nothing. */
static struct PyModuleDef ufg_core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ufuncgen._core",
    .m_doc = ufg_core_doc,
    .m_size = -1,
};

static int
ufg_core_import_numpy(void)
{
    /* The function forms of import_array()/import_umath(): same effect,
     * but they report failure instead of returning from PyInit for us. */
    if (PyArray_ImportNumPyAPI() < 0 || PyUFunc_ImportUFuncAPI() < 0) {
        return -1;
    }
    return 0;
}

/* Bare generated ufuncs (fn.ufunc, which dask puts in its task graphs) pickle by reference,
 * as `module.name.ufunc`: see ufuncgen/_pickling.py. */
static int
ufg_core_install_ufunc_pickler(void)
{
    PyObject *pickling = PyImport_ImportModule("ufuncgen._pickling");
    if (pickling == NULL) {
        return -1;
    }
    Py_DECREF(pickling);
    return 0;
}

PyMODINIT_FUNC
PyInit__core(void)
{
    PyObject *module;

    if (ufg_core_import_numpy() < 0) {
        return NULL;
    }
    module = PyModule_Create(&ufg_core_module);
    if (module == NULL) {
        return NULL;
    }
    if (ufg_function_type_register(module) < 0 || ufg_threads_register(module) < 0 ||
        ufg_dispatch_register(module) < 0 || ufg_host_at_register(module) < 0 ||
        ufg_core_install_ufunc_pickler() < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
