/*
 * `function.at(a, indices, b)` on the host, without NumPy's per-index loop calls.
 *
 * NumPy's ufunc.at calls a legacy loop once per index, at about 20 ns an update, where its
 * own np.add.at runs an indexed loop at 2 ns.  The generated module gives each loop whose first
 * input is its output's type an indexed loop of its own (descriptor.h: ufg_host_at_loop), and
 * the calls NumPy would make in the simplest way come here:
 *   - a: an exact ndarray, aligned, writeable, native byte order;
 *   - indices: one index array for a 1-D a, or a tuple of one per axis of a: exact 1-D
 *     ndarrays of one length, of a signed integer type (or an unsigned one narrower than
 *     intp), converted to intp first when not intp already; for an N-D a, each update's byte
 *     offset is computed first, and the loop steps one byte per index; or one index array
 *     (alone, or in a tuple with full slices after it) into an a of two or more dimensions,
 *     naming rows (ufg_at_rows_call);
 *   - b (a binary function only): a 0-d or 1-D exact ndarray of len(indices) or 1 elements, a
 *     NumPy scalar, or a Python float, int, complex or bool (which NumPy's .at types as
 *     np.asarray does: float64, intp, complex128, bool);
 *   - a list, as an index or as b, as the array np.asarray makes of it (NumPy converts a
 *     list so in both places), if that array is of a form above;
 *   - no keyword, and no memory shared by a with indices or b (NumPy copies an overlapping b);
 *   - the loop NumPy resolves for (a's dtype, b's dtype) -- asked of ufunc.resolve_dtypes once
 *     per pair of types and kept -- has one type as first input and output: a's, or a wider
 *     one of the same kind that its indexed loop converts each element to and back, inline,
 *     as NumPy's casts do (ufg_at_loop_reads, ufuncgen/host_at_convert.h: a float32 a with a
 *     Python float or int runs the float64 loop in NumPy too); and it reads
 *     b as it is or safely cast (once, before the updates, as NumPy's .at casts b: a Python
 *     int into a float64 a is one float64).
 * Anything else goes to NumPy's ufunc.at, which then answers, refuses or raises as it does.
 * Here as there: every index is checked before any update, axis after axis (IndexError
 * naming the first bad one, the array untouched), the updates are made in order, one at a
 * time, through the loop's scalar body (so repeated indices accumulate and the floating-point
 * flags are NumPy's), the GIL released, and the flags raised are reported under np.errstate
 * as NumPy reports them.
 */
#include "numpy_api.h"

#include "host_at.h"

#include <fenv.h>
#include <stdatomic.h>
#include <string.h>

#include "ufuncgen/descriptor.h"

/* The type-pair cache: one entry per (a's type, b's type), both NumPy builtin type numbers. */
#define UFG_AT_TYPES NPY_NTYPES_LEGACY
#define UFG_AT_UNKNOWN 0                /* not asked yet */
#define UFG_AT_DECLINED (-1)            /* NumPy's path: no loop of ours runs it as it is */
#define UFG_AT_FAILED (-2)              /* an exception is set (no memory) */

static atomic_llong ufg_host_at_calls;     /* calls that ran an indexed loop: for tests */

/* b as the loop reads it: its first element, the step between its elements, its type. */
typedef struct {
    const char *data;
    npy_intp step;
    int type_num;
    PyArrayObject *array;               /* b's ndarray, for the overlap test; NULL for a value */
    union {                             /* a scalar b's value, stored as an element */
        npy_double d;
        npy_intp i;
        npy_bool b;
        npy_cdouble c;
        char bytes[64];                 /* any NumPy scalar's (np.clongdouble: 32) */
    } value;
} ufg_at_second;

/* An exact ndarray that the fast path can read (or, with `write`, update) in place. */
static int
ufg_at_plain_array(PyObject *obj, int write)
{
    if (!PyArray_CheckExact(obj)) {
        return 0;
    }
    PyArrayObject *array = (PyArrayObject *)obj;
    return PyArray_ISALIGNED(array) && PyArray_ISNBO(PyArray_DESCR(array)->byteorder) &&
           PyArray_DESCR(array)->type_num < UFG_AT_TYPES &&
           (!write || PyArray_ISWRITEABLE(array));
}

