/*
 * Keywords: the positional outputs and the keywords of a device call, read straight from the
 * vectorcall argument vector.  What NumPy accepts on the host is accepted with the same
 * meaning; what it refuses is refused with its exception type (and, where the value is at
 * fault, NumPy's own converters produce the message).
 */
#include "call.h"

#include <string.h>

typedef enum {
    UFG_KW_OUT, UFG_KW_DTYPE, UFG_KW_CASTING, UFG_KW_ORDER, UFG_KW_SUBOK, UFG_KW_STREAM,
    UFG_KW_WHERE, UFG_KW_AXES, UFG_KW_AXIS, UFG_KW_KEEPDIMS, UFG_KW_COUNT
} ufg_keyword;

static const char *const ufg_keyword_names[UFG_KW_COUNT] = {
    "out", "dtype", "casting", "order", "subok", "stream", "where", "axes", "axis", "keepdims",
};

/* Which keywords each kind of function takes, in the order messages list them. */
static const char ufg_ufunc_supported[] = "casting, dtype, order, out, stream, subok, where";
static const char ufg_gufunc_supported[] =
    "axes, axis, casting, dtype, keepdims, order, out, stream, subok";

static int
ufg_keyword_allowed(ufg_keyword kw, int is_gufunc)
{
    if (kw == UFG_KW_WHERE) {
        return !is_gufunc;
    }
    if (kw == UFG_KW_AXES || kw == UFG_KW_AXIS || kw == UFG_KW_KEEPDIMS) {
        return is_gufunc;
    }
    return 1;
}

