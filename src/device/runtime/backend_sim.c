/*
 * The simulator backend: "device" memory is host RAM, streams are plain integers and every
 * operation completes before it returns, so stream order holds trivially.  Kernels are the
 * generated ones compiled by the host compiler (see device_kernel.h); this file only provides
 * the runtime services they need.
 *
 * UFUNCGEN_SIM_DEVICES sets how many devices exist (default 2, so multi-device code paths are
 * exercised).  UFUNCGEN_SIM_SKIP_KERNELS=1 makes launches skip the kernel itself (everything
 * else about a launch still happens), so that benchmarks/device_dispatch.py measures the
 * host-side cost of a device call alone; ufuncgen._device.sim_set_skip_kernels flips it.  Allocations are recorded with their device so pointer_device can answer for
 * any pointer into them; a pointer the simulator did not allocate (another library's "device"
 * array, which under the simulator is host memory) belongs to the current device.
 */
#include "backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ufuncgen/device_kernel.h"

#define UFG_SIM_DEFAULT_DEVICES 2
#define UFG_SIM_MAX_DEVICES 64
/* cudaMalloc's alignment, which kernels and consumers may rely on. */
#define UFG_SIM_ALIGNMENT 256
/* Launch configuration is derived from this, so a small value makes grid-stride loops loop. */
#define UFG_SIM_MULTIPROCESSORS 2
/* Simulated stream handles start above CUDA's special handles 0, 1 and 2. */
#define UFG_SIM_FIRST_STREAM 16

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
    const ufg_sim_error *error = ufg_sim_find_error(code);
    return error != NULL ? error->name : "cudaErrorUnknown";
}

static const char *
ufg_sim_error_string(int code)
{
    const ufg_sim_error *error = ufg_sim_find_error(code);
    return error != NULL ? error->string : "unknown error";
}

/* ------------------------------------------------------------------ configuration */

static int ufg_sim_ndevices = UFG_SIM_DEFAULT_DEVICES;
/* The device made current by device_enter, per host thread, as in CUDA. */
static _Thread_local int ufg_sim_current = 0;
/* The error the next launch reports (0: none); set from tests, read by launching threads. */
static atomic_int ufg_sim_pending_error = 0;
static atomic_uintptr_t ufg_sim_next_stream = UFG_SIM_FIRST_STREAM;
/* 1: launches skip the kernel (UFUNCGEN_SIM_SKIP_KERNELS); flipped from any thread. */
static atomic_int ufg_sim_skipping = 0;

/* The whole number in environment variable `name` if it is set and within lo..hi; -1 if it
 * is set to anything else; `unset` if it is unset or empty. */