/* b, when it is one of the forms the fast path takes for n updates; 0 otherwise. */
static int
ufg_at_take_second(PyObject *obj, npy_intp n, ufg_at_second *b)
{
    memset(b, 0, sizeof(*b));
    if (PyArray_CheckExact(obj)) {
        PyArrayObject *array = (PyArrayObject *)obj;
        const int ndim = PyArray_NDIM(array);
        if (!ufg_at_plain_array(obj, 0) || ndim > 1 ||
            (ndim == 1 && PyArray_DIM(array, 0) != n && PyArray_DIM(array, 0) != 1)) {
            return 0;
        }
        b->data = PyArray_BYTES(array);
        b->step = ndim == 1 && PyArray_DIM(array, 0) == n ? PyArray_STRIDE(array, 0) : 0;
        b->type_num = PyArray_DESCR(array)->type_num;
        b->array = array;
        return 1;
    }
    b->data = b->value.bytes;
    if (PyFloat_CheckExact(obj)) {
        b->value.d = PyFloat_AS_DOUBLE(obj);
        b->type_num = NPY_DOUBLE;
        return 1;
    }
    if (PyBool_Check(obj)) {
        b->value.b = obj == Py_True;
        b->type_num = NPY_BOOL;
        return 1;
    }
    if (PyLong_CheckExact(obj)) {
        int overflow;
        const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred()) || v < NPY_MIN_INTP || v > NPY_MAX_INTP) {
            PyErr_Clear();
            return 0;               /* NumPy's answer, whatever it is, for an int this big */
        }
        b->value.i = (npy_intp)v;
        b->type_num = NPY_INTP;
        return 1;
    }
    if (PyComplex_CheckExact(obj)) {
        const Py_complex v = PyComplex_AsCComplex(obj);
        npy_csetreal(&b->value.c, v.real);
        npy_csetimag(&b->value.c, v.imag);
        b->type_num = NPY_CDOUBLE;
        return 1;
    }
    if (PyArray_IsScalar(obj, Generic)) {
        PyArray_Descr *descr = PyArray_DescrFromScalar(obj);
        if (descr == NULL) {
            PyErr_Clear();
            return 0;
        }
        const int type_num = descr->type_num;
        const int fits = type_num < UFG_AT_TYPES && !PyDataType_REFCHK(descr) &&
                         PyDataType_ELSIZE(descr) <= (npy_intp)sizeof(b->value.bytes) &&
                         PyArray_ISNBO(descr->byteorder);
        Py_DECREF(descr);
        if (!fits) {
            return 0;
        }
        PyArray_ScalarAsCtype(obj, b->value.bytes);
        b->type_num = type_num;
        return 1;
    }
    return 0;
}

/* [*lo, *hi): the bytes of a non-empty array's elements, whatever its strides. */
static void
ufg_at_extent(PyArrayObject *array, char **lo, char **hi)
{
    npy_intp lowest = 0, highest = 0;

    for (int d = 0; d < PyArray_NDIM(array); d++) {
        const npy_intp reach = (PyArray_DIM(array, d) - 1) * PyArray_STRIDE(array, d);
        lowest += reach < 0 ? reach : 0;
        highest += reach > 0 ? reach : 0;
    }
    *lo = PyArray_BYTES(array) + lowest;
    *hi = PyArray_BYTES(array) + highest + PyArray_ITEMSIZE(array);
}

/* Whether two arrays' elements may share a byte (then NumPy's path). */
static int
ufg_at_may_overlap(PyArrayObject *x, PyArrayObject *y)
{
    char *x_lo, *x_hi, *y_lo, *y_hi;

    if (x == NULL || y == NULL || PyArray_SIZE(x) == 0 || PyArray_SIZE(y) == 0) {
        return 0;
    }
    ufg_at_extent(x, &x_lo, &x_hi);
    ufg_at_extent(y, &y_lo, &y_hi);
    return x_lo < y_hi && y_lo < x_hi;
}

/* Whether `loop` updates an a of `a_type`: its own type, or a narrower one whose elements it
 * converts to its type and back as NumPy's .at does (ufuncgen/host_at_convert.h; which ones:
 * gen/element_types.py, at_widened_from).  Asked of the loop itself, with no update, so that
 * the generated code alone says which pairs it converts. */
static int
ufg_at_loop_reads(ufg_host_at_loop loop, int a_type)
{
    return loop != NULL && loop(a_type, NULL, 0, 0, NULL, 0, NULL, 0, 0) == 0;
}

/* The loop NumPy resolves for (a_type, b_type) when it is one of ours that reads both as they
 * are and writes a's type; else UFG_AT_DECLINED, or UFG_AT_FAILED.  Asked of
 * ufunc.resolve_dtypes, which resolves as .at does; an error there is NumPy's to raise, from
 * its own .at. */
