/*
 * ml_dtypes.bfloat16 found at run time (dtype_bfloat16.h).
 */
#include "dtype_bfloat16.h"

static PyArray_Descr *ufg_bfloat16;

/* The descriptor from an imported ml_dtypes module; NULL with an exception. */
static PyArray_Descr *
ufg_bfloat16_from_module(PyObject *module)
{
    PyObject *scalar_type = PyObject_GetAttrString(module, "bfloat16");
    PyArray_Descr *descr = NULL;

    if (scalar_type == NULL) {
        return NULL;
    }
    if (!PyArray_DescrConverter(scalar_type, &descr)) {
        descr = NULL;
    }
    Py_DECREF(scalar_type);
    return descr;
}

PyArray_Descr *
ufg_bfloat16_descr_import(const char *context)
{
    PyObject *module;

    if (ufg_bfloat16 != NULL) {
        return ufg_bfloat16;
    }
    module = PyImport_ImportModule("ml_dtypes");
    if (module == NULL) {
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        PyErr_Format(PyExc_TypeError, "%s: bfloat16 arrays are ml_dtypes.bfloat16 arrays, and "
                     "ml_dtypes cannot be imported (%S); pip install ml_dtypes", context,
                     value != NULL ? value : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        return NULL;
    }
    ufg_bfloat16 = ufg_bfloat16_from_module(module);
    Py_DECREF(module);
    return ufg_bfloat16;
}

int
ufg_bfloat16_type_num(void)
{
    if (ufg_bfloat16 == NULL) {
        /* Found only once ml_dtypes is imported, by anyone: before, no array holds one.  A
         * lookup that fails means "not bfloat16", and leaves an exception the caller already
         * had in place. */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyObject *name = PyUnicode_FromString("ml_dtypes");
        PyObject *module = name != NULL ? PyImport_GetModule(name) : NULL;
        Py_XDECREF(name);
        if (module != NULL) {
            ufg_bfloat16 = ufg_bfloat16_from_module(module);
            Py_DECREF(module);
        }
        PyErr_Clear();
        PyErr_Restore(type, value, traceback);
    }
    return ufg_bfloat16 != NULL ? ufg_bfloat16->type_num : -1;
}

int
ufg_is_bfloat16_descr(const PyArray_Descr *descr)
{
    return PyTypeNum_ISUSERDEF(descr->type_num) && descr->type_num == ufg_bfloat16_type_num();
}
