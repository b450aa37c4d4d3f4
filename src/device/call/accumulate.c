/*
 * `function.accumulate(array, axis=0, dtype=None, out=None, stream=None)` with a CUDA array:
 * NumPy's accumulation of a binary function, result[0] = array[0] and
 * result[j] = f(result[j - 1], array[j]) along the axis.
 *
 * The call is checked whole first (arguments, the axis, out=, NumPy's reduction type
 * resolution, alignment), so a refused call writes nothing.  Then the array is cast to the
 * accumulator's dtype (or copied, when out= overlaps it other than element for element), the
 * generated accumulate kernel scans each line along the axis on one thread, in NumPy's
 * order (so results are NumPy's bit for bit, for any function), and the result is cast into
 * an out= of another dtype.  Everything is queued on the call's stream.
 *
 * Lines too few to fill the GPU and long enough are split into chunks when the function is
 * `associative: true` (a reordering it allows): each chunk is scanned on a thread of its
 * own, the chunks' last elements are scanned in place (each becomes the total up to its
 * chunk's end), and every other element of a chunk is combined with the total before it, by
 * the function's own elementwise kernel: f(total, scan) = scan from the line's start.
 */
#include "reduction.h"

#include <string.h>

#include "dtypes.h"
#include "launch.h"
#include "runtime.h"

/* The arguments: four positional-or-keyword, then stream= by keyword only. */
enum { UFG_A_ARRAY, UFG_A_AXIS, UFG_A_DTYPE, UFG_A_OUT, UFG_A_STREAM, UFG_A_COUNT };
#define UFG_A_POSITIONAL 4

static const char *const ufg_accumulate_names[UFG_A_COUNT] = {
    "array", "axis", "dtype", "out", "stream"};

/* What one accumulation does, decided before anything runs. */
typedef struct {
    int axis;
    int loop_index;
    ufg_dtype_code acc;
    ufg_reduce_launcher launcher;
    ufg_elementwise_launcher combine;   /* the function's elementwise kernel, for chunks */
    int copy_input;                 /* cast (or copy) the array into a C-contiguous temporary */
    int direct;                     /* the kernel writes out= itself */
    /* The lines along the axis: the other axes (merged where contiguous), their strides in
     * the kernel's input and output, the axis' length and strides. */
    int keep_ndim;
    int64_t keep_shape[UFG_DEVICE_MAX_DIMS];
    int64_t in_keep[UFG_DEVICE_MAX_DIMS], out_keep[UFG_DEVICE_MAX_DIMS];
    int64_t n_lines, n, in_step, out_step;
    int64_t chunk_len;              /* 0: a line per thread; else full chunks of this length */
} ufg_accumulate_plan;

/* axis= (reduction.h), then NumPy's two refusals: a 0-d array, and any count of axes but
 * one. */
static int
ufg_accumulate_axis(const char *prefix, PyObject *axis, int ndim, int *result)
{
    int axes[UFG_CALL_MAX_NDIM];
    Py_ssize_t count;

    if (ufg_reduction_axes(prefix, axis, ndim, axes, &count) < 0) {
        return -1;
    }
    if (ndim == 0) {
        PyErr_Format(PyExc_TypeError, "%s: cannot accumulate on a scalar", prefix);
        return -1;
    }
    if (count != 1) {
        PyErr_Format(PyExc_ValueError, "%s: accumulate does not allow multiple axes", prefix);
        return -1;
    }
    *result = axes[0];
    return 0;
}

/* Whether out= and the array are the same elements (accumulating in place is safe: the
 * kernel reads each element before it writes it). */
static int
ufg_accumulate_same_elements(const ufg_operand *array, const ufg_operand *out)
{
    return array->ptr == out->ptr &&
           ufg_dtype_itemsize(array->code) == ufg_dtype_itemsize(out->code) &&
           memcmp(array->strides, out->strides, sizeof(int64_t) * (size_t)array->ndim) == 0;
}

/* The lines: every axis but the plan's axis, merged where contiguous, with the kernel's input
 * and output strides (in_strides, out_strides over all axes). */
