"""Stream ordering under the asynchronous simulator: the seven scenarios of a GPU user who
calls ufuncgen between PyTorch or CuPy work on side streams, and the simulator's own model.

A late producer is made with `_device.sim_stall` (the simulator's stand-in for a long GPU
kernel): work queued after it on that stream starts no earlier.  Where ufuncgen gets its
ordering wrong, the consumer then runs first and reads memory that is not filled yet (or that
a stream-ordered free has poisoned, which the simulator reports by name), so each scenario
fails deterministically under the old rules, not by chance.  The libraries are stand-ins with
the same protocols (CAI v2 without a stream, CAI v3 with one, DLPack only) and a current
stream of their own; the same scenarios with real PyTorch and CuPy streams run on a GPU
(shared/gpu/validate.sh, stage "probes").
"""
import contextlib
import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ufuncgen import _device, device
import ufuncgen.examples as ex

from .conftest import STALLS, host, stalled

pytestmark = pytest.mark.skipif(
    device.backend() != "sim" or not _device.sim_is_async(),
    reason="needs the asynchronous simulator (UFUNCGEN_DEVICE=sim, not UFUNCGEN_SIM_SYNC=1)")

LATE = 0.05     # seconds a producer's stream is held: far longer than any unordered consumer


class Library:
    """A CUDA array library as ufuncgen meets it: arrays with a protocol, and a current stream
    (`with lib.stream(s):`) that its own work goes to."""

    def __init__(self, protocol):
        self.protocol = protocol        # "cai2", "cai3" or "dlpack"
        self.current = None
        outer = self

        class Array:
            def __init__(self, d, stream):
                self._d, self._stream = d, stream

            @property
            def __cuda_array_interface__(self):
                if outer.protocol == "dlpack":
                    raise AttributeError("__cuda_array_interface__")
                cai = dict(self._d.__cuda_array_interface__)
                if outer.protocol == "cai2":
                    cai["version"] = 2
                    cai.pop("stream", None)
                else:
                    cai["stream"] = self._stream.handle if self._stream else 1
                return cai

            def __dlpack__(self, stream=None, **kwargs):
                # The producer's side of the protocol: the consumer's stream waits for ours.
                consumer = 0 if stream in (None, 1) else stream
                mine = self._stream.handle if self._stream else 0
                if stream != -1 and consumer != mine:
                    _device.stream_wait(consumer, mine)
                return self._d.__dlpack__(stream=-1)

            def __dlpack_device__(self):
                return self._d.__dlpack_device__()

        if protocol == "dlpack":
            del Array.__cuda_array_interface__
        self.Array = Array
        device.register_stream_source(Array, lambda a: outer.current)

    @contextlib.contextmanager
    def stream(self, s):
        previous, self.current = self.current, s
        try:
            yield s
        finally:
            self.current = previous

    def array(self, values):
        """An array the library fills on its current stream (late when that stream is held)."""
        d = device.to_device(values, stream=self.current)
        return self.Array(d, self.current)

    def empty_like(self, values):
        return self.Array(device.device_array(np.shape(values), np.asarray(values).dtype,
                                              stream=self.current), self.current)

    def read(self, a, stream):
        """What the library's kernel on `stream` reads from `a`: a copy queued on that stream,
        ordered by nothing but the stream itself."""
        copy = device.device_array(a._d.shape, a._d.dtype, stream=stream)
        ex.add(a._d, 0.0, out=copy, stream=stream)
        return copy


def side_stream():
    return device.Stream(non_blocking=True)


@pytest.fixture
def x(rng):
    return rng.standard_normal(4096)


# ------------------------------------------------------------------ the seven scenarios


def test_1_an_array_made_in_a_library_stream_block_is_read_after_its_producer(x):
    torch = Library("cai2")         # PyTorch's CAI names no stream
    s = side_stream()
    with torch.stream(s):
        _device.sim_stall(s.handle, LATE)
        t = torch.array(x)
        result = ex.add(t, 1.0)     # no stream=: PyTorch's current stream, s
    assert result.stream == s.handle
    np.testing.assert_array_equal(host(result), x + 1)


