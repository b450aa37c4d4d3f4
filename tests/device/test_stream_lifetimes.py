"""How long a ufuncgen stream lives: until its Stream object and every DeviceArray last used on
it are gone, whatever order Python finalizes them in.

A DeviceArray is freed on the stream of its last use, so that stream must outlive the array.
Python's cyclic collector runs the finalizers of a batch of garbage before it clears anything
(PEP 442); a reference cycle holding a Stream and its arrays, and every module global at
interpreter exit once the script defines a function, is such a batch.  The simulator refuses
work queued on a destroyed stream (a free, a wait, a copy), in synchronous mode too, so each
of these tests fails where the stream dies first.  The interpreter-exit cases run as scripts,
whose stderr must stay empty (an error in a deallocator is only printed: the exit status is 0).
"""
import contextlib
import gc
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from ufuncgen import _device, device
import ufuncgen.examples as ex

from .conftest import STALLS, CapsuleProducer, ForeignArray, host, stalled, view

pytestmark = pytest.mark.skipif(device.backend() != "sim",
                                reason="the simulator reports work on a destroyed stream")

MODES = {"asynchronous": "0", "synchronous": "1"}


@contextlib.contextmanager
def unraisable_errors():
    """The errors reported as unraisable (a deallocator's) inside the block, as text."""
    seen = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(f"{u.exc_type.__name__}: {u.exc_value}")
    try:
        yield seen
    finally:
        sys.unraisablehook = previous


def run_script(source, mode):
    env = dict(os.environ, UFUNCGEN_DEVICE="sim", UFUNCGEN_SIM_SYNC=MODES[mode])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(source)], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def x(rng):
    return rng.standard_normal(1000)


# ------------------------------------------------------------------ interpreter exit


@pytest.mark.parametrize("mode", MODES)
def test_a_script_that_used_an_array_on_a_stream_and_defines_a_function_exits_cleanly(mode):
    result = run_script("""
        import numpy as np
        import ufuncgen.examples as ex
        from ufuncgen import device
        d = device.to_device(np.arange(6.0))
        s1 = device.Stream()
        ex.add(d, 1.0, stream=s1)
        def f():
            return 0
        print("end")
        """, mode)
    assert (result.returncode, result.stdout, result.stderr) == (0, "end\n", "")


@pytest.mark.parametrize("mode", MODES)
def test_the_readme_streams_example_in_a_script_with_a_function_exits_cleanly(mode):
    result = run_script("""
        import numpy as np
        from ufuncgen import device
        from ufuncgen.examples import gaussian_pdf

        def main():
            pass

        x = device.to_device(np.arange(1e6))
        s = device.Stream()
        y = gaussian_pdf(x, 0.0, 2.0, stream=s)
        print(y.copy_to_host()[:2])
        """, mode)
    assert result.returncode == 0 and result.stderr == "", result.stderr


# ------------------------------------------------------------------ garbage cycles


def test_a_reference_cycle_holding_a_stream_and_its_arrays_is_collected_without_an_error(x):
    class Model:
        pass

    with unraisable_errors() as errors:
        m = Model()
        m.me = m
        m.stream = device.Stream()
        m.x = device.to_device(x)
        m.y = ex.add(m.x, 1.0, stream=m.stream)     # x is only used on the stream
        np.testing.assert_array_equal(host(m.y), x + 1)
        del m
        gc.collect()
        device.synchronize()
    assert errors == []


def test_an_array_used_through_another_librarys_wrapper_of_the_stream_survives_a_cycle(x):
    """A CuPy-like stream object naming a ufuncgen stream's handle: the arrays keep the
    stream itself, not the wrapper that the collector may clear first."""
    with unraisable_errors() as errors:
        s = device.Stream()
        wrapper = types.SimpleNamespace(ptr=s.handle, owns=s)
        wrapper.me = wrapper
        wrapper.d = device.to_device(x)
        ex.add(wrapper.d, 1.0, out=wrapper.d, stream=wrapper)
        del s, wrapper
        gc.collect()
        device.synchronize()
    assert errors == []


