/* Placeholder until the C port of function.reduce on the device lands. */
#include "call.h"

PyObject *
ufg_device_reduce(PyObject *function, const ufg_function_descriptor *fn, PyObject *ufunc,
                  PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    (void)function; (void)ufunc; (void)args; (void)nargs; (void)kwnames;
    PyErr_Format(PyExc_NotImplementedError, "%s.reduce on the device", fn->name);
    return NULL;
}
