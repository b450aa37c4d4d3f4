/*
 * The simulator's device model, shared by backend_sim.c (the backend interface),
 * sim_memory.c (allocations) and sim_streams.c (streams and the executor).
 *
 * Asynchronous by default, like a GPU: every operation queued on a stream (a kernel, a copy, a
 * stream-ordered free, a wait for another stream) runs later, on the simulator's executor
 * thread, which picks among the streams whose next operation may start, at random (a seeded
 * generator) and after a random delay.  Work that is not ordered therefore really runs out of
 * order, and the project's own synchronisation is what makes results right.  Stream-ordered
 * memory is modelled too: a freed block is poisoned when its free runs and may be handed out
 * again after that, and every use of a block is checked against its frees, so a kernel that
 * was not ordered after an allocation or before a free is reported, naming the buffer, instead
 * of reading whatever is there.
 *
 * UFUNCGEN_SIM_SYNC=1 runs every operation at once, in the calling thread (the old model,
 * for debugging).  UFUNCGEN_SIM_SEED seeds the choices, UFUNCGEN_SIM_DELAY_US bounds the
 * delay.
 *
 * One mutex guards all of it; kernels and copies run outside it.
 */
#ifndef UFG_DEVICE_SIM_H
#define UFG_DEVICE_SIM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ufuncgen/device_kernel.h"

extern pthread_mutex_t ufg_sim_mutex;

/* backend_sim.c: the whole number in environment variable `name` if it is set and within
 * lo..hi; -1 if it is set to anything else; `unset` if it is unset or empty. */
long ufg_sim_env_number(const char *name, long lo, long hi, long unset);

/* ------------------------------------------------------------------ memory (sim_memory.c) */

typedef enum {
    UFG_SIM_BLOCK_LIVE,         /* allocated */
    UFG_SIM_BLOCK_FREEING,      /* its free is queued and has not run */
    UFG_SIM_BLOCK_FREED,        /* its free ran: poisoned, in the pool */
    UFG_SIM_BLOCK_RELEASED,     /* returned to the host allocator; the record outlives it
                                 * while queued operations still name it */
} ufg_sim_block_state;

typedef struct ufg_sim_block {
    uintptr_t base;
    size_t size;
    int device;
    ufg_sim_block_state state;
    /* Frees queued by the host so far, and frees run by the executor so far.  A use queued
     * while `queued_frees` was g is in order exactly when the executor, running it, finds
     * `run_frees` == g: not before the free that made the block available again, and not
     * after the next free. */
    uint64_t queued_frees, run_frees;
    void *free_stream;          /* the handle of the stream of the last queued free */
    const void *free_queue;     /* that stream itself (handle 2 names one per thread) */
    int users;                  /* queued operations naming this block */
    struct ufg_sim_block *next_in_pool;
} ufg_sim_block;

/* One use of a block by a queued operation, checked when the operation runs. */
typedef struct {
    ufg_sim_block *block;
    uint64_t generation;
    uintptr_t address;
} ufg_sim_use;

/* The block containing address, or NULL when the simulator did not allocate it.  Caller holds
 * the mutex. */
ufg_sim_block *ufg_sim_block_find(uintptr_t address);
/* A block of at least nbytes for `device`: one from the pool whose free has run, or whose
 * free is queued on `queue` itself (stream order makes it safe; ufg_sim_check_stream gives
 * it), else new memory.  0 or a CUDA error code.  Caller holds the mutex. */
int ufg_sim_block_allocate(size_t nbytes, int device, const void *queue,
                           ufg_sim_block **block);
/* The host side of a free: the block must be live (else UFG_ERROR_INVALID_VALUE).  Caller
 * holds the mutex; the caller then queues the free on stream (ufg_sim_queue_free), whose run calls
 * ufg_sim_block_run_free. */
int ufg_sim_block_queue_free(ufg_sim_block *block, void *stream, const void *queue);
/* The executor side: poisons the block and puts it in the pool (or releases it).  Caller
 * holds the mutex. */
void ufg_sim_block_run_free(ufg_sim_block *block);
/* Notes a use (block may be NULL: foreign memory, not checked).  Caller holds the mutex. */
ufg_sim_use ufg_sim_block_use(uintptr_t address);
/* Whether a use may run now; 0, or writes what is wrong into message.  Caller holds it. */
int ufg_sim_use_check(const ufg_sim_use *use, char *message, size_t size);
/* The operation is done with the use.  Caller holds the mutex. */
void ufg_sim_use_end(ufg_sim_use *use);

/* ------------------------------------------------------------------ streams (sim_streams.c) */

/* Reads UFUNCGEN_SIM_SYNC, _SEED and _DELAY_US; returns what is wrong, or NULL. */
const char *ufg_sim_streams_configure(void);

int ufg_sim_queue_kernel(ufg_elementwise_launcher launcher, const ufg_kernel_params *params,
                         int device, void *stream);
int ufg_sim_queue_reduce(ufg_reduce_launcher launcher, const ufg_reduce_params *params,
                         int device, void *stream);
/* dst and src may each be simulator or foreign memory; a host source is copied at once. */
int ufg_sim_queue_copy(void *dst, const void *src, size_t nbytes, int host_source, int device,
                       void *stream);
int ufg_sim_queue_free(ufg_sim_block *block, int device, void *stream);
int ufg_sim_queue_wait(void *consumer, void *producer, int device);
/* Nothing queued on `stream` after this starts before `seconds` from now: a GPU's busy
 * kernel, for tests that need a producer to be late. */
int ufg_sim_queue_stall(void *stream, int device, double seconds);

int ufg_sim_stream_new(int device, int non_blocking, void **stream);
/* The device of a stream the simulator made, or -1 (a default stream, another library's
 * handle, a destroyed one).  Caller holds the mutex. */
int ufg_sim_stream_device(void *stream);
/* 0, or UFG_SIM_ERROR_ORDER when the stream was destroyed; *queue: the stream itself, which
 * the handle names for the calling thread (NULL in synchronous mode).  Caller holds the mutex. */
int ufg_sim_check_stream(void *stream, int device, const void **queue);
int ufg_sim_stream_end(void *stream);
int ufg_sim_wait_stream(void *stream, int device);
/* Events: the work queued on a stream so far; done once the stream has run it. */
int ufg_sim_event_record(void *stream, int device, void **event);
int ufg_sim_event_done(void *event);
void ufg_sim_event_destroy(void *event);
int ufg_sim_wait_device(int device);

/* The first error an operation reported when it ran (0 if none), and forgets it; its words
 * stay readable through ufg_sim_async_message until the next one. */
int ufg_sim_take_async_error(void);
const char *ufg_sim_async_message(void);

/* The simulator's own error code for an operation that ran out of order with a free or an
 * allocation, or on a destroyed stream; not a CUDA code. */
#define UFG_SIM_ERROR_ORDER 10000

#endif /* UFG_DEVICE_SIM_H */
