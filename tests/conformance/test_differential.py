"""Differential property test: every seed function, called with random operands and keyword
values, gives the same outcome on NumPy arrays (the host path, NumPy's ufunc machinery) and on
device arrays (the simulator under UFUNCGEN_DEVICE=sim, or a GPU).

Each example builds one call: the function (elementwise, multi-output, gufunc, or `.reduce` of
a binary function, with an identity or without), operand shapes (broadcastable or not), memory layouts
(contiguous, transposed, strided, flipped, zero-stride), dtypes (the function's own and others
that cast or fail to), Python and NumPy scalars (2**70, np.int64, np.bool_), and keyword values
of every odd type NumPy meets (np.int64 axes, axis=True or 1.0, keepdims=1 or None,
where=None or 'x', byte-swapped and bogus dtype=, tuples and lists for out=/axes=/axis=).
The very same call runs once on host arrays and once on their device twins (the same bytes,
the same strides), and the outcomes must match:

* both give results: same shapes, dtypes and values (bitwise for integers and bools; floats
  within the conformance suite's tolerance, NaN where NaN), and out= buffers hold the same
  bytes-worth of values afterwards;
* both raise: the same exception type.  NumPy's private subclasses of TypeError
  (`numpy._core._exceptions._UFuncInputCastingError` ...) count as TypeError; public classes
  (`numpy.exceptions.AxisError`) must match exactly;
* a refused device call leaves every device out= buffer as it was.

Documented differences, where the device must raise exactly this and NumPy may compute:

* an operand of a dtype no device array holds (byte-swapped '>f8', complex): TypeError;
* where= given as a host sequence (a list or tuple is a host array; device calls never copy
  host data behind the caller's back): TypeError.
* accumulate's out= of another shape than the array's: ValueError (NumPy writes some of them
  in part, e.g. an axis of length 1 into a longer one).

One documented difference is not drawn at all, because NumPy's value there depends on how its
iterator cuts the loop into buffers: a where= mask with an out= whose elements share memory (a
zero stride) and whose dtype is not the loop's (_masked_cast_into_shared_out).

`.at` updates its array in place: the property compares the array's contents after the call
(unchanged on the device when the call is refused), on host twins and device twins.

This test uses only the public API (generated functions, ufuncgen.device, DeviceArray,
__cuda_array_interface__), so any implementation of the device call must pass it.
Examples per run: DIFFERENTIAL_EXAMPLES per property, six properties (elementwise,
gufunc, reduce, outer, accumulate, at); the totals are printed in pytest's summary ("differential: ...").
"""
from __future__ import annotations

import collections
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

import ufuncgen.examples as ex
from ufuncgen import device

pytestmark = pytest.mark.skipif(not device.is_available(),
                                reason=str(device.unavailable_reason()))

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
DIFFERENTIAL_EXAMPLES = {"ci": 300, "thorough": 3000}.get(PROFILE, 300)
SETTINGS = settings(max_examples=DIFFERENTIAL_EXAMPLES, derandomize=PROFILE != "thorough",
                    deadline=None, print_blob=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])

FUNCTIONS = {n: getattr(ex, n) for n in dir(ex) if hasattr(getattr(ex, n), "ufunc")}
ELEMENTWISE = sorted(n for n, f in FUNCTIONS.items() if not f.signature)
GUFUNCS = sorted(n for n, f in FUNCTIONS.items() if f.signature)
REDUCIBLE = sorted(n for n in ELEMENTWISE if FUNCTIONS[n].nin == 2 and FUNCTIONS[n].nout == 1)

