/*
 * `function.reduceat(array, indices, axis=0, dtype=None, out=None, stream=None)` with a CUDA
 * array: NumPy's reduction of segments of one axis.  Result s along the axis is
 * reduce(array[indices[s]:indices[s + 1]]) (to the axis' end for the last index), or
 * array[indices[s]] when indices[s + 1] is not above indices[s].
 *
 * `indices` are host integers, converted and checked as NumPy does (a bad index is an
 * IndexError, and nothing runs); they are copied to the device for the kernel, since there
 * are few and NumPy needs them on the host to check them.  The call is checked whole first,
 * then the array is cast to the accumulator's dtype (or copied, when out= overlaps it), the
 * generated reduceat kernel reduces each (line, segment) on one thread in NumPy's order, so
 * results are NumPy's bit for bit, and the result is cast into an out= of another dtype.
 * Everything is queued on the call's stream.
 */
#include "reduction.h"

#include <string.h>

#include "dtypes.h"
#include "launch.h"
#include "runtime.h"

/* The arguments: five positional-or-keyword, then stream= by keyword only. */
enum {
    UFG_RA_ARRAY, UFG_RA_INDICES, UFG_RA_AXIS, UFG_RA_DTYPE, UFG_RA_OUT, UFG_RA_STREAM,
    UFG_RA_COUNT
};
#define UFG_RA_POSITIONAL 5
_Static_assert(UFG_RA_COUNT <= UFG_REDUCTION_MAX_ARGS, "a session holds every argument");

static const char *const ufg_reduceat_names[UFG_RA_COUNT] = {
    "array", "indices", "axis", "dtype", "out", "stream"};

/* What one reduceat does, decided before anything runs. */
typedef struct {
    int axis;
    int loop_index;
    ufg_dtype_code acc;
    ufg_reduce_launcher launcher;
    int copy_input;                 /* cast (or copy) the array's data into a temporary
                                     * (ufg_call_copy_data) */
    int direct;                     /* the kernel writes out= itself */
    ufg_reduction_lines lines;
    int64_t n, in_step, out_step;   /* the axis: its length, its input and output strides */
    int64_t n_segments;
    const int64_t *segments;        /* the checked indices (host memory of `indices`) */
    int result_ndim;
    int64_t result_shape[UFG_CALL_MAX_NDIM];
} ufg_reduceat_plan;

/* axis= (reduction.h), then NumPy's two refusals: a 0-d array, and any count of axes but
 * one. */
static int
ufg_reduceat_axis(const char *prefix, PyObject *axis, int ndim, int *result)
{
    int axes[UFG_CALL_MAX_NDIM];
    Py_ssize_t count;

    if (ndim == 0) {
        PyErr_Format(PyExc_TypeError, "%s: cannot reduceat on a scalar", prefix);
        return -1;
    }
    if (ufg_reduction_axes(prefix, axis, ndim, axes, &count) < 0) {
        return -1;
    }
    if (count != 1) {
        PyErr_Format(PyExc_ValueError, "%s: reduceat does not allow multiple axes", prefix);
        return -1;
    }
    *result = axes[0];
    return 0;
}

/* indices as NumPy takes them: one dimension of intp, any integer sequence converted (a new
 * reference in *indices), every index in [0, n). */
static int
ufg_reduceat_indices(const char *prefix, PyObject *obj, int64_t n, PyArrayObject **indices)
{
    const int64_t *values;
    npy_intp count;
    int is_device;

    if (obj == NULL) {
        PyErr_Format(PyExc_TypeError, "%s: missing required argument 'indices' (pos 2)",
                     prefix);
        return -1;
    }
    /* NumPy's conversion would reach the array's own refusal of __array__, which does not say
     * which argument it was. */
    if ((is_device = ufg_is_device_object(obj)) != 0) {
        PyObject *type_name = is_device > 0 ? ufg_type_name(obj) : NULL;
        if (type_name != NULL) {
            PyErr_Format(PyExc_TypeError, "%s: indices are a CUDA array (%S); reduceat takes "
                         "host indices (an integer sequence or NumPy array), which are checked "
                         "on the host before anything runs, as NumPy takes them",
                         prefix, type_name);
            Py_DECREF(type_name);
        }
        return -1;
    }
    *indices = (PyArrayObject *)PyArray_FromAny(obj, PyArray_DescrFromType(NPY_INT64), 1, 1,
                                                NPY_ARRAY_CARRAY, NULL);
    if (*indices == NULL) {
        return -1;
    }
    values = (const int64_t *)PyArray_DATA(*indices);
    count = PyArray_SIZE(*indices);
    for (npy_intp s = 0; s < count; s++) {
        if (values[s] < 0 || values[s] >= n) {
            PyErr_Format(PyExc_IndexError, "%s: index %lld out-of-bounds [0, %lld) along the "
                         "axis", prefix, (long long)values[s], (long long)n);
            Py_CLEAR(*indices);
            return -1;
        }
    }
    return 0;
}

