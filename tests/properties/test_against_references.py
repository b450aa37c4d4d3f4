"""Property tests: every seed function, on random shapes (0-d to 5-d), layouts (steps,
negative strides, transposes, zero-stride broadcasts, unaligned views on the host),
broadcasting between arguments, input dtypes castable to each loop, out= with and without
where=, against the independent references of tests/examples, on the host and through the
device simulator."""
import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import ufuncgen.examples as ex

from examples.conftest import (ELEMENTWISE_NAMES, GUFUNC_NAMES, check_elementwise,
                               elementwise_inputs, elementwise_reference, loop_dtypes)
from examples.test_gufuncs import check_gufunc, gufunc_inputs
from .conftest import (CASTABLE, OUT_DTYPES, broadcast_shape_of, device_twin, laid_out,
                       layouts, shapes)

SPECIALS = {"f": [np.nan, np.inf, -np.inf, -0.0, 0.0]}


def _cast(values, dtype):
    """values (of a loop dtype) as `dtype`, clipped into its range first."""
    dtype = np.dtype(dtype)
    if dtype == values.dtype:
        return values
    if dtype.kind in "iub":
        if values.dtype.kind == "f":
            values = np.nan_to_num(values)
        if dtype.kind == "b":
            return values != 0
        info = np.iinfo(dtype)
        return np.clip(values, info.min, info.max).astype(dtype)
    return values.astype(dtype)


def _sprinkle(draw, values, rng):
    """Puts NaN/Inf/±0 at a few random places of a float array (sometimes)."""
    if values.dtype.kind != "f" or values.size == 0 or not draw(st.booleans()):
        return values
    values = values.copy()
    flat = values.reshape(-1)
    count = draw(st.integers(1, min(8, flat.size)))
    where = rng.integers(0, flat.size, count)
    flat[where] = rng.choice(SPECIALS["f"], count)
    return values


def _operand(draw, values, on_device, keep, broadcast=True):
    """`values` laid out at random: a strided/flipped/transposed/unaligned view, or a zero-
    stride broadcast of a smaller array.  On the device the same layout, aligned."""
    shape = values.shape
    if broadcast and shape and draw(st.integers(0, 4)) == 0:
        # A zero-stride broadcast: a smaller array broadcast up to the full shape.
        small = tuple(1 if draw(st.booleans()) else n for n in shape)
        values = np.broadcast_to(values[tuple(slice(0, n) for n in small)], shape)
        h, base, offset = laid_out(values[tuple(slice(0, n) for n in small)],
                                   draw(layouts(len(shape), aligned_only=on_device)))
        h = np.broadcast_to(h, shape)
    else:
        h, base, offset = laid_out(values, draw(layouts(len(shape), aligned_only=on_device)))
    note(f"operand {h.dtype} {h.shape} strides {h.strides} aligned {h.flags.aligned}")
    if not on_device:
        return h, np.array(values)
    d, owner = device_twin(h, base, offset)
    keep.append(owner)
    return d, np.array(values)


def _host(x):
    return x.copy_to_host() if hasattr(x, "copy_to_host") else np.asarray(x)


@st.composite
def elementwise_calls(draw, on_device):
    name = draw(st.sampled_from(ELEMENTWISE_NAMES))
    fn = getattr(ex, name)
    ins, outs = draw(st.sampled_from(loop_dtypes(fn)))
    loop = ins[0]
    full = draw(shapes())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    values = elementwise_inputs(name, loop, full, rng)
    # dtype= names the result's dtype: only for loops that give their inputs' dtype
    use_dtype = set(outs) == {loop} and draw(st.booleans())
    arg_dtypes = [draw(st.sampled_from(CASTABLE[loop])) if (k or use_dtype) else loop
                  for k in range(fn.nin)]
    args, seen, keep = [], [], []
    for k, v in enumerate(values):
        sub = broadcast_shape_of(draw, full)
        v = v.reshape(-1)[:int(np.prod(sub, dtype=np.int64))].reshape(sub) if v.size else np.zeros(sub, loop)
        v = _sprinkle(draw, _cast(v, arg_dtypes[k]), rng)
        if k and v.ndim == 0 and draw(st.booleans()):
            # A Python scalar: passed by value, weakly typed (NEP 50), the loop's dtype.
            a, plain = v.item(), v.astype(loop)
            note(f"operand Python scalar {a!r}")
        else:
            a, plain = _operand(draw, v, on_device, keep)
        args.append(a)
        seen.append(plain.astype(loop))         # what the loop reads
    result_shape = np.broadcast_shapes(*(s.shape for s in seen))
    kwargs = {"dtype": loop} if use_dtype else {}
    out_mode = draw(st.sampled_from(["none", "out", "out+where"]))
    return name, fn, loop, outs, args, seen, result_shape, kwargs, out_mode, keep


