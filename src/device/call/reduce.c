/*
 * `function.reduce(array, axis=0, dtype=None, out=None, keepdims=False, initial=<no value>,
 * where=True, stream=None)` with a CUDA array: the device reduction of a binary function
 * with an identity.
 *
 * The whole call is checked first (arguments, axes, out=, NumPy's reduction type
 * resolution, alignment, the kernel's dimension limit, the launch configuration), so a
 * refused call writes nothing.  Then the input is cast to the accumulator's dtype when it
 * differs, the generated reduction kernel runs (once per step when an `associative: true`
 * function splits long reductions into chunks: the array into partial results, those into
 * fewer, until one thread per output can finish; or, for one long contiguous line into one
 * result, its device-wide reduction, CUB's under CUDA), and the result is cast into an out=
 * of another dtype.  Everything is queued on the call's stream.
 */
#include "reduction.h"
#include "dtypes.h"

#include <numpy/arrayscalars.h>

#include <limits.h>
#include <string.h>

#include "launch.h"
#include "runtime.h"
#include "ufuncgen/reduce_order.h"      /* UFG_REDUCE_FEW */

/* The arguments: seven positional-or-keyword, then stream= by keyword only. */
enum {
    UFG_R_ARRAY, UFG_R_AXIS, UFG_R_DTYPE, UFG_R_OUT, UFG_R_KEEPDIMS, UFG_R_INITIAL,
    UFG_R_WHERE, UFG_R_STREAM, UFG_R_COUNT
};
#define UFG_R_POSITIONAL 7

static const char *const ufg_reduce_names[UFG_R_COUNT] = {
    "array", "axis", "dtype", "out", "keepdims", "initial", "where", "stream"};

/* ------------------------------------------------------------------ arguments */

/* where=: the literal True (or not given) is no mask; any other host value is a 0-d mask
 * (*where_value), as NumPy reads it; a CUDA array is a mask (*mask_obj, borrowed).  A host
 * array or sequence is refused: device calls never copy host data behind the caller's back. */
static int
ufg_reduce_where(const char *name, PyObject *where, int *where_given, int *where_value,
                 PyObject **mask_obj)
{
    int status, is_device;

    *where_given = 0;
    *mask_obj = NULL;
    if (where == NULL || where == Py_True) {
        return 0;
    }
    status = ufg_where_from_host_value(where, where_value);
    if (status > 0) {
        if ((is_device = ufg_is_device_object(where)) < 0) {
            return -1;
        }
        if (!is_device) {
            PyObject *type_name = ufg_type_name(where);
            if (type_name != NULL) {
                PyErr_Format(PyExc_TypeError, "%s.reduce: where= is a host %S; with a CUDA "
                             "array it must be a CUDA bool array (or a single True or False)",
                             name, type_name);
                Py_DECREF(type_name);
            }
            return -1;
        }
        *mask_obj = where;
        *where_value = 1;
        status = 0;
    }
    *where_given = status == 0;
    return status == 0 ? 0 : -1;
}

/* The where= mask as an operand, a bool CUDA array: NumPy converts where= to bool (casting
 * 'safe') as it parses the arguments, so another dtype is its TypeError before anything
 * about the array, the axes or the identity. */
static int
ufg_reduce_mask_operand(const char *name, PyObject *mask_obj, uintptr_t stream, ufg_operand *mask)
{
    if (ufg_operand_from_buffer(mask_obj, "where=", mask, stream) < 0) {
        return -1;
    }
    if (mask->code != UFG_DT_BOOL) {
        PyErr_Format(PyExc_TypeError, "%s.reduce: where= must be a bool array, got %s", name,
                     ufg_dtype_name(mask->code));
        return -1;
    }
    return 0;
}

/* The where= mask on the array's device, broadcasting to its shape; mask_strides: its strides
 * over the array's axes (0 where it broadcasts). */
static int
ufg_reduce_mask_fits(const char *name, const ufg_operand *mask, const ufg_operand *array,
                     int64_t *mask_strides)
{
    if (mask->device != array->device) {
        PyErr_Format(PyExc_ValueError, "%s.reduce: where= is on CUDA device %d, the array on "
                     "device %d", name, mask->device, array->device);
        return -1;
    }
    if (ufg_broadcasts_to(mask->ndim, mask->shape, array->ndim, array->shape)) {
        ufg_loop_strides(mask, 0, array->ndim, mask_strides);
        return ufg_operand_check_alignment(mask, "where=");
    }
    PyErr_Format(PyExc_ValueError, "%s.reduce: where= of %d dimensions does not broadcast to "
                 "the array's shape", name, mask->ndim);
    return -1;
}

/* keepdims= as NumPy converts it (PyArray_PythonPyIntFromInt): an int (bool included, or
 * anything with __index__) whose truth is taken; floats and the rest are refused. */
static int
ufg_reduce_keepdims(PyObject *obj, int *keepdims)
{
    long value;

    *keepdims = 0;
    if (obj == NULL || obj == Py_False) {
        return 0;
    }
    if (obj == Py_True) {
        *keepdims = 1;
        return 0;
    }
    if (PyFloat_Check(obj)) {
        PyErr_SetString(PyExc_TypeError, "integer argument expected, got float");
        return -1;
    }
    value = PyLong_AsLong(obj);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (value > INT_MAX || value < INT_MIN) {
        PyErr_SetString(PyExc_OverflowError, "Python int too large to convert to C int");
        return -1;
    }
    *keepdims = value != 0;
    return 0;
}

/* axis= as the reduced axes of an ndim-d array (reduction.h): reduced[d] set for each, a
 * duplicate (after every entry was checked, as in NumPy) a ValueError. */
