/* from_dlpack_capsule, implemented in dlpack.c beside the export it mirrors. */
#ifndef UFG_DEVICE_DLPACK_IMPORT_H
#define UFG_DEVICE_DLPACK_IMPORT_H

#include "device_array.h"

/* A DeviceArray viewing the tensor in a "dltensor" or "dltensor_versioned" capsule, which is
 * renamed "used_..." so its producer's destructor leaves the deleter to the array. */
PyObject *ufg_from_dlpack_capsule(PyObject *capsule);

#endif /* UFG_DEVICE_DLPACK_IMPORT_H */
