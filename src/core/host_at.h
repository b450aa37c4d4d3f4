/*
 * `function.at(a, indices, b)` on the host through the generated module's indexed loops, for
 * the calls NumPy would make in the simplest way (host_at.c says which); NumPy's ufunc.at
 * takes the others.
 */
#ifndef UFG_CORE_HOST_AT_H
#define UFG_CORE_HOST_AT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

struct ufg_function_descriptor;

/* A function's cache of the loop NumPy resolves for each pair of types (made on first use,
 * freed with PyMem_Free). */
typedef short *ufg_host_at_cache;

#define UFG_HOST_AT_DONE 1          /* the updates are made */
#define UFG_HOST_AT_DECLINED 0      /* not a call for this path: give it to NumPy */
#define UFG_HOST_AT_ERROR (-1)      /* an exception is set */

/* `ufunc`.at(*args) of the function described by `fn` (NULL: declined).  As with NumPy's, an
 * error is raised before any update (an index out of bounds), or after all of them (a
 * floating-point error that np.errstate makes one). */
int ufg_host_at(PyObject *ufunc, const struct ufg_function_descriptor *fn,
                ufg_host_at_cache *cache, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames);

/* Adds _host_at_calls() to the module.  0, or -1 with an exception set. */
int ufg_host_at_register(PyObject *module);

#endif /* UFG_CORE_HOST_AT_H */
