/*
 * Type resolution: the loop NumPy would pick for these operands.  It depends only on the
 * operands' dtypes (a Python int or float counts as its kind, NEP 50), dtype= and casting=,
 * so a successful answer is remembered in a small table keyed by exactly that; NumPy
 * (ufunc.resolve_dtypes) is asked only on a miss, and its refusals are never cached, so
 * their text is always NumPy's own.
 */
#include "call.h"
#include "dtypes.h"

#include <string.h>

/* Key bytes: an operand's code, or one of these. */
enum {
    UFG_KEY_WEAK_INT = 0x40,
    UFG_KEY_WEAK_FLOAT = 0x41,
    UFG_KEY_WEAK_COMPLEX = 0x42,
    UFG_KEY_ABSENT = 0xFF,
};

#define UFG_RESOLVE_KEY_SIZE (UFG_CALL_MAX_OPERANDS + 2)
#define UFG_RESOLVE_SLOTS 256

typedef struct {
    const ufg_function_descriptor *fn;
    unsigned char key[UFG_RESOLVE_KEY_SIZE];
    int loop_index;
    unsigned char codes[UFG_CALL_MAX_OPERANDS];
} ufg_resolution;

static ufg_resolution ufg_resolutions[UFG_RESOLVE_SLOTS];

PyArray_Descr *
ufg_call_descr(ufg_dtype_code code)
{
    static PyArray_Descr *descrs[UFG_DT_COUNT];

    if (descrs[code] == NULL) {
        descrs[code] = ufg_dtype_descr(code);       /* kept for the process */
    }
    return descrs[code];
}

int
ufg_dtype_keyword_code(const PyArray_Descr *dtype)
{
    /* Recognised without building every code's descriptor: bfloat16's imports ml_dtypes.
     * Only in the spelling of the loops' own type: dtype= names a DType, which NumPy matches
     * exactly, so 'q' finds no loop typed 'l' although both are int64 here. */
    const int code = dtype != NULL ? ufg_dtype_code_of_supported(dtype) : -1;
    const PyArray_Descr *own;

    if (code < 0) {
        return -1;
    }
    if ((own = ufg_call_descr((ufg_dtype_code)code)) == NULL) {
        PyErr_Clear();              /* NumPy decides, and says what is wrong */
        return -1;
    }
    return own->type_num == dtype->type_num ? code : -1;
}

/* dtype= as a key byte: a supported code, or UFG_KEY_ABSENT with *other set for anything
 * else NumPy may still understand (it then decides, uncached). */
static void
ufg_dtype_key(const ufg_call *c, unsigned char *byte, int *other)
{
    const int code = ufg_dtype_keyword_code(c->dtype);

    *byte = code >= 0 ? (unsigned char)code : UFG_KEY_ABSENT;
    /* signature= fixes types in too many spellings to key: asked of NumPy each time. */
    *other = (c->dtype != NULL && code < 0) || c->signature != NULL;
}

static unsigned
ufg_key_hash(const ufg_function_descriptor *fn, const unsigned char *key)
{
    uint64_t h = (uint64_t)(uintptr_t)fn * 0x9E3779B97F4A7C15ull;

    for (int i = 0; i < UFG_RESOLVE_KEY_SIZE; i++) {
        h = (h ^ key[i]) * 0x100000001B3ull;
    }
    return (unsigned)(h >> 40) % UFG_RESOLVE_SLOTS;
}

/* Whether operand k is the Python int past int64 that is a call's one input: NumPy types a
 * lone scalar input as np.asarray does (operands.c), this one as uint64 or object, so such a
 * call finds no loop (lucas(2**70, out=...)).  Of two or more scalar inputs, ints stay weak:
 * add(2**70, 2.5) is a float64 sum, add(2**63, 1) an OverflowError. */
static int
ufg_is_big_int_among_scalars(const ufg_call *c, int k)
{
    int overflow = 0;

    if (c->ops[k].weak != 'i' || k >= c->nin || c->nin != 1) {
        return 0;
    }
    (void)PyLong_AsLongLongAndOverflow(c->ops[k].obj, &overflow);
    return overflow != 0;
}

