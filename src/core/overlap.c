/*
 * Host gufunc calls whose outputs overlap their inputs: copy those inputs
 * first, so the answer is the one computed from unaliased operands.
 *
 * Only gufunc calls that pass outputs come here (function_object.c decides
 * that from the argument count and the keywords alone), so plain calls pay
 * nothing; a call whose outputs are apart from its inputs pays one bounds
 * test per (input, output) pair.
 */
#include "numpy_api.h"

#include "overlap.h"

#include <string.h>

/* The effort numpy.may_share_memory may spend proving two overlapping
 * spans share no element (x[::2] and x[1::2]) before it answers "maybe":
 * enough for the strided views people write, and a wrong "maybe" only
 * costs a copy. */
#define UFG_OVERLAP_MAX_WORK 1000

/* A malformed call may name more outputs than the gufunc has; NumPy
 * refuses it, so looking at this many is enough. */
#define UFG_OVERLAP_MAX_OUTPUTS (2 * NPY_MAXARGS)

static PyObject *ufg_may_share_memory = NULL; /* numpy.may_share_memory */
static PyObject *ufg_max_work_kwnames = NULL; /* ("max_work",) */
static PyObject *ufg_max_work = NULL;         /* UFG_OVERLAP_MAX_WORK */

/* Resolved on first need: most processes never pass an overlapping out=. */
static int
ufg_overlap_resolve(void)
{
    PyObject *numpy;

    if (ufg_may_share_memory != NULL) {
        return 0;
    }
    if (ufg_max_work_kwnames == NULL) {
        ufg_max_work_kwnames = Py_BuildValue("(s)", "max_work");
        if (ufg_max_work_kwnames == NULL) {
            return -1;
        }
    }
    if (ufg_max_work == NULL) {
        ufg_max_work = PyLong_FromLong(UFG_OVERLAP_MAX_WORK);
        if (ufg_max_work == NULL) {
            return -1;
        }
    }
    numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL) {
        return -1;
    }
    ufg_may_share_memory = PyObject_GetAttrString(numpy, "may_share_memory");
    Py_DECREF(numpy);
    return ufg_may_share_memory == NULL ? -1 : 0;
}

/* The bytes [*low, *high) an array's elements lie in; 0 if it has none. */
static int
ufg_array_span(PyArrayObject *array, char **low, char **high)
{
    const npy_intp *shape = PyArray_DIMS(array);
    const npy_intp *strides = PyArray_STRIDES(array);
    char *lo = PyArray_BYTES(array), *hi = lo;
    int d;

    for (d = 0; d < PyArray_NDIM(array); d++) {
        npy_intp extent;

        if (shape[d] == 0) {
            return 0;
        }
        extent = (shape[d] - 1) * strides[d];
        if (extent < 0) {
            lo += extent;
        }
        else {
            hi += extent;
        }
    }
    *low = lo;
    *high = hi + PyArray_ITEMSIZE(array);
    return 1;
}

/* 1 if the two arrays may share an element, 0 if not, -1 on error. */
static int
ufg_arrays_may_overlap(PyArrayObject *a, PyArrayObject *b)
{
    char *a_low, *a_high, *b_low, *b_high;
    PyObject *argv[3], *answer;
    int shared;

    if (!ufg_array_span(a, &a_low, &a_high) ||
        !ufg_array_span(b, &b_low, &b_high) || a_high <= b_low ||
        b_high <= a_low) {
        return 0;
    }
    if (ufg_overlap_resolve() < 0) {
        return -1;
    }
    argv[0] = (PyObject *)a;
    argv[1] = (PyObject *)b;
    argv[2] = ufg_max_work;
    answer = PyObject_Vectorcall(ufg_may_share_memory, argv, 2,
                                 ufg_max_work_kwnames);
    if (answer == NULL) {
        return -1;
    }
    shared = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return shared;
}

static int
ufg_add_output(PyObject *obj, PyArrayObject **outputs, int count)
{
    if (PyArray_Check(obj) && count < UFG_OVERLAP_MAX_OUTPUTS) {
        outputs[count++] = (PyArrayObject *)obj;
    }
    return count;
}

