"""The parameters of a generated function's call, one definition for the first line of its
docstring (gen/render.py, what help() shows) and its `__signature__` (ufuncgen/_signature.py,
what inspect.signature and editors show).

The inputs come first, positional-only, then `out`, then NumPy's keywords of a ufunc's call,
keyword-only.  Kept apart from the rest of the generator (no Jinja2), so that the runtime
reads it without loading the generator.
"""
from __future__ import annotations

# (name, default) of the keywords after `out=None, *`, in the order of NumPy's documentation.
UFUNC_KEYWORDS = (("where", True), ("casting", "same_kind"), ("order", "K"), ("dtype", None),
                  ("subok", True))
GUFUNC_KEYWORDS = (("axes", None), ("axis", None), ("keepdims", False),
                   ("casting", "same_kind"), ("order", "K"), ("dtype", None), ("subok", True))


def keywords(is_gufunc: bool) -> tuple[tuple[str, object], ...]:
    return GUFUNC_KEYWORDS if is_gufunc else UFUNC_KEYWORDS


def call_text(name: str, inputs: list[str] | tuple[str, ...], is_gufunc: bool) -> str:
    """`name(x, k, /, out=None, *, where=True, ...)`."""
    given = ", ".join(f"{k}={v!r}" for k, v in keywords(is_gufunc))
    return f"{name}({', '.join(inputs)}, /, out=None, *, {given})"
