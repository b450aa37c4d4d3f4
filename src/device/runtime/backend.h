/*
 * The device backend interface: everything the runtime asks of "a CUDA device", as one table
 * of function pointers with two implementations.
 *
 *   cuda  backend_cuda.c   the CUDA runtime, linked statically (UFG_HAVE_CUDA builds only)
 *   sim   backend_sim.c    the host simulator: "device" memory is host RAM
 *
 * Every operation returns 0 or an error code with the CUDA runtime's numbering
 * (cudaError_t), which error_name/error_string turn into words.  Backends never touch Python:
 * the callers (holding or not holding the GIL) turn codes into exceptions.
 *
 * Streams are opaque handles (cudaStream_t); 0 is the default stream, 1 and 2 CUDA's legacy
 * and per-thread default streams.  Operations on a device take its ordinal and make it current
 * only for their own duration, so the caller's current device is left as it was.
 */
#ifndef UFG_DEVICE_BACKEND_H
#define UFG_DEVICE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "ufuncgen/device_kernel.h"

/* The default streams' handles, which every device has: CUDA's legacy one (which is also our
 * 0) and, the last of them, its per-thread one. */
enum { UFG_STREAM_LEGACY = 1, UFG_LAST_DEFAULT_STREAM = 2 };

typedef enum {
    UFG_MEMCPY_HOST_TO_DEVICE,
    UFG_MEMCPY_DEVICE_TO_HOST,      /* waits for the copy: the host buffer is readable after */
    UFG_MEMCPY_DEVICE_TO_DEVICE,
} ufg_memcpy_kind;

/* The CUDA error codes the runtime itself produces or tests for. */
enum {
    UFG_ERROR_INVALID_VALUE = 1,            /* cudaErrorInvalidValue */
    UFG_ERROR_MEMORY_ALLOCATION = 2,        /* cudaErrorMemoryAllocation */
    UFG_ERROR_CUDART_UNLOADING = 4,         /* cudaErrorCudartUnloading */
    UFG_ERROR_NO_DEVICE = 100,              /* cudaErrorNoDevice */
    UFG_ERROR_INVALID_DEVICE = 101,         /* cudaErrorInvalidDevice */
    UFG_ERROR_INVALID_RESOURCE_HANDLE = 400,/* cudaErrorInvalidResourceHandle */
    UFG_ERROR_MISALIGNED_ADDRESS = 716,     /* cudaErrorMisalignedAddress */
};

/* What device_enter found current on the calling thread: the device (-1: none) and, under
 * CUDA, the context itself (a CUcontext; NULL: none), which may be a driver API user's own. */
typedef struct {
    int device;
    void *context;
} ufg_device_scope;

