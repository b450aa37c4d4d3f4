/*
 * The order in which NumPy's loop writes the elements of an out= that share memory (a zero
 * stride over more than one element): each address keeps the value written last, and the
 * device, which computes such an out= into a temporary (plan.c), copies back only that one.
 * NumPy's order is not always the caller's index order.  NumPy 2's ufunc machinery, as far
 * as it decides this (umath/ufunc_object.c, multiarray/nditer_constr.c):
 *
 *   1. An elementwise call without where= first casts an input of another dtype than the
 *      loop's into a new C-contiguous array when it is 0-d, or 1-d of at most np.getbufsize()
 *      elements, input by input, stopping at the first input of another dtype that is not
 *      (check_for_trivial_loop).  When nothing stopped it (and no out= has another dtype),
 *      the call has one output, and every array operand is 0-d or 1-d of the out='s length
 *      (an N-d one would have to be contiguous, which an out= stepping 0 is not), one strided
 *      loop runs in index order (try_trivial_single_output_loop).
 *   2. Otherwise the iterator runs the loop.  Under order='K' (the default) with every out=
 *      given, it runs an axis backwards when every operand steps <= 0 along it and one < 0
 *      (npyiter_flip_negative_strides): the operands as step 1 left them, the where= mask
 *      among them.  Gufunc calls skip step 1 and come here directly.
 *   3. An out= that may share memory with an operand the loop reads (an input as step 1 left
 *      it; with where=, also the mask and the other outputs, read then too) is computed into
 *      a temporary that is copied back in index order (NPY_ITER_COPY_IF_OVERLAP), and so is a
 *      gufunc's out= of another dtype (NPY_ITER_UPDATEIFCOPY).  An elementwise out= of another
 *      dtype is written through the iterator's buffers, in its order.
 *   4. With where=, an address keeps the last element written there whose mask is true (the
 *      order of several such axes is the iterator's nesting of them), or through a temporary
 *      the last element's in index order if its mask is true, else what the out= held.
 */
#include "call.h"

#include <stdlib.h>
#include <string.h>

/* numpy.getbufsize, looked up once: it reads NumPy's context (np.setbufsize), so it is called
 * each time. */
static PyObject *ufg_numpy_getbufsize;

int
ufg_numpy_buffersize(int64_t *size)
{
    PyObject *value;
    long long n;

    if (ufg_numpy_getbufsize == NULL &&
        (ufg_numpy_getbufsize = ufg_module_attribute("numpy", "getbufsize")) == NULL) {
        return -1;
    }
    value = PyObject_CallNoArgs(ufg_numpy_getbufsize);
    if (value == NULL) {
        return -1;
    }
    n = PyLong_AsLongLong(value);
    Py_DECREF(value);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    *size = n;
    return 0;
}

/*
 * Step 1: sets cast_ahead[k] for the inputs NumPy casts before it looks at strides.  Returns
 * 1 when nothing stopped the casts (the single strided loop is still possible), 0 when
 * something did (or the call is a gufunc's or has where=, which skip step 1), -1 with an
 * exception.
 */
static int
ufg_numpy_casts_ahead(const ufg_call *c, int *cast_ahead)
{
    int64_t buffersize = -1;

    memset(cast_ahead, 0, sizeof(int) * (size_t)c->nargs);
    if (c->fn->signature != NULL || c->where_kind == UFG_WHERE_MASK) {
        return 0;
    }
    for (int k = 0; k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        if (op->kind != UFG_OPERAND_BUFFER || op->code == c->loop_codes[k]) {
            continue;
        }
        if (k >= c->nin || op->ndim > 1) {
            return 0;
        }
        if (op->ndim == 1 && buffersize < 0 && ufg_numpy_buffersize(&buffersize) < 0) {
            return -1;
        }
        if (op->ndim == 1 && op->shape[0] > buffersize) {
            return 0;
        }
        cast_ahead[k] = 1;
    }
    return 1;
}

/* Step 1's single strided loop, for out= j (which steps 0 somewhere). */
static int
ufg_numpy_single_loop(const ufg_call *c, int j)
{
    const ufg_operand *out = &c->ops[c->nin + j];

    if (c->nout != 1 || out->ndim != 1) {
        return 0;
    }
    for (int k = 0; k < c->nin; k++) {
        const ufg_operand *op = &c->ops[k];
        if (op->kind == UFG_OPERAND_BUFFER && op->ndim != 0 &&
            (op->ndim != 1 || op->shape[0] != out->shape[0])) {
            return 0;
        }
    }
    return 1;
}

/* Step 3, judged by the bytes the buffers span (NumPy's first test; it gives up on finer ones
 * and copies). */
