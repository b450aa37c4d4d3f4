/*
 * ufuncgen._device.OwnedStream: the stream behind a ufuncgen.device.Stream, destroyed when
 * its last reference goes, and every DeviceArray whose last use was on it holds one.
 *
 * Why not Stream.__del__: Python's cyclic garbage collector runs the finalizers of a whole
 * batch of garbage before it clears any reference in it (PEP 442), so a finalizer that
 * destroyed the stream ran while arrays in the same garbage still had their frees to queue on
 * it, however strongly they held the Stream: any reference cycle holding both, and every
 * module global at interpreter exit once the module defines a function (whose __globals__
 * refers back to them).  An object with no finalizer and no references of its own never
 * takes part in a cycle: it is destroyed only when its reference count reaches zero, which is
 * after the last array that holds it has queued its free.  cudaStreamDestroy returns at once
 * and the stream's queued work still runs, so nothing waits on the host.
 */
#ifndef UFG_DEVICE_OWNED_STREAM_H
#define UFG_DEVICE_OWNED_STREAM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

int ufg_owned_stream_register(PyObject *module);

/* The OwnedStream whose handle is `handle` (borrowed), or NULL when no live OwnedStream has
 * it (the default streams, other libraries' streams, _device.stream_create's bare handles). */
PyObject *ufg_owned_stream_find(uintptr_t handle);

/* The device of the live OwnedStream whose handle is `handle`, or -1 when there is none. */
int ufg_owned_stream_device(uintptr_t handle);

#endif /* UFG_DEVICE_OWNED_STREAM_H */
