/*
 * bfloat16's NumPy dtype: ml_dtypes.bfloat16, a user dtype whose type number NumPy assigns
 * when ml_dtypes is imported (256 or more).  ml_dtypes is imported only when a bfloat16 is
 * asked for by name (a dtype, DLPack's kDLBfloat); recognising a descriptor never imports it,
 * since an array of that dtype cannot exist before ml_dtypes does.
 */
#ifndef UFG_DEVICE_DTYPE_BFLOAT16_H
#define UFG_DEVICE_DTYPE_BFLOAT16_H

#include "numpy_api.h"

/* ml_dtypes.bfloat16's descriptor (borrowed, kept for the process), importing ml_dtypes;
 * NULL with TypeError naming `context` when it cannot be imported. */
PyArray_Descr *ufg_bfloat16_descr_import(const char *context);

/* Whether `descr` is ml_dtypes.bfloat16's, without importing anything (no exception). */
int ufg_is_bfloat16_descr(const PyArray_Descr *descr);

/* The type number NumPy gave bfloat16, or -1 while ml_dtypes is not imported. */
int ufg_bfloat16_type_num(void);

#endif /* UFG_DEVICE_DTYPE_BFLOAT16_H */
