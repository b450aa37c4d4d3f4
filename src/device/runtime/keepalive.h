/*
 * Foreign arrays kept alive for queued work: an array of another library (CuPy, PyTorch, a
 * DLPack producer) used on a stream that is not its library's own would otherwise go back to
 * that library's allocator when the caller drops it, which may hand the memory out again,
 * ordered only on its own stream, before the work on ours has read or written it.  So the
 * call keeps a reference until an event recorded after its work says the stream has passed,
 * as PyTorch's record_stream does, without any wait on the host.
 */
#ifndef UFG_DEVICE_KEEPALIVE_H
#define UFG_DEVICE_KEEPALIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "backend.h"

/* Keeps obj (a new reference is taken) until the work queued on `stream` so far has run;
 * not at all once the CUDA runtime is unloading at exit.  -1 with DeviceError or MemoryError. */
int ufg_keep_until_done(const ufg_backend *backend, PyObject *obj, uintptr_t stream,
                        int device);

/* Lets go of the objects whose work has run (oldest first, stopping at the first that has
 * not); every device call and synchronisation calls it.  Holds the GIL. */
void ufg_release_done(const ufg_backend *backend);

/* How many objects are kept: for tests. */
Py_ssize_t ufg_kept_count(void);

#endif /* UFG_DEVICE_KEEPALIVE_H */
