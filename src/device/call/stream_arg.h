/*
 * A stream= value as a cudaStream_t (streams.c): the one conversion behind every argument that
 * names a stream, in calls, DeviceArray.copy_to_host and the DeviceArray.stream setter.
 */
#ifndef UFG_DEVICE_CALL_STREAM_ARG_H
#define UFG_DEVICE_CALL_STREAM_ARG_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

/* None (0), an int handle (or any integer with __index__), a ufuncgen, CuPy, PyTorch or Numba
 * stream, or anything with __cuda_stream__.  0, or -1 with TypeError/ValueError. */
int ufg_stream_from_object(PyObject *obj, uintptr_t *stream);

/* The object that owns the stream a stream= value names (borrowed), which arrays keep alive;
 * NULL for None or a bare int handle, whose lifetime is the caller's. */
PyObject *ufg_stream_owner(PyObject *obj);

#endif /* UFG_DEVICE_CALL_STREAM_ARG_H */
