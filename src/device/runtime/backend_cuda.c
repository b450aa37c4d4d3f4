/*
 * The CUDA backend: the CUDA runtime API, linked statically (CUDA::cudart_static), so the
 * module loads on machines with no driver and reports the missing driver or device as a CUDA
 * error at the first device operation instead of failing at import.
 *
 * Builds without CUDA (no nvcc, or -DUFUNCGEN_CUDA=OFF) compile only the stub at the end,
 * which reports the backend unavailable.
 */
#include "backend.h"

#include "ufuncgen/device_kernel.h"

#ifdef UFG_HAVE_CUDA

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

/* cuda.h for the driver's types only: its two context functions are asked of the runtime
 * (cudaGetDriverEntryPointByVersion), so the module still links against no libcuda. */
#include <cuda.h>
#include <cuda_runtime.h>

/* Devices this process has worked on (bit d: device d; devices from 64 on share bit 63), so
 * that synchronising "every device" waits for those, not creates a context on each GPU. */
static atomic_uint_fast64_t ufg_cuda_devices_used;

static uint64_t
ufg_cuda_device_bit(int device)
{
    return (uint64_t)1 << (device < 63 ? device : 63);
}

/*
 * A failed call also leaves its error as the runtime's "last error", which the next kernel
 * launcher would read back with cudaGetLastError and report as its own.  Every call goes
 * through here, which clears that state for non-sticky errors.
 */
static int
ufg_cuda_result(cudaError_t error)
{
    if (error != cudaSuccess) {
        (void)cudaGetLastError();
    }
    return (int)error;
}

/* The caller's current context, kept across calls (defined below, "the caller's context"). */
static int ufg_cuda_context_save(CUcontext *context);
static void ufg_cuda_context_restore(CUcontext saved);

static const char *
ufg_cuda_error_name(int code)
{
    return cudaGetErrorName((cudaError_t)code);
}

static const char *
ufg_cuda_error_string(int code)
{
    return cudaGetErrorString((cudaError_t)code);
}

/* Asked once: a machine does not gain a driver or a GPU while a process runs. */
static int
ufg_cuda_is_available(const char **reason)
{
    static int probed = 0, available = 0;
    static char why[256];
    int count = 0;

    if (!probed) {
        const cudaError_t error = cudaGetDeviceCount(&count);
        if (error != cudaSuccess) {
            snprintf(why, sizeof(why), "CUDA error %s (%s)", cudaGetErrorName(error),
                     cudaGetErrorString(error));
            (void)cudaGetLastError();
        }
        else if (count == 0) {
            snprintf(why, sizeof(why), "no CUDA device is visible");
        }
        available = error == cudaSuccess && count > 0;
        probed = 1;
    }
    *reason = available ? NULL : why;
    return available;
}

static int
ufg_cuda_device_count(int *count)
{
    return ufg_cuda_result(cudaGetDeviceCount(count));
}

static int
ufg_cuda_current_device(int *device)
{
    return ufg_cuda_result(cudaGetDevice(device));
}

static int
ufg_cuda_multiprocessor_count(int device, int *count)
{
    CUcontext saved;
    int error;

    (void)ufg_cuda_context_save(&saved);
    error = ufg_cuda_result(cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device));
    ufg_cuda_context_restore(saved);
    return error;
}

/* ------------------------------------------------------------------ the caller's context */

/*
 * Every operation leaves the calling thread's current context as it found it, none included.
 * cudaGetDevice answers 0 on a thread that has no context current, and since CUDA 12
 * cudaSetDevice(0) creates device 0's primary context (hundreds of MiB, and an error on a GPU
 * in exclusive-process mode that another process holds): putting the "previous device" back
 * by number made a context on device 0 for every process and thread that used only device 1.
 * It also replaced a driver API user's own context (PyCUDA's) by a primary one.  So the
 * context itself is saved and restored, through the driver's cuCtxGetCurrent and
 * cuCtxSetCurrent (NULL: none current).
 */
