"""Device calls: what `ufuncgen._core.Function` does when an argument is a CUDA buffer.

The whole call is checked before anything runs (argument kinds, devices, dtypes through
NumPy's own type resolution, broadcasting, core dimensions, `out=` shape, dtype, alignment
and writability), so a refused call writes nothing.  Then inputs that need it are cast (or
copied, when they overlap an output: results are as if computed from copies, like NumPy's),
the dimensions are collapsed, and the generated kernel is launched on the stream.  Device
calls are asynchronous, like CuPy's: `ufuncgen.device.synchronize()` waits.
"""
from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field

import numpy as np

from . import _device
from ._device_buffers import (
    Buffer, Scalar, buffer_of, c_strides, check_alignment, check_dtype, classify,
    is_device_object, stream_handle, type_name, wait_for_producer)

_COMMON_KEYWORDS = {"out", "dtype", "casting", "order", "subok", "stream"}
_UFUNC_KEYWORDS = _COMMON_KEYWORDS | {"where"}
_GUFUNC_KEYWORDS = _COMMON_KEYWORDS | {"axes", "axis", "keepdims"}
_REDUCE_KEYWORDS = {"axis", "dtype", "out", "keepdims", "initial", "where", "stream"}
_MAX_DIMS = 12                  # UFG_DEVICE_MAX_DIMS
_NO_VALUE = object()


# --------------------------------------------------------------------------- per function

@dataclass(frozen=True)
class _Spec:
    """What the dispatcher needs to know about one generated function, worked out once."""
    name: str
    nin: int
    nout: int
    arg_names: tuple[str, ...]                  # inputs, then outputs
    loops: tuple[tuple[np.dtype, ...], ...]     # ufunc.types, as dtypes
    core: tuple[tuple[str, ...], ...] | None    # core dim names per operand; None: elementwise
    dims: tuple[str, ...]                       # distinct core dims, in NumPy's order
    ufunc: np.ufunc
    table: object                               # the generated launchers (a capsule)
    associative: bool                           # .reduce may split an output's elements

    @property
    def is_gufunc(self) -> bool:
        return self.core is not None


_specs: dict[int, _Spec] = {}


def _spec(function) -> _Spec:
    spec = _specs.get(id(function))
    if spec is None:
        spec = _specs[id(function)] = _make_spec(function)
    return spec


def _make_spec(function) -> _Spec:
    ufunc = function.ufunc
    if function._device_table is None:
        raise TypeError(f"{function.__name__} was built without device kernels")
    loops = tuple(tuple(np.dtype(c) for c in t.replace("->", "")) for t in ufunc.types)
    core = dims = None
    if ufunc.signature:
        ins, outs = ufunc.signature.replace(" ", "").split("->")
        core = tuple(tuple(d for d in group.split(",") if d)
                     for group in re.findall(r"\(([^)]*)\)", ins + "," + outs))
        dims = tuple(dict.fromkeys(d for group in core for d in group))
    return _Spec(function.__name__, ufunc.nin, ufunc.nout, _argument_names(function), loops,
                 core, dims or (), ufunc, function._device_table,
                 _device.table_associative(function._device_table))


def _argument_names(function) -> tuple[str, ...]:
    """From the generated docstring: `f(x, y, /, ...)` and `Returns: a, b`."""
    nin, nout = function.ufunc.nin, function.ufunc.nout
    doc = function.__doc__ or ""
    head = re.match(r"\w+\((.*?), /", doc)
    ins = [n.strip() for n in head[1].split(",")] if head else []
    returns = re.search(r"^Returns: (.*)$", doc, re.M)
    outs = [n.strip() for n in returns[1].split(",")] if returns else []
    if len(ins) != nin:
        ins = [f"x{i + 1}" for i in range(nin)]
    if len(outs) != nout:
        outs = [f"out{i + 1}" for i in range(nout)]
    return tuple(ins + outs)


# --------------------------------------------------------------------------- the call

@dataclass
class _Call:
    spec: _Spec
    stream: int
    inputs: list = field(default_factory=list)      # Buffer | Scalar
    outs: list = field(default_factory=list)        # Buffer | None (to allocate)
    device: int = 0

    def what(self, k: int) -> str:
        kind = "argument" if k < self.spec.nin else "output"
        return f"{self.spec.name}: {kind} '{self.spec.arg_names[k]}'"


