/*
 * ufuncgen.Function: a thin, picklable, named wrapper around a numpy.ufunc.
 *
 * Calls are forwarded verbatim (same argument vector, same keyword names)
 * so that every NumPy behaviour -- errstate, out=/where=/dtype=/axes= -- is
 * NumPy's own and needs no code here.  The only extra work per call is a
 * scan that recognises plain host arguments by type; a call with anything
 * else is looked at closer, in this order:
 *   1. __array_ufunc__ overrides of non-device arguments, which receive the
 *      Function rather than the inner ufunc (overrides.h);
 *   2. CUDA buffers, handed to the device runtime's C entry point;
 *   3. the host ufunc.
 * Host gufunc calls that pass outputs copy the inputs those overlap first
 * (overlap.h).
 */
#include "numpy_api.h"

#include "function_object.h"

#include <stddef.h>
#include <string.h>

#include "dispatch.h"
#include "host_at.h"
#include "overlap.h"
#include "overrides.h"
#include "ufuncgen/device_call.h"

/* Python 3.12 moved the member constants into Python.h under new names;
 * 3.11 only has the old spellings in structmember.h. */
#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#endif

/* The device call of ufuncgen._device, fetched from its capsule on the first device call
 * (importing _device at import time would make every host-only user pay for it). */
static const ufg_device_call_api *ufg_device_api = NULL;
static PyObject *ufg_reduce_name = NULL;        /* "reduce" */
static PyObject *ufg_signature_name = NULL;     /* "__signature__" */

static const ufg_device_call_api *
ufg_load_device_api(void)
{
    PyObject *module, *capsule;

    if (ufg_device_api != NULL) {
        return ufg_device_api;
    }
    module = PyImport_ImportModule("ufuncgen._device");
    if (module == NULL) {
        return NULL;
    }
    capsule = PyObject_GetAttrString(module, "_call_api");
    Py_DECREF(module);
    if (capsule == NULL) {
        return NULL;
    }
    ufg_device_api = PyCapsule_GetPointer(capsule, UFG_DEVICE_CALL_CAPSULE);
    Py_DECREF(capsule);
    if (ufg_device_api != NULL && ufg_device_api->version != UFG_DEVICE_CALL_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "ufuncgen._core and ufuncgen._device come from different builds "
                     "(device call version %d, expected %d); reinstall ufuncgen",
                     ufg_device_api->version, UFG_DEVICE_CALL_VERSION);
        ufg_device_api = NULL;
    }
    return ufg_device_api;
}

/* A call (or .reduce, .accumulate, .reduceat, .outer, .at: `method`) with a CUDA argument: the device
 * runtime's.
 * Kept out of line so the host fast path in ufg_function_vectorcall stays a small frame
 * that saves no extra registers. */
static Py_NO_INLINE PyObject *
ufg_function_call_device(ufg_ufunc_method method, ufg_FunctionObject *self,
                         PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    ufg_device_entry entry;
    const ufg_device_call_api *api;

    if (self->descriptor == NULL) {
        PyErr_Format(PyExc_TypeError,
                     "%U was built without device kernels, but an argument is a CUDA array",
                     self->name);
        return NULL;
    }
    api = ufg_load_device_api();
    if (api == NULL) {
        return NULL;
    }
    entry = method == UFG_METHOD_REDUCE     ? api->reduce
          : method == UFG_METHOD_ACCUMULATE ? api->accumulate
          : method == UFG_METHOD_REDUCEAT   ? api->reduceat
          : method == UFG_METHOD_AT         ? api->at
          : method == UFG_METHOD_OUTER      ? api->outer
                                            : api->call;
    return entry((PyObject *)self, self->descriptor, self->ufunc, args, nargs, kwnames);
}

/* ------------------------------------------------------------------ */
/* Calling                                                              */
/* ------------------------------------------------------------------ */

/* Only reachable if a reference cycle through the ufunc (e.g. a
 * frompyfunc callback holding the Function) was broken by the GC while
 * something still tried to call it. */
static Py_NO_INLINE PyObject *
ufg_function_cleared_error(ufg_FunctionObject *self)
{
    PyErr_Format(PyExc_RuntimeError,
                 "ufuncgen.Function '%U.%U' no longer wraps a ufunc "
                 "(it was cleared by the garbage collector)",
                 self->module, self->name);
    return NULL;
}

/* The host ufunc.  A gufunc given outputs (by position, or perhaps by
 * keyword) first copies the inputs they overlap: NumPy's gufunc loops
 * would read what they have already overwritten. */