# Dtypes device arrays hold; anything else is made on the device as a CAI view (TypeError).
DEVICE_DTYPES = frozenset(np.dtype(n) for n in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128"))
EXTRA_DTYPES = [np.dtype(n) for n in ("int32", "int8", "uint8", "bool", "float32", "float64",
                                      "int64", ">f8", "float16")]
OUT_DTYPES = [np.dtype(n) for n in ("float64", "float32", "int64", "int32", "bool", ">f8",
                                    "float16")]
ODD_SCALARS = [2.5, -1, 0, True, 2**70, -2**70, 2**63, np.int64(3), np.bool_(True),
               np.float32(1.5), 1e300]
DTYPE_VALUES = [None, "f4", "float64", np.int64, "i8", "i4", ">f8", "bogus", 3, bool]
CASTING_VALUES = ["no", "equiv", "safe", "same_kind", "unsafe", "bogus", None, 1]
WHERE_SCALARS = [True, False, None, np.bool_(True), np.bool_(False), 0, 1.5, "x", "",
                 np.int64(0), 2**70]
KEEPDIMS_VALUES = [True, False, 1, 0, np.True_, None, "yes", 1.0, (1,), np.int64(1)]
AXIS_ODD = [True, np.bool_(True), 1.0, None, (0,), [0], 2**70, 2**40, np.int64(0),
            np.int64(-1), "0"]

STATS = collections.Counter()


# --------------------------------------------------------------------------- memory layouts

class Foreign:
    """A CUDA array known only by __cuda_array_interface__ (how a byte-swapped device array
    reaches a call: no DeviceArray can hold one)."""

    def __init__(self, ptr, shape, strides, dtype, owner):
        self._cai = {"shape": shape, "strides": strides, "typestr": dtype.str,
                     "data": (ptr, False), "version": 3}
        self._owner = owner

    @property
    def __cuda_array_interface__(self):
        return dict(self._cai)


class Twin:
    """One operand laid out identically in host memory and in device memory."""

    def __init__(self, values, dtype, layout):
        dtype = np.dtype(dtype)
        shape = values.shape
        ndim = len(shape)
        order, steps, flips, zeros = layout
        zeros = tuple(z and shape[a] > 1 for a, z in enumerate(zeros))
        mem_shape = [1 if zeros[a] else max(shape[a], 1) * steps[a] for a in order]
        mem_strides, step = [0] * ndim, dtype.itemsize
        for i in reversed(range(ndim)):
            mem_strides[i] = step
            step *= mem_shape[i]
        strides, offset = [0] * ndim, dtype.itemsize      # never at byte 0
        for i, a in enumerate(order):
            s = 0 if zeros[a] else mem_strides[i] * steps[a]
            if flips[a] and s and shape[a]:
                offset += (shape[a] - 1) * s
                s = -s
            strides[a] = s
        nbytes = step + 2 * dtype.itemsize
        self.dtype, self.shape, self.strides, self.offset = dtype, shape, tuple(strides), offset
        self.host_base = np.zeros(nbytes, np.uint8)
        self.host = self._view(self.host_base)
        if values.size:
            # zero-stride axes repeat the last written values; host and device share the bytes
            self.host[...] = values.astype(dtype) if values.dtype != dtype else values
        self.device_base = device.to_device(self.host_base)
        ptr = self.device_base.ptr + offset
        if dtype in DEVICE_DTYPES:
            from ufuncgen import _device
            self.device = _device.from_pointer(ptr, shape, dtype, self.strides,
                                               self.device_base.device, self.device_base,
                                               False, 0)
        else:
            self.device = Foreign(ptr, shape, self.strides, dtype, self.device_base)

    def __repr__(self):
        values = np.array2string(self.host, threshold=12, separator=",").replace("\n", "")
        return (f"Twin({self.dtype.str}, shape={self.shape}, strides={self.strides}, "
                f"values={values})")

    def _view(self, base):
        return np.ndarray(self.shape, self.dtype, buffer=base, offset=self.offset,
                          strides=self.strides)

    def device_contents(self):
        """What the device view holds now, as a host array of the same layout."""
        return self._view(self.device_base.copy_to_host())

    @property
    def on_device(self) -> bool:
        return self.dtype in DEVICE_DTYPES


@st.composite
def layouts(draw, ndim, allow_zero=True):
    order = tuple(draw(st.permutations(range(ndim)))) if draw(st.booleans()) else tuple(range(ndim))
    steps = tuple(draw(st.sampled_from([1, 1, 1, 2])) for _ in range(ndim))
    flips = tuple(draw(st.booleans()) and draw(st.booleans()) for _ in range(ndim))
    zeros = tuple(allow_zero and draw(st.integers(0, 5)) == 0 for _ in range(ndim))
    return order, steps, flips, zeros


@st.composite
def values_of(draw, shape, dtype, special=True):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype.kind in "iub":
        low = 0 if dtype.kind in "ub" else -60
        high = 2 if dtype.kind == "b" else 60
        return rng.integers(low, high, size=shape).astype(dtype.newbyteorder("="))
    v = rng.normal(0, 3, size=n)
    if special and n and draw(st.integers(0, 3)) == 0:
        idx = rng.integers(0, n, size=min(n, 3))
        v[idx] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], size=len(idx))
    return v.reshape(shape).astype(dtype.newbyteorder("="))


