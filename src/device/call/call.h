/*
 * The device call's contract: what every stage of a call with CUDA arguments reads and fills.
 *
 * call.c runs the stages in order, each in its own file:
 *
 *   keywords.c    the vectorcall keywords: out=, dtype=, casting=, where=, axes=, stream=, ...
 *   operands.c    each argument as a buffer (DeviceArray, CUDA array interface v3, DLPack) or
 *                 a scalar; the devices agree
 *   resolve.c     the loop NumPy would pick, cached per (function, dtypes, dtype=, casting)
 *   shapes.c      elementwise broadcasting, and the shapes of the outputs
 *   core_dims.c   a gufunc's axes=/axis=/keepdims= and core dimension sizes
 *   plan.c        outputs and temporaries, casts, overlap copies, collapse, launch
 *   numpy_order.c the order NumPy writes an out= whose elements share memory (plan.c asks)
 *   results.c     results as the caller's library's arrays
 *
 * reduce.c is `function.reduce` on the device, from the same pieces.  A refused call has
 * written nothing: every check runs before the first allocation or launch.
 */
#ifndef UFG_DEVICE_CALL_CALL_H
#define UFG_DEVICE_CALL_CALL_H

#include "numpy_api.h"

#include <stdint.h>

#include "ufuncgen/descriptor.h"
#include "ufuncgen/device_call.h"

#include "backend.h"
#include "cast.h"
#include "device_array.h"
#include "launch.h"
#include "stream_arg.h"

/* Inputs + outputs of one function (the host's limit) and dimensions of one operand
 * (NumPy's). */
#define UFG_CALL_MAX_OPERANDS 16
#define UFG_CALL_MAX_NDIM 64

typedef enum {
    UFG_OPERAND_ABSENT = 0,         /* an output to allocate */
    UFG_OPERAND_BUFFER,             /* device memory */
    UFG_OPERAND_SCALAR,             /* a Python or NumPy scalar, passed to the kernel by value */
} ufg_operand_kind;

/* One argument of a call (or a temporary): a strided view of device memory, or a scalar. */
typedef struct {
    ufg_operand_kind kind;
    PyObject *obj;                  /* borrowed: what the caller passed */
    /* A buffer. */
    char *ptr;
    int ndim;
    int64_t shape[UFG_CALL_MAX_NDIM];
    int64_t strides[UFG_CALL_MAX_NDIM];     /* bytes */
    ufg_dtype_code code;
    int device;
    int readonly;
    int has_producer;               /* CAI v3 'stream': work to wait for before reading */
    uintptr_t producer;
    PyObject *owner;                /* a new reference or NULL: keeps imported memory alive */
    /* A scalar: Python int, float and complex are "weak" (NEP 50: the arrays' dtypes decide); a Python
     * bool or a NumPy scalar has the dtype `code`. */
    int weak;                       /* 0, or 'i' / 'f' / 'c': a Python int / float / complex */
} ufg_operand;

/* where=: every element, none (where=False), or a bool mask buffer. */
typedef enum { UFG_WHERE_ALL, UFG_WHERE_NONE, UFG_WHERE_MASK } ufg_where_kind;