static inline PyObject *
ufg_function_call_host(ufg_FunctionObject *self, PyObject *const *args,
                       size_t nargsf, PyObject *kwnames)
{
    PyUFuncObject *ufunc = (PyUFuncObject *)self->ufunc;

    if (ufunc->core_enabled &&
        (PyVectorcall_NARGS(nargsf) > ufunc->nin || kwnames != NULL)) {
        return ufg_overlap_call_gufunc(self->ufunc, args, nargsf, kwnames);
    }
    /* nargsf is passed through untouched so the ufunc may still use
     * the PY_VECTORCALL_ARGUMENTS_OFFSET slot our caller granted. */
    return PyObject_Vectorcall(self->ufunc, args, nargsf, kwnames);
}

/* A call with some argument that is not a plain host value: an override
 * of a non-device argument, else the device path, else the host. */
static Py_NO_INLINE PyObject *
ufg_function_call_unusual(PyObject *callable, PyObject *const *args,
                          size_t nargsf, PyObject *kwnames)
{
    ufg_FunctionObject *self = (ufg_FunctionObject *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t device_index;
    PyObject *result;

    if (ufg_overrides_check(callable, self->ufunc, UFG_METHOD_CALL, args,
                            nargs, kwnames, &result) != 0) {
        return result;
    }
    device_index = ufg_dispatch_find_device_argument(args, nargs, kwnames);
    if (device_index == UFG_DISPATCH_HOST) {
        return ufg_function_call_host(self, args, nargsf, kwnames);
    }
    if (device_index == UFG_DISPATCH_ERROR) {
        return NULL;
    }
    return ufg_function_call_device(UFG_METHOD_CALL, self, args, nargs, kwnames);
}

static PyObject *
ufg_function_vectorcall(PyObject *callable, PyObject *const *args,
                        size_t nargsf, PyObject *kwnames)
{
    ufg_FunctionObject *self = (ufg_FunctionObject *)callable;

    if (self->ufunc == NULL) {
        return ufg_function_cleared_error(self);
    }
    if (ufg_dispatch_is_plain_host_call(args, PyVectorcall_NARGS(nargsf),
                                        kwnames)) {
        return ufg_function_call_host(self, args, nargsf, kwnames);
    }
    return ufg_function_call_unusual(callable, args, nargsf, kwnames);
}

/* ------------------------------------------------------------------ */
/* Construction and lifetime                                            */
/* ------------------------------------------------------------------ */

static int
ufg_check_argument_type(const char *argument, PyObject *value,
                        int matches, const char *expected)
{
    if (matches) {
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "Function() argument '%s' must be %s, not %.200s",
                 argument, expected, Py_TYPE(value)->tp_name);
    return -1;
}

static int
ufg_check_constructor_arguments(PyObject *ufunc, PyObject *name,
                                PyObject *module, PyObject *doc)
{
    if (ufg_check_argument_type("ufunc", ufunc,
                                PyObject_TypeCheck(ufunc, &PyUFunc_Type),
                                "numpy.ufunc") < 0 ||
        ufg_check_argument_type("name", name, PyUnicode_Check(name),
                                "str") < 0 ||
        ufg_check_argument_type("module", module, PyUnicode_Check(module),
                                "str") < 0 ||
        ufg_check_argument_type("doc", doc, PyUnicode_Check(doc),
                                "str") < 0) {
        return -1;
    }
    return 0;
}

/* A descriptor capsule of another ufuncgen's layout: the module was built by that ufuncgen,
 * and reading its descriptor would misread the device launchers.  ImportError, since this
 * runs while the module imports. */
static int
ufg_check_descriptor_layout(PyObject *descriptor, PyObject *module)
{
    const char *capsule_name;

    if (!PyCapsule_CheckExact(descriptor) || PyCapsule_IsValid(descriptor, UFG_DESCRIPTOR_CAPSULE)) {
        return 0;
    }
    capsule_name = PyCapsule_GetName(descriptor);
    if (capsule_name == NULL || strncmp(capsule_name, UFG_DESCRIPTOR_CAPSULE_PREFIX,
                                        strlen(UFG_DESCRIPTOR_CAPSULE_PREFIX)) != 0) {
        PyErr_Clear();
        return 0;                   /* not a descriptor at all: the type check says so */
    }
    PyErr_Format(PyExc_ImportError,
                 "module %R was built by a ufuncgen whose generated code has another layout "
                 "(descriptor '%s', this ufuncgen reads '%s'); rebuild it with this ufuncgen",
                 module, capsule_name, UFG_DESCRIPTOR_CAPSULE);
    return -1;
}

static PyObject *
ufg_function_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"ufunc", "name", "module", "doc", "descriptor",
                             NULL};
    PyObject *ufunc, *name, *module, *doc, *descriptor = Py_None;
    ufg_FunctionObject *self;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOO|O:Function", kwlist,
                                     &ufunc, &name, &module, &doc,
                                     &descriptor)) {
        return NULL;
    }
    if (ufg_check_constructor_arguments(ufunc, name, module, doc) < 0 ||
        ufg_check_descriptor_layout(descriptor, module) < 0 ||
        ufg_check_argument_type(
            "descriptor", descriptor,
            descriptor == Py_None ||
                PyCapsule_IsValid(descriptor, UFG_DESCRIPTOR_CAPSULE),
            "None or a '" UFG_DESCRIPTOR_CAPSULE "' capsule") < 0) {
        return NULL;
    }
    self = (ufg_FunctionObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->ufunc = Py_NewRef(ufunc);
    self->name = Py_NewRef(name);
    self->module = Py_NewRef(module);
    self->doc = Py_NewRef(doc);
    self->descriptor_capsule = Py_NewRef(descriptor);
    self->descriptor = descriptor == Py_None
        ? NULL : PyCapsule_GetPointer(descriptor, UFG_DESCRIPTOR_CAPSULE);
    self->weakreflist = NULL;
    self->vectorcall = ufg_function_vectorcall;
    return (PyObject *)self;
}

