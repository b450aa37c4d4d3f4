"""ufuncgen.device: device arrays, streams, and what the GPU (or the simulator) can do.

Every generated function runs on the device when any argument is a CUDA array: a CuPy array,
a PyTorch CUDA tensor, a Numba device array, anything with ``__cuda_array_interface__`` or a
CUDA DLPack export, or this module's own :class:`DeviceArray`::

    import numpy as np
    from ufuncgen import device
    from ufuncgen.examples import gaussian_pdf

    x = device.to_device(np.linspace(-3, 3, 1_000_000, dtype=np.float32))
    y = gaussian_pdf(x, 0.0, 1.0)          # a DeviceArray; runs asynchronously
    print(y.copy_to_host()[:3])            # copying back waits for the result

The backend is chosen once per process from ``UFUNCGEN_DEVICE``: ``cuda`` (the default: the
CUDA runtime, linked statically, so importing works on machines without a GPU or driver) or
``sim``, the simulator, which runs the very same kernels on the CPU with "device" memory in
host RAM: device code can be debugged there with gdb and printf, and CI tests the whole device
path with it.  Device calls never copy between host and device behind your back.
"""
from __future__ import annotations

import contextvars
from typing import Any, Callable

import numpy as np

from . import _device

DeviceArray = _device.DeviceArray
DeviceError = _device.DeviceError

__all__ = ["DeviceArray", "DeviceError", "Stream", "backend", "current_stream", "device_array",
           "device_count", "from_dlpack", "is_available", "register_stream_source",
           "synchronize", "to_device", "unavailable_reason"]

# The stream of `with Stream(...):` blocks, per thread and task; read by the device call.
_current_stream: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "ufuncgen.device.current_stream", default=None)
# The open blocks' (stream, token) pairs, innermost last, per thread and task too: a Stream
# may be entered by two tasks at once, and each must reset its own token.
_open_blocks: contextvars.ContextVar[tuple] = contextvars.ContextVar(
    "ufuncgen.device.open_blocks", default=())


def backend() -> str:
    """'cuda' or 'sim' (from UFUNCGEN_DEVICE)."""
    return _device.backend_name()


def is_available() -> bool:
    """Whether device calls can run: a GPU and driver for 'cuda'; always for 'sim'."""
    return _device.is_available()


def unavailable_reason() -> str | None:
    """Why :func:`is_available` is False, or None."""
    return _device.unavailable_reason()


def device_count() -> int:
    return _device.device_count()


class Stream:
    """A CUDA stream that this process creates and owns (``stream=`` takes it, or any CuPy,
    PyTorch or Numba stream, or a raw ``cudaStream_t`` int).

    The stream is destroyed once this object and every DeviceArray last used on it are gone
    (they hold its ``_device.OwnedStream``, not this object): a ``__del__`` here would run
    first when they are garbage together, in a reference cycle or at interpreter exit, and
    their frees would then be queued on a destroyed stream."""

    def __init__(self, device: int | None = None, *, non_blocking: bool = False):
        """A blocking stream orders with the legacy default stream, as cudaStreamCreate's
        do; ``non_blocking=True`` makes one that does not (like PyTorch's side streams)."""
        self._owned = _device.OwnedStream(_device_of(device), bool(non_blocking))
        self.device = self._owned.device
        self.handle = self._owned.handle

    def synchronize(self) -> None:
        _device.synchronize(self.handle)

    def __enter__(self) -> "Stream":
        """Calls in the block that get no ``stream=`` (and no array of a library with a
        current stream of its own) run on this stream."""
        _open_blocks.set(_open_blocks.get() + ((self, _current_stream.set(self)),))
        return self

    def __exit__(self, *exc) -> None:
        blocks = _open_blocks.get()
        if not blocks or blocks[-1][0] is not self:
            raise RuntimeError(f"{self!r} is not the innermost open `with` block of this "
                               "thread or task: blocks must close in the order they opened")
        _open_blocks.set(blocks[:-1])
        _current_stream.reset(blocks[-1][1])

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)

    def __repr__(self) -> str:
        return f"<ufuncgen.device.Stream {self.handle:#x} on device {self.device}>"


def current_stream():
    """The stream of the innermost ``with Stream(...):`` block, or None (the default stream)."""
    return _current_stream.get()


# type -> callable(array) returning the current stream of the array's library (an object
# stream= takes, or None).  The device call asks once per type (see _stream_source).
_stream_sources: dict[type, Callable[[Any], Any] | None] = {}