typedef struct {
    const ufg_function_descriptor *fn;
    PyObject *ufunc;                /* borrowed: its np.ufunc, asked on a resolution miss */
    const ufg_backend *backend;
    int nin, nout, nargs;           /* nargs = nin + nout */
    int outer;                      /* ufunc.outer: input 0's axes come before input 1's */

    /* keywords.c: borrowed values, NULL where the keyword was not given; dtype= converted
     * (a new reference, native byte order: ufg_dtype_keyword). */
    PyArray_Descr *dtype;
    PyObject *signature;            /* signature=, borrowed; NULL when absent or None */
    PyObject *axes, *axis;          /* Py_None when given as None (NumPy refuses that) */
    int keepdims_given;             /* keepdims= given at all, even False */
    int keepdims_set;               /* keepdims given and true */
    NPY_CASTING casting;
    int fortran_results;            /* order='F': new gufunc results Fortran-contiguous */
    NPY_ORDER order;                /* order=, NPY_KEEPORDER when not given: how NumPy nests
                                     * the loop axes and lays out new elementwise results
                                     * (numpy_order.c) */
    ufg_where_kind where_kind;
    PyObject *where;                /* the mask object for UFG_WHERE_MASK */
    int where_without_out;          /* NumPy's warning: where= without out= */
    uintptr_t stream;
    int stream_given;               /* stream= given, and not None */
    PyObject *stream_keeper;        /* the stream object owning `stream`, or NULL: borrowed
                                     * from stream=, or the default's, held in owned[] */

    /* operands.c: inputs, then outputs (ABSENT: allocate); the mask. */
    ufg_operand ops[UFG_CALL_MAX_OPERANDS];
    ufg_operand mask;
    int device;
    int anchor;                     /* the first operand that is a buffer */

    /* resolve.c; int_values[k]: input k, a Python int, packed into its loop type */
    int loop_index;
    ufg_dtype_code loop_codes[UFG_CALL_MAX_OPERANDS];
    ufg_value int_values[UFG_CALL_MAX_OPERANDS];

    /* shapes.c / core_dims.c: the kernel's view of the call.  Buffers in ops[] are rewritten
     * in kernel layout (a gufunc's core axes moved last, in layout order).  For every output,
     * out_shape is the shape the caller gets and out_axes[j][i] the caller's axis that the
     * kernel's axis i is (kernel axes: loop axes, then core axes); with keepdims an output
     * has caller axes (size 1) the kernel does not see. */
    int loop_ndim;
    int64_t loop_shape[UFG_CALL_MAX_NDIM];
    int64_t core_sizes[UFG_DEVICE_MAX_CORE_DIMS];   /* per distinct core dimension */
    int out_ndim[UFG_CALL_MAX_OPERANDS];
    int64_t out_shape[UFG_CALL_MAX_OPERANDS][UFG_CALL_MAX_NDIM];
    int out_kernel_ndim[UFG_CALL_MAX_OPERANDS];
    int out_axes[UFG_CALL_MAX_OPERANDS][UFG_CALL_MAX_NDIM];

    /* Owned references released by ufg_call_release: temporaries and new results. */
    PyObject *owned[2 * UFG_CALL_MAX_OPERANDS + 4];
    int nowned;
} ufg_call;

/* ------------------------------------------------------------------ the stages */

/* keywords.c: where= given as a host value, read as NumPy reads it (np.asarray(where,
 * dtype=bool)): None, 0 and '' mean False, 1.5 or 'x' True.  0 with *value set when it is
 * such a value; 1 for a device object or a host array or sequence (a mask, which the caller
 * takes from the device or refuses); -1 with NumPy's conversion error. */
int ufg_where_from_host_value(PyObject *where, int *value);
/* keywords.c: dtype= as NumPy reads it (a DType: its byte order may not be chosen); *descr a
 * new reference, NULL for None or not given.  `who` starts the message. */
int ufg_dtype_keyword(const char *who, PyObject *value, PyArray_Descr **descr);
int ufg_call_parse_keywords(ufg_call *c, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames, PyObject **outs);
int ufg_call_classify_operands(ufg_call *c, PyObject *const *inputs, PyObject *const *outs);
int ufg_call_resolve_types(ufg_call *c);
int ufg_call_broadcast(ufg_call *c);
int ufg_call_core_dims(ufg_call *c);
/* Allocates, copies, casts and launches; returns the results (a new reference: one object,
 * or a tuple for several outputs), or NULL with an exception. */
PyObject *ufg_call_run(ufg_call *c);
void ufg_call_release(ufg_call *c);

/* ------------------------------------------------------------------ shared pieces */

/* call.c: the call's stream waits for what op's memory was last used by (a DeviceArray's
 * last use, read or write, or a foreign producer's CAI v3 stream); -1 with an exception.
 * Once work using it is queued, ufg_call_note_use records the call's stream on a DeviceArray
 * (and on the allocation it views), so its next user and its free come after; a foreign
 * array used on a stream= of the caller's is kept alive until the stream has passed the
 * work (keepalive.h).  -1 with an exception. */
int ufg_call_wait_for_operand(ufg_call *c, const ufg_operand *op);
int ufg_call_note_use(ufg_call *c, const ufg_operand *op);

