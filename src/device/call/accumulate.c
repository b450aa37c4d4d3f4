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
 * An `associative: true` function's lines may be regrouped.  A few contiguous long lines are
 * each scanned by the function's device-wide scan (CUB's under CUDA).  Other lines too few
 * to fill the GPU and long enough are split into chunks: the function's reduce kernel adds
 * up each chunk (but the last), those totals are scanned in place (by the same plan, split
 * again when they are many: one thread scanning 131,072 totals in turn made a 2**27-element
 * scan 37x slower than cupy.cumsum on an H200), and each chunk is scanned from the total
 * before it.  Every element is read twice and written once.
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

/* Lines scanned whole by the function's device-wide scan, at most: each is a launch of its
 * own (several under CUDA, CUB's), so more lines are cut into chunks instead. */
#define UFG_ACCUMULATE_MAX_WHOLE_LINES 8

/* How one level of a scan runs: the lines, their length and strides, and how they are cut. */
typedef struct {
    ufg_reduction_lines lines;
    int64_t n, in_step, out_step;
    int whole;                      /* each line by the device-wide scan */
    int64_t chunk_len;              /* else 0: a line per thread; or chunks of this length */
} ufg_accumulate_level;

/* What one accumulation does, decided before anything runs. */
typedef struct {
    int axis;
    int loop_index;
    ufg_dtype_code acc;
    ufg_reduce_launcher launcher;
    ufg_reduce_launcher totals;     /* the function's reduce kernel, for chunks; NULL: the
                                     * function may not be split */
    ufg_reduce_launcher scan;       /* its device-wide scan of a line; NULL likewise */
    int copy_input;                 /* cast (or copy) the array's data into a temporary
                                     * (ufg_call_copy_data) */
    int direct;                     /* the kernel writes out= itself */
    ufg_accumulate_level top;       /* the lines along the axis */
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
    ufg_accumulate_level *top = &plan->top;

    if (ufg_reduction_plan_lines(array->ndim, array->shape, plan->axis, in_strides,
                                 out_strides, &top->lines) < 0) {
        return -1;
    }
    top->n = array->shape[plan->axis];
    top->in_step = in_strides[plan->axis];
    top->out_step = out_strides[plan->axis];
    return 0;
}

/* How the level's lines are cut when the plan may reorder and they are
 * UFG_ACCUMULATE_MIN_SPLIT long or more: a few contiguous lines whole, by the device-wide
 * scan; lines too few to fill the device into chunks, as many as fill it, of
 * UFG_REDUCE_CHUNK elements at least (the chunks add one kept dimension to the lines');
 * otherwise not at all. */
static int
ufg_accumulate_plan_cuts(const ufg_backend *backend, int device,
                         const ufg_accumulate_plan *plan, ufg_accumulate_level *level)
{
    const int64_t itemsize = ufg_dtype_itemsize(plan->acc);
    int64_t n_chunks;
    int multiprocessors;

    level->whole = 0;
    level->chunk_len = 0;
    if (level->n < UFG_ACCUMULATE_MIN_SPLIT || level->lines.n_lines == 0) {
        return 0;
    }
    level->whole = plan->scan != NULL &&
                   level->lines.n_lines <= UFG_ACCUMULATE_MAX_WHOLE_LINES &&
                   level->in_step == itemsize && level->out_step == itemsize;
    multiprocessors = !level->whole && plan->totals != NULL &&
                      level->lines.keep_ndim + 1 <= UFG_DEVICE_MAX_DIMS
                    ? ufg_runtime_multiprocessors(backend, device) : 0;
    if (multiprocessors <= 0) {
        return multiprocessors;
    }
    n_chunks = ufg_reduction_chunk_count(level->n, level->lines.n_lines,
                                         (int64_t)multiprocessors * UFG_REDUCE_THREADS_PER_SM,
                                         UFG_REDUCE_CHUNK);
    if (n_chunks > 1) {
        level->chunk_len = (level->n + n_chunks - 1) / n_chunks;
    }
    return 0;
}

/* The parameters of a launch over every line of the level and `segments` segments of n
 * elements on each (in_gap and out_gap bytes apart: one more kept dimension, innermost,
 * when more than one), the output's kept strides out_keep. */
