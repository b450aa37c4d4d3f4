/*
 * A gufunc's core dimensions: NumPy's axes=/axis=/keepdims=, the operands' core sizes checked
 * against each other, against frozen sizes and against process_core_dims (computed output
 * dimensions), the loop dimensions broadcast, and every buffer rewritten in kernel layout
 * (loop axes first, then the core axes in layout order).
 *
 * Everything here is plain C on the success path.  Only when the core sizes do not fit does it
 * ask NumPy: the function's own np.ufunc runs on empty stand-ins with the operands' core shapes
 * (nothing is computed), so the caller gets NumPy's exact message, with the function's name in
 * front.  The checks run in the order the Python dispatcher ran them, whose messages the tests
 * match.
 */
#include "call.h"

#include <string.h>

#include "dtypes.h"

/* What axes=/axis=/keepdims= say about each operand. */
typedef struct {
    /* Core dimensions as axes= counts them: with keepdims an output counts the inputs'. */
    int ncore[UFG_CALL_MAX_OPERANDS];
    /* The caller's ndim of each operand (a scalar: 0; an output to allocate: loop + core). */
    int ndim[UFG_CALL_MAX_OPERANDS];
    /* The core axes, normalised (>= 0), in layout order; with keepdims outputs have none. */
    int axes[UFG_CALL_MAX_OPERANDS][UFG_CALL_MAX_NDIM];
    /* keepdims: each output's size-1 axes the kernel does not see, counted from the end
     * (< 0); as many for every output (the inputs' core dimensions), each where its axes=
     * entry puts them. */
    int nkept;
    int kept[UFG_CALL_MAX_OPERANDS][UFG_CALL_MAX_NDIM];
} ufg_core_layout;

/* ------------------------------------------------------------------ messages */

PyObject *
ufg_axis_error(void)
{
    static PyObject *type = NULL;

    if (type == NULL) {
        type = ufg_module_attribute("numpy.exceptions", "AxisError");
    }
    return type;
}

/* "argument 'x'" / "output 'sum'": ufg_call_what without the function's name. */
static const char *
ufg_operand_label(const ufg_call *c, int k, char *buffer, size_t size)
{
    const char *what = ufg_call_what(c, k, buffer, size);
    const char *label = strstr(what, ": ");
    return label != NULL ? label + 2 : what;
}



/* A TypeError with "<name>: <message> <type of obj>". */
static int
ufg_type_error(const ufg_call *c, const char *message, PyObject *obj)
{
    PyObject *type = ufg_type_name(obj);

    if (type != NULL) {
        PyErr_Format(PyExc_TypeError, "%s: %s %U", c->fn->name, message, type);
        Py_DECREF(type);
    }
    return -1;
}

/*
 * The exception set now, as the Python dispatcher re-raised NumPy's: a ValueError or
 * TypeError (subclasses included) becomes that base type with the function's name in front
 * (unless the text already starts with it); anything else is left as it is.
 */
static int
ufg_reraise_named(const ufg_call *c)
{
    PyObject *type, *value, *traceback, *text, *base;
    const char *utf8;

    if (PyErr_ExceptionMatches(PyExc_TypeError)) {
        base = PyExc_TypeError;
    }
    else if (PyErr_ExceptionMatches(PyExc_ValueError)) {
        base = PyExc_ValueError;
    }
    else {
        return -1;
    }
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    text = value != NULL ? PyObject_Str(value) : NULL;
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    if (text == NULL) {
        return -1;
    }
    utf8 = PyUnicode_AsUTF8(text);
    if (utf8 == NULL) {
        Py_DECREF(text);
        return -1;
    }
    if (strncmp(utf8, c->fn->name, strlen(c->fn->name)) == 0) {
        PyErr_SetObject(base, text);
    }
    else {
        PyErr_Format(base, "%s: %U", c->fn->name, text);
    }
    Py_DECREF(text);
    return -1;
}

/* ------------------------------------------------------------------ operand dimensions */

