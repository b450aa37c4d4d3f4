"""How long a view of another producer's memory holds that producer, and what it records.

A view made by `device.from_dlpack` or `device.as_device_array` keeps its producer alive (a
DLPack deleter not yet run, or the foreign array itself).  A call may use the view on a stream
its producer knows nothing of; the producer, once let go, frees its memory ordered on its own
stream only.  So the view lets go only when the stream of its last use has passed that work,
as ufuncgen's own arrays free stream-ordered.  Under the asynchronous simulator a late stream
(`_device.sim_stall`) makes the free overtake the read wherever that is not so, which it then
reports by name; so each test here fails deterministically under the old rule.

The producers are stand-ins: ufuncgen's own DeviceArray, an array of another library with
only `__cuda_array_interface__` (conftest.ForeignArray), and one with only DLPack whose
deleter is Python code (a ctypes callback), as a library written in Python has.
"""
import ctypes
import gc
import weakref

import numpy as np
import pytest

from ufuncgen import _device, device
import ufuncgen.examples as ex

from .conftest import STALLS, ForeignArray, host, stalled
from .dlpack_capsules import (DELETER, KDLCUDA, KDLFLOAT, DLDataType, DLDevice,
                              DLManagedTensor, DLTensor)

pytestmark = pytest.mark.skipif(
    device.backend() != "sim" or not _device.sim_is_async(),
    reason="needs the asynchronous simulator (UFUNCGEN_DEVICE=sim, not UFUNCGEN_SIM_SYNC=1)")

LATE = 0.05     # seconds a stream is held: far longer than any unordered free takes


# ------------------------------------------------------------------ a DLPack-only library


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]



class DLPackLibraryArray:
    """A float64 array of a CUDA library that speaks only DLPack.  Its memory (a DeviceArray
    that nothing else holds) goes back to the library's allocator, freed on the library's own
    stream, once the array object and every export of it are gone; an export lasts until the
    consumer calls its deleter, a Python function."""

    exports = {}        # address of a managed tensor -> (the tensor, its shape, the memory)
    deleted = []        # addresses whose deleter ran, in order

    def __init__(self, values, stream=None):
        self._memory = device.to_device(np.asarray(values, np.float64), stream=stream)
        self._stream = 0 if stream is None else stream.handle

    def __dlpack_device__(self):
        return (KDLCUDA, self._memory.device)

    def __dlpack__(self, stream=None, **kwargs):
        # The producer's side of the protocol: the consumer's stream waits for the library's.
        consumer = 0 if stream in (None, 1) else stream
        if stream != -1 and consumer != self._stream:
            _device.stream_wait(consumer, self._stream)
        shape = (ctypes.c_int64 * 1)(self._memory.size)
        tensor = DLManagedTensor(
            DLTensor(self._memory.ptr, DLDevice(KDLCUDA, self._memory.device), 1,
                      DLDataType(KDLFLOAT, 64, 1), shape, None, 0),
            None, _deleter)
        self.exports[ctypes.addressof(tensor)] = (tensor, shape, self._memory)
        return _capsule_new(ctypes.addressof(tensor), b"dltensor", None)


@DELETER
def _deleter(address):
    DLPackLibraryArray.deleted.append(address)
    del DLPackLibraryArray.exports[address]


# ------------------------------------------------------------------ producers and views


def own_array(values):
    return device.to_device(values)


def cai_library_array(values):
    return ForeignArray(device.to_device(values))


PRODUCERS = {"DeviceArray": own_array, "CAI library": cai_library_array,
             "DLPack library": DLPackLibraryArray}
VIEWS = {"from_dlpack": device.from_dlpack, "as_device_array": device.as_device_array}
CASES = [(producer, view) for producer in PRODUCERS for view in VIEWS
         if (producer, view) != ("CAI library", "from_dlpack")]    # it has no __dlpack__


@pytest.fixture
def x(rng):
    return rng.standard_normal(4096)


@pytest.fixture(autouse=True)
def nothing_kept_over():
    """Every test starts and ends with nothing kept for queued work, and no export alive."""
    device.synchronize()
    yield
    gc.collect()
    device.synchronize()
    assert _device._kept_count() == 0
    assert DLPackLibraryArray.exports == {}


# ------------------------------------------------------------------ stream-ordered release


@pytest.mark.parametrize("producer, view", CASES)
def test_a_dropped_view_lets_go_of_its_producer_only_after_its_last_kernel(x, producer, view):
    s = device.Stream(non_blocking=True)
    source = PRODUCERS[producer](x)
    device.synchronize()
    imported = VIEWS[view](source)
    _device.sim_stall(s.handle, LATE)
    result = ex.add(imported, 1.0, stream=s)    # reads the producer's memory, late, on s
    del imported, source                        # the producer would free it on its own stream
    gc.collect()
    np.testing.assert_array_equal(host(result), x + 1)
    device.synchronize()


