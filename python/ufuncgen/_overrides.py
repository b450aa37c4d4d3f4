"""The TypeError text for a ufuncgen function whose `__array_ufunc__` overrides all returned
NotImplemented (src/core/overrides.c raises it), worded as NumPy words it for its own ufuncs."""


def not_implemented_message(function, method, *inputs, **kwargs):
    """`function`, `method` and the operands, as the override protocol handed them out."""
    arguments = [repr(a) for a in inputs] + [f"{k}={v!r}" for k, v in kwargs.items()]
    operands = inputs + tuple(kwargs.get("out", ()))
    types = ", ".join(repr(type(a).__name__) for a in operands)
    return (f"operand type(s) all returned NotImplemented from "
            f"__array_ufunc__({function!r}, {method!r}, {', '.join(arguments)}): {types}")
