/* ufuncgen._device functions for ufuncgen.device (public.c). */
#ifndef UFG_DEVICE_CALL_PUBLIC_H
#define UFG_DEVICE_CALL_PUBLIC_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *ufg_public_is_device_object(PyObject *module, PyObject *obj);
PyObject *ufg_public_stream_handle(PyObject *module, PyObject *obj);
PyObject *ufg_public_check_dlpack_device(PyObject *module, PyObject *const *args,
                                         Py_ssize_t nargs);
PyObject *ufg_public_as_device_array(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif /* UFG_DEVICE_CALL_PUBLIC_H */
