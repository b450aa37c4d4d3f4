/*
 * Elementwise shapes: the operands broadcast together (NumPy's rule), an out= may be larger
 * than the inputs' broadcast shape as long as they broadcast to it, and every out= has the
 * result's shape.  And how NumPy reads one axis (an axis=, axes= entry or reduce's axis=).
 */
#include "call.h"

#include <limits.h>
#include <string.h>

#include "args.h"

/* A shape as Python writes it, "(3,)", for messages (a new reference). */
PyObject *
ufg_shape_repr(int ndim, const int64_t *shape)
{
    PyObject *tuple = ufg_int64_tuple_new(shape, ndim), *text;

    if (tuple == NULL) {
        return NULL;
    }
    text = PyObject_Repr(tuple);
    Py_DECREF(tuple);
    return text;
}

/* Broadcasts `shape` into result (right-aligned); 0 if they are incompatible. */
int
ufg_broadcast_into(int *ndim, int64_t *result, int op_ndim, const int64_t *shape)
{
    if (op_ndim > *ndim) {
        const int grow = op_ndim - *ndim;
        memmove(result + grow, result, sizeof(int64_t) * (size_t)*ndim);
        for (int d = 0; d < grow; d++) {
            result[d] = 1;
        }
        *ndim = op_ndim;
    }
    for (int d = 0; d < op_ndim; d++) {
        int64_t *slot = &result[*ndim - op_ndim + d];
        if (shape[d] == *slot || shape[d] == 1) {
            continue;
        }
        if (*slot != 1) {
            return 0;
        }
        *slot = shape[d];
    }
    return 1;
}

/* outer: input 0 gets a size-1 axis (stride 0) for every axis of input 1, after its own. */
static int
ufg_outer_axes(ufg_call *c)
{
    ufg_operand *a = &c->ops[0];
    const int more = c->ops[1].kind == UFG_OPERAND_BUFFER ? c->ops[1].ndim : 0;

    if (a->kind != UFG_OPERAND_BUFFER || more == 0) {
        return 0;       /* a scalar broadcasts as it is */
    }
    if (a->ndim + more > UFG_CALL_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s.outer: the result would have %d dimensions; arrays "
                     "have at most %d", c->fn->name, a->ndim + more, UFG_CALL_MAX_NDIM);
        return -1;
    }
    for (int d = 0; d < more; d++) {
        a->shape[a->ndim + d] = 1;
        a->strides[a->ndim + d] = 0;
    }
    a->ndim += more;
    return 0;
}

int
ufg_broadcasts_to(int op_ndim, const int64_t *op_shape, int ndim, const int64_t *shape)
{
    if (op_ndim > ndim) {
        return 0;
    }
    for (int d = 0; d < op_ndim; d++) {
        const int64_t n = op_shape[d], target = shape[ndim - op_ndim + d];
        if (n != target && n != 1) {
            return 0;
        }
    }
    return 1;
}

static int
ufg_broadcast_error(ufg_call *c)
{
    PyObject *text = PyUnicode_FromString(""), *part;

    for (int k = 0; text != NULL && k < c->nin; k++) {
        if (c->ops[k].kind != UFG_OPERAND_BUFFER) {
            continue;
        }
        part = ufg_shape_repr(c->ops[k].ndim, c->ops[k].shape);
        Py_SETREF(text, part == NULL ? NULL : PyUnicode_FromFormat(
            "%U%s%s %U", text, PyUnicode_GET_LENGTH(text) ? ", " : "", c->fn->arg_names[k],
            part));
        Py_XDECREF(part);
    }
    if (text != NULL && c->where_kind == UFG_WHERE_MASK) {
        part = ufg_shape_repr(c->mask.ndim, c->mask.shape);
        Py_SETREF(text, part == NULL ? NULL : PyUnicode_FromFormat("%U, where= %U", text, part));
        Py_XDECREF(part);
    }
    if (text != NULL) {
        PyErr_Format(PyExc_ValueError, "%s: operands could not be broadcast together: %U",
                     c->fn->name, text);
        Py_DECREF(text);
    }
    return -1;
}

static int
ufg_out_shape_error(ufg_call *c, int k)
{
    char what[160];
    PyObject *mine = ufg_shape_repr(c->ops[k].ndim, c->ops[k].shape);
    PyObject *full = ufg_shape_repr(c->loop_ndim, c->loop_shape);

    if (mine != NULL && full != NULL) {
        PyErr_Format(PyExc_ValueError, "%s has shape %U, but the result's shape is %U "
                     "(non-broadcastable output operand)",
                     ufg_call_what(c, k, what, sizeof what), mine, full);
    }
    Py_XDECREF(mine);
    Py_XDECREF(full);
    return -1;
}

static int
ufg_same_shape(int ndim, const int64_t *a, int ndim_b, const int64_t *b)
{
    return ndim == ndim_b && memcmp(a, b, sizeof(int64_t) * (size_t)ndim) == 0;
}

int
ufg_call_broadcast(ufg_call *c)
{
    int ok = 1;

    if (c->outer && ufg_outer_axes(c) < 0) {
        return -1;
    }
    c->loop_ndim = 0;
    for (int k = 0; k < c->nin; k++) {
        if (c->ops[k].kind == UFG_OPERAND_BUFFER) {
            ok &= ufg_broadcast_into(&c->loop_ndim, c->loop_shape, c->ops[k].ndim,
                                     c->ops[k].shape);
        }
    }
    if (c->where_kind == UFG_WHERE_MASK) {
        ok &= ufg_broadcast_into(&c->loop_ndim, c->loop_shape, c->mask.ndim, c->mask.shape);
    }
    if (!ok) {
        return ufg_broadcast_error(c);
    }
    /* The inputs broadcast to a larger out=, as in NumPy. */
    for (int k = c->nin; k < c->nargs; k++) {
        const ufg_operand *out = &c->ops[k];
        if (out->kind == UFG_OPERAND_BUFFER &&
            ufg_broadcasts_to(c->loop_ndim, c->loop_shape, out->ndim, out->shape)) {
            c->loop_ndim = out->ndim;
            memcpy(c->loop_shape, out->shape, sizeof(int64_t) * (size_t)out->ndim);
        }
    }
    for (int k = c->nin; k < c->nargs; k++) {
        const int j = k - c->nin;
        if (c->ops[k].kind == UFG_OPERAND_BUFFER &&
            !ufg_same_shape(c->ops[k].ndim, c->ops[k].shape, c->loop_ndim, c->loop_shape)) {
            return ufg_out_shape_error(c, k);
        }
        c->out_ndim[j] = c->out_kernel_ndim[j] = c->loop_ndim;
        memcpy(c->out_shape[j], c->loop_shape, sizeof(int64_t) * (size_t)c->loop_ndim);
        for (int d = 0; d < c->loop_ndim; d++) {
            c->out_axes[j][d] = d;
        }
    }
    return 0;
}

int
ufg_axis_from_object(PyObject *obj, int *value)
{
    PyObject *index;
    long wide;

    if (PyBool_Check(obj) || PyArray_IsScalar(obj, Bool) || !PyIndex_Check(obj)) {
        return 1;
    }
    index = PyNumber_Index(obj);
    if (index == NULL) {
        return -1;
    }
    wide = PyLong_AsLong(index);        /* OverflowError past a C long, NumPy's message */
    Py_DECREF(index);
    if (wide == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (wide > INT_MAX || wide < INT_MIN) {
        PyErr_SetString(PyExc_ValueError, "integer won't fit into a C int");
        return -1;
    }
    *value = (int)wide;
    return 0;
}