def _run_elementwise(data, on_device):
    from ufuncgen import device
    name, fn, loop, outs, args, seen, shape, kwargs, out_mode, keep = data.draw(
        elementwise_calls(on_device))
    note(f"{name} loop {loop} kwargs {kwargs} out {out_mode} shape {shape}")
    expected = elementwise_reference(name, *np.broadcast_arrays(*seen))
    inputs_b = np.broadcast_arrays(*seen)
    with np.errstate(all="ignore"):
        if out_mode == "none":
            got = fn(*args, **kwargs)
            got = tuple(_host(g) for g in got) if isinstance(got, tuple) else (_host(got),)
            check_elementwise(name, got, expected, inputs_b)
            return
        out_dtypes = [np.dtype(data.draw(st.sampled_from(OUT_DTYPES[o]))) for o in outs]
        sentinels = [np.full(shape, 7, dt) for dt in out_dtypes]
        out_args, out_hosts = [], []
        for s in sentinels:
            o, _ = _operand(data.draw, s, on_device, keep, False) if shape else (None, None)
            if o is None:   # 0-d out: a plain array (or a 0-d device array)
                o = device.to_device(s) if on_device else s.copy()
            out_args.append(o)
        call_kwargs = dict(kwargs, out=tuple(out_args))
        mask = None
        if out_mode == "out+where":
            mshape = broadcast_shape_of(data.draw, shape)
            rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
            mask_values = rng.random(mshape) < 0.5
            m, mask_values = (_operand(data.draw, mask_values, on_device, keep) if mshape
                              else (mask_values, mask_values))
            if on_device and not mshape:
                m = device.to_device(mask_values)
            if data.draw(st.integers(0, 5)) == 0:        # where= a Python bool
                mask_values = m = data.draw(st.booleans())
            call_kwargs["where"] = m
            mask = np.broadcast_to(mask_values, shape)
        result = fn(*args, **call_kwargs)
        result = result if isinstance(result, tuple) else (result,)
        assert all(r is o for r, o in zip(result, out_args))
    got = [_host(o) for o in out_args]
    if mask is None:
        mask = np.ones(shape, bool)
    for g, s in zip(got, sentinels):
        np.testing.assert_array_equal(g[~mask], s[~mask], err_msg="where=False elements changed")
    # Compare the written elements in the loop's dtype (a wider out= holds them exactly; a
    # narrower one is compared after the same rounding NumPy applies).
    want, have = [], []
    for g, e in zip(got, expected):
        h, w = g[mask], e[mask]
        if h.dtype != w.dtype and h.dtype.itemsize > w.dtype.itemsize:
            h = h.astype(w.dtype)           # a wider out= holds the loop's result exactly
        elif h.dtype != w.dtype:
            with np.errstate(all="ignore"):
                w = w.astype(h.dtype)       # NumPy's own cast of the loop's result
        want.append(w)
        have.append(h)
    with np.errstate(all="ignore"):
        check_elementwise(name, tuple(have), tuple(want), [b[mask] for b in inputs_b])


@given(st.data())
def test_elementwise_on_the_host_matches_the_reference(data):
    _run_elementwise(data, on_device=False)


@given(st.data())
def test_elementwise_on_the_device_simulator_matches_the_reference(data):
    _run_elementwise(data, on_device=True)


# ------------------------------------------------------------------------------- gufuncs

