/*
 * The supported element types and their spellings in NumPy, CAI and DLPack.
 */
#include "dtypes.h"
#include "dtype_bfloat16.h"

#include <string.h>

typedef struct {
    const char *name;
    char kind;              /* NumPy's dtype.kind */
    int itemsize;
    int type_num;           /* NumPy's sized type number; UFG_NPY_RUNTIME_TYPE for bfloat16 */
    uint8_t dlpack_code;
} ufg_dtype_info;

/* One row per element type of the generator's table (ufuncgen/element_types.h). */
#define UFG_DTYPE_ROW(CODE, name, c_type, npy_enum, itemsize, kind_char, kind, dlpack_code) \
    [UFG_DT_##CODE] = {name, kind_char, itemsize, npy_enum, dlpack_code},
static const ufg_dtype_info ufg_dtypes[UFG_DT_COUNT] = {UFG_ELEMENT_TYPES(UFG_DTYPE_ROW)};
#undef UFG_DTYPE_ROW

/* One of NumPy's own types by kind and size (bfloat16, not NumPy's, is found by its type
 * number: ufg_dtype_lookup_descr). */
static int
ufg_dtype_lookup(char kind, int itemsize)
{
    for (int code = 0; code < UFG_DT_COUNT; code++) {
        if (ufg_dtypes[code].type_num != UFG_NPY_RUNTIME_TYPE &&
            ufg_dtypes[code].kind == kind && ufg_dtypes[code].itemsize == itemsize) {
            return code;
        }
    }
    return -1;
}

static int
ufg_dtype_lookup_descr(const PyArray_Descr *descr)
{
    if (PyTypeNum_ISUSERDEF(descr->type_num)) {
        return ufg_is_bfloat16_descr(descr) ? UFG_DT_BFLOAT16 : -1;
    }
    return ufg_dtype_lookup(descr->kind, (int)descr->elsize);
}

static int
ufg_dtype_unsupported(const char *argname, PyObject *given, const char *why)
{
    PyErr_Format(PyExc_TypeError,
                 "%s: device arrays hold %s%s; got %R", argname, UFG_ELEMENT_TYPE_NAMES, why,
                 given);
    return -1;
}

int
ufg_dtype_convert(PyObject *obj, const char *argname, PyArray_Descr **descr)
{
    PyArray_Descr *given = NULL;
    int code;

    /* PyArray_DescrConverter turns None into float64; a missing dtype is an error here. */
    if (obj == Py_None) {
        PyErr_Format(PyExc_TypeError, "%s: expected a dtype (%s), got None", argname,
                     UFG_ELEMENT_TYPE_NAMES);
        return -1;
    }
    /* The name imports ml_dtypes, which np.dtype("bfloat16") needs first. */
    if (PyUnicode_Check(obj) && PyUnicode_CompareWithASCIIString(obj, "bfloat16") == 0) {
        *descr = (PyArray_Descr *)Py_XNewRef((PyObject *)ufg_bfloat16_descr_import(argname));
        return *descr == NULL ? -1 : UFG_DT_BFLOAT16;
    }
    if (!PyArray_DescrConverter(obj, &given)) {
        PyErr_Clear();
        return ufg_dtype_unsupported(argname, obj, "");
    }
    code = ufg_dtype_lookup_descr(given);
    if (code < 0 || PyDataType_HASFIELDS(given) || PyDataType_HASSUBARRAY(given)) {
        ufg_dtype_unsupported(argname, (PyObject *)given, "");
        Py_DECREF(given);
        return -1;
    }
    if (!PyArray_ISNBO(given->byteorder)) {
        ufg_dtype_unsupported(argname, (PyObject *)given, " in native byte order");
        Py_DECREF(given);
        return -1;
    }
    Py_DECREF(given);
    *descr = ufg_dtype_descr((ufg_dtype_code)code);
    return *descr == NULL ? -1 : code;
}

ufg_dtype_code
ufg_dtype_code_of(const PyArray_Descr *descr)
{
    return (ufg_dtype_code)ufg_dtype_lookup_descr(descr);
}

int
ufg_dtype_code_of_supported(const PyArray_Descr *descr)
{
    if (!PyArray_ISNBO(descr->byteorder) || PyDataType_HASFIELDS(descr) ||
        PyDataType_HASSUBARRAY(descr)) {
        return -1;
    }
    if (descr->type_num >= NPY_NTYPES_LEGACY) {
        return ufg_is_bfloat16_descr(descr) ? UFG_DT_BFLOAT16 : -1;
    }
    return ufg_dtype_lookup(descr->kind, (int)descr->elsize);
}

int
ufg_dtype_code_of_type_num(int type_num)
{
    /* Filled once from NumPy's own descriptors, so that aliases (NPY_LONG, NPY_LONGLONG)
     * land on the sized type they are on this platform. */
    static signed char codes[NPY_NTYPES_LEGACY];
    static int filled = 0;

    if (!filled) {
        for (int t = 0; t < NPY_NTYPES_LEGACY; t++) {
            PyArray_Descr *descr = PyArray_DescrFromType(t);
            codes[t] = -1;
            if (descr == NULL) {
                PyErr_Clear();
                continue;
            }
            codes[t] = (signed char)ufg_dtype_code_of_supported(descr);
            Py_DECREF(descr);
        }
        filled = 1;
    }
    if (type_num >= NPY_NTYPES_LEGACY) {
        return type_num == ufg_bfloat16_type_num() ? UFG_DT_BFLOAT16 : -1;
    }
    return type_num >= 0 ? codes[type_num] : -1;
}

int
ufg_dtype_type_num(ufg_dtype_code code)
{
    return code == UFG_DT_BFLOAT16 ? ufg_bfloat16_type_num() : ufg_dtypes[code].type_num;
}

const char *
ufg_dtype_name(ufg_dtype_code code)
{
    return ufg_dtypes[code].name;
}

PyArray_Descr *
ufg_dtype_descr(ufg_dtype_code code)
{
    if (code == UFG_DT_BFLOAT16) {
        PyArray_Descr *descr = ufg_bfloat16_descr_import("dtype bfloat16");
        return (PyArray_Descr *)Py_XNewRef((PyObject *)descr);
    }
    return PyArray_DescrFromType(ufg_dtypes[code].type_num);
}

DLDataType
ufg_dtype_to_dlpack(ufg_dtype_code code)
{
    const DLDataType type = {
        ufg_dtypes[code].dlpack_code, (uint8_t)(8 * ufg_dtypes[code].itemsize), 1};
    return type;
}

int
ufg_dtype_from_dlpack(DLDataType type, const char *context)
{
    static const char kinds[] = {
        [kDLInt] = 'i', [kDLUInt] = 'u', [kDLFloat] = 'f', [kDLBool] = 'b', [kDLComplex] = 'c'};
    int code = -1;

    if (type.code < sizeof(kinds) && kinds[type.code] != 0 && type.bits % 8 == 0) {
        code = ufg_dtype_lookup(kinds[type.code], type.bits / 8);
    }
    else if (type.code == kDLBfloat && type.bits == 16) {
        code = UFG_DT_BFLOAT16;
    }
    if (type.lanes != 1) {
        PyErr_Format(PyExc_TypeError,
                     "%s: DLPack tensors with %u lanes (vector elements) are not supported; "
                     "device arrays hold one scalar per element (lanes == 1)",
                     context, (unsigned)type.lanes);
        return -1;
    }
    if (code < 0) {
        static const char *const names[] = {
            "kDLInt", "kDLUInt", "kDLFloat", "kDLOpaqueHandle", "kDLBfloat", "kDLComplex",
            "kDLBool"};
        PyErr_Format(PyExc_TypeError,
                     "%s: DLPack dtype (code %u %s, bits %u) is not supported; device arrays "
                     "hold %s", context, (unsigned)type.code,
                     type.code < 7 ? names[type.code] : "(unknown)", (unsigned)type.bits,
                     UFG_ELEMENT_TYPE_NAMES);
        return -1;
    }
    /* A bfloat16 tensor becomes an ml_dtypes.bfloat16 array: that needs ml_dtypes. */
    if (code == UFG_DT_BFLOAT16 && ufg_bfloat16_descr_import(context) == NULL) {
        return -1;
    }
    return code;
}

static int
ufg_dtype_little_endian(void)
{
    const int one = 1;
    return *(const char *)&one == 1;
}

void
ufg_dtype_typestr(ufg_dtype_code code, char *buffer)
{
    /* The interface has no bfloat16: ml_dtypes' own __array_interface__ says "<V2" (two bytes
     * of data, the bits kept, nothing read as a float16 by mistake), as JAX's dtype.str does. */
    if (code == UFG_DT_BFLOAT16) {
        PyOS_snprintf(buffer, UFG_TYPESTR_SIZE, "%cV2", ufg_dtype_little_endian() ? '<' : '>');
        return;
    }
    const int itemsize = ufg_dtypes[code].itemsize;

    PyOS_snprintf(buffer, UFG_TYPESTR_SIZE, "%c%c%d",
                  itemsize == 1 ? '|' : (ufg_dtype_little_endian() ? '<' : '>'),
                  ufg_dtypes[code].kind, itemsize);
}

PyObject *
ufg_dtype_supported_names(void)
{
    /* The names in code order are the message's list, split: one spelling of them. */
    PyObject *joined = PyUnicode_FromString(UFG_ELEMENT_TYPE_NAMES), *names, *tuple;

    if (joined == NULL) {
        return NULL;
    }
    names = PyObject_CallMethod(joined, "split", "s", ", ");
    Py_DECREF(joined);
    if (names == NULL) {
        return NULL;
    }
    tuple = PySequence_Tuple(names);
    Py_DECREF(names);
    return tuple;
}
