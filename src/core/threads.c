/*
 * The thread pool behind multi-core host loops, and the process's thread count.
 *
 * One pool per process, owned here, handed to generated modules through a capsule
 * (../include/ufuncgen/threads_api.h).  Plain pthreads rather than OpenMP:
 *   - one pool and one count for the whole process, whichever module or Python thread calls
 *     (libgomp gives each calling thread a team of its own, so k dask threads would run k
 *     teams of n threads each);
 *   - fork-safe: a child process starts with no helper threads and starts fresh ones when it
 *     needs them (libgomp's pool is not usable after fork);
 *   - helpers sleep on a condition variable between calls instead of spinning, which matters
 *     on a machine whose cores are shared.
 *
 * Oversubscription.  Every large call counts itself in `callers` while it runs.  A call gets
 * the pool only if no other call is using it (otherwise it runs on its own thread), and its
 * helper h keeps taking parts only while h <= num_threads - callers: when other threads'
 * large calls start (dask's threaded scheduler running one task per core), the helpers step
 * back and the total stays at about max(num_threads, callers) busy threads.
 *
 * Results do not depend on which thread runs which part: parts are fixed before the call
 * starts, and each helper runs with the caller's floating-point environment.
 */
#define _GNU_SOURCE
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ctype.h>
#include <errno.h>
#include <fenv.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <xmmintrin.h>
#endif
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "threads.h"
#include "../include/ufuncgen/threads_api.h"

#define UFG_MAX_THREADS 1024

static void ufg_parallel_for(ufg_parallel_task task, void *context, int64_t ntasks);

static ufg_threads_api ufg_api = {
    .version = UFG_THREADS_API_VERSION,
    .num_threads = 1,
    .min_elements = UFG_PARALLEL_MIN_ELEMENTS,
    .min_work = UFG_PARALLEL_MIN_WORK,
    .min_time_ns = UFG_PARALLEL_MIN_TIME_NS,
    .parallel_for = ufg_parallel_for,
};

static atomic_int ufg_callers;              /* large calls in progress, in any thread */
static atomic_llong ufg_parallel_calls;     /* calls handed to the pool: for tests */
static atomic_llong ufg_helped_calls;       /* ... that a helper took part in */

/* ------------------------------------------------------------------ */
/* The pool                                                             */
/* ------------------------------------------------------------------ */

static pthread_mutex_t ufg_owner = PTHREAD_MUTEX_INITIALIZER;  /* held by the call using the pool */
static pthread_mutex_t ufg_lock = PTHREAD_MUTEX_INITIALIZER;   /* guards everything below */
/* A new job, one for each helper: a job wakes only the helpers it may use (waking every
 * helper ever started made each call pay for all of them taking ufg_lock, 0.35 ms calls
 * 0.85 ms after one call on 1024 threads). */
static pthread_cond_t ufg_wake[UFG_MAX_THREADS] = {[0 ... UFG_MAX_THREADS - 1] = PTHREAD_COND_INITIALIZER};

static int ufg_workers;                     /* helper threads started: helpers 1..ufg_workers */
static unsigned long ufg_generation;        /* bumped for every job */
static unsigned long ufg_start_generation[UFG_MAX_THREADS];

static struct {
    int open;                               /* helpers may still join */
    int helpers;                            /* helpers 1..helpers may join */
    int active;                             /* helpers that joined */
    ufg_parallel_task task;
    void *context;
    int64_t ntasks;
    fenv_t env;                             /* the caller's floating-point environment */
} ufg_job;
static atomic_llong ufg_job_next;           /* the next task index to run */
static atomic_int ufg_job_flags;            /* exception flags raised on helpers */
static atomic_int ufg_job_finished;         /* helpers that joined and are done */

