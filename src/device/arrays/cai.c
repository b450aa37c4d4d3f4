/*
 * DeviceArray.__cuda_array_interface__, version 3 of Numba's CUDA array interface:
 * https://numba.readthedocs.io/en/stable/cuda/cuda_array_interface.html
 */
#include "args.h"
#include "device_array.h"

#include "dtypes.h"

PyObject *
ufg_device_array_cai(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    char typestr[UFG_TYPESTR_SIZE];
    /* CAI v3 forbids stream 0 (legacy or per-thread default?); our 0 is the legacy stream. */
    const uintptr_t stream = self->stream != 0 ? self->stream : UFG_STREAM_LEGACY;
    PyObject *shape = NULL, *strides = NULL, *result = NULL;

    ufg_dtype_typestr(self->code, typestr);
    shape = ufg_int64_tuple_new(self->shape, self->ndim);
    if (shape == NULL) {
        goto done;
    }
    /* None marks C-contiguous data, as the interface prefers. */
    if (ufg_device_array_is_c_contiguous(self)) {
        strides = Py_NewRef(Py_None);
    }
    else {
        strides = ufg_int64_tuple_new(self->strides, self->ndim);
        if (strides == NULL) {
            goto done;
        }
    }
    /* The interface's rule: 0 for a zero-size array, whose pointer addresses nothing. */
    result = Py_BuildValue("{s:O, s:s, s:(KO), s:i, s:O, s:K}",
                           "shape", shape,
                           "typestr", typestr,
                           "data", ufg_device_array_size(self) == 0
                                       ? 0ull : (unsigned long long)(uintptr_t)self->ptr,
                           self->readonly ? Py_True : Py_False,
                           "version", 3,
                           "strides", strides,
                           "stream", (unsigned long long)stream);
    if (result != NULL && self->exports_no_stream &&
        PyDict_SetItemString(result, "stream", Py_None) < 0) {
        Py_CLEAR(result);
    }
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    return result;
}
