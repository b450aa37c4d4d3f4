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
    UFG_KW_WHERE, UFG_KW_AXES, UFG_KW_AXIS, UFG_KW_KEEPDIMS, UFG_KW_SIGNATURE, UFG_KW_COUNT
} ufg_keyword;

static const char *const ufg_keyword_names[UFG_KW_COUNT] = {
    "out", "dtype", "casting", "order", "subok", "stream", "where", "axes", "axis", "keepdims",
    "signature",
};

/* Which keywords each kind of function takes, in the order messages list them. */
static const char ufg_ufunc_supported[] =
    "casting, dtype, order, out, signature, stream, subok, where";
static const char ufg_gufunc_supported[] =
    "axes, axis, casting, dtype, keepdims, order, out, signature, stream, subok";

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

/* out= as NumPy takes it: never beside a positional output, None included on either side;
 * None stands for a single output only (a function of several takes a tuple). */
static int
ufg_parse_out(ufg_call *c, PyObject *out, int positional_outs, PyObject **outs)
{
    if (positional_outs) {
        PyErr_Format(PyExc_TypeError, "%s: cannot specify 'out' as both a positional and a "
                     "keyword argument", c->fn->name);
        return -1;
    }
    if (out == Py_None) {
        if (c->nout != 1) {
            PyErr_Format(PyExc_TypeError, "%s: 'out' must be a tuple of arrays (one per "
                         "output, %d here), not None", c->fn->name, c->nout);
            return -1;
        }
        return 0;
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
        PyErr_Format(PyExc_TypeError, "%s: out= must be a tuple of %d arrays",
                     c->fn->name, c->nout);
        return -1;
    }
    outs[0] = out;
    return 0;
}

/* A DType class (np.dtypes.Float64DType), which NumPy's dtype= takes as the type it names,
 * as its default instance (a new reference); np.dtype() of the class would be object.  NULL,
 * with no error, for anything else and for a class without a default instance (StrDType):
 * the converter and NumPy decide. */
static PyArray_Descr *
ufg_dtype_class_default(PyObject *value)
{
    if (!PyType_Check(value) || !PyType_IsSubtype((PyTypeObject *)value, &PyArrayDescr_Type) ||
        (PyTypeObject *)value == &PyArrayDescr_Type) {
        return NULL;
    }
    PyObject *instance = PyObject_CallNoArgs(value);
    if (instance == NULL || !PyArray_DescrCheck(instance)) {
        PyErr_Clear();
        Py_XDECREF(instance);
        return NULL;
    }
    return (PyArray_Descr *)instance;
}

int
ufg_dtype_keyword(const char *who, PyObject *value, PyArray_Descr **descr)
{
    *descr = NULL;
    if (value == NULL || value == Py_None) {
        return 0;
    }
    *descr = ufg_dtype_class_default(value);
    if (*descr == NULL && PyArray_DescrConverter(value, descr) != NPY_SUCCEED) {
        return -1;
    }
    if (!PyArray_ISNBO((*descr)->byteorder)) {
        PyErr_Format(PyExc_TypeError, "%s: dtype=%R: dtype= selects the type of the "
                     "computation, not a byte order; give the type alone (np.float64 or its "
                     "name)", who, value);
        Py_CLEAR(*descr);
        return -1;
    }
    return 0;
}

/* Every output given (by position or out=) must be an array, which NumPy checks before any
 * other keyword value; whether it is one on the call's device is the operands' concern. */
static int
ufg_check_out_entries(const ufg_call *c, PyObject *const *outs)
{
    for (int j = 0; j < c->nout; j++) {
        int device;
        PyObject *type_name;
        if (outs[j] == NULL || PyArray_Check(outs[j])) {
            continue;
        }
        device = ufg_is_device_object(outs[j]);
        if (device != 0) {
            if (device < 0) {
                return -1;
            }
            continue;
        }
        type_name = ufg_type_name(outs[j]);
        if (type_name != NULL) {
            PyErr_Format(PyExc_TypeError, "%s: out= must hold arrays, but output %d is a %U",
                         c->fn->name, j, type_name);
            Py_DECREF(type_name);
        }
        return -1;
    }
    return 0;
}

/* order=, read by NumPy's converter: how new results are laid out ('K', the default: like
 * the inputs; 'A': Fortran order if the arrays are; numpy_order.c) and, for an out= whose
 * elements share memory, the order NumPy writes them in. */
