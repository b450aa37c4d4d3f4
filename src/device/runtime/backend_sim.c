/*
 * The simulator backend: "device" memory is host RAM and kernels are the generated ones
 * compiled by the host compiler (see device_kernel.h).  The device itself, asynchronous
 * streams and stream-ordered memory, is modelled in sim_streams.c and sim_memory.c (sim.h
 * says how); this file is the backend interface over it, the error table and the test hooks.
 *
 * UFUNCGEN_SIM_DEVICES sets how many devices exist (default 2, so multi-device code paths are
 * exercised), UFUNCGEN_SIM_MULTIPROCESSORS how many multiprocessors each reports (default 2,
 * so grid-stride loops loop; 132 for an H100's grids and reduction chunks).  UFUNCGEN_SIM_SKIP_KERNELS=1 makes launches skip the kernel itself (everything
 * else about a launch still happens), so that benchmarks/device_dispatch.py measures the
 * host-side cost of a device call alone; ufuncgen._device.sim_set_skip_kernels flips it.
 * A pointer the simulator did not allocate (another library's "device" array, which under
 * the simulator is host memory) belongs to the current device.
 */
#include "backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cast.h"
#include "sim.h"
#include "ufuncgen/complex.h"         /* the storage types of complex elements */
#include "ufuncgen/device_kernel.h"

#define UFG_SIM_DEFAULT_DEVICES 2
#define UFG_SIM_MAX_DEVICES 64
/* Launch configuration is derived from this, so a small value makes grid-stride loops loop. */
#define UFG_SIM_MULTIPROCESSORS 2
#define UFG_SIM_MAX_MULTIPROCESSORS 1024

/* ------------------------------------------------------------------ error table */

/* The CUDA errors the simulator can report, with the CUDA runtime's own names and strings. */
typedef struct {
    int code;
    const char *name;
    const char *string;
} ufg_sim_error;

