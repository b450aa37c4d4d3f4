/*
 * PyTorch tensors by type (torch_tensors.h).
 */
#include "torch_tensors.h"

#include <string.h>

/* The C base of every tensor type, by the name its module gives it (renamed from
 * _TensorBase in PyTorch 2.2). */
static int
ufg_torch_is_base_name(const char *name)
{
    return strcmp(name, "torch._C.TensorBase") == 0 || strcmp(name, "torch._C._TensorBase") == 0;
}

int
ufg_torch_is_tensor(PyObject *obj)
{
    PyObject *mro = Py_TYPE(obj)->tp_mro;

    if (mro == NULL || !PyTuple_Check(mro)) {
        return 0;
    }
    /* The last entry is object; the base is next to it in torch.Tensor's and its subclasses'
     * MROs, but a subclass that mixes in other classes may put it elsewhere. */
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); i++) {
        if (ufg_torch_is_base_name(((PyTypeObject *)PyTuple_GET_ITEM(mro, i))->tp_name)) {
            return 1;
        }
    }
    return 0;
}

int
ufg_torch_is_cuda(PyObject *obj)
{
    static PyObject *is_cuda_name = NULL;
    PyObject *value;
    int result;

    if (is_cuda_name == NULL && (is_cuda_name = PyUnicode_InternFromString("is_cuda")) == NULL) {
        return -1;
    }
    value = PyObject_GetAttr(obj, is_cuda_name);
    if (value == NULL) {
        return -1;
    }
    result = PyObject_IsTrue(value);
    Py_DECREF(value);
    return result;
}