/* The launch: every segment of every line. */
static int
ufg_reduceat_launch(const ufg_call *c, const ufg_reduceat_plan *plan, const char *in,
                    char *out, const int64_t *segments)
{
    ufg_launch launch = {NULL, NULL, NULL, NULL};
    ufg_reduce_params p;
    const int k = plan->lines.keep_ndim;

    memset(&p, 0, sizeof(p));
    memcpy(p.keep_shape, plan->lines.keep_shape, sizeof(int64_t) * (size_t)k);
    memcpy(p.in_keep_strides, plan->lines.in_keep, sizeof(int64_t) * (size_t)k);
    memcpy(p.out_keep_strides, plan->lines.out_keep, sizeof(int64_t) * (size_t)k);
    p.keep_ndim = k;
    p.n_out = plan->lines.n_lines;
    p.reduce_ndim = 1;
    p.n_reduce = p.reduce_shape[0] = plan->n;
    p.in_reduce_strides[0] = plan->in_step;
    p.out_scan_stride = plan->out_step;
    p.segments = segments;
    p.n_segments = plan->n_segments;
    p.n_chunks = 1;
    p.chunk_len = plan->n;
    p.block = UFG_DEVICE_BLOCK;
    p.in = in;
    p.out = out;
    if (ufg_launch_grid(c->backend, c->device, p.n_out * p.n_segments, &p.grid) < 0) {
        return -1;
    }
    launch.reduce = plan->launcher;
    launch.reduce_params = &p;
    return ufg_launch_run(c->backend, &launch, c->device, c->stream,
                          "a reduceat kernel launch");
}

/* The segments' starts in device memory, owned by the call: copied from the host, which the
 * copy has read by the time it returns. */
static const int64_t *
ufg_reduceat_device_segments(ufg_call *c, const ufg_reduceat_plan *plan)
{
    ufg_DeviceArrayObject *segments = ufg_call_empty(c, 1, &plan->n_segments, UFG_DT_INT64);
    int error;

    if (segments == NULL) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    error = c->backend->memcpy(segments->ptr, plan->segments,
                               sizeof(int64_t) * (size_t)plan->n_segments,
                               UFG_MEMCPY_HOST_TO_DEVICE, c->device, (void *)c->stream);
    Py_END_ALLOW_THREADS
    if (error) {
        ufg_device_error_int(c->backend, error, "copying reduceat's indices to the device");
        return NULL;
    }
    return (const int64_t *)segments->ptr;
}

/* Runs the plan: the input copy, the segments, the kernel, the cast into out=.  A new
 * reference to the result, or NULL. */
static PyObject *
ufg_reduceat_run(ufg_call *c, const ufg_reduceat_plan *plan, PyObject *array_obj,
                 const ufg_operand *array, PyObject *out_obj, const ufg_operand *out)
{
    ufg_reduction_buffers b;
    const int64_t *segments;

    if (ufg_reduction_buffers_new(c, array, out_obj != NULL ? out : NULL, plan->acc,
                                  plan->copy_input, plan->direct, plan->result_ndim,
                                  plan->result_shape, &b) < 0) {
        return NULL;
    }
    if (plan->n_segments > 0 && plan->lines.n_lines > 0) {
        segments = ufg_reduceat_device_segments(c, plan);
        if (segments == NULL ||
            ufg_reduceat_launch(c, plan, b.in->ptr, b.target->ptr, segments) < 0) {
            return NULL;
        }
    }
    return ufg_reduction_buffers_finish(c, &b, array_obj, out_obj, out);
}

