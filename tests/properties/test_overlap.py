"""Memory overlap: out= views overlapping the inputs (random 1-5-d views of one buffer,
gufuncs included) give what computing from copies gives, and leave the rest of the buffer
alone: on the host (NumPy's machinery) and on the device simulator (the copy-on-overlap
logic of _device_dispatch._kernel_input)."""
import numpy as np
from hypothesis import assume, given, note
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

import ufuncgen.examples as ex

from examples.conftest import (ELEMENTWISE_NAMES, GUFUNC_NAMES, check_elementwise,
                               elementwise_inputs, elementwise_reference, loop_dtypes)
from examples.test_gufuncs import check_gufunc, gufunc_inputs

BUFFER = 400          # elements in the shared buffer


@st.composite
def input_view(draw, shape, n):
    """(offset, strides) in elements of any view of `shape` inside n elements: strides of
    any sign, zero included, the view may overlap itself."""
    strides = [draw(st.integers(-4, 4)) if s > 1 else draw(st.integers(0, 2)) for s in shape]
    lo = sum(min(0, (s - 1) * t) for s, t in zip(shape, strides))
    hi = sum(max(0, (s - 1) * t) for s, t in zip(shape, strides))
    if hi - lo >= n:        # too long: C-contiguous instead
        strides = list(np.cumprod((1,) + tuple(shape[:0:-1]))[::-1])
        lo, hi = 0, sum((s - 1) * t for s, t in zip(shape, strides))
    offset = draw(st.integers(-lo, n - 1 - hi))
    return offset, tuple(int(t) for t in strides)


@st.composite
def output_view(draw, shape, n):
    """(offset, strides) of a view of `shape` that never overlaps itself: axes permuted,
    stepped and flipped."""
    order = draw(st.permutations(range(len(shape))))
    steps = [draw(st.sampled_from([1, 1, 2])) for _ in shape]
    strides, inner = [0] * len(shape), 1
    for a in reversed(order):
        strides[a] = inner * steps[a] * (-1 if draw(st.booleans()) else 1)
        inner *= max(shape[a], 1) * steps[a]
    lo = sum(min(0, (s - 1) * t) for s, t in zip(shape, strides))
    hi = sum(max(0, (s - 1) * t) for s, t in zip(shape, strides))
    if hi - lo >= n:
        return None
    return draw(st.integers(-lo, n - 1 - hi)), tuple(strides)


def _small_shape(draw, ndim, lo=1, hi=5):
    return tuple(draw(st.integers(lo, hi)) for _ in range(ndim))


def _views(buf, specs):
    item = buf.itemsize
    return [as_strided(buf[o:], shape, tuple(t * item for t in strides))
            for o, shape, strides in specs]


def _device_views(dbuf, specs, dtype):
    from ufuncgen import _device
    item = np.dtype(dtype).itemsize
    return [_device.from_pointer(dbuf.ptr + o * item, shape, np.dtype(dtype),
                                 tuple(t * item for t in strides), dbuf.device, dbuf, False, 0)
            for o, shape, strides in specs]


def _written(specs_out, n):
    mask = np.zeros(n, bool)
    for o, shape, strides in specs_out:
        for v in _views(mask, [(o, shape, strides)]):
            v[...] = True
    return mask


def _keeps_its_dtype(fn):
    return all(set(outs) <= {ins[0]} for ins, outs in loop_dtypes(fn))