def test_2_the_same_with_stream_given_is_ordered_by_the_stream_itself(x):
    torch = Library("cai2")
    s = side_stream()
    with torch.stream(s):
        _device.sim_stall(s.handle, LATE)
        t = torch.array(x)
    np.testing.assert_array_equal(host(ex.add(t, 1.0, stream=s)), x + 1)


def test_3_an_out_tensor_written_by_ufuncgen_is_read_after_the_write(x):
    torch = Library("cai2")
    s, reader = side_stream(), side_stream()
    a = device.to_device(x)
    device.synchronize()
    with torch.stream(s):
        out = torch.empty_like(x)
        _device.sim_stall(0, 4 * LATE)      # had ufuncgen used the legacy stream: late there
        _device.sim_stall(s.handle, LATE)
        ex.add(a, 1.0, out=out)             # PyTorch's current stream: s
        _device.stream_wait(reader.handle, s.handle)    # PyTorch: reader.wait_stream(s)
        seen = torch.read(out, reader)
    np.testing.assert_array_equal(host(seen), x + 1)


def test_4_a_cupy_array_on_a_non_blocking_stream_is_written_where_cupy_reads(x):
    cupy = Library("cai3")          # CuPy's CAI v3 names its current stream
    s = side_stream()
    a = device.to_device(x)
    device.synchronize()
    with cupy.stream(s):
        out = cupy.empty_like(x)
        _device.sim_stall(0, 4 * LATE)
        ex.add(a, 1.0, out=out)
        seen = cupy.read(out, s)     # CuPy's next kernel, on its current stream
    np.testing.assert_array_equal(host(seen), x + 1)


def test_5_a_dlpack_producer_orders_its_stream_before_the_consumers(x):
    lib = Library("dlpack")
    s, consumer = side_stream(), side_stream()
    with lib.stream(s):
        _device.sim_stall(s.handle, LATE)
        t = lib.array(x)
    # stream= names the consumer; __dlpack__(stream=consumer) makes it wait for s.
    np.testing.assert_array_equal(host(ex.add(t, 1.0, stream=consumer)), x + 1)


def test_6_a_device_array_written_on_one_stream_is_read_after_it_on_another(x):
    a, b = side_stream(), side_stream()
    src = device.to_device(x)
    device.synchronize()
    _device.sim_stall(a.handle, LATE)
    written = ex.add(src, 1.0, stream=a)
    assert written.stream == a.handle
    np.testing.assert_array_equal(host(ex.add(written, 1.0, stream=b)), (x + 1) + 1)


def test_7_a_dropped_result_is_not_reused_before_a_late_reader_has_read_it(x):
    a, b = side_stream(), side_stream()
    src = device.to_device(x)
    device.synchronize()
    written = ex.add(src, 1.0, stream=a)
    _device.sim_stall(b.handle, LATE)
    read = ex.add(written, 1.0, stream=b)       # b is late
    del written                                 # freed after b's read, not on a at once
    reuse = ex.add(src, 100.0, stream=a)        # may take the freed block on a
    np.testing.assert_array_equal(host(read), (x + 1) + 1)
    np.testing.assert_array_equal(host(reuse), x + 100)


@pytest.mark.parametrize("n", [100, 20_000])        # one scan per line, or chunks
def test_an_accumulation_is_ordered_after_its_producer_and_before_its_reader(n, rng):
    a, b = side_stream(), side_stream()
    values = rng.integers(-1000, 1000, n)
    src = device.to_device(values)
    device.synchronize()
    _device.sim_stall(a.handle, LATE)
    written = ex.add(src, 1, stream=a)                  # late on a
    running = ex.add.accumulate(written, stream=b)      # must wait for a's write
    _device.sim_stall(b.handle, LATE)
    read = ex.add(running, 0, stream=a)                 # must wait for b's scan
    np.testing.assert_array_equal(host(read), np.cumsum(values + 1))


