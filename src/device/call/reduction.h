/*
 * What the device's .reduce (reduce.c) and .accumulate (accumulate.c) share (reduction.c).
 * Messages start with `prefix`, the method as the caller spelled it: "add.reduce".
 */
#ifndef UFG_DEVICE_REDUCTION_H
#define UFG_DEVICE_REDUCTION_H

#include "call.h"

/* Splitting one output's elements into chunks (associative functions only), for reductions
 * and scans alike: threads per multiprocessor to aim for, the least elements to split, and
 * the least per chunk. */
#define UFG_REDUCE_THREADS_PER_SM 2048
#define UFG_REDUCE_MIN_SPLIT 4096
#define UFG_REDUCE_MIN_CHUNK 1024

/* numpy.exceptions.AxisError and numpy._NoValue, once ufg_reduction_init has run. */
extern PyObject *ufg_reduction_axis_error;
extern PyObject *ufg_reduction_no_value;

/* Looks up NumPy's objects and the resolution call's strings, once. */
int ufg_reduction_init(void);

/* The number of elements of a shape (0 when any extent is 0). */
int64_t ufg_reduction_product(int ndim, const int64_t *shape);

/* ufg_collapse, with ValueError past the kernels' dimension limit. */
int ufg_reduction_collapse(int ndim, int64_t *shape, int nops,
                           int64_t (*strides)[UFG_CALL_MAX_NDIM]);

/* Whether a cast over `shape` with these strides fits the kernels after merging. */
int ufg_reduction_check_cast(int ndim, const int64_t *shape, const int64_t *src_strides,
                             const int64_t *dst_strides);

/* The vectorcall arguments into values[count] (borrowed; NULL: not given): the first
 * `positional` of `names` by position or keyword, the rest by keyword only; values[0], the
 * array, is required.  `supported` lists the names for the message about any other. */
int ufg_reduction_parse(const char *prefix, const char *const *names, int count, int positional,
                        const char *supported, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames, PyObject **values);

/* axis= as NumPy converts it for .reduce and .accumulate: None is every axis; an integer is
 * one axis (but 0 or -1 of a 0-d array is none, as for a scalar); a tuple is its items, each
 * converted then bounds-checked in order (TypeError for a non-integer, AxisError outside
 * [-ndim, ndim)); NULL (not given) is axis 0.  axes[] gets the first UFG_CALL_MAX_NDIM axes,
 * normalized into [0, ndim), and *count all of them (duplicates included). */
int ufg_reduction_axes(const char *prefix, PyObject *axis, int ndim, int *axes,
                       Py_ssize_t *count);

/* out= of the result: writable, of the result's shape, on the array's device. */
int ufg_reduction_check_out(const char *prefix, const ufg_operand *array, int ndim,
                            const int64_t *shape, const ufg_operand *out);

/* out=: None, an array, or a tuple of one array.  *out_obj is borrowed (NULL: allocate). */
int ufg_reduction_out_object(const char *prefix, PyObject *value, PyObject **out_obj);

/* The caller's out= as an operand: a CUDA array (a host one is TypeError) on `stream`. */
int ufg_reduction_out_operand(const char *prefix, PyObject *out_obj, const char *what,
                              const ufg_operand *array, uintptr_t stream, ufg_operand *out);

/* What every reduction or accumulation does once its arguments are parsed: stream= read
 * (into *stream, when given), NumPy's objects looked up, the backend found (*backend) and the
 * memory of finished work released. */
int ufg_reduction_start(PyObject *stream_obj, uintptr_t *stream, const ufg_backend **backend);

/* What every reduction or accumulation releases at its end: the call, dtype=, the default
 * stream's owner, and the operands held (NULL: none). */
void ufg_reduction_finish(ufg_call *c, PyArray_Descr *dtype, PyObject *default_keeper,
                          ufg_operand *out, ufg_operand *array);

/* The array of a reduction or accumulation, `what` in messages: a CUDA array (a host one is a
 * TypeError), read on `*stream`: stream= when stream_given, else the array's library's
 * current stream, whose owner *keeper then holds (a new reference, or NULL).  -1 with an
 * exception, having released what it took. */
int ufg_reduction_array(const char *what, PyObject *array_obj, int stream_given,
                        uintptr_t *stream, PyObject **keeper, ufg_operand *array);

/* The state of a checked reduction or accumulation about to run on `stream` (its owner:
 * stream_obj's when given, else default_keeper; borrowed), or NULL with MemoryError.  Freed
 * by ufg_reduction_call_free. */
ufg_call *ufg_reduction_call_new(const ufg_function_descriptor *fn, PyObject *ufunc,
                                 const ufg_backend *backend, uintptr_t stream,
                                 PyObject *stream_obj, PyObject *default_keeper, int device,
                                 int loop_index);
void ufg_reduction_call_free(ufg_call *c);

/* NumPy's reduction resolution per (function, array dtype, dtype=, out= dtype): the loop and
 * the accumulator, or loop -1 (no device loop takes and gives one type).  Filled under the
 * GIL; an entry is written whole once resolve_dtypes has answered, so a duplicate is the worst
 * a thread switch can cause. */
typedef struct {
    const ufg_function_descriptor *fn;
    signed char array_code, dtype_code, out_code;   /* -1: not given */
    signed char acc;
    int loop_index;
    int identity_packed;            /* identity holds the function's identity as acc */
    ufg_value identity;
} ufg_reduce_resolution;

/* The resolution, from the cache or NumPy.  NULL with an exception; else an entry whose
 * loop_index may be -1.  A dtype= outside the supported codes is resolved uncached into
 * *scratch. */
ufg_reduce_resolution *ufg_reduction_resolve(const char *prefix,
                                             const ufg_function_descriptor *fn,
                                             PyObject *ufunc, PyArray_Descr *dtype,
                                             const ufg_operand *array, const ufg_operand *out,
                                             ufg_reduce_resolution *scratch);

#endif /* UFG_DEVICE_REDUCTION_H */