@st.composite
def overlap_case(draw, gufunc):
    names = GUFUNC_NAMES if gufunc else ELEMENTWISE_NAMES
    # Inputs and outputs are views of one buffer, of one dtype: functions whose loops give
    # their inputs' dtype (not mandelbrot: complex in, int32 out).
    name = draw(st.sampled_from([n for n in names if _keeps_its_dtype(getattr(ex, n))]))
    fn = getattr(ex, name)
    ins, outs = draw(st.sampled_from(loop_dtypes(fn)))
    dtype = ins[0]
    ndim = draw(st.integers(1, 5))
    loop = _small_shape(draw, ndim if not gufunc else ndim - 1, 1, 4 if ndim < 4 else 2)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if gufunc:
        size = draw(st.integers(1, 4))
        in_shapes = [v.shape for v in gufunc_inputs(name, dtype, loop, size, rng)]
        with np.errstate(all="ignore"):
            out_shapes = [np.shape(fn(*[np.ones(s, dtype) for s in in_shapes]))]
    else:
        in_shapes = [tuple(1 if draw(st.integers(0, 3)) == 0 else n for n in loop)
                     for _ in range(fn.nin)]
        out_shapes = [loop] * fn.nout
    specs_in = []
    for s in in_shapes:
        offset, strides = draw(input_view(s, BUFFER))
        specs_in.append((offset, s, strides))
    specs_out = []
    for s in out_shapes:
        v = draw(output_view(s, BUFFER))
        if v is None:
            return None
        specs_out.append((v[0], s, v[1]))
    if len(specs_out) == 2:     # two outputs must not overlap each other
        a, b = _views(np.zeros(BUFFER), specs_out)
        if np.shares_memory(a, b):
            return None
    values = (elementwise_inputs(name, dtype, (BUFFER,), rng)[0] if not gufunc
              else rng.uniform(0 if name == "rgb_to_gray" else -2, 2, BUFFER).astype(dtype))
    # where= (elementwise only): a random mask over the output, in its own buffer.
    where = (rng.random(loop) < 0.6) if not gufunc and draw(st.booleans()) else None
    return name, fn, dtype, specs_in, specs_out, values, where


def _full(copies, shape):
    return [np.broadcast_to(c, shape) for c in copies]


def _check(name, gufunc, got, copies):
    with np.errstate(all="ignore"):
        _check_results(name, gufunc, got, copies)


def _check_results(name, gufunc, got, copies):
    if gufunc:
        check_gufunc(name, got[0], copies)
    else:
        inputs = _full(copies, got[0].shape)
        check_elementwise(name, tuple(got), elementwise_reference(name, *inputs), inputs)


def _run(case, gufunc, on_device):
    from ufuncgen import device
    assume(case is not None)      # an out= that did not fit, or two outputs overlapping
    name, fn, dtype, specs_in, specs_out, values, where = case
    note(f"{name} {dtype} in {specs_in} out {specs_out} where {where}")
    buf = values.copy()
    copies = [v.copy() for v in _views(buf, specs_in)]
    before = [v.copy() for v in _views(buf, specs_out)]
    kwargs = {}
    with np.errstate(all="ignore"):
        if on_device:
            dbuf = device.to_device(buf)
            if where is not None:
                kwargs["where"] = device.to_device(where)
            ins = _device_views(dbuf, specs_in, dtype)
            outs = _device_views(dbuf, specs_out, dtype)
            fn(*ins, out=tuple(outs), **kwargs)
            after = dbuf.copy_to_host()
        else:
            if where is not None:
                kwargs["where"] = where
            ins, outs = _views(buf, specs_in), _views(buf, specs_out)
            fn(*ins, out=tuple(outs), **kwargs)
            after = buf
    got = [v.copy() for v in _views(after, specs_out)]
    if where is not None:
        for g, b in zip(got, before):
            np.testing.assert_array_equal(g[~where], b[~where],
                                          err_msg="where=False elements changed")
        got = [g[where] for g in got]
        copies = [np.broadcast_to(c, where.shape)[where] for c in copies]
    _check(name, gufunc, got, copies)
    untouched = ~_written(specs_out, BUFFER)
    np.testing.assert_array_equal(after[untouched], values[untouched],
                                  err_msg="elements outside out= changed")


@given(overlap_case(gufunc=False))
def test_overlapping_elementwise_calls_on_the_host_act_as_if_on_copies(case):
    _run(case, False, False)


@given(overlap_case(gufunc=False))
def test_overlapping_elementwise_calls_on_the_device_act_as_if_on_copies(case):
    _run(case, False, True)


@given(overlap_case(gufunc=True))
def test_overlapping_gufunc_calls_on_the_host_act_as_if_on_copies(case):
    _run(case, True, False)


@given(overlap_case(gufunc=True))
def test_overlapping_gufunc_calls_on_the_device_act_as_if_on_copies(case):
    _run(case, True, True)
