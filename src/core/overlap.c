/*
 * Host gufunc calls whose outputs overlap their inputs: copy those inputs
 * first, so the answer is the one computed from unaliased operands.
 *
 * Only gufunc calls that pass outputs come here (function_object.c decides
 * that from the argument count and the keywords alone), so plain calls pay
 * nothing; a call whose outputs are apart from its inputs pays one bounds
 * test per (input, output) pair, and a conversion of each input that is
 * neither an ndarray nor a value NumPy copies anyway (a number, a list).
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

/* Inputs NumPy always makes a new array of, by value: numbers, strings, NumPy scalars, None,
 * lists and tuples (a view inside one is copied out).  Exact types: a subclass may define
 * __array__. */
static int
ufg_numpy_makes_new_array_of(PyObject *input)
{
    PyTypeObject *type = Py_TYPE(input);

    return input == Py_None || type == &PyFloat_Type || type == &PyLong_Type ||
           type == &PyBool_Type || type == &PyComplex_Type || type == &PyUnicode_Type ||
           type == &PyBytes_Type || type == &PyList_Type || type == &PyTuple_Type ||
           PyArray_IsScalar(input, Generic);
}

/*
 * The ndarray NumPy will compute `input` from, where that may be a view of memory an output
 * has: the input itself if it is an ndarray, else NumPy's own conversion of it (a
 * memoryview, an object with __array__ or __array_interface__, ... may give a view; NumPy
 * looks for some of these on the instance, so every other object is converted to tell).
 * *array is a new reference, or NULL for an input NumPy makes a new array of anyway.
 * 0, or -1 with an exception set (the conversion's, which NumPy's own would raise too).
 */
static int
ufg_input_array(PyObject *input, PyArrayObject **array)
{
    *array = NULL;
    if (PyArray_Check(input)) {
        *array = (PyArrayObject *)Py_NewRef(input);
        return 0;
    }
    if (ufg_numpy_makes_new_array_of(input)) {
        return 0;
    }
    *array = (PyArrayObject *)PyArray_FromAny(input, NULL, 0, 0, 0, NULL);
    return *array == NULL ? -1 : 0;
}

/* 1 if the array may share memory with an output, 0 if not, -1 on error. */
static int
ufg_array_overlaps_outputs(PyArrayObject *array, PyArrayObject *const *outputs, int count)
{
    int i, overlap;

    for (i = 0; i < count; i++) {
        overlap = ufg_arrays_may_overlap(array, outputs[i]);
        if (overlap != 0) {
            return overlap;
        }
    }
    return 0;
}

/* A read-only view of `data` (memory `base` holds) with this shape and these strides. */
static PyObject *
ufg_view_of(PyTypeObject *type, PyObject *base, PyArray_Descr *descr, int ndim,
            npy_intp const *shape, npy_intp const *strides, void *data)
{
    PyObject *view;

    Py_INCREF(descr);
    view = PyArray_NewFromDescr(type, descr, ndim, shape, strides, data, 0, NULL);
    if (view == NULL) {
        return NULL;
    }
    Py_INCREF(base);
    if (PyArray_SetBaseObject((PyArrayObject *)view, base) < 0) {
        Py_DECREF(view);
        return NULL;
    }
    return view;
}

/*
 * A copy of `array` that keeps its broadcast axes (stride 0, more than one element) broadcast:
 * the elements it reads copied once, viewed again with the stride 0.  A whole copy of
 * np.broadcast_to(o[:1, None], (2**40, 3)) would ask for 24 TiB.
 */