def test_a_reduceat_is_ordered_after_its_producer_and_before_its_reader(rng):
    a, b = side_stream(), side_stream()
    values = rng.integers(-1000, 1000, (3, 500))
    src = device.to_device(values)
    device.synchronize()
    _device.sim_stall(a.handle, LATE)
    written = ex.add(src, 1, stream=a)                              # late on a
    sums = ex.add.reduceat(written, [0, 10, 400], axis=1, stream=b)  # must wait for a's write
    _device.sim_stall(b.handle, LATE)
    read = ex.add(sums, 0, stream=a)                                # must wait for b's sums
    np.testing.assert_array_equal(host(read), np.add.reduceat(values + 1, [0, 10, 400], axis=1))


def test_an_at_is_ordered_after_its_producers_and_before_its_reader(rng):
    a, b, c = side_stream(), side_stream(), side_stream()
    values = rng.integers(-1000, 1000, 500)
    indices = rng.integers(0, 500, 2000)
    src = device.to_device(values)
    increments = device.to_device(np.arange(2000))
    device.synchronize()
    _device.sim_stall(a.handle, LATE)
    _device.sim_stall(c.handle, 4 * LATE)
    written = ex.add(src, 1, stream=a)                              # late on a
    more = ex.add(increments, 2, stream=c)                          # b's values, later on c
    ex.add.at(written, indices, more, stream=b)                     # must wait for both
    _device.sim_stall(b.handle, LATE)
    read = ex.add(written, 0, stream=a)                             # must wait for b's update
    want = values + 1
    np.add.at(want, indices, np.arange(2000) + 2)
    np.testing.assert_array_equal(host(read), want)


@pytest.mark.parametrize("protocol", ["cai2", "cai3", "dlpack"])
def test_a_library_array_used_on_another_stream_outlives_the_work_that_uses_it(x, protocol):
    """Dropped right after the call, a library array used on a stream= of the caller's goes
    back to its library only once that stream has passed the work (as record_stream would)."""
    lib = Library(protocol)
    for late in STALLS:
        mine = side_stream()
        with lib.stream(side_stream()):
            t = lib.array(x)
        device.synchronize()
        still_held = stalled(mine.handle, late)
        result = ex.add(t, 1.0, stream=mine)        # late: the stall comes first
        kept = _device._kept_count()
        conclusive = still_held()
        del t                                       # the library would free it on its stream now
        np.testing.assert_array_equal(host(result), x + 1)
        device.synchronize()
        assert _device._kept_count() == 0           # let go once the stream has passed
        if conclusive:
            assert kept >= 1
            return
    pytest.fail(f"no check came within {late} s of its stall")


def test_a_result_handed_to_cupy_is_ordered_on_cupys_stream_and_names_no_stream(x, monkeypatch):
    """CuPy synchronises (blocking the host) a stream named in a CAI it imports: results come
    to it already ordered on its current stream, with none named."""
    import sys
    import types
    seen, current = [], {}

    class ndarray:
        __module__ = "cupy"

        def __init__(self, d):
            self._d = d
            self.device = types.SimpleNamespace(id=0)     # cupy.cuda.Device: its .id

        @property
        def __cuda_array_interface__(self):
            return self._d.__cuda_array_interface__

    def asarray(obj):
        seen.append(obj.__cuda_array_interface__)
        return ndarray(obj)

    cupy = types.ModuleType("cupy")
    cupy.asarray, cupy.ndarray = asarray, ndarray
    cupy.cuda = types.SimpleNamespace(get_current_stream=lambda device_id=-1: current["stream"])
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    s, other = side_stream(), side_stream()
    # cupy.cuda.Stream: .ptr is the handle, and the object owns the stream
    current["stream"] = types.SimpleNamespace(ptr=s.handle, owns=s)
    a = ndarray(device.to_device(x))
    device.synchronize()

    r = ex.add(a, 1.0)                          # CuPy's current stream
    assert seen[-1]["stream"] is None and r._d.stream == s.handle
    _device.sim_stall(other.handle, LATE)
    r2 = ex.add(a, 2.0, stream=other)           # another stream: CuPy's waits for it
    assert seen[-1]["stream"] is None
    following = ex.add(r2, 0.0, stream=s)       # CuPy's next kernel, on its stream
    np.testing.assert_array_equal(following._d.copy_to_host(), x + 2)
    np.testing.assert_array_equal(r._d.copy_to_host(), x + 1)


