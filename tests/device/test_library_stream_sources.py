"""Where a call without stream= runs for PyTorch's and CuPy's arrays: their library's current
stream on the array's device, asked the cheap way (python/ufuncgen/device.py's stream
sources), and the old way on library versions without it.  The libraries here are stand-ins
installed as the modules `torch` and `cupy`; the real ones run the same sources on a GPU
(tests/device/test_gpu_libraries.py, shared/gpu/validate.sh's stream probes)."""
import sys
import types

import pytest

from ufuncgen import device


def _array_type(module_name):
    """A class whose arrays the device call would ask `module_name`'s stream source about."""
    return type("Array", (), {"__module__": module_name})


class FakeTorch(types.ModuleType):
    def __init__(self, with_raw_getter):
        super().__init__("torch")
        self.asked = []
        self._C = types.SimpleNamespace()
        if with_raw_getter:
            self._C._cuda_getCurrentRawStream = self._raw_stream
        self.cuda = types.SimpleNamespace(current_stream=self._current_stream)

    def _raw_stream(self, index):
        self.asked.append(("raw", index))
        return 0x5000 + index

    def _current_stream(self, where):
        self.asked.append(("current_stream", where))
        return types.SimpleNamespace(cuda_stream=0x6000)


class FakeTensor:
    __module__ = "torch"
    device = "cuda:3"

    def get_device(self):
        return 3


@pytest.mark.parametrize("with_raw_getter", [True, False])
def test_a_torch_tensor_runs_on_the_current_stream_of_its_device(monkeypatch, with_raw_getter):
    torch = FakeTorch(with_raw_getter)
    monkeypatch.setitem(sys.modules, "torch", torch)
    source = device._stream_source(FakeTensor)
    stream = source(FakeTensor())
    if with_raw_getter:
        # the raw handle, an int that stream= takes as it is, for device 3
        assert stream == 0x5003 and torch.asked == [("raw", 3)]
    else:
        assert stream.cuda_stream == 0x6000 and torch.asked == [("current_stream", "cuda:3")]


class FakeCupyDevice:
    def __init__(self, log, id):
        self.log, self.id = log, id

    def __enter__(self):
        self.log.append(("enter", self.id))

    def __exit__(self, *exc):
        self.log.append(("exit", self.id))


def _fake_cupy(takes_device_id):
    log = []

    def get_current_stream(*args):
        if args and not takes_device_id:
            raise TypeError("get_current_stream() takes no arguments (1 given)")
        log.append(("get_current_stream",) + args)
        return types.SimpleNamespace(ptr=0x7000)

    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(get_current_stream=get_current_stream)
    return cupy, log


@pytest.mark.parametrize("takes_device_id", [True, False])
def test_a_cupy_array_runs_on_the_current_stream_of_its_device(monkeypatch, takes_device_id):
    cupy, log = _fake_cupy(takes_device_id)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    Array = _array_type("cupy._core.core")
    array = Array()
    array.device = FakeCupyDevice(log, 2)
    stream = device._stream_source(Array)(array)
    assert stream.ptr == 0x7000
    if takes_device_id:
        # asked by id: the current device is neither set nor set back
        assert log == [("get_current_stream", 2)]
    else:
        assert log == [("enter", 2), ("get_current_stream",), ("exit", 2)]


def test_other_libraries_have_no_stream_source_of_their_own():
    assert device._stream_source(_array_type("numba.cuda.cudadrv.devicearray")) is None
    assert device._stream_source(_array_type("jax")) is None