static int
ufg_at_resolve(PyUFuncObject *ufunc, const ufg_function_descriptor *fn, int a_type, int b_type)
{
    const int nargs = fn->nin + fn->nout;
    int resolved[3];
    PyObject *dtypes, *result;

    dtypes = fn->nin == 2
        ? Py_BuildValue("(NNO)", PyArray_DescrFromType(a_type), PyArray_DescrFromType(b_type),
                        Py_None)
        : Py_BuildValue("(NO)", PyArray_DescrFromType(a_type), Py_None);
    if (dtypes == NULL) {
        return UFG_AT_FAILED;
    }
    result = PyObject_CallMethod((PyObject *)ufunc, "resolve_dtypes", "(O)", dtypes);
    Py_DECREF(dtypes);
    if (result == NULL) {
        PyErr_Clear();
        return UFG_AT_DECLINED;
    }
    for (int k = 0; k < nargs; k++) {
        PyArray_Descr *descr = (PyArray_Descr *)PyTuple_GET_ITEM(result, k);
        resolved[k] = PyArray_ISNBO(descr->byteorder) ? descr->type_num : -1;
    }
    Py_DECREF(result);
    if (resolved[nargs - 1] != resolved[0] ||
        (fn->nin == 2 && resolved[1] != b_type &&
         (resolved[1] < 0 || !PyArray_CanCastSafely(b_type, resolved[1])))) {
        return UFG_AT_DECLINED;
    }
    for (int i = 0; i < fn->ntypes; i++) {
        const char *types = fn->types + (size_t)i * (size_t)nargs;
        int same = 1;
        for (int k = 0; k < nargs; k++) {
            same &= types[k] == resolved[k];
        }
        if (same) {
            return ufg_at_loop_reads(fn->host_at_loops[i], a_type) ? i : UFG_AT_DECLINED;
        }
    }
    return UFG_AT_DECLINED;
}

/* The loop for this pair of types, from the function's cache (made on its first .at), or as
 * ufg_at_resolve answers. */
static int
ufg_at_loop(ufg_host_at_cache *cache, PyUFuncObject *ufunc, const ufg_function_descriptor *fn,
            int a_type, int b_type)
{
    if (*cache == NULL) {
        *cache = PyMem_Calloc(UFG_AT_TYPES * UFG_AT_TYPES, sizeof(**cache));
        if (*cache == NULL) {
            PyErr_NoMemory();
            return UFG_AT_FAILED;
        }
    }
    short *entry = &(*cache)[a_type * UFG_AT_TYPES + b_type];
    if (*entry == UFG_AT_UNKNOWN) {
        const int loop = ufg_at_resolve(ufunc, fn, a_type, b_type);
        if (loop == UFG_AT_FAILED) {
            return UFG_AT_FAILED;
        }
        *entry = (short)(loop == UFG_AT_DECLINED ? UFG_AT_DECLINED : loop + 1);
    }
    return *entry == UFG_AT_DECLINED ? UFG_AT_DECLINED : *entry - 1;
}

/* Whether every one of n (> 0) contiguous indices lies in -length..length-1: one pass, which
 * GCC vectorizes (with AVX2's 64-bit compares where the CPU has them), before any update. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
static int
ufg_at_contiguous_in_bounds(const npy_intp *index, npy_intp n, npy_intp length)
{
    npy_intp lowest = index[0], highest = index[0];

    for (npy_intp i = 1; i < n; i++) {
        lowest = index[i] < lowest ? index[i] : lowest;
        highest = index[i] > highest ? index[i] : highest;
    }
    return lowest >= -length && highest < length;
}

/* 0 when every index lies in -length..length-1; else IndexError naming the first that does
 * not, in NumPy's words for `axis`. */
static int
ufg_at_check_indices(const char *index, npy_intp step, npy_intp n, npy_intp length, int axis)
{
    if (n == 0 || (step == (npy_intp)sizeof(npy_intp) &&
                   ufg_at_contiguous_in_bounds((const npy_intp *)index, n, length))) {
        return 0;
    }
    for (npy_intp i = 0; i < n; i++) {
        const npy_intp k = *(const npy_intp *)(index + i * step);
        if (k < -length || k >= length) {
            PyErr_Format(PyExc_IndexError, "index %zd is out of bounds for axis %d with size %zd",
                         (Py_ssize_t)k, axis, (Py_ssize_t)length);
            return -1;
        }
    }
    return 0;
}

/* The floating-point flags the updates raised, reported as NumPy reports a ufunc's, under the
 * function's name, as np.add.at's own indexed loop does ("overflow encountered in add";
 * NumPy's loop-per-index .at says "in at"). */
static int
ufg_at_report_flags(const char *name)
{
    const int raised = fetestexcept(FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID);
    const int errors = ((raised & FE_DIVBYZERO) ? NPY_FPE_DIVIDEBYZERO : 0) |
                       ((raised & FE_OVERFLOW) ? NPY_FPE_OVERFLOW : 0) |
                       ((raised & FE_UNDERFLOW) ? NPY_FPE_UNDERFLOW : 0) |
                       ((raised & FE_INVALID) ? NPY_FPE_INVALID : 0);

    feclearexcept(FE_ALL_EXCEPT);
    return errors == 0 ? 0 : PyUFunc_GiveFloatingpointErrors(name, errors);
}

