"""The parameters of a generated function's call, one definition for the first line of its
docstring (gen/render.py, what help() shows) and its `__signature__` (ufuncgen/_signature.py,
what inspect.signature and editors show).

The inputs come first, positional-only, then `out`, then NumPy's keywords of a ufunc's call,
keyword-only.  Kept apart from the rest of the generator (no Jinja2), so that the runtime
reads it without loading the generator.
"""
from __future__ import annotations


class _NoValue:
    """axes= and axis= have no default: NumPy refuses None for them, and its own gufuncs show
    `<no value>` (numpy._NoValue, which ufuncgen/_signature.py puts in its place)."""

    def __repr__(self) -> str:
        return "<no value>"


NO_VALUE = _NoValue()

# (name, default) of the keywords after `out=None, *`, in the order inspect.signature shows
# NumPy's own ufuncs' (np.add, np.matmul).  signature= is NumPy's too; the device-only
# stream= is not (the host call refuses it).
UFUNC_KEYWORDS = (("where", True), ("casting", "same_kind"), ("order", "K"), ("dtype", None),
                  ("subok", True), ("signature", None))
GUFUNC_KEYWORDS = (("axes", NO_VALUE), ("axis", NO_VALUE), ("keepdims", False),
                   ("casting", "same_kind"), ("order", "K"), ("dtype", None), ("subok", True),
                   ("signature", None))


def keywords(is_gufunc: bool) -> tuple[tuple[str, object], ...]:
    return GUFUNC_KEYWORDS if is_gufunc else UFUNC_KEYWORDS


def call_text(name: str, inputs: list[str] | tuple[str, ...], is_gufunc: bool) -> str:
    """`name(x, k, /, out=None, *, where=True, ...)`; `name(out=None, *, ...)` without inputs,
    where a `/` with nothing before it is no Python."""
    given = ", ".join(f"{k}={v!r}" for k, v in keywords(is_gufunc))
    positional = f"{', '.join(inputs)}, /, " if inputs else ""
    return f"{name}({positional}out=None, *, {given})"
