# The runtime type that wraps every generated ufunc (src/core/function_object.c).
import inspect
from typing import Any

import numpy as np

class Function:
    """A generated ufunc or gufunc: calls go to the wrapped np.ufunc (host) or the device path."""

    def __init__(self, ufunc: np.ufunc, name: str, module: str, doc: str) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    @property
    def ufunc(self) -> np.ufunc: ...
    # The call as declared: (x, k, /, out=None, *, where=True, ...).
    @property
    def __signature__(self) -> inspect.Signature: ...
    # The function's name, as a ufunc's: `add`, `ufuncgen.examples.add` being its module's.
    __name__: str
    __qualname__: str
    # Forwarded to the wrapped ufunc:
    nin: int
    nout: int
    nargs: int
    ntypes: int
    types: list[str]
    signature: str | None
    identity: Any
    def reduce(self, array: Any, axis: Any = ..., dtype: Any = ..., out: Any = ..., **kwargs: Any) -> Any: ...
    def accumulate(self, array: Any, axis: Any = ..., dtype: Any = ..., out: Any = ..., **kwargs: Any) -> Any: ...
    def reduceat(self, array: Any, indices: Any, axis: int = ..., dtype: Any = ..., out: Any = ...) -> Any: ...
    def outer(self, a: Any, b: Any, /, **kwargs: Any) -> Any: ...
    def at(self, a: Any, indices: Any, b: Any = ..., /) -> None: ...
    def resolve_dtypes(self, dtypes: tuple[Any, ...], *, signature: tuple[Any, ...] | None = ...,
                       casting: str | None = ..., reduction: bool = ...) -> tuple[np.dtype[Any], ...]: ...