/* Whether `obj` is an index array the fast path takes: an exact 1-D ndarray of a signed
 * integer type, or of an unsigned one narrower than intp (each converts to intp safely, as
 * NumPy converts them to index). */
static int
ufg_at_index_array(PyObject *obj)
{
    if (!PyArray_CheckExact(obj) || PyArray_NDIM((PyArrayObject *)obj) != 1) {
        return 0;
    }
    const PyArray_Descr *descr = PyArray_DESCR((PyArrayObject *)obj);
    return PyDataType_ISSIGNED(descr) ||
           (PyDataType_ISUNSIGNED(descr) && PyDataType_ELSIZE(descr) < (npy_intp)sizeof(npy_intp));
}

/* The arrays a call converts: the lists among its operands, as NumPy converts them, and b
 * cast to the type its loop reads. */
typedef struct {
    PyObject *arrays[NPY_MAXDIMS + 2];  /* an index per axis, b, b cast */
    int count;
} ufg_at_conversions;

/* `obj`, or the array a list converts to as np.asarray converts it (which NumPy does with a
 * list given as an index or as b), kept in `made`; NULL, with no exception, where the
 * conversion fails: NumPy's path then raises what it raises. */
static PyObject *
ufg_at_listed(PyObject *obj, ufg_at_conversions *made)
{
    if (!PyList_CheckExact(obj)) {
        return obj;
    }
    PyObject *array = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL);
    if (array == NULL) {
        PyErr_Clear();
        return NULL;
    }
    made->arrays[made->count++] = array;
    return array;
}

static void
ufg_at_release(ufg_at_conversions *made)
{
    for (int i = 0; i < made->count; i++) {
        Py_DECREF(made->arrays[i]);
    }
}

/* The index arrays of a call the fast path takes, one per axis of a, borrowed (or kept in
 * `made`, for lists): `indices` itself for a 1-D a, or the items of a tuple of a.ndim of
 * them, all of one length (*n).  0 for any other index, which NumPy's path takes (scalars,
 * slices, masks, broadcasting). */
static int
ufg_at_index_arrays(PyArrayObject *a, PyObject *indices, PyObject **arrays, npy_intp *n,
                    ufg_at_conversions *made)
{
    const int ndim = PyArray_NDIM(a);

    if (PyTuple_CheckExact(indices) && PyTuple_GET_SIZE(indices) == ndim) {
        for (int d = 0; d < ndim; d++) {
            arrays[d] = PyTuple_GET_ITEM(indices, d);
        }
    }
    else if (!PyTuple_CheckExact(indices) && ndim == 1) {
        arrays[0] = indices;
    }
    else {
        return 0;
    }
    for (int d = 0; d < ndim; d++) {
        arrays[d] = ufg_at_listed(arrays[d], made);
        if (arrays[d] == NULL || !ufg_at_index_array(arrays[d]) ||
            PyArray_DIM((PyArrayObject *)arrays[d], 0) !=
                PyArray_DIM((PyArrayObject *)arrays[0], 0)) {
            return 0;
        }
    }
    *n = ndim == 0 ? 0 : PyArray_DIM((PyArrayObject *)arrays[0], 0);
    return ndim > 0;
}

/* Where the updates go: the element of index k is at base + k * step, for k in 0..length-1
 * (a negative k counting from length). */
typedef struct {
    char *base;
    npy_intp step, length;
} ufg_at_target;

/* A 1-D a's indices as intp (a copy when they are of another type, unaligned or byte-swapped),
 * every one checked; NULL with IndexError. */
static PyArrayObject *
ufg_at_axis_indices(PyObject *array, npy_intp length, int axis)
{
    PyArrayObject *indices = (PyArrayObject *)PyArray_FromAny(
        array, PyArray_DescrFromType(NPY_INTP), 1, 1, NPY_ARRAY_ALIGNED, NULL);
    npy_intp n, step;
    char *first;

    if (indices == NULL) {
        return NULL;
    }
    /* NumPy casts an index array of another type in memory order, and names the first bad
     * index it meets there: for a reversed one, the last.  Checked in that order too. */
    n = PyArray_DIM(indices, 0);
    step = PyArray_STRIDE(indices, 0);
    first = PyArray_BYTES(indices);
    if ((PyObject *)indices != array && PyArray_Check(array) &&
        PyArray_STRIDE((PyArrayObject *)array, 0) < 0 && n > 0) {
        first += (n - 1) * step;
        step = -step;
    }
    if (ufg_at_check_indices(first, step, n, length, axis) < 0) {
        Py_CLEAR(indices);
    }
    return indices;
}

/* For an N-D a: each update's byte offset from the lowest byte of a's elements, from one
 * index array per axis, checked axis after axis as NumPy checks them (the first bad index of
 * the first axis that has one); *target then takes those offsets (step 1, length the bytes
 * a's elements span).  A new intp array, or NULL with an exception. */
