"""Reference and memory leaks: every call path, called many times, leaves the reference counts
of its arguments and results as they were and memory flat.

Each check warms a path up (caches, lazily imported modules, NumPy's dispatch caches and the
allocator settle in the first calls), then runs three batches of `calls` calls (HOST_CALLS =
500 on the host, DEVICE_CALLS = 100 through the simulator, whose launches take ~0.3 ms) and
asserts:

* `sys.getrefcount` of every argument: exactly unchanged.  A missing Py_DECREF on an
  argument shows as a count that grows by one per call.  The shared singletons (the
  function, its `.ufunc`, the float64 dtype, the exception types) within SHARED_SLACK.
* each result's own count: the caller's variable and getrefcount's argument only (2; an
  element of a tuple of outputs: 3): nothing inside ufuncgen keeps a reference to it.
* the number of objects the garbage collector tracks (`gc.get_objects()`) grows by at most
  GC_BOUND = 50 per batch: a leaked tuple, dict or DeviceArray per call would add `calls`.
* Python allocations (tracemalloc's current traced size) grow by at most 12 bytes per call:
  the smallest leak, one int or float (24-32 bytes) per call, is twice that; what stays
  after the warm-up measures ~100-200 bytes a batch in all.
* native memory (resident set size, /proc/self/statm) grows by at most RSS_BOUND = 1 MiB per
  batch.  The arrays are 4096 float64 (32 KiB), so leaking the buffer of one result (host or
  simulated device memory) per call adds 3.2 MiB (device) to 16 MiB (host) a batch; glibc
  reuses freed blocks, so a path without a leak stays within a few pages.  Under
  AddressSanitizer (tools/sanitize.sh) freed memory sits in a quarantine and RSS grows
  anyway: the RSS check is skipped there, and LeakSanitizer finds native leaks instead.
  The tracemalloc check is skipped there too: the quarantine never hands an address back
  soon, and caches keyed by address (the pickling path and np.broadcast's error path showed
  16-60 bytes a call under ASan only, flat in a normal build) keep growing.

The growth that counts is the smallest of the batches' (see check_flat).  A cache that fills
over several hundred calls grows in each of the first batches, by less and less (seen once in
a full run on a loaded machine: [304, 6907, 13177, 16419] bytes after 0-3 batches of failing
device calls, flat in every run alone): while the smallest growth is over a bound after three
batches, up to MAX_BATCHES are run, and the smallest growth of all of them counts.  A leak
grows every batch alike and fails all the same.  The whole file runs in a few seconds.
"""
from __future__ import annotations

import gc
import os
import pickle
import sys
import tracemalloc

import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import _device, device

HOST_CALLS = 500              # per batch, three batches per path
DEVICE_CALLS = 100            # the simulator's launches are slower (~0.3 ms a call)
WARMUP = 30
BATCHES = 3
MAX_BATCHES = 8               # batches run while the smallest growth is over a bound
PY_BOUND_PER_CALL = 12        # bytes of Python allocations per call (see above)
GC_BOUND = 50                 # GC-tracked objects per batch
RSS_BOUND = 1024 * 1024       # bytes of resident memory per batch
SHARED_SLACK = 2              # counts of shared singletons (see check_flat)
UNDER_ASAN = "asan" in os.environ.get("LD_PRELOAD", "")
N = 4096

