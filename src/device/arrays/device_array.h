/*
 * ufuncgen._device.DeviceArray: an N-d strided view of device memory, with the CUDA array
 * interface (v3) and DLPack on the outside.
 *
 * A DeviceArray either owns its allocation (made by empty(); freed stream-ordered on its
 * stream when the array dies) or views memory somebody else keeps alive through `owner`:
 * another DeviceArray, a foreign array object, or a capsule holding a DLPack managed tensor
 * whose deleter runs when the capsule dies.  A view lets go of an owner that is not a
 * DeviceArray in stream order too (device_array_release.c).
 */
#ifndef UFG_DEVICE_ARRAY_H
#define UFG_DEVICE_ARRAY_H

#include "numpy_api.h"

#include <stdint.h>

#include "backend.h"
#include "cast.h"
#include "dlpack.h"

typedef struct {
    PyObject_HEAD
    char *ptr;                      /* the first element (may sit below other elements when
                                     * strides are negative) */
    int ndim;
    int64_t *shape;                 /* ndim sizes, then ndim strides in bytes: one block */
    int64_t *strides;
    PyArray_Descr *dtype;           /* one of the supported types, native byte order */
    ufg_dtype_code code;
    int device;
    int readonly;
    int owns_allocation;            /* ptr came from malloc_async: free it at dealloc */
    uintptr_t stream;               /* where it was last used; 0 = the default stream */
    PyObject *stream_keeper;        /* what owns `stream` (ufuncgen's OwnedStream, CuPy's,
                                     * PyTorch's, Numba's stream object), kept alive while the
                                     * array may still queue work on it (its free): let go
                                     * only after the free, never by tp_clear; NULL for a bare
                                     * handle */
    int exports_no_stream;          /* a result handed to a library: its work is ordered on the
                                     * library's current stream already, so the CUDA array
                                     * interface names no stream, and the library does not
                                     * block the host synchronising one */
    PyObject *owner;                /* kept alive for the view's lifetime, or NULL: let go by
                                     * ufg_device_array_release_owner */
    int queued_on;                  /* ufuncgen queued work using it (ufg_device_array_used_on):
                                     * a foreign owner then goes only after that work */
    PyObject *weakreflist;
} ufg_DeviceArrayObject;

extern PyTypeObject ufg_DeviceArray_Type;

#define ufg_DeviceArray_Check(op) PyObject_TypeCheck(op, &ufg_DeviceArray_Type)

/* Maximum dimensions, NumPy's. */
#define UFG_DEVICE_ARRAY_MAX_DIMS 64

int ufg_device_array_register(PyObject *module);

/*
 * A new array over `ptr` with a copy of shape/strides (bytes; NULL: C-contiguous).  Steals
 * nothing: takes new references to descr and owner.  The caller sets ownership fields.
 */
ufg_DeviceArrayObject *ufg_device_array_new(char *ptr, int ndim, const int64_t *shape,
                                            const int64_t *strides, PyArray_Descr *descr,
                                            int device, int readonly, uintptr_t stream,
                                            PyObject *owner);

/*
 * Streams (device_array_streams.c).  An array remembers the stream of its last use, read or
 * write, and the allocation it views does too when that is another DeviceArray's: work on
 * another stream waits for that stream first, and the allocation is freed on it, so a free
 * never overtakes a use and a write never overtakes an earlier read or write.
 *
 * ufg_device_array_wait_for: work queued on `stream` from now on comes after the array's last
 * use (a stream wait when the streams differ).  -1 with DeviceError.
 * ufg_device_array_used_on: the array was just used by work queued on `stream`, which
 * `keeper` owns (NULL for a bare handle; a new reference is taken); a view's owner is then
 * let go only once that stream has passed the work.  A stream that a
 * ufuncgen.device.Stream made is kept by its OwnedStream instead, whatever named it, so that
 * it outlives the array's free in any order of finalization (owned_stream.h).
 *
 * ufg_stream_keeper_of: what an array last used on `stream` holds (borrowed): that
 * OwnedStream, else `keeper`.
 */
PyObject *ufg_stream_keeper_of(uintptr_t stream, PyObject *keeper);
int ufg_device_array_wait_for(const ufg_backend *backend, ufg_DeviceArrayObject *array,
                              uintptr_t stream);
/* The stream of the last use of the memory `array` views: its root's (a view's use is noted
 * on the arrays it views too, so the root's is the latest), which its exports name. */
uintptr_t ufg_device_array_last_use(const ufg_DeviceArrayObject *array);
void ufg_device_array_used_on(ufg_DeviceArrayObject *array, uintptr_t stream,
                              PyObject *keeper);

