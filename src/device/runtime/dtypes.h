/*
 * The element types device arrays hold: every type signature files can name (bool,
 * int8..uint64, float16, float32, float64, complex64, complex128, and bfloat16 as
 * ml_dtypes.bfloat16), and their spellings in NumPy, the CUDA array interface and DLPack.
 */
#ifndef UFG_DEVICE_DTYPES_H
#define UFG_DEVICE_DTYPES_H

#include "numpy_api.h"

#include "cast.h"
#include "dlpack.h"

/*
 * Converts anything np.dtype() accepts into a supported, native-byte-order dtype.
 * Returns the cast kernel's code and a new reference in *descr, or -1 with TypeError set
 * naming `argname`, the supported types and what was given.
 */
int ufg_dtype_convert(PyObject *obj, const char *argname, PyArray_Descr **descr);

/* The code of a descriptor that ufg_dtype_convert accepted. */
ufg_dtype_code ufg_dtype_code_of(const PyArray_Descr *descr);

/* The code of any descriptor: -1 (no exception) unless it is a supported type in native byte
 * order. */
int ufg_dtype_code_of_supported(const PyArray_Descr *descr);

/* The code of a NumPy type number (aliases such as NPY_LONG included; bfloat16's, assigned at
 * run time, once ml_dtypes is imported), or -1. */
int ufg_dtype_code_of_type_num(int type_num);

/* NumPy's sized type number of a code (NPY_FLOAT16, ...; bfloat16's, or -1 while ml_dtypes is
 * not imported). */
int ufg_dtype_type_num(ufg_dtype_code code);

/* The name of a code ("float16"). */
const char *ufg_dtype_name(ufg_dtype_code code);

/* The canonical descriptor of a code (a new reference); bfloat16's imports ml_dtypes (NULL
 * with TypeError when it cannot). */
PyArray_Descr *ufg_dtype_descr(ufg_dtype_code code);

/* The DLPack type of a code. */
DLDataType ufg_dtype_to_dlpack(ufg_dtype_code code);

/* The code of a DLPack type, or -1 with TypeError set when it is not supported. */
int ufg_dtype_from_dlpack(DLDataType type, const char *context);

/* The CAI typestr of a type ("<f8", "|b1", "<c16"; "<V2" for bfloat16, which the interface has
 * no spelling for), into a buffer of UFG_TYPESTR_SIZE. */
#define UFG_TYPESTR_SIZE 8
void ufg_dtype_typestr(ufg_dtype_code code, char *buffer);

/* The supported dtypes' names as a new tuple, in code order ("bool", ..., "float64"). */
PyObject *ufg_dtype_supported_names(void);

#endif /* UFG_DEVICE_DTYPES_H */
