/*
 * The process's thread pool and thread count (threads.c): what ufuncgen.set_num_threads
 * sets, and the capsule `_threads_api` that generated modules fetch when imported.
 */
#ifndef UFG_CORE_THREADS_H
#define UFG_CORE_THREADS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/*
 * Add get_num_threads, set_num_threads, the private tuning functions and the `_threads_api`
 * capsule to `module`.  Returns 0, or -1 with an exception set.
 */
int ufg_threads_register(PyObject *module);

#endif /* UFG_CORE_THREADS_H */