static int
ufg_accumulate_plan_lines(const ufg_operand *array, const int64_t *in_strides,
                          const int64_t *out_strides, ufg_accumulate_plan *plan)
{
    int64_t shape[UFG_CALL_MAX_NDIM], strides[2][UFG_CALL_MAX_NDIM];
    int ndim = 0;

    for (int d = 0; d < array->ndim; d++) {
        if (d != plan->axis) {
            shape[ndim] = array->shape[d];
            strides[0][ndim] = in_strides[d];
            strides[1][ndim] = out_strides[d];
            ndim++;
        }
    }
    plan->n_lines = ufg_reduction_product(ndim, shape);
    ndim = ufg_reduction_collapse(ndim, shape, 2, strides);
    if (ndim < 0) {
        return -1;
    }
    plan->keep_ndim = ndim;
    memcpy(plan->keep_shape, shape, sizeof(int64_t) * (size_t)ndim);
    memcpy(plan->in_keep, strides[0], sizeof(int64_t) * (size_t)ndim);
    memcpy(plan->out_keep, strides[1], sizeof(int64_t) * (size_t)ndim);
    plan->n = array->shape[plan->axis];
    plan->in_step = in_strides[plan->axis];
    plan->out_step = out_strides[plan->axis];
    return 0;
}

/* Chunks for an associative function whose lines are too few to fill the device: as many
 * as fill it, of UFG_REDUCE_MIN_CHUNK elements at least; 0 (no split) otherwise.  The
 * combining launch adds two dimensions to the lines'. */
static int
ufg_accumulate_plan_chunks(const ufg_backend *backend, int device, int associative,
                           ufg_accumulate_plan *plan)
{
    int64_t threads, per_line, chunk_len;
    const int multiprocessors = associative && plan->n >= UFG_REDUCE_MIN_SPLIT &&
                                plan->keep_ndim + 2 <= UFG_DEVICE_MAX_DIMS
                              ? ufg_runtime_multiprocessors(backend, device) : 0;

    plan->chunk_len = 0;
    if (multiprocessors < 0) {
        return -1;
    }
    threads = (int64_t)multiprocessors * UFG_REDUCE_THREADS_PER_SM;
    if (plan->n_lines == 0 || plan->n_lines >= threads) {
        return 0;
    }
    per_line = threads / plan->n_lines;
    chunk_len = (plan->n + per_line - 1) / per_line;
    if (chunk_len < UFG_REDUCE_MIN_CHUNK) {
        chunk_len = UFG_REDUCE_MIN_CHUNK;
    }
    if (plan->n / chunk_len >= 2) {
        plan->chunk_len = chunk_len;
    }
    return 0;
}

/* One launch of the accumulate kernel: n elements (in_step and out_step bytes apart) from
 * `in` scanned into `out`, for every line of the plan, and with lines > 1 for that many
 * segments of each line (in_line_step and out_line_step bytes apart): the chunks. */
static int
ufg_accumulate_scan(const ufg_call *c, const ufg_accumulate_plan *plan, const char *in,
                    int64_t in_step, char *out, int64_t out_step, int64_t n, int64_t lines,
                    int64_t in_line_step, int64_t out_line_step)
{
    ufg_launch launch = {NULL, NULL, NULL, NULL};
    ufg_reduce_params p;
    int k = plan->keep_ndim;

    memset(&p, 0, sizeof(p));
    memcpy(p.keep_shape, plan->keep_shape, sizeof(int64_t) * (size_t)k);
    memcpy(p.in_keep_strides, plan->in_keep, sizeof(int64_t) * (size_t)k);
    memcpy(p.out_keep_strides, plan->out_keep, sizeof(int64_t) * (size_t)k);
    if (lines > 1) {                /* the chunks: one more kept dimension, innermost */
        p.keep_shape[k] = lines;
        p.in_keep_strides[k] = in_line_step;
        p.out_keep_strides[k] = out_line_step;
        k++;
    }
    p.keep_ndim = k;
    p.n_out = plan->n_lines * lines;
    p.reduce_ndim = 1;
    p.n_reduce = p.reduce_shape[0] = n;
    p.in_reduce_strides[0] = in_step;
    p.out_scan_stride = out_step;
    p.n_chunks = 1;
    p.chunk_len = n;
    p.block = UFG_DEVICE_BLOCK;
    p.in = in;
    p.out = out;
    if (p.n_out == 0 || n == 0) {
        return 0;
    }
    if (ufg_launch_grid(c->backend, c->device, p.n_out, &p.grid) < 0) {
        return -1;
    }
    launch.reduce = plan->launcher;
    launch.reduce_params = &p;
    return ufg_launch_run(c->backend, &launch, c->device, c->stream,
                          "an accumulate kernel launch");
}