/* Keyword names are nearly always interned: compare by pointer first. */
static int
ufg_keyword_index(PyObject *name)
{
    static PyObject *interned[UFG_KW_COUNT];

    for (int i = 0; i < UFG_KW_COUNT; i++) {
        if (interned[i] == NULL) {
            interned[i] = PyUnicode_InternFromString(ufg_keyword_names[i]);
            if (interned[i] == NULL) {
                return -2;
            }
        }
        if (name == interned[i]) {
            return i;
        }
    }
    for (int i = 0; i < UFG_KW_COUNT; i++) {
        if (PyUnicode_CompareWithASCIIString(name, ufg_keyword_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static int
ufg_parse_positional(ufg_call *c, Py_ssize_t nargs, PyObject *const *args, PyObject **outs)
{
    if (nargs < c->nin || nargs > c->nargs) {
        PyObject *names = PyUnicode_FromString("");
        for (int k = 0; names != NULL && k < c->nin; k++) {
            PyObject *more = PyUnicode_FromFormat("%U%s%s", names, k ? ", " : "",
                                                  c->fn->arg_names[k]);
            Py_SETREF(names, more);
        }
        if (names != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() takes %d input argument(s) (%U) and at most %d "
                         "output(s), got %zd positional argument(s)", c->fn->name, c->nin,
                         names, c->nout, nargs);
            Py_DECREF(names);
        }
        return -1;
    }
    for (int j = 0; j < c->nout; j++) {
        outs[j] = c->nin + j < nargs && args[c->nin + j] != Py_None ? args[c->nin + j] : NULL;
    }
    return 0;
}

static int
ufg_parse_out(ufg_call *c, PyObject *out, int positional_outs, PyObject **outs)
{
    if (out == Py_None) {
        return 0;
    }
    if (positional_outs) {
        PyErr_Format(PyExc_TypeError, "%s: cannot specify 'out' as both a positional and a "
                     "keyword argument", c->fn->name);
        return -1;
    }
    if (PyTuple_Check(out)) {
        if (PyTuple_GET_SIZE(out) != c->nout) {
            PyErr_Format(PyExc_ValueError, "%s: out= has %zd entries, but the function has %d "
                         "output(s)", c->fn->name, PyTuple_GET_SIZE(out), c->nout);
            return -1;
        }
        for (int j = 0; j < c->nout; j++) {
            PyObject *item = PyTuple_GET_ITEM(out, j);
            outs[j] = item == Py_None ? NULL : item;
        }
        return 0;
    }
    if (c->nout != 1) {
        PyErr_Format(PyExc_TypeError, "%s: out= must be a tuple of %d arrays (or None)",
                     c->fn->name, c->nout);
        return -1;
    }
    outs[0] = out;
    return 0;
}

/* order=: results are allocated C-contiguous, which is what 'K', 'C' and 'A' give for the
 * arrays the device call makes. */
static int
ufg_parse_order(ufg_call *c, PyObject *order)
{
    if (order == Py_None) {
        return 0;
    }
    if (!PyUnicode_Check(order)) {
        PyErr_Format(PyExc_TypeError, "order must be str, not %.100s", Py_TYPE(order)->tp_name);
        return -1;
    }
    if (PyUnicode_CompareWithASCIIString(order, "K") == 0 ||
        PyUnicode_CompareWithASCIIString(order, "C") == 0 ||
        PyUnicode_CompareWithASCIIString(order, "A") == 0) {
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "%s: order=%R is not supported on the device; results are "
                 "allocated C-contiguous (order='K', 'C' or 'A')", c->fn->name, order);
    return -1;
}

static int
ufg_parse_bool_keyword(PyObject *value, const char *name, int *flag)
{
    if (!PyBool_Check(value)) {
        PyErr_Format(PyExc_TypeError, "'%s' must be a boolean", name);
        return -1;
    }
    *flag = value == Py_True;
    return 0;
}

/* where=: True and False decide for every element; anything else must be a bool mask on the
 * device (checked with the operands). */
static void
ufg_parse_where(ufg_call *c, PyObject *where)
{
    const int numpy_bool = PyArray_IsScalar(where, Bool);

    if (where == Py_True || (numpy_bool && PyObject_IsTrue(where) == 1)) {
        c->where_kind = UFG_WHERE_ALL;
    }
    else if (where == Py_False || numpy_bool) {
        c->where_kind = UFG_WHERE_NONE;
    }
    else {
        c->where_kind = UFG_WHERE_MASK;
        c->where = where;
    }
}

static int
ufg_parse_one_keyword(ufg_call *c, ufg_keyword kw, PyObject *value, int positional_outs,
                      PyObject **outs, int *where_given)
{
    int flag;

    switch (kw) {
    case UFG_KW_OUT:
        return ufg_parse_out(c, value, positional_outs, outs);
    case UFG_KW_DTYPE:
        c->dtype = value == Py_None ? NULL : value;
        return 0;
    case UFG_KW_CASTING:
        return PyArray_CastingConverter(value, &c->casting) ? 0 : -1;
    case UFG_KW_ORDER:
        return ufg_parse_order(c, value);
    case UFG_KW_SUBOK:
        return ufg_parse_bool_keyword(value, "subok", &flag);
    case UFG_KW_STREAM:
        return ufg_stream_from_object(value, &c->stream);
    case UFG_KW_WHERE:
        *where_given = 1;
        ufg_parse_where(c, value);
        return 0;
    case UFG_KW_AXES:
        c->axes = value == Py_None ? NULL : value;
        return 0;
    case UFG_KW_AXIS:
        c->axis = value == Py_None ? NULL : value;
        return 0;
    case UFG_KW_KEEPDIMS:
        return ufg_parse_bool_keyword(value, "keepdims", &c->keepdims_set);
    default:
        return 0;
    }
}

int
ufg_call_parse_keywords(ufg_call *c, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames, PyObject **outs)
{
    const int is_gufunc = c->fn->signature != NULL;
    const Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    int where_given = 0, out_keyword = 0;

    if (ufg_parse_positional(c, nargs, args, outs) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        int kw = ufg_keyword_index(name);
        if (kw == -2) {
            return -1;
        }
        if (kw < 0 || !ufg_keyword_allowed((ufg_keyword)kw, is_gufunc)) {
            PyErr_Format(PyExc_TypeError, "%s: keyword argument '%U' is not supported on the "
                         "device (supported there: %s)", c->fn->name, name,
                         is_gufunc ? ufg_gufunc_supported : ufg_ufunc_supported);
            return -1;
        }
        out_keyword |= kw == UFG_KW_OUT;
        if (ufg_parse_one_keyword(c, (ufg_keyword)kw, args[nargs + i], nargs > c->nin, outs,
                                  &where_given) < 0) {
            return -1;
        }
    }
    /* NumPy's warning: the unselected elements of a new result are uninitialised. */
    c->where_without_out = where_given && c->where_kind != UFG_WHERE_ALL && !out_keyword &&
                           nargs == c->nin;
    return 0;
}