static PyArrayObject *
ufg_at_offsets(PyArrayObject *a, PyObject *const *arrays, npy_intp n, ufg_at_target *target)
{
    const int ndim = PyArray_NDIM(a);
    PyArrayObject *axes[NPY_MAXDIMS] = {NULL}, *offsets = NULL;
    int checked = 0;

    while (checked < ndim &&
           (axes[checked] = ufg_at_axis_indices(arrays[checked], PyArray_DIM(a, checked),
                                                checked)) != NULL) {
        checked++;
    }
    if (checked == ndim && (offsets = (PyArrayObject *)PyArray_SimpleNew(1, &n, NPY_INTP))) {
        char *lo, *hi;
        npy_intp *offset = (npy_intp *)PyArray_DATA(offsets);
        ufg_at_extent(a, &lo, &hi);     /* every index is in range: a has elements, or n is 0 */
        for (npy_intp i = 0; i < n; i++) {
            offset[i] = PyArray_BYTES(a) - lo;
        }
        for (int d = 0; d < ndim; d++) {
            const char *index = PyArray_BYTES(axes[d]);
            const npy_intp step = PyArray_STRIDE(axes[d], 0), dim = PyArray_DIM(a, d);
            const npy_intp stride = PyArray_STRIDE(a, d);
            for (npy_intp i = 0; i < n; i++) {
                const npy_intp k = *(const npy_intp *)(index + i * step);
                offset[i] += (k < 0 ? k + dim : k) * stride;
            }
        }
        target->base = lo;
        target->step = 1;
        target->length = hi - lo;
    }
    for (int d = 0; d < checked; d++) {
        Py_DECREF(axes[d]);
    }
    return offsets;
}

/* The element (or row) of `target` that the i-th index names; NULL where it lies outside,
 * changed by another thread since it was checked (not ours to write), as in the loops. */
static inline char *
ufg_at_indexed(const ufg_at_target *target, const char *index, npy_intp index_step, npy_intp i)
{
    npy_intp k = *(const npy_intp *)(index + i * index_step);
    k = k < 0 ? k + target->length : k;
    return (npy_uintp)k < (npy_uintp)target->length ? target->base + k * target->step : NULL;
}

/* The updates, every index checked first, the GIL released. */
static int
ufg_at_run(const ufg_function_descriptor *fn, PyUFuncObject *ufunc, int loop, PyArrayObject *a,
           PyObject *const *arrays, npy_intp n, const ufg_at_second *b)
{
    ufg_at_target target = {PyArray_BYTES(a), 0, 0};
    const int a_type = PyArray_DESCR(a)->type_num;
    PyArrayObject *indices;

    if (PyArray_NDIM(a) == 1) {
        target.step = PyArray_STRIDE(a, 0);
        target.length = PyArray_DIM(a, 0);
        indices = ufg_at_axis_indices(arrays[0], target.length, 0);
    }
    else {
        indices = ufg_at_offsets(a, arrays, n, &target);
    }
    if (indices == NULL) {
        return UFG_HOST_AT_ERROR;
    }
    feclearexcept(FE_ALL_EXCEPT);
    Py_BEGIN_ALLOW_THREADS
    fn->host_at_loops[loop](a_type, target.base, target.step, target.length,
                            PyArray_BYTES(indices), PyArray_STRIDE(indices, 0), b->data, b->step,
                            n);
    Py_END_ALLOW_THREADS
    Py_DECREF(indices);
    atomic_fetch_add(&ufg_host_at_calls, 1);
    return ufg_at_report_flags(ufunc->name) < 0 ? UFG_HOST_AT_ERROR : UFG_HOST_AT_DONE;
}

/* b's array cast to `type_num`, the type its loop reads: a safe cast (ufg_at_resolve), which
 * NumPy's .at makes of b too, so the values are the same; kept in `made`.  NULL, with no
 * exception (NumPy's path then answers), where it fails. */
static PyArrayObject *
ufg_at_cast_array(PyArrayObject *array, int type_num, ufg_at_conversions *made)
{
    PyObject *cast = PyArray_CastToType(array, PyArray_DescrFromType(type_num), 0);
    if (cast == NULL) {
        PyErr_Clear();
        return NULL;
    }
    made->arrays[made->count++] = cast;
    return (PyArrayObject *)cast;
}

/* b cast to `type_num` when it is of another type (ufg_at_cast_array; a scalar b as a 0-d
 * array first).  0, or -1 (no exception) where it fails. */