static int
ufg_numpy_writes_through_copy(const ufg_call *c, int j, const int *cast_ahead)
{
    const int out_k = c->nin + j, masked = c->where_kind == UFG_WHERE_MASK;
    const ufg_operand *out = &c->ops[out_k];

    if (c->fn->signature != NULL && out->code != c->loop_codes[out_k]) {
        return 1;
    }
    for (int k = 0; k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        const int read = k < c->nin ? !cast_ahead[k] : masked && k != out_k;
        if (read && op->kind == UFG_OPERAND_BUFFER && ufg_operands_overlap(op, out)) {
            return 1;
        }
    }
    return masked && ufg_operands_overlap(&c->mask, out);
}

/* Operand k's steps along the loop axes as NumPy's iterator sees them: a cast-ahead input is
 * a C-contiguous copy. */
static void
ufg_numpy_loop_strides(const ufg_call *c, int k, const int *cast_ahead, int64_t *strides)
{
    ufg_operand copy;

    if (!cast_ahead[k]) {
        ufg_loop_strides(&c->ops[k], ufg_core_ndims(c, k), c->loop_ndim, strides);
        return;
    }
    copy = c->ops[k];
    ufg_c_strides(copy.ndim, copy.shape, ufg_dtype_itemsize(c->loop_codes[k]), copy.strides);
    ufg_loop_strides(&copy, 0, c->loop_ndim, strides);
}

/* The iterator's operands' steps along the loop axes: strides[i] for i < *n (outputs NumPy
 * allocates step 0 at the point where NumPy looks). */
static void
ufg_numpy_operand_strides(const ufg_call *c, const int *cast_ahead,
                          int64_t (*strides)[UFG_CALL_MAX_NDIM], int *n)
{
    *n = 0;
    for (int k = 0; k < c->nargs; k++) {
        if (c->ops[k].kind == UFG_OPERAND_BUFFER) {
            ufg_numpy_loop_strides(c, k, cast_ahead, strides[(*n)++]);
        }
    }
    if (c->where_kind == UFG_WHERE_MASK) {
        ufg_loop_strides(&c->mask, 0, c->loop_ndim, strides[(*n)++]);
    }
}

/* Step 2: whether the iterator runs loop axis d backwards. */
static int
ufg_numpy_runs_backwards(const ufg_call *c, int d, int64_t (*strides)[UFG_CALL_MAX_NDIM],
                         int n)
{
    int negative = 0;

    if (c->order != NPY_KEEPORDER) {
        return 0;
    }
    for (int k = c->nin; k < c->nargs; k++) {
        if (c->ops[k].kind == UFG_OPERAND_ABSENT) {
            return 0;           /* NumPy allocates an output: it keeps every direction */
        }
    }
    for (int i = 0; i < n; i++) {
        if (strides[i][d] > 0) {
            return 0;
        }
        negative |= strides[i][d] < 0;
    }
    return negative;
}

/* Whether NumPy's axis ordering moves loop axis a inside loop axis b, which is inside it in C
 * order: the first operand that steps along both says yes if its step along a is the smaller,
 * and any operand whose step along b is not the larger says no (C order wins a conflict).
 * -1: no operand steps along both, which leaves it to the axes further out. */
static int
ufg_numpy_goes_inside(int a, int b, int64_t (*strides)[UFG_CALL_MAX_NDIM], int n)
{
    int verdict = -1;

    for (int i = 0; i < n; i++) {
        if (strides[i][a] == 0 || strides[i][b] == 0) {
            continue;
        }
        if (llabs(strides[i][b]) <= llabs(strides[i][a])) {
            verdict = 0;
        }
        else if (verdict < 0) {
            verdict = 1;
        }
    }
    return verdict;
}

/* Whether a buffer is Fortran-contiguous as NumPy flags it (axes of size 1 step anyhow; an
 * empty buffer is). */
static int
ufg_is_fortran_contiguous(const ufg_operand *op)
{
    int64_t expected = ufg_dtype_itemsize(op->code);

    if (ufg_operand_size(op) == 0) {
        return 1;
    }
    for (int d = 0; d < op->ndim; d++) {
        if (op->shape[d] != 1 && op->strides[d] != expected) {
            return 0;
        }
        expected *= op->shape[d];
    }
    return 1;
}

/* order='A': Fortran order when every array the iterator holds (inputs, the outputs given,
 * the mask) is Fortran-contiguous, else C order (npyiter_apply_forced_iteration_order). */
static int
ufg_numpy_any_order_is_fortran(const ufg_call *c)
{
    for (int k = 0; k < c->nargs; k++) {
        if (c->ops[k].kind == UFG_OPERAND_BUFFER && !ufg_is_fortran_contiguous(&c->ops[k])) {
            return 0;
        }
    }
    return c->where_kind != UFG_WHERE_MASK || ufg_is_fortran_contiguous(&c->mask);
}

