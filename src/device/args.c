/*
 * Argument conversion with messages that name the argument, the expectation and the value.
 */
#include "args.h"

#include <string.h>

#include "runtime.h"

/* Integers only: floats would be truncated silently and bools are a mistake here. */
static int
ufg_arg_require_int(PyObject *obj, const char *argname)
{
    if (PyBool_Check(obj) || !PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected an int, got %.100s", argname,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    return 0;
}

int
ufg_arg_int64(PyObject *obj, const char *argname, int64_t *out)
{
    PyObject *index;
    long long value;

    if (ufg_arg_require_int(obj, argname) < 0) {
        return -1;
    }
    index = PyNumber_Index(obj);
    if (index == NULL) {
        return -1;
    }
    value = PyLong_AsLongLong(index);
    Py_DECREF(index);
    if (value == -1 && PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Format(PyExc_ValueError, "%s: expected an int that fits in 64 bits, got %R",
                         argname, obj);
        }
        return -1;
    }
    *out = (int64_t)value;
    return 0;
}

ufg_hex_text
ufg_hex(uint64_t value)
{
    ufg_hex_text hex;

    PyOS_snprintf(hex.text, sizeof hex.text, "0x%llx", (unsigned long long)value);
    return hex;
}

int
ufg_arg_uintptr(PyObject *obj, const char *argname, uintptr_t *out)
{
    PyObject *index;
    unsigned long long value;

    if (ufg_arg_require_int(obj, argname) < 0) {
        return -1;
    }
    index = PyNumber_Index(obj);
    if (index == NULL) {
        return -1;
    }
    value = PyLong_AsUnsignedLongLong(index);
    Py_DECREF(index);
    if (value == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError, "%s: expected an int from 0 to 2**64 - 1, got %R",
                     argname, obj);
        return -1;
    }
    *out = (uintptr_t)value;
    return 0;
}

int
ufg_arg_device(const ufg_backend *backend, PyObject *obj, const char *argname, int *out)
{
    int64_t device;

    if (ufg_arg_int64(obj, argname, &device) < 0 ||
        ufg_runtime_check_device(backend, device, argname) < 0) {
        return -1;
    }
    *out = (int)device;
    return 0;
}

int
ufg_arg_int64_tuple(PyObject *obj, const char *argname, int max_len, int nonnegative,
                    int64_t *out, int *len)
{
    PyObject *seq;
    Py_ssize_t n;
    char item_name[96];

    if (!PyTuple_Check(obj) && !PyList_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a tuple of ints, got %.100s", argname,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    seq = obj;
    n = PySequence_Fast_GET_SIZE(seq);
    if (n > max_len) {
        PyErr_Format(PyExc_ValueError, "%s: expected at most %d entries, got %zd", argname,
                     max_len, n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyOS_snprintf(item_name, sizeof(item_name), "%s[%zd]", argname, i);
        if (ufg_arg_int64(PySequence_Fast_GET_ITEM(seq, i), item_name, &out[i]) < 0) {
            return -1;
        }
        if (nonnegative && out[i] < 0) {
            PyErr_Format(PyExc_ValueError, "%s: expected a non-negative int, got %lld",
                         item_name, (long long)out[i]);
            return -1;
        }
    }
    *len = (int)n;
    return 0;
}

/* Any sequence of sizes NumPy takes as a shape (a range, a 1-d integer array), as a tuple;
 * NULL with TypeError naming the argument and what it got for anything else. */
static PyObject *
ufg_arg_shape_tuple(PyObject *obj, const char *argname)
{
    if (PyTuple_Check(obj)) {
        return Py_NewRef(obj);
    }
    if (PySequence_Check(obj) && !PyUnicode_Check(obj) && !PyBytes_Check(obj) &&
        !PyByteArray_Check(obj)) {
        PyObject *tuple = PySequence_Tuple(obj);
        if (tuple != NULL || !PyErr_ExceptionMatches(PyExc_TypeError)) {
            return tuple;
        }
        PyErr_Clear();
    }
    PyErr_Format(PyExc_TypeError, "%s: expected an int or a sequence of ints, got %.100s",
                 argname, Py_TYPE(obj)->tp_name);
    return NULL;
}

int
ufg_arg_shape(PyObject *obj, const char *argname, int max_len, int64_t *out, int *len)
{
    PyObject *tuple;
    int status;

    /* One size: any integer with __index__ (NumPy's and CuPy's rule), bool excepted.  A 1-d
     * NumPy array has __index__ too, which refuses it: it is a sequence of sizes. */
    if (!PyTuple_Check(obj) && !PyList_Check(obj) && !PyBool_Check(obj) &&
        PyIndex_Check(obj)) {
        PyObject *index = PyNumber_Index(obj);
        if (index != NULL) {
            status = ufg_arg_int64(index, argname, &out[0]);
            Py_DECREF(index);
            if (status < 0) {
                return -1;
            }
            if (out[0] < 0) {
                PyErr_Format(PyExc_ValueError, "%s: expected a non-negative size, got %lld",
                             argname, (long long)out[0]);
                return -1;
            }
            *len = 1;
            return 0;
        }
        if (!PyErr_ExceptionMatches(PyExc_TypeError) || !PySequence_Check(obj)) {
            return -1;
        }
        PyErr_Clear();
    }
    if ((tuple = ufg_arg_shape_tuple(obj, argname)) == NULL) {
        return -1;
    }
    status = ufg_arg_int64_tuple(tuple, argname, max_len, 1, out, len);
    Py_DECREF(tuple);
    return status;
}

int
ufg_arg_value_bytes(PyObject *obj, const char *argname, unsigned char out[8])
{
    memset(out, 0, 8);
    if (obj == Py_None) {
        return 0;
    }
    if (!PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: expected bytes (at most 8) or None, got %.100s",
                     argname, Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (PyBytes_GET_SIZE(obj) > 8) {
        PyErr_Format(PyExc_ValueError, "%s: expected at most 8 bytes, got %zd", argname,
                     PyBytes_GET_SIZE(obj));
        return -1;
    }
    memcpy(out, PyBytes_AS_STRING(obj), (size_t)PyBytes_GET_SIZE(obj));
    return 0;
}

PyObject *
ufg_int64_tuple_new(const int64_t *values, int n)
{
    PyObject *tuple = PyTuple_New(n);

    for (int i = 0; tuple != NULL && i < n; i++) {
        PyObject *item = PyLong_FromLongLong(values[i]);
        if (item == NULL) {
            Py_CLEAR(tuple);
            break;
        }
        PyTuple_SET_ITEM(tuple, i, item);
    }
    return tuple;
}