static int
ufg_at_cast_second(int type_num, ufg_at_second *b, ufg_at_conversions *made)
{
    PyObject *value = NULL;
    PyArrayObject *cast;

    if (b->type_num == type_num) {
        return 0;
    }
    if (b->array == NULL) {
        value = PyArray_SimpleNewFromData(0, NULL, b->type_num, b->value.bytes);
        if (value == NULL) {
            PyErr_Clear();
            return -1;
        }
    }
    cast = ufg_at_cast_array(value != NULL ? (PyArrayObject *)value : b->array, type_num, made);
    Py_XDECREF(value);
    if (cast == NULL) {
        return -1;
    }
    b->array = cast;
    b->data = PyArray_BYTES(b->array);
    b->step = b->step != 0 ? PyArray_ITEMSIZE(b->array) : 0;    /* C-contiguous now */
    b->type_num = type_num;
    return 0;
}

/*
 * Rows: an a of two or more dimensions indexed along its first axis alone (`indices` one index
 * array, ufg_at_names_rows), so that each index names a row of a.shape[1:] elements, as in a
 * scatter-add of gradient rows into an embedding (`add.at(weights, ids, rows)`).  NumPy's .at
 * then calls the loop once per element of each row in turn; ufg_at_run_rows runs the indexed
 * loop over each row's elements in turn (the scalar body, so NumPy's bits and flags, a NaN's
 * payload included, which a vector kernel's operand order may change), the loop converting
 * a's elements where it computes in a wider type, as for one-dimensional updates.  Taken
 * where a's row and b's row (b broadcast to (n,) + a.shape[1:]) are each walked with one step.
 */

/* Whether dimensions (shape, strides) can be walked as one, with a single *step (0 where no
 * dimension has more than one element). */
static int
ufg_at_flat_step(int ndim, const npy_intp *shape, const npy_intp *strides, npy_intp *step)
{
    int inner = -1;     /* the last dimension of more than one element seen */

    *step = 0;
    for (int d = ndim - 1; d >= 0; d--) {
        if (shape[d] == 1) {
            continue;
        }
        if (inner >= 0 && strides[d] != strides[inner] * shape[inner]) {
            return 0;
        }
        if (inner < 0) {
            *step = strides[d];
        }
        inner = d;
    }
    return 1;
}

/* b's strides broadcast to n rows of a.shape[1:] (a.ndim of them, 0 where b repeats); 0 where
 * b does not broadcast so (NumPy's path then raises its error). */
static int
ufg_at_broadcast_rows(PyArrayObject *b, PyArrayObject *a, npy_intp n, npy_intp *strides)
{
    const int ndim = PyArray_NDIM(a), offset = ndim - PyArray_NDIM(b);

    if (offset < 0) {
        return 0;
    }
    for (int d = 0; d < ndim; d++) {
        const npy_intp want = d == 0 ? n : PyArray_DIM(a, d);
        const npy_intp have = d >= offset ? PyArray_DIM(b, d - offset) : 1;
        if (have != want && have != 1) {
            return 0;
        }
        strides[d] = have == want && want != 1 ? PyArray_STRIDE(b, d - offset) : 0;
    }
    return 1;
}

/* b as an ndarray: an exact one as it is, anything else (a scalar, a list) as np.asarray
 * makes it, kept in `made`.  NULL, with no exception, where the fast path does not take it. */
static PyArrayObject *
ufg_at_rows_second(PyObject *obj, ufg_at_conversions *made)
{
    if (!PyArray_CheckExact(obj)) {
        if (PyArray_Check(obj) || (obj = PyArray_FromAny(obj, NULL, 0, 0, 0, NULL)) == NULL) {
            PyErr_Clear();
            return NULL;
        }
        made->arrays[made->count++] = obj;
    }
    return ufg_at_plain_array(obj, 0) ? (PyArrayObject *)obj : NULL;
}

/* A row's elements are updated a part of up to UFG_AT_ROW_PART at a time, each part's
 * indices 0, 1, ... within it. */
#define UFG_AT_ROW_PART 4096

/* The row updates, in order: for each index, the row it names updated element by element
 * (`within`: 0, 1, ... min(m, UFG_AT_ROW_PART) - 1), with b's i-th row. */
static void
ufg_at_run_rows(ufg_host_at_loop loop, int a_type, const ufg_at_target *rows,
                npy_intp a_step, const npy_intp *within, const char *index, npy_intp index_step,
                const char *b, npy_intp b_row_step, npy_intp b_step, npy_intp n, npy_intp m)
{
    for (npy_intp i = 0; i < n; i++) {
        char *row = ufg_at_indexed(rows, index, index_step, i);
        if (row == NULL) {
            continue;
        }
        for (npy_intp j = 0; j < m; j += UFG_AT_ROW_PART) {
            const npy_intp count = m - j < UFG_AT_ROW_PART ? m - j : UFG_AT_ROW_PART;
            const char *b_part = b != NULL ? b + i * b_row_step + j * b_step : NULL;
            loop(a_type, row + j * a_step, a_step, count, (const char *)within,
                 sizeof(npy_intp), b_part, b_step, count);
        }
    }
}