def call(function, args: tuple, kwargs: dict):
    spec = _spec(function)
    _check_keywords(spec, kwargs, _GUFUNC_KEYWORDS if spec.is_gufunc else _UFUNC_KEYWORDS)
    if kwargs.get("subok", True) is not True:
        raise TypeError(f"{spec.name}: subok=False is not supported on the device")
    _check_order(spec, kwargs.get("order", "K"))
    out_objects = _out_objects(spec, args, kwargs)
    c = _Call(spec, stream_handle(kwargs.get("stream")))
    _classify_operands(c, args[:spec.nin], out_objects)
    resolved, loop_index = _resolve_loop(c, kwargs.get("dtype"), kwargs.get("casting", "same_kind"))
    where = _where_mask(c, kwargs.get("where", True)) if not spec.is_gufunc else None
    if where is not None and where is not True and "out" not in kwargs and len(args) == spec.nin:
        # NumPy's warning (the unselected elements of a new result are uninitialised).
        warnings.warn(f"{spec.name}: 'where' used without 'out', expect uninitialized memory "
                      "in output. If this is intentional, use out=None.", UserWarning, stacklevel=3)
    if spec.is_gufunc:
        plan = _plan_gufunc(c, resolved, kwargs)
    else:
        plan = _plan_elementwise(c, where)
    _check_alignments(c)
    # Everything is checked: from here on the call runs.
    _wait_for_producers(c, where)
    results = _run(c, resolved, loop_index, plan, where)
    wrapped = tuple(_result_object(c, k, r) for k, r in enumerate(results))
    return wrapped[0] if spec.nout == 1 else wrapped


def _check_keywords(spec: _Spec, kwargs: dict, allowed: set) -> None:
    for key in kwargs:
        if key not in allowed:
            raise TypeError(f"{spec.name}: keyword argument '{key}' is not supported on the device "
                            f"(supported there: {', '.join(sorted(allowed))})")


def _check_order(spec: _Spec, order) -> None:
    if order not in ("K", "C", "A", None):
        raise ValueError(f"{spec.name}: order={order!r} is not supported on the device; "
                         "results are allocated C-contiguous (order='K', 'C' or 'A')")


def _out_objects(spec: _Spec, args: tuple, kwargs: dict) -> list:
    if len(args) < spec.nin or len(args) > spec.nin + spec.nout:
        raise TypeError(f"{spec.name}() takes {spec.nin} input argument(s) "
                        f"({', '.join(spec.arg_names[:spec.nin])}) and at most {spec.nout} "
                        f"output(s), got {len(args)} positional argument(s)")
    outs = list(args[spec.nin:])
    if "out" in kwargs and kwargs["out"] is not None:
        if outs:
            raise TypeError(f"{spec.name}: cannot specify 'out' as both a positional and a "
                            "keyword argument")
        out = kwargs["out"]
        if isinstance(out, tuple):
            if len(out) != spec.nout:
                raise ValueError(f"{spec.name}: out= has {len(out)} entries, but the function "
                                 f"has {spec.nout} output(s)")
            outs = list(out)
        elif spec.nout == 1:
            outs = [out]
        else:
            raise TypeError(f"{spec.name}: out= must be a tuple of {spec.nout} arrays (or None)")
    return outs + [None] * (spec.nout - len(outs))


def _classify_operands(c: _Call, inputs: tuple, outs: list) -> None:
    spec = c.spec
    operands = list(inputs) + outs
    first = next((k for k, o in enumerate(operands) if o is not None and is_device_object(o)), None)
    anchor = buffer_of(operands[first], c.what(first))
    hint = f"{c.what(first).split(': ', 1)[1]} is on CUDA device {anchor.device}"
    for k, obj in enumerate(inputs):
        item = anchor if k == first else classify(obj, c.what(k), hint)
        if isinstance(item, Buffer):
            check_dtype(item.dtype, c.what(k))
        c.inputs.append(item)
    for j, obj in enumerate(outs):
        k = spec.nin + j
        if obj is None:
            c.outs.append(None)
            continue
        item = anchor if k == first else classify(obj, c.what(k), hint)
        if not isinstance(item, Buffer):
            raise TypeError(f"{c.what(k)} must be a CUDA array, not a {type_name(obj)}")
        check_dtype(item.dtype, c.what(k))
        if item.readonly:
            raise ValueError(f"{c.what(k)} is read-only (its __cuda_array_interface__ data flag)")
        c.outs.append(item)
    c.device = anchor.device
    for k, item in enumerate(c.inputs + c.outs):
        if isinstance(item, Buffer) and item.device != anchor.device:
            raise ValueError(f"{c.what(k)} is on CUDA device {item.device}, but {hint}; "
                             "all arrays of one call must be on the same GPU")


_resolutions: dict = {}


def _resolve_loop(c: _Call, dtype, casting: str) -> tuple[tuple[np.dtype, ...], int]:
    """NumPy's own type resolution: the loop NumPy would pick for these dtypes and scalars.
    It depends on the dtypes alone, so a successful answer is remembered."""
    spec = c.spec
    dtypes = tuple(i.dtype if isinstance(i, Buffer) else i.dtype_hint for i in c.inputs)
    dtypes += tuple(o.dtype if o is not None else None for o in c.outs)
    key = (id(spec), dtypes, dtype, casting)
    known = _resolutions.get(key)
    if known is None:
        known = _resolutions[key] = _resolve_dtypes(c, dtypes, dtype, casting)
    return known