/* Operand k's core dimensions as NumPy counts them for its dimension checks and axes=: with
 * keepdims an output keeps the inputs' core axes (as size 1), so it counts theirs. */
static int
ufg_counted_core_ndims(const ufg_call *c, int k)
{
    return c->keepdims_set && k >= c->nin ? c->fn->core_ndims[0] : c->fn->core_ndims[k];
}

/* Every operand has at least its core dimensions (a scalar has none: it can only be an
 * operand without core dimensions).  Inputs first, then outputs: before axes=, whose default
 * would not fit either. */
static int
ufg_check_enough_dims(const ufg_call *c)
{
    for (int k = 0; k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        const int need = ufg_counted_core_ndims(c, k);
        const int has = op->kind == UFG_OPERAND_BUFFER ? op->ndim : 0;
        char what[160];
        if (op->kind == UFG_OPERAND_ABSENT || has >= need) {
            continue;
        }
        PyErr_Format(PyExc_ValueError,
                     "%s does not have enough dimensions (has %d, the layout %s requires %d)",
                     ufg_call_what(c, k, what, sizeof what), has, c->fn->signature, need);
        return -1;
    }
    return 0;
}

/* The inputs' loop dimensions before broadcasting with outputs: what an output to allocate
 * has in front of its core dimensions, as far as axes= is concerned. */
static int
ufg_inputs_loop_ndim(const ufg_call *c)
{
    int loop_ndim = 0;

    for (int k = 0; k < c->nin; k++) {
        const ufg_operand *op = &c->ops[k];
        const int n = (op->kind == UFG_OPERAND_BUFFER ? op->ndim : 0) - c->fn->core_ndims[k];
        if (n > loop_ndim) {
            loop_ndim = n;
        }
    }
    return loop_ndim;
}

/* ------------------------------------------------------------------ axes= / axis= */

/* The AxisError of an axis outside [-ndim, ndim): `axis` names it (the caller's object), or
 * NULL and `value` does (a default axis). */
static int
ufg_axis_out_of_bounds(const ufg_call *c, int k, PyObject *axis, long long value, int ndim)
{
    char what[160];
    PyObject *type = ufg_axis_error();

    if (type == NULL) {
        return -1;
    }
    if (axis != NULL) {
        PyErr_Format(type, "%s: axis %S is out of bounds for %s of dimension %d", c->fn->name,
                     axis, ufg_operand_label(c, k, what, sizeof what), ndim);
    }
    else {
        PyErr_Format(type, "%s: axis %lld is out of bounds for %s of dimension %d",
                     c->fn->name, value, ufg_operand_label(c, k, what, sizeof what), ndim);
    }
    return -1;
}

/* One axis of operand k as an axis in [0, ndim); `message` words the TypeError of an object
 * that is no integer. */
static int
ufg_normalise_axis(const ufg_call *c, int k, PyObject *axis, int ndim, const char *message,
                   int *result)
{
    int value;
    const int status = ufg_axis_from_object(axis, &value);

    if (status != 0) {
        return status < 0 ? -1 : ufg_type_error(c, message, axis);
    }
    if (value < -ndim || value >= ndim) {
        return ufg_axis_out_of_bounds(c, k, axis, value, ndim);
    }
    *result = value < 0 ? value + ndim : value;
    return 0;
}

/* Operand k's default core axes: its last ones (NumPy's). */
static int
ufg_default_axes(const ufg_call *c, int k, ufg_core_layout *layout)
{
    const int nc = layout->ncore[k], ndim = layout->ndim[k];

    if (nc > ndim) {
        return ufg_axis_out_of_bounds(c, k, NULL, -nc, ndim);
    }
    for (int i = 0; i < nc; i++) {
        layout->axes[k][i] = ndim - nc + i;
    }
    return 0;
}


/* The AxisError of an axes= entry whose length is not operand k's core dimensions; an
 * integer entry is shown as the 1-tuple it stands for. */