/* Whether `indices` names rows of an a of `ndim` (>= 2) dimensions: something other than a
 * tuple (an index array, a list), or a tuple of it followed by nothing but full slices (`:`)
 * or one `...`, which select the whole of each row as well. */
static int
ufg_at_names_rows(PyObject *indices, int ndim)
{
    if (!PyTuple_CheckExact(indices)) {
        return 1;
    }
    const Py_ssize_t count = PyTuple_GET_SIZE(indices);
    if (count < 1 || count > ndim) {
        return 0;
    }
    for (Py_ssize_t i = 1; i < count; i++) {
        PyObject *item = PyTuple_GET_ITEM(indices, i);
        const int whole = PySlice_Check(item) && ((PySliceObject *)item)->start == Py_None &&
                          ((PySliceObject *)item)->stop == Py_None &&
                          ((PySliceObject *)item)->step == Py_None;
        if (!whole && !(item == Py_Ellipsis && i == count - 1)) {
            return 0;
        }
    }
    return 1;
}

static int
ufg_at_rows_call(PyUFuncObject *ufunc, const ufg_function_descriptor *fn,
                 ufg_host_at_cache *cache, PyObject *const *args, ufg_at_conversions *made)
{
    PyArrayObject *a = (PyArrayObject *)args[0], *b = NULL, *indices;
    const int ndim = PyArray_NDIM(a), nargs = fn->nin + fn->nout;
    PyObject *index = PyTuple_CheckExact(args[1]) ? PyTuple_GET_ITEM(args[1], 0) : args[1];
    npy_intp a_step, b_strides[NPY_MAXDIMS] = {0}, b_step = 0, m = 1, n;
    int loop;

    index = ufg_at_listed(index, made);
    if (index == NULL || !ufg_at_index_array(index) ||
        !ufg_at_flat_step(ndim - 1, PyArray_DIMS(a) + 1, PyArray_STRIDES(a) + 1, &a_step)) {
        return UFG_HOST_AT_DECLINED;
    }
    for (int d = 1; d < ndim; d++) {
        m *= PyArray_DIM(a, d);
    }
    n = PyArray_DIM((PyArrayObject *)index, 0);
    if (fn->nin == 2 && (b = ufg_at_rows_second(args[2], made)) == NULL) {
        return UFG_HOST_AT_DECLINED;
    }
    if (m == 0 || ufg_at_may_overlap(a, (PyArrayObject *)index) || ufg_at_may_overlap(a, b) ||
        (made->count > 0 && !PyArray_ISWRITEABLE(a))) {
        return UFG_HOST_AT_DECLINED;
    }
    loop = ufg_at_loop(cache, ufunc, fn, PyArray_DESCR(a)->type_num,
                       b != NULL ? PyArray_DESCR(b)->type_num : 0);
    if (loop < 0) {
        return loop == UFG_AT_DECLINED ? UFG_HOST_AT_DECLINED : UFG_HOST_AT_ERROR;
    }
    const char *types = fn->types + (size_t)loop * (size_t)nargs;
    if (b != NULL && PyArray_DESCR(b)->type_num != types[1] &&
        (b = ufg_at_cast_array(b, types[1], made)) == NULL) {
        return UFG_HOST_AT_DECLINED;
    }
    if (b != NULL && (!ufg_at_broadcast_rows(b, a, n, b_strides) ||
                      !ufg_at_flat_step(ndim - 1, PyArray_DIMS(a) + 1, b_strides + 1, &b_step))) {
        return UFG_HOST_AT_DECLINED;
    }
    const npy_intp parts = m < UFG_AT_ROW_PART ? m : UFG_AT_ROW_PART;
    npy_intp *within = PyMem_Malloc((size_t)parts * sizeof(npy_intp));
    if (within == NULL) {
        PyErr_NoMemory();
        return UFG_HOST_AT_ERROR;
    }
    if ((indices = ufg_at_axis_indices(index, PyArray_DIM(a, 0), 0)) == NULL) {
        PyMem_Free(within);
        return UFG_HOST_AT_ERROR;
    }
    for (npy_intp j = 0; j < parts; j++) {
        within[j] = j;
    }
    const ufg_at_target rows = {PyArray_BYTES(a), PyArray_STRIDE(a, 0), PyArray_DIM(a, 0)};
    feclearexcept(FE_ALL_EXCEPT);
    Py_BEGIN_ALLOW_THREADS
    ufg_at_run_rows(fn->host_at_loops[loop], PyArray_DESCR(a)->type_num, &rows, a_step,
                    within, PyArray_BYTES(indices), PyArray_STRIDE(indices, 0),
                    b != NULL ? PyArray_BYTES(b) : NULL, b_strides[0], b_step, n, m);
    Py_END_ALLOW_THREADS
    PyMem_Free(within);
    Py_DECREF(indices);
    atomic_fetch_add(&ufg_host_at_calls, 1);
    return ufg_at_report_flags(ufunc->name) < 0 ? UFG_HOST_AT_ERROR : UFG_HOST_AT_DONE;
}