/* The ndarray outputs: positional after the inputs, or `out=` (one array or
 * a tuple).  Returns how many. */
static int
ufg_collect_outputs(int nin, PyObject *const *args, Py_ssize_t nargs,
                    PyObject *kwnames, PyArrayObject **outputs)
{
    Py_ssize_t i, k;
    int count = 0;

    for (i = nin; i < nargs; i++) {
        count = ufg_add_output(args[i], outputs, count);
    }
    for (k = 0; kwnames != NULL && k < PyTuple_GET_SIZE(kwnames); k++) {
        PyObject *value = args[nargs + k];

        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k),
                                             "out") != 0) {
            continue;
        }
        if (!PyTuple_Check(value)) {
            count = ufg_add_output(value, outputs, count);
            continue;
        }
        for (i = 0; i < PyTuple_GET_SIZE(value); i++) {
            count = ufg_add_output(PyTuple_GET_ITEM(value, i), outputs, count);
        }
    }
    return count;
}

/* 1 if `input` is an ndarray that may share memory with an output. */
static int
ufg_input_overlaps(PyObject *input, PyArrayObject *const *outputs, int count)
{
    int i, overlap;

    if (!PyArray_Check(input)) {
        return 0;
    }
    for (i = 0; i < count; i++) {
        overlap = ufg_arrays_may_overlap((PyArrayObject *)input, outputs[i]);
        if (overlap != 0) {
            return overlap;
        }
    }
    return 0;
}

/*
 * The call again, with a copy in place of every input that overlaps an
 * output, from `first` (known to overlap) on.  An input passed twice
 * (matmul(a, a, out=a)) is copied once.
 */
static PyObject *
ufg_call_with_copies(PyObject *ufunc, int nin, int first, PyObject *const *args,
                     Py_ssize_t nargs, PyObject *kwnames,
                     PyArrayObject *const *outputs, int noutputs)
{
    Py_ssize_t nall = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject **vector = PyMem_Malloc((size_t)nall * sizeof(PyObject *));
    PyObject *result = NULL;
    int i, j, overlap = 1;

    if (vector == NULL) {
        return PyErr_NoMemory();
    }
    memcpy(vector, args, (size_t)nall * sizeof(PyObject *));
    for (i = first; i < nin; i++) {
        for (j = 0; j < i && args[j] != args[i]; j++) {
        }
        if (j < i) {
            vector[i] = vector[j] == args[j] ? args[i] : Py_NewRef(vector[j]);
            continue;
        }
        overlap = i == first ? 1 : ufg_input_overlaps(args[i], outputs, noutputs);
        if (overlap > 0) {
            vector[i] = PyArray_NewCopy((PyArrayObject *)args[i], NPY_KEEPORDER);
        }
        if (overlap < 0 || vector[i] == NULL) {
            break;
        }
    }
    if (i == nin) {
        result = PyObject_Vectorcall(ufunc, vector, (size_t)nargs, kwnames);
    }
    for (i = first; i < nin; i++) {
        if (vector[i] != args[i]) {
            Py_XDECREF(vector[i]);
        }
    }
    PyMem_Free(vector);
    return result;
}

PyObject *
ufg_overlap_call_gufunc(PyObject *ufunc, PyObject *const *args, size_t nargsf,
                        PyObject *kwnames)
{
    PyArrayObject *outputs[UFG_OVERLAP_MAX_OUTPUTS];
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int nin = ((PyUFuncObject *)ufunc)->nin, noutputs, i, overlap = 0;

    if (nargs < nin) {
        nin = (int)nargs; /* NumPy will say what is missing */
    }
    noutputs = ufg_collect_outputs(nin, args, nargs, kwnames, outputs);
    for (i = 0; i < nin && noutputs > 0; i++) {
        overlap = ufg_input_overlaps(args[i], outputs, noutputs);
        if (overlap != 0) {
            break;
        }
    }
    if (overlap < 0) {
        return NULL;
    }
    if (overlap == 0) {
        return PyObject_Vectorcall(ufunc, args, nargsf, kwnames);
    }
    return ufg_call_with_copies(ufunc, nin, i, args, nargs, kwnames, outputs,
                                noutputs);
}