static int
ufg_axes_entry_length_error(const ufg_call *c, int k, int ncore, PyObject *entry)
{
    char what[160];
    PyObject *type = ufg_axis_error();
    PyObject *shown;

    if (type == NULL) {
        return -1;
    }
    shown = PyTuple_Check(entry) ? Py_NewRef(entry) : PyTuple_Pack(1, entry);
    if (shown == NULL) {
        return -1;
    }
    PyErr_Format(type, "%s: %s has %d core dimension(s), but %zd dimension(s) are specified "
                 "by axes item %d: %R", c->fn->name, ufg_operand_label(c, k, what, sizeof what),
                 ncore, PyTuple_GET_SIZE(shown), k, shown);
    Py_DECREF(shown);
    return -1;
}

/* axes= item k: a tuple of integers, or one integer for an operand with one core dimension,
 * as operand k's core axes.  Every axis is checked before repeats, as the Python dispatcher
 * did. */
static int
ufg_parse_axes_entry(const ufg_call *c, int k, PyObject *entry, ufg_core_layout *layout)
{
    const int ncore = layout->ncore[k], ndim = layout->ndim[k];
    const int single = !PyTuple_Check(entry);
    uint64_t seen = 0;
    char message[96];

    if (single && (PyBool_Check(entry) || PyArray_IsScalar(entry, Bool) ||
                   !PyIndex_Check(entry))) {
        PyOS_snprintf(message, sizeof message, "axes item %d should be a tuple or an int, not", k);
        return ufg_type_error(c, message, entry);
    }
    if ((single ? 1 : PyTuple_GET_SIZE(entry)) != ncore) {
        return ufg_axes_entry_length_error(c, k, ncore, entry);
    }
    PyOS_snprintf(message, sizeof message, "axes item %d should hold integers, not", k);
    for (int i = 0; i < ncore; i++) {
        PyObject *item = single ? entry : PyTuple_GET_ITEM(entry, i);
        if (ufg_normalise_axis(c, k, item, ndim, message, &layout->axes[k][i]) < 0) {
            return -1;
        }
    }
    for (int i = 0; i < ncore; i++) {
        const uint64_t bit = (uint64_t)1 << layout->axes[k][i];
        if (seen & bit) {
            PyObject *shown = single ? PyTuple_Pack(1, entry) : Py_NewRef(entry);
            if (shown != NULL) {
                PyErr_Format(PyExc_ValueError, "%s: axes item %d repeats an axis: %R",
                             c->fn->name, k, shown);
                Py_DECREF(shown);
            }
            return -1;
        }
        seen |= bit;
    }
    return 0;
}

/* axes=: a list with an entry per operand; the outputs' entries may be left out when no output
 * has core dimensions (they take their defaults, as in NumPy). */
static int
ufg_parse_axes_list(const ufg_call *c, PyObject *axes, ufg_core_layout *layout)
{
    int outputs_have_core = 0;
    Py_ssize_t n;

    if (!PyList_Check(axes)) {
        return ufg_type_error(c, "axes= must be a list, not", axes);
    }
    for (int k = c->nin; k < c->nargs; k++) {
        outputs_have_core |= c->fn->core_ndims[k] > 0;
    }
    n = PyList_GET_SIZE(axes);
    if (n != c->nargs && !(n == c->nin && !outputs_have_core)) {
        PyErr_Format(PyExc_ValueError, "%s: axes= should be a list with an entry for all %d "
                     "inputs and outputs; entries for outputs can only be omitted if none of "
                     "them has core axes", c->fn->name, c->nargs);
        return -1;
    }
    for (int k = 0; k < c->nargs; k++) {
        int status;
        PyObject *entry;
        if (k >= PyList_GET_SIZE(axes)) {       /* __index__ may have shortened the list */
            if (ufg_default_axes(c, k, layout) < 0) {
                return -1;
            }
            continue;
        }
        entry = Py_NewRef(PyList_GET_ITEM(axes, k));
        status = ufg_parse_axes_entry(c, k, entry, layout);
        Py_DECREF(entry);
        if (status < 0) {
            return -1;
        }
    }
    return 0;
}

