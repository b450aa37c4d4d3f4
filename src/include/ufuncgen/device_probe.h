/*
 * How ufuncgen._device asks whether an object is a CUDA buffer: it calls ufuncgen._core's
 * dispatcher probe, handed over in a capsule (ufuncgen._core._device_probe), so that the
 * Function's dispatch and the device call's reading of every argument (where=, .at values,
 * to_device) give one answer for the same object.  A PyTorch CPU tensor, whose type has
 * __cuda_array_interface__ but whose instance raises AttributeError for it, is host memory
 * to both.
 */
#ifndef UFUNCGEN_DEVICE_PROBE_H
#define UFUNCGEN_DEVICE_PROBE_H

#include <Python.h>

typedef struct {
    int version;                    /* UFG_DEVICE_PROBE_VERSION */
    /* 1: a CUDA buffer, 0: host memory or no array at all, -1 with an exception set (its
     * __dlpack_device__ raised, or reading its __cuda_array_interface__ raised something
     * other than AttributeError). */
    int (*is_device_buffer)(PyObject *obj);
    /* For a device buffer: 1 where its data is read through __cuda_array_interface__, its
     * type's or, on a type with neither that nor __dlpack__, its instance's own (set in
     * __init__, or a types.SimpleNamespace); 0 where through DLPack; -1 with an error. */
    int (*reads_cuda_array_interface)(PyObject *obj);
    /* 1 for a torch.Tensor (or a subclass), whose fields the device call reads through its
     * C getters; else 0.  Never raises. */
    int (*is_torch_tensor)(PyObject *obj);
} ufg_device_probe_api;

#define UFG_DEVICE_PROBE_VERSION 3
#define UFG_DEVICE_PROBE_CAPSULE "ufuncgen._core._device_probe"

#endif /* UFUNCGEN_DEVICE_PROBE_H */
