/*
 * The simulator's streams: queues of operations that one executor thread runs later than the
 * host queues them (see sim.h), with CUDA's ordering rules:
 *
 *   - a stream runs its operations in the order they were queued;
 *   - a wait (an event recorded on the producer, waited on by the consumer) holds the
 *     consumer until the producer has run what it had queued when the wait was asked for;
 *   - the legacy default stream (handles 0 and 1) waits for the work queued before on every
 *     blocking stream of its device, and blocking streams wait for the legacy stream's
 *     earlier work; streams are blocking unless created non-blocking;
 *   - the per-thread default stream (handle 2) is a blocking stream of the calling thread;
 *   - a handle the simulator did not create (another library's stream, under the simulator)
 *     is a blocking stream of the device it is first used on;
 *   - a kernel, or an event, on a stream the simulator made for another device is refused
 *     (cudaErrorInvalidResourceHandle), as CUDA refuses them; copies, frees and waits are not.
 *
 * A stream the simulator made leaves the table once it is destroyed and idle: its queue run,
 * and no event, queued wait or waiting host thread naming it (`refs`).  Its handle is never
 * handed out again, so a handle the simulator made that the table lacks is a destroyed one.
 */
#define _GNU_SOURCE
#include "sim.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"

#define UFG_SIM_MAX_DEVICES 64
/* Far above CUDA's special handles 0, 1 and 2, and above the small numbers that tests and
 * stand-ins of other libraries use as handles of streams the simulator did not make: a
 * handle in the range it hands out names one of its own, live or destroyed. */
#define UFG_SIM_FIRST_STREAM 0x10000
#define UFG_SIM_DEFAULT_DELAY_US 20

typedef struct ufg_sim_stream {
    uintptr_t handle;
    int device;
    int legacy;                 /* the legacy default stream of `device` */
    int non_blocking;           /* does not order with the legacy default stream */
    int made;                   /* made by ufg_sim_stream_new: its device is known, and it
                                 * leaves the table once destroyed and idle */
    int destroyed;
    int refs;                   /* events, queued waits and host threads naming it */
    struct ufg_sim_op *head, *tail;
    uint64_t queued, done;      /* operations queued so far, and run so far */
    /* The implicit waits already queued between this stream and its legacy stream: the
     * legacy stream's on this one up to operation legacy_waited, and this one's on the legacy
     * stream up to waited_legacy.  A wait queued again for no new work would only cost memory:
     * each legacy launch once queued one per blocking stream with pending work. */
    uint64_t legacy_waited, waited_legacy;
    struct ufg_sim_stream *next;
} ufg_sim_stream;

typedef enum {
    UFG_SIM_OP_KERNEL,
    UFG_SIM_OP_REDUCE,
    UFG_SIM_OP_COPY,
    UFG_SIM_OP_FREE,
    UFG_SIM_OP_WAIT,
    UFG_SIM_OP_STALL,
} ufg_sim_op_kind;

typedef struct ufg_sim_op {
    struct ufg_sim_op *next;
    ufg_sim_op_kind kind;
    uint64_t not_before;        /* ns on the monotonic clock */
    int nuses;
    ufg_sim_use uses[UFG_DEVICE_MAX_ARGS + 1];
    union {
        struct {
            ufg_elementwise_launcher launcher;
            ufg_kernel_params params;
        } kernel;
        struct {
            ufg_reduce_launcher launcher;
            ufg_reduce_params params;
        } reduce;
        struct {
            void *dst;
            const void *src;
            size_t nbytes;
            void *staging;      /* the host source's bytes, taken when the copy was queued */
        } copy;
        ufg_sim_block *block;
        struct {
            ufg_sim_stream *producer;
            uint64_t target;
        } wait;
    } u;
} ufg_sim_op;

/* ------------------------------------------------------------------ state */