/* Only the ufunc can take part in a cycle (a frompyfunc ufunc holds an
 * arbitrary Python callable); the str fields cannot, so they are neither
 * visited nor cleared, which keeps repr() usable after a clear. */
static int
ufg_function_traverse(PyObject *op, visitproc visit, void *arg)
{
    ufg_FunctionObject *self = (ufg_FunctionObject *)op;

    Py_VISIT(self->ufunc);
    return 0;
}

static int
ufg_function_clear(PyObject *op)
{
    ufg_FunctionObject *self = (ufg_FunctionObject *)op;

    Py_CLEAR(self->ufunc);
    return 0;
}

static void
ufg_function_dealloc(PyObject *op)
{
    ufg_FunctionObject *self = (ufg_FunctionObject *)op;

    PyObject_GC_UnTrack(op);
    if (self->weakreflist != NULL) {
        PyObject_ClearWeakRefs(op);
    }
    Py_CLEAR(self->ufunc);
    Py_CLEAR(self->name);
    Py_CLEAR(self->module);
    Py_CLEAR(self->doc);
    Py_CLEAR(self->descriptor_capsule);
    PyMem_Free(self->host_at_cache);
    Py_TYPE(op)->tp_free(op);
}

/* ------------------------------------------------------------------ */
/* Attribute access                                                     */
/* ------------------------------------------------------------------ */

static PyObject *
ufg_function_getattr_from_ufunc(ufg_FunctionObject *self, PyObject *name)
{
    PyObject *value;

    if (self->ufunc != NULL) {
        value = PyObject_GetAttr(self->ufunc, name);
        if (value != NULL ||
            !PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return value;
        }
        PyErr_Clear();
    }
    /* Report the miss against the object the user actually touched. */
    PyErr_Format(PyExc_AttributeError,
                 "'ufuncgen.Function' object has no attribute '%U'", name);
    return NULL;
}

/*
 * __signature__: the call as declared, `(x, k, /, out=None, *, where=True,
 * ...)`, what the docstring's first line and the stub say, for inspect and
 * editors; the wrapped ufunc's names its arguments x1, x2.  Built from the
 * descriptor's argument names by ufuncgen._signature.  A Function made
 * without a descriptor has the ufunc's.  Answered here rather than by a
 * descriptor on the type, which inspect.signature(ufuncgen.Function) would
 * find on the class and refuse as no Signature.
 */