@pytest.mark.parametrize("producer, view", CASES)
def test_a_view_in_a_reference_cycle_lets_go_of_its_producer_in_stream_order(x, producer,
                                                                               view):
    s = device.Stream(non_blocking=True)
    source = PRODUCERS[producer](x)
    device.synchronize()
    holder = type("Holder", (), {})()
    holder.view = VIEWS[view](source)
    holder.me = holder                          # the collector clears the view's owner
    _device.sim_stall(s.handle, LATE)
    result = ex.add(holder.view, 1.0, stream=s)
    del holder, source
    gc.collect()
    np.testing.assert_array_equal(host(result), x + 1)


def test_a_dlpack_producers_deleter_runs_once_when_the_stream_has_passed_the_views_work(x):
    for late in STALLS:
        s = device.Stream(non_blocking=True)
        source = DLPackLibraryArray(x)
        imported = device.from_dlpack(source)
        (address,) = DLPackLibraryArray.exports
        earlier = len(DLPackLibraryArray.deleted)   # a retry's tensor may reuse an address
        still_held = stalled(s.handle, late)
        ex.add(imported, 1.0, stream=s)
        del imported
        gc.collect()
        deleted_early = address in DLPackLibraryArray.deleted[earlier:]
        conclusive = still_held()
        device.synchronize()
        assert DLPackLibraryArray.deleted[earlier:].count(address) == 1
        if conclusive:
            assert not deleted_early, "the deleter ran before s had run the add"
            return
    pytest.fail(f"no check came within {late} s of its stall")


def test_a_dlpack_operand_passed_to_a_call_is_released_after_the_calls_work(x):
    """The call's own import of a DLPack operand: its deleter waits for the call's stream,
    with stream= or without (here: a ufuncgen stream block)."""
    s = device.Stream(non_blocking=True)
    source = DLPackLibraryArray(x)
    device.synchronize()
    _device.sim_stall(s.handle, LATE)
    with s:
        result = ex.add(source, 1.0)
    del source
    gc.collect()
    np.testing.assert_array_equal(host(result), x + 1)


# ------------------------------------------------------------------ the consumer's stream


@pytest.mark.parametrize("producer", ["DeviceArray", "DLPack library"])
def test_from_dlpack_with_a_stream_records_it_as_the_arrays_last_use(x, producer):
    p, s = device.Stream(non_blocking=True), device.Stream(non_blocking=True)
    _device.sim_stall(p.handle, LATE)
    source = (device.to_device(x, stream=p) if producer == "DeviceArray"
              else DLPackLibraryArray(x, stream=p))     # written on p, late
    imported = device.from_dlpack(source, stream=s)     # s waits for p
    assert imported.stream == s.handle
    assert imported.__cuda_array_interface__["stream"] == s.handle
    result = ex.add(imported, 1.0)              # the legacy default stream: waits for s
    np.testing.assert_array_equal(host(result), x + 1)
    del imported, source


def test_from_dlpack_keeps_a_stream_object_it_was_given_alive(x):
    class LibraryStream:                        # another library's stream object
        def __init__(self):
            self.handle = _device.stream_create()

    stream = LibraryStream()
    imported = device.from_dlpack(device.to_device(x), stream=stream)
    alive = weakref.ref(stream)
    del stream
    gc.collect()
    assert alive() is not None
    del imported
    gc.collect()
    device.synchronize()
    assert alive() is None


# ------------------------------------------------------------------ errors with DLPack operands


FAILING_CALLS = {
    "operands that do not broadcast": (
        ValueError, "could not be broadcast",
        lambda a: ex.add(a, device.to_device(np.zeros(5)))),
    "an out= of another shape": (
        ValueError, "output 'sum' has shape",
        lambda a: ex.add(a, 1.0, out=device.to_device(np.zeros(5)))),
    "an argument of a wrong type": (
        TypeError, "argument 'y' is a str",
        lambda a: ex.add(a, "a")),
    "a cast the casting rule refuses": (
        TypeError, "Cannot cast",
        lambda a: ex.add(a, 1.0, out=device.to_device(np.zeros(6, np.int32)))),
    "a reduction over an axis it lacks": (
        np.exceptions.AxisError, "axis 3 is out of bounds",
        lambda a: ex.add.reduce(a, axis=3)),
    "an .at index out of bounds": (
        IndexError, "index 10 is out of bounds",
        lambda a: ex.add.at(a, [10], 1.0)),
}


@pytest.mark.parametrize("case", FAILING_CALLS)
def test_an_error_in_a_call_with_a_dlpack_operand_is_raised_and_the_deleter_runs(case):
    error, message, call = FAILING_CALLS[case]
    source = DLPackLibraryArray(np.arange(6.0))
    before = len(DLPackLibraryArray.deleted)
    with pytest.raises(error, match=message):
        call(source)
    device.synchronize()
    assert len(DLPackLibraryArray.deleted) == before + 1