/* out[j] = f(total, out[j]) in place, by the function's elementwise kernel, for the `count`
 * elements of `groups` groups per line: group g's elements start at first + g * group_step
 * (step bytes apart), its total is at totals + g * group_step. */
static int
ufg_accumulate_combine(const ufg_call *c, const ufg_accumulate_plan *plan, char *totals,
                       char *first, int64_t groups, int64_t group_step, int64_t count)
{
    ufg_launch launch = {NULL, NULL, NULL, NULL};
    ufg_kernel_params p;
    const int k = plan->keep_ndim;

    memset(&p, 0, sizeof(p));
    memcpy(p.shape, plan->keep_shape, sizeof(int64_t) * (size_t)k);
    p.shape[k] = groups;
    p.shape[k + 1] = count;
    p.ndim = k + 2;
    p.nargs = 3;
    p.n = plan->n_lines * groups * count;
    p.data[0] = totals;
    p.data[1] = p.data[2] = first;
    for (int a = 0; a < 3; a++) {
        memcpy(p.strides[a], plan->out_keep, sizeof(int64_t) * (size_t)k);
        p.strides[a][k] = group_step;
        p.strides[a][k + 1] = a == 0 ? 0 : plan->out_step;
    }
    p.block = UFG_DEVICE_BLOCK;
    if (p.n == 0) {
        return 0;
    }
    if (ufg_launch_grid(c->backend, c->device, p.n, &p.grid) < 0) {
        return -1;
    }
    launch.elementwise = plan->combine;
    launch.kernel_params = &p;
    return ufg_launch_run(c->backend, &launch, c->device, c->stream,
                          "an accumulate kernel launch");
}

/* The scan of every line from `in` into `out`: on a thread per line, or in chunks. */
static int
ufg_accumulate_lines(const ufg_call *c, const ufg_accumulate_plan *plan, const char *in,
                     char *out)
{
    const int64_t len = plan->chunk_len, chunks = len ? plan->n / len : 0;
    const int64_t rest = len ? plan->n - chunks * len : 0;
    char *last;                                         /* chunk 0's last element */

    if (len == 0) {
        return ufg_accumulate_scan(c, plan, in, plan->in_step, out, plan->out_step, plan->n,
                                   1, 0, 0);
    }
    last = out + (len - 1) * plan->out_step;
    /* Each chunk on its own, and the rest after the last full chunk. */
    if (ufg_accumulate_scan(c, plan, in, plan->in_step, out, plan->out_step, len, chunks,
                            len * plan->in_step, len * plan->out_step) < 0 ||
        ufg_accumulate_scan(c, plan, in + chunks * len * plan->in_step, plan->in_step,
                            out + chunks * len * plan->out_step, plan->out_step, rest, 1, 0,
                            0) < 0) {
        return -1;
    }
    /* The chunks' last elements, in place: the totals up to each chunk's end. */
    if (ufg_accumulate_scan(c, plan, last, len * plan->out_step, last, len * plan->out_step,
                            chunks, 1, 0, 0) < 0) {
        return -1;
    }
    /* The other elements of chunks 1.. and the rest, each after the total before it. */
    if (ufg_accumulate_combine(c, plan, last, out + len * plan->out_step, chunks - 1,
                               len * plan->out_step, len - 1) < 0) {
        return -1;
    }
    return ufg_accumulate_combine(c, plan, last + (chunks - 1) * len * plan->out_step,
                                  out + chunks * len * plan->out_step, 1, 0, rest);
}

/* Runs the plan: the input copy, the scan, the cast into out=.  A new reference to the
 * result, or NULL. */
