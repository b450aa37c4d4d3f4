/*
 * The plan and the launch: results are allocated (stream-ordered), inputs the kernel cannot
 * read as they are (another dtype than the loop's, or memory an output overlaps other than
 * element for element) are copied (their data: a broadcast axis keeps one element, stride 0),
 * an out= of another dtype or with internal overlap gets a temporary that is cast back,
 * dimensions are collapsed, and the generated kernel runs.
 * Results are as if computed from copies of the inputs, as NumPy's are.
 */
#include "call.h"

#include <string.h>

#include "launch.h"
#include "runtime.h"

/* ------------------------------------------------------------------ shared pieces */

ufg_DeviceArrayObject *
ufg_call_empty(ufg_call *c, int ndim, const int64_t *shape, ufg_dtype_code code)
{
    ufg_DeviceArrayObject *array;

    if (c->nowned >= (int)(sizeof c->owned / sizeof c->owned[0])) {
        PyErr_SetString(PyExc_RuntimeError, "ufuncgen: too many temporaries in one call");
        return NULL;
    }
    array = ufg_device_array_empty(ndim, shape, ufg_call_descr(code), c->device, c->stream);
    if (array != NULL) {
        ufg_device_array_used_on(array, c->stream, c->stream_keeper);
        c->owned[c->nowned++] = (PyObject *)array;
    }
    return array;
}

void
ufg_loop_strides(const ufg_operand *op, int ncore, int ndim, int64_t *strides)
{
    const int own = op->ndim - ncore, pad = ndim - own;

    for (int d = 0; d < ndim; d++) {
        const int mine = d - pad;
        strides[d] = mine < 0 || op->shape[mine] == 1 ? 0 : op->strides[mine];
    }
}

/* [lo, hi): the bytes a buffer can touch. */
static void
ufg_extent(const ufg_operand *op, uintptr_t *lo, uintptr_t *hi)
{
    intptr_t low = 0, high = 0;

    for (int d = 0; d < op->ndim; d++) {
        if (op->shape[d] == 0) {
            *lo = *hi = (uintptr_t)op->ptr;
            return;
        }
        if (op->strides[d] < 0) {
            low += (op->shape[d] - 1) * op->strides[d];
        }
        else {
            high += (op->shape[d] - 1) * op->strides[d];
        }
    }
    *lo = (uintptr_t)op->ptr + low;
    *hi = (uintptr_t)op->ptr + high + ufg_dtype_itemsize(op->code);
}