def _resolve_dtypes(c: _Call, dtypes, dtype, casting: str) -> tuple[tuple[np.dtype, ...], int]:
    spec = c.spec
    options = {"casting": casting}
    if dtype is not None:
        options["signature"] = (None,) * spec.nin + (np.dtype(dtype),) * spec.nout
    try:
        resolved = tuple(spec.ufunc.resolve_dtypes(dtypes, **options))
    except TypeError as error:
        raise TypeError(f"{spec.name}: {error}") from None
    for k, item in enumerate(c.inputs):
        if isinstance(item, Buffer) and not np.can_cast(item.dtype, resolved[k], casting):
            raise TypeError(f"{c.what(k)}: cannot cast {item.dtype} to the loop's {resolved[k]} "
                            f"with casting rule {casting!r}")
    for j, out in enumerate(c.outs):
        loop_out = resolved[spec.nin + j]
        if out is not None and not np.can_cast(loop_out, out.dtype, casting):
            raise TypeError(f"{c.what(spec.nin + j)}: cannot cast the result's {loop_out} to "
                            f"{out.dtype} with casting rule {casting!r}")
    try:
        return resolved, spec.loops.index(resolved)
    except ValueError:
        raise TypeError(f"{spec.name}: no device loop for {resolved}") from None


def _where_mask(c: _Call, where) -> Buffer | bool:
    if where is True or where is False:
        return where
    if isinstance(where, (np.bool_,)):
        return bool(where)
    item = classify(where, f"{c.spec.name}: where=", f"the call's data is on CUDA device {c.device}")
    if not isinstance(item, Buffer):
        raise TypeError(f"{c.spec.name}: where= must be True, False or a CUDA bool array")
    if item.dtype != np.bool_:
        raise TypeError(f"{c.spec.name}: where= must have dtype bool, not {item.dtype}")
    if item.device != c.device:
        raise ValueError(f"{c.spec.name}: where= is on CUDA device {item.device}, but the call's "
                         f"data is on device {c.device}")
    return item


# --------------------------------------------------------------------------- planning

@dataclass
class _Plan:
    """The call in kernel layout: every operand's loop dimensions first, its core ones last."""
    loop_shape: tuple[int, ...]
    operands: list          # inputs (Buffer | Scalar), then outputs (Buffer | None: allocate)
    out_shapes: list        # per output: the shape the caller gets
    out_axes: list          # per output: its caller-layout axes in kernel order (None: same)
    core_sizes: dict        # core dim name -> size


def _view(buffer: Buffer, axes) -> Buffer:
    """`buffer` with its axes in the order `axes` (axes left out must have size 1)."""
    if axes is None:
        return buffer
    return Buffer(buffer.obj, buffer.ptr, tuple(buffer.shape[a] for a in axes),
                  tuple(buffer.strides[a] for a in axes), buffer.dtype, buffer.device,
                  buffer.readonly, buffer.stream, buffer.owner)


def _plan_elementwise(c: _Call, where) -> _Plan:
    spec = c.spec
    shapes = [i.shape for i in c.inputs if isinstance(i, Buffer)]
    if isinstance(where, Buffer):
        shapes.append(where.shape)
    try:
        full = broadcast_shapes(shapes)
    except ValueError:
        described = ", ".join(f"{spec.arg_names[k]} {i.shape}" for k, i in enumerate(c.inputs)
                              if isinstance(i, Buffer))
        raise ValueError(f"{spec.name}: operands could not be broadcast together: {described}"
                         + (f", where= {where.shape}" if isinstance(where, Buffer) else "")) from None
    for out in c.outs:
        if out is not None and _broadcasts_to(full, out.shape):
            full = out.shape            # the inputs broadcast to a larger out=, as in NumPy
    for j, out in enumerate(c.outs):
        if out is not None and out.shape != full:
            raise ValueError(f"{c.what(spec.nin + j)} has shape {out.shape}, but the result's "
                             f"shape is {full} (non-broadcastable output operand)")
    return _Plan(full, c.inputs + c.outs, [full] * spec.nout, [None] * spec.nout, {})