static int ufg_sim_sync = 0;
static uint64_t ufg_sim_delay_ns = UFG_SIM_DEFAULT_DELAY_US * 1000;
static uint64_t ufg_sim_random_state = 0x9E3779B97F4A7C15u;

static ufg_sim_stream *ufg_sim_streams = NULL;
static ufg_sim_stream *ufg_sim_legacy[UFG_SIM_MAX_DEVICES];
static _Thread_local ufg_sim_stream *ufg_sim_per_thread[UFG_SIM_MAX_DEVICES];
static uintptr_t ufg_sim_next_handle = UFG_SIM_FIRST_STREAM;

static pthread_cond_t ufg_sim_work;     /* an operation was queued: for the executor */
static pthread_cond_t ufg_sim_progress; /* an operation ran: for waiting host threads */
static int ufg_sim_executor_running = 0;

static int ufg_sim_async_error = 0;
static char ufg_sim_message[512] = "";

/* ------------------------------------------------------------------ configuration */

static void
ufg_sim_init_conditions(void)
{
    pthread_condattr_t attributes;

    pthread_condattr_init(&attributes);
    pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
    pthread_cond_init(&ufg_sim_work, &attributes);
    pthread_cond_init(&ufg_sim_progress, &attributes);
    pthread_condattr_destroy(&attributes);
}

/* A forked child has no executor: the next operation starts one (the queues are intact). */
static void ufg_sim_before_fork(void) { pthread_mutex_lock(&ufg_sim_mutex); }
static void ufg_sim_after_fork_in_parent(void) { pthread_mutex_unlock(&ufg_sim_mutex); }

static void
ufg_sim_after_fork_in_child(void)
{
    pthread_mutex_init(&ufg_sim_mutex, NULL);
    ufg_sim_init_conditions();
    ufg_sim_executor_running = 0;
}

const char *
ufg_sim_streams_configure(void)
{
    const long sync = ufg_sim_env_number("UFUNCGEN_SIM_SYNC", 0, 1, 0);
    const long seed = ufg_sim_env_number("UFUNCGEN_SIM_SEED", 0, 0x7FFFFFFF, 0);
    const long delay = ufg_sim_env_number("UFUNCGEN_SIM_DELAY_US", 0, 1000000,
                                          UFG_SIM_DEFAULT_DELAY_US);

    if (sync < 0) {
        return "UFUNCGEN_SIM_SYNC must be 1 (every operation runs at once, in the calling "
               "thread) or 0 (asynchronous streams, the default)";
    }
    if (seed < 0) {
        return "UFUNCGEN_SIM_SEED must be a whole number from 0 to 2147483647";
    }
    if (delay < 0) {
        return "UFUNCGEN_SIM_DELAY_US must be a whole number of microseconds from 0 to 1000000";
    }
    ufg_sim_sync = (int)sync;
    ufg_sim_delay_ns = (uint64_t)delay * 1000;
    ufg_sim_random_state ^= (uint64_t)seed * 0xD1B54A32D192ED03u;
    ufg_sim_init_conditions();
    pthread_atfork(ufg_sim_before_fork, ufg_sim_after_fork_in_parent,
                   ufg_sim_after_fork_in_child);
    return NULL;
}

int
ufg_sim_is_async(void)
{
    return !ufg_sim_sync;
}

/* ------------------------------------------------------------------ helpers */

static uint64_t
ufg_sim_now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* xorshift64*: the executor's choices and the delays.  Caller holds the mutex. */
static uint64_t
ufg_sim_random(void)
{
    uint64_t x = ufg_sim_random_state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    ufg_sim_random_state = x;
    return x * 0x2545F4914F6CDD1Du;
}

/* Keeps the first error an operation reported until the host asks for it. */
static void
ufg_sim_note_error(int code, const char *message)
{
    if (ufg_sim_async_error == 0) {
        ufg_sim_async_error = code;
        snprintf(ufg_sim_message, sizeof ufg_sim_message, "%s", message);
    }
}

