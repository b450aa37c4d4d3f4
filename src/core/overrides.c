/*
 * __array_ufunc__ overrides that receive the ufuncgen.Function: NumPy's
 * protocol (NEP 13), run by the Function itself.  See overrides.h for the
 * rules and for why device buffers are never asked.
 *
 * Only calls with an argument that is not a plain host value get here
 * (ufg_dispatch_is_plain_host_call), so none of this is on the fast path.
 */
#include "numpy_api.h"

#include "overrides.h"

#include <string.h>

#include "dispatch.h"

/* Inputs, outputs and `where`: the most operands one call can name. */
#define UFG_MAX_CANDIDATES (2 * NPY_MAXARGS + 1)

static PyObject *ufg_array_ufunc_name = NULL;  /* "__array_ufunc__" */
static PyObject *ufg_out_name = NULL;          /* "out" */
static PyObject *ufg_signature_name = NULL;    /* "signature" */
static PyObject *ufg_sig_name = NULL;          /* "sig" */
static PyObject *ufg_method_names[UFG_METHOD_COUNT];
/* ndarray.__array_ufunc__, which NumPy does not count as an override;
 * borrowed from ndarray's type dict, which lives as long as NumPy. */
static PyObject *ufg_ndarray_array_ufunc = NULL;
/* numpy._NoValue: reduce's "no initial" given by position. */
static PyObject *ufg_no_value = NULL;

static const char *const ufg_method_spellings[UFG_METHOD_COUNT] = {
    "__call__", "reduce", "accumulate", "reduceat", "outer", "at",
};

static int
ufg_intern(PyObject **slot, const char *text)
{
    if (*slot == NULL) {
        *slot = PyUnicode_InternFromString(text);
    }
    return *slot == NULL ? -1 : 0;
}

int
ufg_overrides_init(void)
{
    int m;

    if (ufg_intern(&ufg_array_ufunc_name, "__array_ufunc__") < 0 ||
        ufg_intern(&ufg_out_name, "out") < 0 ||
        ufg_intern(&ufg_signature_name, "signature") < 0 ||
        ufg_intern(&ufg_sig_name, "sig") < 0) {
        return -1;
    }
    for (m = 0; m < UFG_METHOD_COUNT; m++) {
        if (ufg_intern(&ufg_method_names[m], ufg_method_spellings[m]) < 0) {
            return -1;
        }
    }
    ufg_ndarray_array_ufunc = _PyType_Lookup(&PyArray_Type, ufg_array_ufunc_name);
    if (ufg_ndarray_array_ufunc == NULL) {
        PyErr_SetString(PyExc_ImportError,
                        "ufuncgen: numpy.ndarray has no __array_ufunc__");
        return -1;
    }
    if (ufg_no_value == NULL) {
        PyObject *numpy = PyImport_ImportModule("numpy");
        if (numpy == NULL) {
            return -1;
        }
        ufg_no_value = PyObject_GetAttrString(numpy, "_NoValue");
        Py_DECREF(numpy);
    }
    return ufg_no_value == NULL ? -1 : 0;
}

PyObject *
ufg_overrides_method_name(ufg_ufunc_method method)
{
    return ufg_method_names[method];
}

/* ------------------------------------------------------------------ */
/* The operands, as NumPy normalises them before asking for overrides   */
/* ------------------------------------------------------------------ */

typedef struct {
    PyObject *inputs[NPY_MAXARGS]; /* borrowed */
    int nin;
    PyObject *out;   /* new reference: a tuple with one entry per output, or NULL */
    PyObject *where; /* borrowed, or NULL */
} ufg_operands;

/* Parsing answers UFG_PARSED, or UFG_REFUSED for a call NumPy raises on
 * before it looks for overrides (the caller forwards it to get that error),
 * or -1 with an exception set. */
enum { UFG_REFUSED = 0, UFG_PARSED = 1 };

