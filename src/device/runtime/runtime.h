/*
 * The state ufuncgen._device shares between its files: the backend chosen at first use, the
 * DeviceError exception, and device facts that are asked for on every launch and cached.
 *
 * All functions here need the GIL.
 */
#ifndef UFG_DEVICE_RUNTIME_H
#define UFG_DEVICE_RUNTIME_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "backend.h"

/* ufuncgen._device.DeviceError (a RuntimeError subclass); created by ufg_runtime_init. */
extern PyObject *ufg_DeviceError;

int ufg_runtime_init(PyObject *module);

/*
 * The backend, chosen from UFUNCGEN_DEVICE on the first call ("sim", or "cuda"/unset).
 * Returns NULL with ValueError set when the variable holds anything else.
 */
const ufg_backend *ufg_runtime_backend(void);

/* Sets DeviceError "ufuncgen: CUDA error NAME (STRING) during WHAT"; returns NULL. */
PyObject *ufg_device_error(const ufg_backend *backend, int code, const char *what);
/* Same, returning -1 for int-returning callers. */
int ufg_device_error_int(const ufg_backend *backend, int code, const char *what);

/*
 * Checks that `device` (the argument named `argname`) is an ordinal the backend has, or raises
 * (DeviceError when the backend cannot count its devices, e.g. no driver; ValueError when out
 * of range).  Returns 0 or -1.
 */
int ufg_runtime_check_device(const ufg_backend *backend, long long device, const char *argname);
/* How many devices the backend has (counted once), or -1 with DeviceError. */
int ufg_runtime_device_count(const ufg_backend *backend);

/* The device's multiprocessor count (cached per device), or -1 with an exception set. */
int ufg_runtime_multiprocessors(const ufg_backend *backend, int device);

#endif /* UFG_DEVICE_RUNTIME_H */
