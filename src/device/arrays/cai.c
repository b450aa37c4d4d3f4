/*
 * DeviceArray.__cuda_array_interface__, version 3 of Numba's CUDA array interface:
 * https://numba.readthedocs.io/en/stable/cuda/cuda_array_interface.html
 */
#include "args.h"
#include "device_array.h"

#include "dtypes.h"

const char *const ufg_cai_key_names[UFG_CAI_KEYS] = {
    "shape", "typestr", "data", "version", "strides", "stream", "mask"};
static PyObject *ufg_cai_keys[UFG_CAI_KEYS];

int
ufg_cai_keys_ready(void)
{
    for (int k = 0; k < UFG_CAI_KEYS; k++) {
        if (ufg_cai_keys[k] == NULL &&
            (ufg_cai_keys[k] = PyUnicode_InternFromString(ufg_cai_key_names[k])) == NULL) {
            return -1;
        }
    }
    return 0;
}

PyObject *
ufg_cai_key_str(ufg_cai_key key)
{
    return ufg_cai_keys[key];
}

/* The export's version and type strings, made once: the property is read at every hand-over
 * to CuPy or PyTorch (each result wrapped as one of their arrays), and printing the type
 * string each time cost as much as the rest. */
static PyObject *ufg_export_version;
static PyObject *ufg_export_typestrs[UFG_DT_COUNT];

static int
ufg_export_init(void)
{
    if (ufg_export_version != NULL) {
        return 0;
    }
    if (ufg_cai_keys_ready() < 0) {
        return -1;
    }
    ufg_export_version = PyLong_FromLong(3);
    return ufg_export_version == NULL ? -1 : 0;
}

/* The type string of `code` (borrowed), made on first use. */
static PyObject *
ufg_export_typestr(ufg_dtype_code code)
{
    if (ufg_export_typestrs[code] == NULL) {
        char typestr[UFG_TYPESTR_SIZE];

        ufg_dtype_typestr(code, typestr);
        ufg_export_typestrs[code] = PyUnicode_InternFromString(typestr);
    }
    return ufg_export_typestrs[code];
}

/* result[key] = value, stealing the reference to value (NULL: an error already raised). */
static int
ufg_export_set(PyObject *result, ufg_cai_key key, PyObject *value)
{
    const int status = value == NULL ? -1
                                     : PyDict_SetItem(result, ufg_cai_key_str(key), value);

    Py_XDECREF(value);
    return status;
}

/* The interface's (pointer, read_only) pair. */
static PyObject *
ufg_export_data(unsigned long long ptr, int readonly)
{
    PyObject *pointer = PyLong_FromUnsignedLongLong(ptr), *data;

    if (pointer == NULL) {
        return NULL;
    }
    data = PyTuple_Pack(2, pointer, readonly ? Py_True : Py_False);
    Py_DECREF(pointer);
    return data;
}

PyObject *
ufg_device_array_cai(ufg_DeviceArrayObject *self, void *Py_UNUSED(closure))
{
    /* CAI v3 forbids stream 0 (legacy or per-thread default?); our 0 is the legacy stream.
     * The memory's last use, which may be another view's (or the viewed array's). */
    const uintptr_t last = ufg_device_array_last_use(self);
    const uintptr_t stream = last != 0 ? last : UFG_STREAM_LEGACY;
    /* The interface's rule: 0 for a zero-size array, whose pointer addresses nothing. */
    const unsigned long long ptr = ufg_device_array_size(self) == 0
                                       ? 0ull : (unsigned long long)(uintptr_t)self->ptr;
    PyObject *result, *typestr;
    int status;

    if (ufg_export_init() < 0 || (typestr = ufg_export_typestr(self->code)) == NULL ||
        (result = PyDict_New()) == NULL) {
        return NULL;
    }
    status = ufg_export_set(result, UFG_CAI_SHAPE,
                            ufg_int64_tuple_new(self->shape, self->ndim)) < 0 ||
             ufg_export_set(result, UFG_CAI_TYPESTR, Py_NewRef(typestr)) < 0 ||
             ufg_export_set(result, UFG_CAI_DATA, ufg_export_data(ptr, self->readonly)) < 0 ||
             ufg_export_set(result, UFG_CAI_VERSION, Py_NewRef(ufg_export_version)) < 0 ||
             /* None marks C-contiguous data, as the interface prefers. */
             ufg_export_set(result, UFG_CAI_STRIDES,
                            ufg_device_array_is_c_contiguous(self)
                                ? Py_NewRef(Py_None)
                                : ufg_int64_tuple_new(self->strides, self->ndim)) < 0 ||
             ufg_export_set(result, UFG_CAI_STREAM,
                            self->exports_no_stream ? Py_NewRef(Py_None)
                                                    : PyLong_FromUnsignedLongLong(stream)) < 0;
    if (status) {
        Py_DECREF(result);
        return NULL;
    }
    return result;
}
