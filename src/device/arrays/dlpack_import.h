/* from_dlpack_capsule, implemented in dlpack.c beside the export it mirrors. */
#ifndef UFG_DEVICE_DLPACK_IMPORT_H
#define UFG_DEVICE_DLPACK_IMPORT_H

#include "device_array.h"

/* A DeviceArray viewing the tensor in a "dltensor" or "dltensor_versioned" capsule, which is
 * renamed "used_..." so its producer's destructor leaves the deleter to the array's owner.
 * `stream` is the consumer's, which the producer ordered the tensor before (__dlpack__'s
 * stream=): the array's first use, so its later uses wait for it; it must be a stream of the
 * tensor's device (a ValueError otherwise).  `keeper`: the object owning that stream, which
 * the array then keeps alive (NULL: a bare handle). */
PyObject *ufg_from_dlpack_capsule(PyObject *capsule, uintptr_t stream, PyObject *keeper);

/* Asks a DLPack producer's __dlpack_device__() whether its memory is CUDA memory, before
 * __dlpack__ is called with a CUDA stream (a host producer such as NumPy refuses any stream
 * with an error of its own).  0 if it is; -1 with BufferError naming the device (kDLCPU...)
 * and `what`, or the producer's own error. */
int ufg_dlpack_check_producer_device(PyObject *obj, const char *what);

#endif /* UFG_DEVICE_DLPACK_IMPORT_H */
