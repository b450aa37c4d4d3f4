/*
 * Host gufunc calls whose outputs overlap their inputs.
 *
 * NumPy's gufunc machinery hands the inner loop the operands as they are,
 * so a loop writing out[i, j] may later read an input element it has just
 * overwritten: matmul(a, a, out=a) reads half-updated rows.  A ufuncgen
 * function computes as if the inputs were copied, on the host as on the
 * device: an input that may share memory with an output is copied first.
 * (Elementwise ufuncs need none of this: NumPy's iterator already copies
 * what overlaps for them.)
 */
#ifndef UFG_CORE_OVERLAP_H
#define UFG_CORE_OVERLAP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/*
 * Call the gufunc `ufunc` on the host with a vectorcall argument vector
 * that may carry outputs (positionally or as `out=`), first replacing every
 * input that may share memory with an ndarray output by a copy.  An input
 * that is not an ndarray (a memoryview, an object with __array__ or
 * __array_interface__, ...) is converted as NumPy converts it, to tell, and
 * replaced by a copy of that array if it overlaps; else it is passed as it
 * was.  Numbers, strings, lists and tuples are left alone: NumPy makes new
 * arrays of them.  Bounds decide when two arrays are apart; when they meet,
 * numpy.may_share_memory with a bounded effort decides, a "too hard to tell"
 * counting as shared.
 * Returns the ufunc's result, or NULL with an exception set.
 */
PyObject *ufg_overlap_call_gufunc(PyObject *ufunc, PyObject *const *args,
                                  size_t nargsf, PyObject *kwnames);

#endif /* UFG_CORE_OVERLAP_H */