/* Re-raises the exception being raised as the same type, its message after "prefix: ".
 * NumPy's UFuncTypeError family is left as NumPy raised it: its class is what a host call
 * raises (and callers catch), and its message names the ufunc already. */
void ufg_prefix_error(const char *prefix);

/* numpy_errors.c: raises NumPy's _UFuncInputCastingError / _UFuncOutputCastingError (casting
 * is the rule's name, index the input's or output's position), as a host call refusing the
 * same cast does; returns -1. */
/* NumPy's conversion of the call's Python scalars where signature= fixes their types: the
 * host ufunc called on empty stand-ins for the buffers, with signature= and casting=.  NumPy
 * converts such a scalar straight to the fixed type (float(1j) and int(nan) raise; under
 * casting='no' 2.5 becomes 2), where a scalar it types itself is cast.  -1 with NumPy's
 * exception, as the host call raises it.  Elementwise functions only. */
int ufg_numpy_converts_scalars(const ufg_call *c, const char *casting);
int ufg_numpy_casting_error(PyObject *ufunc, const char *casting, PyArray_Descr *from,
                            PyArray_Descr *to, int is_output, int index);
/* numpy_errors.c: whether the exception being raised is a NumPy UFuncTypeError. */
int ufg_numpy_error_is_ufunc_type_error(void);

/* "add: argument 'x'" / "add: output 'sum'" for operand k, into buffer (size >= 160). */
const char *ufg_call_what(const ufg_call *c, int k, char *buffer, size_t size);

/* call.c: the NULL-terminated strings after `size` joined into buffer (cut to fit), as
 * "%s%s..." would print them: every call names its arguments for the messages it might
 * raise, and printf's machinery took a good part of a call's time doing it.  Returns
 * buffer. */
char *ufg_join(char *buffer, size_t size, ...);

/* operands.c: anything with CUDA memory (DeviceArray, __cuda_array_interface__, DLPack on a
 * CUDA device) → a buffer operand; `what` names it in errors, `consumer` is the stream that
 * will use it (a DLPack producer is asked to order its work before it).  ufg_is_device_object:
 * 1 if obj is such an object, 0 if not (nothing set), -1 with an exception; ufuncgen._core's
 * dispatcher decides, so an object it takes for host memory (a PyTorch CPU tensor) is host
 * memory here too. */
int ufg_is_device_object(PyObject *obj);
int ufg_operand_from_buffer(PyObject *obj, const char *what, ufg_operand *op,
                            uintptr_t consumer);
int ufg_operand_check_alignment(const ufg_operand *op, const char *what);
/* -1 with a ValueError naming `what` when the operand's exporter says it is read-only. */
int ufg_operand_check_writable(const ufg_operand *op, const char *what);
/* A CUDA torch.Tensor through its C getters (torch_operands.c): 1 read, 0 declined (the
 * caller reads it as any CUDA array), -1 with an error. */
int ufg_operand_from_torch(PyObject *tensor, const char *what, ufg_operand *op);
void ufg_operand_release(ufg_operand *op);
int64_t ufg_operand_size(const ufg_operand *op);
/* A DeviceArray as a buffer operand (borrowing it). */
void ufg_operand_from_array(ufg_DeviceArrayObject *array, ufg_operand *op);

/* streams.c: queued work on `consumer` waits for op's producer. */
/* streams.c: the stream a call without stream= runs on, from its array arguments objs[0..n)
 * (NULL entries skipped): the current stream of the first one's library that has a stream
 * source, else ufuncgen's current stream, else 0.  *keeper: a new reference or NULL. */
int ufg_default_stream(PyObject *const *objs, int n, uintptr_t *stream, PyObject **keeper);
/* Whether a stream's keeper is a ufuncgen.device.Stream: a `with` block's stream, or one given,
 * that no array library queues its own work on. */
