/*
 * What the device's .reduce (reduce.c), .accumulate (accumulate.c) and .reduceat
 * (reduceat.c) share (reduction.c).
 * Messages start with `prefix`, the method as the caller spelled it: "add.reduce".
 */
#ifndef UFG_DEVICE_REDUCTION_H
#define UFG_DEVICE_REDUCTION_H

#include "call.h"

/* Splitting one output's elements into chunks (associative functions only), for reductions
 * and scans alike: threads per multiprocessor to aim for, and the least elements to split a
 * reduction's and a scan's lines (a scan's are split sooner: one thread scanning 4,096
 * elements in turn waits on each load, and a split scan reads every element only twice). */
#define UFG_REDUCE_THREADS_PER_SM 2048
#define UFG_REDUCE_MIN_SPLIT 4096
#define UFG_ACCUMULATE_MIN_SPLIT 1024
/* The least elements per chunk, of the array and then of the partial results (or totals):
 * each is one thread's serial loop, and a step that leaves many partial results costs only a
 * launch more (one thread adding 131,072 partial results in turn took 7.5 ms of a 7.7 ms sum
 * of 2**27 float32 on an H200).  A reduction's steps at most: the last reduces whatever is
 * left. */
#define UFG_REDUCE_CHUNK 64
#define UFG_REDUCE_MAX_STEPS 6

/* How many chunks to split each of n_out outputs' n elements into: enough to give every
 * one of `threads` threads a chunk, none shorter than `least`; 1 for no split. */
int64_t ufg_reduction_chunk_count(int64_t n, int64_t n_out, int64_t threads, int64_t least);

/* numpy._NoValue, once ufg_reduction_init has run (which imports AxisError too). */
extern PyObject *ufg_reduction_no_value;

/* Looks up NumPy's objects and the resolution call's strings, once. */
int ufg_reduction_init(void);

/* The number of elements of a shape (0 when any extent is 0). */
int64_t ufg_reduction_product(int ndim, const int64_t *shape);

/* ufg_collapse, with ValueError past the kernels' dimension limit. */
int ufg_reduction_collapse(int ndim, int64_t *shape, int nops,
                           int64_t (*strides)[UFG_CALL_MAX_NDIM]);

/* The lines along one axis of an array, as the accumulate and reduceat kernels take them:
 * every other axis (merged where contiguous), with the strides of the kernel's input and
 * output over those axes. */
typedef struct {
    int keep_ndim;
    int64_t keep_shape[UFG_DEVICE_MAX_DIMS];
    int64_t in_keep[UFG_DEVICE_MAX_DIMS], out_keep[UFG_DEVICE_MAX_DIMS];
    int64_t n_lines;
} ufg_reduction_lines;

/* The lines of a `shape` along `axis`, from the input's and the output's strides over all
 * axes; ValueError past the kernels' dimension limit. */
int ufg_reduction_plan_lines(int ndim, const int64_t *shape, int axis,
                             const int64_t *in_strides, const int64_t *out_strides,
                             ufg_reduction_lines *lines);

/* Whether a cast over `shape` with these strides fits the kernels after merging. */
int ufg_reduction_check_cast(int ndim, const int64_t *shape, const int64_t *src_strides,
                             const int64_t *dst_strides);

/* The function can run `method` ("accumulate"): a binary, elementwise function with device
 * kernels, refused otherwise with NumPy's exception types. */
int ufg_reduction_check_function(const char *prefix, const char *method,
                                 const ufg_function_descriptor *fn);

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
 * TypeError saying that `device_what`, which sent the call to the device, is one), read on `*stream`: stream= when stream_given, else the array's library's
 * current stream, whose owner *keeper then holds (a new reference, or NULL); a stream of
 * another device than the array's is a ValueError.  -1 with an exception, having released
 * what it took. */
int ufg_reduction_array(const char *prefix, const char *what, PyObject *array_obj,
                        const char *device_what, int stream_given, uintptr_t *stream,
                        PyObject **keeper, ufg_operand *array);

/* The stream a reduction, an accumulation or an .at runs on is one of `device`'s, where its
 * array (`argument`: "argument 'array'") is (stream_device.h); messages start with `prefix`
 * ("add.reduce").  -1 with ValueError. */
int ufg_reduction_check_stream(const char *prefix, uintptr_t stream, int stream_given,
                               int device, const char *argument);