# ------------------------------------------------------------------ the rules behind them


def test_a_stream_block_is_the_default_stream_of_calls_inside_it(x):
    s = side_stream()
    d = device.to_device(x)
    with s:
        assert device.current_stream() is s
        result = ex.add(d, 1.0)
    assert device.current_stream() is None
    assert result.stream == s.handle
    np.testing.assert_array_equal(host(result), x + 1)


def test_one_stream_may_be_entered_by_two_tasks_at_once(x):
    """The current stream is per thread and task: two asyncio tasks (or threads) in `with s:`
    blocks of the same Stream at once each leave their own block."""
    import asyncio
    s = side_stream()
    d = device.to_device(x)
    seen = []

    async def task(wait_inside):
        with s:
            await asyncio.sleep(0)              # the other task enters while this one is in
            result = ex.add(d, 1.0)
            await asyncio.sleep(0.01 if wait_inside else 0)
        seen.append((device.current_stream(), result))

    async def both():
        await asyncio.gather(task(False), task(True))   # the first in leaves first

    asyncio.run(both())
    assert [stream for stream, _ in seen] == [None, None]
    for _, result in seen:
        np.testing.assert_array_equal(host(result), x + 1)
    assert device.current_stream() is None


def test_stream_blocks_closed_out_of_order_are_refused(x):
    a, b = side_stream(), side_stream()
    a.__enter__()
    b.__enter__()
    with pytest.raises(RuntimeError, match="not the innermost open `with` block"):
        a.__exit__(None, None, None)
    b.__exit__(None, None, None)
    a.__exit__(None, None, None)
    assert device.current_stream() is None


def test_the_library_stream_wins_over_a_ufuncgen_stream_block(x):
    torch = Library("cai2")
    s, mine = side_stream(), side_stream()
    with torch.stream(s), mine:
        result = ex.add(torch.array(x), 1.0)
    assert result.stream == s.handle


def test_an_array_keeps_the_stream_object_it_was_made_on_alive(x):
    d = device.to_device(x, stream=side_stream())       # the Stream has no other reference
    np.testing.assert_array_equal(host(ex.add(d, 1.0)), x + 1)
    del d                       # freed on its stream, which must still exist


def test_an_out_array_records_the_stream_that_wrote_it(x):
    s = side_stream()
    out = device.to_device(np.zeros_like(x))
    ex.add(device.to_device(x), 1.0, out=out, stream=s)
    assert out.stream == s.handle
    np.testing.assert_array_equal(host(out), x + 1)


def test_a_blocking_stream_waits_for_the_legacy_default_streams_earlier_work(x):
    s = device.Stream()                                 # blocking
    d = device.to_device(np.zeros_like(x))
    device.synchronize()
    _device.sim_stall(0, LATE)
    ex.add(device.to_device(x), 1.0, out=d, stream=0)   # late, on the legacy stream
    d.stream = s.handle         # a bare handle: nothing but the legacy rule orders the read
    np.testing.assert_array_equal(host(ex.add(d, 0.0, stream=s)), x + 1)


def test_a_use_after_a_stream_ordered_free_is_reported_naming_the_buffer(x):
    s = side_stream()
    d = device.to_device(x)
    device.synchronize()
    ptr, nbytes = d.ptr, d.nbytes
    view = _device.from_pointer(ptr, d.shape, d.dtype, d.strides, d.device, None, False, 0)
    _device.sim_stall(s.handle, LATE)
    ex.add(view, 1.0, stream=s)         # queued behind the stall; nothing keeps d alive
    del d                               # freed on the legacy stream, at once
    with pytest.raises(device.DeviceError, match=rf"(?s)after it was freed.*{nbytes}-byte|"
                                                 rf"{nbytes}-byte.*after it was freed"):
        device.synchronize()