static int
ufg_reduce_axes(const char *prefix, PyObject *axis, int ndim, char *reduced)
{
    int axes[UFG_CALL_MAX_NDIM];
    Py_ssize_t count;

    memset(reduced, 0, UFG_CALL_MAX_NDIM);
    if (ufg_reduction_axes(prefix, axis, ndim, axes, &count) < 0) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        /* more entries than axes repeat one, maybe past the UFG_CALL_MAX_NDIM kept */
        if (count > ndim || reduced[axes[i]]) {
            PyErr_Format(PyExc_ValueError, "%s: duplicate value in 'axis'", prefix);
            return -1;
        }
        reduced[axes[i]] = 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ type resolution */

/* The function's identity (or initial=) as an accumulator value, as NumPy packs it. */
static int
ufg_reduce_pack(PyObject *value, ufg_dtype_code acc, ufg_value *packed)
{
    PyArray_Descr *descr = ufg_call_descr(acc);

    memset(packed, 0, sizeof(*packed));
    if (descr == NULL) {
        return -1;
    }
    return PyArray_Pack(descr, packed->bytes, value) < 0 ? -1 : 0;
}

/* A start value as NumPy's reduction has it with an out= of another dtype than the
 * accumulator's: NumPy writes it into out= first and accumulates there, reading it back
 * through its buffers, so it is rounded to out='s dtype (2**70 into a float16 out= is inf,
 * and inf + -inf makes NaN where the float32 value would give -inf).  The conversions are the
 * device's own cast's. */
static void
ufg_reduce_round_through(ufg_value *value, ufg_dtype_code acc, ufg_dtype_code out)
{
    ufg_value there;

    memset(&there, 0, sizeof(there));
    ufg_cast_element(UFG_CAST_PAIR(acc, out), (const char *)value->bytes, (char *)there.bytes);
    memset(value, 0, sizeof(*value));
    ufg_cast_element(UFG_CAST_PAIR(out, acc), (const char *)there.bytes, (char *)value->bytes);
}

/* initial= packed as the accumulator: a scalar on the host, as NumPy takes it.  A device
 * array there (a 0-d one that a host array would be taken as) is refused by name: reading
 * it would wait for the device. */
static int
ufg_reduce_initial(const char *prefix, PyObject *initial, ufg_dtype_code acc,
                   ufg_value *packed)
{
    int on_device = ufg_is_device_object(initial);

    if (on_device < 0) {
        return -1;
    }
    if (on_device) {
        PyErr_Format(PyExc_TypeError, "%s: initial= is a device array (%.200s); it takes a "
                     "scalar on the host, as a Python or NumPy number: copy it back first "
                     "(x.copy_to_host()[()])", prefix, Py_TYPE(initial)->tp_name);
        return -1;
    }
    return ufg_reduce_pack(initial, acc, packed);
}

static int
ufg_reduce_has_identity(const ufg_function_descriptor *fn)
{
    return fn->identity == PyUFunc_IdentityValue || fn->identity == PyUFunc_Zero ||
           fn->identity == PyUFunc_One || fn->identity == PyUFunc_MinusOne;
}

/* The identity as a Python object (ufuncgen/register.h's spelling).  A new reference. */
static PyObject *
ufg_reduce_identity_object(const ufg_function_descriptor *fn)
{
    switch (fn->identity) {
    case PyUFunc_Zero: return PyLong_FromLong(0);
    case PyUFunc_One: return PyLong_FromLong(1);
    case PyUFunc_MinusOne: return PyLong_FromLong(-1);
    default: break;
    }
    switch (fn->identity_kind) {
    case 'i': return PyLong_FromString(fn->identity_literal, NULL, 10);
    case 'f': {
        double value = PyOS_string_to_double(fn->identity_literal, NULL, NULL);
        return value == -1.0 && PyErr_Occurred() ? NULL : PyFloat_FromDouble(value);
    }
    case 'b': return PyBool_FromLong(fn->identity_literal[0] == 'T');
    default:
        PyErr_Format(PyExc_SystemError, "%s: identity of unknown kind '%c'", fn->name,
                     fn->identity_kind);
        return NULL;
    }
}

/* The identity as `acc`, remembered in the cache entry the resolution came from (which
 * packing can outlive: it is written back only while it still holds this function and
 * accumulator, for which the identity is the same). */
static int
ufg_reduce_identity(const ufg_function_descriptor *fn, ufg_dtype_code acc,
                    ufg_reduce_resolution *entry, ufg_value *identity)
{
    PyObject *value;
    int result;

    if (entry->fn == fn && entry->acc == (signed char)acc && entry->identity_packed) {
        *identity = entry->identity;
        return 0;
    }
    value = ufg_reduce_identity_object(fn);
    if (value == NULL) {
        return -1;
    }
    result = ufg_reduce_pack(value, acc, identity);
    Py_DECREF(value);
    if (result == 0 && entry->fn == fn && entry->acc == (signed char)acc) {
        entry->identity = *identity;
        entry->identity_packed = 1;
    }
    return result;
}

/* ------------------------------------------------------------------ the plan */

/* One reduction launch (device_kernel.h's ufg_reduce_params), everything but pointers. */
typedef struct {
    int keep_ndim, reduce_ndim;
    int64_t keep_shape[UFG_CALL_MAX_NDIM], reduce_shape[UFG_CALL_MAX_NDIM];
    int64_t in_keep[UFG_CALL_MAX_NDIM], in_reduce[UFG_CALL_MAX_NDIM];
    int64_t out_keep[UFG_CALL_MAX_NDIM];
    int64_t out_chunk_stride, n_chunks;
    int32_t grid;
    int outputs_fastest;
} ufg_reduce_step;

typedef struct {
    int ndim;                       /* the array's */
    char reduced[UFG_CALL_MAX_NDIM];
    int keepdims;
    int out_ndim;
    int64_t out_shape[UFG_CALL_MAX_NDIM];
    int64_t n_out;
    ufg_dtype_code acc;
    ufg_dtype_code partial;         /* a split reduction's partial results: acc, or float32
                                     * for a loop that steps in float (float16's) */
    int loop_index;
    ufg_reduce_launcher launcher;
    ufg_reduce_launcher total;      /* an associative function's reduction of one whole
                                     * contiguous line; NULL for others */
    int whole;                      /* one launch of `total` does it all */
    ufg_value identity;             /* where each result starts: initial=, or the identity */
    ufg_value chunk_start;          /* the identity: what a where= copy holds where the mask
                                     * is False */
    int from_first;                 /* no initial= nor identity: results start from their
                                     * first element (or first partial result) */
    int copy_input;                 /* the array is cast to acc first */
    int first_through_out;          /* from_first into an out= of another dtype: the first
                                     * elements pass through out's dtype (below) */
    const int64_t *mask_strides;    /* where=: the copy holds the identity where it is False */
    int nesting[UFG_CALL_MAX_NDIM]; /* the array's axes as NumPy's iterator nests them,
                                     * innermost first: each output's elements are combined
                                     * in this order of the reduced axes */
    int64_t host_call;              /* an associative function's: the elements of one output
                                     * NumPy hands the host loop per call (1: its inner loop
                                     * runs along the outputs, an element per call) */
    int64_t copy_strides[UFG_CALL_MAX_NDIM];    /* copy_input: the copy's, contiguous along
                                     * the nesting, so that it merges axes as NumPy does, and
                                     * 0 along the shared axes */
    char shared[UFG_CALL_MAX_NDIM]; /* copy_input: the broadcast axes of the array that the
                                     * copy holds one element of (ufg_reduce_shared_axes) */
    int direct;                     /* the kernel writes into out= itself */
    int cast_result;                /* a temporary result is cast into out= */
    int nsteps;                     /* 0 (an empty result), 1, or more: the array into
                                     * chunks' partial results, those into fewer, ... */
    ufg_reduce_step steps[UFG_REDUCE_MAX_STEPS];
} ufg_reduce_plan;

/* The entries of `values` (one per axis of the array) on the kept (reduced = 0) axes, in index
 * order, or on the reduced (reduced = 1) axes, outermost first in NumPy's nesting: the kernel
 * takes the elements of an output in the order NumPy combines them. */
static int
ufg_reduce_pick(const ufg_reduce_plan *plan, const int64_t *values, int reduced, int64_t *picked)
{
    int n = 0;

    for (int i = 0; i < plan->ndim; i++) {
        const int d = reduced ? plan->nesting[plan->ndim - 1 - i] : i;
        if (!plan->reduced[d] == !reduced) {
            picked[n++] = values[d];
        }
    }
    return n;
}

/* The entries of `values` (one per axis of the result) on the result's axes that are kept
 * axes of the array: all of them without keepdims. */
static void
ufg_reduce_pick_result(const ufg_reduce_plan *plan, const int64_t *values, int64_t *picked)
{
    int n = 0;

    if (!plan->keepdims) {
        memcpy(picked, values, sizeof(int64_t) * (size_t)plan->out_ndim);
        return;
    }
    for (int d = 0; d < plan->ndim; d++) {
        if (!plan->reduced[d]) {
            picked[n++] = values[d];
        }
    }
}

/* ------------------------------------------------------------------ NumPy's order */

/*
 * NumPy's reduction runs its iterator over the output (stepping 0 along the reduced axes), the
 * array and a where= mask (umath/reduction.c: order='K', negative steps kept, buffered), which
 * nests the axes by their steps, merges neighbours that step as one, and picks how much of the
 * nesting a buffer holds (multiarray/nditer_constr.c).  The nesting of the reduced axes is the
 * order each output's elements are combined in; what the loop gets per call is what an
 * associative function's host loop reorders (host_reduce.h), so the device takes both from
 * here to give the host's results.
 */

/* The operands of NumPy's reduction iterator: the output, the array, a where= mask. */
enum { UFG_NUMPY_REDUCE_OPERANDS = 3 };

/* The iterator's operands' steps along the array's axes, into steps[0..n) (n returned): out=
 * when given (0 along the reduced axes), the array, the mask; 0 along an axis of one element,
 * as NumPy's iterator has them.  An out= NumPy allocates has no say in the nesting. */
static int
ufg_reduce_numpy_steps(const ufg_reduce_plan *plan, const ufg_operand *array,
                       const ufg_operand *out, const int64_t *mask_strides,
                       int64_t (*steps)[UFG_CALL_MAX_NDIM])
{
    int n = 0;

    if (out != NULL) {
        for (int d = 0, o = 0; d < plan->ndim; d++) {
            steps[n][d] = plan->reduced[d] ? 0 : out->strides[o];
            o += !plan->reduced[d] || plan->keepdims;
        }
        n++;
    }
    memcpy(steps[n++], array->strides, sizeof(int64_t) * (size_t)plan->ndim);
    if (mask_strides != NULL) {
        memcpy(steps[n++], mask_strides, sizeof(int64_t) * (size_t)plan->ndim);
    }
    for (int k = 0; k < n; k++) {
        for (int d = 0; d < plan->ndim; d++) {
            if (array->shape[d] == 1) {
                steps[k][d] = 0;
            }
        }
    }
    return n;
}

/* plan->nesting from the operands' steps (ufg_reduce_numpy_steps). */
static void
ufg_reduce_numpy_nesting(ufg_reduce_plan *plan, int64_t (*steps)[UFG_CALL_MAX_NDIM], int n)
{
    for (int i = 0; i < plan->ndim; i++) {
        plan->nesting[i] = plan->ndim - 1 - i;
    }
    ufg_numpy_best_axis_order(plan->ndim, steps, n, plan->nesting);
}

/* The steps of the output NumPy allocates: contiguous over the kept axes in the nesting's
 * order, the innermost fastest (npyiter_new_temp_array), in elements: only which steps merge
 * counts here. */
static void
ufg_reduce_numpy_result_steps(const ufg_reduce_plan *plan, const int64_t *shape, int64_t *steps)
{
    int64_t step = 1;

    for (int i = 0; i < plan->ndim; i++) {
        const int d = plan->nesting[i];
        steps[d] = plan->reduced[d] || shape[d] == 1 ? 0 : step;
        step *= plan->reduced[d] ? 1 : shape[d];
    }
}

/* NumPy's iterator axes, innermost first (npyiter_coalesce_axes): the nesting without axes of
 * one element, neighbours merged where every operand steps through both as through one.
 * That is the kernels' rule (ufg_collapse), which takes the axes outermost first: the nesting
 * is handed to it reversed, and its answer reversed back.  steps[0] is the output's.  Returns
 * their count. */
static int
ufg_reduce_numpy_merge(const ufg_reduce_plan *plan, const int64_t *shape,
                       int64_t (*steps)[UFG_CALL_MAX_NDIM], int nops, int64_t *merged_shape,
                       int64_t (*merged)[UFG_CALL_MAX_NDIM])
{
    int n;

    for (int i = 0; i < plan->ndim; i++) {
        const int d = plan->nesting[plan->ndim - 1 - i];      /* outermost first */
        merged_shape[i] = shape[d];
        for (int k = 0; k < nops; k++) {
            merged[k][i] = steps[k][d];
        }
    }
    n = ufg_collapse(plan->ndim, merged_shape, nops, merged);
    for (int i = 0, j = n - 1; i < j; i++, j--) {                   /* innermost first */
        ufg_swap_dimensions(merged_shape, nops, merged, i, j);
    }
    return n;
}

/*
 * The elements of one output NumPy's loop takes per call, over its merged axes (steps[0]: the
 * output's; buffered[k]: operand k is cast through a buffer), as npyiter_find_buffering_setup
 * decides with the buffer size (NumPy 2.3 and later):
 *   - its inner axis a kept one: 1, the loop runs along the outputs;
 *   - else a core of inner axes and an outer one, grown while the cost model (1 + buffered
 *     operands, over the elements a buffer holds) says so, up to the first kept axis: an
 *     operand that stops stepping as one over the core is buffered (copied contiguous).  With
 *     that kept axis as the outer one the loop takes the core per call ("reduce mode"), else
 *     the core times the outer axis, a buffer at most.
 */
static int64_t
ufg_reduce_numpy_call_size(int ndim, const int64_t *shape, int64_t (*steps)[UFG_CALL_MAX_NDIM],
                           int nops, const int *buffered, int64_t buffersize)
{
    int single[UFG_NUMPY_REDUCE_OPERANDS];
    int cost = 1, best_cost, best_dim = 0, outer_reduce = 0;
    int64_t size, best_size, best_core = 1;

    if (ndim == 0 || steps[0][0] != 0) {
        return 1;
    }
    for (int k = 0; k < nops; k++) {
        single[k] = 1;
        cost += buffered[k];
    }
    best_cost = cost;
    size = best_size = shape[0];
    for (int d = 1; d < ndim && !outer_reduce; d++) {
        int64_t core, held;
        if (size >= buffersize && cost > 1) {
            break;
        }
        for (int k = 0; k < nops; k++) {
            if (single[k] == d) {
                if (steps[k][d - 1] * shape[d - 1] == steps[k][d]) {
                    single[k]++;
                    continue;
                }
                cost += !buffered[k];
            }
            if (k == 0 && (steps[0][d] == 0 || steps[0][d - 1] == 0)) {
                outer_reduce = d;
            }
        }
        core = size;
        size *= shape[d];
        if (size == 0) {
            break;
        }
        held = size > buffersize && cost > 1 ? buffersize : size;
        if ((double)cost * (double)best_size <= (double)best_cost * (double)held) {
            best_cost = cost;
            best_core = core;
            best_size = size;
            best_dim = d;
        }
    }
    if (outer_reduce != 0 && best_dim == outer_reduce) {
        return best_core;
    }
    return best_size < buffersize ? best_size : buffersize;
}

/* plan->host_call: the elements of one output NumPy hands an associative function's host loop
 * per call, which reduces a call of fewer than UFG_REDUCE_FEW in its own order
 * (reduce_order.h); the kernel takes that order for the same bits.  `steps` as
 * ufg_reduce_numpy_steps left them (n of them, out= first when `out` is given). */
static int
ufg_reduce_numpy_host_call(ufg_reduce_plan *plan, const ufg_operand *array,
                           const ufg_operand *out, int64_t (*steps)[UFG_CALL_MAX_NDIM], int n)
{
    int64_t all[UFG_NUMPY_REDUCE_OPERANDS][UFG_CALL_MAX_NDIM];
    int64_t merged[UFG_NUMPY_REDUCE_OPERANDS][UFG_CALL_MAX_NDIM];
    int64_t merged_shape[UFG_CALL_MAX_NDIM], buffersize;
    int buffered[UFG_NUMPY_REDUCE_OPERANDS] = {0};
    int nops = 0, ndim;

    plan->host_call = 1;
    if (ufg_numpy_buffersize(&buffersize) < 0) {
        return -1;
    }
    if (out == NULL) {
        ufg_reduce_numpy_result_steps(plan, array->shape, all[nops++]);
    }
    for (int k = 0; k < n; k++) {
        memcpy(all[nops++], steps[k], sizeof(all[0]));
    }
    buffered[0] = out != NULL && out->code != plan->acc;    /* out=, then the array */
    buffered[1] = array->code != plan->acc;
    ndim = ufg_reduce_numpy_merge(plan, array->shape, all, nops, merged_shape, merged);
    plan->host_call = ufg_reduce_numpy_call_size(ndim, merged_shape, merged, nops, buffered,
                                                 buffersize);
    return 0;
}

/* Whether the array's reduced axes, merged as the device merges them, end in a dimension
 * whose lines hold whole host calls: else the array is copied first, contiguous along the
 * nesting, as NumPy's buffer holds a call that spans axes it cannot merge. */
static int
ufg_reduce_host_calls_fit(const ufg_reduce_plan *plan, const int64_t *shape,
                          const int64_t *strides)
{
    int64_t reduce_shape[UFG_CALL_MAX_NDIM], reduce_strides[1][UFG_CALL_MAX_NDIM];
    int reduce_ndim;

    if (plan->host_call <= 1 || plan->host_call >= UFG_REDUCE_FEW) {
        return 1;
    }
    reduce_ndim = ufg_reduce_pick(plan, shape, 1, reduce_shape);
    ufg_reduce_pick(plan, strides, 1, reduce_strides[0]);
    reduce_ndim = ufg_collapse(reduce_ndim, reduce_shape, 1, reduce_strides);
    return reduce_ndim > 0 && reduce_shape[reduce_ndim - 1] % plan->host_call == 0;
}

/* A copy of the array's shape contiguous along the nesting: strides. */
static void
ufg_reduce_nested_strides(const ufg_reduce_plan *plan, const int64_t *shape, int64_t itemsize,
                          int64_t *strides)
{
    for (int i = 0; i < plan->ndim; i++) {
        strides[plan->nesting[i]] = itemsize;
        itemsize *= shape[plan->nesting[i]];
    }
}

/*
 * plan->shared: the broadcast axes of the array (stride 0 over more than one element) whose
 * one element the copy holds, stride 0, so that a broadcast array costs its data, not its
 * shape, as every other copy of the data does (ufg_call_copy_data).  All of them but those
 * along which the copy's elements differ or must lie in a row:
 *   - an axis the where= mask steps along: the copy holds the identity where it is False;
 *   - a reduced axis whose first element passes through out='s dtype (first_through_out);
 *   - the reduced axes inside one of NumPy's short host calls, which its buffer may take
 *     across a broadcast axis and its neighbours (26 elements per call of a (2, 13) array
 *     broadcast along its last axis): the kernel takes its last reduced dimension as the
 *     calls (ufg_reduce_split_host_calls), and a zero stride next to a nonzero one would cut
 *     it short.  Those calls span whole axes (ufg_reduce_numpy_call_size), fewer than
 *     UFG_REDUCE_FEW elements: these axes hold that few.
 */
static void
ufg_reduce_shared_axes(ufg_reduce_plan *plan, const ufg_operand *array)
{
    int64_t in_call = 1;

    for (int d = 0; d < plan->ndim; d++) {
        plan->shared[d] = array->strides[d] == 0 && array->shape[d] > 1 &&
                          (plan->mask_strides == NULL || plan->mask_strides[d] == 0) &&
                          !(plan->reduced[d] && plan->first_through_out);
    }
    if (plan->host_call <= 1 || plan->host_call >= UFG_REDUCE_FEW) {
        return;
    }
    for (int i = 0; i < plan->ndim && in_call < plan->host_call; i++) {   /* innermost first */
        const int d = plan->nesting[i];
        if (array->shape[d] == 1) {
            continue;
        }
        if (!plan->reduced[d]) {
            break;
        }
        plan->shared[d] = 0;
        in_call *= array->shape[d];
    }
}

/* The shape of the elements the copy holds: the array's, one along the shared axes. */
static void
ufg_reduce_held_shape(const ufg_reduce_plan *plan, const ufg_operand *array, int64_t *shape)
{
    for (int d = 0; d < plan->ndim; d++) {
        shape[d] = plan->shared[d] ? 1 : array->shape[d];
    }
}

/* plan->shared and plan->copy_strides, for a plan that copies the array. */
static void
ufg_reduce_copy_layout(ufg_reduce_plan *plan, const ufg_operand *array)
{
    int64_t held[UFG_CALL_MAX_NDIM];

    ufg_reduce_shared_axes(plan, array);
    ufg_reduce_held_shape(plan, array, held);
    ufg_reduce_nested_strides(plan, held, ufg_dtype_itemsize(plan->acc), plan->copy_strides);
    for (int d = 0; d < plan->ndim; d++) {
        if (plan->shared[d]) {
            plan->copy_strides[d] = 0;
        }
    }
}

/*
 * The kernel takes its last reduced dimension as one host call (kernels.cu.j2): reduced in the
 * host loop's order when shorter than UFG_REDUCE_FEW, every call's result combined into the
 * output in turn.  An associative function's reduction on one thread per output is shaped so:
 * the last dimension split into host calls, or ended with one of length 1 where NumPy's loop
 * takes an element per call.  No room for the extra dimension leaves the order the kernel's.
 * Returns the new dimension count.
 */
static int
ufg_reduce_split_host_calls(const ufg_reduce_plan *plan, int reduce_ndim, int64_t *shape,
                            int64_t *strides)
{
    const int64_t call = plan->host_call, last = reduce_ndim ? shape[reduce_ndim - 1] : 0;

    if (reduce_ndim == 0 || reduce_ndim == UFG_DEVICE_MAX_DIMS || call >= UFG_REDUCE_FEW ||
        last == call || last % call != 0 || (call == 1 && last > UFG_REDUCE_FEW)) {
        return reduce_ndim;         /* already calls, or the kernel's order is the host's */
    }
    shape[reduce_ndim - 1] = last / call;
    shape[reduce_ndim] = call;
    strides[reduce_ndim] = strides[reduce_ndim - 1];
    strides[reduce_ndim - 1] *= call;
    return reduce_ndim + 1;
}

/* where=False selects no element: every result is the initial value, as a reduction over
 * empty axes gives.  The reduced axes become empty; with none (axis=(), a 0-d array) an
 * empty reduced axis is put first, and keepdims, which keeps no axis then, is dropped. */
static int
ufg_reduce_select_nothing(const char *name, ufg_operand *array, ufg_reduce_plan *plan)
{
    int any = 0;

    for (int d = 0; d < array->ndim; d++) {
        if (plan->reduced[d]) {
            array->shape[d] = 0;
            any = 1;
        }
    }
    if (any) {
        return 0;
    }
    if (array->ndim == UFG_CALL_MAX_NDIM) {
        PyErr_Format(PyExc_ValueError, "%s.reduce: where=False over no axis of a %d-d array "
                     "is not supported on the device", name, array->ndim);
        return -1;
    }
    memmove(array->shape + 1, array->shape, sizeof(int64_t) * (size_t)array->ndim);
    memmove(array->strides + 1, array->strides, sizeof(int64_t) * (size_t)array->ndim);
    memmove(plan->reduced + 1, plan->reduced, (size_t)array->ndim);
    array->shape[0] = 0;
    array->strides[0] = 0;
    plan->reduced[0] = 1;
    array->ndim++;
    plan->ndim = array->ndim;
    plan->keepdims = 0;
    return 0;
}

/* An out= whose elements share memory: NumPy's loop accumulates into a shared address every
 * element whose result lands there, from the start value once.  A zero stride over a kept
 * axis makes that axis a reduced one (its entry leaves out_keep, the kernel's strides over
 * the kept axes), which gives NumPy's result where the order does not matter: an associative
 * function with a start value, reducing straight into out=.  Any other sharing is refused:
 * what NumPy leaves there depends on the order of its loop. */
static int
ufg_reduce_fold_shared_outputs(const char *name, const ufg_function_descriptor *fn,
                               const ufg_operand *out, ufg_reduce_plan *plan, int64_t *out_keep)
{
    ufg_operand rest = *out;
    char folded[UFG_CALL_MAX_NDIM] = {0};
    int any = 0, kept = 0, at = 0;
    int64_t n_out = 1;

    for (int d = 0, o = 0; d < plan->ndim; d++) {
        if (plan->reduced[d]) {
            o += plan->keepdims;
            continue;
        }
        if (out->strides[o] == 0 && out->shape[o] > 1) {
            folded[d] = 1;
            rest.shape[o] = 1;
            any = 1;
        }
        n_out *= rest.shape[o];
        o++;
    }
    if (!any || ufg_has_internal_overlap(&rest) || !(fn->flags & UFG_FN_ASSOCIATIVE) ||
        plan->from_first || !plan->direct) {
        PyErr_Format(PyExc_ValueError, "%s.reduce: out= has elements that share memory; the "
                     "device reduces into such an out= only when they share it by a zero "
                     "stride, the function is associative and has a start value (an identity "
                     "or initial=), and out= has the accumulator's dtype (%s) and does not "
                     "overlap the array", name, ufg_dtype_name(plan->acc));
        return -1;
    }
    for (int d = 0; d < plan->ndim; d++) {
        if (!plan->reduced[d]) {
            if (!folded[d]) {
                out_keep[at++] = out_keep[kept];
            }
            kept++;
            plan->reduced[d] = folded[d];
        }
    }
    plan->n_out = n_out;
    return 0;
}

/* Whether a step's threads take neighbouring outputs (rather than neighbouring chunks of one
 * output): when that reads neighbouring memory, as when reducing the rows of a C array. */
static int
ufg_reduce_outputs_fastest(const ufg_reduce_step *step)
{
    int64_t keep, reduce;

    if (step->keep_ndim == 0 || step->n_chunks == 1) {
        return 0;
    }
    keep = step->in_keep[step->keep_ndim - 1];
    reduce = step->in_reduce[step->reduce_ndim - 1];
    return (keep < 0 ? -keep : keep) < (reduce < 0 ? -reduce : reduce);
}

/* Where a step with its n_chunks set writes: the target when it leaves one result per
 * output, else its partial results, n_chunks per output, the outputs C-contiguous over the
 * kept axes. */
static void
ufg_reduce_step_output(ufg_reduce_step *step, int64_t itemsize, const int64_t *target_keep_strides)
{
    if (step->n_chunks == 1) {
        memcpy(step->out_keep, target_keep_strides, sizeof(int64_t) * (size_t)step->keep_ndim);
        step->out_chunk_stride = 0;
    }
    else {
        ufg_c_strides(step->keep_ndim, step->keep_shape, step->n_chunks * itemsize,
                      step->out_keep);
        step->out_chunk_stride = itemsize;
    }
}

/* Step k > 0 of a split reduction: the previous step's partial results (n_out by n_in,
 * C-contiguous) into n_chunks per output, or into the target when n_chunks is 1. */
static void
ufg_reduce_partials_step(const ufg_reduce_step *previous, int64_t itemsize, int64_t n_chunks,
                         const int64_t *target_keep_strides, ufg_reduce_step *step)
{
    const int keep_ndim = previous->keep_ndim;

    step->keep_ndim = keep_ndim;
    memcpy(step->keep_shape, previous->keep_shape, sizeof(int64_t) * (size_t)keep_ndim);
    memcpy(step->in_keep, previous->out_keep, sizeof(int64_t) * (size_t)keep_ndim);
    step->reduce_ndim = 1;
    step->reduce_shape[0] = previous->n_chunks;
    step->in_reduce[0] = itemsize;
    step->n_chunks = n_chunks;
    ufg_reduce_step_output(step, itemsize, target_keep_strides);
}

/* The launches for a source with `in_strides` (over the array's axes) and a target with
 * `out_keep_strides` (over the kept axes): collapsed, checked against the dimension limit,
 * split into chunks where the function allows, with their launch configuration. */
static int
ufg_reduce_plan_steps(const ufg_backend *backend, int device, int associative,
                      const int64_t *shape, const int64_t *in_strides,
                      const int64_t *out_keep_strides, ufg_reduce_plan *plan)
{
    int64_t keep_strides[2][UFG_CALL_MAX_NDIM], reduce_strides[1][UFG_CALL_MAX_NDIM];
    ufg_reduce_step *first = &plan->steps[0];
    const int64_t itemsize = ufg_dtype_itemsize(plan->acc);
    const int64_t partial_size = ufg_dtype_itemsize(plan->partial);
    int64_t n_reduce, threads = 0, n_chunks = 1;
    int keep_ndim, reduce_ndim;

    plan->nsteps = 0;
    if (plan->n_out == 0) {
        return 0;                   /* an empty result: nothing to launch */
    }
    keep_ndim = ufg_reduce_pick(plan, shape, 0, first->keep_shape);
    ufg_reduce_pick(plan, in_strides, 0, keep_strides[0]);
    memcpy(keep_strides[1], out_keep_strides, sizeof(int64_t) * (size_t)keep_ndim);
    reduce_ndim = ufg_reduce_pick(plan, shape, 1, first->reduce_shape);
    ufg_reduce_pick(plan, in_strides, 1, reduce_strides[0]);
    n_reduce = ufg_reduction_product(reduce_ndim, first->reduce_shape);
    keep_ndim = ufg_reduction_collapse(keep_ndim, first->keep_shape, 2, keep_strides);
    if (keep_ndim < 0) {
        return -1;
    }
    reduce_ndim = ufg_reduction_collapse(reduce_ndim, first->reduce_shape, 1, reduce_strides);
    if (reduce_ndim < 0) {
        return -1;
    }
    /* One long contiguous line into one result, from the identity or initial=: the
     * function's device-wide reduction (CUB's under CUDA), one launch.  Else enough threads
     * to fill the GPU: split each output's elements into interleaved chunks, whose partial
     * results the next step reduces in chunks again, as long as there are enough of them.
     * Both reorder the reduction, which only an `associative: true` function allows; any
     * other reduces each output on one thread, in NumPy's order. */
    plan->whole = associative && plan->total != NULL && n_reduce >= UFG_REDUCE_MIN_SPLIT &&
                  keep_ndim == 0 && reduce_ndim == 1 && reduce_strides[0][0] == itemsize &&
                  !plan->from_first;
    if (associative && n_reduce >= UFG_REDUCE_MIN_SPLIT && !plan->whole) {
        const int multiprocessors = ufg_runtime_multiprocessors(backend, device);

        if (multiprocessors < 0) {
            return -1;
        }
        threads = (int64_t)multiprocessors * UFG_REDUCE_THREADS_PER_SM;
        n_chunks = ufg_reduction_chunk_count(n_reduce, plan->n_out, threads, UFG_REDUCE_CHUNK);
    }
    if (associative && n_chunks == 1 && !plan->whole) {
        reduce_ndim = ufg_reduce_split_host_calls(plan, reduce_ndim, first->reduce_shape,
                                                  reduce_strides[0]);
    }
    first->keep_ndim = keep_ndim;
    first->reduce_ndim = reduce_ndim;
    memcpy(first->in_keep, keep_strides[0], sizeof(int64_t) * (size_t)keep_ndim);
    memcpy(first->in_reduce, reduce_strides[0], sizeof(int64_t) * (size_t)reduce_ndim);
    first->n_chunks = n_chunks;
    ufg_reduce_step_output(first, partial_size, keep_strides[1]);
    plan->nsteps = 1;
    while (plan->steps[plan->nsteps - 1].n_chunks > 1) {
        const ufg_reduce_step *previous = &plan->steps[plan->nsteps - 1];
        const int64_t next = plan->nsteps + 1 < UFG_REDUCE_MAX_STEPS
            ? ufg_reduction_chunk_count(previous->n_chunks, plan->n_out, threads,
                                        UFG_REDUCE_CHUNK)
            : 1;

        ufg_reduce_partials_step(previous, partial_size, next, keep_strides[1],
                                 &plan->steps[plan->nsteps]);
        plan->nsteps++;
    }
    for (int k = 0; k < plan->nsteps; k++) {
        ufg_reduce_step *step = &plan->steps[k];

        step->outputs_fastest = ufg_reduce_outputs_fastest(step);
        if (ufg_launch_grid(backend, device, plan->n_out * step->n_chunks, &step->grid) < 0) {
            return -1;
        }
    }
    return 0;
}

/* One launch of the plan's reduction kernel. */
static int
ufg_reduce_launch(const ufg_backend *backend, const ufg_reduce_plan *plan,
                  const ufg_reduce_step *step, const char *in, char *out, int device,
                  uintptr_t stream)
{
    ufg_launch launch = {NULL, NULL, NULL, NULL};
    ufg_reduce_params p;

    memset(&p, 0, sizeof(p));
    p.keep_ndim = step->keep_ndim;
    p.reduce_ndim = step->reduce_ndim;
    memcpy(p.keep_shape, step->keep_shape, sizeof(int64_t) * (size_t)step->keep_ndim);
    memcpy(p.reduce_shape, step->reduce_shape, sizeof(int64_t) * (size_t)step->reduce_ndim);
    memcpy(p.in_keep_strides, step->in_keep, sizeof(int64_t) * (size_t)step->keep_ndim);
    memcpy(p.in_reduce_strides, step->in_reduce, sizeof(int64_t) * (size_t)step->reduce_ndim);
    memcpy(p.out_keep_strides, step->out_keep, sizeof(int64_t) * (size_t)step->keep_ndim);
    p.n_out = ufg_reduction_product(step->keep_ndim, step->keep_shape);
    p.n_reduce = ufg_reduction_product(step->reduce_ndim, step->reduce_shape);
    p.n_chunks = step->n_chunks;
    p.chunk_len = p.n_reduce / p.n_chunks + (p.n_reduce % p.n_chunks != 0);
    p.out_chunk_stride = step->out_chunk_stride;
    p.grid = step->grid;
    p.block = UFG_DEVICE_BLOCK;
    p.in = in;
    p.out = out;
    p.outputs_fastest = step->outputs_fastest;
    p.partials_in = step != &plan->steps[0];
    p.partials_out = step->n_chunks > 1;
    if (step == &plan->steps[plan->nsteps - 1]) {
        p.identity = plan->identity;                /* initial= counts once, here */
        p.start_from_first = plan->from_first;
    }
    else {
        /* The chunks of a split reduction start from their first elements (none is empty:
         * there are at most as many as elements), and partial results from theirs: the
         * identity and initial= count once, in the last step, as NumPy counts them once,
         * neutral or not (identity: 0.1 of an add). */
        p.start_from_first = 1;
    }
    launch.reduce = plan->whole ? plan->total : plan->launcher;
    launch.reduce_params = &p;
    return ufg_launch_run(backend, &launch, device, stream, "a reduction kernel launch");
}

/* ------------------------------------------------------------------ the checks */

/* NumPy's rule: a function without an identity (and not declared reorderable without one)
 * reduces over one axis at most, since its order matters. */
static int
ufg_reduce_check_reorderable(const char *name, const ufg_function_descriptor *fn, int ndim,
                             const char *reduced)
{
    int n = 0;

    for (int d = 0; d < ndim; d++) {
        n += reduced[d] != 0;
    }
    if (n > 1 && fn->identity == PyUFunc_None) {
        PyErr_Format(PyExc_ValueError, "%s.reduce: reduction operation '%s' is not "
                     "reorderable, so at most one axis may be specified", name, name);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ running */

/* where=: `source` gets the identity everywhere, then the array's elements where the mask is
 * True (cast to the accumulator), so that masked-out elements change nothing. */
static int
ufg_reduce_masked_copy(ufg_call *c, const ufg_reduce_plan *plan, const ufg_operand *array,
                       const ufg_operand *mask, const ufg_operand *source)
{
    static const int64_t zeros[UFG_CALL_MAX_NDIM];
    ufg_DeviceArrayObject *identity = ufg_call_empty(c, 0, zeros, plan->acc);     /* 0-d */
    int error;

    if (identity == NULL) {
        return -1;
    }
    Py_BEGIN_ALLOW_THREADS
    error = c->backend->memcpy(identity->ptr, plan->chunk_start.bytes,
                               (size_t)ufg_dtype_itemsize(plan->acc), UFG_MEMCPY_HOST_TO_DEVICE,
                               c->device, (void *)c->stream);
    Py_END_ALLOW_THREADS
    if (error) {
        return ufg_device_error_int(c->backend, error, "copying the identity to the device");
    }
    return ufg_launch_cast(c->backend, c->device, c->stream, source->ndim, source->shape,
                           identity->ptr, zeros, plan->acc, source->ptr, source->strides,
                           plan->acc, NULL, NULL) < 0 ||
           ufg_launch_cast(c->backend, c->device, c->stream, source->ndim, source->shape,
                           array->ptr, array->strides, array->code, source->ptr,
                           source->strides, plan->acc, mask->ptr, plan->mask_strides) < 0
        ? -1 : 0;
}

/* The array's copy in the accumulator's dtype, contiguous along NumPy's nesting
 * (plan->copy_strides): *copy describes the elements it holds over the array's axes (one
 * along the shared ones), which the casts into it fill once each. */
static ufg_DeviceArrayObject *
ufg_reduce_new_copy(ufg_call *c, const ufg_reduce_plan *plan, const ufg_operand *array,
                    ufg_operand *copy)
{
    int64_t held[UFG_CALL_MAX_NDIM], nested_shape[UFG_CALL_MAX_NDIM];  /* outermost first */
    ufg_DeviceArrayObject *made;

    ufg_reduce_held_shape(plan, array, held);
    for (int i = 0; i < array->ndim; i++) {
        nested_shape[i] = held[plan->nesting[array->ndim - 1 - i]];
    }
    made = ufg_call_empty(c, array->ndim, nested_shape, plan->acc);
    if (made == NULL) {
        return NULL;
    }
    memset(copy, 0, sizeof(*copy));
    ufg_operand_from_array(made, copy);
    memcpy(copy->shape, held, sizeof(int64_t) * (size_t)array->ndim);
    memcpy(copy->strides, plan->copy_strides, sizeof(int64_t) * (size_t)array->ndim);
    return made;
}

/* NumPy starts a reduction without an initial value by copying the first elements (index 0
 * on every reduced axis) into out=, and reduces the rest into out= through the loop's dtype:
 * the first elements are cast to out's dtype and back (float32 1.9 into an int64 out starts
 * from 1.0).  `source` holds the array cast to the accumulator; its first elements are
 * replaced by the array's, cast to out's dtype and then to the accumulator's (each element
 * `source` holds once: one along its shared axes, which are kept ones here). */
static int
ufg_reduce_first_through_out(ufg_call *c, const ufg_reduce_plan *plan, const ufg_operand *array,
                             const ufg_operand *source, const ufg_operand *out)
{
    ufg_operand first = *array, first_in_source = *source, passed;
    ufg_DeviceArrayObject *through;

    for (int d = 0; d < plan->ndim; d++) {
        if (plan->reduced[d]) {
            first_in_source.shape[d] = 1;
        }
        first.shape[d] = first_in_source.shape[d];
    }
    through = ufg_call_empty(c, first.ndim, first.shape, out->code);
    if (through == NULL) {
        return -1;
    }
    memset(&passed, 0, sizeof(passed));
    ufg_operand_from_array(through, &passed);
    return ufg_call_cast(c, &first, &passed, NULL) < 0 ||
           ufg_call_cast(c, &passed, &first_in_source, NULL) < 0 ? -1 : 0;
}

/* The plan's launches, from `in` to `target`: each step's partial results go to one of two
 * buffers in turn (the first step's, the largest, is also the third's, and so on). */
static int
ufg_reduce_run_steps(ufg_call *c, const ufg_reduce_plan *plan, const char *in, char *target)
{
    ufg_DeviceArrayObject *partials[2] = {NULL, NULL};

    for (int k = 0; k < plan->nsteps; k++) {
        const ufg_reduce_step *step = &plan->steps[k];
        const char *source = k == 0 ? in : partials[(k - 1) % 2]->ptr;
        char *destination = target;

        if (k < plan->nsteps - 1) {
            if (partials[k % 2] == NULL) {
                const int64_t shape[2] = {plan->n_out, step->n_chunks};

                partials[k % 2] = ufg_call_empty(c, 2, shape, plan->partial);
                if (partials[k % 2] == NULL) {
                    return -1;
                }
            }
            destination = partials[k % 2]->ptr;
        }
        if (ufg_reduce_launch(c->backend, plan, step, source, destination, c->device,
                              c->stream) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Everything is checked: queues the casts and launches, and returns the result. */
static PyObject *
ufg_reduce_run(ufg_call *c, const ufg_reduce_plan *plan, PyObject *array_obj,
               const ufg_operand *array, PyObject *out_obj, const ufg_operand *out,
               const ufg_operand *mask)
{
    ufg_DeviceArrayObject *source = NULL, *result = NULL;
    ufg_operand source_op, result_op;
    const char *in;
    char *target;

    if (ufg_call_wait_for_operand(c, array) < 0 ||
        (out_obj != NULL && ufg_call_wait_for_operand(c, out) < 0) ||
        (mask != NULL && ufg_call_wait_for_operand(c, mask) < 0)) {
        return NULL;
    }
    /* Whatever happens from here, work on them may be queued. */
    if (ufg_call_note_use(c, array) < 0 || (out_obj != NULL && ufg_call_note_use(c, out) < 0) ||
        (mask != NULL && ufg_call_note_use(c, mask) < 0)) {
        return NULL;
    }
    in = array->ptr;
    if (plan->copy_input) {
        source = ufg_reduce_new_copy(c, plan, array, &source_op);
        if (source == NULL) {
            return NULL;
        }
        if (mask != NULL ? ufg_reduce_masked_copy(c, plan, array, mask, &source_op) < 0
                         : ufg_call_cast(c, array, &source_op, NULL) < 0) {
            return NULL;
        }
        if (plan->first_through_out &&
            ufg_reduce_first_through_out(c, plan, array, &source_op, out) < 0) {
            return NULL;
        }
        in = source->ptr;
    }
    if (plan->direct) {
        target = out->ptr;
    }
    else {
        result = ufg_call_empty(c, plan->out_ndim, plan->out_shape, plan->acc);
        if (result == NULL) {
            return NULL;
        }
        target = result->ptr;
    }
    if (ufg_reduce_run_steps(c, plan, in, target) < 0) {
        return NULL;
    }
    if (plan->cast_result) {
        memset(&result_op, 0, sizeof(result_op));
        ufg_operand_from_array(result, &result_op);
        if (ufg_call_cast(c, &result_op, out, NULL) < 0) {
            return NULL;
        }
    }
    if (out_obj != NULL) {
        return Py_NewRef(out_obj);
    }
    return ufg_wrap_like(array_obj, (PyObject *)result);
}

/* ------------------------------------------------------------------ the entry point */

PyObject *
ufg_device_reduce(PyObject *function, const ufg_function_descriptor *fn, PyObject *ufunc,
                  PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    const char *name = fn->name;
    PyObject *values[UFG_R_COUNT] = {NULL};
    PyObject *array_obj, *out_obj = NULL, *initial, *result = NULL;
    PyArray_Descr *dtype = NULL;
    const ufg_backend *backend;
    ufg_reduce_resolution scratch, *resolution;
    ufg_reduce_plan plan;
    ufg_operand array, out;
    int have_array = 0, have_out = 0, where_given, where_value = 1;
    char what[200], out_what[200], prefix[160];
    int64_t in_strides[UFG_CALL_MAX_NDIM], result_strides[UFG_CALL_MAX_NDIM];
    int64_t out_keep[UFG_CALL_MAX_NDIM];
    uintptr_t stream = 0;
    PyObject *default_keeper = NULL;    /* the default stream's owner, when not stream= */
    int stream_given;
    PyObject *mask_obj = NULL;          /* where= as a CUDA array, borrowed */
    ufg_operand mask;
    int64_t mask_strides[UFG_CALL_MAX_NDIM];
    int have_mask = 0;
    int64_t numpy_steps[UFG_NUMPY_REDUCE_OPERANDS][UFG_CALL_MAX_NDIM];
    int numpy_nops;
    ufg_call *c = NULL;

    ufg_join(prefix, sizeof(prefix), name, ".reduce", (const char *)NULL);
    if (ufg_reduction_check_function(prefix, "reduce", fn) < 0) {
        return NULL;
    }
    if (ufg_reduction_parse(prefix, ufg_reduce_names, UFG_R_COUNT, UFG_R_POSITIONAL,
                            "axis, dtype, initial, keepdims, out, stream, where", args, nargs,
                            kwnames, values) < 0 ||
        ufg_reduce_where(name, values[UFG_R_WHERE], &where_given, &where_value,
                         &mask_obj) < 0 ||
        ufg_reduction_start(values[UFG_R_STREAM], &stream, &backend) < 0) {
        return NULL;
    }

    /* The array. */
    ufg_join(what, sizeof(what), prefix, ": argument 'array'", (const char *)NULL);
    ufg_join(out_what, sizeof(out_what), prefix, ": out=", (const char *)NULL);
    array_obj = values[UFG_R_ARRAY];
    stream_given = values[UFG_R_STREAM] != NULL && values[UFG_R_STREAM] != Py_None;
    memset(&out, 0, sizeof(out));
    if (ufg_reduction_array(prefix, what, array_obj, mask_obj != NULL ? "where=" : "out=",
                            stream_given, &stream, &default_keeper, &array) < 0) {
        return NULL;
    }
    have_array = 1;
    if (mask_obj != NULL) {
        memset(&mask, 0, sizeof(mask));
        have_mask = 1;
        if (ufg_reduce_mask_operand(name, mask_obj, stream, &mask) < 0) {
            goto done;
        }
    }

    /* dtype=, which NumPy reads before the axes: a DType, so without a byte order. */
    if (ufg_dtype_keyword(prefix, values[UFG_R_DTYPE], &dtype) < 0) {
        goto done;
    }

    /* out=, whose kind NumPy checks before the axes. */
    if (ufg_reduction_out_object(prefix, values[UFG_R_OUT], &out_obj) < 0) {
        goto done;
    }
    if (out_obj != NULL) {
        have_out = 1;
        if (ufg_reduction_out_operand(prefix, out_obj, out_what, &array, stream, &out) < 0) {
            goto done;
        }
    }

    /* axis=, keepdims= and the result's shape. */
    memset(&plan, 0, sizeof(plan));
    plan.ndim = array.ndim;
    if (ufg_reduce_keepdims(values[UFG_R_KEEPDIMS], &plan.keepdims) < 0 ||   /* NumPy's order */
        ufg_reduce_axes(prefix, values[UFG_R_AXIS], array.ndim, plan.reduced) < 0) {
        goto done;
    }
    for (int d = 0; d < array.ndim; d++) {
        if (!plan.reduced[d]) {
            plan.out_shape[plan.out_ndim++] = array.shape[d];
        }
        else if (plan.keepdims) {
            plan.out_shape[plan.out_ndim++] = 1;
        }
    }
    plan.n_out = ufg_reduction_product(plan.out_ndim, plan.out_shape);

    /* NumPy's reduction resolution (reduction.h). */
    resolution = ufg_reduction_resolve(prefix, fn, ufunc, dtype, &array,
                                       have_out ? &out : NULL, &scratch);
    if (resolution == NULL ||
        ufg_reduce_check_reorderable(name, fn, array.ndim, plan.reduced) < 0 ||   /* then */
        (have_out && ufg_reduction_check_out(prefix, &array, plan.out_ndim, plan.out_shape,
                                             &out) < 0)) {
        goto done;
    }
    if (resolution->loop_index < 0) {
        PyErr_Format(PyExc_TypeError, "%s.reduce: no device reduction loop for %s", name,
                     ufg_dtype_name(array.code));
        goto done;
    }
    plan.loop_index = resolution->loop_index;
    plan.acc = (ufg_dtype_code)resolution->acc;
    plan.launcher = fn->device_loops[plan.loop_index].reduce[backend->id];
    plan.total = fn->device_loops[plan.loop_index].total[backend->id];
    plan.partial = fn->device_loops[plan.loop_index].steps_in_float ? UFG_DT_FLOAT32 : plan.acc;
    if (plan.launcher == NULL) {
        ufg_call_missing_launcher(backend, name, plan.loop_index);
        goto done;
    }

    /* initial=: the function's identity unless given; None asks for none, as in NumPy.  With
     * no start value a reduction starts from its first element, which a where mask and an
     * empty reduced axis cannot do without. */
    initial = values[UFG_R_INITIAL];
    if (initial == ufg_reduction_no_value) {
        initial = NULL;
    }
    plan.from_first = initial == Py_None || (initial == NULL && !ufg_reduce_has_identity(fn));
    if (where_given && plan.from_first) {
        PyErr_Format(PyExc_ValueError, "%s.reduce: reduction operation '%s' does not have an "
                     "identity, so to use a where mask one has to specify 'initial'", name,
                     name);
        goto done;
    }
    if (!where_value && ufg_reduce_select_nothing(name, &array, &plan) < 0) {
        goto done;
    }
    if (plan.from_first) {          /* NumPy: any empty reduced axis, whatever the result */
        for (int d = 0; d < array.ndim; d++) {
            if (plan.reduced[d] && array.shape[d] == 0) {
                PyErr_Format(PyExc_ValueError,
                             "%s.reduce: zero-size array to reduction operation %s which has "
                             "no identity", name, name);
                goto done;
            }
        }
    }
    if (mask_obj != NULL) {
        /* Masked-out elements become the identity before the reduction (below). */
        if (!ufg_reduce_has_identity(fn)) {
            PyErr_Format(PyExc_TypeError, "%s.reduce: a where= mask on the device needs a "
                         "function with an identity, and %s has none; reduce a host copy",
                         name, name);
            goto done;
        }
        if (ufg_reduce_mask_fits(name, &mask, &array, mask_strides) < 0) {
            goto done;
        }
        if (array.ndim > UFG_DEVICE_MAX_DIMS) {
            PyErr_Format(PyExc_ValueError, "%s.reduce: a where= mask on the device takes arrays "
                         "of at most %d dimensions", name, UFG_DEVICE_MAX_DIMS);
            goto done;
        }
    }
    if (ufg_reduce_has_identity(fn) &&
        ufg_reduce_identity(fn, plan.acc, resolution, &plan.chunk_start) < 0) {
        goto done;
    }
    plan.identity = plan.chunk_start;
    if (initial != NULL && initial != Py_None &&
        ufg_reduce_initial(prefix, initial, plan.acc, &plan.identity) < 0) {
        goto done;
    }
    if (!plan.from_first && have_out && out.code != plan.acc) {
        ufg_reduce_round_through(&plan.identity, plan.acc, out.code);
    }

    if (ufg_operand_check_alignment(&array, what) < 0 ||
        (have_out && ufg_operand_check_alignment(&out, out_what) < 0)) {
        goto done;
    }

    /* NumPy's nesting of the axes, from the operands as NumPy's iterator gets them. */
    numpy_nops = ufg_reduce_numpy_steps(&plan, &array, have_out ? &out : NULL,
                                        have_mask ? mask_strides : NULL, numpy_steps);
    ufg_reduce_numpy_nesting(&plan, numpy_steps, numpy_nops);

    /* The launches: the target out= itself when it has the accumulator's dtype and does not
     * overlap the array, else a new C-contiguous result (cast into out= after). */
    plan.first_through_out = plan.from_first && have_out && out.code != plan.acc;
    plan.mask_strides = have_mask ? mask_strides : NULL;
    plan.direct = have_out && out.code == plan.acc && !ufg_operands_overlap(&array, &out);
    plan.cast_result = have_out && !plan.direct;
    if (plan.direct) {
        ufg_reduce_pick_result(&plan, out.strides, out_keep);
    }
    else {
        ufg_c_strides(plan.out_ndim, plan.out_shape, ufg_dtype_itemsize(plan.acc),
                      result_strides);
        ufg_reduce_pick_result(&plan, result_strides, out_keep);
        if (plan.cast_result &&
            ufg_reduction_check_cast(plan.out_ndim, plan.out_shape, result_strides,
                                  out.strides) < 0) {
            goto done;
        }
    }
    if (have_out && ufg_has_internal_overlap(&out) &&
        ufg_reduce_fold_shared_outputs(name, fn, &out, &plan, out_keep) < 0) {
        goto done;
    }

    /* The source: the array, or its copy in the accumulator's dtype (also for a mask, a first
     * element through out=, or host calls the array's layout cannot hold as lines). */
    if ((fn->flags & UFG_FN_ASSOCIATIVE) &&
        ufg_reduce_numpy_host_call(&plan, &array, have_out ? &out : NULL, numpy_steps,
                                   numpy_nops) < 0) {
        goto done;
    }
    plan.copy_input = array.code != plan.acc || have_mask || plan.first_through_out ||
                      !ufg_reduce_host_calls_fit(&plan, array.shape, array.strides);
    if (plan.copy_input) {
        ufg_reduce_copy_layout(&plan, &array);
        memcpy(in_strides, plan.copy_strides, sizeof(int64_t) * (size_t)array.ndim);
        if (ufg_reduction_check_cast(array.ndim, array.shape, array.strides, in_strides) < 0) {
            goto done;
        }
    }
    else {
        memcpy(in_strides, array.strides, sizeof(int64_t) * (size_t)array.ndim);
    }
    if (ufg_reduce_plan_steps(backend, array.device, (fn->flags & UFG_FN_ASSOCIATIVE) != 0,
                              array.shape, in_strides, out_keep, &plan) < 0) {
        goto done;
    }

    /* Everything is checked: from here on the call runs. */
    c = ufg_reduction_call_new(fn, ufunc, backend, stream, values[UFG_R_STREAM],
                               default_keeper, array.device, plan.loop_index);
    if (c == NULL) {
        goto done;
    }
    result = ufg_reduce_run(c, &plan, array_obj, &array, out_obj, &out,
                            have_mask ? &mask : NULL);

done:
    if (have_mask) {
        ufg_operand_release(&mask);
    }
    ufg_reduction_finish(c, dtype, default_keeper, have_out ? &out : NULL,
                         have_array ? &array : NULL);
    return result;
}