SIM = device.is_available() and device.backend() == "sim"
needs_sim = pytest.mark.skipif(not SIM, reason="the device paths run on the simulator")


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def check_flat(call, *watched, calls=HOST_CALLS, warmup=WARMUP, traced=True):
    """Runs call() WARMUP + BATCHES * calls times; asserts refcounts of `watched` and memory are flat.

    call() returns its result (or None); it must drop everything else it made.  A result that
    is one of `watched` (an out= array, an unpickled function) is not a fresh object and is
    not checked for its own count.

    Memory is measured over BATCHES batches of `calls` and the smallest growth must stay
    within the bounds: a leak grows every batch alike, while a one-off allocation that
    outlives a batch (a cache or a dict of NumPy's or the interpreter's resizing once; a 1 MB
    one was seen, and np.broadcast's error path fills some cache in steps of ~10 KB that
    level off after ~5000 calls) lands in one batch or two.  The function, its ufunc, the float64 dtype and the
    exception types are shared by everything alive in the process (each float64 array holds
    its dtype): their counts may move by SHARED_SLACK from caches, where a leak would add
    one per call.
    """
    shared = (ex.add, ex.add.ufunc, np.dtype(np.float64), TypeError, ValueError)
    for _ in range(WARMUP):
        result = call()
    del result
    gc.collect()
    counts = [sys.getrefcount(o) for o in watched]
    shared_counts = [sys.getrefcount(o) for o in shared]
    py, objects, rss = [], [], []
    grown = lambda m: min(b - a for a, b in zip(m, m[1:]))   # noqa: E731
    check_memory = not UNDER_ASAN and traced

    def flat():
        if grown(objects) > GC_BOUND:
            return False
        return not check_memory or (grown(py) <= PY_BOUND_PER_CALL * calls
                                    and grown(rss) <= RSS_BOUND)

    tracemalloc.start()
    try:
        for batch in range(MAX_BATCHES + 1):
            if batch:
                for _ in range(calls):
                    result = call()
                    if result is not None and not any(result is o for o in watched):
                        # `result` and getrefcount's argument, nothing else
                        assert sys.getrefcount(result) == 2, type(result)
                        if type(result) is tuple:
                            for r in result:        # the tuple, `r`, getrefcount's argument
                                assert sys.getrefcount(r) == 3, type(r)
                    del result
            gc.collect()
            py.append(tracemalloc.get_traced_memory()[0])
            objects.append(len(gc.get_objects()))
            rss.append(_rss())
            if batch >= BATCHES and flat():
                break
    finally:
        tracemalloc.stop()
    assert [sys.getrefcount(o) for o in watched] == counts, "reference counts changed"
    moved = [sys.getrefcount(o) - c for o, c in zip(shared, shared_counts)]
    assert all(abs(m) <= SHARED_SLACK for m in moved), f"shared reference counts moved {moved}"
    assert grown(objects) <= GC_BOUND, f"GC-tracked objects accumulate: {objects}"
    if check_memory:
        assert grown(py) <= PY_BOUND_PER_CALL * calls, f"Python allocations grew: {py}"
        assert grown(rss) <= RSS_BOUND, f"RSS grew: {rss}"


def raises(exc, fn, *args, **kwargs):
    """A call that must fail with `exc`; the exception (and its traceback) is dropped."""
    def call():
        try:
            fn(*args, **kwargs)
        except exc:
            return None
        raise AssertionError(f"{fn} did not raise {exc.__name__}")
    return call


# ------------------------------------------------------------------------------------ host

def test_host_call():
    x, y = np.linspace(0, 1, N), np.linspace(1, 2, N)
    check_flat(lambda: ex.add(x, y), x, y)


def test_host_call_with_out_and_where():
    x, y, out = np.linspace(0, 1, N), np.linspace(1, 2, N), np.zeros(N)
    mask = np.arange(N) % 2 == 0
    check_flat(lambda: ex.add(x, y, out=out, where=mask), x, y, out, mask)
    check_flat(lambda: ex.add(x, y, out=(out,)), x, y, out)


def test_host_call_with_casts_and_two_outputs():
    i = np.arange(N, dtype=np.int32)
    check_flat(lambda: ex.add(i, 0.5), i)
    check_flat(lambda: ex.hypot(i, np.float32(2)), i)
    x = np.linspace(0, 1, N)
    check_flat(lambda: ex.sincos(x), x)


def test_host_gufunc_and_reduce():
    a = np.linspace(0, 1, 4 * N).reshape(-1, 8)
    check_flat(lambda: ex.inner1d(a, a), a)
    check_flat(lambda: ex.l2_norm(a, axis=0), a)
    check_flat(lambda: ex.add.reduce(a, axis=1), a)
    check_flat(lambda: ex.add.reduce(a, axis=None, initial=1.0), a)
    check_flat(lambda: ex.add.accumulate(a[0]), a)