typedef CUresult (*ufg_cu_ctx_get_current)(CUcontext *);
typedef CUresult (*ufg_cu_ctx_set_current)(CUcontext);

static ufg_cu_ctx_get_current ufg_cuda_ctx_get_current;
static ufg_cu_ctx_set_current ufg_cuda_ctx_set_current;
static pthread_once_t ufg_cuda_ctx_once = PTHREAD_ONCE_INIT;

/* A driver function by name.  ByVersion came with CUDA 12.5 (13 has only it); 4000: these
 * symbols' version since CUDA 4.0, unchanged since. */
#if CUDART_VERSION >= 12050
#define UFG_CUDA_DRIVER_ENTRY(name, fn) \
    cudaGetDriverEntryPointByVersion((name), (fn), 4000, cudaEnableDefault, NULL)
#elif CUDART_VERSION >= 12000
#define UFG_CUDA_DRIVER_ENTRY(name, fn) \
    cudaGetDriverEntryPoint((name), (fn), cudaEnableDefault, NULL)
#else
#define UFG_CUDA_DRIVER_ENTRY(name, fn) cudaGetDriverEntryPoint((name), (fn), cudaEnableDefault)
#endif

static void
ufg_cuda_find_context_functions(void)
{
    void *get = NULL, *set = NULL;

    if (UFG_CUDA_DRIVER_ENTRY("cuCtxGetCurrent", &get) != cudaSuccess ||
        UFG_CUDA_DRIVER_ENTRY("cuCtxSetCurrent", &set) != cudaSuccess) {
        (void)cudaGetLastError();
        return;     /* no driver: no context to keep either */
    }
    ufg_cuda_ctx_get_current = (ufg_cu_ctx_get_current)get;
    ufg_cuda_ctx_set_current = (ufg_cu_ctx_set_current)set;
}

/* 1 with the caller's current context (NULL: none) in *context; 0 when the driver cannot say. */
static int
ufg_cuda_context_save(CUcontext *context)
{
    pthread_once(&ufg_cuda_ctx_once, ufg_cuda_find_context_functions);
    *context = NULL;
    return ufg_cuda_ctx_get_current != NULL && ufg_cuda_ctx_get_current(context) == CUDA_SUCCESS;
}

static void
ufg_cuda_context_restore(CUcontext saved)
{
    CUcontext current;

    if (ufg_cuda_context_save(&current) && current != saved) {
        (void)ufg_cuda_ctx_set_current(saved);
    }
}

/*
 * The device's default stream-ordered pool keeps what is freed (release threshold: all of
 * it), as CuPy's and PyTorch's allocators do: with the default threshold of 0 every
 * synchronisation would hand the pool's memory back to the driver and the next allocation
 * would map it again.  Set when a call first enters the device (ufg_cuda_note_device): before
 * its first allocation, and before the first CUB reduction or scan, whose temporary storage
 * comes from the same pool (an add.reduce into a CuPy out= may allocate nothing else).
 */
