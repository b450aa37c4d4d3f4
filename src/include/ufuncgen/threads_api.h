/*
 * The thread pool's interface, shared by ufuncgen._core (which owns the one pool and the one
 * thread count of the process) and every generated module (which fetches this table from the
 * capsule `ufuncgen._core._threads_api` when it is imported).
 *
 * Each generated module is its own shared library; the state lives once, in _core, so that
 * `ufuncgen.set_num_threads(n)` reaches every module, and calls from different modules share
 * one pool instead of each starting threads of its own.
 */
#ifndef UFUNCGEN_THREADS_API_H
#define UFUNCGEN_THREADS_API_H

#include <stdatomic.h>
#include <stdint.h>

#define UFG_THREADS_CAPSULE "ufuncgen._core._threads_api"
#define UFG_THREADS_API_VERSION 1

/*
 * When a call runs on several threads (measured on a 2-core AMD EPYC VM; benchmarks/threads.py
 * prints the evidence).  Calls below UFG_PARALLEL_MIN_ELEMENTS elements (elementwise) or
 * UFG_PARALLEL_MIN_WORK outer iterations x core elements (gufuncs) run as before, with no
 * extra work at all.  A larger call first runs a small sample part on the calling thread and
 * times it: only if the rest would take at least UFG_PARALLEL_MIN_TIME_NS on one thread does
 * it wake the pool, which costs some 10-50 us here.  So a cheap memory-bound `add` stays on
 * one thread up to a few hundred thousand elements, an `exp`-heavy function goes parallel
 * from some 50 thousand, and a costly body (lucas) sooner.
 */
#define UFG_PARALLEL_MIN_ELEMENTS 32768
#define UFG_PARALLEL_MIN_WORK 32768
#define UFG_PARALLEL_MIN_TIME_NS 150000

/* Runs one part of a call: task(context, index) for index in [0, ntasks). */
typedef void (*ufg_parallel_task)(void *context, int64_t index);

typedef struct {
    int version;                        /* UFG_THREADS_API_VERSION */
    /* Read on every large call, with relaxed atomic loads (plain moves). */
    _Atomic int num_threads;            /* ufuncgen.set_num_threads; 1: everything serial */
    _Atomic int64_t min_elements;       /* UFG_PARALLEL_MIN_ELEMENTS unless tuned */
    _Atomic int64_t min_work;           /* UFG_PARALLEL_MIN_WORK unless tuned */
    _Atomic int64_t min_time_ns;        /* UFG_PARALLEL_MIN_TIME_NS unless tuned */
    /*
     * Runs every task once and returns when all have run, on up to num_threads threads
     * (the caller's included): fewer when other large calls are running at the same time,
     * and only the caller when the pool is busy with another call.  Tasks must not touch
     * Python.  Floating-point exception flags that tasks raise on helper threads are raised
     * on the calling thread too, so np.errstate sees them.
     */
    void (*parallel_for)(ufg_parallel_task task, void *context, int64_t ntasks);
} ufg_threads_api;

#endif /* UFUNCGEN_THREADS_API_H */
