/*
 * Device-argument detection for ufuncgen.Function calls.
 *
 * A Function forwards every call to its wrapped NumPy ufunc unless one of
 * the arguments lives on a CUDA device, in which case the call has to be
 * routed to the device call of ufuncgen._device instead.  This file only answers the
 * question "is there such an argument, and where"; it never calls anything.
 */
#ifndef UFG_CORE_DISPATCH_H
#define UFG_CORE_DISPATCH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Returned by ufg_dispatch_find_device_argument. */
#define UFG_DISPATCH_HOST ((Py_ssize_t)-1)
#define UFG_DISPATCH_ERROR ((Py_ssize_t)-2)

/*
 * Create the interned attribute names used by the detector.  Must succeed
 * (return 0) before the first call to ufg_dispatch_find_device_argument;
 * returns -1 with an exception set on failure.
 */
int ufg_dispatch_init(void);

/*
 * Scan a vectorcall argument vector for a CUDA buffer.
 *
 * args/nargs/kwnames are exactly what a vectorcall function receives
 * (nargs already stripped of PY_VECTORCALL_ARGUMENTS_OFFSET).  Positional
 * arguments, then the values of the `out` keyword (a single object or a
 * tuple of objects) and of the reductions' `array` keyword are inspected.
 *
 * Returns the index into `args` of the first device argument (for `out`,
 * the index of the keyword's value, i.e. nargs + position in kwnames),
 * UFG_DISPATCH_HOST (-1) if every argument is host memory, or
 * UFG_DISPATCH_ERROR (-2) with an exception set if probing an argument
 * raised (see ufg_dispatch_is_device_buffer).
 */
Py_ssize_t ufg_dispatch_find_device_argument(PyObject *const *args,
                                             Py_ssize_t nargs,
                                             PyObject *kwnames);

/*
 * 1 if every positional argument and the values of `out` (or its entries),
 * `where`, `array` and `indices` (the reductions') are plain host values:
 * exact ndarrays, NumPy's own scalars, Python numbers, None, lists and
 * tuples, recognised by type alone.  Such a call has no device buffer and
 * no __array_ufunc__ override, so it can go straight to the host ufunc;
 * 0 means "look closer" (overrides.h, then
 * ufg_dispatch_find_device_argument).  Never raises.
 */
int ufg_dispatch_is_plain_host_call(PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames);

/* One object: 1 if it is a CUDA buffer, 0 if not, -1 with an exception set
 * (its __dlpack_device__ raised, or reading its __cuda_array_interface__ raised something
 * other than AttributeError).  An object whose __dlpack_device__ says CPU, or whose
 * __cuda_array_interface__ raises AttributeError (a PyTorch CPU tensor), is host memory. */
int ufg_dispatch_is_device_buffer(PyObject *obj);

/* Adds _device_probe, the capsule through which ufuncgen._device calls the probe above
 * (ufuncgen/device_probe.h).  0, or -1 with an exception set. */
int ufg_dispatch_register(PyObject *module);

#endif /* UFG_CORE_DISPATCH_H */
