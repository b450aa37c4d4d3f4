"""A generated function's `__signature__` (src/core/function_object.c asks for it)."""
from __future__ import annotations

import inspect

import numpy as np

from .gen.call import NO_VALUE, keywords


def call_signature(inputs: tuple[str, ...], is_gufunc: bool) -> inspect.Signature:
    """`(x, k, /, out=None, *, where=True, ...)`: the declared inputs and the keywords of the
    call, as the docstring's first line and the stub have them."""
    p = inspect.Parameter
    return inspect.Signature(
        [p(name, p.POSITIONAL_ONLY) for name in inputs]
        + [p("out", p.POSITIONAL_OR_KEYWORD, default=None)]
        + [p(name, p.KEYWORD_ONLY, default=np._NoValue if value is NO_VALUE else value)
           for name, value in keywords(is_gufunc)])