def test_host_at_through_the_indexed_loops():
    x, values, indices = np.zeros(N), np.linspace(0, 1, N), np.arange(N) % 7
    ints = np.arange(N)
    check_flat(lambda: ex.add.at(x, indices, values), x, indices, values)
    check_flat(lambda: ex.add.at(x, indices, np.float64(0.5)), x, indices)
    check_flat(lambda: ex.hypot.at(x, indices, 0.5), x, indices)
    check_flat(lambda: ex.lucas.at(ints, indices), ints, indices)
    narrow = indices.astype(np.int32)                   # converted to intp: a copy each call
    check_flat(lambda: ex.add.at(x, narrow, values), x, narrow, values)
    check_flat(raises(IndexError, ex.add.at, x, np.array([0, N], np.int32), 1.0), x)
    check_flat(raises(IndexError, ex.add.at, x, np.array([0, N]), 1.0), x)
    grid, rows, columns = np.zeros((7, N // 7)), indices, np.arange(N) % 5
    check_flat(lambda: ex.add.at(grid, (rows, columns), values), grid, rows, columns, values)
    check_flat(raises(IndexError, ex.add.at, grid, (rows, columns + N), 1.0), grid, rows)
    listed, listed_b, narrow_b = [0, 3, -1, 3], [0.5, 1.5, 2.5, 3.5], np.ones(4, np.float32)
    x32, grid32 = np.zeros(N, np.float32), np.zeros((7, N // 7), np.float32)

    def conversions():  # lists and b cast for the indexed loop; a mask and 2**70 left to NumPy
        ex.add.at(x, listed, listed_b)
        ex.add.at(grid, (listed, listed), 1.0)
        ex.add.at(x, listed, 1)
        ex.add.at(x, listed, narrow_b)
        ex.add.at(x32, listed, 0.5)                      # a converted into the float64 loop
        ex.add.at(grid, listed, 1.0)                     # rows, b a scalar made an array
        ex.add.at(grid, (np.array(listed),), grid[:4] * 0 + listed_b[0])  # rows of b
        ex.add.at(grid32, listed, narrow_b[:1])          # rows of float32
        # (Rows of b that do not broadcast go to NumPy's .at, whose ValueError keeps a
        # reference to b in NumPy 2.4: np.add.at itself leaks there, one array a call.)
        ex.add.at(x[:3], [True, False, True], 1.0)
        with pytest.raises(IndexError):
            ex.add.at(x, [0, 2 ** 70], 1.0)
    check_flat(conversions, x, grid, narrow_b, x32, grid32)
    first = indices[:4].copy()
    with np.errstate(over="raise"):      # a fresh array each time: inf + 1e308 raises nothing
        check_flat(raises(FloatingPointError, lambda: ex.add.at(np.full(4, 1e308), first, 1e308)),
                   first)


def test_host_error_paths():
    x = np.linspace(0, 1, N)
    check_flat(raises(TypeError, ex.lucas, x), x)                        # no float loop
    check_flat(raises(ValueError, ex.add, x, np.ones(3)), x)             # broadcasting
    check_flat(raises(ValueError, ex.add, x, 1.0, out=x[::-1].copy()[:3]), x)
    ro = np.zeros(N)
    ro.flags.writeable = False
    check_flat(raises(ValueError, ex.add, x, 1.0, out=ro), x, ro)        # read-only out
    check_flat(raises(ValueError, ex.inner1d, x, x[:3]), x)              # core dimensions


def test_host_gufunc_with_out_overlapping_its_inputs():
    a = np.tile(np.eye(4), (N // 16, 1, 1))      # identities: repeated products stay finite
    b, out = a.copy(), np.empty_like(a)
    check_flat(lambda: ex.matmul(a, a, out=a), a)                        # copied once
    check_flat(lambda: ex.matmul(a, b, b), a, b)                         # by position
    check_flat(lambda: ex.matmul(a, b, out=(out,)), a, b, out)           # apart: no copy
    base = np.linspace(0, 1, 2 * N)
    x, y = base[0::2].reshape(-1, 8), base[1::2].reshape(-1, 8)[:, 0]
    check_flat(lambda: ex.l2_norm(x, out=y), base, x, y)                 # the exact check


class _Overrides:
    def __init__(self, declines):
        self.declines = declines

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return NotImplemented if self.declines else [method]     # a fresh result


class _OptsOut:
    __array_ufunc__ = None


def test_array_ufunc_overrides():
    x, out = np.linspace(0, 1, N), np.zeros(N)
    answers, declines, opts_out = _Overrides(False), _Overrides(True), _OptsOut()
    check_flat(lambda: ex.add(answers, x, out=out, dtype=float), answers, x, out)
    check_flat(lambda: ex.sincos(x, out=(answers, None)), answers, x)
    check_flat(lambda: ex.add.reduce(answers, 0, None, out, True), answers, out)
    check_flat(lambda: ex.add.at(x, [0], answers), answers, x)
    check_flat(raises(TypeError, ex.add, declines, x, out=out), declines, x, out)
    check_flat(raises(TypeError, ex.add, x, opts_out), x, opts_out)
    check_flat(raises(TypeError, ex.add, answers, x, foo=1), answers, x)  # NumPy's refusal
    check_flat(lambda: ex.add.accumulate(x, dtype=np.float64), x)          # looked at, no override


def test_pickling_a_function():
    check_flat(lambda: pickle.loads(pickle.dumps(ex.add)), ex.add)
    check_flat(lambda: pickle.loads(pickle.dumps(ex.inner1d)), ex.inner1d)


# ---------------------------------------------------------------------- device (simulator)

@pytest.fixture
def d():
    return device.to_device(np.linspace(0, 1, N))


@needs_sim
def test_device_array_creation_and_copy_to_host(d):
    x = np.linspace(0, 1, N)
    check_flat(lambda: device.to_device(x), x, calls=DEVICE_CALLS)
    check_flat(lambda: device.device_array((N,)), calls=DEVICE_CALLS)
    check_flat(lambda: device.device_array((4, 8), np.int32), calls=DEVICE_CALLS)
    check_flat(lambda: d.copy_to_host(), d, calls=DEVICE_CALLS)


@needs_sim
def test_device_elementwise(d):
    out = device.device_array((N,))
    mask = device.to_device(np.arange(N) % 3 == 0)
    check_flat(lambda: ex.add(d, d), d, calls=DEVICE_CALLS)
    check_flat(lambda: ex.add(d, 1.0, out=out), d, out, calls=DEVICE_CALLS)
    check_flat(lambda: ex.add(d, d, out=out, where=mask), d, out, mask, calls=DEVICE_CALLS)
    check_flat(lambda: ex.sincos(d), d, calls=DEVICE_CALLS)


@needs_sim
def test_device_casts(d):
    i = device.to_device(np.arange(N, dtype=np.int32))
    out32 = device.device_array((N,), np.float32)
    check_flat(lambda: ex.add(i, 0.5), i, calls=DEVICE_CALLS)
    check_flat(lambda: ex.add(d, d, out=out32, casting="same_kind"), d, out32, calls=DEVICE_CALLS)


@needs_sim
def test_device_gufunc_and_reduce():
    a = device.to_device(np.linspace(0, 1, N).reshape(-1, 8))
    check_flat(lambda: ex.inner1d(a, a), a, calls=DEVICE_CALLS)
    check_flat(lambda: ex.l2_norm(a), a, calls=DEVICE_CALLS)
    check_flat(lambda: ex.add.reduce(a, axis=1), a, calls=DEVICE_CALLS)
    check_flat(lambda: ex.add.reduce(a, axis=None), a, calls=DEVICE_CALLS)


@needs_sim
def test_device_at_and_its_error_paths(d):
    b = device.to_device(np.ones(64))
    indices = np.arange(64) % 7
    ints = device.to_device(np.arange(N) % 30)
    check_flat(lambda: ex.add.at(d, indices, 0.5), d, indices, calls=DEVICE_CALLS)
    check_flat(lambda: ex.add.at(d, indices, b), d, b, indices, calls=DEVICE_CALLS)
    check_flat(lambda: ex.lucas.at(ints, (slice(None, 8),)), ints, calls=DEVICE_CALLS)
    check_flat(raises(IndexError, ex.add.at, d, [N], 1.0), d, calls=DEVICE_CALLS)
    check_flat(raises(ValueError, ex.add.at, d, [0, 1], b), d, b, calls=DEVICE_CALLS)
    check_flat(raises(TypeError, ex.lucas.at, d, [0]), d, calls=DEVICE_CALLS)        # no loop
    check_flat(raises(TypeError, ex.add.at, d, [0], np.ones(1)), d, calls=DEVICE_CALLS)
    check_flat(raises(TypeError, ex.add.at, d, b, 1.0), d, b, calls=DEVICE_CALLS)   # CUDA indices
    ro = _Foreign(d, data=(d.ptr, True))
    check_flat(raises(ValueError, ex.add.at, ro, [0], 1.0), d, ro, calls=DEVICE_CALLS)

    def injected():
        _device._sim_inject_error("cudaErrorIllegalAddress")
        try:
            ex.add.at(d, indices, b)
        except device.DeviceError:
            return None
        raise AssertionError("the injected error did not surface")
    check_flat(injected, d, b, device.DeviceError, calls=DEVICE_CALLS)


class _Foreign:
    def __init__(self, d, **overrides):
        self._d, self._overrides = d, overrides

    @property
    def __cuda_array_interface__(self):
        cai = dict(self._d.__cuda_array_interface__)
        cai.update(self._overrides)
        return cai


@needs_sim
def test_device_error_paths(d):
    x = np.linspace(0, 1, N)
    out = device.device_array((N,))
    check_flat(raises(TypeError, ex.lucas, d), d, calls=DEVICE_CALLS)  # bad dtype
    check_flat(raises(TypeError, ex.add, d, x), d, x, calls=DEVICE_CALLS)  # mixed
    check_flat(raises(TypeError, ex.add, d, 1.0, out=np.zeros(N)), d, calls=DEVICE_CALLS)  # host out
    bad = _Foreign(d, typestr="<q9")
    check_flat(raises(ValueError, ex.add, bad, 1.0), bad, d, calls=DEVICE_CALLS)  # bad CAI
    nodata = _Foreign(d, data=(0, False))
    check_flat(raises(ValueError, ex.add, nodata, 1.0), nodata, d, calls=DEVICE_CALLS)
    ro = _Foreign(out, data=(out.ptr, True))
    check_flat(raises(ValueError, ex.add, d, 1.0, out=ro), d, ro, out, calls=DEVICE_CALLS)  # read-only
    # broadcast (the dispatcher broadcasts shapes itself: NumPy's np.broadcast keeps ~54
    # bytes alive every few failing calls, which this bound caught)
    check_flat(raises(ValueError, ex.add, d, device.device_array((3,))), d, calls=DEVICE_CALLS)
    check_flat(raises(TypeError, ex.inner1d, d, d, where=True), d, calls=DEVICE_CALLS)  # keyword

    def injected():
        _device._sim_inject_error("cudaErrorIllegalAddress")
        try:
            ex.add(d, 1.0, out=out)
        except device.DeviceError:
            return None
        raise AssertionError("the injected error did not surface")
    check_flat(injected, d, out, device.DeviceError, calls=DEVICE_CALLS)


@needs_sim
def test_a_class_made_per_call_is_not_kept_alive_by_the_device_calls_it_was_given_to():
    """The stream sources and the result library are remembered per type, weakly: an adapter
    class made per call, and the device memory its property refers to, go with the call."""
    import weakref
    classes, buffers = [], []
    for _ in range(300):
        buffer = device.to_device(np.arange(64.0))

        class Adapter:
            @property
            def __cuda_array_interface__(self, buffer=buffer):
                return buffer.__cuda_array_interface__

        ex.add(Adapter(), 1.0)
        classes.append(weakref.ref(Adapter))
        buffers.append(weakref.ref(buffer))
        del Adapter, buffer
    gc.collect()
    device.synchronize()
    gc.collect()
    assert sum(r() is not None for r in classes) == 0
    assert sum(r() is not None for r in buffers) == 0


def test_dlpack_and_cai_export_and_import(d):
    check_flat(lambda: d.__cuda_array_interface__, d, calls=DEVICE_CALLS)
    check_flat(lambda: d.__dlpack__(), d, calls=DEVICE_CALLS)
    check_flat(lambda: d.__dlpack__(max_version=(1, 0)), d, calls=DEVICE_CALLS)
    check_flat(lambda: _device.from_dlpack_capsule(d.__dlpack__()), d, calls=DEVICE_CALLS)
    check_flat(lambda: _device.from_dlpack_capsule(d.__dlpack__(max_version=(1, 0))), d, calls=DEVICE_CALLS)
    check_flat(lambda: device.from_dlpack(d), d, calls=DEVICE_CALLS)
    check_flat(lambda: device.as_device_array(_Foreign(d)), d, calls=DEVICE_CALLS)
