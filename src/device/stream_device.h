/*
 * The device a stream belongs to, and the refusal of work on a stream of another device.
 *
 * CUDA runs a kernel only on a stream of the current device (any other is
 * cudaErrorInvalidResourceHandle), and cudaMallocAsync takes memory from the pool of the
 * stream's device whatever device is current, so an array asked for on one device would land
 * on another.  ufuncgen therefore checks the stream of every call, allocation and copy against
 * the device of its data wherever it can tell a stream's device, and says which two devices
 * disagree before anything is queued.
 */
#ifndef UFG_DEVICE_STREAM_DEVICE_H
#define UFG_DEVICE_STREAM_DEVICE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#include "backend.h"

/* The device of `stream`: a ufuncgen.device.Stream's own, else what the backend says; -1 for
 * the default streams (0, 1, 2), which every device has, and for a stream nobody can place. */
int ufg_stream_device(const ufg_backend *backend, uintptr_t stream);

/*
 * 0 when `stream` may carry work on `device`; else -1 with ValueError
 * "<stream_what> 0x.. is a stream of CUDA device S, but <data_what> CUDA device D; ...",
 * where stream_what names the stream's argument ("add: stream=") and data_what says where
 * the data is, verb included ("the call's arrays are on", "device= is").
 */
int ufg_check_stream_device(const ufg_backend *backend, uintptr_t stream, int device,
                            const char *stream_what, const char *data_what);

#endif /* UFG_DEVICE_STREAM_DEVICE_H */
