/*
 * launch_cast, the Python entry point of the runtime's own cast kernel (tests and tools use it;
 * device calls launch from C, src/device/call/).  It validates what it is handed, fills the
 * kernel parameters and launches.
 */
#include "launch_module.h"

#include <string.h>

#include "args.h"
#include "device_array.h"
#include "dtypes.h"
#include "launch.h"
#include "runtime.h"

/* ------------------------------------------------------------------ shared parsing */

static int
ufg_check_nargs(const char *function, Py_ssize_t nargs, Py_ssize_t expected)
{
    if (nargs != expected) {
        PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd positional arguments (%zd given)",
                     function, expected, nargs);
        return -1;
    }
    return 0;
}

/* A tuple of exactly `expected` entries. */
static int
ufg_check_tuple(PyObject *obj, const char *argname, Py_ssize_t expected, const char *why)
{
    if (!PyTuple_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a tuple, got %.100s", argname,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyTuple_GET_SIZE(obj) != expected) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd entries (%s), got %zd", argname,
                     expected, why, PyTuple_GET_SIZE(obj));
        return -1;
    }
    return 0;
}

/* A tuple of exactly `expected` ints. */
static int
ufg_parse_exact_int64s(PyObject *obj, const char *argname, int expected, const char *why,
                       int64_t *out)
{
    int len;

    if (ufg_check_tuple(obj, argname, expected, why) < 0) {
        return -1;
    }
    return ufg_arg_int64_tuple(obj, argname, expected, 0, out, &len);
}

/* ------------------------------------------------------------------ launch_cast */

/* One side of a cast: pointer, strides (one per dimension) and dtype. */
static int
ufg_parse_cast_side(PyObject *const *args, const char *side, int ndim, char **ptr,
                    int64_t *strides, int *code)
{
    char name[32];
    PyArray_Descr *descr;
    uintptr_t pointer;

    PyOS_snprintf(name, sizeof(name), "%s_ptr", side);
    if (ufg_arg_uintptr(args[0], name, &pointer) < 0) {
        return -1;
    }
    *ptr = (char *)pointer;
    PyOS_snprintf(name, sizeof(name), "%s_strides", side);
    if (ufg_parse_exact_int64s(args[1], name, ndim, "one per dimension of shape",
                               strides) < 0) {
        return -1;
    }
    PyOS_snprintf(name, sizeof(name), "%s_dtype", side);
    *code = ufg_dtype_convert(args[2], name, &descr);
    if (*code < 0) {
        return -1;
    }
    Py_DECREF(descr);
    return 0;
}

PyObject *
ufg_launch_cast_entry(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    int64_t shape[UFG_LAUNCH_CAST_MAX_DIMS], src_strides[UFG_LAUNCH_CAST_MAX_DIMS];
    int64_t dst_strides[UFG_LAUNCH_CAST_MAX_DIMS], mask_strides[UFG_LAUNCH_CAST_MAX_DIMS];
    const ufg_backend *backend;
    char *src, *dst, *mask = NULL;
    uintptr_t mask_pointer;
    int src_code, dst_code, device, ndim;
    uintptr_t stream;

    if (ufg_check_nargs("launch_cast", nargs, nargs == 11 ? 11 : 9) < 0 ||
        (backend = ufg_runtime_backend()) == NULL ||
        ufg_arg_device(backend, args[0], "device", &device) < 0 ||
        ufg_arg_uintptr(args[1], "stream", &stream) < 0 ||
        ufg_arg_int64_tuple(args[2], "shape", UFG_LAUNCH_CAST_MAX_DIMS, 1, shape, &ndim) < 0 ||
        ufg_shape_size(ndim, shape, "shape") < 0 ||
        ufg_parse_cast_side(args + 3, "src", ndim, &src, src_strides, &src_code) < 0 ||
        ufg_parse_cast_side(args + 6, "dst", ndim, &dst, dst_strides, &dst_code) < 0) {
        return NULL;
    }
    if (nargs == 11) {      /* mask_ptr, mask_strides: a bool array choosing what is written */
        if (ndim > UFG_DEVICE_MAX_DIMS) {
            PyErr_Format(PyExc_ValueError, "shape: a masked cast takes at most %d dimensions",
                         UFG_DEVICE_MAX_DIMS);
            return NULL;
        }
        if (ufg_arg_uintptr(args[9], "mask_ptr", &mask_pointer) < 0 ||
            ufg_parse_exact_int64s(args[10], "mask_strides", ndim, "one per dimension of shape",
                                   mask_strides) < 0) {
            return NULL;
        }
        mask = (char *)mask_pointer;
    }
    if (ufg_launch_cast(backend, device, stream, ndim, shape, src, src_strides,
                        (ufg_dtype_code)src_code, dst, dst_strides,
                        (ufg_dtype_code)dst_code, mask, mask_strides) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}