int ufg_stream_is_ufuncgens(PyObject *keeper);
/* _device._forget_stream_sources(): ufuncgen.device registered a source; ask again. */
PyObject *ufg_forget_stream_sources(PyObject *module, PyObject *unused);
/* call.c: applies ufg_default_stream to the call when stream= was not given. */
int ufg_call_default_stream(ufg_call *c, PyObject *const *objs, int n);
int ufg_wait_for_producer(const ufg_backend *backend, const ufg_operand *op,
                          uintptr_t consumer);

/* plan.c: a new C-contiguous array owned by the call (released with it). */
ufg_DeviceArrayObject *ufg_call_empty(ufg_call *c, int ndim, const int64_t *shape,
                                      ufg_dtype_code code);
/* plan.c: copies of an operand's data, not of its shape.  A broadcast axis (stride 0 over
 * more than one element) holds one element in the copy and keeps its stride 0, so that a
 * one-element array broadcast to 2**31 elements and cast costs one element, not 2**31 (every
 * consumer reads such a copy through its strides, as it reads the operand); the other axes are
 * C-contiguous, as a whole copy's would be.  ufg_data_copy_strides: such a copy's strides
 * over the shape of an operand with `strides`; ufg_call_copy_data: the copy of op cast to
 * `code`, owned by the call, described by *copy with op's shape (-1 with an exception). */
void ufg_data_copy_strides(int ndim, const int64_t *shape, const int64_t *strides,
                           int64_t itemsize, int64_t *copy_strides);
int ufg_call_copy_data(ufg_call *c, const ufg_operand *op, ufg_dtype_code code,
                       ufg_operand *copy);
/* Casts (or copies) src into dst, both of dst's shape; with a mask only where it is true. */
int ufg_call_cast(ufg_call *c, const ufg_operand *src, const ufg_operand *dst,
                  const ufg_operand *mask);
/* An operand's strides over `ndim` loop dimensions, broadcast (0 where it has size 1 or
 * lacks the dimension); its last `ncore` dimensions are left out. */
void ufg_loop_strides(const ufg_operand *op, int ncore, int ndim, int64_t *strides);
/* The DeviceError for a function with no launcher for the backend in use (-1). */
int ufg_call_missing_launcher(const ufg_backend *backend, const char *name, int loop_index);
/* Whether the bytes two buffers can touch overlap. */
int ufg_operands_overlap(const ufg_operand *a, const ufg_operand *b);
/* Whether two elements of a buffer may share memory: a conservative test (a zero stride over
 * more than one element, or strides that interleave), enough to route such a buffer through
 * a temporary, which gives NumPy's result either way. */
int ufg_has_internal_overlap(const ufg_operand *op);

/* numpy_order.c: the elements of out= j that share memory (it steps 0 along `axes`, over more
 * than one element each), in the order NumPy's loop writes them: axes[0] outermost, each from
 * its end where backwards[i].  through_copy: NumPy computes into a temporary and copies it back
 * in index order, so only the last element along each axis counts, with where= or without.
 * -1 with an exception. */
typedef struct {
    int naxes;
    int axes[UFG_CALL_MAX_NDIM];
    int backwards[UFG_CALL_MAX_NDIM];
    int through_copy;
} ufg_shared_order;
int ufg_numpy_shared_order(const ufg_call *c, int j, ufg_shared_order *order);
/* numpy_order.c: the loop axes, innermost first, as NumPy lays out a result it allocates for
 * an elementwise call under order= (K: like the inputs). */
void ufg_numpy_result_axes(const ufg_call *c, int *inner_first);
/* numpy_order.c: NumPy's order='K' nesting (npyiter_find_best_axis_ordering): sorts
 * inner_first (ndim axes, innermost first, C order to start from) by the steps of n operands,
 * strides[i][axis]; a zero step (a broadcast, an axis of one element, an output NumPy has yet
 * to allocate) gives that operand no say.  Stable: ties keep C order. */
void ufg_numpy_best_axis_order(int ndim, int64_t (*strides)[UFG_CALL_MAX_NDIM], int n,
                               int *inner_first);
/* numpy_order.c: np.getbufsize(), the elements NumPy's ufunc buffers hold (8192 unless
 * np.setbufsize); -1 with an exception. */
int ufg_numpy_buffersize(int64_t *size);

/* operands.c: module.name, imported (a new reference), or NULL with an exception.
 * core_dims.c: numpy.exceptions.AxisError (borrowed, imported once), or NULL with one. */
