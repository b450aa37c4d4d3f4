/* The launch entry points of ufuncgen._device (METH_FASTCALL, positional only). */
#ifndef UFG_DEVICE_LAUNCH_MODULE_H
#define UFG_DEVICE_LAUNCH_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* launch_cast merges contiguous dimensions itself, so it takes NumPy's maximum. */
#define UFG_LAUNCH_CAST_MAX_DIMS 64

PyObject *ufg_launch_cast_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif /* UFG_DEVICE_LAUNCH_MODULE_H */