static inline void
ufg_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The helpers' exception flags, raised in the caller where the loops read them: on x86-64 in
 * the SSE status register (host_loops.h's ufg_fp_errors_raised), which glibc's feraiseexcept
 * leaves alone for overflow and underflow (it sets them in the x87 unit), so a reduction that
 * overflowed on a helper was not re-run in order, and its bits depended on the thread count. */
static void
ufg_raise_flags(int raised)
{
    if (raised == 0) {
        return;
    }
#if defined(__x86_64__) && defined(__SSE2__)
    _mm_setcsr(_mm_getcsr() | (unsigned)(raised & FE_ALL_EXCEPT));   /* FE_* are MXCSR's bits */
#else
    feraiseexcept(raised);
#endif
}

static void
ufg_run_tasks(int helper, ufg_parallel_task task, void *context, int64_t ntasks)
{
    for (;;) {
        if (helper > 0 &&
            helper > atomic_load_explicit(&ufg_api.num_threads, memory_order_relaxed) -
                     atomic_load_explicit(&ufg_callers, memory_order_relaxed)) {
            return;   /* other large calls are running: leave the rest to the caller */
        }
        const int64_t index = atomic_fetch_add(&ufg_job_next, 1);
        if (index >= ntasks) {
            return;
        }
        task(context, index);
    }
}

static void *
ufg_worker_main(void *arg)
{
    const int helper = (int)(intptr_t)arg;

    pthread_mutex_lock(&ufg_lock);
    unsigned long seen = ufg_start_generation[helper];
    for (;;) {
        while (ufg_generation == seen) {
            pthread_cond_wait(&ufg_wake[helper], &ufg_lock);
        }
        seen = ufg_generation;
        if (!ufg_job.open || helper > ufg_job.helpers) {
            continue;
        }
        ufg_job.active++;
        const ufg_parallel_task task = ufg_job.task;
        void *const context = ufg_job.context;
        const int64_t ntasks = ufg_job.ntasks;
        fesetenv(&ufg_job.env);
        pthread_mutex_unlock(&ufg_lock);

        feclearexcept(FE_ALL_EXCEPT);
        ufg_run_tasks(helper, task, context, ntasks);
        const int raised = fetestexcept(FE_ALL_EXCEPT);
        if (raised) {
            atomic_fetch_or(&ufg_job_flags, raised);
        }

        atomic_fetch_add_explicit(&ufg_job_finished, 1, memory_order_release);
        pthread_mutex_lock(&ufg_lock);
    }
    return NULL;
}

/* Starts helpers up to `wanted` (under ufg_lock); returns how many there are. */
static int
ufg_start_workers(int wanted)
{
    if (wanted > UFG_MAX_THREADS - 1) {
        wanted = UFG_MAX_THREADS - 1;
    }
    if (ufg_workers >= wanted) {
        return ufg_workers;
    }
    /* Helpers never handle signals: Python expects them on its own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    while (ufg_workers < wanted) {
        const int helper = ufg_workers + 1;
        pthread_t thread;
        ufg_start_generation[helper] = ufg_generation;
        if (pthread_create(&thread, &attr, ufg_worker_main, (void *)(intptr_t)helper) != 0) {
            break;   /* out of threads: run with the helpers there are */
        }
        ufg_workers = helper;
    }
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return ufg_workers;
}

static void
ufg_parallel_for(ufg_parallel_task task, void *context, int64_t ntasks)
{
    const int threads = atomic_load_explicit(&ufg_api.num_threads, memory_order_relaxed);
    const int callers = atomic_fetch_add(&ufg_callers, 1) + 1;
    int64_t helpers = (int64_t)threads - callers;
    if (helpers > ntasks - 1) {
        helpers = ntasks - 1;
    }
    if (helpers <= 0 || pthread_mutex_trylock(&ufg_owner) != 0) {
        for (int64_t i = 0; i < ntasks; i++) {
            task(context, i);
        }
        atomic_fetch_sub(&ufg_callers, 1);
        return;
    }

    pthread_mutex_lock(&ufg_lock);
    const int started = ufg_start_workers((int)helpers);
    ufg_job.open = 1;
    ufg_job.helpers = started < helpers ? started : (int)helpers;
    ufg_job.active = 0;
    atomic_store(&ufg_job_finished, 0);
    ufg_job.task = task;
    ufg_job.context = context;
    ufg_job.ntasks = ntasks;
    fegetenv(&ufg_job.env);
    atomic_store(&ufg_job_next, 0);
    atomic_store(&ufg_job_flags, 0);
    ufg_generation++;
    for (int helper = 1; helper <= ufg_job.helpers; helper++) {
        pthread_cond_signal(&ufg_wake[helper]);
    }
    pthread_mutex_unlock(&ufg_lock);

    ufg_run_tasks(0, task, context, ntasks);

    /*
     * Helpers that have not joined by now find the job closed; those that did are each on
     * their last part, so wait for them spinning (briefly) rather than sleeping: waking up
     * again would cost the caller as much as a small part.
     */
    pthread_mutex_lock(&ufg_lock);
    ufg_job.open = 0;
    const int joined = ufg_job.active;
    pthread_mutex_unlock(&ufg_lock);
    while (atomic_load_explicit(&ufg_job_finished, memory_order_acquire) < joined) {
        ufg_cpu_relax();
    }
    ufg_raise_flags(atomic_load(&ufg_job_flags));
    atomic_fetch_add(&ufg_parallel_calls, 1);
    if (joined > 0) {
        atomic_fetch_add(&ufg_helped_calls, 1);
    }
    pthread_mutex_unlock(&ufg_owner);
    atomic_fetch_sub(&ufg_callers, 1);
}

