/*
 * How ufuncgen._core reaches the device call of ufuncgen._device: a table of C entry
 * points, handed over once in a capsule (ufuncgen._device._call_api), so that a
 * Function's call with a CUDA argument goes from C to C with the caller's vectorcall
 * arguments, building no tuple or dict on the way.
 */
#ifndef UFUNCGEN_DEVICE_CALL_H
#define UFUNCGEN_DEVICE_CALL_H

#include <Python.h>

#include "ufuncgen/descriptor.h"

/* `function(*args)`, `function.reduce(*args)`, `.accumulate`, `.reduceat`, `.outer` and `.at` with vectorcall
 * arguments (nargs without the offset flag); `ufunc` is the function's np.ufunc, asked on a
 * type-resolution miss. */
typedef PyObject *(*ufg_device_entry)(PyObject *function,
                                      const ufg_function_descriptor *descriptor,
                                      PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs,
                                      PyObject *kwnames);

typedef struct {
    int version;                    /* UFG_DEVICE_CALL_VERSION */
    ufg_device_entry call;
    ufg_device_entry reduce;
    ufg_device_entry outer;
    ufg_device_entry accumulate;
    ufg_device_entry reduceat;
    ufg_device_entry at;
} ufg_device_call_api;

#define UFG_DEVICE_CALL_VERSION 5
#define UFG_DEVICE_CALL_CAPSULE "ufuncgen._device._call_api"

#endif /* UFUNCGEN_DEVICE_CALL_H */
