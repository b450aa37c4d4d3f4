/*
 * A CUDA torch.Tensor read through its C getters (data_ptr(), shape, stride(), dtype,
 * get_device()) rather than its __cuda_array_interface__, a Python property that builds a
 * dict: on an H200 a call with two tensors spent two thirds of its 31 us host time in
 * PyTorch's Python code (the interface and __dlpack_device__), against 12 us for CuPy arrays.
 *
 * It reads the same fields the interface gives (PyTorch's is version 2: no producer stream)
 * and declines, for the interface to answer as before, any tensor the interface treats
 * specially or that this reading cannot describe exactly: one that requires grad (the
 * interface refuses it), a conjugated or negated view (lazy bits the memory does not hold),
 * a layout other than strided, a dtype device kernels do not know.
 */
#include "call.h"
#include "dtypes.h"

#include <string.h>

enum { UFG_TORCH_DATA_PTR, UFG_TORCH_STRIDE, UFG_TORCH_GET_DEVICE, UFG_TORCH_REQUIRES_GRAD,
       UFG_TORCH_IS_CONJ, UFG_TORCH_IS_NEG, UFG_TORCH_LAYOUT, UFG_TORCH_DTYPE, UFG_TORCH_SHAPE,
       UFG_TORCH_NAMES };
static PyObject *ufg_torch_names[UFG_TORCH_NAMES];     /* interned, in that order */
static PyObject *ufg_torch_dtype_codes;     /* torch.dtype -> code (int), or None: no kernels */
static PyObject *ufg_torch_strided;         /* torch.strided */

static int
ufg_torch_ready(void)
{
    static const char *const names[UFG_TORCH_NAMES] = {
        "data_ptr", "stride", "get_device", "requires_grad", "is_conj", "is_neg", "layout",
        "dtype", "shape"};
    PyObject *torch;

    if (ufg_torch_strided != NULL) {
        return 0;
    }
    for (int k = 0; k < UFG_TORCH_NAMES; k++) {
        if (ufg_torch_names[k] == NULL &&
            (ufg_torch_names[k] = PyUnicode_InternFromString(names[k])) == NULL) {
            return -1;
        }
    }
    if (ufg_torch_dtype_codes == NULL && (ufg_torch_dtype_codes = PyDict_New()) == NULL) {
        return -1;
    }
    torch = PyImport_ImportModule("torch");     /* imported already: the tensor exists */
    ufg_torch_strided = torch == NULL ? NULL : PyObject_GetAttrString(torch, "strided");
    Py_XDECREF(torch);
    return ufg_torch_strided == NULL ? -1 : 0;
}

/* The code of a torch.dtype ("torch.float32" names float32), -1 where kernels have none. */
static int
ufg_torch_dtype_code(PyObject *dtype, int *code)
{
    PyObject *known = PyDict_GetItemWithError(ufg_torch_dtype_codes, dtype), *text;
    const char *name;

    if (known != NULL) {
        *code = known == Py_None ? -1 : (int)PyLong_AsLong(known);
        return 0;
    }
    if (PyErr_Occurred() || (text = PyObject_Str(dtype)) == NULL) {
        return -1;
    }
    name = PyUnicode_AsUTF8(text);
    *code = -1;
    if (name != NULL && strncmp(name, "torch.", 6) == 0) {
        for (int c = 0; c < UFG_DT_COUNT; c++) {
            if (strcmp(name + 6, ufg_dtype_name((ufg_dtype_code)c)) == 0) {
                *code = c;
            }
        }
    }
    Py_DECREF(text);
    if (name == NULL) {
        return -1;
    }
    known = *code < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(*code);
    if (known == NULL || PyDict_SetItem(ufg_torch_dtype_codes, dtype, known) < 0) {
        Py_XDECREF(known);
        return -1;
    }
    Py_DECREF(known);
    return 0;
}

/* A bool attribute or no-argument method's answer: 1, 0, or -1 with an error. */
static int
ufg_torch_flag(PyObject *tensor, int name, int is_method)
{
    PyObject *value = is_method ? PyObject_CallMethodNoArgs(tensor, ufg_torch_names[name])
                                : PyObject_GetAttr(tensor, ufg_torch_names[name]);
    int result;

    if (value == NULL) {
        return -1;
    }
    result = PyObject_IsTrue(value);
    Py_DECREF(value);
    return result;
}