/* ------------------------------------------------------------------ the entry point */

PyObject *
ufg_device_reduceat(PyObject *function, const ufg_function_descriptor *fn, PyObject *ufunc,
                    PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ufg_reduction_session s;
    ufg_reduceat_plan plan;
    PyArrayObject *indices = NULL;
    const ufg_operand *array = &s.array, *out = &s.out;
    int64_t in_strides[UFG_CALL_MAX_NDIM], out_strides[UFG_CALL_MAX_NDIM];
    PyObject *result = NULL;

    (void)function;
    memset(&plan, 0, sizeof(plan));
    if (ufg_reduction_begin(&s, fn, ufunc, UFG_REDUCTION_REDUCEAT, ufg_reduceat_names,
                            UFG_RA_COUNT, UFG_RA_POSITIONAL, "indices, axis, dtype, out, stream",
                            args, nargs, kwnames) < 0) {
        return ufg_reduction_end(&s, NULL);
    }

    /* In NumPy's order: the axis, the indices, then dtype=, out= and the types. */
    if (ufg_reduceat_axis(s.prefix, s.values[UFG_RA_AXIS], array->ndim, &plan.axis) < 0 ||
        ufg_reduceat_indices(s.prefix, s.values[UFG_RA_INDICES], array->shape[plan.axis],
                             &indices) < 0 ||
        ufg_dtype_keyword(s.prefix, s.values[UFG_RA_DTYPE], &s.dtype) < 0) {
        goto done;
    }
    plan.n_segments = PyArray_SIZE(indices);
    plan.segments = (const int64_t *)PyArray_DATA(indices);
    plan.result_ndim = array->ndim;
    memcpy(plan.result_shape, array->shape, sizeof(int64_t) * (size_t)array->ndim);
    plan.result_shape[plan.axis] = plan.n_segments;
    if (ufg_reduction_take_out(&s, s.values[UFG_RA_OUT], plan.result_ndim,
                               plan.result_shape) < 0 ||
        ufg_reduction_pick_loop(&s) < 0) {
        goto done;
    }
    plan.loop_index = s.loop_index;
    plan.acc = s.acc;
    plan.launcher = s.launcher;

    /* The kernel reads the array itself unless it must be cast or out= overlaps it (a
     * segment reads elements that other segments' results may overwrite), and writes out=
     * itself when out= has the accumulator's dtype. */
    plan.copy_input = array->code != plan.acc || (s.have_out && ufg_operands_overlap(array, out));
    plan.direct = s.have_out && out->code == plan.acc;
    if (plan.copy_input) {
        ufg_data_copy_strides(array->ndim, array->shape, array->strides,
                              ufg_dtype_itemsize(plan.acc), in_strides);
    }
    if (!plan.direct) {
        ufg_c_strides(plan.result_ndim, plan.result_shape, ufg_dtype_itemsize(plan.acc),
                      out_strides);
    }
    if (ufg_reduction_plan_lines(array->ndim, array->shape, plan.axis,
                                 plan.copy_input ? in_strides : array->strides,
                                 plan.direct ? out->strides : out_strides, &plan.lines) < 0 ||
        (plan.copy_input &&
         ufg_reduction_check_cast(array->ndim, array->shape, array->strides, in_strides) < 0) ||
        (s.have_out && !plan.direct &&
         ufg_reduction_check_cast(plan.result_ndim, plan.result_shape, out_strides,
                                  out->strides) < 0)) {
        goto done;
    }
    plan.n = array->shape[plan.axis];
    plan.in_step = (plan.copy_input ? in_strides : array->strides)[plan.axis];
    plan.out_step = (plan.direct ? out->strides : out_strides)[plan.axis];

    /* Everything is checked: from here on the call runs. */
    if (ufg_reduction_open_call(&s) == 0) {
        result = ufg_reduceat_run(s.c, &plan, s.values[UFG_RA_ARRAY], array, s.out_obj, out);
    }

done:
    Py_XDECREF(indices);
    return ufg_reduction_end(&s, result);
}