typedef struct ufg_backend {
    const char *name;                       /* "cuda" or "sim" */
    int id;                     /* UFG_BACKEND_CUDA / _SIM: the index into launcher tables */

    /* 1 if devices can be used; else 0 and *reason says why (a static string). */
    int (*is_available)(const char **reason);
    int (*device_count)(int *count);
    int (*current_device)(int *device);
    int (*multiprocessor_count)(int device, int *count);

    /* Make `device` current for a launch (*saved receives what to restore), and back.  Leaving
     * puts back exactly what the caller had current, none included: a thread that had no
     * device current gets none, not device 0 (CUDA 12's cudaSetDevice would create device
     * 0's context for it). */
    int (*device_enter)(int device, ufg_device_scope *saved);
    void (*device_leave)(const ufg_device_scope *saved);

    /* Stream-ordered allocation: usable by work queued on `stream` after the call. */
    int (*malloc_async)(void **ptr, size_t nbytes, int device, void *stream);
    int (*free_async)(void *ptr, int device, void *stream);
    int (*memcpy)(void *dst, const void *src, size_t nbytes, ufg_memcpy_kind kind, int device,
                  void *stream);

    /* non_blocking: the stream does not order with the legacy default stream
     * (cudaStreamNonBlocking), as PyTorch's and some CuPy streams do not. */
    int (*stream_create)(int device, int non_blocking, void **stream);
    int (*stream_destroy)(void *stream);
    /* Work queued on `consumer` after this call waits for the work queued on `producer` so
     * far (an event recorded on producer; `device` is producer's device). */
    int (*stream_wait)(void *consumer, void *producer, int device);
    int (*synchronize_stream)(void *stream, int device);
    /* An event marking the work queued on `stream` so far; event_done: 1 once that work has
     * run, 0 while it has not, or minus a CUDA error code.  event_destroy takes any event. */
    int (*event_record)(void *stream, int device, void **event);
    int (*event_done)(void *event);
    void (*event_destroy)(void *event);
    int (*synchronize_device)(int device);

    /* The ordinal of the device `ptr` points into, or -1 for host memory. */
    int (*pointer_device)(const void *ptr);
    /* Optional (NULL: the backend cannot tell, as CUDA's runtime API cannot).  0 and the
     * bounds of the allocation `ptr` points into, or -1 for memory the backend did not
     * allocate: the simulator's, so that a view reaching past its buffer is refused before a
     * kernel reads host memory around it. */
    int (*allocation_of)(const void *ptr, uintptr_t *base, size_t *size);
    /* The ordinal of the device a stream was made on, or -1 when the backend cannot tell (an
     * older CUDA runtime; a handle the simulator did not make).  Never asked about the default
     * streams 0, 1 and 2, which each device has. */
    int (*stream_device)(void *stream);

    const char *(*error_name)(int code);
    const char *(*error_string)(int code);

    /* Called after each launcher returned `result`; returns the error to report (or 0). */
    int (*after_launch)(int result, void *stream);

    /* Optional (NULL: never).  1 when launches are to skip running the launcher, keeping the
     * rest of their path (device switch, launch record, after_launch): the simulator's
     * UFUNCGEN_SIM_SKIP_KERNELS, so that a device call's dispatch cost can be measured
     * without the time of the simulated kernel. */
    int (*skip_kernels)(void);

    /* Optional (NULL: the launcher is called directly, and queues its own work, as CUDA's
     * do).  The simulator's: the launch is queued on `stream` and its kernel runs later. */
    int (*queue_elementwise)(ufg_elementwise_launcher launcher,
                             const ufg_kernel_params *params, void *stream);
    int (*queue_reduce)(ufg_reduce_launcher launcher, const ufg_reduce_params *params,
                        void *stream);
} ufg_backend;

/* The implementations.  Each returns NULL and sets *error (a static string) when the
 * environment configures it wrongly. */
const ufg_backend *ufg_backend_cuda(const char **error);
const ufg_backend *ufg_backend_sim(const char **error);

/* Simulator test hook: the next launch on any device reports the CUDA error named `name`
 * (e.g. "cudaErrorIllegalAddress").  Returns 0, or -1 when the name is not in the table. */
int ufg_sim_inject_error(const char *name);

/* The simulator's record of stream waits since the last call, (consumer, producer) pairs,
 * at most UFG_SIM_MAX_WAITS; returns how many and forgets them. */
#define UFG_SIM_MAX_WAITS 64
int ufg_sim_take_waits(uintptr_t (*waits)[2]);

/* Simulator switch: whether launches skip their kernels from now on (UFUNCGEN_SIM_SKIP_KERNELS
 * sets it at backend init).  Returns the previous setting. */
int ufg_sim_set_skip_kernels(int skip);

/* Simulator test hook: nothing queued on `stream` after this starts before `seconds` from
 * now (a GPU's long-running kernel, to make a producer late).  0 or a CUDA error code. */
int ufg_sim_stall(void *stream, int device, double seconds);

/* Simulator test hook: the devices whose primary context the process has created so far
 * (bit d: device d), which making a device current does, as CUDA 12's cudaSetDevice. */
uint64_t ufg_sim_context_devices(void);

/* 1 when the simulator runs streams asynchronously (the default), 0 under UFUNCGEN_SIM_SYNC. */
int ufg_sim_is_async(void);

/* Simulator test hook: how many streams it made are still in its table (a destroyed one
 * leaves once its queue has run and nothing names it). */
int ufg_sim_stream_count(void);

#endif /* UFG_DEVICE_BACKEND_H */