static PyObject *
ufg_resolution_dtypes(ufg_call *c)
{
    PyObject *dtypes = PyTuple_New(c->nargs);

    for (int k = 0; dtypes != NULL && k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        PyObject *item;
        if (op->kind == UFG_OPERAND_ABSENT) {
            item = Py_None;
        }
        else if (ufg_is_big_int_among_scalars(c, k)) {
            PyArrayObject *array = (PyArrayObject *)PyArray_FromAny(op->obj, NULL, 0, 0, 0,
                                                                    NULL);
            if (array == NULL) {
                Py_DECREF(dtypes);
                return NULL;
            }
            PyTuple_SET_ITEM(dtypes, k, Py_NewRef((PyObject *)PyArray_DESCR(array)));
            Py_DECREF(array);
            continue;
        }
        else if (op->weak) {
            item = (PyObject *)(op->weak == 'i' ? &PyLong_Type
                                : op->weak == 'f' ? &PyFloat_Type : &PyComplex_Type);
        }
        else {
            item = (PyObject *)ufg_call_descr(op->code);
        }
        PyTuple_SET_ITEM(dtypes, k, Py_NewRef(item));
    }
    return dtypes;
}

static const char *
ufg_casting_name(NPY_CASTING casting)
{
    switch (casting) {
    case NPY_NO_CASTING: return "no";
    case NPY_EQUIV_CASTING: return "equiv";
    case NPY_SAFE_CASTING: return "safe";
    case NPY_SAME_KIND_CASTING: return "same_kind";
    default: return "unsafe";
    }
}

/* ufunc.resolve_dtypes(dtypes, casting=..., signature=(None,)*nin + (dtype,)*nout), or the
 * caller's signature= as given. */
static PyObject *
ufg_ask_numpy(ufg_call *c, NPY_CASTING casting)
{
    PyObject *dtypes = ufg_resolution_dtypes(c), *kwargs = NULL, *method = NULL;
    PyObject *args = NULL, *signature = NULL, *resolved = NULL;

    if (dtypes == NULL || (kwargs = Py_BuildValue("{s:s}", "casting",
                                                  ufg_casting_name(casting))) == NULL) {
        goto done;
    }
    if (c->signature != NULL &&
        PyDict_SetItemString(kwargs, "signature", c->signature) < 0) {
        goto done;
    }
    if (c->dtype != NULL) {
        signature = PyTuple_New(c->nargs);
        for (int k = 0; signature != NULL && k < c->nargs; k++) {
            PyTuple_SET_ITEM(signature, k,
                             Py_NewRef(k < c->nin ? Py_None : (PyObject *)c->dtype));
        }
        if (signature == NULL || PyDict_SetItemString(kwargs, "signature", signature) < 0) {
            goto done;
        }
    }
    method = PyObject_GetAttrString(c->ufunc, "resolve_dtypes");
    args = method == NULL ? NULL : PyTuple_Pack(1, dtypes);
    if (args != NULL) {
        resolved = PyObject_Call(method, args, kwargs);
    }
    if (resolved == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        ufg_prefix_error(c->fn->name);
    }
done:
    Py_XDECREF(dtypes);
    Py_XDECREF(kwargs);
    Py_XDECREF(signature);
    Py_XDECREF(method);
    Py_XDECREF(args);
    return resolved;
}

/* The buffers' and NumPy scalars' dtypes must cast to the loop's, and the loop's outputs to
 * out='s. */
static int
ufg_check_casts(ufg_call *c, PyObject *resolved)
{
    for (int k = 0; k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        PyArray_Descr *loop = (PyArray_Descr *)PyTuple_GET_ITEM(resolved, k);
        PyArray_Descr *mine;
        int ok;
        if (op->kind == UFG_OPERAND_ABSENT || op->weak) {
            continue;
        }
        mine = ufg_call_descr(op->code);
        ok = k < c->nin ? PyArray_CanCastTypeTo(mine, loop, c->casting)
                        : PyArray_CanCastTypeTo(loop, mine, c->casting);
        if (ok) {
            continue;
        }
        /* NumPy's class and words, as the host call refusing the same cast raises them. */
        return k < c->nin
            ? ufg_numpy_casting_error(c->ufunc, ufg_casting_name(c->casting), mine, loop, 0, k)
            : ufg_numpy_casting_error(c->ufunc, ufg_casting_name(c->casting), loop, mine, 1,
                                      k - c->nin);
    }
    return 0;
}

int
ufg_device_loop_index(const ufg_function_descriptor *fn, const unsigned char *codes)
{
    const int nargs = fn->nin + fn->nout;

    for (int t = 0; t < fn->ntypes + fn->nprovided; t++) {
        if (memcmp(fn->device_codes + (size_t)t * nargs, codes, (size_t)nargs) == 0) {
            return t;
        }
    }
    return -1;
}

/* The index of the device loop (NumPy's own loops, then the provided ones: bfloat16's) whose
 * types are `resolved`, and its codes. */