/* A tuple of ints (torch.Size is one) into out[]; -1 with an error, 0 when too long. */
static int
ufg_torch_ints(PyObject *tuple, int64_t *out, int *n)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) > UFG_CALL_MAX_NDIM) {
        return 0;
    }
    *n = (int)PyTuple_GET_SIZE(tuple);
    for (int d = 0; d < *n; d++) {
        out[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(tuple, d));
        if (out[d] == -1 && PyErr_Occurred()) {
            return -1;
        }
    }
    return 1;
}

/* Whether the tensor is one this reading describes exactly (see the top of the file). */
static int
ufg_torch_readable(PyObject *tensor, int *code)
{
    PyObject *layout, *dtype;
    int status;

    if ((status = ufg_torch_flag(tensor, UFG_TORCH_REQUIRES_GRAD, 0)) != 0 ||
        (status = ufg_torch_flag(tensor, UFG_TORCH_IS_CONJ, 1)) != 0 ||
        (status = ufg_torch_flag(tensor, UFG_TORCH_IS_NEG, 1)) != 0) {
        return status < 0 ? -1 : 0;
    }
    if ((layout = PyObject_GetAttr(tensor, ufg_torch_names[UFG_TORCH_LAYOUT])) == NULL) {
        return -1;
    }
    status = layout == ufg_torch_strided;
    Py_DECREF(layout);
    if (!status) {
        return 0;
    }
    if ((dtype = PyObject_GetAttr(tensor, ufg_torch_names[UFG_TORCH_DTYPE])) == NULL) {
        return -1;
    }
    status = ufg_torch_dtype_code(dtype, code);
    Py_DECREF(dtype);
    return status < 0 ? -1 : *code >= 0;
}

int
ufg_operand_from_torch(PyObject *tensor, const char *what, ufg_operand *op)
{
    PyObject *value;
    int code = -1, status, n_strides = 0;
    int64_t itemsize;
    unsigned long long ptr;
    long device;

    if (ufg_torch_ready() < 0 || (status = ufg_torch_readable(tensor, &code)) < 0) {
        return -1;
    }
    if (!status) {
        return 0;
    }
    op->code = (ufg_dtype_code)code;
    itemsize = ufg_dtype_itemsize(op->code);
    if ((value = PyObject_GetAttr(tensor, ufg_torch_names[UFG_TORCH_SHAPE])) == NULL) {
        return -1;
    }
    status = ufg_torch_ints(value, op->shape, &op->ndim);
    Py_DECREF(value);
    if (status <= 0) {
        return status;          /* more dimensions than kernels take: the interface says so */
    }
    if ((value = PyObject_CallMethodNoArgs(tensor, ufg_torch_names[UFG_TORCH_STRIDE])) == NULL) {
        return -1;
    }
    status = ufg_torch_ints(value, op->strides, &n_strides);
    Py_DECREF(value);
    if (status <= 0 || n_strides != op->ndim) {
        return status < 0 ? -1 : 0;
    }
    for (int d = 0; d < op->ndim; d++) {
        op->strides[d] *= itemsize;             /* PyTorch counts elements, we count bytes */
    }
    if ((value = PyObject_CallMethodNoArgs(tensor, ufg_torch_names[UFG_TORCH_DATA_PTR])) == NULL) {
        return -1;
    }
    ptr = PyLong_AsUnsignedLongLong(value);
    Py_DECREF(value);
    if (PyErr_Occurred()) {
        return -1;
    }
    if ((value = PyObject_CallMethodNoArgs(tensor, ufg_torch_names[UFG_TORCH_GET_DEVICE])) == NULL) {
        return -1;
    }
    device = PyLong_AsLong(value);
    Py_DECREF(value);
    if (PyErr_Occurred()) {
        return -1;
    }
    if (device < 0 || ufg_shape_size(op->ndim, op->shape, what) < 0 ||
        ufg_strides_span_fits(op->ndim, op->shape, op->strides, PyExc_ValueError, what) < 0) {
        return device < 0 ? 0 : -1;
    }
    op->kind = UFG_OPERAND_BUFFER;
    op->obj = tensor;
    op->ptr = (char *)(uintptr_t)ptr;
    op->device = (int)device;
    op->readonly = 0;
    op->has_producer = 0;
    op->producer = 0;
    op->owner = NULL;
    op->weak = 0;
    return 1;
}
