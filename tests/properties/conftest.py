"""Hypothesis profiles for the property tests, and helpers to lay one array out in memory
in many ways (on the host and, byte for byte the same, on the device simulator).

HYPOTHESIS_PROFILE=ci (the default) keeps the whole folder well under a minute on two cores;
HYPOTHESIS_PROFILE=thorough tries many more examples per property.
"""
import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

_COMMON = dict(deadline=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("thorough", max_examples=1000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Dtypes that cast safely to each loop dtype (what NumPy picks that loop for).
CASTABLE = {
    np.dtype(np.float64): [np.float64, np.float32, np.int32, np.int16, np.uint8, np.bool_],
    np.dtype(np.float32): [np.float32, np.int16, np.int8, np.uint8],
    np.dtype(np.float16): [np.float16, np.int8, np.uint8, np.bool_],
    np.dtype(np.int64): [np.int64, np.int32, np.int16, np.uint32, np.uint8],
    np.dtype(np.complex128): [np.complex128, np.complex64, np.float64, np.float32, np.int16],
    np.dtype(np.complex64): [np.complex64, np.float32, np.int16, np.uint8],
}
# Output dtypes a loop's result may be written to with out= (same_kind casting).
OUT_DTYPES = {
    np.dtype(np.float64): [np.float64, np.float32],
    np.dtype(np.float32): [np.float32, np.float64],
    np.dtype(np.float16): [np.float16, np.float32, np.float64],
    np.dtype(np.int64): [np.int64, np.float64],
    np.dtype(np.int32): [np.int32, np.int64, np.float64, np.complex128],
}

MAX_ELEMENTS = 3000


@st.composite
def shapes(draw, min_dims=0, max_dims=5, max_elements=MAX_ELEMENTS, max_side=None):
    """A shape of 0..5 dimensions whose size stays under max_elements (0 allowed)."""
    ndim = draw(st.integers(min_dims, max_dims))
    shape, budget = [], max_elements
    for _ in range(ndim):
        top = max(1, min(budget, max_side or budget, 64 if ndim > 1 else budget))
        n = draw(st.one_of(st.integers(0, 3), st.integers(0, top)))
        shape.append(n)
        budget = max(1, budget // max(n, 1))
    return tuple(shape)


def broadcast_shape_of(draw, shape, allow_drop=True):
    """A shape that broadcasts to `shape`: leading axes dropped, some axes set to 1."""
    drop = draw(st.integers(0, len(shape))) if allow_drop else 0
    return tuple(1 if draw(st.booleans()) and draw(st.booleans()) else n
                 for n in shape[drop:])


@st.composite
def layouts(draw, ndim, aligned_only=False):
    """How to lay an array out: per-axis steps and flips, an axis order, an unaligned start."""
    return dict(
        steps=tuple(draw(st.sampled_from([1, 1, 2, 3])) for _ in range(ndim)),
        flips=tuple(draw(st.booleans()) for _ in range(ndim)),
        order=tuple(draw(st.permutations(range(ndim)))) if ndim else (),
        unaligned=False if aligned_only else draw(st.booleans()),
    )


def laid_out(values, layout):
    """(view, base, byte offset): `values` copied into a view with the given layout, the
    contiguous uint8 buffer the view lives in, and the view's start in it."""
    values = np.asarray(values)
    shape, dtype = values.shape, values.dtype
    order = layout["order"]
    steps, flips = layout["steps"], layout["flips"]
    big = tuple(max(shape[a] * steps[a], 1) for a in order)   # memory order
    nbytes = int(np.prod(big)) * dtype.itemsize
    skew = 1 if layout["unaligned"] and values.size else 0
    base = np.zeros(nbytes + dtype.itemsize + skew, dtype=np.uint8)
    start = dtype.itemsize if not skew else skew   # never at byte 0: offsets are exercised
    mem = base[start:start + nbytes].view(dtype).reshape(big)
    inverse = np.argsort(order) if order else ()
    full = mem.transpose(inverse) if order else mem
    index = tuple(slice(None, None, -steps[a]) if flips[a] else slice(None, shape[a] * steps[a], steps[a])
                  for a in range(len(shape)))
    view = full[index] if shape else full[...]
    view = view[tuple(slice(0, n) for n in shape)] if shape else view
    view[...] = values
    offset = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return view, base, offset


def broadcast_view(values, shape):
    """A read-only zero-stride view of `values` broadcast to `shape`."""
    return np.broadcast_to(values, shape)


def device_twin(host_view, base, offset):
    """The same bytes and layout on the device: base uploaded, the view made over it."""
    from ufuncgen import device, _device
    d = device.to_device(base)
    return _device.from_pointer(d.ptr + offset, tuple(host_view.shape), host_view.dtype,
                                tuple(host_view.strides), d.device, d, False, 0), d