int
ufg_operands_overlap(const ufg_operand *a, const ufg_operand *b)
{
    uintptr_t alo, ahi, blo, bhi;

    ufg_extent(a, &alo, &ahi);
    ufg_extent(b, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

int
ufg_call_cast(ufg_call *c, const ufg_operand *src, const ufg_operand *dst,
              const ufg_operand *mask)
{
    int64_t shape[UFG_CALL_MAX_NDIM], strides[3][UFG_CALL_MAX_NDIM];
    int ndim = dst->ndim;

    if (ufg_operand_size(dst) == 0) {
        return 0;
    }
    memcpy(shape, dst->shape, sizeof(int64_t) * (size_t)ndim);
    ufg_loop_strides(src, 0, ndim, strides[0]);
    memcpy(strides[1], dst->strides, sizeof(int64_t) * (size_t)ndim);
    if (mask == NULL) {
        return ufg_launch_cast(c->backend, c->device, c->stream, ndim, shape, src->ptr,
                               strides[0], src->code, dst->ptr, strides[1], dst->code, NULL,
                               NULL);
    }
    ufg_loop_strides(mask, 0, ndim, strides[2]);
    ndim = ufg_collapse_in_memory_order(ndim, shape, 3, strides);
    return ufg_launch_cast(c->backend, c->device, c->stream, ndim, shape, src->ptr,
                           strides[0], src->code, dst->ptr, strides[1], dst->code, mask->ptr,
                           strides[2]);
}

/* ------------------------------------------------------------------ copies of the data */

/* The shape of the elements a copy of the data holds: `shape`, one along each broadcast axis
 * (stride 0 over more than one element). */
static void
ufg_data_shape(int ndim, const int64_t *shape, const int64_t *strides, int64_t *data_shape)
{
    for (int d = 0; d < ndim; d++) {
        data_shape[d] = strides[d] == 0 && shape[d] > 1 ? 1 : shape[d];
    }
}

void
ufg_data_copy_strides(int ndim, const int64_t *shape, const int64_t *strides, int64_t itemsize,
                      int64_t *copy_strides)
{
    int64_t data_shape[UFG_CALL_MAX_NDIM] = {0};   /* zeroed: GCC cannot tell it is set */

    ufg_data_shape(ndim, shape, strides, data_shape);
    ufg_c_strides(ndim, data_shape, itemsize, copy_strides);
    for (int d = 0; d < ndim; d++) {
        if (data_shape[d] != shape[d]) {
            copy_strides[d] = 0;
        }
    }
}

int
ufg_call_copy_data(ufg_call *c, const ufg_operand *op, ufg_dtype_code code, ufg_operand *copy)
{
    ufg_operand data = *op;
    ufg_DeviceArrayObject *made;

    ufg_data_shape(op->ndim, op->shape, op->strides, data.shape);
    made = ufg_call_empty(c, op->ndim, data.shape, code);
    if (made == NULL) {
        return -1;
    }
    ufg_operand_from_array(made, copy);
    if (ufg_call_cast(c, &data, copy, NULL) < 0) {
        return -1;
    }
    for (int d = 0; d < op->ndim; d++) {
        if (copy->shape[d] != op->shape[d]) {   /* a broadcast axis: its one element again */
            copy->shape[d] = op->shape[d];
            copy->strides[d] = 0;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ outputs */

int
ufg_has_internal_overlap(const ufg_operand *op)
{
    int64_t extent = ufg_dtype_itemsize(op->code);
    int order[UFG_CALL_MAX_NDIM], n = 0;

    for (int d = 0; d < op->ndim; d++) {
        if (op->shape[d] == 0) {
            return 0;
        }
        if (op->shape[d] > 1) {
            order[n++] = d;
        }
    }
    for (int i = 1; i < n; i++) {           /* by |stride|, insertion sort: n is small */
        int d = order[i], j = i;
        while (j > 0 && llabs(op->strides[order[j - 1]]) > llabs(op->strides[d])) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = d;
    }
    for (int i = 0; i < n; i++) {
        const int64_t step = llabs(op->strides[order[i]]);
        if (step < extent) {
            return 1;
        }
        extent += step * (op->shape[order[i]] - 1);
    }
    return 0;
}

/* The kernel's view of a new caller-layout array: its axes out_axes[j], in kernel order. */
static void
ufg_kernel_view(ufg_call *c, int j, ufg_DeviceArrayObject *array, ufg_operand *view)
{
    ufg_operand_from_array(array, view);
    view->ndim = c->out_kernel_ndim[j];
    for (int i = 0; i < view->ndim; i++) {
        view->shape[i] = array->shape[c->out_axes[j][i]];
        view->strides[i] = array->strides[c->out_axes[j][i]];
    }
}

/* A new array's own allocation laid out with its axes in `inner_first` order, the first
 * contiguous: the same bytes as C order, other strides. */
static void
ufg_lay_out(ufg_DeviceArrayObject *array, const int *inner_first)
{
    int64_t step = ufg_dtype_itemsize(array->code);

    for (int i = 0; i < array->ndim; i++) {
        const int d = inner_first[i];
        array->strides[d] = step;
        step *= array->shape[d] > 0 ? array->shape[d] : 1;
    }
}

/* A new result laid out as NumPy lays out this call's: an elementwise one along NumPy's
 * nesting of the loop axes under order= (numpy_order.c), a gufunc's in C order, or Fortran
 * order with order='F'. */
static void
ufg_result_layout(const ufg_call *c, ufg_DeviceArrayObject *array)
{
    int inner_first[UFG_CALL_MAX_NDIM];

    if (array->ndim <= 1) {
        return;     /* one layout only */
    }
    if (c->fn->signature == NULL && array->ndim == c->loop_ndim) {
        ufg_numpy_result_axes(c, inner_first);
    }
    else if (c->fortran_results) {
        for (int d = 0; d < array->ndim; d++) {
            inner_first[d] = d;
        }
    }
    else {
        return;     /* C order already */
    }
    ufg_lay_out(array, inner_first);
}

/* targets[j]: what the kernel writes for output j; results[j]: what the caller gets;
 * cast_back[j]: set when targets[j] is a temporary to cast into the caller's out=. */
static int
ufg_plan_outputs(ufg_call *c, ufg_operand *targets, PyObject **results, int *cast_back)
{
    for (int j = 0; j < c->nout; j++) {
        const int k = c->nin + j;
        ufg_operand *out = &c->ops[k];
        ufg_DeviceArrayObject *array;
        cast_back[j] = 0;
        if (out->kind == UFG_OPERAND_BUFFER && out->code == c->loop_codes[k] &&
            !ufg_has_internal_overlap(out)) {
            targets[j] = *out;
            targets[j].owner = NULL;
            results[j] = out->obj;
            continue;
        }
        array = ufg_call_empty(c, c->out_ndim[j], c->out_shape[j], c->loop_codes[k]);
        if (array == NULL) {
            return -1;
        }
        /* A temporary to cast into out= too: laid out as the inputs are, the kernel writes
         * it in their memory order, and the cast reads it in out='s, one pass each. */
        ufg_result_layout(c, array);
        ufg_kernel_view(c, j, array, &targets[j]);
        results[j] = out->kind == UFG_OPERAND_BUFFER ? out->obj : (PyObject *)array;
        cast_back[j] = out->kind == UFG_OPERAND_BUFFER;
    }
    return 0;
}

/* ------------------------------------------------------------------ inputs */

/* A scalar's bytes in the loop's type.  Weak Python ints were packed by the type resolution,
 * Python floats take a direct conversion; everything else (and every error) goes through
 * NumPy, as np.asarray(x, dtype) would, except that any other Python number (a float or
 * complex for a loop of another kind under dtype= and casting='unsafe', a call's lone input,
 * an IntEnum) becomes the array NumPy makes of it first and is then cast, with the warnings
 * NumPy's ufunc gives (ComplexWarning, an invalid cast), where np.asarray(1j, float) would
 * refuse it.  (Where signature= fixes the type, NumPy's own conversion was checked first:
 * ufg_numpy_converts_scalars.) */
static int
ufg_scalar_bytes(ufg_call *c, int k, unsigned char *bytes)
{
    const ufg_operand *op = &c->ops[k];
    const ufg_dtype_code code = c->loop_codes[k];
    PyArrayObject *array;
    char what[160];

    memset(bytes, 0, UFG_MAX_ITEMSIZE);
    if (op->weak == 'i') {
        memcpy(bytes, c->int_values[k].bytes, sizeof c->int_values[k].bytes);
        return 0;
    }
    if (PyFloat_CheckExact(op->obj) && (code == UFG_DT_FLOAT64 || code == UFG_DT_FLOAT32)) {
        const double value = PyFloat_AS_DOUBLE(op->obj);
        if (code == UFG_DT_FLOAT64) {
            memcpy(bytes, &value, sizeof value);
        }
        else {
            const float narrow = (float)value;
            memcpy(bytes, &narrow, sizeof narrow);
        }
        return 0;
    }
    if (PyLong_Check(op->obj) || PyFloat_Check(op->obj) || PyComplex_Check(op->obj)) {
        PyArrayObject *own = (PyArrayObject *)PyArray_FromAny(op->obj, NULL, 0, 0, 0, NULL);
        array = own == NULL ? NULL : (PyArrayObject *)PyArray_CastToType(
                                         own, (PyArray_Descr *)Py_NewRef(ufg_call_descr(code)), 0);
        Py_XDECREF(own);
    }
    else {
        array = (PyArrayObject *)PyArray_FromAny(op->obj, (PyArray_Descr *)Py_NewRef(
                                                     ufg_call_descr(code)), 0, 0, 0, NULL);
    }
    if (array == NULL) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            ufg_prefix_error(ufg_call_what(c, k, what, sizeof what));
        }
        return -1;
    }
    memcpy(bytes, PyArray_DATA(array), (size_t)ufg_dtype_itemsize(code));
    Py_DECREF(array);
    return 0;
}

/* Whether input element i is output element i for every i (out=x): safe in place. */
static int
ufg_same_elements(const ufg_call *c, const ufg_operand *in, const ufg_operand *target)
{
    int64_t a[UFG_CALL_MAX_NDIM], b[UFG_CALL_MAX_NDIM];

    if (in->ptr != target->ptr || ufg_dtype_itemsize(in->code) != ufg_dtype_itemsize(target->code)) {
        return 0;
    }
    ufg_loop_strides(in, 0, c->loop_ndim, a);
    ufg_loop_strides(target, 0, c->loop_ndim, b);
    return memcmp(a, b, sizeof(int64_t) * (size_t)c->loop_ndim) == 0;
}

/* A copy of `op` (cast to `code`, ufg_call_copy_data), replacing it. */
static int
ufg_copy_operand(ufg_call *c, ufg_operand *op, ufg_dtype_code code)
{
    ufg_operand copy;

    if (ufg_call_copy_data(c, op, code, &copy) < 0) {
        return -1;
    }
    *op = copy;
    return 0;
}

/* Inputs as the kernel reads them: cast to the loop's dtype, or copied when an output
 * overlaps them other than element for element. */
static int
ufg_plan_inputs(ufg_call *c, ufg_operand *inputs, const ufg_operand *targets)
{
    const int elementwise = c->fn->signature == NULL;

    for (int k = 0; k < c->nin; k++) {
        ufg_operand *op = &inputs[k];
        int copy = 0;
        *op = c->ops[k];
        op->owner = NULL;
        if (op->kind != UFG_OPERAND_BUFFER) {
            continue;
        }
        copy = op->code != c->loop_codes[k];
        for (int j = 0; !copy && j < c->nout; j++) {
            copy = ufg_operands_overlap(op, &targets[j]) &&
                   !(elementwise && ufg_same_elements(c, op, &targets[j]));
        }
        if (copy && ufg_copy_operand(c, op, c->loop_codes[k]) < 0) {
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ launch */

int
ufg_call_missing_launcher(const ufg_backend *backend, const char *name, int loop_index)
{
    if (backend->id == UFG_BACKEND_CUDA) {
        PyErr_Format(ufg_DeviceError,
                     "ufuncgen: this module was built without CUDA kernels (no nvcc, or "
                     "UFUNCGEN_CUDA=OFF), so %s cannot run on a CUDA device; rebuild it with "
                     "nvcc, or set UFUNCGEN_DEVICE=sim to run its kernels on the host", name);
    }
    else {
        PyErr_Format(ufg_DeviceError, "ufuncgen: %s has no %s kernel for loop %d", name,
                     backend->name, loop_index);
    }
    return -1;
}

/* Fills one kernel argument: by value, or a pointer with its loop and core strides. */
static int
ufg_kernel_argument(ufg_call *c, int k, const ufg_operand *op, ufg_kernel_params *p,
                    int64_t (*strides)[UFG_CALL_MAX_NDIM], int *ncore_strides)
{
    const int ncore = k < c->nargs ? ufg_core_ndims(c, k) : 0;

    if (op->kind == UFG_OPERAND_SCALAR) {
        p->by_value |= 1u << k;
        memset(strides[k], 0, sizeof(int64_t) * (size_t)c->loop_ndim);
        return ufg_scalar_bytes(c, k, p->values[k].bytes);
    }
    p->data[k] = op->ptr;
    ufg_loop_strides(op, ncore, c->loop_ndim, strides[k]);
    for (int d = op->ndim - ncore; d < op->ndim; d++) {
        if (*ncore_strides >= UFG_DEVICE_MAX_CORE_STRIDES) {
            PyErr_Format(PyExc_ValueError, "%s: more than %d core strides", c->fn->name,
                         UFG_DEVICE_MAX_CORE_STRIDES);
            return -1;
        }
        p->core_strides[(*ncore_strides)++] = op->strides[d];
    }
    return 0;
}

static int
ufg_launch_kernel(ufg_call *c, const ufg_operand *inputs, const ufg_operand *targets,
                  const ufg_operand *mask)
{
    int64_t shape[UFG_CALL_MAX_NDIM], strides[UFG_DEVICE_MAX_ARGS][UFG_CALL_MAX_NDIM];
    ufg_launch launch = {NULL, NULL, NULL, NULL};
    ufg_kernel_params p;
    int ncore_strides = 0, nops = c->nargs + (mask != NULL), ndim;

    launch.elementwise = c->fn->device_loops[c->loop_index].elementwise[c->backend->id];
    if (launch.elementwise == NULL) {
        return ufg_call_missing_launcher(c->backend, c->fn->name, c->loop_index);
    }
    p.n = 1;
    for (int d = 0; d < c->loop_ndim; d++) {
        p.n *= c->loop_shape[d];
    }
    if (p.n == 0) {
        return 0;           /* zero-size work launches nothing */
    }
    p.by_value = 0;
    memset(p.values, 0, sizeof p.values);
    for (int k = 0; k < c->nargs; k++) {
        if (ufg_kernel_argument(c, k, k < c->nin ? &inputs[k] : &targets[k - c->nin], &p,
                                strides, &ncore_strides) < 0) {
            return -1;
        }
    }
    if (mask != NULL) {
        p.data[c->nargs] = mask->ptr;
        ufg_loop_strides(mask, 0, c->loop_ndim, strides[c->nargs]);
    }
    memcpy(shape, c->loop_shape, sizeof(int64_t) * (size_t)c->loop_ndim);
    ndim = ufg_collapse_in_memory_order(c->loop_ndim, shape, nops, strides);
    if (ndim > UFG_DEVICE_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "the device kernels handle at most %d dimensions after "
                     "merging contiguous ones; this call has %d", UFG_DEVICE_MAX_DIMS, ndim);
        return -1;
    }
    p.ndim = ndim;
    p.nargs = nops;
    p.has_where = mask != NULL;
    p.contiguous = ndim <= 1;
    p.block = UFG_DEVICE_BLOCK;
    memcpy(p.shape, shape, sizeof(int64_t) * (size_t)ndim);
    for (int k = 0; k < nops; k++) {
        memcpy(p.strides[k], strides[k], sizeof(int64_t) * (size_t)ndim);
    }
    for (int d = 0; d < UFG_DEVICE_MAX_CORE_DIMS; d++) {
        p.core_sizes[d] = d < c->fn->ncore_dims ? c->core_sizes[d] : 0;
    }
    if (ufg_launch_grid(c->backend, c->device, p.n, &p.grid) < 0) {
        return -1;
    }
    launch.kernel_params = &p;
    return ufg_launch_run(c->backend, &launch, c->device, c->stream,
                          "an elementwise kernel launch");
}

/* ------------------------------------------------------------------ the run */

static PyObject *
ufg_results(ufg_call *c, PyObject *const *results)
{
    PyObject *anchor = NULL, *tuple;

    for (int k = 0; k < c->nin && anchor == NULL; k++) {
        if (c->ops[k].kind == UFG_OPERAND_BUFFER) {
            anchor = c->ops[k].obj;
        }
    }
    if (c->nout == 1) {
        return c->ops[c->nin].kind == UFG_OPERAND_BUFFER || anchor == NULL
            ? Py_NewRef(results[0]) : ufg_wrap_like(anchor, results[0]);
    }
    tuple = PyTuple_New(c->nout);
    for (int j = 0; tuple != NULL && j < c->nout; j++) {
        PyObject *item = c->ops[c->nin + j].kind == UFG_OPERAND_BUFFER || anchor == NULL
            ? Py_NewRef(results[j]) : ufg_wrap_like(anchor, results[j]);
        if (item == NULL) {
            Py_CLEAR(tuple);
            break;
        }
        PyTuple_SET_ITEM(tuple, j, item);
    }
    return tuple;
}

/* ------------------------------------------------------------------ copying back */

/* Narrows a buffer in dst's layout to element `index` of axis d. */
static void
ufg_narrow(ufg_operand *op, int d, int64_t index)
{
    op->ptr += index * op->strides[d];
    op->shape[d] = 1;
}

/* The mask as a buffer in dst's layout (its loop strides), so that it narrows with dst. */
static void
ufg_mask_like(const ufg_operand *mask, const ufg_operand *dst, ufg_operand *view)
{
    *view = *mask;
    view->ndim = dst->ndim;
    memcpy(view->shape, dst->shape, sizeof(int64_t) * (size_t)dst->ndim);
    ufg_loop_strides(mask, 0, dst->ndim, view->strides);
}

/* Copies visit `step` (0 <= step < product of the shared axes' sizes, in NumPy's order: the
 * last axis of `order` fastest) of the temporary into the caller's out=. */
static int
ufg_copy_back_visit(ufg_call *c, const ufg_shared_order *order, int64_t step,
                    ufg_operand src, ufg_operand dst, const ufg_operand *mask)
{
    ufg_operand m;

    if (mask != NULL) {
        ufg_mask_like(mask, &dst, &m);
    }
    for (int i = order->naxes - 1; i >= 0; i--) {
        const int d = order->axes[i];
        const int64_t n = dst.shape[d], visited = step % n;
        const int64_t index = order->backwards[i] ? n - 1 - visited : visited;
        step /= n;
        ufg_narrow(&src, d, index);
        ufg_narrow(&dst, d, index);
        if (mask != NULL) {
            ufg_narrow(&m, d, index);
        }
    }
    return ufg_call_cast(c, &src, &dst, mask != NULL ? &m : NULL);
}

/*
 * Casts out= j's temporary (in kernel layout, of the same shape) into the caller's out=.  Where
 * out= elements share memory, NumPy leaves in each address the element its loop wrote last
 * (numpy_order.c), so only that one is copied: one write per address, and no race between GPU
 * threads.  With where= that element depends on the mask, so the elements sharing an address
 * are copied one launch each in NumPy's order, each launch writing every address once.
 */
static int
ufg_copy_back(ufg_call *c, int j, const ufg_operand *temp, const ufg_operand *mask)
{
    const ufg_operand *dst = &c->ops[c->nin + j];
    ufg_shared_order order;
    int64_t visits = 1;

    if (ufg_numpy_shared_order(c, j, &order) < 0) {
        return -1;
    }
    if (order.naxes == 0) {
        return ufg_call_cast(c, temp, dst, mask);
    }
    for (int i = 0; i < order.naxes; i++) {
        visits *= dst->shape[order.axes[i]];
    }
    if (mask == NULL || order.through_copy) {
        return ufg_copy_back_visit(c, &order, visits - 1, *temp, *dst, mask);
    }
    for (int64_t step = 0; step < visits; step++) {
        if (ufg_copy_back_visit(c, &order, step, *temp, *dst, mask) < 0) {
            return -1;
        }
    }
    return 0;
}

PyObject *
ufg_call_run(ufg_call *c)
{
    ufg_operand targets[UFG_CALL_MAX_OPERANDS], inputs[UFG_CALL_MAX_OPERANDS], mask;
    PyObject *results[UFG_CALL_MAX_OPERANDS];
    int cast_back[UFG_CALL_MAX_OPERANDS];
    const ufg_operand *mask_used = NULL;

    if (ufg_plan_outputs(c, targets, results, cast_back) < 0) {
        return NULL;
    }
    if (c->where_kind == UFG_WHERE_NONE) {
        return ufg_results(c, results);
    }
    if (ufg_plan_inputs(c, inputs, targets) < 0) {
        return NULL;
    }
    if (c->where_kind == UFG_WHERE_MASK) {
        mask = c->mask;
        mask.owner = NULL;
        for (int j = 0; j < c->nout; j++) {
            if (ufg_operands_overlap(&mask, &targets[j])) {
                if (ufg_copy_operand(c, &mask, mask.code) < 0) {
                    return NULL;
                }
                break;
            }
        }
        mask_used = &mask;
    }
    if (ufg_launch_kernel(c, inputs, targets, mask_used) < 0) {
        return NULL;
    }
    for (int j = 0; j < c->nout; j++) {
        if (cast_back[j] && ufg_copy_back(c, j, &targets[j], mask_used) < 0) {
            return NULL;
        }
    }
    return ufg_results(c, results);
}