/* A forked child has only the forking thread: forget the parent's helpers. */
static void
ufg_after_fork_in_child(void)
{
    pthread_mutex_init(&ufg_owner, NULL);
    pthread_mutex_init(&ufg_lock, NULL);
    for (int helper = 0; helper < UFG_MAX_THREADS; helper++) {
        pthread_cond_init(&ufg_wake[helper], NULL);
    }
    ufg_workers = 0;
    ufg_generation = 0;
    memset(&ufg_job, 0, sizeof ufg_job);
    atomic_store(&ufg_callers, 0);
}

/* ------------------------------------------------------------------ */
/* The thread count                                                     */
/* ------------------------------------------------------------------ */

/* *count: a positive count from an environment variable ("4", white space around it, or for
 * OMP_NUM_THREADS OpenMP's list "4,2"), or 0
 * when it is unset.  A value that is no such count is ignored, and one above the pool's limit
 * capped, each with a RuntimeWarning saying so (-1 when a warnings filter made it an error). */
static int
ufg_count_from_environment(const char *name, int *count)
{
    const char *text = getenv(name);
    *count = 0;
    if (text == NULL) {
        return 0;
    }
    char *end;
    errno = 0;
    const long value = strtol(text, &end, 10);      /* leading white space skipped */
    while (isspace((unsigned char)*end)) {
        end++;
    }
    /* OMP_NUM_THREADS may list a count per nesting level ("4,2"): the first is ours. */
    const int list = strcmp(name, "OMP_NUM_THREADS") == 0 && *end == ',';
    if (errno == ERANGE && value > 0 && (*end == '\0' || list)) {
        *count = UFG_MAX_THREADS;
    }
    else if (errno != 0 || end == text || (*end != '\0' && !list) || value < 1) {
        return PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "ufuncgen: %s=%.40s is not a "
                                "positive whole number of threads; ignored", name, text);
    }
    else {
        *count = value > UFG_MAX_THREADS ? UFG_MAX_THREADS : (int)value;
    }
    if (*count == UFG_MAX_THREADS && (errno == ERANGE || value > UFG_MAX_THREADS)) {
        return PyErr_WarnFormat(PyExc_RuntimeWarning, 1, "ufuncgen: %s=%.40s is more "
                                "threads than the %d ufuncgen runs; %d it is", name, text,
                                UFG_MAX_THREADS, UFG_MAX_THREADS);
    }
    return 0;
}

/* UFUNCGEN_NUM_THREADS, else OMP_NUM_THREADS, else the CPUs this process may run on; -1 when
 * a warning about them is an error. */
static int
ufg_default_num_threads(void)
{
    int count;
    if (ufg_count_from_environment("UFUNCGEN_NUM_THREADS", &count) < 0 ||
        (count == 0 && ufg_count_from_environment("OMP_NUM_THREADS", &count) < 0)) {
        return -1;
    }
    if (count == 0) {
        cpu_set_t set;
        if (sched_getaffinity(0, sizeof set, &set) == 0) {
            count = CPU_COUNT(&set);
        }
    }
    if (count < 1) {
        count = 1;
    }
    return count > UFG_MAX_THREADS ? UFG_MAX_THREADS : count;
}

/* ------------------------------------------------------------------ */
/* Python functions                                                     */
/* ------------------------------------------------------------------ */

static PyObject *
ufg_get_num_threads(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    return PyLong_FromLong(atomic_load(&ufg_api.num_threads));
}

