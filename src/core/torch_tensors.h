/*
 * PyTorch tensors, recognised by their type's C base (torch._C.TensorBase), so that the
 * dispatcher and the device call read what they need through the tensor's own C getters
 * rather than its Python-level __dlpack_device__ and __cuda_array_interface__, which cost
 * several microseconds a call each.  Nothing here imports torch: a process that has a tensor
 * has torch already.
 */
#ifndef UFG_CORE_TORCH_TENSORS_H
#define UFG_CORE_TORCH_TENSORS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* 1 when obj is a torch.Tensor (or a subclass), else 0; never raises. */
int ufg_torch_is_tensor(PyObject *obj);

/* A tensor's is_cuda: 1 or 0, -1 with an exception set. */
int ufg_torch_is_cuda(PyObject *obj);

#endif /* UFG_CORE_TORCH_TENSORS_H */