PyObject *ufg_module_attribute(const char *module, const char *name);
PyObject *ufg_axis_error(void);

/* operands.c: how messages name an object's type ("numpy.ndarray", "float").  shapes.c: a
 * shape as Python writes it ("(3,)"); NumPy's broadcasting of `shape` into `result`
 * (right-aligned; 0 when they are incompatible). */
PyObject *ufg_type_name(PyObject *obj);
/* "what (module.Type)" for obj, into buffer; returns buffer. */
const char *ufg_describe(PyObject *obj, const char *what, char *buffer, size_t size);
PyObject *ufg_shape_repr(int ndim, const int64_t *shape);
int ufg_broadcast_into(int *ndim, int64_t *result, int op_ndim, const int64_t *shape);
/* Whether an operand of op_shape broadcasts to exactly `shape` (NumPy's rule, one way). */
int ufg_broadcasts_to(int op_ndim, const int64_t *op_shape, int ndim, const int64_t *shape);

/* shapes.c: an axis as NumPy reads one (PyArray_PyIntAsInt): an integer by __index__, not a
 * bool.  0 with *value set; 1, no exception set, when obj is no such integer (each caller
 * words its own TypeError); -1 with NumPy's error past a C long (OverflowError) or a C int
 * (ValueError), which NumPy raises before any bounds check. */
int ufg_axis_from_object(PyObject *obj, int *value);

/* results.c: `array` as the same kind of array as `anchor` (CuPy, PyTorch, Numba, or the
 * DeviceArray itself), without a copy.  Returns a new reference. */
PyObject *ufg_wrap_like(PyObject *anchor, PyObject *array);

/* Operand k's core dimensions: 0 for an elementwise function, which has no table of them. */
static inline int
ufg_core_ndims(const ufg_call *c, int k)
{
    return c->fn->signature != NULL ? c->fn->core_ndims[k] : 0;
}

/* The size in bytes of an element of a code (the generator's table). */
static inline int64_t
ufg_dtype_itemsize(ufg_dtype_code code)
{
#define UFG_ITEMSIZE_ROW(CODE, name, storage_type, npy_enum, itemsize, ...) [UFG_DT_##CODE] = itemsize,
    static const unsigned char sizes[UFG_DT_COUNT] = {UFG_ELEMENT_TYPES(UFG_ITEMSIZE_ROW)};
#undef UFG_ITEMSIZE_ROW
    return sizes[code];
}

/* resolve.c: NumPy's descriptor of a code (borrowed, cached). */
PyArray_Descr *ufg_call_descr(ufg_dtype_code code);
/* The code of a dtype= value as the resolution caches key it, or -1 when NumPy must decide
 * uncached (a type the device does not take, another spelling of one: 'q' for 'l'). */
int ufg_dtype_keyword_code(const PyArray_Descr *dtype);

/* The index of fn's device loop whose nin + nout dtype codes are `codes` (NumPy's own loops
 * first, then the provided ones), or -1 (no exception). */
int ufg_device_loop_index(const ufg_function_descriptor *fn, const unsigned char *codes);

/* call.c / reduce.c / accumulate.c / reduceat.c / at.c: the entry points handed to ufuncgen._core
 * (ufuncgen/device_call.h). */
PyObject *ufg_device_call(PyObject *function, const ufg_function_descriptor *fn,
                          PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames);
PyObject *ufg_device_reduce(PyObject *function, const ufg_function_descriptor *fn,
                            PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames);
PyObject *ufg_device_accumulate(PyObject *function, const ufg_function_descriptor *fn,
                            PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames);
PyObject *ufg_device_reduceat(PyObject *function, const ufg_function_descriptor *fn,
                              PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames);
PyObject *ufg_device_at(PyObject *function, const ufg_function_descriptor *fn,
                        PyObject *ufunc, PyObject *const *args, Py_ssize_t nargs,
                        PyObject *kwnames);

/* Adds the capsule `_call_api` to ufuncgen._device. */
int ufg_call_api_register(PyObject *module);

#endif /* UFG_DEVICE_CALL_CALL_H */
