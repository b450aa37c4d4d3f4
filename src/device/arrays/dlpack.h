/*
 * The DLPack ABI (https://dmlc.github.io/dlpack/), as far as ufuncgen uses it: the structs a
 * "dltensor" / "dltensor_versioned" capsule points to.  Written here from the specification
 * rather than vendored, so the runtime has no dependency; the layouts below are the ABI and
 * must not change.  Enumerations are stored in fixed-width fields because a C enum's size is
 * the compiler's choice, while DLPack's producers and consumers all use int-sized fields.
 */
#ifndef UFG_DEVICE_DLPACK_H
#define UFG_DEVICE_DLPACK_H

#include <stdint.h>

/* The DLPack version this runtime produces (the versioned struct's layout dates from 1.0). */
#define UFG_DLPACK_MAJOR_VERSION 1
#define UFG_DLPACK_MINOR_VERSION 0

/* Capsule names of the Python exchange protocol; a consumer renames a capsule it took. */
#define UFG_DLPACK_CAPSULE "dltensor"
#define UFG_DLPACK_USED_CAPSULE "used_dltensor"
#define UFG_DLPACK_VERSIONED_CAPSULE "dltensor_versioned"
#define UFG_DLPACK_USED_VERSIONED_CAPSULE "used_dltensor_versioned"

/* DLDeviceType values ufuncgen names in messages (the rest are reported by number). */
enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13,
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16,
};

/* DLDataTypeCode values. */
enum {
    kDLInt = 0,
    kDLUInt = 1,
    kDLFloat = 2,
    kDLOpaqueHandle = 3,
    kDLBfloat = 4,
    kDLComplex = 5,
    kDLBool = 6,
};

/* DLManagedTensorVersioned.flags bits. */
#define UFG_DLPACK_FLAG_READ_ONLY ((uint64_t)1 << 0)
#define UFG_DLPACK_FLAG_IS_COPIED ((uint64_t)1 << 1)

typedef struct {
    int32_t device_type;    /* DLDeviceType */
    int32_t device_id;
} DLDevice;

typedef struct {
    uint8_t code;           /* DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;       /* in elements; NULL means C-contiguous */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif /* UFG_DEVICE_DLPACK_H */