/* A new C-contiguous array with its own allocation (stream-ordered on `stream`). */
ufg_DeviceArrayObject *ufg_device_array_empty(int ndim, const int64_t *shape,
                                              PyArray_Descr *descr, int device,
                                              uintptr_t stream);

/* Number of elements, and whether the strides are C-contiguous (size-1 dims ignored). */
int64_t ufg_device_array_size(const ufg_DeviceArrayObject *self);
int ufg_device_array_is_c_contiguous(const ufg_DeviceArrayObject *self);

/* Whether every element of a strided view starts at a multiple of `alignment` bytes, as a
 * kernel loading it needs (an empty view is; a size-1 dimension's stride is never used). */
int ufg_strided_is_aligned(const char *ptr, int ndim, const int64_t *shape,
                           const int64_t *strides, int64_t alignment);

/* Element count of a shape, or -1 with ValueError set (negative or overflowing). */
int64_t ufg_shape_size(int ndim, const int64_t *shape, const char *argname);
/* 0 when the shape's elements of `itemsize` bytes fit in 2**63 bytes, counting the nonzero
 * extents as NumPy does (an empty shape's other extents too); else -1 with `error_type`
 * naming `context`. */
int ufg_shape_bytes_fit(int ndim, const int64_t *shape, int64_t itemsize, PyObject *error_type,
                        const char *context);

/* 0 when every element's byte offset (the sum of index * stride) fits in 64 bits, as the
 * kernels and copies that add them up need; else -1 with `error_type` set, naming the first
 * dimension past 2**63 bytes.  An empty view addresses nothing, so any strides pass. */
int ufg_strides_span_fits(int ndim, const int64_t *shape, const int64_t *strides,
                          PyObject *error_type, const char *context);

/* 0 when a view's elements (whose span fits: ufg_strides_span_fits) lie in the one device
 * allocation `ptr` points into, or when the backend cannot tell; else -1 with `error_type`
 * set, giving the bytes they reach and the allocation's.  A kernel would read or write
 * past the buffer: a GPU stops with an illegal address, the simulator would corrupt the
 * interpreter's memory. */
int ufg_view_in_allocation(const ufg_backend *backend, const char *ptr, int ndim,
                           const int64_t *shape, const int64_t *strides, int64_t itemsize,
                           PyObject *error_type, const char *context);

/* Fills C-contiguous byte strides for shape. */
void ufg_c_strides(int ndim, const int64_t *shape, int64_t itemsize, int64_t *strides);

/* Methods defined in their own files. */
PyObject *ufg_device_array_copy_to_host(ufg_DeviceArrayObject *self, PyObject *args,
                                        PyObject *kwargs);
/* A C-contiguous device copy (same device, dtype), made on `stream`, which `keeper` owns
 * (as for ufg_device_array_used_on). */
ufg_DeviceArrayObject *ufg_device_array_contiguous_copy(ufg_DeviceArrayObject *self,
                                                        uintptr_t stream, PyObject *keeper);
PyObject *ufg_device_array_cai(ufg_DeviceArrayObject *self, void *closure);

/* cai.c: the CUDA array interface's keys, as the export above writes them and the import of
 * foreign arrays (call/operands.c) reads them: interned once, since each lookup or insertion
 * by C string made and hashed a str of its own, several per array per call. */
typedef enum {
    UFG_CAI_SHAPE, UFG_CAI_TYPESTR, UFG_CAI_DATA, UFG_CAI_VERSION, UFG_CAI_STRIDES,
    UFG_CAI_STREAM, UFG_CAI_MASK, UFG_CAI_KEYS
} ufg_cai_key;
extern const char *const ufg_cai_key_names[UFG_CAI_KEYS];
/* Interns the keys, once: 0, or -1 with an exception set. */
int ufg_cai_keys_ready(void);
/* A key's str (borrowed), once ufg_cai_keys_ready has succeeded. */
PyObject *ufg_cai_key_str(ufg_cai_key key);
PyObject *ufg_device_array_dlpack(ufg_DeviceArrayObject *self, PyObject *args,
                                  PyObject *kwargs);
PyObject *ufg_device_array_dlpack_device(ufg_DeviceArrayObject *self, PyObject *unused);

/*
 * The view lets go of its owner (device_array_release.c): at once when the owner is another
 * DeviceArray, whose allocation knows the streams of the view's uses already, or when
 * ufuncgen queued no work using the view; otherwise (a foreign array, a DLPack tensor's
 * capsule, whose memory its producer may free or hand out again ordered on its own stream
 * only) once the work queued so far on the view's stream of last use has run (keepalive.h).
 * Runs from dealloc and tp_clear: raises nothing, keeps any exception in flight.
 */
void ufg_device_array_release_owner(ufg_DeviceArrayObject *self);

#endif /* UFG_DEVICE_ARRAY_H */
