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
_Static_assert(UFG_A_COUNT <= UFG_REDUCTION_MAX_ARGS, "a session holds every argument");

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
    /* The lines along the axis, the axis' length and strides. */
    ufg_reduction_lines lines;
    int64_t n, in_step, out_step;
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

/* The lines along the plan's axis, with the kernel's input and output strides (in_strides,
 * out_strides over all axes). */
static int
ufg_accumulate_plan_lines(const ufg_operand *array, const int64_t *in_strides,
                          const int64_t *out_strides, ufg_accumulate_plan *plan)
{
    if (ufg_reduction_plan_lines(array->ndim, array->shape, plan->axis, in_strides,
                                 out_strides, &plan->lines) < 0) {
        return -1;
    }
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
                                plan->lines.keep_ndim + 2 <= UFG_DEVICE_MAX_DIMS
                              ? ufg_runtime_multiprocessors(backend, device) : 0;

    plan->chunk_len = 0;
    if (multiprocessors < 0) {
        return -1;
    }
    threads = (int64_t)multiprocessors * UFG_REDUCE_THREADS_PER_SM;
    if (plan->lines.n_lines == 0 || plan->lines.n_lines >= threads) {
        return 0;
    }
    per_line = threads / plan->lines.n_lines;
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
    int k = plan->lines.keep_ndim;

    memset(&p, 0, sizeof(p));
    memcpy(p.keep_shape, plan->lines.keep_shape, sizeof(int64_t) * (size_t)k);
    memcpy(p.in_keep_strides, plan->lines.in_keep, sizeof(int64_t) * (size_t)k);
    memcpy(p.out_keep_strides, plan->lines.out_keep, sizeof(int64_t) * (size_t)k);
    if (lines > 1) {                /* the chunks: one more kept dimension, innermost */
        p.keep_shape[k] = lines;
        p.in_keep_strides[k] = in_line_step;
        p.out_keep_strides[k] = out_line_step;
        k++;
    }
    p.keep_ndim = k;
    p.n_out = plan->lines.n_lines * lines;
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
    const int k = plan->lines.keep_ndim;

    memset(&p, 0, sizeof(p));
    memcpy(p.shape, plan->lines.keep_shape, sizeof(int64_t) * (size_t)k);
    p.shape[k] = groups;
    p.shape[k + 1] = count;
    p.ndim = k + 2;
    p.nargs = 3;
    p.n = plan->lines.n_lines * groups * count;
    p.data[0] = totals;
    p.data[1] = p.data[2] = first;
    for (int a = 0; a < 3; a++) {
        memcpy(p.strides[a], plan->lines.out_keep, sizeof(int64_t) * (size_t)k);
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
    ufg_reduction_buffers b;

    if (ufg_reduction_buffers_new(c, array, out_obj != NULL ? out : NULL, plan->acc,
                                  plan->copy_input, plan->direct, array->ndim, array->shape,
                                  &b) < 0 ||
        ufg_accumulate_lines(c, plan, b.in->ptr, b.target->ptr) < 0) {
        return NULL;
    }
    return ufg_reduction_buffers_finish(c, &b, array_obj, out_obj, out);
}

/* ------------------------------------------------------------------ the entry point */

PyObject *
ufg_device_accumulate(PyObject *function, const ufg_function_descriptor *fn, PyObject *ufunc,
                      PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ufg_reduction_session s;
    ufg_accumulate_plan plan;
    const ufg_operand *array = &s.array, *out = &s.out;
    int64_t in_strides[UFG_CALL_MAX_NDIM], out_strides[UFG_CALL_MAX_NDIM];

    (void)function;
    memset(&plan, 0, sizeof(plan));
    if (ufg_reduction_begin(&s, fn, ufunc, UFG_REDUCTION_ACCUMULATE, ufg_accumulate_names,
                            UFG_A_COUNT, UFG_A_POSITIONAL, "axis, dtype, out, stream", args,
                            nargs, kwnames) < 0) {
        return ufg_reduction_end(&s, NULL);
    }

    /* out= first, of the array's shape: NumPy checks dtype=, axis= and the types first, then
     * writes some outs of other shapes in part, or crashes on a 0-d one (the host path refuses
     * that one first too, src/core/function_object.c); the device's documented difference.
     * Then dtype= and axis=, in NumPy's order, and NumPy's reduction resolution. */
    if (ufg_reduction_take_out(&s, s.values[UFG_A_OUT], array->ndim, array->shape) < 0 ||
        ufg_dtype_keyword(s.prefix, s.values[UFG_A_DTYPE], &s.dtype) < 0 ||
        ufg_accumulate_axis(s.prefix, s.values[UFG_A_AXIS], array->ndim, &plan.axis) < 0 ||
        ufg_reduction_pick_loop(&s) < 0) {
        return ufg_reduction_end(&s, NULL);
    }
    plan.loop_index = s.loop_index;
    plan.acc = s.acc;
    plan.launcher = s.launcher;

    /* The kernel reads the array itself unless it must be cast, or out= overlaps it other
     * than element for element; it writes out= itself when out= has the accumulator's
     * dtype, else a new result that is cast into out= after. */
    plan.copy_input = array->code != plan.acc ||
                      (s.have_out && ufg_operands_overlap(array, out) &&
                       !ufg_accumulate_same_elements(array, out));
    plan.direct = s.have_out && out->code == plan.acc;
    if (plan.copy_input) {
        ufg_c_strides(array->ndim, array->shape, ufg_dtype_itemsize(plan.acc), in_strides);
    }
    if (!plan.direct) {
        ufg_c_strides(array->ndim, array->shape, ufg_dtype_itemsize(plan.acc), out_strides);
    }
    plan.combine = fn->device_loops[plan.loop_index].elementwise[s.backend->id];
    if (ufg_accumulate_plan_lines(array, plan.copy_input ? in_strides : array->strides,
                                  plan.direct ? out->strides : out_strides, &plan) < 0 ||
        ufg_accumulate_plan_chunks(s.backend, array->device,
                                   (fn->flags & UFG_FN_ASSOCIATIVE) != 0 && plan.combine != NULL,
                                   &plan) < 0 ||
        (plan.copy_input &&
         ufg_reduction_check_cast(array->ndim, array->shape, array->strides, in_strides) < 0) ||
        (s.have_out && !plan.direct &&
         ufg_reduction_check_cast(array->ndim, array->shape, out_strides, out->strides) < 0)) {
        return ufg_reduction_end(&s, NULL);
    }

    /* Everything is checked: from here on the call runs. */
    if (ufg_reduction_open_call(&s) < 0) {
        return ufg_reduction_end(&s, NULL);
    }
    return ufg_reduction_end(&s, ufg_accumulate_run(s.c, &plan, s.values[UFG_A_ARRAY], array,
                                                    s.out_obj, out));
}
