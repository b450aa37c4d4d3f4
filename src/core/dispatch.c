/*
 * Device-argument detection: decides, per call, whether a ufuncgen.Function
 * can forward to its host ufunc or must hand the call to the device hook;
 * and the plain-call test that lets most calls skip every closer look
 * (device buffers, __array_ufunc__ overrides) at once.
 *
 * This runs on every call, so the common arguments (ndarrays, Python and
 * NumPy scalars) are recognised by type identity before any attribute is
 * looked up; only unusual objects pay for a protocol probe.
 */
#include "numpy_api.h"

#include "dispatch.h"
#include "torch_tensors.h"

#include "ufuncgen/device_probe.h"

/* DLPack DLDeviceType values: the CPU's, and those whose memory a host ufunc loop cannot
 * read.  kDLCUDAHost (3) is pinned host memory and is deliberately left out of the latter.
 * 0 is no device type; -1 a malformed __dlpack_device__ answer. */
enum {
    UFG_DLPACK_MALFORMED = -1,
    UFG_DLPACK_NONE = 0,
    UFG_DLPACK_CPU = 1,
    UFG_DLPACK_CUDA = 2,
    UFG_DLPACK_CUDA_MANAGED = 13,
};

/* Interned so that attribute lookups hit the type caches and keyword names
 * produced by the compiler (which are interned) match by pointer. */
static PyObject *ufg_cuda_array_interface_name = NULL;
static PyObject *ufg_dlpack_device_name = NULL;
static PyObject *ufg_dlpack_name = NULL;
static PyObject *ufg_array_method_name = NULL;       /* __array__ */
static PyObject *ufg_array_interface_name = NULL;
static PyObject *ufg_array_struct_name = NULL;
static PyObject *ufg_out_name = NULL;
static PyObject *ufg_where_name = NULL;
static PyObject *ufg_array_name = NULL;
static PyObject *ufg_indices_name = NULL;

static int
ufg_intern_once(PyObject **slot, const char *text)
{
    if (*slot != NULL) {
        return 0;
    }
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

int
ufg_dispatch_init(void)
{
    if (ufg_intern_once(&ufg_cuda_array_interface_name,
                        "__cuda_array_interface__") < 0 ||
        ufg_intern_once(&ufg_dlpack_device_name, "__dlpack_device__") < 0 ||
        ufg_intern_once(&ufg_dlpack_name, "__dlpack__") < 0 ||
        ufg_intern_once(&ufg_array_method_name, "__array__") < 0 ||
        ufg_intern_once(&ufg_array_interface_name, "__array_interface__") < 0 ||
        ufg_intern_once(&ufg_array_struct_name, "__array_struct__") < 0 ||
        ufg_intern_once(&ufg_out_name, "out") < 0 ||
        ufg_intern_once(&ufg_where_name, "where") < 0 ||
        ufg_intern_once(&ufg_array_name, "array") < 0 ||
        ufg_intern_once(&ufg_indices_name, "indices") < 0) {
        return -1;
    }
    return 0;
}

/*
 * Exact ndarrays and builtin values: neither device buffers nor
 * __array_ufunc__ overrides.  Exact-type checks only: a subclass could add
 * either protocol.  Builtin types cannot be patched, so lists and tuples are
 * safe here too.
 */
static inline int
ufg_is_builtin_host(PyObject *obj)
{
    PyTypeObject *type = Py_TYPE(obj);

    return PyArray_CheckExact(obj) || obj == Py_None ||
           type == &PyFloat_Type || type == &PyLong_Type ||
           type == &PyBool_Type || type == &PyComplex_Type ||
           type == &PyList_Type || type == &PyTuple_Type;
}

/* Objects that can never be device buffers. */
static inline int
ufg_is_known_host(PyObject *obj)
{
    return ufg_is_builtin_host(obj) || PyArray_IsScalar(obj, Generic);
}

/*
 * Objects that are neither device buffers nor overrides.  NumPy's own
 * scalar types are static types; a NumPy scalar subclass written in Python
 * (a heap type) may define __array_ufunc__, so it is not plain.
 */
static inline int
ufg_is_plain_host(PyObject *obj)
{
    return ufg_is_builtin_host(obj) ||
           (PyArray_IsScalar(obj, Generic) &&
            !PyType_HasFeature(Py_TYPE(obj), Py_TPFLAGS_HEAPTYPE));
}

/* The device type of a __dlpack_device__ answer, (device_type, device_id), or
 * UFG_DLPACK_MALFORMED. */
static long
ufg_dlpack_device_tuple_type(PyObject *device)
{
    PyObject *device_type;
    long value;
    int overflow;

    if (!PyTuple_Check(device) || PyTuple_GET_SIZE(device) < 1) {
        return UFG_DLPACK_MALFORMED;
    }
    device_type = PyTuple_GET_ITEM(device, 0);
    if (!PyLong_Check(device_type)) {
        return UFG_DLPACK_MALFORMED;
    }
    value = PyLong_AsLongAndOverflow(device_type, &overflow);
    return overflow != 0 || value < 0 ? UFG_DLPACK_MALFORMED : value;
}

/* Asks the object itself; 0 with *device_type set, or -1: errors from __dlpack_device__
 * propagate because silently treating a broken device object as host memory would be
 * worse. */
static int
ufg_dlpack_device_type(PyObject *obj, long *device_type)
{
    PyObject *device = PyObject_CallMethodNoArgs(obj, ufg_dlpack_device_name);

    if (device == NULL) {
        return -1;
    }
    *device_type = ufg_dlpack_device_tuple_type(device);
    Py_DECREF(device);
    return 0;
}

/* Whether NumPy would read the object as an array of its own (the buffer protocol,
 * __array__, __array_interface__ or __array_struct__), rather than as a Python object or
 * not at all.  Only such an object can be a host argument despite a
 * __cuda_array_interface__ on its type. */
static int
ufg_numpy_reads_as_array(PyObject *obj)
{
    PyTypeObject *type = Py_TYPE(obj);

    return PyObject_CheckBuffer(obj) || _PyType_Lookup(type, ufg_array_method_name) != NULL ||
           _PyType_Lookup(type, ufg_array_interface_name) != NULL ||
           _PyType_Lookup(type, ufg_array_struct_name) != NULL;
}

/* Reads the interface of an object whose type has one: 1 if the instance has it too, 0 if
 * reading it raised AttributeError (a PyTorch CPU tensor's does: the property is on
 * torch.Tensor, the interface only on CUDA tensors), -1 with any other error set. */
static int
ufg_cuda_array_interface_is_present(PyObject *obj)
{
    PyObject *interface = PyObject_GetAttr(obj, ufg_cuda_array_interface_name);

    if (interface != NULL) {
        Py_DECREF(interface);
        return 1;
    }
    if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
        return -1;
    }
    PyErr_Clear();
    return 0;
}