/* A Python int (not a bool) in [1, maximum]; -1 with an exception otherwise. */
static long long
ufg_positive_int(PyObject *value, const char *what, long long maximum)
{
    if (!PyLong_Check(value) || PyBool_Check(value)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.200s", what,
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    int overflow;
    const long long n = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (n == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (overflow != 0 || n < 1 || n > maximum) {
        PyErr_Format(PyExc_ValueError, "%s must be between 1 and %lld, got %S", what, maximum,
                     value);
        return -1;
    }
    return n;
}

static PyObject *
ufg_set_num_threads(PyObject *Py_UNUSED(module), PyObject *value)
{
    const long long n = ufg_positive_int(value, "the number of threads", UFG_MAX_THREADS);
    if (n < 0) {
        return NULL;
    }
    atomic_store(&ufg_api.num_threads, (int)n);
    Py_RETURN_NONE;
}

static PyObject *
ufg_set_parallel_threshold(PyObject *Py_UNUSED(module), PyObject *args)
{
    long long elements, work, time_ns;
    if (!PyArg_ParseTuple(args, "LLL:_set_parallel_threshold", &elements, &work, &time_ns)) {
        return NULL;
    }
    if (elements < 1 || work < 1 || time_ns < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "_set_parallel_threshold: elements and work must be >= 1, time_ns >= 0");
        return NULL;
    }
    atomic_store(&ufg_api.min_elements, elements);
    atomic_store(&ufg_api.min_work, work);
    atomic_store(&ufg_api.min_time_ns, time_ns);
    Py_RETURN_NONE;
}

static PyObject *
ufg_parallel_threshold(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    return Py_BuildValue("(LLL)", (long long)atomic_load(&ufg_api.min_elements),
                         (long long)atomic_load(&ufg_api.min_work),
                         (long long)atomic_load(&ufg_api.min_time_ns));
}

static PyObject *
ufg_thread_pool_stats(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(unused))
{
    pthread_mutex_lock(&ufg_lock);
    const int workers = ufg_workers;
    pthread_mutex_unlock(&ufg_lock);
    return Py_BuildValue("{s:L,s:L,s:i}",
                         "parallel_calls", (long long)atomic_load(&ufg_parallel_calls),
                         "helped_calls", (long long)atomic_load(&ufg_helped_calls),
                         "helper_threads", workers);
}

static PyMethodDef ufg_thread_methods[] = {
    {"get_num_threads", ufg_get_num_threads, METH_NOARGS,
     "get_num_threads()\n--\n\nThe number of threads a large host loop may use."},
    {"set_num_threads", ufg_set_num_threads, METH_O,
     "set_num_threads(n, /)\n--\n\nSet the number of threads large host loops may use."},
    {"_set_parallel_threshold", ufg_set_parallel_threshold, METH_VARARGS,
     "_set_parallel_threshold(elements, work, time_ns, /)\n--\n\n"
     "When calls run on several threads (for benchmarks and tests)."},
    {"_parallel_threshold", ufg_parallel_threshold, METH_NOARGS,
     "_parallel_threshold()\n--\n\n(elements, work, time_ns): when calls run on several threads."},
    {"_thread_pool_stats", ufg_thread_pool_stats, METH_NOARGS,
     "_thread_pool_stats()\n--\n\nCounters of the thread pool, for tests."},
    {NULL, NULL, 0, NULL},
};

int
ufg_threads_register(PyObject *module)
{
    static int initialized = 0;
    if (!initialized) {
        const int count = ufg_default_num_threads();
        if (count < 0) {
            return -1;
        }
        atomic_store(&ufg_api.num_threads, count);
        if (pthread_atfork(NULL, NULL, ufg_after_fork_in_child) != 0) {
            PyErr_SetString(PyExc_RuntimeError, "ufuncgen: pthread_atfork failed");
            return -1;
        }
        initialized = 1;
    }
    if (PyModule_AddFunctions(module, ufg_thread_methods) < 0) {
        return -1;
    }
    PyObject *capsule = PyCapsule_New(&ufg_api, UFG_THREADS_CAPSULE, NULL);
    if (capsule == NULL) {
        return -1;
    }
    if (PyModule_AddObjectRef(module, "_threads_api", capsule) < 0) {
        Py_DECREF(capsule);
        return -1;
    }
    Py_DECREF(capsule);
    return PyModule_AddIntConstant(module, "MAX_THREADS", UFG_MAX_THREADS);
}