@st.composite
def twins(draw, shape, dtype, allow_zero=True, special=True):
    values = draw(values_of(shape, dtype, special))
    return Twin(values, dtype, draw(layouts(len(shape), allow_zero)))


@st.composite
def small_shapes(draw, min_dims=0, max_dims=3):
    return tuple(draw(st.lists(st.sampled_from([1, 1, 2, 3, 4, 0]), min_size=min_dims,
                               max_size=max_dims)))


def broadcast_to_shape(draw, shape):
    drop = draw(st.integers(0, len(shape)))
    return tuple(1 if draw(st.integers(0, 3)) == 0 else n for n in shape[drop:])


# --------------------------------------------------------------------------- one call, twice

def _outcome(fn, args, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", fn(*args, **kwargs)
        except Exception as error:      # compared by the caller
            return "error", error


def _family(error: BaseException) -> type:
    """The exception type compared: NumPy's private TypeError subclasses count as TypeError."""
    for cls in type(error).__mro__:
        module = cls.__module__
        if module == "builtins" or not module.split(".")[-1].startswith("_"):
            return cls
    return type(error)


def _as_host(x):
    if isinstance(x, tuple):
        return tuple(_as_host(e) for e in x)
    if isinstance(x, device.DeviceArray):
        return x.copy_to_host()
    return np.asarray(x)


def _assert_close(got, want, what, mask=None, narrow_loop=None):
    """Equal, or for floats close: the host's vector math and the device's libm may differ by
    an ULP in transcendental bodies (README: stated ULP bounds).  narrow_loop: the itemsize of
    the narrowest float loop the call may have run (its results cast wider), whose tolerance
    applies."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if mask is not None:
        mask = np.broadcast_to(mask, want.shape)
        got, want = got[mask], want[mask]
    if want.dtype.kind == "f":
        # a few ULP of the narrowest float involved: float16's eps is 2**-10, float32's 2**-23
        itemsize = min(want.dtype.itemsize, narrow_loop or 8)
        rtol = {2: 4e-3, 4: 1e-5}.get(itemsize, 1e-12)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def _narrowest_float_loop(inputs):
    """The itemsize of the narrowest float loop NumPy may pick (None: float64): float16 for an
    input float16 holds exactly (float16, int8, uint8, bool), float32 for one float32 does."""
    def narrowest(dtype):
        if dtype.kind == "f":
            return dtype.itemsize
        if dtype.kind == "b" or (dtype.kind in "iu" and dtype.itemsize == 1):
            return 2
        return 4 if dtype.kind in "iu" and dtype.itemsize == 2 else None
    sizes = [narrowest(i.host.dtype) for i in inputs if isinstance(i, Twin)]
    sizes = [s for s in sizes if s is not None and s <= 4]
    return min(sizes) if sizes else None


def compare(fn, inputs, kwargs, outs=(), where=True, documented=None):
    """Runs fn on host twins and on device twins; asserts the outcomes match.

    `inputs`: Twin or scalar per positional argument; `kwargs`: keyword values, in which the
    placeholders OUT (out= built from `outs`) and WHERE (a Twin mask) are replaced per side;
    `documented`: the exception type the device must raise (a documented difference)."""
    def side(name):
        pick = (lambda t: t.host) if name == "host" else (lambda t: t.device)
        args = [pick(i) if isinstance(i, Twin) else i for i in inputs]
        kw = {}
        for k, v in kwargs.items():
            if v is OUT:
                v = outs_value(pick)
            elif isinstance(v, Twin):
                v = pick(v)
            kw[k] = v
        return args, kw

    def outs_value(pick):
        form, entries = outs
        picked = [pick(o) if isinstance(o, Twin) else o for o in entries]
        return picked[0] if form == "bare" else (tuple(picked) if form == "tuple" else picked)

    out_twins = [o for o in (outs[1] if outs else ()) if isinstance(o, Twin)]
    note(f"call: {getattr(fn, '__qualname__', fn)}(*{inputs!r}, **{kwargs!r}) out={outs!r}")
    before = [o.device_contents().copy() for o in out_twins if o.on_device]
    host_status, host = _outcome(fn, *side("host"))
    dev_status, dev = _outcome(fn, *side("device"))
    STATS[f"host {host_status}, device {dev_status}"] += 1
    if documented is not None:
        # the device must refuse: with the documented type, or with NumPy's own refusal
        assert dev_status == "error" and _family(dev) in (
            documented, _family(host) if host_status == "error" else documented), (
            f"expected the documented device {documented.__name__}, got {dev!r} (NumPy: {host!r})")
        host_status, host = "error", dev            # for the out= check below
    elif host_status == "error":
        assert dev_status == "error", f"NumPy raised {host!r}, the device gave a result"
        assert _family(dev) is _family(host), f"device raised {dev!r}, NumPy {host!r}"
    elif dev_status == "error":
        raise AssertionError(f"NumPy gave a result, the device raised {dev!r}") from dev
    if dev_status == "error":
        after = [o.device_contents() for o in out_twins if o.on_device]
        for k, (b, a) in enumerate(zip(before, after)):
            np.testing.assert_array_equal(a, b, err_msg=f"refused call wrote out[{k}]")
        return
    mask = None
    if isinstance(where, Twin):
        mask = where.host
    elif where is not True:
        mask = np.asarray(where, dtype=bool)        # NumPy's reading of a host where=
    narrow = _narrowest_float_loop(inputs)
    host_r, dev_r = _as_host(host), _as_host(dev)
    host_t = host_r if isinstance(host_r, tuple) else (host_r,)
    dev_t = dev_r if isinstance(dev_r, tuple) else (dev_r,)
    assert len(host_t) == len(dev_t)
    entries = list(outs[1]) if outs else []
    for k, (g, w) in enumerate(zip(dev_t, host_t)):
        # a new result under a mask has unselected elements uninitialised: compare selected
        given = k < len(entries) and isinstance(entries[k], Twin)
        _assert_close(g, w, f"result[{k}]", None if given else mask, narrow)
    for k, o in enumerate(out_twins):
        _assert_close(o.device_contents(), o.host, f"out[{k}] contents", narrow_loop=narrow)


OUT = object()      # placeholder for the out= value in compare()'s kwargs


def _out_twins(draw, result_shapes, base_dtypes, nout):
    """out= as drawn: absent, None, or arrays (bare, tuple or list) of the result's shape
    (sometimes another), dtype (sometimes another) and layout (zero strides included)."""
    if draw(st.integers(0, 2)) == 0:
        return None
    entries = []
    for j in range(nout):
        if nout > 1 and draw(st.integers(0, 4)) == 0:
            entries.append(None)
            continue
        shape = result_shapes[j] if result_shapes and draw(st.integers(0, 6)) else draw(small_shapes())
        dtype = base_dtypes[j] if draw(st.booleans()) else draw(st.sampled_from(OUT_DTYPES))
        entries.append(draw(twins(shape, dtype, special=False)))
    form = draw(st.sampled_from(["bare", "tuple", "tuple", "list"] if nout == 1 else
                                ["tuple", "tuple", "list"]))
    if form == "bare" and all(e is None for e in entries):
        form = "tuple"
    return form, entries


def _host_results(fn, inputs, kwargs):
    """NumPy's results for this call without out=/where= (None: it fails), as a tuple."""
    status, r = _outcome(fn, [i.host if isinstance(i, Twin) else i for i in inputs],
                         {k: v for k, v in kwargs.items() if k not in ("out", "where")})
    if status != "ok":
        return None
    return r if isinstance(r, tuple) else (r,)


def _host_shapes(fn, inputs, kwargs):
    """The shapes of NumPy's results for this call without out=/where= (None: it fails)."""
    r = _host_results(fn, inputs, kwargs)
    return None if r is None else [np.shape(x) for x in r]


def _shares_memory_within(twin):
    """Whether elements of the Twin share memory: a zero stride over more than one element."""
    return any(s == 0 and n > 1 for s, n in zip(twin.strides, twin.shape))


def _masked_cast_into_shared_out(fn, inputs, kwargs, where, out):
    """The README's one documented difference for an out= whose elements share memory: with a
    where= mask and an out= of another dtype than the loop's, NumPy writes through its buffers
    and keeps a value that depends on how it cuts the loop into buffers (only where the mask
    of a buffer's first element is true); the device keeps the last element whose mask is
    true.  Such calls are not drawn."""
    if not isinstance(where, Twin) or out is None:
        return False
    results = _host_results(fn, inputs, kwargs)
    if results is None:
        return False
    return any(isinstance(o, Twin) and _shares_memory_within(o) and o.dtype != np.dtype(r.dtype)
               for o, r in zip(out[1], results))


def _documented(inputs, extra=()):
    """TypeError when an operand's dtype cannot live on the device (a documented difference)."""
    twins_ = [i for i in list(inputs) + list(extra) if isinstance(i, Twin)]
    return TypeError if any(not t.on_device for t in twins_) else None


# --------------------------------------------------------------------------- properties

def _draw_function(draw, names):
    """A seed function by name, and the dtypes of its loops' first operand."""
    name = draw(st.sampled_from(names), label="function")
    fn = FUNCTIONS[name]
    return name, fn, [np.dtype(t[0]) for t in fn.types]


@SETTINGS
@given(st.data())
def test_elementwise_calls_agree_with_numpy(data):
    draw = data.draw
    name, fn, loop_dtypes = _draw_function(draw, ELEMENTWISE)
    full = draw(small_shapes(max_dims=3), label="shape")
    broadcastable = draw(st.integers(0, 7)) > 0
    inputs = []
    for k in range(fn.nin):
        if k and draw(st.integers(0, 4)) == 0:
            inputs.append(draw(st.sampled_from(ODD_SCALARS)))
            continue
        shape = broadcast_to_shape(draw, full) if broadcastable else draw(small_shapes())
        dtype = draw(st.sampled_from(loop_dtypes)) if draw(st.booleans()) else draw(
            st.sampled_from(EXTRA_DTYPES))
        inputs.append(draw(twins(shape, dtype)))
    if not any(isinstance(i, Twin) for i in inputs) and draw(st.booleans()):
        inputs[0] = draw(twins(full, loop_dtypes[0]))
    kwargs = {}
    if draw(st.integers(0, 3)) == 0:
        kwargs["dtype"] = draw(st.sampled_from(DTYPE_VALUES))
    if draw(st.integers(0, 3)) == 0:
        kwargs["casting"] = draw(st.sampled_from(CASTING_VALUES))
    where = True
    if draw(st.integers(0, 2)) == 0:
        kind = draw(st.integers(0, 4))
        if kind == 0:
            where = draw(twins(broadcast_to_shape(draw, full), np.bool_))
        elif kind == 1:
            where = draw(st.sampled_from([[True], (True, False), [[False]]]))
        else:
            where = draw(st.sampled_from(WHERE_SCALARS))
        kwargs["where"] = where
    shapes = _host_shapes(fn, inputs, kwargs)
    out = _out_twins(draw, shapes, [draw(st.sampled_from(loop_dtypes))] * fn.nout, fn.nout)
    assume(not _masked_cast_into_shared_out(fn, inputs, kwargs, where, out))
    if out is not None:
        kwargs["out"] = OUT
    if out is None and not any(isinstance(i, Twin) for i in inputs):
        # no device operand at all: nothing runs on the device; give it one
        out = ("bare" if fn.nout == 1 else "tuple",
               [draw(twins(tuple(s), loop_dtypes[0], special=False)) for s in (shapes or [full] * fn.nout)])
        kwargs["out"] = OUT
    documented = _documented(inputs, [] if out is None else out[1])
    if documented is None and isinstance(where, (list, tuple)):
        documented = TypeError
    if documented is None and isinstance(where, Twin) and not where.on_device:
        documented = TypeError
    STATS[f"elementwise {name}"] += 1
    compare(fn, inputs, kwargs, out or (), where, documented)


def _gufunc_core_dims(fn):
    ins, outs = fn.signature.replace(" ", "").split("->")
    import re
    groups = re.findall(r"\(([^)]*)\)", ins + "," + outs)
    return [tuple(d for d in g.split(",") if d) for g in groups]


@SETTINGS
@given(st.data())
def test_gufunc_calls_agree_with_numpy(data):
    draw = data.draw
    name, fn, loop_dtypes = _draw_function(draw, GUFUNCS)
    core = _gufunc_core_dims(fn)
    sizes = {d: (int(d) if d.isdigit() else draw(st.integers(0, 4))) for g in core for d in g}
    loop = draw(small_shapes(max_dims=2), label="loop shape")
    inputs = []
    for k in range(fn.nin):
        if draw(st.integers(0, 9)) == 0:
            inputs.append(draw(st.sampled_from(ODD_SCALARS)))
            continue
        shape = broadcast_to_shape(draw, loop) + tuple(sizes[d] for d in core[k])
        if draw(st.integers(0, 9)) == 0 and shape:
            shape = shape[:-1] + (draw(st.integers(0, 5)),)       # a core size mismatch
        dtype = draw(st.sampled_from(loop_dtypes)) if draw(st.booleans()) else draw(
            st.sampled_from(EXTRA_DTYPES))
        inputs.append(draw(twins(shape, dtype)))
    if not any(isinstance(i, Twin) for i in inputs):
        inputs[0] = draw(twins(loop + tuple(sizes[d] for d in core[0]), loop_dtypes[0]))
    kwargs = {}
    ndim = max(i.host.ndim for i in inputs if isinstance(i, Twin))
    choice = draw(st.integers(0, 5))
    if choice == 0:
        kwargs["axis"] = draw(st.one_of(st.integers(-ndim - 1, ndim), st.sampled_from(AXIS_ODD)))
    elif choice == 1:
        nargs = fn.nin + fn.nout
        n = nargs if draw(st.booleans()) else fn.nin
        entries = []
        for k in range(n):
            nc = len(core[k])
            entry = tuple(draw(st.integers(-ndim - 1, ndim)) for _ in range(nc))
            odd = draw(st.integers(0, 6))
            if odd == 0 and nc == 1:
                entry = entry[0]                                   # an int entry
            elif odd == 1 and nc == 1:
                entry = np.int64(entry[0])
            elif odd == 2:
                entry = tuple(np.int64(a) for a in entry)
            elif odd == 3:
                entry = draw(st.sampled_from([[0], True, 1.0, (True,), (1.0,), None]))
            entries.append(entry)
        form = draw(st.sampled_from(["list", "list", "list", "tuple", "none"]))
        kwargs["axes"] = entries if form == "list" else (tuple(entries) if form == "tuple" else None)
    if draw(st.integers(0, 3)) == 0:
        kwargs["keepdims"] = draw(st.sampled_from(KEEPDIMS_VALUES))
    if draw(st.integers(0, 5)) == 0:
        kwargs["dtype"] = draw(st.sampled_from(DTYPE_VALUES))
    if draw(st.integers(0, 5)) == 0:
        kwargs["casting"] = draw(st.sampled_from(CASTING_VALUES))
    shapes = _host_shapes(fn, inputs, kwargs)
    out = _out_twins(draw, shapes, [draw(st.sampled_from(loop_dtypes))] * fn.nout, fn.nout)
    if out is not None:
        kwargs["out"] = OUT
    STATS[f"gufunc {name}"] += 1
    compare(fn, inputs, kwargs, out or (), True,
            _documented(inputs, [] if out is None else out[1]))


@SETTINGS
@given(st.data())
def test_reduce_calls_agree_with_numpy(data):
    draw = data.draw
    name, fn, loop_dtypes = _draw_function(draw, REDUCIBLE)
    shape = draw(small_shapes(max_dims=3), label="shape")
    dtype = draw(st.sampled_from(loop_dtypes)) if draw(st.booleans()) else draw(
        st.sampled_from(EXTRA_DTYPES))
    array = draw(twins(shape, dtype))
    kwargs = {}
    if draw(st.booleans()):
        ndim = len(shape)
        kwargs["axis"] = draw(st.one_of(
            st.integers(-ndim - 1, ndim),
            st.lists(st.integers(-ndim - 1, ndim), max_size=3).map(tuple),
            st.lists(st.integers(-ndim, max(ndim - 1, 0)), max_size=2).map(
                lambda a: tuple(np.int64(x) for x in a)),
            st.sampled_from(AXIS_ODD + [(True,), (1.0,), ()])))
    if draw(st.integers(0, 2)) == 0:
        kwargs["keepdims"] = draw(st.sampled_from(KEEPDIMS_VALUES))
    if draw(st.integers(0, 3)) == 0:
        kwargs["dtype"] = draw(st.sampled_from(DTYPE_VALUES))
    if draw(st.integers(0, 3)) == 0:
        kwargs["initial"] = draw(st.sampled_from([None, 0, 5.0, 2**70, -3, "a"]))
    where = True
    if draw(st.integers(0, 3)) == 0:
        where = kwargs["where"] = draw(st.sampled_from(WHERE_SCALARS))
    shapes = _host_shapes(fn.reduce, [array], kwargs)
    out = None
    if draw(st.integers(0, 2)) == 0:
        out_shape = shapes[0] if shapes and draw(st.integers(0, 5)) else draw(small_shapes())
        out_dtype = draw(st.sampled_from(OUT_DTYPES))
        out = (draw(st.sampled_from(["bare", "tuple", "list"])),
               [draw(twins(out_shape, out_dtype, allow_zero=False, special=False))])
        kwargs["out"] = OUT
    STATS[f"reduce {name}"] += 1
    # where= scalars on a reduction: the mask is the same everywhere
    compare(fn.reduce, [array], kwargs, out or (),
            where,
            _documented([array], [] if out is None else out[1]))


@SETTINGS
@given(st.data())
def test_outer_calls_agree_with_numpy(data):
    draw = data.draw
    name, fn, loop_dtypes = _draw_function(draw, ELEMENTWISE + GUFUNCS)   # refusals too
    inputs = []
    for k in range(2):
        if k and draw(st.integers(0, 4)) == 0:
            inputs.append(draw(st.sampled_from(ODD_SCALARS)))
            continue
        dtype = draw(st.sampled_from(loop_dtypes)) if draw(st.booleans()) else draw(
            st.sampled_from(EXTRA_DTYPES))
        inputs.append(draw(twins(draw(small_shapes(max_dims=2)), dtype)))
    kwargs = {}
    if draw(st.integers(0, 3)) == 0:
        kwargs["dtype"] = draw(st.sampled_from(DTYPE_VALUES))
    where = True
    if draw(st.integers(0, 3)) == 0:
        where = kwargs["where"] = draw(st.sampled_from(WHERE_SCALARS))
    shapes = _host_shapes(fn.outer, inputs, kwargs)
    out = _out_twins(draw, shapes, [draw(st.sampled_from(loop_dtypes))] * fn.nout, fn.nout)
    if out is not None:
        kwargs["out"] = OUT
    STATS[f"outer {name}"] += 1
    compare(fn.outer, inputs, kwargs, out or (), where,
            _documented(inputs, [] if out is None else out[1]))


def _accumulate_axes(ndim):
    """axis= values for .accumulate: integers in and out of range, NumPy integers, tuples of
    none to two (NumPy takes exactly one), and the odd ones."""
    return st.one_of(st.integers(-ndim - 1, ndim),
                     st.integers(-ndim, max(ndim - 1, 0)).map(np.int64),
                     st.lists(st.integers(-ndim, ndim), max_size=2).map(tuple),
                     st.sampled_from(AXIS_ODD + [(True,), (1.0,), ()]))


@SETTINGS
@given(st.data())
def test_accumulate_calls_agree_with_numpy(data):
    draw = data.draw
    # the binary functions, and now and then one NumPy refuses (a unary one, a gufunc)
    name, fn, loop_dtypes = _draw_function(
        draw, REDUCIBLE if draw(st.integers(0, 5)) else ["lucas", "inner1d"])
    shape = draw(small_shapes(max_dims=3), label="shape")
    array = draw(twins(shape, draw(st.sampled_from(
        loop_dtypes if draw(st.booleans()) else EXTRA_DTYPES))))
    kwargs = {"axis": draw(_accumulate_axes(len(shape)))} if draw(st.booleans()) else {}
    if draw(st.integers(0, 3)) == 0:
        kwargs["dtype"] = draw(st.sampled_from(DTYPE_VALUES))
    out = None
    if draw(st.integers(0, 2)) == 0:
        out_shape = shape if draw(st.integers(0, 5)) else draw(small_shapes())
        out_dtype = draw(st.sampled_from(OUT_DTYPES))
        out = (draw(st.sampled_from(["bare", "tuple"])),
               [draw(twins(out_shape, out_dtype, allow_zero=False, special=False))])
        kwargs["out"] = OUT
    STATS[f"accumulate {name}"] += 1
    documented = _documented([array], [] if out is None else out[1])
    if documented is None and out is not None and out[1][0].host.shape != shape:
        # NumPy's accumulate writes some outs of other shapes in part (an axis of length 1
        # into a longer one); the device takes an out= of the array's shape only
        documented = ValueError
    compare(fn.accumulate, [array], kwargs, out or (), True, documented)


# .at takes unary and binary functions of one output; the others are NumPy's refusals.
AT_FUNCTIONS = sorted(n for n in ELEMENTWISE if FUNCTIONS[n].nin <= 2 and FUNCTIONS[n].nout == 1)


@st.composite
def _at_indices(draw, shape):
    """indices for .at on an array of `shape`, as NumPy takes them and a few it refuses:
    integers in and out of range, slices, lists and integer arrays with repeats, tuples of
    them (one per axis, or too many), boolean masks, Ellipsis, None, empty lists."""
    ndim = len(shape)

    def one_axis(n):
        # mostly in range (repeats likely), now and then one past either end
        index = st.integers(-n, n - 1) if n and draw(st.integers(0, 5)) < 5 else st.integers(-n - 1, n)
        bound = st.none() | st.integers(-n - 1, n + 1)
        return st.one_of(
            index,
            st.builds(slice, bound, bound, st.sampled_from([None, 1, 2, -1, -3])),
            st.lists(index, max_size=6),
            st.lists(index, max_size=6).map(lambda v: np.array(v, np.intp)),
            st.just(Ellipsis), st.just(None))
    kind = draw(st.integers(0, 9))
    if kind == 9:                   # a mask of the array's shape (or of its first axes)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        axes = draw(st.integers(0, ndim))
        return rng.random(shape[:axes]) < 0.5 if axes else np.bool_(draw(st.booleans()))
    if kind == 8:
        return draw(st.sampled_from([(), [], 1.5, [True], [[0, 1], [1, 1]], (0,) * (ndim + 1)]))
    count = draw(st.integers(1, max(ndim, 1)))
    parts = tuple(draw(one_axis(shape[k] if k < ndim else 1)) for k in range(count))
    return parts[0] if count == 1 and draw(st.booleans()) else parts


@SETTINGS
@given(st.data())
def test_at_calls_agree_with_numpy(data):
    """fn.at(a, indices, b) on host twins and device twins: the same outcome, and a holding the
    same values afterwards (as it was, when the call is refused)."""
    draw = data.draw
    # (hypothesis draws the low end of a range more often: rare branches take the high end)
    name, fn, loop_dtypes = _draw_function(
        draw, AT_FUNCTIONS if draw(st.integers(0, 7)) < 7 else ["sincos", "gaussian_pdf", "inner1d"])
    shape = draw(small_shapes(min_dims=draw(st.integers(0, 5)) > 0, max_dims=3), label="shape")
    if draw(st.booleans()):         # longer axes: more to select, and more repeats
        shape = tuple(3 * n + 2 for n in shape)
    dtype = draw(st.sampled_from(loop_dtypes if draw(st.booleans()) else EXTRA_DTYPES))
    special = dtype.kind == "f"     # NaN into an integer is C's undefined cast, host and device
    a = draw(twins(shape, dtype, special=special))
    indices = draw(_at_indices(shape), label="indices")
    inputs = [a, indices]
    if fn.nin == 2 or draw(st.integers(0, 7)) == 7:
        if draw(st.integers(0, 3)) == 3:
            inputs.append(draw(st.sampled_from(ODD_SCALARS)))
        else:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    selected = a.host[indices].shape
            except Exception:       # NumPy refuses the indices: any b
                selected = draw(small_shapes(max_dims=2))
            b_shape = broadcast_to_shape(draw, selected) if draw(st.integers(0, 5)) < 5 else draw(
                small_shapes(max_dims=2))
            b_dtype = draw(st.sampled_from(loop_dtypes if draw(st.booleans()) else EXTRA_DTYPES))
            inputs.append(draw(twins(b_shape, b_dtype, special=special)))
    STATS[f"at {name}"] += 1
    compare(fn.at, inputs, {}, ("bare", [a]), True, _documented(inputs))


def test_the_properties_cover_every_seed_function():
    assert set(ELEMENTWISE) >= {"add", "sincos", "lucas", "gaussian_pdf"}
    assert set(GUFUNCS) >= {"matmul", "condensed_distances", "l2_norm"}
    assert REDUCIBLE == ["add", "custom_op", "hypot"]      # with an identity and without
    assert AT_FUNCTIONS == ["add", "custom_op", "gelu", "hypot", "lucas", "mandelbrot"]
