"""Generated functions and their bare ufuncs (`fn.ufunc`) pickle by reference: `module`, `name`.

A `ufuncgen.Function` pickles as `_load_function(module, name)`, its module global; it is also
what `__array_ufunc__` overrides receive, so it is what dask puts in its task graphs.  The
np.ufunc it wraps still travels wherever code passes `fn.ufunc` itself (say to
`da.apply_gufunc`); NumPy pickles a ufunc by `__name__` alone, which for a generated ufunc finds
the Function (or nothing), so dask.distributed could not send it to a worker and dask could not
tokenize it deterministically.

Every generated module sets its ufuncs' `__module__` and `__qualname__` (`gaussian_pdf.ufunc`,
register.h); this module, imported by ufuncgen._core, installs a reducer for np.ufunc that
pickles those as `_load_ufunc(module, name)`.  Every other ufunc goes to NumPy's own reducer.

Where the module cannot be imported (a dask worker without it), unpickling still succeeds and
gives a stand-in whose every use raises ImportError naming the module: dask.distributed then
reports that error for the task, where an unpickling error would only reach the worker's log
(and the client would wait for the task forever).
"""
import copyreg
import importlib
import pickle

import numpy as np

_numpy_reduce = copyreg.dispatch_table.get(np.ufunc)


class MissingModuleFunction:
    """Stands for `module.name` (or its `.ufunc`) in a process that cannot import `module`."""

    def __init__(self, module, name, error, loader):
        self.module, self.name, self.error, self._loader = module, name, error, loader

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
        return self._loader, (self.module, self.name)


def _load_function(module, name):
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        return MissingModuleFunction(module, name, exc, _load_function)


def _reduce_function(function):
    """Function.__reduce__: a reference that unpickles to the same module global.  As pickle
    does for a global name, refuse at dump time an object that is not its module's global."""
    module, name = function.__module__, function.__name__
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError as exc:
        raise pickle.PicklingError(f"Can't pickle {function!r}: module {module!r} cannot be "
                                   f"imported ({exc})") from None
    if found is not function:
        raise pickle.PicklingError(f"Can't pickle {function!r}: it is not the same object as "
                                   f"{module}.{name}")
    return _load_function, (module, name)


def _load_ufunc(module, name):
    try:
        return getattr(importlib.import_module(module), name).ufunc
    except ImportError as exc:
        return MissingModuleFunction(module, name, exc, _load_ufunc)


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