def test_a_call_that_reports_an_earlier_misuse_is_still_ordered_before_later_uses(x):
    """The simulator reports a misuse at the next launch, after queuing that launch: the call
    raises, but its work runs, so its out= is last used on its stream and a later write to it
    on another stream comes after."""
    s, late = side_stream(), side_stream()
    d = device.to_device(x)
    out = device.to_device(np.zeros_like(x))
    for seconds in (0.3, 1.0, 5.0):     # until the misuse has run before the call below
        freed = device.to_device(x)
        device.synchronize()
        alias = _device.from_pointer(freed.ptr, freed.shape, freed.dtype, freed.strides,
                                     freed.device, None, False, 0)
        _device.sim_stall(s.handle, LATE)
        ex.add(alias, 1.0, stream=s)    # reads `freed` after its free: the misuse
        del freed, alias
        time.sleep(seconds)
        _device.sim_stall(late.handle, LATE)
        try:
            ex.add(d, 1.0, out=out, stream=late)
        except device.DeviceError as error:
            assert "after it was freed" in str(error)
            break
        with pytest.raises(device.DeviceError, match="after it was freed"):
            device.synchronize()        # reported here instead: try again, waiting longer
    else:
        pytest.fail("the simulator never reported the read after the free at a launch")
    ex.add(d, 4.0, out=out)             # the legacy stream, after the call that raised
    np.testing.assert_array_equal(host(out), x + 4.0)
    device.synchronize()
    np.testing.assert_array_equal(host(out), x + 4.0)


def test_the_legacy_streams_implicit_waits_are_queued_once_per_new_work_not_per_launch():
    """Each legacy launch waits for every blocking stream with pending work; a wait already
    queued covers a stream with no new work since.  Queued again each time, 200 streams held
    187 MiB of queue (each wait an operation of some 10 KB)."""
    import ctypes
    libc = ctypes.CDLL("libc.so.6")

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks "
                                                  "fsmblks uordblks fordblks keepcost".split()]

    libc.mallinfo2.restype = MallInfo2
    d = device.to_device(np.ones(4))
    device.synchronize()
    _device.sim_stall(0, 5.0)           # everything below stays queued
    before = libc.mallinfo2().uordblks
    results = []
    for _ in range(200):
        s = device.Stream()             # blocking: ordered with the legacy stream
        a = ex.add(d, 1.0, stream=s)
        results.append(ex.add(a, a))    # on the legacy stream, after s
    held = (libc.mallinfo2().uordblks - before) / 2**20
    device.synchronize()
    assert held < 32, f"{held:.0f} MiB queued"
    for r in results:
        np.testing.assert_array_equal(host(r), [4.0] * 4)


@pytest.mark.parametrize("kind", ["from_pointer", "from_dlpack"])
def test_a_view_written_late_on_a_side_stream_is_ordered_before_its_arrays_next_read(kind, x):
    """A DLPack view of ufuncgen's own array owns that array, as a from_pointer view does: a
    holder of the capsule as its owner hid it, and the array's read did not wait."""
    s = side_stream()
    d, xd = device.to_device(np.zeros_like(x)), device.to_device(x)
    device.synchronize()
    v = (_device.from_pointer(d.ptr, d.shape, d.dtype, d.strides, d.device, d, False, 0)
         if kind == "from_pointer" else device.from_dlpack(d))
    _device.sim_stall(s.handle, LATE)
    ex.add(v, xd, out=v, stream=s)
    np.testing.assert_array_equal(host(d), x)


def test_a_views_exports_name_the_last_use_of_the_memory_it_views(x):
    """The array a view views was used later, on another stream: the view's interface names
    that stream, and its DLPack export waits for it."""
    s = side_stream()
    d, xd = device.to_device(np.zeros_like(x)), device.to_device(x)
    v = _device.from_pointer(d.ptr, d.shape, d.dtype, d.strides, d.device, d, False, 0)
    device.synchronize()
    _device.sim_stall(s.handle, LATE)
    ex.add(d, xd, out=d, stream=s)          # the viewed array, late on s
    assert v.__cuda_array_interface__["stream"] == s.handle
    imported = device.from_dlpack(v)        # on the legacy stream, after s's write
    np.testing.assert_array_equal(host(imported), x)