# ------------------------------------------------------------------ plain lifetimes


def test_an_array_used_on_a_stream_outlives_the_stream_object(x):
    with unraisable_errors() as errors:
        d = device.to_device(x)
        s = device.Stream(non_blocking=True)
        ex.add(d, 1.0, out=d, stream=s)
        del s
        gc.collect()
        np.testing.assert_array_equal(host(ex.add(d, 0.0)), x + 1)   # waits for the stream
        del d
        device.synchronize()
    assert errors == []


def test_an_array_copied_to_the_host_on_a_stream_keeps_that_stream_for_its_free(x):
    """copy_to_host(stream=s) of a strided view uses the array on s, naming the stream by
    its handle only."""
    with unraisable_errors() as errors:
        base = device.to_device(np.repeat(x, 2))
        strided = view(base, x.shape, (16,))
        s = device.Stream()
        np.testing.assert_array_equal(strided.copy_to_host(stream=s.handle), x)
        del s
        gc.collect()
        del strided, base
        device.synchronize()
    assert errors == []


def test_a_stream_is_destroyed_once_its_object_and_its_last_array_are_gone(x):
    s = device.Stream()
    handle = s.handle
    d = ex.add(device.to_device(x), 1.0, stream=s)
    del s
    np.testing.assert_array_equal(host(ex.add(d, 0.0, stream=handle)), x + 1)   # still alive
    del d
    with pytest.raises(device.DeviceError, match=f"stream {handle:#x}.*destroyed"):
        ex.add(device.to_device(x), 1.0, stream=handle)


def test_a_stream_no_array_used_is_destroyed_with_its_object(x):
    s = device.Stream()
    handle = s.handle
    del s
    with pytest.raises(device.DeviceError, match=f"stream {handle:#x}.*destroyed"):
        ex.add(device.to_device(x), 1.0, stream=handle)


# ------------------------------------------------------------------ the simulator's checks


@pytest.mark.parametrize("mode", MODES)
def test_the_simulator_refuses_a_free_a_wait_and_a_kernel_on_a_destroyed_stream_in_either_mode(
        mode):
    result = run_script("""
        import numpy as np
        import ufuncgen.examples as ex
        from ufuncgen import _device, device
        h = _device.stream_create()
        d = device.to_device(np.arange(4.0))
        ex.add(d, 1.0, out=d, stream=h)         # d is now freed on h
        _device.stream_destroy(h)
        for name, work in [("kernel", lambda: ex.add(d, 1.0, stream=h)),
                           ("wait", lambda: _device.stream_wait(0, h)),
                           ("synchronize", lambda: device.synchronize(h))]:
            try:
                work()
                print(name, "accepted")
            except device.DeviceError as e:
                print(name, "refused:", "destroyed" in str(e))
        del d                                   # its free is reported as unraisable
        """, mode)
    assert result.stdout.splitlines() == ["kernel refused: True", "wait refused: True",
                                          "synchronize refused: True"]
    assert "freeing a device array" in result.stderr and "destroyed" in result.stderr


# ------------------------------------------------------------------ the simulator's stream table

# Work must still be queued when the stream is destroyed: the asynchronous simulator's.
queued_work = pytest.mark.skipif(device.backend() != "sim" or not _device.sim_is_async(),
                                 reason="needs the asynchronous simulator (not "
                                        "UFUNCGEN_SIM_SYNC=1)")