/* axis=: the one core axis of every operand that has one; only for a single shared core
 * dimension. */
static int
ufg_parse_axis(const ufg_call *c, PyObject *axis, ufg_core_layout *layout)
{
    for (int k = 0; k < c->nargs; k++) {
        if (layout->ncore[k] &&
            ufg_normalise_axis(c, k, axis, layout->ndim[k], "axis must be an integer, not",
                               &layout->axes[k][0]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* NumPy's rule for axis=: only for a single core dimension shared by every operand that has
 * one. */
static int
ufg_check_axis_support(const ufg_call *c)
{
    int shared = c->fn->ncore_dims == 1;

    for (int k = 0; k < c->nargs; k++) {
        shared &= c->fn->core_ndims[k] <= 1;
    }
    if (!shared) {
        PyErr_Format(PyExc_TypeError, "%s: axis can only be used with a single shared core "
                     "dimension, not with the %d distinct ones of %s", c->fn->name,
                     c->fn->ncore_dims, c->fn->signature);
        return -1;
    }
    return 0;
}

/* NumPy's rule for keepdims: every input has the same number of core dimensions, and no
 * output has any (the kept size-1 axes stand for them). */
static int
ufg_check_keepdims_support(const ufg_call *c)
{
    for (int k = 1; k < c->nargs; k++) {
        if (c->fn->core_ndims[k] != (k < c->nin ? c->fn->core_ndims[0] : 0)) {
            PyErr_Format(PyExc_TypeError, "%s does not support keepdims: keepdims can only be "
                         "used when all inputs have the same number of core dimensions and the "
                         "outputs have none", c->fn->name);
            return -1;
        }
    }
    return 0;
}

/* Each operand's core-dimension count and ndim as axes= sees them.  With keepdims each output
 * keeps the inputs' core axes as size-1 axes, which NumPy counts as its core dimensions here. */
static int
ufg_layout_init(const ufg_call *c, int loop_ndim, ufg_core_layout *layout)
{
    for (int k = 0; k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        const int ncore = ufg_counted_core_ndims(c, k);
        char what[160];
        layout->ncore[k] = ncore;
        layout->ndim[k] = op->kind == UFG_OPERAND_BUFFER ? op->ndim
                          : k < c->nin ? 0 : loop_ndim + ncore;
        if (layout->ndim[k] > UFG_CALL_MAX_NDIM) {
            PyErr_Format(PyExc_ValueError, "%s would have %d dimensions; arrays have at most %d",
                         ufg_call_what(c, k, what, sizeof what), layout->ndim[k],
                         UFG_CALL_MAX_NDIM);
            return -1;
        }
    }
    layout->nkept = 0;
    return 0;
}

/* axes=/axis=/keepdims= as each operand's core axes (normalised), and with keepdims the
 * outputs' kept axes.  NumPy refuses axis=None and axes=None given explicitly, and
 * keepdims= given at all (False too) to a gufunc that cannot keep dimensions. */
static int
ufg_parse_core_axes(const ufg_call *c, int loop_ndim, ufg_core_layout *layout)
{
    PyObject *axes = c->axes, *axis = c->axis;
    int status = 0;

    if (axes != NULL && axis != NULL) {
        PyErr_Format(PyExc_TypeError, "%s: cannot specify both 'axis' and 'axes'", c->fn->name);
        return -1;
    }
    if (axes == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: axes= must be a list, not None", c->fn->name);
        return -1;
    }
    if (ufg_layout_init(c, loop_ndim, layout) < 0) {
        return -1;
    }
    if (axis != NULL) {
        status = ufg_parse_axis(c, axis, layout);
    }
    else if (axes != NULL) {
        status = ufg_parse_axes_list(c, axes, layout);
    }
    else {
        for (int k = 0; status == 0 && k < c->nargs; k++) {
            status = ufg_default_axes(c, k, layout);
        }
    }
    if (status < 0) {
        return -1;
    }
    if (c->keepdims_set) {
        /* Each output's core axes become size-1 axes the kernel does not see, counted from
         * the end so that they apply to an output of any ndim. */
        layout->nkept = layout->ncore[c->nin];
        for (int k = c->nin; k < c->nargs; k++) {
            for (int i = 0; i < layout->nkept; i++) {
                layout->kept[k][i] = layout->axes[k][i] - layout->ndim[k];
            }
            layout->ncore[k] = 0;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ kernel layout */

/* The axis order of an ndim-d operand that puts its `ncore` core axes last, in their order. */
static void
ufg_move_last(int ndim, const int *core, int ncore, int *order)
{
    uint64_t is_core = 0;
    int n = 0;

    for (int i = 0; i < ncore; i++) {
        is_core |= (uint64_t)1 << core[i];
    }
    for (int a = 0; a < ndim; a++) {
        if (!(is_core >> a & 1)) {
            order[n++] = a;
        }
    }
    for (int i = 0; i < ncore; i++) {
        order[n++] = core[i];
    }
}

/* Operand k's (an output's) caller axes in kernel order; with keepdims its kept size-1 axes
 * are left out.  Returns how many. */
static int
ufg_output_axes(int k, int ndim, int ncore, const ufg_core_layout *layout, int *order)
{
    const int *core = layout->axes[k];
    uint64_t dropped = 0;
    int n = 0;

    if (layout->nkept == 0) {
        ufg_move_last(ndim, core, ncore, order);
        return ndim;
    }
    for (int i = 0; ndim > 0 && i < layout->nkept; i++) {
        dropped |= (uint64_t)1 << (((layout->kept[k][i] % ndim) + ndim) % ndim);
    }
    for (int a = 0; a < ndim; a++) {
        if (!(dropped >> a & 1)) {
            order[n++] = a;
        }
    }
    return n;
}

/* A buffer's axes in the order `order` (n of them; axes left out have size 1 when the call
 * goes ahead). */
static void
ufg_permute(ufg_operand *op, const int *order, int n)
{
    int64_t shape[UFG_CALL_MAX_NDIM], strides[UFG_CALL_MAX_NDIM];

    for (int i = 0; i < n; i++) {
        shape[i] = op->shape[order[i]];
        strides[i] = op->strides[order[i]];
    }
    memcpy(op->shape, shape, sizeof(int64_t) * (size_t)n);
    memcpy(op->strides, strides, sizeof(int64_t) * (size_t)n);
    op->ndim = n;
}

/* The caller's shape of every given output, for messages once it is in kernel layout. */
typedef struct {
    int ndim;
    int64_t shape[UFG_CALL_MAX_NDIM];
} ufg_caller_shape;

/* Every buffer in kernel layout: inputs with their core axes last, given outputs too (with
 * keepdims, without their kept axes). */
static void
ufg_to_kernel_layout(ufg_call *c, const ufg_core_layout *layout, ufg_caller_shape *given)
{
    int order[UFG_CALL_MAX_NDIM];

    for (int k = 0; k < c->nargs; k++) {
        ufg_operand *op = &c->ops[k];
        const int ncore = c->fn->core_ndims[k];
        int n = op->ndim;
        if (op->kind != UFG_OPERAND_BUFFER) {
            continue;
        }
        if (k < c->nin) {
            ufg_move_last(op->ndim, layout->axes[k], ncore, order);
        }
        else {
            given[k - c->nin].ndim = op->ndim;
            memcpy(given[k - c->nin].shape, op->shape, sizeof(int64_t) * (size_t)op->ndim);
            n = ufg_output_axes(k, op->ndim, ncore, layout, order);
        }
        ufg_permute(op, order, n);
    }
}

/* ------------------------------------------------------------------ core sizes */

/* Operand k as NumPy sees it for a core-dimension check: an empty array of the loop's dtype
 * with its core shape (in kernel layout) behind a loop dimension of 0; None for an output to
 * allocate.  A new reference. */
static PyObject *
ufg_stand_in(const ufg_call *c, int k)
{
    const ufg_operand *op = &c->ops[k];
    const int ncore = c->fn->core_ndims[k];
    npy_intp dims[UFG_CALL_MAX_NDIM + 1];
    int ndim = 0;
    PyArray_Descr *descr;

    if (op->kind == UFG_OPERAND_ABSENT) {
        return Py_NewRef(Py_None);
    }
    /* A scalar with core dimensions stays 0-d: NumPy says it has too few. */
    if (op->kind == UFG_OPERAND_BUFFER || ncore == 0) {
        dims[ndim++] = 0;
        for (int i = 0; op->kind == UFG_OPERAND_BUFFER && i < ncore; i++) {
            dims[ndim++] = (npy_intp)op->shape[op->ndim - ncore + i];
        }
    }
    descr = ufg_dtype_descr(c->loop_codes[k]);
    if (descr == NULL) {
        return NULL;
    }
    return PyArray_Empty(ndim, dims, descr, 0);      /* steals descr */
}

/* NumPy's own error for core dimensions that do not fit: the function's np.ufunc on the
 * stand-ins (nothing runs), its message with the function's name in front. */
static int
ufg_numpy_core_dims_error(const ufg_call *c)
{
    PyObject *inputs = PyTuple_New(c->nin), *outs = PyTuple_New(c->nout);
    PyObject *kwargs = NULL, *result = NULL;

    for (int k = 0; inputs != NULL && outs != NULL && k < c->nargs; k++) {
        PyObject *stand_in = ufg_stand_in(c, k);
        if (stand_in == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(k < c->nin ? inputs : outs, k < c->nin ? k : k - c->nin, stand_in);
    }
    if (inputs == NULL || outs == NULL || (kwargs = Py_BuildValue("{sO}", "out", outs)) == NULL) {
        goto done;
    }
    result = PyObject_Call(c->ufunc, inputs, kwargs);
    if (result == NULL) {
        ufg_reraise_named(c);
    }
    else {
        /* Our check and NumPy's disagree: still refuse, rather than run a misfitting call. */
        PyErr_Format(PyExc_ValueError, "%s: the core dimensions of the operands do not fit the "
                     "layout %s", c->fn->name, c->fn->signature);
    }
done:
    Py_XDECREF(result);
    Py_XDECREF(kwargs);
    Py_XDECREF(inputs);
    Py_XDECREF(outs);
    return -1;
}

/*
 * The size of every core dimension into c->core_sizes, by NumPy's rule: the operands' (in
 * kernel layout) with equal labels are equal, frozen ones have their size, output-only ones
 * come from given outputs or process_core_dims (NumPy's convention: -1 for unknown).  0 when
 * they fit; 1 when they do not (ufg_numpy_core_dims_error says how); -1 with an exception.
 */
static int
ufg_core_sizes(ufg_call *c)
{
    const ufg_function_descriptor *fn = c->fn;
    npy_intp sizes[UFG_DEVICE_MAX_CORE_DIMS];
    int offset = 0;

    if (fn->ncore_dims > UFG_DEVICE_MAX_CORE_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s has %d distinct core dimensions; the device handles "
                     "at most %d", fn->name, fn->ncore_dims, UFG_DEVICE_MAX_CORE_DIMS);
        return -1;
    }
    for (int d = 0; d < fn->ncore_dims; d++) {
        sizes[d] = (npy_intp)fn->core_dim_sizes[d];      /* a frozen size, or -1 */
    }
    for (int k = 0; k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        const int ncore = fn->core_ndims[k];
        for (int i = 0; op->kind == UFG_OPERAND_BUFFER && i < ncore; i++) {
            const int d = fn->core_dim_ids[offset + i];
            const npy_intp n = (npy_intp)op->shape[op->ndim - ncore + i];
            if (sizes[d] < 0) {
                sizes[d] = n;
            }
            else if (sizes[d] != n) {
                return 1;
            }
        }
        if (op->kind == UFG_OPERAND_SCALAR && ncore > 0) {
            return 1;
        }
        offset += ncore;
    }
    if (fn->process_core_dims != NULL &&
        fn->process_core_dims((PyUFuncObject *)c->ufunc, sizes) != 0) {
        return ufg_reraise_named(c);
    }
    offset = 0;
    for (int k = 0; k < c->nargs; k++) {
        for (int i = 0; k >= c->nin && i < fn->core_ndims[k]; i++) {
            if (sizes[fn->core_dim_ids[offset + i]] < 0) {
                return 1;           /* NumPy: "has core dimension i unspecified" */
            }
        }
        offset += fn->core_ndims[k];
    }
    for (int d = 0; d < fn->ncore_dims; d++) {
        c->core_sizes[d] = (int64_t)sizes[d];
    }
    return 0;
}

/* ------------------------------------------------------------------ loop and output shapes */


static int
ufg_loop_broadcast_error(const ufg_call *c)
{
    PyObject *text = PyUnicode_FromString(""), *part;

    for (int k = 0; text != NULL && k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        if (op->kind != UFG_OPERAND_BUFFER) {
            continue;
        }
        part = ufg_shape_repr(op->ndim - c->fn->core_ndims[k], op->shape);
        Py_SETREF(text, part == NULL ? NULL : PyUnicode_FromFormat(
            "%U%s%U", text, PyUnicode_GET_LENGTH(text) ? ", " : "", part));
        Py_XDECREF(part);
    }
    if (text != NULL) {
        PyErr_Format(PyExc_ValueError, "%s: the loop dimensions of the operands could not be "
                     "broadcast together: %U", c->fn->name, text);
        Py_DECREF(text);
    }
    return -1;
}

/* The loop shape: every buffer's loop dimensions (in kernel layout) broadcast together; a
 * given output's may be larger than the inputs', as in NumPy. */
static int
ufg_broadcast_loops(ufg_call *c)
{
    int ok = 1;

    c->loop_ndim = 0;
    for (int k = 0; k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        if (op->kind == UFG_OPERAND_BUFFER) {
            ok &= ufg_broadcast_into(&c->loop_ndim, c->loop_shape,
                                     op->ndim - c->fn->core_ndims[k], op->shape);
        }
    }
    return ok ? 0 : ufg_loop_broadcast_error(c);
}

static int
ufg_out_shape_error(const ufg_call *c, int j, const ufg_caller_shape *given)
{
    char what[160];
    PyObject *mine = ufg_shape_repr(given->ndim, given->shape);
    PyObject *full = ufg_shape_repr(c->out_ndim[j], c->out_shape[j]);

    if (mine != NULL && full != NULL) {
        PyErr_Format(PyExc_ValueError, "%s has shape %U, but the result's shape is %U",
                     ufg_call_what(c, c->nin + j, what, sizeof what), mine, full);
    }
    Py_XDECREF(mine);
    Py_XDECREF(full);
    return -1;
}

/* NumPy lets a gufunc's given output leave out leading loop dimensions of size 1 (its
 * iterator broadcasts a gufunc's outputs there, unlike a ufunc's): output j gets them back,
 * with stride 0, so that the kernel sees the loop's shape.  1 if it was such an output. */
static int
ufg_pad_output(ufg_call *c, int j, ufg_caller_shape *given)
{
    ufg_operand *op = &c->ops[c->nin + j];
    const int ndim = c->out_ndim[j], missing = ndim - given->ndim;

    if (missing <= 0 || op->ndim + missing != c->out_kernel_ndim[j] ||
        memcmp(given->shape, c->out_shape[j] + missing,
               sizeof(int64_t) * (size_t)given->ndim) != 0) {
        return 0;
    }
    for (int a = 0; a < missing; a++) {
        if (c->out_shape[j][a] != 1) {
            return 0;
        }
    }
    memmove(op->shape + missing, op->shape, sizeof(int64_t) * (size_t)op->ndim);
    memmove(op->strides + missing, op->strides, sizeof(int64_t) * (size_t)op->ndim);
    memmove(given->shape + missing, given->shape, sizeof(int64_t) * (size_t)given->ndim);
    for (int a = 0; a < missing; a++) {
        op->shape[a] = given->shape[a] = 1;
        op->strides[a] = 0;
    }
    op->ndim += missing;
    given->ndim = ndim;
    return 1;
}

/* Output j: its kernel shape (the loop, then its core sizes), its caller shape and axes (with
 * keepdims: size-1 kept axes the kernel does not see); a given output must have that shape. */
static int
ufg_output_shape(ufg_call *c, int j, const ufg_core_layout *layout,
                 ufg_caller_shape *given)
{
    const int k = c->nin + j, ncore = c->fn->core_ndims[k];
    const int kernel_ndim = c->loop_ndim + ncore, ndim = kernel_ndim + layout->nkept;
    int64_t kernel_shape[UFG_CALL_MAX_NDIM];
    int offset = 0, naxes;
    char what[160];

    if (ndim > UFG_CALL_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s would have %d dimensions; arrays have at most %d",
                     ufg_call_what(c, k, what, sizeof what), ndim, UFG_CALL_MAX_NDIM);
        return -1;
    }
    for (int i = 0; i < k; i++) {
        offset += c->fn->core_ndims[i];
    }
    memcpy(kernel_shape, c->loop_shape, sizeof(int64_t) * (size_t)c->loop_ndim);
    for (int i = 0; i < ncore; i++) {
        kernel_shape[c->loop_ndim + i] = c->core_sizes[c->fn->core_dim_ids[offset + i]];
    }
    naxes = ufg_output_axes(k, ndim, ncore, layout, c->out_axes[j]);
    for (int a = 0; a < ndim; a++) {
        c->out_shape[j][a] = 1;
    }
    for (int i = 0; i < naxes && i < kernel_ndim; i++) {
        c->out_shape[j][c->out_axes[j][i]] = kernel_shape[i];
    }
    c->out_ndim[j] = ndim;
    c->out_kernel_ndim[j] = kernel_ndim;
    if (c->ops[k].kind != UFG_OPERAND_BUFFER) {
        return 0;
    }
    if (layout->nkept == 0) {
        (void)ufg_pad_output(c, j, given);
    }
    if (given->ndim != ndim ||
        memcmp(given->shape, c->out_shape[j], sizeof(int64_t) * (size_t)ndim) != 0) {
        return ufg_out_shape_error(c, j, given);
    }
    if (c->ops[k].ndim != kernel_ndim) {
        /* Only kept axes that coincide in a smaller output (several outputs, keepdims). */
        PyErr_Format(PyExc_ValueError, "%s: keepdims= cannot keep the same axes of %s",
                     c->fn->name, ufg_operand_label(c, k, what, sizeof what));
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the stage */

int
ufg_call_core_dims(ufg_call *c)
{
    ufg_core_layout layout;
    ufg_caller_shape given[UFG_CALL_MAX_OPERANDS];
    int status;

    /* NumPy refuses axis= and keepdims= (given at all) to a gufunc that cannot take them
     * before it looks at the operands' dimensions. */
    if ((c->keepdims_given && ufg_check_keepdims_support(c) < 0) ||
        (c->axis != NULL && c->axes == NULL && ufg_check_axis_support(c) < 0) ||
        ufg_check_enough_dims(c) < 0 ||
        ufg_parse_core_axes(c, ufg_inputs_loop_ndim(c), &layout) < 0) {
        return -1;
    }
    ufg_to_kernel_layout(c, &layout, given);
    status = ufg_core_sizes(c);
    if (status != 0) {
        return status < 0 ? -1 : ufg_numpy_core_dims_error(c);
    }
    if (ufg_broadcast_loops(c) < 0) {
        return -1;
    }
    for (int j = 0; j < c->nout; j++) {
        if (ufg_output_shape(c, j, &layout, &given[j]) < 0) {
            return -1;
        }
    }
    return 0;
}