static int
ufg_find_loop(ufg_call *c, PyObject *resolved, unsigned char *codes)
{
    for (int k = 0; k < c->nargs; k++) {
        const int code = ufg_dtype_code_of_supported(
            (PyArray_Descr *)PyTuple_GET_ITEM(resolved, k));
        if (code < 0) {
            break;
        }
        codes[k] = (unsigned char)code;
        if (k == c->nargs - 1) {
            const int t = ufg_device_loop_index(c->fn, codes);
            if (t >= 0) {
                return t;
            }
        }
    }
    PyErr_Format(PyExc_TypeError, "%s: no device loop for %S", c->fn->name, resolved);
    return -1;
}

/* NumPy converts Python ints to the loop's types while it resolves, before it checks any
 * cast and whatever where= says: one that does not fit is its OverflowError, first.  The
 * packed values are the ones the kernel gets (c->int_values). */
static int
ufg_pack_ints(ufg_call *c, const unsigned char *codes)
{
    char what[160];

    for (int k = 0; k < c->nin; k++) {
        if (c->ops[k].weak != 'i') {
            continue;
        }
        memset(&c->int_values[k], 0, sizeof c->int_values[k]);
        /* Into a bool loop NumPy takes a Python int as an int64 (then cast), so one past int64
         * is its OverflowError; packing it into a bool would take its truth. */
        if ((codes[k] == UFG_DT_BOOL && PyLong_AsLongLong(c->ops[k].obj) == -1 &&
             PyErr_Occurred()) ||
            PyArray_Pack(ufg_call_descr((ufg_dtype_code)codes[k]), c->int_values[k].bytes,
                         c->ops[k].obj) < 0) {
            if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
                ufg_prefix_error(ufg_call_what(c, k, what, sizeof what));
            }
            return -1;
        }
    }
    return 0;
}

/* Whether NumPy takes a Python scalar (weak: 'i', 'f' or 'c') into a loop input of type
 * `code` under `casting`.  'equiv' takes each only into its default type (int64, float64,
 * complex128).  'no' takes a float or complex into a loop of its kind or a wider one, as
 * 'same_kind' would, and refuses a float into an integer or bool loop and a complex into a
 * real one (NumPy 2.4: add(int64 array, 2.5, dtype=int64, casting='no') is its
 * UFuncTypeError); an int goes into any loop.  The other rules take all three. */
static int
ufg_weak_scalar_is_taken(int weak, ufg_dtype_code code, NPY_CASTING casting)
{
    if (casting == NPY_EQUIV_CASTING) {
        return code == (weak == 'i' ? UFG_DT_INT64 : weak == 'f' ? UFG_DT_FLOAT64
                                                                  : UFG_DT_COMPLEX128);
    }
    if (casting == NPY_NO_CASTING) {
        const char kind = ufg_call_descr(code)->kind;
        const char *refused = weak == 'f' ? "biu" : weak == 'c' ? "biuf" : "";
        return kind == '\0' || strchr(refused, kind) == NULL;
    }
    return 1;
}

/* A Python scalar refused under casting='no' is NumPy's input casting error from its default
 * type (float64, complex128); under 'equiv' a plain TypeError, as NumPy words it. */
static int
ufg_check_weak_scalars(ufg_call *c, const unsigned char *codes)
{
    for (int k = 0; k < c->nin; k++) {
        const int weak = c->ops[k].weak;
        if (weak && !ufg_weak_scalar_is_taken(weak, (ufg_dtype_code)codes[k], c->casting)) {
            if (c->casting == NPY_NO_CASTING) {
                return ufg_numpy_casting_error(
                    c->ufunc, "no", ufg_call_descr(weak == 'f' ? UFG_DT_FLOAT64
                                                                : UFG_DT_COMPLEX128),
                    ufg_call_descr((ufg_dtype_code)codes[k]), 0, k);
            }
            PyErr_Format(PyExc_TypeError, "%s: cannot cast Python %s to %S under the casting "
                         "rule '%s'", c->fn->name,
                         weak == 'i' ? "int" : weak == 'f' ? "float" : "complex",
                         (PyObject *)ufg_call_descr((ufg_dtype_code)codes[k]),
                         ufg_casting_name(c->casting));
            return -1;
        }
    }
    return 0;
}

/* Whether an input is a Python scalar NumPy takes weakly.  A lone input past int64 is not one:
 * NumPy makes an object array of it, whose cast to the loop is refused under any casting but
 * 'unsafe' (its UFuncTypeError, as the resolution raises it) before the int is converted
 * (10**30 with dtype=uint64), and converted under 'unsafe' (its OverflowError then). */