static PyObject *
ufg_function_signature(ufg_FunctionObject *self)
{
    const struct ufg_function_descriptor *fn = self->descriptor;
    PyObject *names, *module, *result;

    if (fn == NULL || self->ufunc == NULL) {
        return ufg_function_getattr_from_ufunc(self, ufg_signature_name);
    }
    names = PyTuple_New(fn->nin);
    if (names == NULL) {
        return NULL;
    }
    for (int i = 0; i < fn->nin; i++) {
        PyObject *name = PyUnicode_FromString(fn->arg_names[i]);
        if (name == NULL) {
            Py_DECREF(names);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    module = PyImport_ImportModule("ufuncgen._signature");
    if (module == NULL) {
        Py_DECREF(names);
        return NULL;
    }
    result = PyObject_CallMethod(module, "call_signature", "Oi", names,
                                 fn->signature != NULL);
    Py_DECREF(module);
    Py_DECREF(names);
    return result;
}

/*
 * Names defined by the type win; everything else is the wrapped ufunc's
 * (nin, types, reduce, ...), but for __signature__ (above).  Function has
 * no instance __dict__, so the generic lookup can only succeed for names
 * found on the type: asking the type first is equivalent to "generic
 * lookup, fall back on AttributeError" without raising and discarding an
 * exception on every delegated access.
 */
static PyObject *
ufg_function_getattro(PyObject *op, PyObject *name)
{
    if (name == ufg_signature_name ||
        (PyUnicode_Check(name) &&
         PyUnicode_CompareWithASCIIString(name, "__signature__") == 0)) {
        return ufg_function_signature((ufg_FunctionObject *)op);
    }
    if (_PyType_Lookup(Py_TYPE(op), name) != NULL) {
        return PyObject_GenericGetAttr(op, name);
    }
    return ufg_function_getattr_from_ufunc((ufg_FunctionObject *)op, name);
}

/* Generated functions are shared module globals: mutating one would leak
 * into every user of the module, so nothing is writable. */
static int
ufg_function_setattro(PyObject *Py_UNUSED(op), PyObject *name,
                      PyObject *value)
{
    PyErr_Format(PyExc_AttributeError,
                 "cannot %s attribute '%U' of ufuncgen.Function objects: "
                 "they are read-only",
                 value == NULL ? "delete" : "set", name);
    return -1;
}

/* ------------------------------------------------------------------ */
/* repr                                                                 */
/* ------------------------------------------------------------------ */

/* "ufunc", or "gufunc <core signature>" for generalized ufuncs. */
static PyObject *
ufg_ufunc_kind(PyUFuncObject *ufunc)
{
    if (ufunc->core_enabled && ufunc->core_signature != NULL) {
        return PyUnicode_FromFormat("gufunc %s", ufunc->core_signature);
    }
    return PyUnicode_FromString("ufunc");
}

static PyObject *
ufg_function_repr(PyObject *op)
{
    ufg_FunctionObject *self = (ufg_FunctionObject *)op;
    PyUFuncObject *ufunc = (PyUFuncObject *)self->ufunc;
    PyObject *kind, *result;

    if (ufunc == NULL) {
        return PyUnicode_FromFormat("<ufuncgen.Function '%U.%U' (cleared)>",
                                    self->module, self->name);
    }
    kind = ufg_ufunc_kind(ufunc);
    if (kind == NULL) {
        return NULL;
    }
    result = PyUnicode_FromFormat(
        "<ufuncgen.Function '%U.%U' (%U, nin=%d, nout=%d)>",
        self->module, self->name, kind, ufunc->nin, ufunc->nout);
    Py_DECREF(kind);
    return result;
}

/* ------------------------------------------------------------------ */
/* Methods                                                              */
/* ------------------------------------------------------------------ */

/* Pickled as ufuncgen._pickling._load_function(module, name): a reference
 * to the module global, never the wrapped ufunc (checked at dump time, as
 * pickle checks a global name).  The loader, rather than a bare global name,
 * lets a process that cannot import the module, such as a dask worker,
 * unpickle a stand-in that names the module when used. */
static PyObject *
ufg_function_reduce(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    PyObject *pickling = PyImport_ImportModule("ufuncgen._pickling");
    if (pickling == NULL) {
        return NULL;
    }
    PyObject *result = PyObject_CallMethod(pickling, "_reduce_function", "O", op);
    Py_DECREF(pickling);
    return result;
}

/* Immutable and identified by its module-level name, like a function. */
static PyObject *
ufg_function_copy(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    return Py_NewRef(op);
}

static PyObject *
ufg_function_deepcopy(PyObject *op, PyObject *Py_UNUSED(memo))
{
    return Py_NewRef(op);
}

static int
ufg_set_add_all(PyObject *set, PyObject *names)
{
    Py_ssize_t i, n = PyList_GET_SIZE(names);

    for (i = 0; i < n; i++) {
        if (PySet_Add(set, PyList_GET_ITEM(names, i)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Tab completion should offer the delegated ufunc attributes too. */
static PyObject *
ufg_function_dir(PyObject *op, PyObject *Py_UNUSED(ignored))
{
    ufg_FunctionObject *self = (ufg_FunctionObject *)op;
    PyObject *type_names, *ufunc_names = NULL, *names = NULL;
    PyObject *result = NULL;

    type_names = PyObject_Dir((PyObject *)Py_TYPE(op));
    if (type_names == NULL) {
        return NULL;
    }
    names = PySet_New(type_names);
    if (names == NULL) {
        goto done;
    }
    if (self->ufunc != NULL) {
        ufunc_names = PyObject_Dir(self->ufunc);
        if (ufunc_names == NULL || ufg_set_add_all(names, ufunc_names) < 0) {
            goto done;
        }
    }
    result = PySequence_List(names);
done:
    Py_XDECREF(names);
    Py_XDECREF(ufunc_names);
    Py_DECREF(type_names);
    return result;
}

/* accumulate(array, axis, dtype, out): the parameter at `position`, given by position or by
 * keyword `name`.  NULL when it is not given, or given both ways (NumPy's TypeError for that
 * comes before it looks at any operand). */
static PyObject *
ufg_accumulate_parameter(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                         Py_ssize_t position, const char *name)
{
    PyObject *keyword = ufg_keyword_value(args + nargs, kwnames, name);

    if (position < nargs) {
        return keyword == NULL ? args[position] : NULL;
    }
    return keyword;
}

/* accumulate's out= when it is a 0-d ndarray, else NULL.  NumPy takes out= by keyword as an
 * array or as a tuple of one; a tuple given by position, or a list, is its TypeError. */
static PyObject *
ufg_accumulate_0d_out(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *out = ufg_accumulate_parameter(args, nargs, kwnames, 3, "out");

    if (out != NULL && nargs <= 3 && PyTuple_Check(out) && PyTuple_GET_SIZE(out) == 1) {
        out = PyTuple_GET_ITEM(out, 0);
    }
    if (out == NULL || !PyArray_Check(out) || PyArray_NDIM((PyArrayObject *)out) != 0) {
        return NULL;
    }
    return out;
}

/* A scalar or a 0-d ndarray: NumPy's accumulate refuses it ("cannot accumulate on a scalar")
 * before it looks at out=. */
static int
ufg_is_scalar_operand(PyObject *array)
{
    return PyArray_IsAnyScalar(array) ||
           (PyArray_Check(array) && PyArray_NDIM((PyArrayObject *)array) == 0);
}

/* ufunc.accumulate(...) as called, less its out= (by position or keyword) and with `array`
 * in place of the operand: NumPy then checks everything else (axis=, dtype=, the operand's
 * type) with its own errors, in its order.  An error path only, so made with a tuple and a
 * dict. */
static PyObject *
ufg_accumulate_without_out(PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames, PyObject *array)
{
    const Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *method = PyObject_GetAttr(ufunc, ufg_overrides_method_name(UFG_METHOD_ACCUMULATE));
    PyObject *positional = method == NULL ? NULL : PyTuple_New(nargs > 3 ? 3 : nargs);
    PyObject *keywords = positional == NULL ? NULL : PyDict_New();
    PyObject *result = NULL;

    if (keywords == NULL) {
        goto done;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(positional); k++) {
        PyTuple_SET_ITEM(positional, k, Py_NewRef(k == 0 ? array : args[k]));
    }
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        PyObject *value = PyUnicode_CompareWithASCIIString(name, "array") == 0
                          ? array : args[nargs + k];
        if (PyUnicode_CompareWithASCIIString(name, "out") != 0 &&
            PyDict_SetItem(keywords, name, value) < 0) {
            goto done;
        }
    }
    result = PyObject_Call(method, positional, keywords);
done:
    Py_XDECREF(keywords);
    Py_XDECREF(positional);
    Py_XDECREF(method);
    return result;
}

/* An empty array of the operand's dimensions and dtype, as NumPy converts it: what NumPy
 * checks of a call other than out= depends on those alone (axis=5 of one dimension, a dtype=
 * it cannot cast to), and on it nothing is computed.  NULL with an error, or with none for
 * an operand that converts to 0-d (NumPy's own "cannot accumulate on a scalar"). */
static PyObject *
ufg_accumulate_empty_operand(PyObject *array)
{
    PyArrayObject *converted = (PyArrayObject *)PyArray_FROM_O(array);
    npy_intp shape[NPY_MAXDIMS] = {0};
    PyObject *empty = NULL;

    if (converted != NULL && PyArray_NDIM(converted) > 0) {
        PyArray_Descr *descr = PyArray_DESCR(converted);
        Py_INCREF(descr);
        empty = PyArray_NewFromDescr(&PyArray_Type, descr, PyArray_NDIM(converted), shape,
                                     NULL, NULL, 0, NULL);
    }
    Py_XDECREF(converted);
    return empty;
}

/* NumPy (2.4 at least) crashes the interpreter on ufunc.accumulate of an array of one
 * dimension or more into a 0-d out= (np.add.accumulate(np.ones(1), out=np.array(0.0)),
 * np.add.accumulate(array=[1.0], out=(np.array(0.0),)), with or without axis= and dtype=).
 * Such an out= is the wrong size whatever the array: the call is made without it, on an
 * empty array of the operand's dimensions and dtype, so that NumPy reports what else is
 * wrong (axis=5 is its AxisError) without computing anything (no floating-point flags), and
 * if nothing is, NumPy's ValueError for a wrong-size out= is raised.  Both operands may come
 * by position or by keyword, as NumPy takes them.  0 when the call may go to NumPy. */
static int
ufg_accumulate_refuse_0d_out(PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames)
{
    PyObject *array = ufg_accumulate_parameter(args, nargs, kwnames, 0, "array"), *result;
    PyObject *empty;

    /* More than accumulate's four positional parameters is NumPy's TypeError, out= untouched. */
    if (array == NULL || nargs > 4 || ufg_is_scalar_operand(array) ||
        ufg_accumulate_0d_out(args, nargs, kwnames) == NULL) {
        return 0;
    }
    if ((empty = ufg_accumulate_empty_operand(array)) == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    result = ufg_accumulate_without_out(ufunc, args, nargs, kwnames, empty);
    Py_DECREF(empty);
    if (result == NULL) {
        return -1;
    }
    Py_DECREF(result);
    PyErr_SetString(PyExc_ValueError, "provided out is the wrong size for the accumulation.");
    return -1;
}

/* Whether NumPy's accumulate gets as far as out= (it first refuses gufuncs and functions
 * other than binary ones, with errors of their own). */
static int
ufg_accumulates(const PyUFuncObject *ufunc)
{
    return !ufunc->core_enabled && ufunc->nin == 2 && ufunc->nout == 1;
}

/* NumPy 2.4's ufunc.at indexes through a map iterator of at most 32 dimensions, and stops the
 * process with a larger array (np.add.at(np.zeros((1,) * 32 + (2,)), slice(None), 1.0)),
 * though arrays may have 64: refused before it is asked. */
#define UFG_NUMPY_AT_MAX_DIMS 32

/* The dimensions of a[index] (the indexed result the map iterator walks), or -1 where NumPy
 * refuses the index: then its own .at says why.  Found by indexing an array of a's shape
 * whose elements take no bytes, so nothing is copied whatever its size.  A 1-D index array,
 * an int or a slice (what .at mostly gets) cannot make more dimensions than a has. */
static int
ufg_at_result_ndim(PyArrayObject *a, PyObject *index)
{
    PyArray_Descr *nothing = NULL;
    PyObject *fields, *probe, *result;
    int ndim = -1;

    if ((PyArray_Check(index) && PyArray_NDIM((PyArrayObject *)index) <= 1) ||
        PyLong_Check(index) || PySlice_Check(index)) {
        return PyArray_NDIM(a);
    }
    if ((fields = PyList_New(0)) == NULL) {
        return -2;
    }
    if (PyArray_DescrConverter(fields, &nothing) != NPY_SUCCEED) {
        Py_DECREF(fields);
        return -2;
    }
    Py_DECREF(fields);
    probe = PyArray_NewFromDescr(&PyArray_Type, nothing, PyArray_NDIM(a), PyArray_DIMS(a), NULL,
                                 NULL, 0, NULL);                  /* steals the descriptor */
    if (probe == NULL) {
        return -2;
    }
    result = PyObject_GetItem(probe, index);
    Py_DECREF(probe);
    if (result == NULL) {
        PyErr_Clear();
        return -1;
    }
    if (PyArray_Check(result)) {
        ndim = PyArray_NDIM((PyArrayObject *)result);
    }
    Py_DECREF(result);
    return ndim;
}

static int
ufg_at_refuse_what_numpy_cannot(PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs)
{
    int ndim;

    if (nargs < 1 || !PyArray_Check(args[0])) {
        return 0;
    }
    if (PyArray_NDIM((PyArrayObject *)args[0]) > UFG_NUMPY_AT_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s.at: the array has %d dimensions, and NumPy's "
                     "ufunc.at takes at most %d for this index (a larger array stops the "
                     "process there)", ((PyUFuncObject *)ufunc)->name,
                     PyArray_NDIM((PyArrayObject *)args[0]), UFG_NUMPY_AT_MAX_DIMS);
        return -1;
    }
    if (nargs < 2) {
        return 0;
    }
    if ((ndim = ufg_at_result_ndim((PyArrayObject *)args[0], args[1])) == -2) {
        return -1;
    }
    if (ndim > UFG_NUMPY_AT_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "%s.at: a[indices] has %d dimensions, and NumPy's "
                     "ufunc.at takes at most %d (a larger one stops the process there)",
                     ((PyUFuncObject *)ufunc)->name, ndim, UFG_NUMPY_AT_MAX_DIMS);
        return -1;
    }
    return 0;
}

/* ufunc.<method>(...) of the wrapped ufunc, on the host.  Called through
 * the ufunc's type, as `np.add.at(...)` is, so that NumPy's errors name
 * the method the same way ("ufunc.at() takes no keyword arguments"). */
static PyObject *
ufg_function_host_method(ufg_FunctionObject *self, ufg_ufunc_method which,
                         PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwnames)
{
    PyObject *small[8], **vector = small, *result;
    Py_ssize_t nall = nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames));

    if (which == UFG_METHOD_ACCUMULATE && ufg_accumulates((PyUFuncObject *)self->ufunc) &&
        ufg_accumulate_refuse_0d_out(self->ufunc, args, nargs, kwnames) < 0) {
        return NULL;
    }
    if (which == UFG_METHOD_AT &&
        ufg_at_refuse_what_numpy_cannot(self->ufunc, args, nargs) < 0) {
        return NULL;
    }
    if (nall + 1 > (Py_ssize_t)(sizeof(small) / sizeof(small[0]))) {
        vector = PyMem_Malloc((size_t)(nall + 1) * sizeof(PyObject *));
        if (vector == NULL) {
            return PyErr_NoMemory();
        }
    }
    vector[0] = self->ufunc;
    memcpy(vector + 1, args, (size_t)nall * sizeof(PyObject *));
    result = PyObject_VectorcallMethod(ufg_overrides_method_name(which), vector,
                                       (size_t)(nargs + 1), kwnames);
    if (vector != small) {
        PyMem_Free(vector);
    }
    return result;
}

/* reduce, accumulate, reduceat, outer, at: overrides receive the Function,
 * as for calls; what no override takes goes to the ufunc's own method.
 * Sets *done and returns the answer (or NULL) when the call was taken. */
static PyObject *
ufg_function_method_override(PyObject *op, ufg_ufunc_method which,
                             PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames, int *done)
{
    ufg_FunctionObject *self = (ufg_FunctionObject *)op;
    PyObject *result = NULL;

    *done = 1;
    if (self->ufunc == NULL) {
        return ufg_function_cleared_error(self);
    }
    if (ufg_dispatch_is_plain_host_call(args, nargs, kwnames)) {
        *done = 0;
        return NULL;
    }
    *done = ufg_overrides_check(op, self->ufunc, which, args, nargs, kwnames,
                                &result) != 0;
    return result;
}

/* A method that device arrays take to the device runtime (reduce, accumulate, reduceat,
 * outer, at). */
static PyObject *
ufg_function_device_method(PyObject *op, ufg_ufunc_method which, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t device_index;
    int done;
    PyObject *result = ufg_function_method_override(op, which, args, nargs, kwnames, &done);

    if (done) {
        return result;
    }
    device_index = ufg_dispatch_find_device_argument(args, nargs, kwnames);
    if (device_index == UFG_DISPATCH_ERROR) {
        return NULL;
    }
    if (device_index != UFG_DISPATCH_HOST) {
        return ufg_function_call_device(which, (ufg_FunctionObject *)op, args, nargs, kwnames);
    }
    if (which == UFG_METHOD_AT) {
        ufg_FunctionObject *self = (ufg_FunctionObject *)op;
        const int at = ufg_host_at(self->ufunc, self->descriptor, &self->host_at_cache, args,
                                   nargs, kwnames);
        if (at != UFG_HOST_AT_DECLINED) {
            return at == UFG_HOST_AT_DONE ? Py_NewRef(Py_None) : NULL;
        }
    }
    return ufg_function_host_method((ufg_FunctionObject *)op, which, args, nargs, kwnames);
}

static PyObject *
ufg_function_reduce_method(PyObject *op, PyObject *const *args,
                           Py_ssize_t nargs, PyObject *kwnames)
{
    return ufg_function_device_method(op, UFG_METHOD_REDUCE, args, nargs, kwnames);
}

static PyObject *
ufg_function_outer_method(PyObject *op, PyObject *const *args,
                          Py_ssize_t nargs, PyObject *kwnames)
{
    return ufg_function_device_method(op, UFG_METHOD_OUTER, args, nargs, kwnames);
}

static PyObject *
ufg_function_accumulate_method(PyObject *op, PyObject *const *args,
                               Py_ssize_t nargs, PyObject *kwnames)
{
    return ufg_function_device_method(op, UFG_METHOD_ACCUMULATE, args, nargs, kwnames);
}

static PyObject *
ufg_function_reduceat_method(PyObject *op, PyObject *const *args,
                             Py_ssize_t nargs, PyObject *kwnames)
{
    return ufg_function_device_method(op, UFG_METHOD_REDUCEAT, args, nargs, kwnames);
}

static PyObject *
ufg_function_at_method(PyObject *op, PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames)
{
    return ufg_function_device_method(op, UFG_METHOD_AT, args, nargs, kwnames);
}

static PyMethodDef ufg_function_methods[] = {
    /* The text signature is NumPy's own for ufunc.reduce: `initial` has no default that
     * Python can spell (numpy._NoValue), and one that is not valid Python leaves
     * inspect.signature() and help() without any. */
    {"reduce", (PyCFunction)(void (*)(void))ufg_function_reduce_method,
     METH_FASTCALL | METH_KEYWORDS,
     "reduce($self, array, /, axis=0, dtype=None, out=None, **kwargs)\n--\n\n"
     "reduce(array, axis=0, dtype=None, out=None, keepdims=False, "
     "initial=<no value>, where=True)\n\n"
     "numpy.ufunc.reduce of the wrapped ufunc; device arrays are reduced "
     "on the device."},
    {"accumulate", (PyCFunction)(void (*)(void))ufg_function_accumulate_method,
     METH_FASTCALL | METH_KEYWORDS,
     "accumulate(array, axis=0, dtype=None, out=None)\n--\n\n"
     "numpy.ufunc.accumulate of the wrapped ufunc; device arrays are accumulated on the "
     "device."},
    {"reduceat", (PyCFunction)(void (*)(void))ufg_function_reduceat_method,
     METH_FASTCALL | METH_KEYWORDS,
     "reduceat(array, indices, axis=0, dtype=None, out=None)\n--\n\n"
     "numpy.ufunc.reduceat of the wrapped ufunc; device arrays are reduced on the device."},
    {"outer", (PyCFunction)(void (*)(void))ufg_function_outer_method,
     METH_FASTCALL | METH_KEYWORDS,
     "outer(A, B, /, **kwargs)\n--\n\n"
     "numpy.ufunc.outer of the wrapped ufunc; device arrays are combined on the device."},
    {"at", (PyCFunction)(void (*)(void))ufg_function_at_method,
     METH_FASTCALL | METH_KEYWORDS,
     "at(a, indices, b=None, /)\n--\n\n"
     "numpy.ufunc.at of the wrapped ufunc; a device array is updated in place on the "
     "device."},
    {"__reduce__", ufg_function_reduce, METH_NOARGS,
     "Pickle by reference to module.name."},
    {"__copy__", ufg_function_copy, METH_NOARGS,
     "Return self: Function objects are immutable."},
    {"__deepcopy__", ufg_function_deepcopy, METH_O,
     "Return self: Function objects are immutable."},
    {"__dir__", ufg_function_dir, METH_NOARGS,
     "Names of the Function type and of the wrapped ufunc."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef ufg_function_members[] = {
    {"ufunc", Py_T_OBJECT_EX, offsetof(ufg_FunctionObject, ufunc),
     Py_READONLY, "The wrapped numpy.ufunc."},
    {"__name__", Py_T_OBJECT_EX, offsetof(ufg_FunctionObject, name),
     Py_READONLY, NULL},
    {"__qualname__", Py_T_OBJECT_EX, offsetof(ufg_FunctionObject, name),
     Py_READONLY, NULL},
    {"__module__", Py_T_OBJECT_EX, offsetof(ufg_FunctionObject, module),
     Py_READONLY, NULL},
    {"__doc__", Py_T_OBJECT_EX, offsetof(ufg_FunctionObject, doc),
     Py_READONLY, NULL},
    {"_descriptor", Py_T_OBJECT_EX,
     offsetof(ufg_FunctionObject, descriptor_capsule), Py_READONLY,
     "The generated descriptor (a capsule), or None."},
    {NULL, 0, 0, 0, NULL},
};

/* ------------------------------------------------------------------ */
/* Type                                                                 */
/* ------------------------------------------------------------------ */

PyDoc_STRVAR(ufg_function_type_doc,
"Function(ufunc, name, module, doc, descriptor=None)\n"
"--\n"
"\n"
"A named NumPy ufunc generated by ufuncgen.\n"
"\n"
"Calls are forwarded unchanged to the wrapped ufunc, except that\n"
"__array_ufunc__ overrides receive this Function and CUDA buffers go to\n"
"the device; attributes not defined here (nin, types, signature, ...)\n"
"are those of the ufunc.");

PyTypeObject ufg_FunctionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ufuncgen.Function",
    .tp_basicsize = sizeof(ufg_FunctionObject),
    .tp_dealloc = ufg_function_dealloc,
    .tp_vectorcall_offset = offsetof(ufg_FunctionObject, vectorcall),
    .tp_repr = ufg_function_repr,
    .tp_call = PyVectorcall_Call,
    .tp_getattro = ufg_function_getattro,
    .tp_setattro = ufg_function_setattro,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = ufg_function_type_doc,
    .tp_traverse = ufg_function_traverse,
    .tp_clear = ufg_function_clear,
    .tp_weaklistoffset = offsetof(ufg_FunctionObject, weakreflist),
    .tp_methods = ufg_function_methods,
    .tp_members = ufg_function_members,
    .tp_new = ufg_function_new,
};

static int
ufg_function_intern_names(void)
{
    if (ufg_reduce_name == NULL) {
        ufg_reduce_name = PyUnicode_InternFromString("reduce");
        if (ufg_reduce_name == NULL) {
            return -1;
        }
    }
    if (ufg_signature_name == NULL) {
        ufg_signature_name = PyUnicode_InternFromString("__signature__");
        if (ufg_signature_name == NULL) {
            return -1;
        }
    }
    return 0;
}

int
ufg_function_type_register(PyObject *module)
{
    /* The call path relies on both; readying them here means no caller
     * can register the type and forget one. */
    if (ufg_dispatch_init() < 0 || ufg_overrides_init() < 0 ||
        ufg_function_intern_names() < 0) {
        return -1;
    }
    if (PyType_Ready(&ufg_FunctionType) < 0) {
        return -1;
    }
    return PyModule_AddObjectRef(module, "Function",
                                 (PyObject *)&ufg_FunctionType);
}