@queued_work
def test_destroyed_streams_leave_the_simulators_table_once_their_work_has_run(x):
    device.synchronize()
    before = _device._sim_stream_count()
    for _ in range(50):
        s = device.Stream(non_blocking=True)
        ex.add(device.to_device(x, stream=s), 1.0, stream=s)    # freed on s, then s goes
        del s
    for late in STALLS:
        handle = _device.stream_create()
        still_held = stalled(handle, late)
        _device.stream_destroy(handle)              # its queued work still runs
        counted = _device._sim_stream_count()
        conclusive = still_held()
        device.synchronize()
        assert _device._sim_stream_count() == before
        if conclusive:
            assert counted >= before + 1, "the stream left the table with its work queued"
            break
    else:
        pytest.fail(f"no check came within {late} s of its stall")
    with pytest.raises(device.DeviceError, match=f"stream {handle:#x}.*destroyed"):
        ex.add(device.to_device(x), 1.0, stream=handle)     # gone, and still refused


@queued_work
def test_a_destroyed_stream_stays_in_the_table_while_an_event_or_a_wait_names_it(x):
    """Work kept alive for a stream (a library array used on it) holds an event on it, and a
    stream waiting for it holds a wait: the stream leaves the table after both."""
    device.synchronize()
    before = _device._sim_stream_count()
    for late in STALLS:
        s, consumer = device.Stream(non_blocking=True), device.Stream(non_blocking=True)
        still_held = stalled(s.handle, late)
        library_array = ForeignArray(device.to_device(x))
        result = ex.add(library_array, 1.0, stream=s)   # keeps library_array: an event on s
        _device.stream_wait(consumer.handle, s.handle)  # a wait on s, queued on consumer
        later = ex.add(result, 1.0, stream=consumer)
        del s, library_array, result
        gc.collect()
        kept = _device._kept_count()
        conclusive = still_held()
        np.testing.assert_array_equal(host(later), (x + 1) + 1)
        del consumer, later
        device.synchronize()
        assert _device._kept_count() == 0
        assert _device._sim_stream_count() == before
        if conclusive:
            assert kept >= 1, "the library array was let go before s had run the add"
            return
    pytest.fail(f"no check came within {late} s of its stall")


# ------------------------------------------------------------------ foreign memory and streams


class OwningForeignArray:
    """A library's array that owns its memory and frees it, on the legacy stream, when it dies
    (as a Numba device array does); no stream source is registered for it."""

    def __init__(self, values):
        self._memory = device.to_device(values)
        self.__cuda_array_interface__ = dict(shape=values.shape, typestr=values.dtype.str,
                                             data=(self._memory.ptr, False), version=3,
                                             strides=None, stream=1)


@pytest.mark.parametrize("how", ["stream=", "with block"])
def test_a_foreign_array_outlives_a_call_queued_late_on_a_stream_its_library_does_not_know(
        how, x):
    """A `with device.Stream():` block's stream is as unknown to the array's library as one
    given by stream=: the array is kept until the stream has run the call."""
    for seconds in STALLS:
        s = device.Stream(non_blocking=True)
        foreign = OwningForeignArray(x)
        device.synchronize()
        still_stalled = stalled(s.handle, seconds)
        if how == "stream=":
            y = ex.add(foreign, 1.0, stream=s)
            total = ex.add.reduce(foreign, stream=s)
        else:
            with s:
                y = ex.add(foreign, 1.0)
                total = ex.add.reduce(foreign)
        del foreign
        gc.collect()
        if still_stalled():
            break
    np.testing.assert_array_equal(host(y), x + 1.0)
    np.testing.assert_allclose(host(total), x.sum())


class LibraryStream:
    """Another library's stream object: its CUDA stream is destroyed when it dies (CuPy's)."""

    def __init__(self):
        self.handle = _device.stream_create()

    def __del__(self):
        _device.stream_destroy(self.handle)


def test_a_dlpack_copy_keeps_another_librarys_stream_until_its_free_is_queued(x):
    with unraisable_errors() as errors:
        library_stream = LibraryStream()
        y = ex.add(device.to_device(x), 1.0, stream=library_stream)
        producer = CapsuleProducer(y.__dlpack__(copy=True))
        del y, library_stream
        gc.collect()
        imported = device.from_dlpack(producer)
        np.testing.assert_array_equal(host(imported), x + 1.0)
        del imported, producer
        gc.collect()
        device.synchronize()
    assert errors == []