/* Whether the instance's own __dict__ holds the interface: a wrapper that sets
 * self.__cuda_array_interface__ in __init__, or a types.SimpleNamespace.  CuPy and Numba
 * read it with getattr, so it counts as it does for them.  Only the dict is read, not
 * __getattr__, which answers any name on proxies and mocks.  -1 with an error set. */
static int
ufg_instance_has_cuda_array_interface(PyObject *obj)
{
    PyObject *dict;
    int found;

    if (Py_TYPE(obj)->tp_dictoffset == 0) {
        return 0;
    }
    dict = PyObject_GenericGetDict(obj, NULL);
    if (dict == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return -1;
        }
        PyErr_Clear();
        return 0;
    }
    found = PyDict_Check(dict) ? PyDict_Contains(dict, ufg_cuda_array_interface_name) : 0;
    Py_DECREF(dict);
    return found;
}

/*
 * Slow path for objects not recognised by type identity.  It asks only what can change the
 * answer, cheapest first; the interface, usually a property that builds a dict (and may
 * synchronise the device), is read last, only where nothing cheaper can tell:
 *
 *   - a __cuda_array_interface__ on a type NumPy cannot read as an array: a device buffer,
 *     by the type alone (the host path could only refuse it);
 *   - else __dlpack_device__, where the type has it: CUDA memory is a device buffer, the CPU
 *     is host memory (a PyTorch CPU tensor, whose type has the CUDA interface too);
 *   - else the interface itself, where the type has one: an instance that raises
 *     AttributeError for it is host memory, as np.add takes it (through __array__).  A
 *     device array whose type has __array__ but no __dlpack_device__ (Numba's) is read
 *     here, and again by the device path: one more read per call;
 *   - else, on a type NumPy cannot read as an array, the instance's own __dict__.
 *
 * A PyTorch tensor is asked its is_cuda first, instead: the same answer as its
 * __dlpack_device__, from a C getter, not a Python method (torch_tensors.h).
 *
 * _PyType_Lookup uses the type attribute cache and neither raises nor allocates.  Out of
 * line (like ufg_scan_keywords) so the scan over plain ndarrays and scalars compiles to a
 * short loop with no register spills.
 */
