/*
 * Multi-core host loops: the generated module's side of ufuncgen._core's thread pool.
 *
 * A module fetches the pool's table (threads_api.h) when it is imported.  A large call is cut
 * into parts fixed in advance, each a contiguous range of the outer loop whose boundaries are
 * multiples of UFG_PARALLEL_ALIGN elements, and the parts run on the pool.  Every element is
 * then computed by the same code, on the same block boundaries, as in a single-threaded call
 * (vector body or scalar tail, gathered block or not), so results are bitwise identical for
 * any thread count.
 *
 * Compiled with UFG_NO_THREADS (`ufuncgen build --no-threads`, CMake -DUFUNCGEN_THREADS=OFF),
 * a module never fetches the pool and every loop runs on the calling thread.
 */
#ifndef UFUNCGEN_HOST_THREADS_H
#define UFUNCGEN_HOST_THREADS_H

#include <Python.h>

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <numpy/ndarraytypes.h>

#include "ufuncgen/fp_errors.h"
#include "ufuncgen/threads_api.h"

/* Part boundaries of elementwise loops: a multiple of every SIMD width and of UFG_BLOCK. */
#define UFG_PARALLEL_ALIGN 256
/* ... of gufunc outer loops: a multiple of every SIMD width, should a compiler vectorize one. */
#define UFG_PARALLEL_GUFUNC_ALIGN 16
/* Work (elements) a large call runs first, on the calling thread, to time itself. */
#define UFG_PARALLEL_SAMPLE 4096
_Static_assert(UFG_PARALLEL_SAMPLE % UFG_PARALLEL_ALIGN == 0, "sample on block boundaries");

/* Parts per thread, so that helpers stepping back (other calls started) leave little behind. */
#define UFG_PARALLEL_PARTS_PER_THREAD 4
/* ... but no part smaller than this many elements (or units of gufunc work). */
#define UFG_PARALLEL_MIN_PART 8192

/* Until the module is imported, and for good under UFG_NO_THREADS: one thread. */
static ufg_threads_api ufg_threads_serial = {
    .version = UFG_THREADS_API_VERSION,
    .num_threads = 1,
    .min_elements = INT64_MAX,
    .min_work = INT64_MAX,
    .parallel_for = NULL,
};
static ufg_threads_api *ufg_threads = &ufg_threads_serial;

/* At import, from register.h: 0, or -1 with an exception. */
static inline int
ufg_threads_import(PyObject *core)
{
#ifdef UFG_NO_THREADS
    (void)core;
    return 0;
#else
    PyObject *capsule = PyObject_GetAttrString(core, "_threads_api");
    if (capsule == NULL) {
        return -1;
    }
    ufg_threads_api *api = (ufg_threads_api *)PyCapsule_GetPointer(capsule, UFG_THREADS_CAPSULE);
    Py_DECREF(capsule);
    if (api == NULL) {
        return -1;
    }
    if (api->version != UFG_THREADS_API_VERSION) {
        PyErr_Format(PyExc_ImportError,
                     "this module was built for ufuncgen thread API %d, but the installed "
                     "ufuncgen._core provides %d: rebuild it with this ufuncgen",
                     UFG_THREADS_API_VERSION, api->version);
        return -1;
    }
    ufg_threads = api;
    return 0;
#endif
}

/* Threads a call of `size` (elements, or work units against `minimum`) may use: 1 = serial. */
static inline int
ufg_parallel_threads(bool allowed, int64_t size, _Atomic int64_t *minimum)
{
    if (!allowed || size < atomic_load_explicit(minimum, memory_order_relaxed)) {
        return 1;
    }
    return atomic_load_explicit(&ufg_threads->num_threads, memory_order_relaxed);
}

static inline int64_t
ufg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Whether `rest` more work is worth the pool, when `done` work took `elapsed_ns`. */
static inline bool
ufg_parallel_worth(int64_t elapsed_ns, int64_t done, int64_t rest)
{
    const double estimate = (double)elapsed_ns * ((double)rest / (double)done);
    return estimate >= (double)atomic_load_explicit(&ufg_threads->min_time_ns,
                                                    memory_order_relaxed);
}

