/*
 * NumPy C-API settings shared by every file of ufuncgen._core.  core_module.c imports the
 * array and ufunc API tables; the other files reach them through the same unique symbols.
 */
#ifndef UFG_CORE_NUMPY_API_H
#define UFG_CORE_NUMPY_API_H

#define NPY_NO_DEPRECATED_API NPY_2_1_API_VERSION
#define NPY_TARGET_VERSION NPY_2_1_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL ufg_core_ARRAY_API
#define PY_UFUNC_UNIQUE_SYMBOL ufg_core_UFUNC_API
#ifndef UFG_CORE_IMPORTS_NUMPY
#define NO_IMPORT_ARRAY
#define NO_IMPORT_UFUNC
#endif

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <numpy/arrayobject.h>
#include <numpy/ufuncobject.h>

#endif /* UFG_CORE_NUMPY_API_H */
