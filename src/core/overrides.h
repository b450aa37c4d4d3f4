/*
 * __array_ufunc__ overrides (NEP 13) that receive the ufuncgen.Function.
 *
 * Forwarding a call to the wrapped np.ufunc would let NumPy run the
 * override protocol itself, but NumPy would hand overrides the inner ufunc:
 * dask and xarray would then put the bare ufunc in their graphs, and a chunk
 * that is a CUDA array would never reach the device path again.  So the
 * Function runs the protocol itself, with NumPy's rules, before forwarding:
 *
 *   - candidates are the inputs, the entries of `out` and `where`, as NumPy
 *     normalises them per method; only the first argument of each type counts;
 *   - ndarray's own __array_ufunc__ is no override;
 *   - __array_ufunc__ = None refuses the call with NumPy's TypeError;
 *   - subclasses are asked before their superclasses, otherwise left to right;
 *     each gets override(function, method, *inputs, **kwargs), `out` always a
 *     tuple; when every one returns NotImplemented, a TypeError names the
 *     function and the operand types as NumPy's does.
 *
 * Device buffers (CUDA Array Interface, CUDA DLPack) are never candidates,
 * even when their type defines __array_ufunc__ (CuPy's does, and refuses any
 * ufunc that is not its own): the device path is what serves them.  Overrides
 * of the other arguments are still asked first, so a dask array next to a
 * CuPy array is dask's to map, chunk by chunk, with the Function.
 *
 * A call NumPy would refuse before looking for overrides (a missing operand,
 * an unknown keyword, `out` given twice, reduce on a gufunc, ...) is reported
 * as "no override": the caller forwards it and NumPy raises its own error.
 */
#ifndef UFG_CORE_OVERRIDES_H
#define UFG_CORE_OVERRIDES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* The ufunc entry points an override can be asked for. */
typedef enum {
    UFG_METHOD_CALL,
    UFG_METHOD_REDUCE,
    UFG_METHOD_ACCUMULATE,
    UFG_METHOD_REDUCEAT,
    UFG_METHOD_OUTER,
    UFG_METHOD_AT,
    UFG_METHOD_COUNT
} ufg_ufunc_method;

/* Intern the names used below; 0, or -1 with an exception set. */
int ufg_overrides_init(void);

/* The value of the keyword `name` among a vectorcall's keywords (values: the arguments after
 * the positional ones), or NULL. */
PyObject *ufg_keyword_value(PyObject *const *values, PyObject *kwnames, const char *name);

/* The method's name as NumPy spells it ("__call__", "reduce", ...). */
PyObject *ufg_overrides_method_name(ufg_ufunc_method method);

/*
 * Run the override protocol for `function` (whose wrapped ufunc is `ufunc`)
 * called as `method` with a vectorcall argument vector.
 *
 * Returns 1 with *result set (a new reference) when an override answered,
 * 0 when no argument overrides (the caller goes on: device path or host),
 * -1 with an exception set (__array_ufunc__ = None, an override raised, or
 * every override returned NotImplemented).
 */
int ufg_overrides_check(PyObject *function, PyObject *ufunc,
                        ufg_ufunc_method method, PyObject *const *args,
                        Py_ssize_t nargs, PyObject *kwnames,
                        PyObject **result);

#endif /* UFG_CORE_OVERRIDES_H */
