"""ufuncgen: NumPy ufuncs and gufuncs generated from declarative signature files.

Importing this package is cheap: the generator (Jinja2) loads only when something is
generated, and the compiled runtime only when a generated module or `Function` is used.
"""
__version__ = "0.1.0"
__all__ = ["Function", "get_num_threads", "load", "set_num_threads", "__version__"]

from typing import TYPE_CHECKING as _TYPE_CHECKING

from .threads import get_num_threads, set_num_threads
from ._cache_finder import install as _install_finder

if _TYPE_CHECKING:      # the typed class for checkers (stubs subclass it); at run time, lazily
    from ._core import Function

# Modules load() named by default import from its cache in any process that imports ufuncgen
# (unpickling a generated function does): a dask worker needs no load() call of its own.
_install_finder()


def load(path_or_text, name=None, *, cuda_arch=None, threads=True, verbose=False):
    """A signature file (its path, or its text) as an imported module, built on first use
    and cached; see ufuncgen.loader.load."""
    from .loader import load as _load
    return _load(path_or_text, name, cuda_arch=cuda_arch, threads=threads, verbose=verbose)


def load_ipython_extension(ipython):
    """`%load_ext ufuncgen`: registers the `%%ufuncgen NAME` cell magic."""
    from .ipython import load_ipython_extension as _register
    _register(ipython)


def __getattr__(name):
    if name == "Function":
        from ._core import Function
        return Function
    raise AttributeError(f"module 'ufuncgen' has no attribute {name!r}")