static PyObject *
ufg_copy_keeping_broadcasts(PyArrayObject *array)
{
    const int ndim = PyArray_NDIM(array);
    npy_intp read_shape[NPY_MAXDIMS], strides[NPY_MAXDIMS];
    PyArray_Descr *descr = PyArray_DESCR(array);
    PyObject *read, *copy;
    int broadcast = 0;

    for (int d = 0; d < ndim; d++) {
        const int repeats = PyArray_STRIDE(array, d) == 0 && PyArray_DIM(array, d) > 1;
        read_shape[d] = repeats ? 1 : PyArray_DIM(array, d);
        broadcast |= repeats;
    }
    if (!broadcast) {
        return PyArray_NewCopy(array, NPY_KEEPORDER);
    }
    read = ufg_view_of(&PyArray_Type, (PyObject *)array, descr, ndim, read_shape,
                       PyArray_STRIDES(array), PyArray_DATA(array));
    copy = read == NULL ? NULL : PyArray_NewCopy((PyArrayObject *)read, NPY_KEEPORDER);
    Py_XDECREF(read);
    if (copy == NULL) {
        return NULL;
    }
    for (int d = 0; d < ndim; d++) {
        strides[d] = read_shape[d] == PyArray_DIM(array, d)
                     ? PyArray_STRIDE((PyArrayObject *)copy, d) : 0;
    }
    /* The view holds its own reference to the copy, its base. */
    PyObject *view = ufg_view_of(Py_TYPE(array), copy, descr, ndim, PyArray_DIMS(array),
                                 strides, PyArray_DATA((PyArrayObject *)copy));
    Py_DECREF(copy);
    return view;
}

/*
 * What to pass for `input`: *copy is a copy of its array (a new reference) if that may share
 * memory with an output, else NULL, meaning the input itself, untouched: an object NumPy
 * converts is handed over as it was, so that NumPy converts it as always (its
 * __array_wrap__ still wraps the outputs NumPy allocates).  0, or -1 with an exception set.
 */
static int
ufg_copy_if_overlapping(PyObject *input, PyArrayObject *const *outputs, int count,
                        PyObject **copy)
{
    PyArrayObject *array;
    int overlap;

    *copy = NULL;
    if (ufg_input_array(input, &array) < 0) {
        return -1;
    }
    if (array == NULL) {
        return 0;
    }
    overlap = ufg_array_overlaps_outputs(array, outputs, count);
    if (overlap > 0) {
        *copy = ufg_copy_keeping_broadcasts(array);
        overlap = *copy == NULL ? -1 : 1;
    }
    Py_DECREF(array);
    return overlap < 0 ? -1 : 0;
}

/*
 * The call again, with a copy in place of every input that overlaps an
 * output: `first_copy` (taken over) for input `first`, the first that does,
 * and copies of the later ones that do.  An input passed twice
 * (matmul(a, a, out=a)) is copied once.
 */
static PyObject *
ufg_call_with_copies(PyObject *ufunc, int nin, int first, PyObject *first_copy,
                     PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     PyArrayObject *const *outputs, int noutputs)
{
    Py_ssize_t nall = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));
    PyObject **vector = PyMem_Malloc((size_t)nall * sizeof(PyObject *));
    PyObject *result = NULL, *copy;
    int i, j;

    if (vector == NULL) {
        Py_DECREF(first_copy);
        return PyErr_NoMemory();
    }
    memcpy(vector, args, (size_t)nall * sizeof(PyObject *));
    vector[first] = first_copy;
    for (i = first + 1; i < nin; i++) {
        for (j = 0; j < i && args[j] != args[i]; j++) {
        }
        if (j < i) {
            vector[i] = vector[j] == args[j] ? args[i] : Py_NewRef(vector[j]);
            continue;
        }
        if (ufg_copy_if_overlapping(args[i], outputs, noutputs, &copy) < 0) {
            break;
        }
        if (copy != NULL) {
            vector[i] = copy;
        }
    }
    if (i == nin) {
        result = PyObject_Vectorcall(ufunc, vector, (size_t)nargs, kwnames);
    }
    for (i = first; i < nin; i++) {
        if (vector[i] != args[i]) {
            Py_DECREF(vector[i]);
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
    int nin = ((PyUFuncObject *)ufunc)->nin, noutputs, i;
    PyObject *copy;

    if (nargs < nin) {
        nin = (int)nargs; /* NumPy will say what is missing */
    }
    noutputs = ufg_collect_outputs(nin, args, nargs, kwnames, outputs);
    for (i = 0; i < nin && noutputs > 0; i++) {
        if (ufg_copy_if_overlapping(args[i], outputs, noutputs, &copy) < 0) {
            return NULL;
        }
        if (copy != NULL) {
            return ufg_call_with_copies(ufunc, nin, i, copy, args, nargs, kwnames, outputs,
                                        noutputs);
        }
    }
    return PyObject_Vectorcall(ufunc, args, nargsf, kwnames);
}
