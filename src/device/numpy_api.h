/*
 * NumPy C-API settings shared by every file of ufuncgen._device.  device_module.c imports
 * the API table; the other files reach it through the same unique symbol.
 */
#ifndef UFG_DEVICE_NUMPY_API_H
#define UFG_DEVICE_NUMPY_API_H

#define NPY_NO_DEPRECATED_API NPY_2_1_API_VERSION
#define NPY_TARGET_VERSION NPY_2_1_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL ufg_device_ARRAY_API
#ifndef UFG_DEVICE_IMPORTS_NUMPY
#define NO_IMPORT_ARRAY
#endif

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>

#endif /* UFG_DEVICE_NUMPY_API_H */
