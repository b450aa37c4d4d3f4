"""Bare generated ufuncs (`fn.ufunc`) pickle by reference, as `module.name.ufunc`.

A `ufuncgen.Function` pickles as its module global.  The np.ufunc it wraps is what NumPy hands
to `__array_ufunc__` overrides, so it is what dask puts in its task graphs; NumPy pickles a
ufunc by `__name__` alone, which for a generated ufunc finds the Function (or nothing), so
dask.distributed could not send it to a worker and dask could not tokenize it
deterministically.

Every generated module sets its ufuncs' `__module__` and `__qualname__` (`gaussian_pdf.ufunc`,
register.h); this module, imported by ufuncgen._core, installs a reducer for np.ufunc that
reports that dotted name for those ufuncs, which pickle resolves attribute by attribute
(protocol 4 and up directly, older protocols through getattr).  Every other ufunc goes to
NumPy's own reducer, unchanged.
"""
import copyreg

import numpy as np

_numpy_reduce = copyreg.dispatch_table.get(np.ufunc)


def _reduce_ufunc(ufunc):
    qualname = (getattr(ufunc, "__dict__", None) or {}).get("__qualname__")
    if isinstance(qualname, str):
        return qualname
    if _numpy_reduce is not None:
        return _numpy_reduce(ufunc)
    return ufunc.__name__


_reduce_ufunc.__ufuncgen__ = True

if not getattr(copyreg.dispatch_table.get(np.ufunc), "__ufuncgen__", False):
    copyreg.pickle(np.ufunc, _reduce_ufunc)