static PyObject *
ufg_accumulate_run(ufg_call *c, const ufg_accumulate_plan *plan, PyObject *array_obj,
                   const ufg_operand *array, PyObject *out_obj, const ufg_operand *out)
{
    ufg_DeviceArrayObject *source = NULL, *result = NULL;
    ufg_operand source_op, result_op;
    const ufg_operand *in = array, *target = out;

    if (ufg_call_wait_for_operand(c, array) < 0 ||
        (out_obj != NULL && ufg_call_wait_for_operand(c, out) < 0) ||
        ufg_call_note_use(c, array) < 0 || (out_obj != NULL && ufg_call_note_use(c, out) < 0)) {
        return NULL;
    }
    if (plan->copy_input) {
        if ((source = ufg_call_empty(c, array->ndim, array->shape, plan->acc)) == NULL) {
            return NULL;
        }
        memset(&source_op, 0, sizeof(source_op));
        ufg_operand_from_array(source, &source_op);
        if (ufg_call_cast(c, array, &source_op, NULL) < 0) {
            return NULL;
        }
        in = &source_op;
    }
    if (!plan->direct) {
        if ((result = ufg_call_empty(c, array->ndim, array->shape, plan->acc)) == NULL) {
            return NULL;
        }
        memset(&result_op, 0, sizeof(result_op));
        ufg_operand_from_array(result, &result_op);
        target = &result_op;
    }
    if (ufg_accumulate_lines(c, plan, in->ptr, target->ptr) < 0) {
        return NULL;
    }
    if (out_obj != NULL) {
        if (!plan->direct && ufg_call_cast(c, &result_op, out, NULL) < 0) {
            return NULL;
        }
        return Py_NewRef(out_obj);
    }
    return ufg_wrap_like(array_obj, (PyObject *)result);
}

