"""Bare generated ufuncs (`fn.ufunc`) pickle by reference: `module`, `name`.

A `ufuncgen.Function` pickles as its module global.  The np.ufunc it wraps is what NumPy hands
to `__array_ufunc__` overrides, so it is what dask puts in its task graphs; NumPy pickles a
ufunc by `__name__` alone, which for a generated ufunc finds the Function (or nothing), so
dask.distributed could not send it to a worker and dask could not tokenize it
deterministically.

Every generated module sets its ufuncs' `__module__` and `__qualname__` (`gaussian_pdf.ufunc`,
register.h); this module, imported by ufuncgen._core, installs a reducer for np.ufunc that
pickles those as `_load_ufunc(module, name)`.  Every other ufunc goes to NumPy's own reducer.

Where the module cannot be imported (a dask worker without it), unpickling still succeeds and
gives a stand-in whose every use raises ImportError naming the module: dask.distributed then
reports that error for the task, where an unpickling error would only reach the worker's log.
"""
import copyreg
import importlib

import numpy as np

_numpy_reduce = copyreg.dispatch_table.get(np.ufunc)


class MissingModuleUfunc:
    """Stands for `module.name.ufunc` in a process that cannot import `module`."""

    def __init__(self, module, name, error):
        self.module, self.name, self.error = module, name, error

    def _raise(self, *args, **kwargs):
        raise ImportError(f"ufuncgen: cannot import module '{self.module}' (needed for "
                          f"{self.module}.{self.name}) in this process: {self.error}",
                          name=self.module)

    __call__ = _raise

    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        self._raise()

    def __reduce__(self):
        return _load_ufunc, (self.module, self.name)


def _load_ufunc(module, name):
    try:
        return getattr(importlib.import_module(module), name).ufunc
    except ImportError as exc:
        return MissingModuleUfunc(module, name, exc)


def _reduce_ufunc(ufunc):
    attributes = getattr(ufunc, "__dict__", None) or {}
    module, qualname = attributes.get("__module__"), attributes.get("__qualname__")
    if isinstance(module, str) and isinstance(qualname, str) and qualname.endswith(".ufunc"):
        return _load_ufunc, (module, qualname[:-len(".ufunc")])
    if _numpy_reduce is not None:
        return _numpy_reduce(ufunc)
    return ufunc.__name__


_reduce_ufunc.__ufuncgen__ = True

if not getattr(copyreg.dispatch_table.get(np.ufunc), "__ufuncgen__", False):
    copyreg.pickle(np.ufunc, _reduce_ufunc)