static void
ufg_accumulate_params(const ufg_accumulate_level *level, const int64_t *out_keep, int64_t n,
                      int64_t segments, int64_t in_gap, int64_t out_gap, ufg_reduce_params *p)
{
    int k = level->lines.keep_ndim;

    memset(p, 0, sizeof(*p));
    memcpy(p->keep_shape, level->lines.keep_shape, sizeof(int64_t) * (size_t)k);
    memcpy(p->in_keep_strides, level->lines.in_keep, sizeof(int64_t) * (size_t)k);
    memcpy(p->out_keep_strides, out_keep, sizeof(int64_t) * (size_t)k);
    if (segments > 1) {
        p->keep_shape[k] = segments;
        p->in_keep_strides[k] = in_gap;
        p->out_keep_strides[k] = out_gap;
        k++;
    }
    p->keep_ndim = k;
    p->n_out = level->lines.n_lines * segments;
    p->reduce_ndim = 1;
    p->n_reduce = p->reduce_shape[0] = n;
    p->in_reduce_strides[0] = level->in_step;
    p->out_scan_stride = level->out_step;
    p->n_chunks = 1;
    p->chunk_len = n;
    p->block = UFG_DEVICE_BLOCK;
}

/* Queues a launch of `launcher` with these parameters, unless there is nothing to do. */
static int
ufg_accumulate_launch(const ufg_call *c, ufg_reduce_launcher launcher, ufg_reduce_params *p)
{
    ufg_launch launch = {NULL, NULL, NULL, NULL};

    if (p->n_out == 0 || p->n_reduce == 0) {
        return 0;
    }
    if (ufg_launch_grid(c->backend, c->device, p->n_out, &p->grid) < 0) {
        return -1;
    }
    launch.reduce = launcher;
    launch.reduce_params = p;
    return ufg_launch_run(c->backend, &launch, c->device, c->stream,
                          "an accumulate kernel launch");
}

/* The scan of `segments` segments of n elements on every line of the level, from `in` into
 * `out`; with a carry, each segment continues from the total at carry (carry_keep over the
 * lines, carry_gap bytes on from one segment to the next). */
static int
ufg_accumulate_scan(const ufg_call *c, const ufg_accumulate_plan *plan,
                    const ufg_accumulate_level *level, const char *in, char *out, int64_t n,
                    int64_t segments, const char *carry, const int64_t *carry_keep,
                    int64_t carry_gap)
{
    ufg_reduce_params p;
    const int k = level->lines.keep_ndim;

    ufg_accumulate_params(level, level->lines.out_keep, n, segments, n * level->in_step,
                          n * level->out_step, &p);
    p.in = in;
    p.out = out;
    if (carry != NULL) {
        p.carry = carry;
        memcpy(p.carry_keep_strides, carry_keep, sizeof(int64_t) * (size_t)k);
        p.carry_keep_strides[k] = carry_gap;        /* read only when segments > 1 */
    }
    return ufg_accumulate_launch(c, plan->launcher, &p);
}

static int ufg_accumulate_lines(ufg_call *c, const ufg_accumulate_plan *plan,
                                const ufg_accumulate_level *level, const char *in, char *out);

/* A split level: the totals of chunks 0 .. count - 1 into a temporary (the lines by count,
 * C-contiguous), scanned in place by a level of their own; then chunk 0 scanned as it is and
 * every later chunk, the rest too, from the total before it. */