/* A call whose a is a plain, writeable ndarray of a function with indexed loops. */
static int
ufg_at_plain_call(PyUFuncObject *ufunc, const ufg_function_descriptor *fn,
                  ufg_host_at_cache *cache, PyObject *const *args, ufg_at_conversions *made)
{
    PyArrayObject *a = (PyArrayObject *)args[0];
    PyObject *arrays[NPY_MAXDIMS];
    ufg_at_second b;
    npy_intp n;
    int loop;

    if (PyArray_NDIM(a) >= 2 && ufg_at_names_rows(args[1], PyArray_NDIM(a))) {
        return ufg_at_rows_call(ufunc, fn, cache, args, made);
    }
    if (!ufg_at_index_arrays(a, args[1], arrays, &n, made)) {
        return UFG_HOST_AT_DECLINED;
    }
    if (fn->nin == 2) {
        PyObject *second = ufg_at_listed(args[2], made);
        if (second == NULL || !ufg_at_take_second(second, n, &b)) {
            return UFG_HOST_AT_DECLINED;
        }
    }
    else {
        memset(&b, 0, sizeof(b));     /* type 0 in the cache's key: a unary loop reads no b */
    }
    /* A list's items may run Python code as they are converted (__array__, __int__), and
     * that code may have made a read-only. */
    if (ufg_at_may_overlap(a, b.array) || (made->count > 0 && !PyArray_ISWRITEABLE(a))) {
        return UFG_HOST_AT_DECLINED;
    }
    for (int d = 0; d < PyArray_NDIM(a); d++) {
        if (ufg_at_may_overlap(a, (PyArrayObject *)arrays[d])) {
            return UFG_HOST_AT_DECLINED;
        }
    }
    loop = ufg_at_loop(cache, ufunc, fn, PyArray_DESCR(a)->type_num, b.type_num);
    if (loop < 0) {
        return loop == UFG_AT_DECLINED ? UFG_HOST_AT_DECLINED : UFG_HOST_AT_ERROR;
    }
    if (fn->nin == 2 &&
        ufg_at_cast_second(fn->types[(size_t)loop * (size_t)(fn->nin + fn->nout) + 1], &b,
                           made) < 0) {
        return UFG_HOST_AT_DECLINED;
    }
    return ufg_at_run(fn, ufunc, loop, a, arrays, n, &b);
}

int
ufg_host_at(PyObject *ufunc_obj, const ufg_function_descriptor *fn, ufg_host_at_cache *cache,
            PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyUFuncObject *ufunc = (PyUFuncObject *)ufunc_obj;
    ufg_at_conversions made = {.count = 0};

    if (ufunc->core_enabled || ufunc->nout != 1 || (ufunc->nin != 1 && ufunc->nin != 2) ||
        nargs != 1 + ufunc->nin || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0)) {
        return UFG_HOST_AT_DECLINED;    /* NumPy's refusal, whatever a is */
    }
    if (PyArray_Check(args[0]) && !PyArray_ISWRITEABLE((PyArrayObject *)args[0])) {
        /* NumPy's .at (2.4) writes into it, with or without an indexed loop of ours. */
        PyErr_Format(PyExc_ValueError, "%s.at: argument 'a' must be a writeable array, got a "
                     "read-only one", ufunc->name);
        return UFG_HOST_AT_ERROR;
    }
    if (fn == NULL || fn->host_at_loops == NULL || ufunc->functions != fn->loops ||
        ufunc->ntypes != fn->ntypes || !ufg_at_plain_array(args[0], 1)) {
        return UFG_HOST_AT_DECLINED;
    }
    const int result = ufg_at_plain_call(ufunc, fn, cache, args, &made);
    ufg_at_release(&made);
    return result;
}

/* ------------------------------------------------------------------ for tests */

static PyObject *
ufg_host_at_stats(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    return PyLong_FromLongLong(atomic_load(&ufg_host_at_calls));
}

static PyMethodDef ufg_host_at_methods[] = {
    {"_host_at_calls", ufg_host_at_stats, METH_NOARGS,
     "_host_at_calls()\n--\n\nHow many .at calls ran their generated indexed loop, for tests."},
    {NULL, NULL, 0, NULL},
};

int
ufg_host_at_register(PyObject *module)
{
    return PyModule_AddFunctions(module, ufg_host_at_methods);
}