/* Position of `name` in `names`, or -1.  Keyword names are always str. */
static int
ufg_name_index(PyObject *name, const char *const *names, int count)
{
    int i;

    for (i = 0; i < count; i++) {
        if (PyUnicode_CompareWithASCIIString(name, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static int
ufg_all_none(PyObject *tuple)
{
    Py_ssize_t i;

    for (i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
        if (PyTuple_GET_ITEM(tuple, i) != Py_None) {
            return 0;
        }
    }
    return 1;
}

/* __call__ and outer: `out` given as a keyword, as NumPy accepts it. */
static int
ufg_normalise_call_out_keyword(PyObject *value, int nout, PyObject **out)
{
    if (PyTuple_Check(value)) {
        if (PyTuple_GET_SIZE(value) != nout) {
            return UFG_REFUSED;
        }
        *out = ufg_all_none(value) ? NULL : Py_NewRef(value);
        return UFG_PARSED;
    }
    if (value == Py_None) {
        return UFG_PARSED;
    }
    if (nout != 1) {
        return UFG_REFUSED; /* NumPy wants a tuple for several outputs */
    }
    *out = PyTuple_Pack(1, value);
    return *out == NULL ? -1 : UFG_PARSED;
}

/* __call__: outputs given by position, padded with None to nout. */
static int
ufg_normalise_positional_outs(PyObject *const *values, Py_ssize_t count,
                              int nout, PyObject **out)
{
    PyObject *tuple = PyTuple_New(nout);
    Py_ssize_t i;

    if (tuple == NULL) {
        return -1;
    }
    for (i = 0; i < nout; i++) {
        PyTuple_SET_ITEM(tuple, i, Py_NewRef(i < count ? values[i] : Py_None));
    }
    if (ufg_all_none(tuple)) {
        Py_CLEAR(tuple);
    }
    *out = tuple;
    return UFG_PARSED;
}

static const char *const ufg_call_keywords[] = {
    "out", "where", "casting", "order", "subok", "dtype", "signature", "sig",
};
static const char *const ufg_gufunc_call_keywords[] = {
    "out", "axes", "axis", "keepdims", "casting", "order", "subok", "dtype",
    "signature", "sig",
};

PyObject *
ufg_keyword_value(PyObject *const *values, PyObject *kwnames, const char *name)
{
    Py_ssize_t k;

    for (k = 0; kwnames != NULL && k < PyTuple_GET_SIZE(kwnames); k++) {
        if (PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k),
                                             name) == 0) {
            return values[k];
        }
    }
    return NULL;
}

/* The keyword checks NumPy makes on __call__ and outer before overrides. */
static int
ufg_call_keywords_accepted(PyUFuncObject *ufunc, PyObject *const *values,
                           PyObject *kwnames)
{
    const char *const *names = ufunc->core_enabled ? ufg_gufunc_call_keywords
                                                   : ufg_call_keywords;
    int count = ufunc->core_enabled
                    ? (int)(sizeof(ufg_gufunc_call_keywords) / sizeof(char *))
                    : (int)(sizeof(ufg_call_keywords) / sizeof(char *));
    Py_ssize_t k;

    for (k = 0; kwnames != NULL && k < PyTuple_GET_SIZE(kwnames); k++) {
        if (ufg_name_index(PyTuple_GET_ITEM(kwnames, k), names, count) < 0) {
            return 0;
        }
    }
#define UFG_HAS(name) (ufg_keyword_value(values, kwnames, name) != NULL)
    if ((UFG_HAS("axis") && UFG_HAS("axes")) ||
        (UFG_HAS("sig") && UFG_HAS("signature")) ||
        (UFG_HAS("dtype") && (UFG_HAS("sig") || UFG_HAS("signature")))) {
        return 0;
    }
#undef UFG_HAS
    return 1;
}

/* __call__(*inputs, *outputs, **kwargs) and outer(A, B, **kwargs). */
static int
ufg_parse_call(PyUFuncObject *ufunc, int outer, PyObject *const *args,
               Py_ssize_t nargs, PyObject *kwnames, ufg_operands *ops)
{
    PyObject *const *values = args + nargs;
    PyObject *out_keyword = ufg_keyword_value(values, kwnames, "out");
    int i;

    if (outer ? (ufunc->core_enabled || ufunc->nin != 2 || nargs != 2)
              : (nargs < ufunc->nin || nargs > ufunc->nin + ufunc->nout)) {
        return UFG_REFUSED;
    }
    if (!ufg_call_keywords_accepted(ufunc, values, kwnames) ||
        (out_keyword != NULL && nargs > ufunc->nin)) {
        return UFG_REFUSED;
    }
    for (i = 0; i < ufunc->nin; i++) {
        ops->inputs[i] = args[i];
    }
    ops->nin = ufunc->nin;
    ops->where = ufg_keyword_value(values, kwnames, "where");
    if (nargs > ufunc->nin) {
        return ufg_normalise_positional_outs(args + ufunc->nin,
                                             nargs - ufunc->nin, ufunc->nout,
                                             &ops->out);
    }
    if (out_keyword != NULL) {
        return ufg_normalise_call_out_keyword(out_keyword, ufunc->nout, &ops->out);
    }
    return UFG_PARSED;
}

/* reduce, accumulate and reduceat take keywords by position too. */
typedef struct {
    const char *const *names; /* the parameters, in positional order */
    int count;
    int ninputs;     /* the leading parameters that are operands */
    int out_index;
    int where_index; /* -1: no `where` */
} ufg_reduce_like;

static const char *const ufg_reduce_names[] = {
    "array", "axis", "dtype", "out", "keepdims", "initial", "where",
};
static const char *const ufg_accumulate_names[] = {
    "array", "axis", "dtype", "out",
};
static const char *const ufg_reduceat_names[] = {
    "array", "indices", "axis", "dtype", "out",
};
#define UFG_REDUCE_MAX_PARAMS 7

static const ufg_reduce_like ufg_reduce_params = {ufg_reduce_names, 7, 1, 3, 6};
static const ufg_reduce_like ufg_accumulate_params = {ufg_accumulate_names, 4, 1, 3, -1};
static const ufg_reduce_like ufg_reduceat_params = {ufg_reduceat_names, 5, 2, 4, -1};

/* A reduction's single output: `x`, `(x,)`, None or `(None,)` by keyword.  By position NumPy
 * takes the value as it is, a tuple too (its override sees out=((x,),)), None aside. */
static int
ufg_normalise_reduce_out(PyObject *value, int by_position, PyObject **out)
{
    if (PyTuple_Check(value) && !by_position) {
        if (PyTuple_GET_SIZE(value) != 1) {
            return UFG_REFUSED;
        }
        value = PyTuple_GET_ITEM(value, 0);
    }
    if (value == Py_None) {
        return UFG_PARSED;
    }
    *out = PyTuple_Pack(1, value);
    return *out == NULL ? -1 : UFG_PARSED;
}

/* Each parameter's value, by position or by keyword; NULL if not given. */
static int
ufg_bind_parameters(const ufg_reduce_like *params, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames, PyObject **bound)
{
    Py_ssize_t i, k;

    if (nargs > params->count) {
        return UFG_REFUSED;
    }
    for (i = 0; i < params->count; i++) {
        bound[i] = i < nargs ? args[i] : NULL;
    }
    for (k = 0; kwnames != NULL && k < PyTuple_GET_SIZE(kwnames); k++) {
        int index = ufg_name_index(PyTuple_GET_ITEM(kwnames, k), params->names,
                                   params->count);
        if (index < 0 || bound[index] != NULL) {
            return UFG_REFUSED; /* unknown, or given twice */
        }
        bound[index] = args[nargs + k];
    }
    return UFG_PARSED;
}

static int
ufg_parse_reduce_like(PyUFuncObject *ufunc, const ufg_reduce_like *params,
                      PyObject *const *args, Py_ssize_t nargs,
                      PyObject *kwnames, ufg_operands *ops)
{
    PyObject *bound[UFG_REDUCE_MAX_PARAMS];
    int i, status;

    /* NumPy refuses these before it looks for overrides. */
    if (ufunc->core_enabled || ufunc->nin != 2 || ufunc->nout != 1) {
        return UFG_REFUSED;
    }
    status = ufg_bind_parameters(params, args, nargs, kwnames, bound);
    if (status != UFG_PARSED) {
        return status;
    }
    for (i = 0; i < params->ninputs; i++) {
        if (bound[i] == NULL) {
            return UFG_REFUSED;
        }
        ops->inputs[i] = bound[i];
    }
    ops->nin = params->ninputs;
    ops->where = params->where_index < 0 ? NULL : bound[params->where_index];
    if (bound[params->out_index] != NULL) {
        return ufg_normalise_reduce_out(bound[params->out_index],
                                        params->out_index < nargs, &ops->out);
    }
    return UFG_PARSED;
}

/* at(a, indices, b=None): positional only, no outputs. */
static int
ufg_parse_at(PyUFuncObject *ufunc, PyObject *const *args, Py_ssize_t nargs,
             PyObject *kwnames, ufg_operands *ops)
{
    Py_ssize_t i;

    if ((kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) ||
        ufunc->core_enabled || ufunc->nin > 2 || ufunc->nout != 1 ||
        nargs != ufunc->nin + 1) {
        return UFG_REFUSED;
    }
    for (i = 0; i < nargs; i++) {
        ops->inputs[i] = args[i];
    }
    ops->nin = (int)nargs;
    return UFG_PARSED;
}

static int
ufg_parse_operands(PyUFuncObject *ufunc, ufg_ufunc_method method,
                   PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                   ufg_operands *ops)
{
    switch (method) {
    case UFG_METHOD_CALL:
        return ufg_parse_call(ufunc, 0, args, nargs, kwnames, ops);
    case UFG_METHOD_OUTER:
        return ufg_parse_call(ufunc, 1, args, nargs, kwnames, ops);
    case UFG_METHOD_REDUCE:
        return ufg_parse_reduce_like(ufunc, &ufg_reduce_params, args, nargs,
                                     kwnames, ops);
    case UFG_METHOD_ACCUMULATE:
        return ufg_parse_reduce_like(ufunc, &ufg_accumulate_params, args,
                                     nargs, kwnames, ops);
    case UFG_METHOD_REDUCEAT:
        return ufg_parse_reduce_like(ufunc, &ufg_reduceat_params, args, nargs,
                                     kwnames, ops);
    case UFG_METHOD_AT:
        return ufg_parse_at(ufunc, args, nargs, kwnames, ops);
    default:
        PyErr_Format(PyExc_SystemError, "ufuncgen: unknown ufunc method %d",
                     (int)method);
        return -1;
    }
}

/* ------------------------------------------------------------------ */
/* The overriding arguments                                             */
/* ------------------------------------------------------------------ */

/*
 * The __array_ufunc__ NumPy would call for `obj` (a new reference, Py_None
 * for an opt-out) in *method, returning 1; 0 when `obj` has none that
 * counts; -1 with an exception set.  Looked up on the type, as NumPy does.
 */
static int
ufg_override_of(PyObject *obj, PyObject **method)
{
    PyTypeObject *type = Py_TYPE(obj);
    PyObject *found = _PyType_Lookup(type, ufg_array_ufunc_name);
    int device;

    if (found == NULL || found == ufg_ndarray_array_ufunc) {
        return 0;
    }
    /* A CUDA buffer's __array_ufunc__ is not asked: the device path serves it. */
    device = ufg_dispatch_is_device_buffer(obj);
    if (device != 0) {
        return device < 0 ? -1 : 0;
    }
    *method = PyObject_GetAttr((PyObject *)type, ufg_array_ufunc_name);
    return *method == NULL ? -1 : 1;
}

typedef struct {
    PyObject *objects[UFG_MAX_CANDIDATES]; /* new references; NULL once asked */
    PyObject *methods[UFG_MAX_CANDIDATES]; /* new references */
    int count;
} ufg_overriders;

static void
ufg_overriders_release(ufg_overriders *found)
{
    int i;

    for (i = 0; i < found->count; i++) {
        Py_CLEAR(found->objects[i]);
        Py_CLEAR(found->methods[i]);
    }
    found->count = 0;
}

/* Adds `obj` if it overrides and no argument of its type came before. */
static int
ufg_consider(PyObject *obj, ufg_overriders *found)
{
    PyObject *method = NULL;
    int i, status;

    for (i = 0; i < found->count; i++) {
        if (Py_TYPE(found->objects[i]) == Py_TYPE(obj)) {
            return 0;
        }
    }
    status = ufg_override_of(obj, &method);
    if (status <= 0) {
        return status;
    }
    if (method == Py_None) {
        Py_DECREF(method);
        PyErr_Format(PyExc_TypeError,
                     "operand '%.200s' does not support ufuncs "
                     "(__array_ufunc__=None)",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    found->objects[found->count] = Py_NewRef(obj);
    found->methods[found->count] = method;
    found->count++;
    return 0;
}

static int
ufg_collect_overriders(const ufg_operands *ops, ufg_overriders *found)
{
    Py_ssize_t i, nout = ops->out == NULL ? 0 : PyTuple_GET_SIZE(ops->out);

    for (i = 0; i < ops->nin; i++) {
        if (ufg_consider(ops->inputs[i], found) < 0) {
            return -1;
        }
    }
    for (i = 0; i < nout; i++) {
        if (ufg_consider(PyTuple_GET_ITEM(ops->out, i), found) < 0) {
            return -1;
        }
    }
    if (ops->where != NULL && ufg_consider(ops->where, found) < 0) {
        return -1;
    }
    return 0;
}

/* The next one to ask: the leftmost with no subclass further right; -1
 * when all were asked, -2 with an exception set. */
static int
ufg_next_overrider(const ufg_overriders *found)
{
    int i, j, is_subclass;

    for (i = 0; i < found->count; i++) {
        if (found->objects[i] == NULL) {
            continue;
        }
        for (j = i + 1; j < found->count; j++) {
            if (found->objects[j] == NULL) {
                continue;
            }
            is_subclass = PyObject_IsInstance(
                found->objects[j], (PyObject *)Py_TYPE(found->objects[i]));
            if (is_subclass < 0) {
                return -2;
            }
            if (is_subclass) {
                break;
            }
        }
        if (j == found->count) {
            return i;
        }
    }
    return -1;
}

/* ------------------------------------------------------------------ */
/* Asking them                                                          */
/* ------------------------------------------------------------------ */

/* Removes `key` if present; its value (a new reference) in *value if asked. */
static int
ufg_dict_take(PyObject *dict, PyObject *key, PyObject **value)
{
    PyObject *found = PyDict_GetItemWithError(dict, key);

    if (found == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    if (value != NULL) {
        *value = Py_NewRef(found);
    }
    return PyDict_DelItem(dict, key);
}

/* A reduction's parameters given by position go to overrides by name. */
static int
ufg_copy_positional(const ufg_reduce_like *params, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwargs)
{
    Py_ssize_t i;

    for (i = params->ninputs; i < nargs; i++) {
        if (i == params->out_index ||
            (strcmp(params->names[i], "initial") == 0 && args[i] == ufg_no_value)) {
            continue;
        }
        if (PyDict_SetItemString(kwargs, params->names[i], args[i]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The keywords overrides receive: the call's own, `out` normalised to a
 * tuple (or left out), and for the reductions the parameters given by
 * position, as NumPy passes them. */
static PyObject *
ufg_override_kwargs(ufg_ufunc_method method, const ufg_operands *ops,
                    PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const ufg_reduce_like *params =
        method == UFG_METHOD_REDUCE       ? &ufg_reduce_params
        : method == UFG_METHOD_ACCUMULATE ? &ufg_accumulate_params
        : method == UFG_METHOD_REDUCEAT   ? &ufg_reduceat_params
                                          : NULL;
    PyObject *kwargs = PyDict_New(), *sig = NULL;
    Py_ssize_t i;

    if (kwargs == NULL) {
        return NULL;
    }
    for (i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
        if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
            goto fail;
        }
    }
    if (ops->out != NULL ? PyDict_SetItem(kwargs, ufg_out_name, ops->out) < 0
                         : ufg_dict_take(kwargs, ufg_out_name, NULL) < 0) {
        goto fail;
    }
    if (params != NULL && ufg_copy_positional(params, args, nargs, kwargs) < 0) {
        goto fail;
    }
    /* NumPy hands `sig` to overrides as `signature`. */
    if (ufg_dict_take(kwargs, ufg_sig_name, &sig) < 0 ||
        (sig != NULL && PyDict_SetItem(kwargs, ufg_signature_name, sig) < 0)) {
        Py_XDECREF(sig);
        goto fail;
    }
    Py_XDECREF(sig);
    return kwargs;
fail:
    Py_DECREF(kwargs);
    return NULL;
}

/* ([first,] function, method name, *inputs): what an override receives
 * after its self (first), and what the error message is built from. */
static PyObject *
ufg_override_args(PyObject *first, PyObject *function, ufg_ufunc_method method,
                  const ufg_operands *ops)
{
    int lead = first != NULL, i;
    PyObject *tuple = PyTuple_New(lead + 2 + ops->nin);

    if (tuple == NULL) {
        return NULL;
    }
    if (lead) {
        PyTuple_SET_ITEM(tuple, 0, Py_NewRef(first));
    }
    PyTuple_SET_ITEM(tuple, lead, Py_NewRef(function));
    PyTuple_SET_ITEM(tuple, lead + 1, Py_NewRef(ufg_method_names[method]));
    for (i = 0; i < ops->nin; i++) {
        PyTuple_SET_ITEM(tuple, lead + 2 + i, Py_NewRef(ops->inputs[i]));
    }
    return tuple;
}

/* Every override returned NotImplemented: NumPy's TypeError, worded by
 * ufuncgen._overrides (Python builds that message more plainly than C). */
static void
ufg_raise_all_declined(PyObject *function, ufg_ufunc_method method,
                       const ufg_operands *ops, PyObject *kwargs)
{
    PyObject *module, *formatter, *call_args, *message = NULL;

    module = PyImport_ImportModule("ufuncgen._overrides");
    if (module == NULL) {
        return;
    }
    formatter = PyObject_GetAttrString(module, "not_implemented_message");
    Py_DECREF(module);
    if (formatter == NULL) {
        return;
    }
    call_args = ufg_override_args(NULL, function, method, ops);
    if (call_args != NULL) {
        message = PyObject_Call(formatter, call_args, kwargs);
        Py_DECREF(call_args);
    }
    Py_DECREF(formatter);
    if (message != NULL) {
        PyErr_SetObject(PyExc_TypeError, message);
        Py_DECREF(message);
    }
}

static PyObject *
ufg_ask_overriders(PyObject *function, ufg_ufunc_method method,
                   const ufg_operands *ops, ufg_overriders *found,
                   PyObject *kwargs)
{
    for (;;) {
        int next = ufg_next_overrider(found);
        PyObject *obj, *override, *call_args, *result;

        if (next == -2) {
            return NULL;
        }
        if (next == -1) {
            ufg_raise_all_declined(function, method, ops, kwargs);
            return NULL;
        }
        obj = found->objects[next];
        override = found->methods[next];
        found->objects[next] = NULL; /* asked: the references go with it */
        found->methods[next] = NULL;
        call_args = ufg_override_args(obj, function, method, ops);
        result = call_args == NULL ? NULL : PyObject_Call(override, call_args, kwargs);
        Py_XDECREF(call_args);
        Py_DECREF(override);
        Py_DECREF(obj);
        if (result != Py_NotImplemented) {
            return result;
        }
        Py_DECREF(result);
    }
}

int
ufg_overrides_check(PyObject *function, PyObject *ufunc,
                    ufg_ufunc_method method, PyObject *const *args,
                    Py_ssize_t nargs, PyObject *kwnames, PyObject **result)
{
    ufg_operands ops = {.nin = 0, .out = NULL, .where = NULL};
    ufg_overriders found = {.count = 0};
    PyObject *kwargs = NULL;
    int status;

    *result = NULL;
    status = ufg_parse_operands((PyUFuncObject *)ufunc, method, args, nargs,
                                kwnames, &ops);
    if (status != UFG_PARSED) {
        return status < 0 ? -1 : 0;
    }
    status = ufg_collect_overriders(&ops, &found);
    if (status < 0 || found.count == 0) {
        goto done;
    }
    kwargs = ufg_override_kwargs(method, &ops, args, nargs, kwnames);
    if (kwargs == NULL) {
        status = -1;
        goto done;
    }
    *result = ufg_ask_overriders(function, method, &ops, &found, kwargs);
    status = *result == NULL ? -1 : 1;
done:
    Py_XDECREF(kwargs);
    ufg_overriders_release(&found);
    Py_XDECREF(ops.out);
    return status;
}