static long
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

    if (devices < 0) {
        return "UFUNCGEN_SIM_DEVICES must be a whole number of simulated devices from 1 to 64";
    }
    if (skip < 0) {
        return "UFUNCGEN_SIM_SKIP_KERNELS must be 1 (launches skip their kernels) or 0";
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

/* ------------------------------------------------------------------ allocation registry */

/* Live allocations sorted by base address, so an interior pointer is found by bisection.
 * Guarded by a mutex: allocations are freed from whichever thread drops the last reference. */
typedef struct {
    uintptr_t base;
    size_t size;
    int device;
} ufg_sim_allocation;

static pthread_mutex_t ufg_sim_lock = PTHREAD_MUTEX_INITIALIZER;
static ufg_sim_allocation *ufg_sim_allocations = NULL;
static size_t ufg_sim_nallocations = 0, ufg_sim_capacity = 0;

/* Index of the first allocation whose base is > address.  Caller holds the lock. */
static size_t
ufg_sim_upper_bound(uintptr_t address)
{
    size_t lo = 0, hi = ufg_sim_nallocations;

    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (ufg_sim_allocations[mid].base <= address) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

static int
ufg_sim_register(uintptr_t base, size_t size, int device)
{
    int result = 0;
    size_t at;

    pthread_mutex_lock(&ufg_sim_lock);
    if (ufg_sim_nallocations == ufg_sim_capacity) {
        const size_t capacity = ufg_sim_capacity ? 2 * ufg_sim_capacity : 64;
        ufg_sim_allocation *grown =
            realloc(ufg_sim_allocations, capacity * sizeof(*grown));
        if (grown == NULL) {
            result = UFG_ERROR_MEMORY_ALLOCATION;
            goto done;
        }
        ufg_sim_allocations = grown;
        ufg_sim_capacity = capacity;
    }
    at = ufg_sim_upper_bound(base);
    memmove(&ufg_sim_allocations[at + 1], &ufg_sim_allocations[at],
            (ufg_sim_nallocations - at) * sizeof(ufg_sim_allocation));
    ufg_sim_allocations[at] = (ufg_sim_allocation){base, size, device};
    ufg_sim_nallocations++;
done:
    pthread_mutex_unlock(&ufg_sim_lock);
    return result;
}

/* Removes the allocation starting exactly at base; returns -1 if there is none. */
static int
ufg_sim_unregister(uintptr_t base)
{
    int result = -1;
    size_t at;

    pthread_mutex_lock(&ufg_sim_lock);
    at = ufg_sim_upper_bound(base);
    if (at > 0 && ufg_sim_allocations[at - 1].base == base) {
        memmove(&ufg_sim_allocations[at - 1], &ufg_sim_allocations[at],
                (ufg_sim_nallocations - at) * sizeof(ufg_sim_allocation));
        ufg_sim_nallocations--;
        result = 0;
    }
    pthread_mutex_unlock(&ufg_sim_lock);
    return result;
}

/* The device of the allocation containing address, or -1 if the simulator did not make it. */
static int
ufg_sim_lookup(uintptr_t address)
{
    int device = -1;
    size_t at;

    pthread_mutex_lock(&ufg_sim_lock);
    at = ufg_sim_upper_bound(address);
    if (at > 0) {
        const ufg_sim_allocation *a = &ufg_sim_allocations[at - 1];
        if (address - a->base < a->size) {
            device = a->device;
        }
    }
    pthread_mutex_unlock(&ufg_sim_lock);
    return device;
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
    *device = ufg_sim_current;
    return 0;
}

static int
ufg_sim_multiprocessor_count(int device, int *count)
{
    *count = UFG_SIM_MULTIPROCESSORS;
    return ufg_sim_check_device(device);
}

static int
ufg_sim_device_enter(int device, int *previous)
{
    const int error = ufg_sim_check_device(device);

    if (error) {
        return error;
    }
    *previous = ufg_sim_current;
    ufg_sim_current = device;
    return 0;
}

static void
ufg_sim_device_leave(int previous)
{
    ufg_sim_current = previous;
}

static int
ufg_sim_malloc_async(void **ptr, size_t nbytes, int device, void *stream)
{
    /* aligned_alloc wants a multiple of the alignment; zero bytes still get a unique,
     * registered address, as consumers expect a non-null pointer for empty arrays. */
    const size_t size = nbytes == 0 ? UFG_SIM_ALIGNMENT
        : (nbytes + UFG_SIM_ALIGNMENT - 1) / UFG_SIM_ALIGNMENT * UFG_SIM_ALIGNMENT;
    const int error = ufg_sim_check_device(device);
    void *memory;

    (void)stream;
    if (error) {
        return error;
    }
    if (size < nbytes) {
        return UFG_ERROR_MEMORY_ALLOCATION;     /* the rounding overflowed */
    }
    memory = aligned_alloc(UFG_SIM_ALIGNMENT, size);
    if (memory == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    if (ufg_sim_register((uintptr_t)memory, size, device) != 0) {
        free(memory);
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    *ptr = memory;
    return 0;
}

static int
ufg_sim_free_async(void *ptr, int device, void *stream)
{
    (void)device;
    (void)stream;
    if (ptr == NULL) {
        return 0;
    }
    /* cudaFreeAsync rejects pointers it did not allocate; so do we, rather than corrupt. */
    if (ufg_sim_unregister((uintptr_t)ptr) != 0) {
        return UFG_ERROR_INVALID_VALUE;
    }
    free(ptr);
    return 0;
}

static int
ufg_sim_memcpy(void *dst, const void *src, size_t nbytes, ufg_memcpy_kind kind, int device,
               void *stream)
{
    const int error = ufg_sim_check_device(device);

    (void)kind;
    (void)stream;
    if (error) {
        return error;
    }
    if (nbytes > 0) {
        memmove(dst, src, nbytes);
    }
    return 0;
}

static int
ufg_sim_stream_create(int device, void **stream)
{
    const int error = ufg_sim_check_device(device);

    if (error) {
        return error;
    }
    *stream = (void *)atomic_fetch_add(&ufg_sim_next_stream, 1);
    return 0;
}

static int
ufg_sim_stream_destroy(void *stream)
{
    return (uintptr_t)stream < UFG_SIM_FIRST_STREAM ? UFG_ERROR_INVALID_RESOURCE_HANDLE : 0;
}

/* The last waits asked for, so tests can see that a consumer waits for its producer. */
static uintptr_t ufg_sim_waits[UFG_SIM_MAX_WAITS][2];
static int ufg_sim_nwaits;

static int
ufg_sim_stream_wait(void *consumer, void *producer, int device)
{
    if (ufg_sim_nwaits < UFG_SIM_MAX_WAITS) {
        ufg_sim_waits[ufg_sim_nwaits][0] = (uintptr_t)consumer;
        ufg_sim_waits[ufg_sim_nwaits][1] = (uintptr_t)producer;
        ufg_sim_nwaits++;
    }
    return ufg_sim_check_device(device);
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
    (void)stream;
    return ufg_sim_check_device(device);
}

static int
ufg_sim_synchronize_device(int device)
{
    return ufg_sim_check_device(device);
}

static int
ufg_sim_pointer_device(const void *ptr)
{
    int device;

    if (ptr == NULL) {
        return -1;
    }
    device = ufg_sim_lookup((uintptr_t)ptr);
    return device >= 0 ? device : ufg_sim_current;
}

/* Launches ran to completion; an injected error replaces the result once. */
static int
ufg_sim_after_launch(int result, void *stream)
{
    const int injected = atomic_exchange(&ufg_sim_pending_error, 0);

    (void)stream;
    return injected ? injected : result;
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
    .stream_destroy = ufg_sim_stream_destroy,
    .stream_wait = ufg_sim_stream_wait,
    .synchronize_stream = ufg_sim_synchronize_stream,
    .synchronize_device = ufg_sim_synchronize_device,
    .pointer_device = ufg_sim_pointer_device,
    .error_name = ufg_sim_error_name,
    .error_string = ufg_sim_error_string,
    .after_launch = ufg_sim_after_launch,
    .skip_kernels = ufg_sim_skip_kernels,
};

const ufg_backend *
ufg_backend_sim(const char **error)
{
    *error = ufg_sim_configure();
    return *error == NULL ? &ufg_sim_backend : NULL;
}