static Py_NO_INLINE int
ufg_probe_device_buffer(PyObject *obj)
{
    PyTypeObject *type = Py_TYPE(obj);
    const int has_interface = _PyType_Lookup(type, ufg_cuda_array_interface_name) != NULL;
    long device_type = UFG_DLPACK_NONE;

    if (ufg_torch_is_tensor(obj)) {
        return ufg_torch_is_cuda(obj);      /* what its __dlpack_device__ says, in C */
    }
    if (has_interface && !ufg_numpy_reads_as_array(obj)) {
        return 1;
    }
    if (_PyType_Lookup(type, ufg_dlpack_device_name) != NULL &&
        ufg_dlpack_device_type(obj, &device_type) < 0) {
        return -1;
    }
    if (device_type == UFG_DLPACK_CUDA || device_type == UFG_DLPACK_CUDA_MANAGED) {
        return 1;
    }
    if (device_type == UFG_DLPACK_CPU) {
        return 0;
    }
    /* A malformed answer from an object nothing else reads: its DLPack import, on the device
     * path, says what is wrong with it (else it would be "neither a CUDA buffer nor a
     * scalar"); one NumPy or the interface reads is judged as if it had no answer. */
    if (device_type == UFG_DLPACK_MALFORMED && !has_interface && !ufg_numpy_reads_as_array(obj)) {
        return 1;
    }
    if (!has_interface) {
        return ufg_numpy_reads_as_array(obj) ? 0 : ufg_instance_has_cuda_array_interface(obj);
    }
    return ufg_cuda_array_interface_is_present(obj);
}

/* 1: device buffer, 0: host, -1: error set. */
static inline int
ufg_is_device_buffer(PyObject *obj)
{
    if (ufg_is_known_host(obj)) {
        return 0;
    }
    return ufg_probe_device_buffer(obj);
}

int
ufg_dispatch_is_device_buffer(PyObject *obj)
{
    return ufg_is_device_buffer(obj);
}

static int
ufg_dispatch_reads_cuda_array_interface(PyObject *obj)
{
    PyTypeObject *type = Py_TYPE(obj);

    if (_PyType_Lookup(type, ufg_cuda_array_interface_name) != NULL) {
        return 1;
    }
    if (_PyType_Lookup(type, ufg_dlpack_name) != NULL) {
        return 0;
    }
    return ufg_instance_has_cuda_array_interface(obj);
}

/* The same probe for ufuncgen._device, which reads every argument of a device call with it. */
static const ufg_device_probe_api ufg_device_probe = {
    UFG_DEVICE_PROBE_VERSION, ufg_dispatch_is_device_buffer,
    ufg_dispatch_reads_cuda_array_interface, ufg_torch_is_tensor,
};

int
ufg_dispatch_register(PyObject *module)
{
    PyObject *capsule = PyCapsule_New((void *)&ufg_device_probe, UFG_DEVICE_PROBE_CAPSULE,
                                      NULL);
    int status;

    if (capsule == NULL) {
        return -1;
    }
    status = PyModule_AddObjectRef(module, "_device_probe", capsule);
    Py_DECREF(capsule);
    return status;
}

/* Keyword names are nearly always interned, so the pointer test decides;
 * the string compare covers names built at runtime (e.g. **{"out": x}). */
static inline int
ufg_is_out_keyword(PyObject *name)
{
    return name == ufg_out_name ||
           PyUnicode_CompareWithASCIIString(name, "out") == 0;
}

/* `out` may be a single array or a tuple with one entry per output. */
static Py_ssize_t
ufg_scan_out_value(PyObject *out, Py_ssize_t index)
{
    Py_ssize_t i, n;
    int found;

    if (!PyTuple_Check(out)) {
        found = ufg_is_device_buffer(out);
        if (found != 0) {
            return found < 0 ? UFG_DISPATCH_ERROR : index;
        }
        return UFG_DISPATCH_HOST;
    }
    n = PyTuple_GET_SIZE(out);
    for (i = 0; i < n; i++) {
        found = ufg_is_device_buffer(PyTuple_GET_ITEM(out, i));
        if (found != 0) {
            return found < 0 ? UFG_DISPATCH_ERROR : index;
        }
    }
    return UFG_DISPATCH_HOST;
}