/*
 * The length of each part of an outer loop of `n` iterations, each worth `unit` work:
 * a multiple of `align`, about n / (threads * UFG_PARALLEL_PARTS_PER_THREAD), and at least
 * UFG_PARALLEL_MIN_PART work.
 */
static inline npy_intp
ufg_parallel_part(npy_intp n, int64_t unit, int threads, npy_intp align)
{
    npy_intp part = n / ((npy_intp)threads * UFG_PARALLEL_PARTS_PER_THREAD);
    const npy_intp min_part = (npy_intp)(UFG_PARALLEL_MIN_PART / (unit > 0 ? unit : 1));
    if (part < min_part) {
        part = min_part;
    }
    return (part + align - 1) / align * align;
}

/* ------------------------------------------------------------------ gufunc outer loops */

/* Whether NumPy's steps [from, to) are those of a C-contiguous call, `contiguous` (the outer
 * steps, one per argument, come first, then the core ones: the generated loop takes its
 * contiguous copy when all match, its contiguous-cores copy when the core ones do).
 * `walks[k]` is the index in `dimensions` of the dimension step k moves along: a step along
 * a dimension of size 0 or 1 is never taken, and NumPy leaves it whatever its iterator had
 * (0 for the outer step of a call with no loop dimensions, a single matrix or point set), so
 * it is not compared. */
static inline bool
ufg_same_steps(npy_intp const *steps, const npy_intp *contiguous, const unsigned char *walks,
               npy_intp const *dimensions, int from, int to)
{
    for (int k = from; k < to; k++) {
        if (steps[k] != contiguous[k] && dimensions[walks[k]] > 1) {
            return false;
        }
    }
    return true;
}

/* The call's first `count` (outer) steps in place of the C-contiguous ones. */
static inline void
ufg_take_outer_steps(npy_intp *steps, npy_intp const *call_steps, int count)
{
    for (int k = 0; k < count; k++) {
        steps[k] = call_steps[k];
    }
}

/* Runs the body for outer iterations [begin, end) (generated, one per type signature). */
typedef void (*ufg_gufunc_range)(char **args, npy_intp const *dimensions, npy_intp const *steps,
                                 npy_intp begin, npy_intp end);

/* A flag-exact gufunc loop's scalar copy of its range, and whether iterations that raised
 * underflow re-run there too (gen/model.py, guarded_functions). */
typedef struct {
    ufg_gufunc_range range;
    bool underflow_too;
} ufg_exact_range;

/* Core work (the product of the core sizes) that a flag-exact gufunc loop runs between two
 * checks of the flags, at least: as an elementwise loop's UFG_CHECK_CHUNK elements. */
#define UFG_GUFUNC_CHECK_WORK 4096

typedef struct {
    char **args;
    npy_intp const *dimensions;
    npy_intp const *steps;
    npy_intp offset, part;
    ufg_gufunc_range range;
    const ufg_exact_range *exact;   /* the scalar copy of `range` (flag-exact loops), or NULL */
    npy_intp chunk;             /* outer iterations between two checks of the flags */
} ufg_gufunc_job;

/* Outer iterations [begin, end) through `range`, and through `exact` again if they raised
 * invalid, divide-by-zero or overflow (or underflow, where `exact` says so), with a flag
 * beyond those re-runs of earlier blocks of the chunk raised (`*confirmed`, as host_loops.h's
 * ufg_run_block): only the scalar copy's flags remain (fp_errors.h). */
static void
ufg_gufunc_run_block(const ufg_gufunc_job *job, npy_intp begin, npy_intp end,
                     unsigned *confirmed)
{
    const unsigned saved = ufg_fp_save_clear();
    job->range(job->args, job->dimensions, job->steps, begin, end);
    if (ufg_fp_rerun_needed(job->exact->underflow_too, *confirmed)) {
        ufg_fp_clear();
        job->exact->range(job->args, job->dimensions, job->steps, begin, end);
        ufg_fp_confirm(confirmed);
    }
    ufg_fp_restore(saved);
}