/* The function can accumulate: a binary, elementwise function with device kernels. */
static int
ufg_accumulate_check_function(const char *prefix, const ufg_function_descriptor *fn)
{
    if (fn->signature != NULL) {        /* NumPy's exception types for these two */
        PyErr_Format(PyExc_RuntimeError, "%s: Reduction not defined on ufunc with signature",
                     prefix);
        return -1;
    }
    if (fn->nin != 2 || fn->nout != 1) {
        PyErr_Format(PyExc_ValueError, "%s: accumulate only supported for binary functions",
                     prefix);
        return -1;
    }
    if (fn->device_loops == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: %s was built without device kernels", prefix,
                     fn->name);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the entry point */

PyObject *
ufg_device_accumulate(PyObject *function, const ufg_function_descriptor *fn, PyObject *ufunc,
                      PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *values[UFG_A_COUNT] = {NULL};
    PyObject *array_obj, *out_obj = NULL, *result = NULL;
    PyObject *default_keeper = NULL;    /* the default stream's owner, when not stream= */
    PyArray_Descr *dtype = NULL;
    const ufg_backend *backend;
    ufg_reduce_resolution scratch, *resolution;
    ufg_accumulate_plan plan;
    ufg_operand array, out;
    int have_array = 0, have_out = 0, stream_given;
    char prefix[160], what[200], out_what[200];
    int64_t in_strides[UFG_CALL_MAX_NDIM], out_strides[UFG_CALL_MAX_NDIM];
    uintptr_t stream = 0;
    ufg_call *c = NULL;

    (void)function;
    PyOS_snprintf(prefix, sizeof(prefix), "%s.accumulate", fn->name);
    if (ufg_accumulate_check_function(prefix, fn) < 0 ||
        ufg_reduction_parse(prefix, ufg_accumulate_names, UFG_A_COUNT, UFG_A_POSITIONAL,
                            "axis, dtype, out, stream", args, nargs, kwnames, values) < 0 ||
        ufg_reduction_start(values[UFG_A_STREAM], &stream, &backend) < 0) {
        return NULL;
    }

    /* The array: a CUDA array (of one dimension at least: checked with the axis). */
    PyOS_snprintf(what, sizeof(what), "%s: argument 'array'", prefix);
    PyOS_snprintf(out_what, sizeof(out_what), "%s: out=", prefix);
    array_obj = values[UFG_A_ARRAY];
    stream_given = values[UFG_A_STREAM] != NULL && values[UFG_A_STREAM] != Py_None;
    memset(&out, 0, sizeof(out));
    memset(&plan, 0, sizeof(plan));
    if (ufg_reduction_array(what, array_obj, stream_given, &stream, &default_keeper,
                            &array) < 0) {
        return NULL;
    }
    have_array = 1;

    /* out= first, of the array's shape: NumPy checks dtype=, axis= and the types first, then
     * writes some outs of other shapes in part, or crashes on a 0-d one (the host path refuses
     * that one first too, src/core/function_object.c); the device's documented difference.
     * Then dtype= and axis=, in NumPy's order. */
    if (ufg_reduction_out_object(prefix, values[UFG_A_OUT], &out_obj) < 0) {
        goto done;
    }
    if (out_obj != NULL) {
        have_out = 1;
        if (ufg_reduction_out_operand(prefix, out_obj, out_what, &array, stream, &out) < 0 ||
            ufg_reduction_check_out(prefix, &array, array.ndim, array.shape, &out) < 0) {
            goto done;
        }
    }
    if (ufg_dtype_keyword(prefix, values[UFG_A_DTYPE], &dtype) < 0 ||
        ufg_accumulate_axis(prefix, values[UFG_A_AXIS], array.ndim, &plan.axis) < 0) {
        goto done;
    }

    /* NumPy's reduction resolution picks the loop and the accumulator. */
    resolution = ufg_reduction_resolve(prefix, fn, ufunc, dtype, &array,
                                       have_out ? &out : NULL, &scratch);
    if (resolution == NULL) {
        goto done;
    }
    if (resolution->loop_index < 0) {
        PyErr_Format(PyExc_TypeError, "%s: no device accumulate loop for %s", prefix,
                     ufg_dtype_name(array.code));
        goto done;
    }
    plan.loop_index = resolution->loop_index;
    plan.acc = (ufg_dtype_code)resolution->acc;
    plan.launcher = fn->device_loops[plan.loop_index].accumulate[backend->id];
    if (plan.launcher == NULL) {
        ufg_call_missing_launcher(backend, fn->name, plan.loop_index);
        goto done;
    }
    if (ufg_operand_check_alignment(&array, what) < 0 ||
        (have_out && ufg_operand_check_alignment(&out, out_what) < 0)) {
        goto done;
    }

    /* The kernel reads the array itself unless it must be cast, or out= overlaps it other
     * than element for element; it writes out= itself when out= has the accumulator's
     * dtype, else a new result that is cast into out= after. */
    plan.copy_input = array.code != plan.acc ||
                      (have_out && ufg_operands_overlap(&array, &out) &&
                       !ufg_accumulate_same_elements(&array, &out));
    plan.direct = have_out && out.code == plan.acc;
    if (plan.copy_input) {
        ufg_c_strides(array.ndim, array.shape, ufg_dtype_itemsize(plan.acc), in_strides);
    }
    if (!plan.direct) {
        ufg_c_strides(array.ndim, array.shape, ufg_dtype_itemsize(plan.acc), out_strides);
    }
    plan.combine = fn->device_loops[plan.loop_index].elementwise[backend->id];
    if (ufg_accumulate_plan_lines(&array, plan.copy_input ? in_strides : array.strides,
                                  plan.direct ? out.strides : out_strides, &plan) < 0 ||
        ufg_accumulate_plan_chunks(backend, array.device,
                                   (fn->flags & UFG_FN_ASSOCIATIVE) != 0 && plan.combine != NULL,
                                   &plan) < 0 ||
        (plan.copy_input &&
         ufg_reduction_check_cast(array.ndim, array.shape, array.strides, in_strides) < 0) ||
        (have_out && !plan.direct &&
         ufg_reduction_check_cast(array.ndim, array.shape, out_strides, out.strides) < 0)) {
        goto done;
    }

    /* Everything is checked: from here on the call runs. */
    c = ufg_reduction_call_new(fn, ufunc, backend, stream, values[UFG_A_STREAM],
                               default_keeper, array.device, plan.loop_index);
    if (c == NULL) {
        goto done;
    }
    result = ufg_accumulate_run(c, &plan, array_obj, &array, out_obj, &out);

done:
    ufg_reduction_finish(c, dtype, default_keeper, have_out ? &out : NULL,
                         have_array ? &array : NULL);
    return result;
}
