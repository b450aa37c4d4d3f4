"""ufuncgen: NumPy ufuncs and gufuncs generated from declarative signature files.

Importing this package is cheap: the generator (Jinja2) loads only when something is
generated, and the compiled runtime only when a generated module or `Function` is used.
"""
__version__ = "0.1.0"
__all__ = ["Function", "get_num_threads", "set_num_threads", "__version__"]

from .threads import get_num_threads, set_num_threads


def __getattr__(name):
    if name == "Function":
        from ._core import Function
        return Function
    raise AttributeError(f"module 'ufuncgen' has no attribute {name!r}")