/*
 * Outer iterations [begin, end) of a call.  A flag-exact loop (`begin` then a multiple of
 * job->chunk) runs job->chunk iterations at a time and checks the flags after each: the same
 * chunks whatever the thread count, since the generated loop takes the last iterations of
 * each range otherwise than the others (its vector loop's remainder), where its vector math's
 * last bits may differ from the scalar function's (a softmax of rows of 8 differed in 1 row of
 * 150 between one thread and two).  A chunk that raised an error runs again
 * UFG_PARALLEL_GUFUNC_ALIGN iterations at a time, each re-run through the scalar copy if it
 * raised one, until those re-runs have raised every flag the chunk raised: the rest of the
 * chunk keeps its first run's results, whose flags are raised already (`log` of rows with a
 * zero in each re-ran them all through scalar libm).  So the same blocks, whatever the
 * thread count, are re-run.  NumPy and ufuncgen
 * (src/core/overlap.c) hand a gufunc loop outputs that overlap no input, so running a block
 * again reads what its first run read.  Any other loop calls no vector math (it would be
 * flag-exact, but for a body that reads a core output first), and runs its range in one call.
 */
static void
ufg_gufunc_run(const ufg_gufunc_job *job, npy_intp begin, npy_intp end)
{
    if (job->exact == NULL) {
        job->range(job->args, job->dimensions, job->steps, begin, end);
        return;
    }
    for (npy_intp start = begin; start < end; start += job->chunk) {
        const npy_intp stop = end - start < job->chunk ? end : start + job->chunk;
        const unsigned saved = ufg_fp_save_clear();
        job->range(job->args, job->dimensions, job->steps, start, stop);
        if (!ufg_fp_errors_raised(job->exact->underflow_too)) {
            ufg_fp_restore(saved);      /* with the chunk's inexact or underflow flags */
            continue;
        }
        const unsigned raised = ufg_fp_errors(true);
        ufg_fp_clear();                 /* the chunk's flags are dropped: its blocks raise theirs */
        ufg_fp_restore(saved);
        unsigned confirmed = 0;
        for (npy_intp b = start; b < stop && (raised & ~confirmed) != 0;
             b += UFG_PARALLEL_GUFUNC_ALIGN) {
            ufg_gufunc_run_block(job, b, stop - b < UFG_PARALLEL_GUFUNC_ALIGN
                                             ? stop : b + UFG_PARALLEL_GUFUNC_ALIGN,
                                 &confirmed);
        }
    }
}

/* Outer iterations worth `work` at `unit` each, rounded up to UFG_PARALLEL_GUFUNC_ALIGN. */
static inline npy_intp
ufg_gufunc_iterations(int64_t work, int64_t unit)
{
    const npy_intp iterations = (npy_intp)(unit >= work ? 1 : (work + unit - 1) / unit);
    return (iterations + UFG_PARALLEL_GUFUNC_ALIGN - 1) / UFG_PARALLEL_GUFUNC_ALIGN
           * UFG_PARALLEL_GUFUNC_ALIGN;
}

static void
ufg_gufunc_task(void *context, int64_t index)
{
    const ufg_gufunc_job *job = (const ufg_gufunc_job *)context;
    const npy_intp n = job->dimensions[0];
    const npy_intp begin = job->offset + (npy_intp)index * job->part;
    const npy_intp end = n - begin < job->part ? n : begin + job->part;
    ufg_gufunc_run(job, begin, end);
}

/* The bytes one step of `step` moves, either way. */
static inline npy_intp
ufg_step_size(npy_intp step)
{
    return step < 0 ? -step : step;
}

/* Whether `rows` rows `outer` bytes apart, each reaching `span` bytes from its first
 * element's start (in either direction), share memory: an outer step of 0, or one shorter than
 * the span, where there are two rows or more.  (A call of one row has the outer step 0 from
 * NumPy, and is no less contiguous for it.)  Generated loops pass each output's test:
 * render.rows_share_memory. */
static inline bool
ufg_rows_overlap(npy_intp rows, npy_intp outer, npy_intp span)
{
    return rows > 1 && ufg_step_size(outer) < span;
}