static int
ufg_has_weak_scalar(const ufg_call *c)
{
    for (int k = 0; k < c->nin; k++) {
        if (c->ops[k].weak && !ufg_is_big_int_among_scalars(c, k)) {
            return 1;
        }
    }
    return 0;
}

/* NumPy's resolution of this call, checked as NumPy checks it: a Python int that does not fit
 * the loop is an OverflowError before any refused cast (the loop NumPy would settle on under
 * casting='unsafe' decides), then Python scalars under 'equiv', then the casts.  Under 'no'
 * and 'equiv' a Python scalar is resolved under 'unsafe' and checked here: NumPy 2.4's
 * resolve_dtypes crashes refusing one. */
static int
ufg_resolve_with_numpy(ufg_call *c, unsigned char *codes)
{
    const int weak = ufg_has_weak_scalar(c);
    const int strict = weak && c->casting <= NPY_EQUIV_CASTING;
    /* signature= may fix a Python scalar's type: NumPy then converts it itself, and has
     * checked what ufg_check_weak_scalars checks. */
    const int converted = weak && c->signature != NULL && c->fn->ncore_dims == 0;
    PyObject *resolved;
    int index;

    if (converted && ufg_numpy_converts_scalars(c, ufg_casting_name(c->casting)) < 0) {
        return -1;
    }
    resolved = ufg_ask_numpy(c, strict ? NPY_UNSAFE_CASTING : c->casting);

    if (resolved == NULL && weak && c->casting != NPY_UNSAFE_CASTING &&
        PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyObject *type, *value, *traceback, *loose;
        PyErr_Fetch(&type, &value, &traceback);
        loose = ufg_ask_numpy(c, NPY_UNSAFE_CASTING);
        int fits = 0;
        if (loose != NULL) {
            index = ufg_find_loop(c, loose, codes);
            fits = index >= 0 && ufg_pack_ints(c, codes) == 0;
            Py_DECREF(loose);
        }
        if (loose == NULL || fits || !PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            PyErr_Restore(type, value, traceback);
        }
        else {
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(traceback);
        }
        return -1;
    }
    if (resolved == NULL) {
        return -1;
    }
    index = ufg_find_loop(c, resolved, codes);
    if (index >= 0 && (ufg_pack_ints(c, codes) < 0 ||
                       (!converted && ufg_check_weak_scalars(c, codes) < 0) ||
                       ufg_check_casts(c, resolved) < 0)) {
        index = -1;
    }
    Py_DECREF(resolved);
    return index;
}

int
ufg_call_resolve_types(ufg_call *c)
{
    unsigned char key[UFG_RESOLVE_KEY_SIZE], codes[UFG_CALL_MAX_OPERANDS];
    ufg_resolution *slot;
    int other_dtype, index;

    memset(key, UFG_KEY_ABSENT, sizeof key);
    for (int k = 0; k < c->nargs; k++) {
        const ufg_operand *op = &c->ops[k];
        key[k] = op->kind == UFG_OPERAND_ABSENT ? UFG_KEY_ABSENT
               : op->weak == 'i' ? UFG_KEY_WEAK_INT
               : op->weak == 'f' ? UFG_KEY_WEAK_FLOAT
               : op->weak == 'c' ? UFG_KEY_WEAK_COMPLEX : (unsigned char)op->code;
    }
    ufg_dtype_key(c, &key[UFG_CALL_MAX_OPERANDS], &other_dtype);
    key[UFG_CALL_MAX_OPERANDS + 1] = (unsigned char)c->casting;
    for (int k = 0; k < c->nin && !other_dtype; k++) {
        other_dtype = ufg_is_big_int_among_scalars(c, k);
    }
    slot = &ufg_resolutions[ufg_key_hash(c->fn, key)];
    if (!other_dtype && slot->fn == c->fn && memcmp(slot->key, key, sizeof key) == 0) {
        c->loop_index = slot->loop_index;
        for (int k = 0; k < c->nargs; k++) {
            c->loop_codes[k] = (ufg_dtype_code)slot->codes[k];
        }
        return ufg_pack_ints(c, slot->codes);
    }
    index = ufg_resolve_with_numpy(c, codes);
    if (index < 0) {
        return -1;
    }
    c->loop_index = index;
    for (int k = 0; k < c->nargs; k++) {
        c->loop_codes[k] = (ufg_dtype_code)codes[k];
    }
    if (!other_dtype) {
        slot->fn = c->fn;
        memcpy(slot->key, key, sizeof key);
        slot->loop_index = index;
        memcpy(slot->codes, codes, sizeof codes);
    }
    return 0;
}