/* The state of a checked reduction or accumulation about to run on `stream` (its owner:
 * stream_obj's when given, else default_keeper; borrowed), or NULL with MemoryError.  Freed
 * by ufg_reduction_call_free. */
ufg_call *ufg_reduction_call_new(const ufg_function_descriptor *fn, PyObject *ufunc,
                                 const ufg_backend *backend, uintptr_t stream,
                                 PyObject *stream_obj, PyObject *default_keeper, int device,
                                 int loop_index);
void ufg_reduction_call_free(ufg_call *c);

/* The buffers of a checked .accumulate or .reduceat around its kernel: what the kernel reads
 * (the array, or a copy of its data in the accumulator's dtype: ufg_call_copy_data, C order
 * with the broadcast axes kept at stride 0) and writes (out=, or a new C-contiguous result
 * in the accumulator's dtype, cast into out= after). */
typedef struct {
    const ufg_operand *in;
    const ufg_operand *target;
    ufg_operand copy, fresh;
    ufg_DeviceArrayObject *result;  /* the new result (the call owns it), or NULL */
} ufg_reduction_buffers;

/* Waits for the array and out= (NULL: none) on the call's stream and notes their use, then
 * makes the buffers: a copy when copy_input, a new result of result_shape unless direct. */
int ufg_reduction_buffers_new(ufg_call *c, const ufg_operand *array, const ufg_operand *out,
                              ufg_dtype_code acc, int copy_input, int direct, int result_ndim,
                              const int64_t *result_shape, ufg_reduction_buffers *b);

/* After the kernel: the new result cast into out=, and the call's answer, a new reference:
 * out_obj, or the result as the array's library's type. */
PyObject *ufg_reduction_buffers_finish(ufg_call *c, const ufg_reduction_buffers *b,
                                       PyObject *array_obj, PyObject *out_obj,
                                       const ufg_operand *out);

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

/* ------------------------------------------------------------------ one call, in order */

/* .accumulate and .reduceat as their checks go, step by step (reduction.c): the arguments,
 * the stream, the operands, the loop, and what the call releases at its end. */
#define UFG_REDUCTION_MAX_ARGS 8

typedef enum { UFG_REDUCTION_ACCUMULATE, UFG_REDUCTION_REDUCEAT } ufg_reduction_method;

typedef struct {
    const ufg_function_descriptor *fn;
    PyObject *ufunc;
    ufg_reduction_method method;
    char prefix[160], what[200], out_what[200];     /* "add.accumulate", ... */
    PyObject *values[UFG_REDUCTION_MAX_ARGS];       /* borrowed; NULL: not given */
    int count;                                      /* of values; stream= is the last */
    const ufg_backend *backend;
    uintptr_t stream;
    PyObject *default_keeper;       /* the default stream's owner, when not stream= */
    ufg_operand array, out;
    int have_array, have_out;
    PyObject *out_obj;              /* borrowed, NULL: a new result */
    PyArray_Descr *dtype;           /* dtype=, or NULL */
    ufg_reduce_resolution scratch;
    int loop_index;
    ufg_dtype_code acc;
    ufg_reduce_launcher launcher;
    ufg_call *c;
} ufg_reduction_session;

/* The function checked, the arguments parsed (names: count of them, the first `positional`
 * by position too, stream= last; supported: the keywords, for the message about another),
 * stream= read, and the array taken.  -1 with an exception; either way ufg_reduction_end
 * releases what was taken. */
int ufg_reduction_begin(ufg_reduction_session *s, const ufg_function_descriptor *fn,
                        PyObject *ufunc, ufg_reduction_method method,
                        const char *const *names, int count, int positional,
                        const char *supported, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames);

/* out= (None, an array or a tuple of one) taken, of the result's shape. */
int ufg_reduction_take_out(ufg_reduction_session *s, PyObject *value, int ndim,
                           const int64_t *shape);

/* NumPy's reduction resolution: the loop, the accumulator and the method's launcher, then the
 * operands' alignment. */
int ufg_reduction_pick_loop(ufg_reduction_session *s);

/* Everything is checked: the call's state, to run on the session's stream. */
int ufg_reduction_open_call(ufg_reduction_session *s);

/* Releases what the session took; returns `result`. */
PyObject *ufg_reduction_end(ufg_reduction_session *s, PyObject *result);

#endif /* UFG_DEVICE_REDUCTION_H */