/* Caller holds the mutex. */
static int
ufg_sim_take_error_locked(void)
{
    const int error = ufg_sim_async_error;

    ufg_sim_async_error = 0;
    return error;
}

int
ufg_sim_take_async_error(void)
{
    int error;

    pthread_mutex_lock(&ufg_sim_mutex);
    error = ufg_sim_take_error_locked();
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

const char *
ufg_sim_async_message(void)
{
    return ufg_sim_message;
}

/* ------------------------------------------------------------------ the stream table */

/* What ufg_sim_resolve reports for a handle whose stream was destroyed and has left the
 * table (internal: callers turn it into their own error). */
#define UFG_SIM_RETIRED (-1)

static ufg_sim_stream *
ufg_sim_stream_add(uintptr_t handle, int device, int legacy)
{
    ufg_sim_stream *stream = calloc(1, sizeof(*stream));

    if (stream != NULL) {
        stream->handle = handle;
        stream->device = device;
        stream->legacy = legacy;
        stream->next = ufg_sim_streams;
        ufg_sim_streams = stream;
    }
    return stream;
}

/* The table's stream for a handle other than the default ones, or NULL.  Caller holds the
 * mutex. */
static ufg_sim_stream *
ufg_sim_lookup(uintptr_t handle)
{
    for (ufg_sim_stream *s = ufg_sim_streams; s != NULL; s = s->next) {
        if (s->handle == handle) {
            return s;
        }
    }
    return NULL;
}

/* Handles are handed out in order and never again, so one in the range given so far that the
 * table lacks names a stream that was destroyed and retired. */
static int
ufg_sim_was_made(uintptr_t handle)
{
    return handle >= UFG_SIM_FIRST_STREAM && handle < ufg_sim_next_handle;
}

/* The stream a handle names for work on `device`, made on first use, into *out.  0,
 * UFG_ERROR_MEMORY_ALLOCATION, or UFG_SIM_RETIRED.  Caller holds the mutex. */
static int
ufg_sim_resolve(void *handle, int device, ufg_sim_stream **out)
{
    const uintptr_t h = (uintptr_t)handle;
    ufg_sim_stream **slot = h == 0 || h == 1 ? &ufg_sim_legacy[device]
                          : h == 2 ? &ufg_sim_per_thread[device] : NULL;

    if (slot != NULL) {
        if (*slot == NULL) {
            *slot = ufg_sim_stream_add(h == 2 ? 2 : 0, device, h != 2);
        }
        *out = *slot;
    }
    else if ((*out = ufg_sim_lookup(h)) == NULL) {
        if (ufg_sim_was_made(h)) {
            return UFG_SIM_RETIRED;
        }
        *out = ufg_sim_stream_add(h, device, 0);
    }
    return *out == NULL ? UFG_ERROR_MEMORY_ALLOCATION : 0;
}

/* Takes a destroyed, idle stream the simulator made out of the table.  Caller holds the
 * mutex. */
static void
ufg_sim_retire_if_idle(ufg_sim_stream *stream)
{
    if (!stream->made || !stream->destroyed || stream->head != NULL || stream->refs > 0) {
        return;
    }
    for (ufg_sim_stream **link = &ufg_sim_streams; *link != NULL; link = &(*link)->next) {
        if (*link == stream) {
            *link = stream->next;
            free(stream);
            return;
        }
    }
}

/* An event, a queued wait or a waiting thread names the stream (hold) or no longer does
 * (let_go, which may retire it).  Caller holds the mutex. */
static void
ufg_sim_stream_hold(ufg_sim_stream *stream)
{
    stream->refs++;
}

static void
ufg_sim_stream_let_go(ufg_sim_stream *stream)
{
    stream->refs--;
    ufg_sim_retire_if_idle(stream);
}

int
ufg_sim_stream_new(int device, int non_blocking, void **stream)
{
    ufg_sim_stream *s;

    pthread_mutex_lock(&ufg_sim_mutex);
    s = ufg_sim_stream_add(ufg_sim_next_handle, device, 0);
    if (s != NULL) {
        ufg_sim_next_handle++;
        s->non_blocking = non_blocking != 0;
        s->made = 1;
    }
    pthread_mutex_unlock(&ufg_sim_mutex);
    if (s == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    *stream = (void *)s->handle;
    return 0;
}

int
ufg_sim_stream_end(void *stream)
{
    ufg_sim_stream *s = NULL;
    int error;

    if ((uintptr_t)stream < UFG_SIM_FIRST_STREAM) {
        return UFG_ERROR_INVALID_RESOURCE_HANDLE;
    }
    pthread_mutex_lock(&ufg_sim_mutex);
    error = ufg_sim_resolve(stream, 0, &s);
    if (error == UFG_SIM_RETIRED || (error == 0 && s->destroyed)) {
        error = UFG_ERROR_INVALID_RESOURCE_HANDLE;
    }
    else if (error == 0) {
        s->destroyed = 1;       /* what it has queued still runs, as in CUDA */
        ufg_sim_retire_if_idle(s);
    }
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

int
ufg_sim_stream_device(void *stream)
{
    const ufg_sim_stream *s = ufg_sim_lookup((uintptr_t)stream);

    return s != NULL && s->made ? s->device : -1;
}

/* How many streams the simulator made are still in the table (destroyed ones included until
 * they are idle): for tests. */
int
ufg_sim_stream_count(void)
{
    int count = 0;

    pthread_mutex_lock(&ufg_sim_mutex);
    for (const ufg_sim_stream *s = ufg_sim_streams; s != NULL; s = s->next) {
        count += s->made;
    }
    pthread_mutex_unlock(&ufg_sim_mutex);
    return count;
}

/* ------------------------------------------------------------------ running an operation */

/* Runs op (its stream's next); caller holds the mutex, which is let go around kernels and
 * copies.  Returns 0, or the error the operation reported (already noted). */
static int
ufg_sim_run(ufg_sim_op *op)
{
    char message[sizeof ufg_sim_message];
    int result = 0;

    for (int k = 0; k < op->nuses; k++) {
        if (ufg_sim_use_check(&op->uses[k], message, sizeof message) != 0) {
            ufg_sim_note_error(UFG_SIM_ERROR_ORDER, message);
            return UFG_SIM_ERROR_ORDER;
        }
    }
    switch (op->kind) {
    case UFG_SIM_OP_KERNEL:
        pthread_mutex_unlock(&ufg_sim_mutex);
        result = op->u.kernel.launcher(&op->u.kernel.params, NULL);
        pthread_mutex_lock(&ufg_sim_mutex);
        break;
    case UFG_SIM_OP_REDUCE:
        pthread_mutex_unlock(&ufg_sim_mutex);
        result = op->u.reduce.launcher(&op->u.reduce.params, NULL);
        pthread_mutex_lock(&ufg_sim_mutex);
        break;
    case UFG_SIM_OP_COPY:
        pthread_mutex_unlock(&ufg_sim_mutex);
        memmove(op->u.copy.dst, op->u.copy.staging ? op->u.copy.staging : op->u.copy.src,
                op->u.copy.nbytes);
        pthread_mutex_lock(&ufg_sim_mutex);
        break;
    case UFG_SIM_OP_FREE:
        ufg_sim_block_run_free(op->u.block);
        break;
    case UFG_SIM_OP_WAIT:
    case UFG_SIM_OP_STALL:
        break;      /* their effect is in when they may run */
    }
    if (result != 0) {
        snprintf(message, sizeof message, "a kernel reported CUDA error %d", result);
        ufg_sim_note_error(result, message);
    }
    return result;
}

/* Caller holds the mutex. */
static void
ufg_sim_op_free(ufg_sim_op *op)
{
    for (int k = 0; k < op->nuses; k++) {
        ufg_sim_use_end(&op->uses[k]);
    }
    if (op->kind == UFG_SIM_OP_COPY) {
        free(op->u.copy.staging);
    }
    if (op->kind == UFG_SIM_OP_WAIT) {
        ufg_sim_stream_let_go(op->u.wait.producer);
    }
    free(op);
}

/* ------------------------------------------------------------------ the executor */

/* Whether the stream's next operation may run at `now`; else lowers *earliest to when its
 * delay ends (a wait's producer wakes the executor itself when it progresses). */
static int
ufg_sim_ready(const ufg_sim_stream *s, uint64_t now, uint64_t *earliest)
{
    const ufg_sim_op *op = s->head;

    if (op == NULL) {
        return 0;
    }
    if (op->kind == UFG_SIM_OP_WAIT && op->u.wait.producer->done < op->u.wait.target) {
        return 0;
    }
    if (op->not_before > now) {
        if (op->not_before < *earliest) {
            *earliest = op->not_before;
        }
        return 0;
    }
    return 1;
}

static void *
ufg_sim_executor_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ufg_sim_mutex);
    for (;;) {
        const uint64_t now = ufg_sim_now();
        uint64_t earliest = UINT64_MAX, ready = 0;
        ufg_sim_stream *pick = NULL;
        ufg_sim_op *op;

        for (ufg_sim_stream *s = ufg_sim_streams; s != NULL; s = s->next) {
            if (ufg_sim_ready(s, now, &earliest) && ufg_sim_random() % ++ready == 0) {
                pick = s;       /* a uniform choice among the ready streams */
            }
        }
        if (pick == NULL) {
            if (earliest == UINT64_MAX) {
                pthread_cond_wait(&ufg_sim_work, &ufg_sim_mutex);
            }
            else {
                const struct timespec until = {(time_t)(earliest / 1000000000u),
                                               (long)(earliest % 1000000000u)};
                pthread_cond_timedwait(&ufg_sim_work, &ufg_sim_mutex, &until);
            }
            continue;
        }
        op = pick->head;
        (void)ufg_sim_run(op);
        pick->head = op->next;      /* it stayed at the head while it ran: streams are FIFO */
        if (pick->head == NULL) {
            pick->tail = NULL;
        }
        pick->done++;
        ufg_sim_op_free(op);
        ufg_sim_retire_if_idle(pick);
        pthread_cond_broadcast(&ufg_sim_progress);
    }
    return NULL;
}

/* Caller holds the mutex. */
static int
ufg_sim_start_executor(void)
{
    pthread_attr_t attributes;
    pthread_t thread;
    sigset_t all, old;
    int error;

    if (ufg_sim_executor_running) {
        return 0;
    }
    /* Signals are for Python's threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    error = pthread_create(&thread, &attributes, ufg_sim_executor_main, NULL);
    pthread_attr_destroy(&attributes);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (error != 0) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    ufg_sim_executor_running = 1;
    return 0;
}

/* ------------------------------------------------------------------ queueing */

static ufg_sim_op *
ufg_sim_op_new(ufg_sim_op_kind kind)
{
    ufg_sim_op *op = calloc(1, sizeof(*op));

    if (op != NULL) {
        op->kind = kind;
    }
    return op;
}

static void
ufg_sim_append(ufg_sim_stream *s, ufg_sim_op *op, uint64_t not_before)
{
    op->not_before = not_before;
    op->next = NULL;
    if (s->tail != NULL) {
        s->tail->next = op;
    }
    else {
        s->head = op;
    }
    s->tail = op;
    s->queued++;
}

static int
ufg_sim_append_wait(ufg_sim_stream *consumer, ufg_sim_stream *producer, uint64_t now)
{
    ufg_sim_op *wait;

    if (producer->done >= producer->queued) {
        return 0;       /* nothing left to wait for */
    }
    wait = ufg_sim_op_new(UFG_SIM_OP_WAIT);
    if (wait == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    wait->u.wait.producer = producer;
    wait->u.wait.target = producer->queued;
    ufg_sim_stream_hold(producer);
    ufg_sim_append(consumer, wait, now);
    return 0;
}

/* The legacy default stream's implicit ordering with the blocking streams of its device. */
static int
ufg_sim_order_with_legacy(ufg_sim_stream *s, uint64_t now)
{
    int error = 0;

    if (s->non_blocking) {
        return 0;
    }
    if (!s->legacy) {
        ufg_sim_stream *legacy;
        if (ufg_sim_resolve(0, s->device, &legacy) != 0) {
            return UFG_ERROR_MEMORY_ALLOCATION;
        }
        if (s->waited_legacy >= legacy->queued) {
            return 0;           /* a wait queued here before covers it */
        }
        s->waited_legacy = legacy->queued;
        return ufg_sim_append_wait(s, legacy, now);
    }
    for (ufg_sim_stream *t = ufg_sim_streams; t != NULL && error == 0; t = t->next) {
        if (t != s && t->device == s->device && !t->non_blocking &&
            t->legacy_waited < t->queued) {
            t->legacy_waited = t->queued;
            error = ufg_sim_append_wait(s, t, now);
        }
    }
    return error;
}

/* The stream `handle` names, unless it was destroyed (then NULL, with the message set).
 * Caller holds the mutex. */
static ufg_sim_stream *
ufg_sim_usable(void *handle, int device, int *error)
{
    ufg_sim_stream *s = NULL;

    *error = ufg_sim_resolve(handle, device, &s);
    if (*error == UFG_SIM_RETIRED || (*error == 0 && s->destroyed)) {
        snprintf(ufg_sim_message, sizeof ufg_sim_message,
                 "work was queued on stream %#lx after the stream was destroyed",
                 (unsigned long)(uintptr_t)handle);
        *error = UFG_SIM_ERROR_ORDER;
    }
    return *error == 0 ? s : NULL;
}

/* CUDA refuses a kernel launch, or an event record, on a stream of another device than the
 * current one; it takes copies, frees and waits there.  Only the streams the simulator made
 * have a device it knows.  Caller holds the mutex. */
static int
ufg_sim_check_same_device(const ufg_sim_stream *s, int device)
{
    return s->made && s->device != device ? UFG_ERROR_INVALID_RESOURCE_HANDLE : 0;
}

/* A destroyed stream is refused in synchronous mode too, where nothing is queued: the
 * misuse is the host's, and must not depend on when the work would have run. */
int
ufg_sim_check_stream(void *handle, int device, const void **queue)
{
    int error;
    ufg_sim_stream *s = ufg_sim_usable(handle, device, &error);

    *queue = ufg_sim_sync ? NULL : s;
    return error;
}

/*
 * Queues op on the stream `handle` names (or runs it at once in synchronous mode); takes
 * ownership of op in every case.  Caller holds the mutex.
 */
static int
ufg_sim_submit(void *handle, int device, ufg_sim_op *op, uint64_t delay_ns)
{
    ufg_sim_stream *s;
    uint64_t now;
    int error;

    if ((s = ufg_sim_usable(handle, device, &error)) == NULL ||
        ((op->kind == UFG_SIM_OP_KERNEL || op->kind == UFG_SIM_OP_REDUCE) &&
         (error = ufg_sim_check_same_device(s, device)) != 0)) {
        ufg_sim_op_free(op);
        return error;
    }
    if (ufg_sim_sync) {
        error = ufg_sim_run(op);
        ufg_sim_op_free(op);
        return error == UFG_SIM_ERROR_ORDER ? 0 : error;     /* reported at the next sync */
    }
    if ((error = ufg_sim_start_executor()) != 0) {
        ufg_sim_op_free(op);
        return error;
    }
    now = ufg_sim_now();
    if ((error = ufg_sim_order_with_legacy(s, now)) != 0) {
        ufg_sim_op_free(op);
        return error;
    }
    if (delay_ns == 0 && ufg_sim_delay_ns > 0) {
        delay_ns = ufg_sim_random() % (ufg_sim_delay_ns + 1);
    }
    ufg_sim_append(s, op, now + delay_ns);
    pthread_cond_signal(&ufg_sim_work);
    return 0;
}

/* Notes a use of every simulator block the operation touches.  Caller holds the mutex. */
static void
ufg_sim_use_address(ufg_sim_op *op, const void *address)
{
    if (address != NULL && op->nuses < (int)(sizeof op->uses / sizeof op->uses[0])) {
        op->uses[op->nuses++] = ufg_sim_block_use((uintptr_t)address);
    }
}

int
ufg_sim_queue_kernel(ufg_elementwise_launcher launcher, const ufg_kernel_params *params,
                     int device, void *stream)
{
    ufg_sim_op *op = ufg_sim_op_new(UFG_SIM_OP_KERNEL);
    int error;

    if (op == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    op->u.kernel.launcher = launcher;
    op->u.kernel.params = *params;
    pthread_mutex_lock(&ufg_sim_mutex);
    for (int k = 0; k < params->nargs; k++) {
        if (!(params->by_value >> k & 1u)) {
            ufg_sim_use_address(op, params->data[k]);
        }
    }
    error = ufg_sim_submit(stream, device, op, 0);
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

int
ufg_sim_queue_reduce(ufg_reduce_launcher launcher, const ufg_reduce_params *params,
                     int device, void *stream)
{
    ufg_sim_op *op = ufg_sim_op_new(UFG_SIM_OP_REDUCE);
    int error;

    if (op == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    op->u.reduce.launcher = launcher;
    op->u.reduce.params = *params;
    pthread_mutex_lock(&ufg_sim_mutex);
    ufg_sim_use_address(op, params->in);
    ufg_sim_use_address(op, params->out);
    ufg_sim_use_address(op, params->segments);     /* reduceat's starts, at's offsets */
    error = ufg_sim_submit(stream, device, op, 0);
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

int
ufg_sim_queue_copy(void *dst, const void *src, size_t nbytes, int host_source, int device,
                   void *stream)
{
    ufg_sim_op *op = ufg_sim_op_new(UFG_SIM_OP_COPY);
    int error;

    if (op == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    op->u.copy.dst = dst;
    op->u.copy.src = src;
    op->u.copy.nbytes = nbytes;
    /* A pageable host source is the caller's again when the call returns (CUDA stages it). */
    if (host_source && !ufg_sim_sync) {
        op->u.copy.staging = malloc(nbytes ? nbytes : 1);
        if (op->u.copy.staging == NULL) {
            free(op);
            return UFG_ERROR_MEMORY_ALLOCATION;
        }
        memcpy(op->u.copy.staging, src, nbytes);
    }
    pthread_mutex_lock(&ufg_sim_mutex);
    ufg_sim_use_address(op, dst);
    if (!host_source) {
        ufg_sim_use_address(op, src);
    }
    error = ufg_sim_submit(stream, device, op, 0);
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

int
ufg_sim_queue_free(ufg_sim_block *block, int device, void *stream)
{
    ufg_sim_op *op = ufg_sim_op_new(UFG_SIM_OP_FREE);

    if (op == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    op->u.block = block;
    return ufg_sim_submit(stream, device, op, 0);
}

int
ufg_sim_queue_wait(void *consumer, void *producer, int device)
{
    ufg_sim_stream *c, *p;
    int error;

    pthread_mutex_lock(&ufg_sim_mutex);
    /* The wait records an event on the producer: a destroyed one is refused as well, in
     * synchronous mode too (where there is nothing to wait for). */
    p = ufg_sim_usable(producer, device, &error);
    c = p != NULL ? ufg_sim_usable(consumer, device, &error) : NULL;
    if (c != NULL && c != p && !ufg_sim_sync && (error = ufg_sim_start_executor()) == 0) {
        error = ufg_sim_append_wait(c, p, ufg_sim_now());
        pthread_cond_signal(&ufg_sim_work);
    }
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

int
ufg_sim_queue_stall(void *stream, int device, double seconds)
{
    ufg_sim_op *op;
    int error;

    if (ufg_sim_sync) {
        return 0;
    }
    if ((op = ufg_sim_op_new(UFG_SIM_OP_STALL)) == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    pthread_mutex_lock(&ufg_sim_mutex);
    error = ufg_sim_submit(stream, device, op, (uint64_t)(seconds * 1e9) + 1);
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

/* ------------------------------------------------------------------ waiting for streams */

/* Blocks until every stream in `which` (one stream, or all of a device's) has run what it had
 * queued; then reports the first error an operation reported.  Caller holds the mutex. */
static int
ufg_sim_wait_until_done(ufg_sim_stream *only, int device)
{
    ufg_sim_stream *next;

    for (ufg_sim_stream *s = ufg_sim_streams; s != NULL; s = next) {
        const uint64_t target = s->queued;
        if ((only != NULL ? s != only : s->device != device) || s->done >= target) {
            next = s->next;
            continue;
        }
        /* Held while the mutex is let go, so that it stays in the table to go on from. */
        ufg_sim_stream_hold(s);
        while (s->done < target) {
            pthread_cond_wait(&ufg_sim_progress, &ufg_sim_mutex);
        }
        next = s->next;
        ufg_sim_stream_let_go(s);
    }
    return ufg_sim_take_error_locked();
}

int
ufg_sim_wait_stream(void *stream, int device)
{
    ufg_sim_stream *s;
    int error;

    pthread_mutex_lock(&ufg_sim_mutex);
    s = ufg_sim_usable(stream, device, &error);
    if (s != NULL) {
        error = ufg_sim_wait_until_done(s, device);
    }
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

int
ufg_sim_wait_device(int device)
{
    int error;

    pthread_mutex_lock(&ufg_sim_mutex);
    error = ufg_sim_wait_until_done(NULL, device);
    pthread_mutex_unlock(&ufg_sim_mutex);
    return error;
}

/* ------------------------------------------------------------------ events */

typedef struct {
    ufg_sim_stream *stream;
    uint64_t target;
} ufg_sim_event;

int
ufg_sim_event_record(void *stream, int device, void **event)
{
    ufg_sim_event *e = malloc(sizeof(*e));
    int error = 0;

    if (e == NULL) {
        return UFG_ERROR_MEMORY_ALLOCATION;
    }
    pthread_mutex_lock(&ufg_sim_mutex);
    e->stream = ufg_sim_usable(stream, device, &error);
    if (e->stream != NULL && (error = ufg_sim_check_same_device(e->stream, device)) == 0) {
        e->target = e->stream->queued;
        ufg_sim_stream_hold(e->stream);
    }
    pthread_mutex_unlock(&ufg_sim_mutex);
    if (error) {
        free(e);
        return error;
    }
    *event = e;
    return 0;
}

int
ufg_sim_event_done(void *event)
{
    const ufg_sim_event *e = event;
    int done;

    pthread_mutex_lock(&ufg_sim_mutex);
    done = e->stream->done >= e->target;
    pthread_mutex_unlock(&ufg_sim_mutex);
    return done;
}

void
ufg_sim_event_destroy(void *event)
{
    ufg_sim_event *e = event;

    pthread_mutex_lock(&ufg_sim_mutex);
    ufg_sim_stream_let_go(e->stream);
    pthread_mutex_unlock(&ufg_sim_mutex);
    free(e);
}
