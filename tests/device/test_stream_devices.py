"""A stream of another device than the data's is refused before anything is queued.

CUDA launches a kernel only on a stream of the current device (cudaErrorInvalidResourceHandle
otherwise), and cudaMallocAsync takes its memory from the pool of the stream's device, so an
array asked for on one device would be made on another.  ufuncgen checks every call,
allocation and copy whose stream's device it can tell (a ufuncgen Stream knows its own; the
backend knows the others it can: the simulator its streams, CUDA 12.8's cudaStreamGetDevice)
and says which two devices disagree.  The simulator refuses such a launch as CUDA does.
"""
import numpy as np
import pytest

from ufuncgen import _device, device
import ufuncgen.examples as ex

from .conftest import host

pytestmark = pytest.mark.skipif(device.backend() != "sim" or device.device_count() < 2,
                                reason="needs two simulated devices")

MISMATCH = (r"is a stream of CUDA device {stream}, but {data} CUDA device {device}; CUDA runs "
            r"work only on a stream of the device it is for")


def mismatch(prefix, stream, data, device_ordinal, stream_device):
    return (prefix + r" 0x[0-9a-f]+ " +
            MISMATCH.format(stream=stream_device, data=data, device=device_ordinal))


@pytest.fixture
def on_device_1():
    """A stream of device 1, as a ufuncgen Stream and as a bare handle only the backend can
    place."""
    stream = device.Stream(device=1)
    handle = _device.stream_create(1)
    yield {"Stream": stream, "handle": handle}
    device.synchronize()
    _device.stream_destroy(handle)


STREAM_KINDS = ["Stream", "handle"]


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_a_call_on_a_stream_of_another_device_names_both_devices(on_device_1, kind):
    x = device.to_device(np.arange(3.0))
    out = device.to_device(np.full(3, 7.0))
    with pytest.raises(ValueError, match=mismatch("add: stream=", 1, "the call's arrays are on",
                                                  0, 1)):
        ex.add(x, 1.0, out=out, stream=on_device_1[kind])
    np.testing.assert_array_equal(host(out), np.full(3, 7.0))     # nothing was written


def test_a_current_stream_of_another_device_is_refused_as_the_current_stream(on_device_1):
    x = device.to_device(np.arange(3.0))
    with on_device_1["Stream"]:
        with pytest.raises(ValueError, match=mismatch("add: the current stream", 1,
                                                      "the call's arrays are on", 0, 1)):
            ex.add(x, 1.0)


METHODS = {
    "add.reduce": (lambda a, s: ex.add.reduce(a, stream=s), "argument 'array' is on"),
    "add.accumulate": (lambda a, s: ex.add.accumulate(a, stream=s), "argument 'array' is on"),
    "add.reduceat": (lambda a, s: ex.add.reduceat(a, [0, 1], stream=s),
                     "argument 'array' is on"),
    "add.at": (lambda a, s: ex.add.at(a, [0], 1.0, stream=s), "argument 'a' is on"),
}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_a_reduction_accumulation_or_at_on_a_stream_of_another_device_is_refused(
        on_device_1, method, kind):
    call, data = METHODS[method]
    a = device.to_device(np.arange(4.0))
    with pytest.raises(ValueError, match=mismatch(method + ": stream=", 1, data, 0, 1)):
        call(a, on_device_1[kind])
    np.testing.assert_array_equal(host(a), np.arange(4.0))


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_an_array_asked_for_on_one_device_with_a_stream_of_another_is_refused(on_device_1, kind):
    with pytest.raises(ValueError, match=mismatch("stream=", 1, "device= is", 0, 1)):
        device.to_device(np.zeros(3), device=0, stream=on_device_1[kind])
    with pytest.raises(ValueError, match=mismatch("stream=", 1, "device= is", 0, 1)):
        device.device_array(3, device=0, stream=on_device_1[kind])


def test_the_hunters_case_a_device_1_array_on_a_device_0_stream_is_refused():
    with pytest.raises(ValueError, match=mismatch("stream=", 0, "device= is", 1, 0)):
        device.to_device(np.zeros(3), device=1, stream=device.Stream(device=0))


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_a_copy_to_the_host_on_a_stream_of_another_device_is_refused(on_device_1, kind):
    a = device.to_device(np.arange(3.0))
    stream = on_device_1[kind]
    handle = stream if isinstance(stream, int) else stream.handle
    with pytest.raises(ValueError, match=mismatch("copy_to_host: stream=", 1,
                                                  "the array is on", 0, 1)):
        a.copy_to_host(stream=handle)


@pytest.mark.parametrize("kind", STREAM_KINDS)
def test_setting_an_arrays_stream_to_one_of_another_device_is_refused_there(on_device_1, kind):
    # It was taken, and the array's next copy failed blaming a stream= nobody passed.
    a = device.to_device(np.arange(3.0))
    before = a.stream
    with pytest.raises(ValueError, match=mismatch("DeviceArray.stream:", 1, "the array is on",
                                                  0, 1)):
        a.stream = on_device_1[kind]
    assert a.stream == before
    np.testing.assert_array_equal(a.copy_to_host(), np.arange(3.0))
    own = device.Stream(device=0)
    a.stream = own                                     # one of its own device is taken
    assert a.stream == own.handle


def test_from_dlpack_with_a_stream_of_another_device_is_refused(on_device_1):
    with pytest.raises(ValueError, match=mismatch("from_dlpack_capsule: stream=", 1,
                                                  "the tensor is on", 0, 1)):
        device.from_dlpack(device.to_device(np.arange(3.0)), stream=on_device_1["Stream"])


def test_streams_of_the_datas_device_and_the_default_streams_are_taken(on_device_1):
    x1 = device.to_device(np.arange(3.0), device=1, stream=on_device_1["Stream"])
    for stream in (on_device_1["Stream"], on_device_1["handle"], None, 0, 1, 2):
        np.testing.assert_array_equal(host(ex.add(x1, 1.0, stream=stream)), np.arange(3.0) + 1)
    assert x1.device == 1


def test_the_simulator_refuses_a_kernel_on_a_stream_of_another_device_as_cuda_does(on_device_1):
    a = device.to_device(np.arange(3.0))
    b = device.to_device(np.zeros(3))
    with pytest.raises(device.DeviceError, match="cudaErrorInvalidResourceHandle"):
        _device.launch_cast(0, on_device_1["handle"], (3,), a.ptr, (8,), a.dtype, b.ptr, (8,),
                            b.dtype)
    np.testing.assert_array_equal(host(b), np.zeros(3))