static int
ufg_accumulate_chunks(ufg_call *c, const ufg_accumulate_plan *plan,
                      const ufg_accumulate_level *level, const char *in, char *out)
{
    const int64_t len = level->chunk_len, full = level->n / len, rest = level->n - full * len;
    const int64_t count = rest > 0 ? full : full - 1, itemsize = ufg_dtype_itemsize(plan->acc);
    const int k = level->lines.keep_ndim;
    int64_t shape[UFG_DEVICE_MAX_DIMS], strides[UFG_DEVICE_MAX_DIMS];
    ufg_accumulate_level totals_level = *level;
    ufg_DeviceArrayObject *totals;
    ufg_reduce_params p;
    char *last;

    memcpy(shape, level->lines.keep_shape, sizeof(int64_t) * (size_t)k);
    shape[k] = count;
    ufg_c_strides(k + 1, shape, itemsize, strides);
    totals = ufg_call_empty(c, k + 1, shape, plan->acc);
    if (totals == NULL) {
        return -1;
    }
    ufg_accumulate_params(level, strides, len, count, len * level->in_step, itemsize, &p);
    p.in = in;
    p.out = totals->ptr;
    p.start_from_first = 1;
    if (ufg_accumulate_launch(c, plan->totals, &p) < 0) {
        return -1;
    }

    memcpy(totals_level.lines.in_keep, strides, sizeof(int64_t) * (size_t)k);
    memcpy(totals_level.lines.out_keep, strides, sizeof(int64_t) * (size_t)k);
    totals_level.n = count;
    totals_level.in_step = totals_level.out_step = itemsize;
    if (ufg_accumulate_plan_cuts(c->backend, c->device, plan, &totals_level) < 0 ||
        ufg_accumulate_lines(c, plan, &totals_level, totals->ptr, totals->ptr) < 0) {
        return -1;
    }

    last = totals->ptr + (count - 1) * itemsize;
    return ufg_accumulate_scan(c, plan, level, in, out, len, 1, NULL, NULL, 0) < 0 ||
           ufg_accumulate_scan(c, plan, level, in + len * level->in_step,
                               out + len * level->out_step, len, full - 1, totals->ptr,
                               strides, itemsize) < 0 ||
           ufg_accumulate_scan(c, plan, level, in + full * len * level->in_step,
                               out + full * len * level->out_step, rest, 1, last, strides,
                               0) < 0 ? -1 : 0;
}

/* Each line of the level by the device-wide scan, a launch per line. */
static int
ufg_accumulate_whole_lines(const ufg_call *c, const ufg_accumulate_plan *plan,
                           const ufg_accumulate_level *level, const char *in, char *out)
{
    const ufg_reduction_lines *lines = &level->lines;

    for (int64_t m = 0; m < lines->n_lines; m++) {
        ufg_reduce_params p;

        ufg_accumulate_params(level, lines->out_keep, level->n, 1, 0, 0, &p);
        p.keep_ndim = 0;
        p.n_out = 1;
        p.in = in + ufg_unravel_offset(lines->keep_ndim, lines->keep_shape, lines->in_keep, m);
        p.out = out + ufg_unravel_offset(lines->keep_ndim, lines->keep_shape, lines->out_keep,
                                         m);
        if (ufg_accumulate_launch(c, plan->scan, &p) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The scan of every line of the level from `in` into `out`: whole, on a thread per line, or
 * in chunks. */
static int
ufg_accumulate_lines(ufg_call *c, const ufg_accumulate_plan *plan,
                     const ufg_accumulate_level *level, const char *in, char *out)
{
    if (level->whole) {
        return ufg_accumulate_whole_lines(c, plan, level, in, out);
    }
    if (level->chunk_len == 0) {
        return ufg_accumulate_scan(c, plan, level, in, out, level->n, 1, NULL, NULL, 0);
    }
    return ufg_accumulate_chunks(c, plan, level, in, out);
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
        ufg_accumulate_lines(c, plan, &plan->top, b.in->ptr, b.target->ptr) < 0) {
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
     * than element for element (a broadcast array accumulated into itself does: writing
     * one element changes those after it); it writes out= itself when out= has the
     * accumulator's dtype, else a new result that is cast into out= after. */
    plan.copy_input = array->code != plan.acc ||
                      (s.have_out && ufg_operands_overlap(array, out) &&
                       !(ufg_accumulate_same_elements(array, out) &&
                         !ufg_has_internal_overlap(array)));
    plan.direct = s.have_out && out->code == plan.acc;
    if (plan.copy_input) {
        ufg_data_copy_strides(array->ndim, array->shape, array->strides,
                              ufg_dtype_itemsize(plan.acc), in_strides);
    }
    if (!plan.direct) {
        ufg_c_strides(array->ndim, array->shape, ufg_dtype_itemsize(plan.acc), out_strides);
    }
    if (fn->flags & UFG_FN_ASSOCIATIVE) {
        plan.totals = fn->device_loops[plan.loop_index].reduce[s.backend->id];
        plan.scan = fn->device_loops[plan.loop_index].scan[s.backend->id];
    }
    if (ufg_accumulate_plan_lines(array, plan.copy_input ? in_strides : array->strides,
                                  plan.direct ? out->strides : out_strides, &plan) < 0 ||
        ufg_accumulate_plan_cuts(s.backend, array->device, &plan, &plan.top) < 0 ||
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