def broadcast_shapes(shapes) -> tuple[int, ...]:
    """NumPy's broadcasting of shapes; ValueError when they do not broadcast.  Written out
    rather than np.broadcast_shapes, which costs microseconds per call and keeps a little
    memory alive each time it fails."""
    ndim = max(map(len, shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for axis, n in enumerate(shape, ndim - len(shape)):
            if n != result[axis]:
                if result[axis] != 1 and n != 1:
                    raise ValueError(f"shapes {shapes} do not broadcast")
                if n != 1:
                    result[axis] = n
    return tuple(result)


def _broadcasts_to(shape, target) -> bool:
    try:
        return broadcast_shapes((shape, target)) == tuple(target)
    except ValueError:
        return False


def _check_alignments(c: _Call) -> None:
    for k, item in enumerate(c.inputs + c.outs):
        if isinstance(item, Buffer):
            check_alignment(item, c.what(k))


def _plan_gufunc(c: _Call, resolved, kwargs) -> _Plan:
    spec = c.spec
    nin, core = spec.nin, spec.core
    in_ndims = [i.ndim if isinstance(i, Buffer) else 0 for i in c.inputs]
    for k, n in enumerate(in_ndims):
        if n < len(core[k]) and isinstance(c.inputs[k], Buffer):
            raise ValueError(f"{c.what(k)} does not have enough dimensions (has {n}, the "
                             f"layout {_layout(spec)} requires {len(core[k])})")
    for j, out in enumerate(c.outs):      # before axes=, whose default would not fit either
        k = nin + j
        if out is not None and out.ndim < len(core[k]):
            raise ValueError(f"{c.what(k)} does not have enough dimensions (has {out.ndim}, the "
                             f"layout {_layout(spec)} requires {len(core[k])})")
    loop_ndim = max([n - len(core[k]) for k, n in enumerate(in_ndims)] + [0])
    core_axes, kept = _core_axes(c, in_ndims, loop_ndim, kwargs)
    operands = [_view(i, _move_last(i.ndim, core_axes[k])) if isinstance(i, Buffer) else i
                for k, i in enumerate(c.inputs)]
    out_axes, out_ndims = [], []
    for j, out in enumerate(c.outs):
        k = nin + j
        ndim = out.ndim if out is not None else loop_ndim + len(core[k]) + len(kept)
        axes = _output_axes(ndim, core_axes[k], kept)
        out_axes.append(axes)
        out_ndims.append(ndim)
        operands.append(_view(out, axes) if out is not None else None)
    # Core sizes and every core-dimension check come from NumPy's own gufunc machinery, run
    # on empty stand-ins with the operands' core shapes (so nothing is computed).
    def stand_in(k, item):
        nc = len(core[k])
        if isinstance(item, Buffer):
            return np.empty((0,) + item.shape[item.ndim - nc:], resolved[k])
        return np.empty((0,), resolved[k]) if not nc else np.asarray(item.obj)
    stand_ins = [stand_in(k, i) for k, i in enumerate(operands[:nin])]
    out_stand_ins = tuple(None if o is None else stand_in(nin + j, o)
                          for j, o in enumerate(operands[nin:]))
    try:
        results = spec.ufunc(*stand_ins, out=out_stand_ins)
    except (ValueError, TypeError) as error:
        text = str(error)
        text = text if text.startswith(spec.name) else f"{spec.name}: {text}"
        raise (TypeError if isinstance(error, TypeError) else ValueError)(text) from None
    results = results if isinstance(results, tuple) else (results,)
    sizes = {}
    for k, item in enumerate(operands[:nin]):
        if isinstance(item, Buffer):
            sizes.update(zip(core[k], item.shape[item.ndim - len(core[k]):]))
    for j, r in enumerate(results):
        sizes.update(zip(core[nin + j], r.shape[1:]))
    loop_shapes = [o.shape[:o.ndim - len(core[k])] for k, o in enumerate(operands)
                   if isinstance(o, Buffer)]
    try:
        loop = broadcast_shapes(loop_shapes)
    except ValueError:
        raise ValueError(f"{spec.name}: the loop dimensions of the operands could not be "
                         f"broadcast together: {', '.join(str(s) for s in loop_shapes)}") from None
    out_shapes = []
    for j, out in enumerate(c.outs):
        k = nin + j
        kernel_shape = loop + results[j].shape[1:]
        if len(kernel_shape) + len(kept) != out_ndims[j]:
            out_ndims[j] = len(kernel_shape) + len(kept)
            out_axes[j] = _output_axes(out_ndims[j], core_axes[k], kept)
        user_shape = _caller_shape(kernel_shape, out_axes[j], out_ndims[j])
        if out is not None and out.shape != user_shape:
            raise ValueError(f"{c.what(k)} has shape {out.shape}, but the result's shape is "
                             f"{user_shape}")
        out_shapes.append(user_shape)
    return _Plan(loop, operands, out_shapes, out_axes, sizes)


def _layout(spec: _Spec) -> str:
    return spec.ufunc.signature


def _move_last(ndim: int, core_axes: tuple[int, ...]) -> tuple[int, ...]:
    """The axis order that puts `core_axes` last, in their order."""
    return tuple(a for a in range(ndim) if a not in core_axes) + tuple(core_axes)


def _output_axes(ndim: int, core_axes, kept) -> tuple[int, ...]:
    """An output's axes in kernel order; with keepdims its size-1 core axes are left out."""
    if kept:
        dropped = {a % ndim for a in kept}
        return tuple(a for a in range(ndim) if a not in dropped)
    return _move_last(ndim, core_axes)


def _caller_shape(kernel_shape, axes, ndim: int) -> tuple[int, ...]:
    """The shape of an `ndim`-d caller-layout array whose axes `axes` (in kernel order) have
    `kernel_shape`; axes that `axes` leaves out (keepdims) have size 1."""
    shape = [1] * ndim
    for n, a in zip(kernel_shape, axes):
        shape[a] = n
    return tuple(shape)


def _core_axes(c: _Call, in_ndims, loop_ndim, kwargs):
    """NumPy's axes=/axis=/keepdims=, as the core axes of each operand (normalised, >= 0),
    and for keepdims the (negative) axes where outputs keep size-1 core dimensions."""
    spec = c.spec
    core = spec.core
    nargs = spec.nin + spec.nout
    axes, axis, keepdims = kwargs.get("axes"), kwargs.get("axis"), kwargs.get("keepdims", False)
    if axes is not None and axis is not None:
        raise TypeError(f"{spec.name}: cannot specify both 'axis' and 'axes'")
    if keepdims:
        in_cores = {len(core[k]) for k in range(spec.nin)}
        if len(in_cores) != 1 or any(core[spec.nin + j] for j in range(spec.nout)):
            raise TypeError(f"{spec.name} does not support keepdims: keepdims can only be used "
                            "when all inputs have the same number of core dimensions and the "
                            "outputs have none")
    # With keepdims each output keeps the inputs' core axes as size-1 axes (NumPy counts them
    # as the outputs' core dimensions for axes=/axis=).
    out_core = [len(core[0]) if keepdims else len(core[spec.nin + j]) for j in range(spec.nout)]
    core_counts = [len(core[k]) for k in range(spec.nin)] + out_core
    ndims = list(in_ndims) + [loop_ndim + out_core[j] if o is None else o.ndim
                              for j, o in enumerate(c.outs)]
    if axis is not None:
        names = {d for group in core for d in group}
        if len(names) != 1 or any(len(group) > 1 for group in core):
            raise TypeError(f"{spec.name}: axis can only be used with a single shared core "
                            f"dimension, not with the {len(names)} distinct ones of "
                            f"{_layout(spec)}")
        axes = [(axis,) if n else () for n in core_counts]
    elif axes is None:
        axes = [tuple(range(-n, 0)) for n in core_counts]
    else:
        if not isinstance(axes, list):
            raise TypeError(f"{spec.name}: axes= must be a list, not {type_name(axes)}")
        no_out_core = all(not core[spec.nin + j] for j in range(spec.nout))
        if len(axes) != nargs and not (len(axes) == spec.nin and no_out_core):
            raise ValueError(f"{spec.name}: axes= should be a list with an entry for all {nargs} "
                             "inputs and outputs; entries for outputs can only be omitted if "
                             "none of them has core axes")
        # Omitted output entries: their default (last) axes, as in NumPy.
        axes = list(axes) + [tuple(range(-n, 0)) for n in core_counts[len(axes):]]
    normalised = []
    for k, entry in enumerate(axes):
        nc = core_counts[k]
        if isinstance(entry, int) and not isinstance(entry, bool):
            entry = (entry,)
        if not isinstance(entry, tuple):
            raise TypeError(f"{spec.name}: axes item {k} should be a tuple or an int, "
                            f"not {type_name(entry)}")
        if len(entry) != nc:
            raise np.exceptions.AxisError(
                f"{spec.name}: {c.what(k).split(': ')[1]} has {nc} core dimension(s), but "
                f"{len(entry)} dimension(s) are specified by axes item {k}: {entry!r}")
        normalised.append(normalise_axes(
            entry, ndims[k], f"{spec.name}: axis {{}} is out of bounds for "
            f"{c.what(k).split(': ')[1]} of dimension {ndims[k]}",
            f"{spec.name}: axes item {k} repeats an axis: {entry!r}"))
    kept = ()
    if keepdims:
        # The outputs' size-1 kept axes, counted from the end of the (first) output.
        kept = tuple(a - ndims[spec.nin] for a in normalised[spec.nin])
        normalised[spec.nin:] = [()] * spec.nout
    return normalised, kept


# --------------------------------------------------------------------------- running

def _wait_for_producers(c: _Call, where) -> None:
    for item in c.inputs + c.outs + [where]:
        if isinstance(item, Buffer):
            wait_for_producer(item, c.stream)


def _run(c: _Call, resolved, loop_index: int, plan: _Plan, where) -> list:
    nin = c.spec.nin
    results, targets = [], []     # per output: what the caller gets, what the kernel writes
    for j, out in enumerate(c.outs):
        k = nin + j
        if out is not None and out.dtype == resolved[k]:
            results.append(out)
            targets.append(plan.operands[k])
            continue
        array = _device.empty(plan.out_shapes[j], resolved[k], c.device, c.stream)
        results.append(array if out is None else (out, buffer_of(array, "a temporary")))
        targets.append(_view(buffer_of(array, "a temporary"), plan.out_axes[j]))
    if where is False:
        return [r if not isinstance(r, tuple) else r[0] for r in results]
    inputs = [_kernel_input(c, k, item, resolved[k], plan, targets)
              for k, item in enumerate(plan.operands[:nin])]
    if isinstance(where, Buffer) and any(_overlaps(where, t) for t in targets):
        where = _copy(where, where.dtype, c)
    _launch(c, loop_index, plan, inputs, targets, where)
    final = []
    for result in results:
        if isinstance(result, tuple):             # the caller's out= of another dtype
            out, temporary = result
            _launch_cast(temporary, out, c, where if isinstance(where, Buffer) else None)
            result = out
        if isinstance(result, _device.DeviceArray):
            result.stream = c.stream
        final.append(result)
    return final


def _kernel_input(c: _Call, k: int, item, dtype: np.dtype, plan: _Plan, targets):
    """An input as the kernel reads it: a scalar's bytes in the loop's type, or a buffer cast
    to the loop's dtype, or copied when it overlaps an output other than element for element
    (so results are as if computed from copies, as NumPy's are)."""
    if isinstance(item, Scalar):
        try:
            return np.asarray(item.obj, dtype=dtype).tobytes()
        except OverflowError as error:
            raise OverflowError(f"{c.what(k)}: {error}") from None
    elementwise = not c.spec.is_gufunc
    if item.dtype != dtype or any(
            _overlaps(item, t) and not (elementwise and _same_elements(item, t, plan.loop_shape))
            for t in targets):
        return _copy(item, dtype, c)
    return item


def _overlaps(a: Buffer, b: Buffer) -> bool:
    alo, ahi = a.extent()
    blo, bhi = b.extent()
    return alo < bhi and blo < ahi


def _same_elements(item: Buffer, target: Buffer, loop_shape) -> bool:
    """Whether input element i is output element i for every i (out=x): safe in place."""
    return (item.ptr == target.ptr and item.dtype.itemsize == target.dtype.itemsize
            and _loop_strides(item, 0, loop_shape) == _loop_strides(target, 0, loop_shape))


def _copy(item: Buffer, dtype: np.dtype, c: _Call) -> Buffer:
    copy = buffer_of(_device.empty(item.shape, dtype, c.device, c.stream), "a temporary")
    _launch_cast(item, copy, c)
    return copy


def _launch_cast(src: Buffer, dst: Buffer, c: _Call, mask: Buffer | None = None) -> None:
    """Casts src into dst; with a mask (where=, broadcast to dst) only where it is True."""
    if 0 in dst.shape:
        return
    if mask is None:
        shape, (src_strides, dst_strides) = collapse(dst.shape, [src.strides, dst.strides])
        _device.launch_cast(c.device, c.stream, shape, src.ptr, src_strides, src.dtype,
                            dst.ptr, dst_strides, dst.dtype)
        return
    shape, (src_strides, dst_strides, mask_strides) = collapse(
        dst.shape, [src.strides, dst.strides, _loop_strides(mask, 0, dst.shape)])
    _device.launch_cast(c.device, c.stream, shape, src.ptr, src_strides, src.dtype,
                        dst.ptr, dst_strides, dst.dtype, mask.ptr, mask_strides)


def _loop_strides(item: Buffer, ncore: int, loop_shape) -> tuple[int, ...]:
    """An operand's strides over the loop dimensions, broadcast to `loop_shape`."""
    shape = item.shape[:item.ndim - ncore]
    strides = item.strides[:item.ndim - ncore]
    pad = len(loop_shape) - len(shape)
    return (0,) * pad + tuple(0 if n == 1 else s for n, s in zip(shape, strides))


def collapse(shape, strides_per_arg):
    """Drops size-1 dimensions and merges neighbours that every argument steps through as one;
    returns (shape, strides per argument).  Refuses more than the kernels' dimension limit."""
    merged = []
    for d, n in enumerate(shape):
        if n == 1:
            continue
        strides = [s[d] for s in strides_per_arg]
        if merged:
            m, outer = merged[-1]
            if all(o == s * n for o, s in zip(outer, strides)):
                merged[-1] = (m * n, strides)
                continue
        merged.append((n, strides))
    if len(merged) > _MAX_DIMS:
        raise ValueError(f"the device kernels handle at most {_MAX_DIMS} dimensions after "
                         f"merging contiguous ones; this call has {len(merged)}")
    return (tuple(n for n, _ in merged),
            [tuple(s[k] for _, s in merged) for k in range(len(strides_per_arg))])


def _launch(c: _Call, loop_index: int, plan: _Plan, inputs, targets, where) -> None:
    spec = c.spec
    loop = plan.loop_shape
    if 0 in loop:
        return
    core = spec.core or ((),) * (spec.nin + spec.nout)
    loop_strides, data, values, core_strides = [], [], [], []
    by_value = 0
    for k, item in enumerate(list(inputs) + list(targets)):
        if isinstance(item, bytes):
            by_value |= 1 << k
            data.append(0)
            values.append(item)
            loop_strides.append((0,) * len(loop))
            continue
        nc = len(core[k])
        loop_strides.append(_loop_strides(item, nc, loop))
        core_strides.extend(item.strides[item.ndim - nc:])
        data.append(item.ptr)
        values.append(None)
    if isinstance(where, Buffer):
        loop_strides.append(_loop_strides(where, 0, loop))
        data.append(where.ptr)
        values.append(None)
    shape, strides = collapse(loop, loop_strides)
    core_sizes = tuple(plan.core_sizes.get(d, 0) for d in spec.dims)
    _device.launch_elementwise(spec.table, loop_index, c.device, c.stream, shape, tuple(data),
                               tuple(strides), tuple(values), by_value, isinstance(where, Buffer),
                               core_sizes, tuple(core_strides))


# --------------------------------------------------------------------------- results

def _result_object(c: _Call, j: int, result):
    """The caller's own out= object, or the new array in the library the inputs came from."""
    out = c.outs[j]
    if out is not None:
        return out.obj
    anchor = next((i.obj for i in c.inputs if isinstance(i, Buffer)), None)
    return wrap_like(anchor, result)


def wrap_like(anchor, array):
    """`array` (a DeviceArray) as the same kind of array as `anchor`, without a copy."""
    root = type(anchor).__module__.split(".")[0]
    if root == "cupy":
        import cupy
        return cupy.asarray(array)
    if root == "torch":
        import torch
        return torch.as_tensor(array, device=f"cuda:{array.device}")
    if root == "numba":
        from numba import cuda
        return cuda.as_cuda_array(array)
    return array


# --------------------------------------------------------------------------- reduce

def reduce(function, args: tuple, kwargs: dict):
    spec = _spec(function)
    if spec.is_gufunc:          # NumPy's exception types for these two
        raise RuntimeError(f"{spec.name}.reduce: Reduction not defined on ufunc with signature")
    if spec.nin != 2 or spec.nout != 1:
        raise ValueError(f"{spec.name}.reduce: reduce only supported for binary functions")
    if spec.ufunc.identity is None:
        # Documented device rule: only functions with an identity get a device reduction
        # kernel (ufuncgen.gen.model.Function.reduce_signatures), initial= or not.
        raise TypeError(f"{spec.name}.reduce: {spec.name} has no identity, so it has no device "
                        "reduction; reduce a host copy, or give the function an identity")
    names = ("array", "axis", "dtype", "out", "keepdims", "initial", "where")
    if len(args) > len(names):
        raise TypeError(f"{spec.name}.reduce takes at most {len(names)} arguments")
    for name, value in zip(names, args):
        if name in kwargs:
            raise TypeError(f"{spec.name}.reduce: got multiple values for '{name}'")
        kwargs[name] = value
    if "array" not in kwargs:
        raise TypeError(f"{spec.name}.reduce: missing the array to reduce")
    _check_keywords(spec, {k: v for k, v in kwargs.items() if k != "array"}, _REDUCE_KEYWORDS)
    if kwargs.get("where", True) is not True:
        raise TypeError(f"{spec.name}.reduce: where= is not supported on the device")
    stream = stream_handle(kwargs.get("stream"))
    what = f"{spec.name}.reduce: argument 'array'"
    obj = kwargs["array"]
    if not is_device_object(obj):
        raise TypeError(f"{what} is a {type_name(obj)}, but out= is a CUDA array; host and "
                        "device arrays do not mix")
    array = buffer_of(obj, what)
    check_dtype(array.dtype, what)
    axes = _reduce_axes(spec, kwargs.get("axis", 0), array.ndim)
    keepdims = bool(kwargs.get("keepdims", False))
    out_shape = tuple((1 if d in axes else n) for d, n in enumerate(array.shape) if keepdims or d not in axes)
    out = kwargs.get("out")
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"{spec.name}.reduce: out= must hold one array")
        out = out[0]
    out_buffer = None
    if out is not None:
        if not is_device_object(out):
            raise TypeError(f"{spec.name}.reduce: out= is a {type_name(out)}, but the array is "
                            f"on CUDA device {array.device}; host and device arrays do not mix")
        out_buffer = buffer_of(out, f"{spec.name}.reduce: out=")
        check_dtype(out_buffer.dtype, f"{spec.name}.reduce: out=")
        if out_buffer.readonly:
            raise ValueError(f"{spec.name}.reduce: out= is read-only")
        if out_buffer.shape != out_shape:
            raise ValueError(f"{spec.name}.reduce: out= has shape {out_buffer.shape}, but the "
                             f"result's shape is {out_shape}")
        if out_buffer.device != array.device:
            raise ValueError(f"{spec.name}.reduce: out= is on CUDA device {out_buffer.device}, "
                             f"the array on device {array.device}")
    # NumPy's reduction resolution: (accumulator, input, None); the accumulator is dtype=,
    # else out='s dtype, else found from the input.
    dtype = kwargs.get("dtype")
    first = np.dtype(dtype) if dtype is not None else (
        out_buffer.dtype if out_buffer is not None else None)
    dtypes = (first, array.dtype, None)
    try:
        resolved = tuple(spec.ufunc.resolve_dtypes(dtypes, reduction=True))
    except TypeError as error:
        raise TypeError(f"{spec.name}.reduce: {error}") from None
    loop_index = spec.loops.index(resolved) if resolved in spec.loops else -1
    if loop_index < 0 or len(set(resolved)) != 1:
        raise TypeError(f"{spec.name}.reduce: no device reduction loop for {array.dtype}")
    acc = resolved[0]
    initial = kwargs.get("initial", _NO_VALUE)
    reduced = [array.shape[d] for d in axes]
    if initial is None and axes and 0 in reduced and 0 not in out_shape:
        # initial=None asks for no initial value, as in NumPy: an empty reduction has none.
        raise ValueError(f"{spec.name}.reduce: zero-size array to reduction operation "
                         f"{spec.name} which has no identity")
    if initial is _NO_VALUE or initial is None:
        initial = spec.ufunc.identity
    identity_bytes = np.asarray(initial, dtype=acc).tobytes()
    check_alignment(array, what)
    if out_buffer is not None:
        check_alignment(out_buffer, f"{spec.name}.reduce: out=")
    c = _Call(spec, stream, device=array.device)
    wait_for_producer(array, stream)
    if out_buffer is not None:
        wait_for_producer(out_buffer, stream)
    source = array if array.dtype == acc else _copy(array, acc, c)
    result = _device.empty(out_shape, acc, array.device, stream)
    target = buffer_of(result, "a temporary")
    keep = [d for d in range(array.ndim) if d not in axes]
    keep_shape = tuple(array.shape[d] for d in keep)
    target_keep_strides = c_strides(keep_shape, acc.itemsize)
    _reduce_launch(spec, loop_index, c, source, axes, keep, keep_shape, target.ptr,
                   target_keep_strides, identity_bytes, acc)
    if out_buffer is not None:
        _launch_cast(Buffer(None, target.ptr, out_buffer.shape, c_strides(out_buffer.shape, acc.itemsize),
                            acc, c.device, False, None), out_buffer, c)
        return out
    result.stream = stream
    return wrap_like(obj, result)


def _reduce_axes(spec: _Spec, axis, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    if ndim == 0 and not isinstance(axis, bool) and axis in (0, -1):
        return ()               # NumPy lets axis 0 or -1 through for 0-d arrays
    axes = (axis,) if isinstance(axis, int) and not isinstance(axis, bool) else axis
    if not isinstance(axes, tuple):
        raise TypeError(f"{spec.name}.reduce: axis must be None, an int or a tuple of ints")
    norm = normalise_axes(axes, ndim, f"{spec.name}.reduce: axis {{}} is out of bounds for an "
                          f"array of dimension {ndim}", f"{spec.name}.reduce: duplicate value in 'axis'")
    return tuple(sorted(norm))


def normalise_axes(axes, ndim: int, out_of_bounds: str, repeated: str) -> tuple[int, ...]:
    """`axes` as non-negative axes of an `ndim`-d array; AxisError (`out_of_bounds` with
    the axis for {}) or ValueError (`repeated`) as NumPy raises them."""
    norm = []
    for a in axes:
        if not isinstance(a, int) or not -ndim <= a < ndim:
            raise np.exceptions.AxisError(out_of_bounds.format(a))
        norm.append(a % ndim)
    if len(set(norm)) != len(norm):
        raise ValueError(repeated)
    return tuple(norm)


def _reduce_launch(spec, loop_index, c, source: Buffer, axes, keep, keep_shape, out_ptr,
                   out_keep_strides, identity: bytes, acc: np.dtype) -> None:
    reduce_shape = tuple(source.shape[d] for d in axes)
    n_out = math.prod(keep_shape)
    n_reduce = math.prod(reduce_shape)
    if n_out == 0:
        return
    kshape, (in_keep, out_keep) = collapse(keep_shape, [tuple(source.strides[d] for d in keep),
                                                        out_keep_strides])
    rshape, (in_reduce,) = collapse(reduce_shape, [tuple(source.strides[d] for d in axes)])
    # Enough threads to fill the GPU: split each output's elements into interleaved chunks,
    # whose partial results a second launch reduces.  That reorders the reduction, which only
    # an `associative: true` function allows; any other reduces each output on one thread,
    # in NumPy's order.
    threads = _device.multiprocessor_count(c.device) * 2048
    n_chunks = 1
    if spec.associative and n_out < threads and n_reduce >= 4096:
        n_chunks = int(min(n_reduce // 1024, max(1, threads // n_out)))
    if n_chunks <= 1:
        _device.launch_reduce(spec.table, loop_index, c.device, c.stream, kshape, rshape,
                              source.ptr, in_keep, in_reduce, out_ptr, out_keep, 0, 1, identity)
        return
    partial = _device.empty((n_out, n_chunks), acc, c.device, c.stream)
    step = n_chunks * acc.itemsize
    partial_keep = c_strides(kshape, step) if kshape else ()
    _device.launch_reduce(spec.table, loop_index, c.device, c.stream, kshape, rshape,
                          source.ptr, in_keep, in_reduce, partial.ptr, partial_keep,
                          acc.itemsize, n_chunks, identity)
    _device.launch_reduce(spec.table, loop_index, c.device, c.stream, kshape, (n_chunks,),
                          partial.ptr, partial_keep, (acc.itemsize,), out_ptr, out_keep, 0, 1,
                          identity)
