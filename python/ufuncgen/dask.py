"""Generated functions on dask arrays.

Most calls need nothing from here: a generated function called on a dask array goes through
the `__array_ufunc__` protocol, which hands dask the function itself (not its bare ufunc), and
dask maps an elementwise function to `da.elemwise` and a gufunc to `da.apply_gufunc`; the result
is a lazy dask array:

    >>> import dask.array as da, ufuncgen.examples as ex
    >>> x = da.random.standard_normal(10**8, chunks=10**7)
    >>> ex.gaussian_pdf(x, 0.0, 1.0)            # lazy, chunk by chunk
    >>> ex.l2_norm(x.reshape(-1, 100))          # gufunc: core dimension whole in each chunk

dask dispatches ufuncs with several outputs only for NumPy's own, so `ex.sincos(x)` raises a
TypeError, and cannot size a gufunc's output dimension that no input has (a `dim:` line), so
`ex.condensed_distances(points)` raises dask's KeyError naming it.  `apply` works for every
generated function, one output or several, and computes such sizes as a NumPy call does:

    >>> import ufuncgen.dask
    >>> s, c = ufuncgen.dask.apply(ex.sincos, x)

The task graphs hold the generated function itself, so each chunk is dispatched by its own
type: NumPy chunks to the host loops, CUDA chunks (CuPy) to the device.  The function pickles by
reference to its module (`ufuncgen.examples.sincos`): workers import the module, so it must be
importable there (a worker that cannot import it fails with "cannot import module ...").
Tokens are deterministic.
"""
from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

__all__ = ["apply"]


def _is_python_scalar(a) -> bool:
    return isinstance(a, (bool, int, float, complex)) and not isinstance(a, np.generic)


def _operand_dtype(a):
    """What NumPy's type resolution sees for operand `a`: the type of a Python int, float or
    complex (a weak scalar), np.bool_ for a Python bool (NumPy takes it as one, and
    `resolve_dtypes` refuses `bool`), else the array's dtype."""
    if isinstance(a, bool):
        return np.dtype(np.bool_)
    return type(a) if _is_python_scalar(a) else a.dtype


def _resolve(ufunc: np.ufunc, arrays: tuple, dtype: Any) -> tuple[list, list[np.dtype]]:
    """The inputs, Python scalars made NumPy scalars of the loop's type (as a NumPy call
    treats them: dask would make them float64 or int64 arrays) and sequences NumPy arrays
    (dask takes only arrays), and the output dtypes that NumPy's type resolution picks.
    `dtype=` fixes every output's dtype, as it does in a NumPy call (signature=)."""
    arrays = [a if _is_python_scalar(a) or hasattr(a, "dtype") else np.asarray(a)
              for a in arrays]
    fixed = {} if dtype is None else {
        "signature": (None,) * ufunc.nin + (np.dtype(dtype),) * ufunc.nout}
    resolved = ufunc.resolve_dtypes((*map(_operand_dtype, arrays), *[None] * ufunc.nout),
                                    **fixed)
    arrays = [resolved[i].type(a) if _is_python_scalar(a) else a for i, a in enumerate(arrays)]
    return arrays, list(resolved[ufunc.nin:])


def _core_dims(signature: str) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """The core dimension names of each input and each output of a gufunc signature."""
    def parts(side: str) -> list[tuple[str, ...]]:
        return [tuple(d.strip() for d in group.split(",") if d.strip())
                for group in re.findall(r"\(([^)]*)\)", side)]
    inputs, outputs = signature.split("->")
    return parts(inputs), parts(outputs)


def _computed_output_sizes(ufunc: np.ufunc, arrays: list) -> dict[str, int]:
    """The sizes of a gufunc's output core dimensions that no input has (a `dim:` line, or a
    constant one), which dask cannot infer and asks for as output_sizes: NumPy's own
    resolution of the core dimensions (the generated `dim:` arithmetic, with its errors),
    run on empty stacks of the inputs' core shapes, so that no body runs."""
    inputs, outputs = _core_dims(ufunc.signature)
    computed = {d for dims in outputs for d in dims} - {d for dims in inputs for d in dims}
    if not computed:
        return {}
    empty = [np.empty((0, *np.shape(a)[np.ndim(a) - len(dims):]), np.result_type(a))
             for a, dims in zip(arrays, inputs)]
    results = ufunc(*empty)
    results = results if isinstance(results, tuple) else (results,)
    return {d: size for result, dims in zip(results, outputs)
            for d, size in zip(dims, result.shape[result.ndim - len(dims):]) if d in computed}


def apply(function, *arrays, allow_rechunk: bool = False, dtype: Any = None, **kwargs):
    """`function(*arrays)` lazily, chunk by chunk, through `dask.array.apply_gufunc`.

    function: a generated function (`ufuncgen.Function`) or its `.ufunc`, elementwise or
    gufunc, with any number of outputs.  arrays: dask arrays, NumPy arrays or scalars,
    broadcast as NumPy would.  Returns a dask array, or a tuple of them for several outputs,
    with the dtypes NumPy's type resolution gives (or `dtype`).

    A gufunc's core dimensions must each be one chunk: dask raises a ValueError naming the
    dimension otherwise, unless `allow_rechunk=True`, which merges the chunks first (the
    answer is then right, at the cost of moving data).  The size of an output dimension that
    no input has (a `dim:` line) is computed from the inputs' core sizes, as a NumPy call
    computes it, unless `output_sizes` gives it.  Other keywords (`axes`, `axis`,
    `keepdims`, `output_sizes`, `meta`) go to `apply_gufunc`.
    """
    import dask.array as da

    ufunc = getattr(function, "ufunc", function)
    if not isinstance(ufunc, np.ufunc):
        raise TypeError(f"apply() needs a ufuncgen function or a numpy.ufunc, "
                        f"not {type(function).__name__}")
    if len(arrays) != ufunc.nin:
        raise TypeError(f"{ufunc.__name__}() takes {ufunc.nin} input(s), got {len(arrays)}")
    signature = ufunc.signature
    if signature is None:
        signature = ",".join(["()"] * ufunc.nin) + "->" + ",".join(["()"] * ufunc.nout)
    arrays, output_dtypes = _resolve(ufunc, arrays, dtype)
    if ufunc.signature is not None and "output_sizes" not in kwargs and \
            "axes" not in kwargs and "axis" not in kwargs:
        kwargs["output_sizes"] = _computed_output_sizes(ufunc, arrays)
    # The function, not its bare ufunc, in the graph: a CuPy chunk then takes the device path.
    # dtype= is bound to it here: given to apply_gufunc, it would be blockwise's own dtype=
    # parameter and never reach the chunks, which would compute the default dtype.
    if dtype is not None:
        function = functools.partial(function, dtype=dtype)
    return da.apply_gufunc(
        function, signature, *arrays,
        output_dtypes=output_dtypes if ufunc.nout > 1 else output_dtypes[0],
        allow_rechunk=allow_rechunk, vectorize=False, **kwargs)