static int
ufg_parse_order(ufg_call *c, PyObject *order)
{
    NPY_ORDER value = NPY_KEEPORDER;

    if (order == Py_None) {
        return 0;
    }
    if (!PyArray_OrderConverter(order, &value)) {
        return -1;
    }
    c->fortran_results = value == NPY_FORTRANORDER;
    c->order = value;
    return 0;
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

int
ufg_where_from_host_value(PyObject *where, int *value)
{
    PyArray_Descr *bool_descr;
    PyArrayObject *mask;
    int device;

    if (where == Py_True || where == Py_False || PyArray_IsScalar(where, Bool)) {
        *value = PyObject_IsTrue(where);
        return 0;
    }
    if (PyList_Check(where) || PyTuple_Check(where) || PyArray_Check(where)) {
        return 1;
    }
    device = ufg_is_device_object(where);
    if (device != 0) {
        return device < 0 ? -1 : 1;
    }
    bool_descr = PyArray_DescrFromType(NPY_BOOL);
    mask = (PyArrayObject *)PyArray_FromAny(where, bool_descr, 0, 0, 0, NULL);  /* steals */
    if (mask == NULL) {
        return -1;
    }
    if (PyArray_NDIM(mask) != 0) {
        Py_DECREF(mask);
        return 1;
    }
    *value = *(npy_bool *)PyArray_DATA(mask) != 0;
    Py_DECREF(mask);
    return 0;
}

/* where=: a host value decides for every element; anything else must be a bool mask on the
 * device (checked with the operands). */
static int
ufg_parse_where(ufg_call *c, PyObject *where)
{
    int value;
    const int status = ufg_where_from_host_value(where, &value);

    if (status < 0) {
        return -1;
    }
    if (status == 0) {
        c->where_kind = value ? UFG_WHERE_ALL : UFG_WHERE_NONE;
        return 0;
    }
    c->where_kind = UFG_WHERE_MASK;
    c->where = where;
    return 0;
}

static int
ufg_parse_one_keyword(ufg_call *c, ufg_keyword kw, PyObject *value, int *where_given)
{
    int flag;

    switch (kw) {
    case UFG_KW_DTYPE:          /* read first, by ufg_call_parse_keywords */
    case UFG_KW_SIGNATURE:      /* likewise */
        return 0;
    case UFG_KW_CASTING:
        return PyArray_CastingConverter(value, &c->casting) ? 0 : -1;
    case UFG_KW_ORDER:
        return ufg_parse_order(c, value);
    case UFG_KW_SUBOK:
        return ufg_parse_bool_keyword(value, "subok", &flag);
    case UFG_KW_STREAM:
        c->stream_given = value != Py_None;
        c->stream_keeper = ufg_stream_owner(value);
        return ufg_stream_from_object(value, &c->stream);
    case UFG_KW_WHERE:
        *where_given = 1;
        return ufg_parse_where(c, value);
    case UFG_KW_AXES:
        c->axes = value;
        return 0;
    case UFG_KW_AXIS:
        c->axis = value;
        return 0;
    case UFG_KW_KEEPDIMS:
        c->keepdims_given = 1;
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
    PyObject *dtype_value = NULL, *signature_value = NULL;

    if (ufg_parse_positional(c, nargs, args, outs) < 0) {
        return -1;
    }
    /* As NumPy: every name is checked, then out= is read, then the other values. */
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, i);
        int kw = ufg_keyword_index(name);
        if (kw == -2) {
            return -1;
        }
        if (kw < 0 || !ufg_keyword_allowed((ufg_keyword)kw, is_gufunc)) {
            /* The device takes every keyword NumPy's call does: another is NumPy's error. */
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U' (it "
                         "takes: %s)", c->fn->name, name,
                         is_gufunc ? ufg_gufunc_supported : ufg_ufunc_supported);
            return -1;
        }
        if (kw == UFG_KW_DTYPE) {
            dtype_value = args[nargs + i];
        }
        if (kw == UFG_KW_SIGNATURE) {
            signature_value = args[nargs + i];
        }
        if (kw == UFG_KW_OUT) {
            out_keyword = 1;
            if (ufg_parse_out(c, args[nargs + i], nargs > c->nin, outs) < 0) {
                return -1;
            }
        }
    }
    if (ufg_check_out_entries(c, outs) < 0) {
        return -1;
    }
    /* NumPy's refusal of both comes before either value is read, None included; signature=
     * itself is read by ufunc.resolve_dtypes, which raises NumPy's errors for it (resolve.c). */
    if (dtype_value != NULL && signature_value != NULL) {
        PyErr_SetString(PyExc_TypeError, "cannot specify both 'signature' and 'dtype'");
        return -1;
    }
    c->signature = signature_value == Py_None ? NULL : signature_value;
    if (dtype_value != NULL && ufg_dtype_keyword(c->fn->name, dtype_value, &c->dtype) < 0) {
        return -1;             /* dtype= next, as NumPy */
    }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        int kw = ufg_keyword_index(PyTuple_GET_ITEM(kwnames, i));
        if (kw != UFG_KW_OUT &&
            ufg_parse_one_keyword(c, (ufg_keyword)kw, args[nargs + i], &where_given) < 0) {
            return -1;
        }
    }
    /* NumPy's warning: the unselected elements of a new result are uninitialised. */
    c->where_without_out = where_given && c->where_kind != UFG_WHERE_ALL && !out_keyword &&
                           nargs == c->nin;
    return 0;
}