static void
ufg_cuda_keep_pool(int device)
{
    cudaMemPool_t pool;
    uint64_t threshold = UINT64_MAX;

    if (ufg_cuda_result(cudaDeviceGetDefaultMemPool(&pool, device)) == 0) {
        (void)ufg_cuda_result(
            cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
    }
}

/* Marks the device used, its pool kept the first time.  Every call enters a device: a plain
 * load answers all but the first, with no locked read-modify-write. */
static void
ufg_cuda_note_device(int device)
{
    const uint64_t bit = ufg_cuda_device_bit(device);

    if (atomic_load_explicit(&ufg_cuda_devices_used, memory_order_relaxed) & bit) {
        return;
    }
    if (!(atomic_fetch_or(&ufg_cuda_devices_used, bit) & bit)) {
        ufg_cuda_keep_pool(device);
    }
}

/* Setting the device that is already current is cheap, and skipped. */
static int
ufg_cuda_device_enter(int device, ufg_device_scope *saved)
{
    CUcontext context = NULL;
    const int known = ufg_cuda_context_save(&context);
    int error = 0;

    saved->context = context;
    saved->device = -1;
    /* Only a thread with a context current has a device to compare with (or, where the
     * driver cannot say, whatever cudaGetDevice answers, restored by number as before). */
    if (!known || context != NULL) {
        error = ufg_cuda_result(cudaGetDevice(&saved->device));
    }
    if (error == 0 && saved->device != device) {
        error = ufg_cuda_result(cudaSetDevice(device));
    }
    if (error == 0) {
        ufg_cuda_note_device(device);
    }
    return error;
}

static void
ufg_cuda_device_leave(const ufg_device_scope *saved)
{
    CUcontext unused;
    int current;

    if (ufg_cuda_context_save(&unused)) {
        ufg_cuda_context_restore((CUcontext)saved->context);
    }
    else if (saved->device >= 0 && cudaGetDevice(&current) == cudaSuccess &&
             current != saved->device) {
        (void)ufg_cuda_result(cudaSetDevice(saved->device));
    }
}

static int
ufg_cuda_malloc_async(void **ptr, size_t nbytes, int device, void *stream)
{
    ufg_device_scope saved;
    int error = ufg_cuda_device_enter(device, &saved);

    if (error) {
        return error;
    }
    /* A zero-byte request still gets an address: consumers expect non-null data pointers. */
    error = ufg_cuda_result(cudaMallocAsync(ptr, nbytes ? nbytes : 1, (cudaStream_t)stream));
    ufg_cuda_device_leave(&saved);
    return error;
}

static int
ufg_cuda_free_async(void *ptr, int device, void *stream)
{
    ufg_device_scope saved;
    int error = ufg_cuda_device_enter(device, &saved);

    if (error == 0) {
        error = ufg_cuda_result(cudaFreeAsync(ptr, (cudaStream_t)stream));
        ufg_cuda_device_leave(&saved);
    }
    /* Arrays dropped at interpreter exit, after the runtime tore down its contexts: the
     * memory went with the context. */
    return error == UFG_ERROR_CUDART_UNLOADING ? 0 : error;
}

/* Whether ptr is page-locked host memory, which a copy reads asynchronously (pageable memory
 * is staged before cudaMemcpyAsync returns). */
static int
ufg_cuda_is_pinned(const void *ptr)
{
    struct cudaPointerAttributes attributes;

    if (ufg_cuda_result(cudaPointerGetAttributes(&attributes, ptr)) != 0) {
        return 0;
    }
    return attributes.type == cudaMemoryTypeHost;
}

static int
ufg_cuda_memcpy(void *dst, const void *src, size_t nbytes, ufg_memcpy_kind kind, int device,
                void *stream)
{
    static const enum cudaMemcpyKind kinds[] = {
        [UFG_MEMCPY_HOST_TO_DEVICE] = cudaMemcpyHostToDevice,
        [UFG_MEMCPY_DEVICE_TO_HOST] = cudaMemcpyDeviceToHost,
        [UFG_MEMCPY_DEVICE_TO_DEVICE] = cudaMemcpyDeviceToDevice,
    };
    ufg_device_scope saved;
    int error = ufg_cuda_device_enter(device, &saved);

    if (error) {
        return error;
    }
    if (nbytes > 0) {
        error = ufg_cuda_result(
            cudaMemcpyAsync(dst, src, nbytes, kinds[kind], (cudaStream_t)stream));
        /* The host buffer is the caller's only until we return: wait where the copy may still
         * be reading or writing it. */
        if (error == 0 && (kind == UFG_MEMCPY_DEVICE_TO_HOST ||
                           (kind == UFG_MEMCPY_HOST_TO_DEVICE && ufg_cuda_is_pinned(src)))) {
            error = ufg_cuda_result(cudaStreamSynchronize((cudaStream_t)stream));
        }
    }
    ufg_cuda_device_leave(&saved);
    return error;
}

static int
ufg_cuda_stream_create(int device, int non_blocking, void **stream)
{
    ufg_device_scope saved;
    int error = ufg_cuda_device_enter(device, &saved);

    if (error) {
        return error;
    }
    /* Blocking by default: work on the legacy default stream still orders with it, which is
     * what CAI and DLPack consumers that name stream 1 expect. */
    error = ufg_cuda_result(cudaStreamCreateWithFlags(
        (cudaStream_t *)stream, non_blocking ? cudaStreamNonBlocking : cudaStreamDefault));
    ufg_cuda_device_leave(&saved);
    return error;
}

/* The calls below name no device: the runtime binds a context to a thread that has none
 * (its last device's primary one), which is put back to none afterwards. */
static int
ufg_cuda_stream_destroy(void *stream)
{
    CUcontext saved;
    int error;

    (void)ufg_cuda_context_save(&saved);
    error = ufg_cuda_result(cudaStreamDestroy((cudaStream_t)stream));
    ufg_cuda_context_restore(saved);
    return error;
}

static int
ufg_cuda_stream_wait(void *consumer, void *producer, int device)
{
    cudaEvent_t event;
    ufg_device_scope saved;
    int error = ufg_cuda_device_enter(device, &saved);

    if (error) {
        return error;
    }
    error = ufg_cuda_result(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    if (error == 0) {
        error = ufg_cuda_result(cudaEventRecord(event, (cudaStream_t)producer));
        if (error == 0) {
            error = ufg_cuda_result(cudaStreamWaitEvent((cudaStream_t)consumer, event, 0));
        }
        /* Safe at once: CUDA releases the event after the wait it was recorded for. */
        (void)cudaEventDestroy(event);
    }
    ufg_cuda_device_leave(&saved);
    return error;
}

static int
ufg_cuda_synchronize_stream(void *stream, int device)
{
    ufg_device_scope saved;
    int error = ufg_cuda_device_enter(device, &saved);

    if (error == 0) {
        error = ufg_cuda_result(cudaStreamSynchronize((cudaStream_t)stream));
        ufg_cuda_device_leave(&saved);
    }
    return error;
}

static int
ufg_cuda_event_record(void *stream, int device, void **event)
{
    ufg_device_scope saved;
    int error = ufg_cuda_device_enter(device, &saved);

    if (error) {
        return error;
    }
    error = ufg_cuda_result(cudaEventCreateWithFlags((cudaEvent_t *)event,
                                                     cudaEventDisableTiming));
    if (error == 0) {
        error = ufg_cuda_result(cudaEventRecord((cudaEvent_t)*event, (cudaStream_t)stream));
        if (error) {
            (void)cudaEventDestroy((cudaEvent_t)*event);
        }
    }
    ufg_cuda_device_leave(&saved);
    return error;
}

static int
ufg_cuda_event_done(void *event)
{
    CUcontext saved;
    cudaError_t status;

    (void)ufg_cuda_context_save(&saved);
    status = cudaEventQuery((cudaEvent_t)event);
    ufg_cuda_context_restore(saved);
    if (status == cudaErrorNotReady) {
        (void)cudaGetLastError();
        return 0;
    }
    return status == cudaSuccess ? 1 : -ufg_cuda_result(status);
}

static void
ufg_cuda_event_destroy(void *event)
{
    CUcontext saved;

    (void)ufg_cuda_context_save(&saved);
    (void)ufg_cuda_result(cudaEventDestroy((cudaEvent_t)event));
    ufg_cuda_context_restore(saved);
}

static int
ufg_cuda_synchronize_device(int device)
{
    ufg_device_scope saved;
    int error;

    /* Nothing was queued on a device this process never made current. */
    if (!(atomic_load(&ufg_cuda_devices_used) & ufg_cuda_device_bit(device))) {
        return 0;
    }
    error = ufg_cuda_device_enter(device, &saved);

    if (error == 0) {
        error = ufg_cuda_result(cudaDeviceSynchronize());
        ufg_cuda_device_leave(&saved);
    }
    return error;
}

static int
ufg_cuda_pointer_device(const void *ptr)
{
    struct cudaPointerAttributes attributes;
    CUcontext saved;
    int error;

    if (ptr == NULL) {
        return -1;
    }
    (void)ufg_cuda_context_save(&saved);
    error = ufg_cuda_result(cudaPointerGetAttributes(&attributes, ptr));
    ufg_cuda_context_restore(saved);
    if (error != 0) {
        return -1;
    }
    if (attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged) {
        return attributes.device;
    }
    return -1;
}

/* cudaStreamGetDevice came with CUDA 12.8; before it, the runtime API has no such question. */
static int
ufg_cuda_stream_device(void *stream)
{
#if CUDART_VERSION >= 12080
    CUcontext saved;
    int device, error;

    (void)ufg_cuda_context_save(&saved);
    error = ufg_cuda_result(cudaStreamGetDevice((cudaStream_t)stream, &device));
    ufg_cuda_context_restore(saved);
    return error == 0 ? device : -1;
#else
    (void)stream;
    return -1;
#endif
}

/* Launch errors come back from the launcher; errors inside a kernel surface at the next
 * synchronizing call, as CUDA defines them. */
static int
ufg_cuda_after_launch(int result, void *stream)
{
    (void)stream;
    return result;
}

static const ufg_backend ufg_cuda_backend = {
    .name = "cuda",
    .id = UFG_BACKEND_CUDA,
    .is_available = ufg_cuda_is_available,
    .device_count = ufg_cuda_device_count,
    .current_device = ufg_cuda_current_device,
    .multiprocessor_count = ufg_cuda_multiprocessor_count,
    .device_enter = ufg_cuda_device_enter,
    .device_leave = ufg_cuda_device_leave,
    .malloc_async = ufg_cuda_malloc_async,
    .free_async = ufg_cuda_free_async,
    .memcpy = ufg_cuda_memcpy,
    .stream_create = ufg_cuda_stream_create,
    .stream_destroy = ufg_cuda_stream_destroy,
    .stream_wait = ufg_cuda_stream_wait,
    .synchronize_stream = ufg_cuda_synchronize_stream,
    .event_record = ufg_cuda_event_record,
    .event_done = ufg_cuda_event_done,
    .event_destroy = ufg_cuda_event_destroy,
    .synchronize_device = ufg_cuda_synchronize_device,
    .pointer_device = ufg_cuda_pointer_device,
    .stream_device = ufg_cuda_stream_device,
    .error_name = ufg_cuda_error_name,
    .error_string = ufg_cuda_error_string,
    .after_launch = ufg_cuda_after_launch,
};

#else /* !UFG_HAVE_CUDA */

/* Built without CUDA: every operation fails the way CUDA does on a machine without it. */

#define UFG_NO_CUDA_REASON "ufuncgen was built without CUDA"

static int
ufg_nocuda_is_available(const char **reason)
{
    *reason = UFG_NO_CUDA_REASON;
    return 0;
}

static int
ufg_nocuda_fail(void)
{
    return UFG_ERROR_NO_DEVICE;
}

static int ufg_nocuda_int(int *out) { (void)out; return ufg_nocuda_fail(); }
static int
ufg_nocuda_device_int(int device, int *out)
{
    (void)device; (void)out;
    return ufg_nocuda_fail();
}
static int
ufg_nocuda_enter(int device, ufg_device_scope *saved)
{
    (void)device; (void)saved;
    return ufg_nocuda_fail();
}
static void ufg_nocuda_leave(const ufg_device_scope *saved) { (void)saved; }
static int
ufg_nocuda_malloc(void **ptr, size_t nbytes, int device, void *stream)
{
    (void)ptr; (void)nbytes; (void)device; (void)stream;
    return ufg_nocuda_fail();
}
static int
ufg_nocuda_free(void *ptr, int device, void *stream)
{
    (void)ptr; (void)device; (void)stream;
    return ufg_nocuda_fail();
}
static int
ufg_nocuda_memcpy(void *dst, const void *src, size_t nbytes, ufg_memcpy_kind kind, int device,
                  void *stream)
{
    (void)dst; (void)src; (void)nbytes; (void)kind; (void)device; (void)stream;
    return ufg_nocuda_fail();
}
static int
ufg_nocuda_stream_create(int device, int non_blocking, void **stream)
{
    (void)device; (void)non_blocking; (void)stream;
    return ufg_nocuda_fail();
}
static int ufg_nocuda_stream(void *stream) { (void)stream; return ufg_nocuda_fail(); }
static int
ufg_nocuda_stream_wait(void *consumer, void *producer, int device)
{
    (void)consumer; (void)producer; (void)device;
    return ufg_nocuda_fail();
}
static int
ufg_nocuda_sync_stream(void *stream, int device)
{
    (void)stream; (void)device;
    return ufg_nocuda_fail();
}
static int ufg_nocuda_sync_device(int device) { (void)device; return ufg_nocuda_fail(); }
static int ufg_nocuda_pointer_device(const void *ptr) { (void)ptr; return -1; }
static int ufg_nocuda_stream_device(void *stream) { (void)stream; return -1; }
static const char *
ufg_nocuda_error_name(int code)
{
    return code == UFG_ERROR_NO_DEVICE ? "cudaErrorNoDevice" : "cudaErrorUnknown";
}
static const char *
ufg_nocuda_error_string(int code)
{
    (void)code;
    return UFG_NO_CUDA_REASON;
}
static int ufg_nocuda_after_launch(int result, void *stream) { (void)stream; return result; }
static int
ufg_nocuda_event_record(void *stream, int device, void **event)
{
    (void)stream; (void)device; (void)event;
    return ufg_nocuda_fail();
}
static int ufg_nocuda_event_done(void *event) { (void)event; return 1; }
static void ufg_nocuda_event_destroy(void *event) { (void)event; }

static const ufg_backend ufg_cuda_backend = {
    .name = "cuda",
    .id = UFG_BACKEND_CUDA,
    .is_available = ufg_nocuda_is_available,
    .device_count = ufg_nocuda_int,
    .current_device = ufg_nocuda_int,
    .multiprocessor_count = ufg_nocuda_device_int,
    .device_enter = ufg_nocuda_enter,
    .device_leave = ufg_nocuda_leave,
    .malloc_async = ufg_nocuda_malloc,
    .free_async = ufg_nocuda_free,
    .memcpy = ufg_nocuda_memcpy,
    .stream_create = ufg_nocuda_stream_create,
    .stream_destroy = ufg_nocuda_stream,
    .stream_wait = ufg_nocuda_stream_wait,
    .synchronize_stream = ufg_nocuda_sync_stream,
    .event_record = ufg_nocuda_event_record,
    .event_done = ufg_nocuda_event_done,
    .event_destroy = ufg_nocuda_event_destroy,
    .synchronize_device = ufg_nocuda_sync_device,
    .pointer_device = ufg_nocuda_pointer_device,
    .stream_device = ufg_nocuda_stream_device,
    .error_name = ufg_nocuda_error_name,
    .error_string = ufg_nocuda_error_string,
    .after_launch = ufg_nocuda_after_launch,
};

#endif /* UFG_HAVE_CUDA */

const ufg_backend *
ufg_backend_cuda(const char **error)
{
    *error = NULL;
    return &ufg_cuda_backend;
}