/* How far a row reaches below (at most 0) and past (at least 0) its first element's start
 * along a core dimension of n elements `step` bytes apart. */
static inline npy_intp
ufg_core_reach_below(npy_intp n, npy_intp step)
{
    return n > 1 && step < 0 ? (n - 1) * step : 0;
}

static inline npy_intp
ufg_core_reach_above(npy_intp n, npy_intp step)
{
    return n > 1 && step > 0 ? (n - 1) * step : 0;
}

/* Whether the n rows of two outputs, at a and b (outer steps apart, each row's bytes from
 * `below` to `above` bytes around its first element's start), may share memory: NumPy writes
 * the rows in order, so where one output's row meets the other's a part on another thread
 * could write first.  Judged by the whole extents, which is enough to keep such a call on one
 * thread: outputs side by side in one buffer do not meet. */
static inline bool
ufg_outputs_meet(const char *a, npy_intp outer_a, npy_intp below_a, npy_intp above_a,
                 const char *b, npy_intp outer_b, npy_intp below_b, npy_intp above_b, npy_intp n)
{
    const intptr_t a_first = (intptr_t)a, a_last = a_first + (intptr_t)((n - 1) * outer_a);
    const intptr_t b_first = (intptr_t)b, b_last = b_first + (intptr_t)((n - 1) * outer_b);
    const intptr_t a_lo = (outer_a < 0 ? a_last : a_first) + below_a;
    const intptr_t a_hi = (outer_a < 0 ? a_first : a_last) + above_a;
    const intptr_t b_lo = (outer_b < 0 ? b_last : b_first) + below_b;
    const intptr_t b_hi = (outer_b < 0 ? b_first : b_last) + above_b;
    return a_lo < b_hi && b_lo < a_hi;
}

/*
 * A gufunc loop: the outer dimension, split across threads when the call's work (outer
 * iterations x the product of its `ncore` distinct core dimensions) is large and a timed
 * sample of it says the rest is worth the pool.  `exact` is the scalar copy of `range` when
 * the function is flag-exact (see ufg_gufunc_run), else NULL.
 */
static inline void
ufg_run_gufunc(char **args, npy_intp const *dimensions, npy_intp const *steps, int ncore,
               bool threads_allowed, ufg_gufunc_range range, const ufg_exact_range *exact)
{
    const npy_intp n = dimensions[0];
    int64_t unit = 1;
    for (int d = 1; d <= ncore; d++) {
        if (dimensions[d] > 1) {
            unit = unit > INT64_MAX / dimensions[d] ? INT64_MAX : unit * dimensions[d];
        }
    }
    ufg_gufunc_job job = {args, dimensions, steps, 0, n, range, exact,
                          ufg_gufunc_iterations(UFG_GUFUNC_CHECK_WORK, unit)};
    /* A flag-exact loop's sample and parts are whole chunks (ufg_gufunc_run). */
    const npy_intp align = exact != NULL ? job.chunk : UFG_PARALLEL_GUFUNC_ALIGN;
    int threads = 1;
    if (threads_allowed && n > 1) {
        const int64_t work = unit > INT64_MAX / n ? INT64_MAX : unit * n;
        threads = ufg_parallel_threads(true, work, &ufg_threads->min_work);
    }
    const npy_intp sample = (ufg_gufunc_iterations(UFG_PARALLEL_SAMPLE, unit) + align - 1)
                            / align * align;
    if (threads <= 1 || sample >= n) {
        ufg_gufunc_run(&job, 0, n);
        return;
    }
    const int64_t start = ufg_now_ns();
    ufg_gufunc_run(&job, 0, sample);
    const int64_t elapsed = ufg_now_ns() - start;
    const npy_intp rest = n - sample;
    const npy_intp part = ufg_parallel_part(rest, unit, threads, align);
    if (part >= rest || !ufg_parallel_worth(elapsed, sample, rest)) {
        ufg_gufunc_run(&job, sample, n);
        return;
    }
    job.offset = sample;
    job.part = part;
    ufg_threads->parallel_for(ufg_gufunc_task, &job, (rest + part - 1) / part);
}

#endif /* UFUNCGEN_HOST_THREADS_H */