def register_stream_source(array_type: type, current_stream: Callable[[Any], Any]) -> None:
    """Tell ufuncgen where arrays of `array_type` expect their work queued: a call that gets
    such an array and no ``stream=`` runs on ``current_stream(array)``.  CuPy's and PyTorch's
    arrays are known already; this is for other libraries (and for tests)."""
    if not isinstance(array_type, type) or not callable(current_stream):
        raise TypeError("register_stream_source(array_type, current_stream): a type and a "
                        "callable")
    _stream_sources[array_type] = current_stream
    _device._forget_stream_sources()


def _torch_current_stream(tensor):
    """The raw handle of the current stream of the tensor's device, from PyTorch's C getter (as
    Triton and TorchInductor read it): torch.cuda.current_stream() builds a Stream object in
    Python, some 3 µs of a 13 µs call with a tensor out= on an H200."""
    import torch
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw_stream is None:                      # a PyTorch without it
        return torch.cuda.current_stream(tensor.device)
    return raw_stream(tensor.get_device())


def _cupy_current_stream(array):
    """The current stream of the array's device, asked by device id, not inside a
    `with array.device:` block, which sets the current device and sets it back."""
    import cupy
    try:
        return cupy.cuda.get_current_stream(array.device.id)
    except TypeError:                           # a CuPy whose get_current_stream takes no id
        with array.device:
            return cupy.cuda.get_current_stream()


def _stream_source(array_type: type):
    """The current-stream source of a type, or None (the call then uses ufuncgen's current
    stream, else the legacy default stream, which is also Numba's default)."""
    for base in array_type.__mro__:
        if base in _stream_sources:
            return _stream_sources[base]
    library = (getattr(array_type, "__module__", "") or "").partition(".")[0]
    return {"torch": _torch_current_stream, "cupy": _cupy_current_stream}.get(library)


def synchronize(stream=None) -> None:
    """Wait for the work queued on `stream`, or on the whole device when None."""
    _device.synchronize(None if stream is None else _device.stream_handle(stream))


def device_array(shape, dtype=np.float64, *, stream=None, device: int | None = None) -> DeviceArray:
    """An uninitialised C-contiguous DeviceArray, allocated in stream order.  `shape` is an int
    or a sequence of ints (anything with __index__: NumPy integers too), as NumPy takes it."""
    # NumPy knows the name "bfloat16" only once ml_dtypes is imported: the runtime imports it.
    if isinstance(dtype, type) and issubclass(dtype, np.dtype) and dtype is not np.dtype:
        dtype = dtype()     # a DType class (np.dtypes.Float64DType), as np.empty takes it
    if not (isinstance(dtype, str) and dtype == "bfloat16"):
        dtype = np.dtype(dtype)
    return _device.empty(shape, dtype, _device_of(device), _stream_arg(stream))


def to_device(array, *, stream=None, device: int | None = None) -> DeviceArray:
    """A DeviceArray holding a copy of the host array (C-contiguous)."""
    if _device.is_device_object(array):
        raise TypeError("to_device() takes a host array; this one is already on the device")
    host = np.asarray(array, order="C")
    handle = _device.stream_handle(stream)
    result = _device.empty(host.shape, host.dtype, _device_of(device), _stream_arg(stream))
    if host.nbytes:
        _device.memcpy_htod(result.ptr, host, host.nbytes, result.device, handle)
    return result


def from_dlpack(obj, *, stream=None) -> DeviceArray:
    """A DeviceArray viewing a CUDA DLPack producer's memory (no copy).

    The producer orders its work before `stream` (default: the legacy default stream), which
    the array then records as its last use: later calls on other streams wait for it, and its
    own exports name it."""
    if not hasattr(obj, "__dlpack__"):
        raise TypeError(f"from_dlpack() needs an object with __dlpack__, not {type(obj).__name__}")
    # Before __dlpack__(stream=...): a host producer refuses a CUDA stream in its own words.
    _device.check_dlpack_device(obj, "from_dlpack(obj)")
    handle = _device.stream_handle(stream)
    try:
        capsule = obj.__dlpack__(stream=handle or 1, max_version=(1, 0))
    except TypeError:
        capsule = obj.__dlpack__(stream=handle or 1)
    return _device.from_dlpack_capsule(capsule, stream=stream)


def as_device_array(obj) -> DeviceArray:
    """A DeviceArray viewing any CUDA array (``__cuda_array_interface__`` or DLPack), no copy."""
    return _device.as_device_array(obj, "as_device_array(obj)")


def _stream_arg(stream):
    """What _device.empty takes: the stream object itself (the array keeps it alive), or 0."""
    return 0 if stream is None else stream


def _device_of(device: int | None):
    """The current device for None; anything else as given, for the runtime to check (an int
    ordinal the backend has), naming the argument when it is not."""
    return _device.current_device() if device is None else device
