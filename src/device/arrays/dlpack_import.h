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

#endif /* UFG_DEVICE_DLPACK_IMPORT_H */