void
ufg_numpy_best_axis_order(int ndim, int64_t (*strides)[UFG_CALL_MAX_NDIM], int n,
                          int *inner_first)
{
    for (int i0 = 1; i0 < ndim; i0++) {
        const int axis = inner_first[i0];
        int place = i0;
        for (int i1 = i0 - 1; i1 >= 0; i1--) {
            const int inside = ufg_numpy_goes_inside(axis, inner_first[i1], strides, n);
            if (inside == 0) {
                break;
            }
            if (inside == 1) {
                place = i1;
            }
        }
        memmove(&inner_first[place + 1], &inner_first[place],
                sizeof(int) * (size_t)(i0 - place));
        inner_first[place] = axis;
    }
}

/* The loop axes as NumPy's iterator nests them, innermost first: C order, F order ('F', or
 * 'A' over Fortran-contiguous arrays), or under order='K' its stable insertion sort
 * (npyiter_find_best_axis_ordering). */
static void
ufg_numpy_nesting(const ufg_call *c, int64_t (*strides)[UFG_CALL_MAX_NDIM], int n,
                  int *inner_first)
{
    const int ndim = c->loop_ndim;
    const int fortran = c->order == NPY_FORTRANORDER ||
                        (c->order == NPY_ANYORDER && ufg_numpy_any_order_is_fortran(c));

    for (int i = 0; i < ndim; i++) {
        inner_first[i] = fortran ? i : ndim - 1 - i;
    }
    if (c->order == NPY_KEEPORDER) {
        ufg_numpy_best_axis_order(ndim, strides, n, inner_first);
    }
}

/* Whether elements of a buffer share memory through a zero stride. */
static int
ufg_shares_memory_within(const ufg_operand *op)
{
    for (int d = 0; d < op->ndim; d++) {
        if (op->strides[d] == 0 && op->shape[d] > 1) {
            return 1;
        }
    }
    return 0;
}

int
ufg_numpy_shared_order(const ufg_call *c, int j, ufg_shared_order *order)
{
    const ufg_operand *out = &c->ops[c->nin + j];
    int64_t strides[UFG_CALL_MAX_OPERANDS + 1][UFG_CALL_MAX_NDIM];
    int cast_ahead[UFG_CALL_MAX_OPERANDS], inner_first[UFG_CALL_MAX_NDIM], n, single;

    order->naxes = 0;
    order->through_copy = 0;
    if (!ufg_shares_memory_within(out)) {
        return 0;       /* the common case: asks NumPy nothing */
    }
    single = ufg_numpy_casts_ahead(c, cast_ahead);
    if (single < 0) {
        return -1;
    }
    single = single && ufg_numpy_single_loop(c, j);
    order->through_copy = ufg_numpy_writes_through_copy(c, j, cast_ahead);
    ufg_numpy_operand_strides(c, cast_ahead, strides, &n);
    ufg_numpy_nesting(c, strides, n, inner_first);
    for (int i = c->loop_ndim - 1; i >= 0; i--) {
        const int d = inner_first[i];
        if (d < out->ndim && out->strides[d] == 0 && out->shape[d] > 1) {
            order->axes[order->naxes] = d;
            order->backwards[order->naxes++] = !single && !order->through_copy &&
                                               ufg_numpy_runs_backwards(c, d, strides, n);
        }
    }
    /* A gufunc's core axes: inside the loop, as its body writes them (forwards). */
    for (int d = c->loop_ndim; d < out->ndim; d++) {
        if (out->strides[d] == 0 && out->shape[d] > 1) {
            order->axes[order->naxes] = d;
            order->backwards[order->naxes++] = 0;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ new results' layout */

/*
 * NumPy lays out a result it allocates along the iterator's nesting of the loop axes, the
 * innermost contiguous (npyiter_new_temp_array; with an output allocated it runs no axis
 * backwards): so order='K' (the default) follows the inputs' layout, Fortran-ordered inputs
 * giving a Fortran-ordered result, and 'A' is Fortran order over Fortran-contiguous arrays.
 * NumPy's single strided loop (step 1 above) gives the same layouts: C or F as its N-d
 * inputs are, which the nesting finds too.
 */
void
ufg_numpy_result_axes(const ufg_call *c, int *inner_first)
{
    int64_t strides[UFG_CALL_MAX_OPERANDS + 1][UFG_CALL_MAX_NDIM];
    int cast_ahead[UFG_CALL_MAX_OPERANDS] = {0}, n;

    /* A cast-ahead input is 0-d or 1-d: no operand that steps along two axes. */
    ufg_numpy_operand_strides(c, cast_ahead, strides, &n);
    ufg_numpy_nesting(c, strides, n, inner_first);
}