def test_work_queued_on_a_destroyed_stream_is_an_error_naming_the_stream(x):
    handle = _device.stream_create()
    _device.stream_destroy(handle)
    with pytest.raises(device.DeviceError, match=f"stream {handle:#x}.*destroyed"):
        ex.add(device.to_device(x), 1.0, stream=handle)


def test_each_thread_has_its_own_per_thread_default_stream(x):
    d = device.to_device(x)
    device.synchronize()
    results = {}

    def work(name):
        results[name] = host(ex.add(d, 1.0, stream=2))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for value in results.values():
        np.testing.assert_array_equal(value, x + 1)


# ------------------------------------------------------------------ random interleavings

OPS = st.lists(st.tuples(st.sampled_from(["write", "read", "drop", "stall"]),
                         st.integers(0, 2),          # array
                         st.integers(0, 2),          # stream
                         st.integers(1, 9)),         # value
               min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(program=OPS)
def test_random_interleavings_of_streams_give_the_sequential_result(program):
    """Writes, reads, frees and stalls on three non-blocking streams, against the same program
    run in order on the host: ufuncgen's own ordering (last use, frees on it) must make any
    schedule the simulator picks give the sequential result."""
    streams = [side_stream() for _ in range(3)]
    n = 257
    arrays = [None] * 3
    expected = [None] * 3
    reads = []
    for kind, i, k, v in program:
        s = streams[k]
        if kind == "stall":
            _device.sim_stall(s.handle, 0.002 * v)
        elif kind == "write":
            if arrays[i] is None:
                arrays[i] = device.device_array(n, np.float64, stream=s)
                expected[i] = np.zeros(n)
                _zero(arrays[i], s)
            ex.add(arrays[i], float(v), out=arrays[i], stream=s)
            expected[i] = expected[i] + v
        elif kind == "read" and arrays[i] is not None:
            reads.append((ex.add(arrays[i], 0.0, stream=s), expected[i].copy()))
        elif kind == "drop":
            arrays[i] = expected[i] = None
    for got, want in reads:
        np.testing.assert_array_equal(host(got), want)
    for got, want in zip(arrays, expected):
        if got is not None:
            np.testing.assert_array_equal(host(got), want)


def _zero(array, stream):
    """Sets a fresh (uninitialised, maybe poisoned) array to 0 on `stream`."""
    zeros = device.to_device(np.zeros(array.shape), stream=stream)
    ex.add(zeros, 0.0, out=array, stream=stream)


# ------------------------------------------------------------------ the simulator's switches


@pytest.mark.parametrize("variable, value, message", [
    ("UFUNCGEN_SIM_SYNC", "yes", "UFUNCGEN_SIM_SYNC must be 1"),
    ("UFUNCGEN_SIM_SEED", "-1", "UFUNCGEN_SIM_SEED must be a whole number"),
    ("UFUNCGEN_SIM_DELAY_US", "5ms", "UFUNCGEN_SIM_DELAY_US must be a whole number"),
])
def test_a_bad_simulator_setting_is_refused_naming_the_variable(variable, value, message):
    from .test_runtime import run_python
    probe = ("import ufuncgen._device as d\n"
             "try:\n"
             "    print(d.sim_is_async())\n"
             "except ValueError as e:\n"
             "    print(e)\n")
    result = run_python(probe, UFUNCGEN_DEVICE="sim", **{variable: value})
    assert result.stdout.startswith(message), result.stderr


def test_the_synchronous_mode_runs_everything_at_once():
    from .test_runtime import run_python
    probe = ("import numpy as np, ufuncgen._device as d, ufuncgen.examples as ex\n"
             "from ufuncgen import device\n"
             "s = device.Stream(non_blocking=True)\n"
             "d.sim_stall(s.handle, 5.0)\n"            # a no-op when synchronous
             "r = ex.add(device.to_device(np.arange(3.0)), 1.0, stream=s)\n"
             "print(d.sim_is_async(), r.copy_to_host().tolist())\n")
    result = run_python(probe, UFUNCGEN_DEVICE="sim", UFUNCGEN_SIM_SYNC="1")
    assert result.stdout == "False [1.0, 2.0, 3.0]\n", result.stderr
