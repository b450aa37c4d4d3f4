/*
 * The device call's pieces that ufuncgen.device (Python) uses: recognising a CUDA array,
 * viewing one as a DeviceArray, and reading a stream= value, the same code the call runs.
 */
#include "call.h"

#include "public.h"

#include "dlpack_import.h"

/* is_device_object(obj) -> bool */
PyObject *
ufg_public_is_device_object(PyObject *Py_UNUSED(module), PyObject *obj)
{
    const int found = ufg_is_device_object(obj);

    return found < 0 ? NULL : PyBool_FromLong(found);
}

/* stream_handle(stream) -> int: the cudaStream_t of any stream= value. */
PyObject *
ufg_public_stream_handle(PyObject *Py_UNUSED(module), PyObject *obj)
{
    uintptr_t stream;

    return ufg_stream_from_object(obj, &stream) < 0
        ? NULL : PyLong_FromUnsignedLongLong((unsigned long long)stream);
}

/* check_dlpack_device(obj, what): None if obj's __dlpack_device__() is a CUDA device (or it
 * has none), else the BufferError naming where its memory is. */
PyObject *
ufg_public_check_dlpack_device(PyObject *Py_UNUSED(module), PyObject *const *args,
                               Py_ssize_t nargs)
{
    char where[320];
    const char *what;

    if (nargs != 2 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "check_dlpack_device(obj, what: str)");
        return NULL;
    }
    if ((what = PyUnicode_AsUTF8(args[1])) == NULL) {
        return NULL;
    }
    if (PyObject_HasAttrString(args[0], "__dlpack_device__") &&
        ufg_dlpack_check_producer_device(args[0], ufg_describe(args[0], what, where,
                                                               sizeof where)) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* as_device_array(obj, what) -> DeviceArray viewing any CUDA array (no copy). */
PyObject *
ufg_public_as_device_array(PyObject *Py_UNUSED(module), PyObject *const *args,
                           Py_ssize_t nargs)
{
    ufg_DeviceArrayObject *view;
    ufg_operand op;
    const char *what;

    if (nargs != 2 || !PyUnicode_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "as_device_array(obj, what: str)");
        return NULL;
    }
    what = PyUnicode_AsUTF8(args[1]);
    if (what == NULL) {
        return NULL;
    }
    if (ufg_DeviceArray_Check(args[0])) {
        return Py_NewRef(args[0]);
    }
    op.owner = NULL;
    if (ufg_operand_from_buffer(args[0], what, &op, 0) < 0) {
        return NULL;
    }
    view = ufg_device_array_new(op.ptr, op.ndim, op.shape, op.strides, ufg_call_descr(op.code),
                                op.device, op.readonly,
                                op.has_producer && op.producer != 1 ? op.producer : 0,
                                op.owner != NULL ? op.owner : args[0]);
    ufg_operand_release(&op);
    return (PyObject *)view;
}