CORE_RANGE = {"l2_norm": 60, "inner1d": 60, "matmul": 9, "rgb_to_gray": 3, "sq_norm3": 3,
              "centroid_distances": 12, "pairwise_distances": 10, "condensed_distances": 10}


def _run_gufunc(data, on_device):
    from ufuncgen import device
    name = data.draw(st.sampled_from(GUFUNC_NAMES))
    fn = getattr(ex, name)
    ins, outs = data.draw(st.sampled_from(loop_dtypes(fn)))
    loop = ins[0]
    size = data.draw(st.integers(0, CORE_RANGE[name]))
    loop_shape = data.draw(shapes(max_dims=4, max_elements=200))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    values = gufunc_inputs(name, loop, loop_shape, size, rng)
    use_dtype = data.draw(st.booleans())
    keep, args, seen = [], [], []
    for k, v in enumerate(values):
        ncore = v.ndim - len(loop_shape)
        sub = broadcast_shape_of(data.draw, loop_shape) if 0 not in loop_shape else loop_shape
        core = v.shape[len(loop_shape):]
        v = v[(slice(None),) * 0 + tuple(slice(0, 1) if n == 1 else slice(None) for n in
                                          (1,) * (len(loop_shape) - len(sub)) + sub)]
        v = v.reshape(sub + core)
        dt = data.draw(st.sampled_from(CASTABLE[loop])) if (k or use_dtype) else loop
        # (pairwise_distances sets its diagonal to 0 without computing it: no NaN/Inf there)
        v = (_sprinkle(data.draw, v, rng) if dt == loop and name != "pairwise_distances"
             else _cast(v, dt))
        a, plain = _operand(data.draw, v, on_device, keep)
        args.append(a)
        seen.append(plain.astype(loop))
        note(f"arg {k}: {dt} {v.shape} (core {ncore})")
    kwargs = {"dtype": loop} if use_dtype else {}
    with np.errstate(all="ignore"):
        want = fn(*[s for s in seen])      # only for the output shape
    out_shape = want.shape
    note(f"{name} loop {loop} size {size} loop shape {loop_shape} out {out_shape} {kwargs}")
    with np.errstate(all="ignore"):
        if data.draw(st.booleans()):
            out_dtype = np.dtype(data.draw(st.sampled_from(OUT_DTYPES[outs[0]])))
            s = np.full(out_shape, 7, out_dtype)
            if out_shape:
                o, _ = _operand(data.draw, s, on_device, keep, False)
            else:
                o = device.to_device(s) if on_device else s.copy()
            r = fn(*args, out=o, **kwargs)
            assert r is o
            got = _host(o).astype(loop) if out_dtype.itemsize > loop.itemsize else _host(o)
            if out_dtype.itemsize < loop.itemsize:
                # Narrower out=: compare in its dtype against the reference in its dtype.
                with np.errstate(all="ignore"):
                    check_gufunc(name, got, [x.astype(out_dtype) for x in seen])
                return
        else:
            got = _host(fn(*args, **kwargs))
        check_gufunc(name, got, seen)


@given(st.data())
def test_gufuncs_on_the_host_match_the_reference(data):
    _run_gufunc(data, on_device=False)


@given(st.data())
def test_gufuncs_on_the_device_simulator_match_the_reference(data):
    _run_gufunc(data, on_device=True)


@pytest.mark.parametrize("loop, out_dtype", [(np.int64, np.float64), (np.float64, np.float32),
                                             (np.float32, np.float64)])
def test_device_out_of_another_dtype_keeps_its_where_false_elements(loop, out_dtype):
    """The defect the properties found: the loop wrote a temporary, and casting all of it into
    out= overwrote the where=False elements with uninitialised memory."""
    from ufuncgen import device
    x = np.arange(1, 41).astype(loop)
    mask = np.arange(40) % 3 == 0
    out = device.to_device(np.full(40, -7, out_dtype))
    ex.add(device.to_device(x), device.to_device(x), out=out, where=device.to_device(mask))
    np.testing.assert_array_equal(out.copy_to_host(),
                                  np.where(mask, (x + x).astype(out_dtype), -7))