static const ufg_sim_error ufg_sim_errors[] = {
    {0, "cudaSuccess", "no error"},
    {1, "cudaErrorInvalidValue", "invalid argument"},
    {2, "cudaErrorMemoryAllocation", "out of memory"},
    {3, "cudaErrorInitializationError", "initialization error"},
    {4, "cudaErrorCudartUnloading", "driver shutting down"},
    {9, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {35, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {100, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {209, "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {400, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {600, "cudaErrorNotReady", "device not ready"},
    {700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {701, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {702, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {710, "cudaErrorAssert", "device-side assert triggered"},
    {716, "cudaErrorMisalignedAddress", "misaligned address"},
    {719, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {999, "cudaErrorUnknown", "unknown error"},
};

#define UFG_SIM_NERRORS ((int)(sizeof(ufg_sim_errors) / sizeof(ufg_sim_errors[0])))

static const ufg_sim_error *
ufg_sim_find_error(int code)
{
    for (int i = 0; i < UFG_SIM_NERRORS; i++) {
        if (ufg_sim_errors[i].code == code) {
            return &ufg_sim_errors[i];
        }
    }
    return NULL;
}

static const char *
ufg_sim_error_name(int code)
{
    if (code == UFG_SIM_ERROR_ORDER) {
        return "ufuncgenSimulatorOrderingError";
    }
    const ufg_sim_error *error = ufg_sim_find_error(code);
    return error != NULL ? error->name : "cudaErrorUnknown";
}

static const char *
ufg_sim_error_string(int code)
{
    const ufg_sim_error *error;

    if (code == UFG_SIM_ERROR_ORDER) {
        return ufg_sim_async_message();
    }
    error = ufg_sim_find_error(code);
    return error != NULL ? error->string : "unknown error";
}

/* ------------------------------------------------------------------ configuration */

static int ufg_sim_ndevices = UFG_SIM_DEFAULT_DEVICES;
/* Launch grids and the chunking of reductions follow it: UFUNCGEN_SIM_MULTIPROCESSORS=132
 * gives an H100's launch configurations and summation orders. */
static int ufg_sim_multiprocessors = UFG_SIM_MULTIPROCESSORS;
/* The device made current by device_enter, per host thread, as in CUDA; -1 while none is
 * (a new thread), where CUDA's cudaGetDevice answers 0. */
static _Thread_local int ufg_sim_current = -1;
/* Devices whose primary context exists (bit d: device d): CUDA 12's cudaSetDevice creates
 * the context of the device it makes current, so making a device current, even to put the
 * caller's back, costs that device a context (hundreds of MiB of its memory). */
static atomic_uint_fast64_t ufg_sim_contexts = 0;
/* The error the next launch reports (0: none); set from tests, read by launching threads. */
static atomic_int ufg_sim_pending_error = 0;
/* 1: launches skip the kernel (UFUNCGEN_SIM_SKIP_KERNELS); flipped from any thread. */
static atomic_int ufg_sim_skipping = 0;

long
ufg_sim_env_number(const char *name, long lo, long hi, long unset)
{
    const char *text = getenv(name);
    char *end;
    long value;

    if (text == NULL || *text == '\0') {
        return unset;
    }
    errno = 0;
    value = strtol(text, &end, 10);
    return errno != 0 || *end != '\0' || value < lo || value > hi ? -1 : value;
}

/* Reads the simulator's environment once, at backend init; returns what is wrong, or NULL. */
static const char *
ufg_sim_configure(void)
{
    const long devices = ufg_sim_env_number("UFUNCGEN_SIM_DEVICES", 1, UFG_SIM_MAX_DEVICES,
                                            UFG_SIM_DEFAULT_DEVICES);
    const long skip = ufg_sim_env_number("UFUNCGEN_SIM_SKIP_KERNELS", 0, 1, 0);
    const long multiprocessors = ufg_sim_env_number("UFUNCGEN_SIM_MULTIPROCESSORS", 1,
                                                    UFG_SIM_MAX_MULTIPROCESSORS,
                                                    UFG_SIM_MULTIPROCESSORS);
    const char *streams_error;

    if (devices < 0) {
        return "UFUNCGEN_SIM_DEVICES must be a whole number of simulated devices from 1 to 64";
    }
    if (skip < 0) {
        return "UFUNCGEN_SIM_SKIP_KERNELS must be 1 (launches skip their kernels) or 0";
    }
    if (multiprocessors < 0) {
        return "UFUNCGEN_SIM_MULTIPROCESSORS must be a whole number of multiprocessors per "
               "simulated device from 1 to 1024";
    }
    ufg_sim_multiprocessors = (int)multiprocessors;
    if ((streams_error = ufg_sim_streams_configure()) != NULL) {
        return streams_error;
    }
    ufg_sim_ndevices = (int)devices;
    atomic_store(&ufg_sim_skipping, (int)skip);
    return NULL;
}

static int
ufg_sim_check_device(int device)
{
    return device >= 0 && device < ufg_sim_ndevices ? 0 : UFG_ERROR_INVALID_DEVICE;
}

/* ------------------------------------------------------------------ the interface */

static int
ufg_sim_is_available(const char **reason)
{
    *reason = NULL;
    return 1;
}

static int
ufg_sim_device_count(int *count)
{
    *count = ufg_sim_ndevices;
    return 0;
}

static int
ufg_sim_current_device(int *device)
{
    *device = ufg_sim_current >= 0 ? ufg_sim_current : 0;
    return 0;
}

/* What CUDA's backend does on `device` (it makes the device current for the operation)
 * gives the device its context. */
static void
ufg_sim_note_context(int device)
{
    atomic_fetch_or(&ufg_sim_contexts, (uint64_t)1 << device);
}

/* The calling thread's current device becomes `device` (-1: none), with its context. */
static void
ufg_sim_make_current(int device)
{
    if (device >= 0) {
        ufg_sim_note_context(device);
    }
    ufg_sim_current = device;
}

uint64_t
ufg_sim_context_devices(void)
{
    return atomic_load(&ufg_sim_contexts);
}

static int
ufg_sim_multiprocessor_count(int device, int *count)
{
    *count = ufg_sim_multiprocessors;
    return ufg_sim_check_device(device);
}

static int
ufg_sim_device_enter(int device, ufg_device_scope *saved)
{
    const int error = ufg_sim_check_device(device);

    if (error) {
        return error;
    }
    saved->device = ufg_sim_current;
    saved->context = NULL;
    if (ufg_sim_current != device) {
        ufg_sim_make_current(device);
    }
    return 0;
}

static void
ufg_sim_device_leave(const ufg_device_scope *saved)
{
    if (ufg_sim_current != saved->device) {
        ufg_sim_make_current(saved->device);
    }
}

static int
ufg_sim_malloc_async(void **ptr, size_t nbytes, int device, void *stream)
{
    ufg_sim_block *block = NULL;
    const void *queue;
    int error = ufg_sim_check_device(device), stream_device;

    if (error) {
        return error;
    }
    ufg_sim_note_context(device);
    pthread_mutex_lock(&ufg_sim_mutex);
    /* cudaMallocAsync takes the memory from the pool of the stream's device. */
    if ((stream_device = ufg_sim_stream_device(stream)) >= 0) {
        device = stream_device;
    }
    if ((error = ufg_sim_check_stream(stream, device, &queue)) == 0) {
        error = ufg_sim_block_allocate(nbytes, device, queue, &block);
    }
    pthread_mutex_unlock(&ufg_sim_mutex);
    if (error == 0) {
        *ptr = (void *)block->base;
    }
    return error;
}

static int
ufg_sim_free_async(void *ptr, int device, void *stream)
{
    ufg_sim_block *block;
    const void *queue;
    int error;

    if (ptr == NULL) {
        return 0;
    }
    pthread_mutex_lock(&ufg_sim_mutex);
    block = ufg_sim_block_find((uintptr_t)ptr);
    /* cudaFreeAsync rejects pointers it did not allocate; so do we, rather than corrupt. */
    if (block == NULL || block->base != (uintptr_t)ptr) {
        error = UFG_ERROR_INVALID_VALUE;
    }
    else if ((error = ufg_sim_check_stream(stream, device, &queue)) == 0 &&
             (error = ufg_sim_block_queue_free(block, stream, queue)) == 0) {
        error = ufg_sim_queue_free(block, device, stream);
    }
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

/* Whether nbytes at ptr lie in one simulated allocation: a copy from or to any other address
 * would read or write the host there (cudaMemcpy refuses it with cudaErrorInvalidValue). */
static int
ufg_sim_range_allocated(const void *ptr, size_t nbytes)
{
    const ufg_sim_block *block;
    int inside;

    pthread_mutex_lock(&ufg_sim_mutex);
    block = ufg_sim_block_find((uintptr_t)ptr);
    inside = block != NULL && nbytes <= block->size - ((uintptr_t)ptr - block->base);
    pthread_mutex_unlock(&ufg_sim_mutex);
    return inside;
}

static int
ufg_sim_memcpy(void *dst, const void *src, size_t nbytes, ufg_memcpy_kind kind, int device,
               void *stream)
{
    int error = ufg_sim_check_device(device);

    if (error) {
        return error;
    }
    ufg_sim_note_context(device);
    if (nbytes == 0) {
        return 0;
    }
    if ((kind != UFG_MEMCPY_DEVICE_TO_HOST && !ufg_sim_range_allocated(dst, nbytes)) ||
        (kind != UFG_MEMCPY_HOST_TO_DEVICE && !ufg_sim_range_allocated(src, nbytes))) {
        return UFG_ERROR_INVALID_VALUE;
    }
    error = ufg_sim_queue_copy(dst, src, nbytes, kind == UFG_MEMCPY_HOST_TO_DEVICE, device,
                               stream);
    /* The host buffer is the caller's once we return: wait for the copy into it. */
    if (error == 0 && kind == UFG_MEMCPY_DEVICE_TO_HOST) {
        error = ufg_sim_wait_stream(stream, device);
    }
    return error;
}

static int
ufg_sim_stream_create(int device, int non_blocking, void **stream)
{
    const int error = ufg_sim_check_device(device);

    if (error) {
        return error;
    }
    ufg_sim_note_context(device);
    return ufg_sim_stream_new(device, non_blocking, stream);
}

/* The last waits asked for, so tests can see that a consumer waits for its producer. */
static uintptr_t ufg_sim_waits[UFG_SIM_MAX_WAITS][2];
static int ufg_sim_nwaits;

static int
ufg_sim_stream_wait(void *consumer, void *producer, int device)
{
    const int error = ufg_sim_check_device(device);

    if (error) {
        return error;
    }
    if (ufg_sim_nwaits < UFG_SIM_MAX_WAITS) {
        ufg_sim_waits[ufg_sim_nwaits][0] = (uintptr_t)consumer;
        ufg_sim_waits[ufg_sim_nwaits][1] = (uintptr_t)producer;
        ufg_sim_nwaits++;
    }
    return ufg_sim_queue_wait(consumer, producer, device);
}

int
ufg_sim_take_waits(uintptr_t (*waits)[2])
{
    const int n = ufg_sim_nwaits;

    memcpy(waits, ufg_sim_waits, sizeof(ufg_sim_waits[0]) * (size_t)n);
    ufg_sim_nwaits = 0;
    return n;
}

static int
ufg_sim_synchronize_stream(void *stream, int device)
{
    const int error = ufg_sim_check_device(device);

    return error ? error : ufg_sim_wait_stream(stream, device);
}

static int
ufg_sim_synchronize_device(int device)
{
    const int error = ufg_sim_check_device(device);

    return error ? error : ufg_sim_wait_device(device);
}

static int
ufg_sim_stream_device_of(void *stream)
{
    int device;

    pthread_mutex_lock(&ufg_sim_mutex);
    device = ufg_sim_stream_device(stream);
    pthread_mutex_unlock(&ufg_sim_mutex);
    return device;
}

/* The device of the simulated allocation `ptr` points into, or -1 for memory the simulator
 * did not allocate: a host array's pointer, or any other address, is not device memory, as
 * cudaPointerGetAttributes says of them (and a kernel reading a bogus one would stop the
 * process here, where a GPU reports an illegal address). */
static int
ufg_sim_pointer_device(const void *ptr)
{
    const ufg_sim_block *block;
    int device;

    if (ptr == NULL) {
        return -1;
    }
    pthread_mutex_lock(&ufg_sim_mutex);
    block = ufg_sim_block_find((uintptr_t)ptr);
    device = block != NULL ? block->device : -1;
    pthread_mutex_unlock(&ufg_sim_mutex);
    return device;
}

static int
ufg_sim_allocation_of(const void *ptr, uintptr_t *base, size_t *size)
{
    const ufg_sim_block *block;

    pthread_mutex_lock(&ufg_sim_mutex);
    block = ufg_sim_block_find((uintptr_t)ptr);
    if (block != NULL) {
        *base = block->base;
        *size = block->size;
    }
    pthread_mutex_unlock(&ufg_sim_mutex);
    return block != NULL ? 0 : -1;
}

/* The alignment a GPU needs for an element of each dtype code: its storage type's. */
static int64_t
ufg_sim_element_alignment(int64_t code)
{
#define UFG_SIM_ALIGNMENT_ROW(CODE, name, storage_type, ...) [UFG_DT_##CODE] = _Alignof(storage_type),
    static const unsigned char alignments[UFG_DT_COUNT] = {
        UFG_ELEMENT_TYPES(UFG_SIM_ALIGNMENT_ROW)};
#undef UFG_SIM_ALIGNMENT_ROW
    return code >= 0 && code < UFG_DT_COUNT ? alignments[code] : 1;
}

/* Whether argument k's elements (of `alignment` bytes) all sit at multiples of it. */
static int
ufg_sim_argument_is_aligned(const ufg_kernel_params *params, int k, int64_t alignment)
{
    if ((uintptr_t)params->data[k] % (uintptr_t)alignment != 0) {
        return 0;
    }
    for (int d = 0; d < (params->ndim > 0 ? params->ndim : 1); d++) {
        const int64_t extent = params->ndim > 0 ? params->shape[d] : params->n;
        if (extent > 1 && params->strides[k][d] % alignment != 0) {
            return 0;
        }
    }
    return 1;
}

/* A GPU kernel loading an element at an address its type does not align to faults
 * (cudaErrorMisalignedAddress, which also ends the context).  The simulator's CPU would read
 * it, so the fault is modelled for the runtime's own cast kernel, whose launches say their
 * dtypes: the copies and casts the runtime makes must never need it. */
static int
ufg_sim_cast_is_misaligned(const ufg_kernel_params *params)
{
    for (int k = 0; k < 2; k++) {
        if (!ufg_sim_argument_is_aligned(params, k,
                                         ufg_sim_element_alignment(params->values[k].i64))) {
            return 1;
        }
    }
    return 0;
}

static int
ufg_sim_queue_elementwise(ufg_elementwise_launcher launcher, const ufg_kernel_params *params,
                          void *stream)
{
    if (launcher == ufg_cast_launch_sim && ufg_sim_cast_is_misaligned(params)) {
        return UFG_ERROR_MISALIGNED_ADDRESS;
    }
    return ufg_sim_queue_kernel(launcher, params, ufg_sim_current, stream);
}

static int
ufg_sim_queue_reduction(ufg_reduce_launcher launcher, const ufg_reduce_params *params,
                        void *stream)
{
    return ufg_sim_queue_reduce(launcher, params, ufg_sim_current, stream);
}

/* An injected error replaces the result once; else an error a queued operation reported
 * when it ran (CUDA reports those at the next call too). */
static int
ufg_sim_after_launch(int result, void *stream)
{
    const int injected = atomic_exchange(&ufg_sim_pending_error, 0);

    (void)stream;
    if (injected) {
        return injected;
    }
    return result ? result : ufg_sim_take_async_error();
}

static int
ufg_sim_skip_kernels(void)
{
    return atomic_load_explicit(&ufg_sim_skipping, memory_order_relaxed);
}

int
ufg_sim_set_skip_kernels(int skip)
{
    return atomic_exchange(&ufg_sim_skipping, skip != 0);
}

int
ufg_sim_inject_error(const char *name)
{
    for (int i = 1; i < UFG_SIM_NERRORS; i++) {
        if (strcmp(ufg_sim_errors[i].name, name) == 0) {
            atomic_store(&ufg_sim_pending_error, ufg_sim_errors[i].code);
            return 0;
        }
    }
    return -1;
}

int
ufg_sim_stall(void *stream, int device, double seconds)
{
    const int error = ufg_sim_check_device(device);

    return error ? error : ufg_sim_queue_stall(stream, device, seconds);
}

static const ufg_backend ufg_sim_backend = {
    .name = "sim",
    .id = UFG_BACKEND_SIM,
    .is_available = ufg_sim_is_available,
    .device_count = ufg_sim_device_count,
    .current_device = ufg_sim_current_device,
    .multiprocessor_count = ufg_sim_multiprocessor_count,
    .device_enter = ufg_sim_device_enter,
    .device_leave = ufg_sim_device_leave,
    .malloc_async = ufg_sim_malloc_async,
    .free_async = ufg_sim_free_async,
    .memcpy = ufg_sim_memcpy,
    .stream_create = ufg_sim_stream_create,
    .stream_destroy = ufg_sim_stream_end,
    .stream_wait = ufg_sim_stream_wait,
    .synchronize_stream = ufg_sim_synchronize_stream,
    .synchronize_device = ufg_sim_synchronize_device,
    .event_record = ufg_sim_event_record,
    .event_done = ufg_sim_event_done,
    .event_destroy = ufg_sim_event_destroy,
    .pointer_device = ufg_sim_pointer_device,
    .allocation_of = ufg_sim_allocation_of,
    .stream_device = ufg_sim_stream_device_of,
    .error_name = ufg_sim_error_name,
    .error_string = ufg_sim_error_string,
    .after_launch = ufg_sim_after_launch,
    .skip_kernels = ufg_sim_skip_kernels,
    .queue_elementwise = ufg_sim_queue_elementwise,
    .queue_reduce = ufg_sim_queue_reduction,
};

const ufg_backend *
ufg_backend_sim(const char **error)
{
    *error = ufg_sim_configure();
    return *error == NULL ? &ufg_sim_backend : NULL;
}