/* The values of `out`, `where` and the reductions' `array` (f.reduce(array=x)): a CUDA
 * where= mask next to host values takes the device path, as a CUDA out= does, where scalars
 * run and host arrays are refused by name (NumPy would say only that it cannot convert it). */
static Py_NO_INLINE Py_ssize_t
ufg_scan_keywords(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    Py_ssize_t k, found, nkw = PyTuple_GET_SIZE(kwnames);

    for (k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        if (ufg_is_out_keyword(name)) {
            found = ufg_scan_out_value(args[nargs + k], nargs + k);
        }
        else if (name == ufg_array_name || name == ufg_where_name ||
                 (!PyUnicode_CHECK_INTERNED(name) &&
                  (PyUnicode_CompareWithASCIIString(name, "array") == 0 ||
                   PyUnicode_CompareWithASCIIString(name, "where") == 0))) {
            const int device = ufg_is_device_buffer(args[nargs + k]);
            found = device == 0 ? UFG_DISPATCH_HOST
                  : device < 0 ? UFG_DISPATCH_ERROR : nargs + k;
        }
        else {
            continue;
        }
        if (found != UFG_DISPATCH_HOST) {
            return found;
        }
    }
    return UFG_DISPATCH_HOST;
}

Py_ssize_t
ufg_dispatch_find_device_argument(PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwnames)
{
    Py_ssize_t i;
    int found;

    for (i = 0; i < nargs; i++) {
        found = ufg_is_device_buffer(args[i]);
        if (found != 0) {
            return found < 0 ? UFG_DISPATCH_ERROR : i;
        }
    }
    if (kwnames == NULL) {
        return UFG_DISPATCH_HOST;
    }
    return ufg_scan_keywords(args, nargs, kwnames);
}

/* ------------------------------------------------------------------ */
/* Plain host calls                                                     */
/* ------------------------------------------------------------------ */

/*
 * The keywords whose values NumPy asks for overrides: `out`, `where`, and
 * the reductions' `array` and `indices`.  Equal interned strings are one
 * object, so only a name built at run time needs comparing by value.
 */
static inline int
ufg_is_operand_keyword(PyObject *name)
{
    if (name == ufg_out_name || name == ufg_where_name ||
        name == ufg_array_name || name == ufg_indices_name) {
        return 1;
    }
    if (PyUnicode_CHECK_INTERNED(name)) {
        return 0;
    }
    return PyUnicode_CompareWithASCIIString(name, "out") == 0 ||
           PyUnicode_CompareWithASCIIString(name, "where") == 0 ||
           PyUnicode_CompareWithASCIIString(name, "array") == 0 ||
           PyUnicode_CompareWithASCIIString(name, "indices") == 0;
}

/* A tuple counts by its entries (`out` may be one per output). */
static Py_NO_INLINE int
ufg_plain_keywords(PyObject *const *values, PyObject *kwnames)
{
    Py_ssize_t k, i, nkw = PyTuple_GET_SIZE(kwnames);

    for (k = 0; k < nkw; k++) {
        PyObject *value = values[k];

        if (!ufg_is_operand_keyword(PyTuple_GET_ITEM(kwnames, k))) {
            continue;
        }
        if (!PyTuple_Check(value)) {
            if (!ufg_is_plain_host(value)) {
                return 0;
            }
            continue;
        }
        for (i = 0; i < PyTuple_GET_SIZE(value); i++) {
            if (!ufg_is_plain_host(PyTuple_GET_ITEM(value, i))) {
                return 0;
            }
        }
    }
    return 1;
}

/* The arguments after the exact ndarrays that lead: each one plain? */
static Py_NO_INLINE int
ufg_plain_from(PyObject *const *args, Py_ssize_t i, Py_ssize_t nargs, PyObject *kwnames)
{
    for (; i < nargs; i++) {
        if (!ufg_is_plain_host(args[i])) {
            return 0;
        }
    }
    return kwnames == NULL || ufg_plain_keywords(args + nargs, kwnames);
}

/* Exact ndarrays by position, the common call, are passed over first with one comparison
 * each: the seven of ufg_is_builtin_host, which GCC evaluates together, and the stack frame
 * they need cost about 40 instructions an argument, on a call NumPy's ufunc runs in 4,300. */
int
ufg_dispatch_is_plain_host_call(PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames)
{
    Py_ssize_t i = 0;

    while (i < nargs && PyArray_CheckExact(args[i])) {
        i++;
    }
    if (i == nargs && kwnames == NULL) {
        return 1;
    }
    return ufg_plain_from(args, i, nargs, kwnames);
}
