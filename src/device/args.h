/*
 * Argument conversion for the module's functions: each helper names the argument, what it
 * expected and what it got in the TypeError/ValueError it raises, and returns 0 or -1.
 */
#ifndef UFG_DEVICE_ARGS_H
#define UFG_DEVICE_ARGS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "backend.h"

/* A Python int (or an object with __index__, but not bool's cousins float etc.). */
int ufg_arg_int64(PyObject *obj, const char *argname, int64_t *out);

/* An int from 0 to 2**64 - 1: a pointer or a stream handle. */
int ufg_arg_uintptr(PyObject *obj, const char *argname, uintptr_t *out);

/* A device ordinal the backend has (DeviceError when it cannot count its devices). */
int ufg_arg_device(const ufg_backend *backend, PyObject *obj, const char *argname, int *out);

/*
 * A tuple (or list) of at most max_len ints into out[]; *len receives its length.
 * With nonnegative set, negative entries are a ValueError.
 */
int ufg_arg_int64_tuple(PyObject *obj, const char *argname, int max_len, int nonnegative,
                        int64_t *out, int *len);

/* A shape: a sequence of non-negative ints (each with __index__: NumPy integers too), or one
 * such int for a 1-d shape. */
int ufg_arg_shape(PyObject *obj, const char *argname, int max_len, int64_t *out, int *len);

/* A bytes object of at most 8 bytes copied into out (zero-filled first); None gives zeros. */
int ufg_arg_value_bytes(PyObject *obj, const char *argname, unsigned char out[8]);

/* An address or handle as "0x..." for a message: PyErr_Format and PyUnicode_FromFormat
 * have no %llx before Python 3.12 (they print the code itself).  The text lives as long as
 * the returned value: pass ufg_hex(p).text within one call. */
typedef struct {
    char text[24];
} ufg_hex_text;
ufg_hex_text ufg_hex(uint64_t value);

/* The reverse, for results: a new tuple of n ints. */
PyObject *ufg_int64_tuple_new(const int64_t *values, int n);

#endif /* UFG_DEVICE_ARGS_H */
