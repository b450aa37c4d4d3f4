"""What a device call's arguments are: CUDA buffers, scalars passed by value, or mistakes.

Every argument of a device call is turned into a `Buffer` (a CUDA buffer: ufuncgen's
DeviceArray, anything with `__cuda_array_interface__`, or a DLPack producer on a CUDA device)
or a `Scalar` (a Python or NumPy scalar, passed to the kernel by value, never copied to the
device).  Anything else is refused with a message that names the argument and says how to
move it; nothing is ever copied between host and device behind the caller's back.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _device

# The element types generated kernels are compiled for (ufuncgen.gen.element_types).
SUPPORTED_DTYPES = frozenset(np.dtype(n) for n in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64"))

_CAI_REQUIRED = ("shape", "typestr", "data", "version")
_LEGACY_DEFAULT_STREAM = 1      # CAI v3 spells the legacy default stream 1 (0 is disallowed)


@dataclass
class Buffer:
    """A strided view of device memory."""
    obj: object                 # what the caller passed
    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]    # bytes
    dtype: np.dtype
    device: int
    readonly: bool
    stream: int | None          # the producer's stream to wait on (CAI v3), None: nothing to wait for
    owner: object = None        # keeps imported (DLPack) memory alive

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def extent(self) -> tuple[int, int]:
        """[lo, hi): the bytes this view can touch."""
        lo = hi = self.ptr
        for n, s in zip(self.shape, self.strides):
            if n == 0:
                return self.ptr, self.ptr
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
        return lo, hi + self.dtype.itemsize


@dataclass
class Scalar:
    """A scalar argument, passed to the kernel by value."""
    obj: object
    dtype_hint: object          # what type resolution sees: int/float/bool (weak) or a dtype


def type_name(obj: object) -> str:
    t = type(obj)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def is_device_object(obj: object) -> bool:
    if isinstance(obj, _device.DeviceArray):
        return True
    t = type(obj)
    if hasattr(t, "__cuda_array_interface__"):
        return True
    if hasattr(t, "__dlpack_device__"):
        try:
            kind = obj.__dlpack_device__()[0]
        except Exception:
            return False
        return int(kind) in (2, 13)
    return False


def classify(obj: object, what: str, device_hint: str) -> Buffer | Scalar:
    """`what` names the argument in messages ("argument 'x'"); `device_hint` says where the
    call's device data lives ("argument 'x' is on CUDA device 0")."""
    if isinstance(obj, np.generic):
        if obj.dtype not in SUPPORTED_DTYPES:
            raise TypeError(f"{what} is a NumPy {obj.dtype} scalar; device kernels take "
                            f"{_supported_names()}")
        return Scalar(obj, obj.dtype)
    if isinstance(obj, bool):
        return Scalar(obj, np.dtype(bool))
    if isinstance(obj, (int, float)):
        return Scalar(obj, type(obj))       # "weak": the arrays' dtypes decide (NEP 50)
    if isinstance(obj, complex):
        raise TypeError(f"{what} is a complex number; device kernels take {_supported_names()}")
    if is_device_object(obj):
        return buffer_of(obj, what)
    if isinstance(obj, np.ndarray):
        raise TypeError(
            f"{what} is a host numpy.ndarray, but {device_hint}: host and device arrays do not "
            "mix. Move it with ufuncgen.device.to_device(...) (or cupy.asarray, "
            "torch.as_tensor(..., device='cuda')), or pass a Python scalar")
    raise TypeError(f"{what} is a {type_name(obj)}, which is neither a CUDA buffer nor a "
                    f"scalar, but {device_hint}; device calls take CUDA arrays "
                    "(__cuda_array_interface__ or DLPack) and Python scalars")


def _supported_names() -> str:
    return ", ".join(sorted(str(d) for d in SUPPORTED_DTYPES))


def check_dtype(dtype: np.dtype, what: str) -> None:
    if dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"{what} has dtype {dtype}, which device kernels do not support "
                        f"(supported: {_supported_names()})")


def buffer_of(obj: object, what: str) -> Buffer:
    if isinstance(obj, _device.DeviceArray):
        return Buffer(obj, obj.ptr, tuple(obj.shape), tuple(obj.strides), obj.dtype,
                      obj.device, obj.readonly, None)
    if hasattr(type(obj), "__cuda_array_interface__"):
        return _from_cuda_array_interface(obj, what)
    try:
        imported = _device.from_dlpack_capsule(obj.__dlpack__())
    except (TypeError, ValueError, BufferError) as error:
        raise type(error)(f"{what}: {error}") from None
    buffer = buffer_of(imported, what)
    buffer.obj, buffer.owner = obj, imported
    return buffer


def _from_cuda_array_interface(obj: object, what: str) -> Buffer:
    try:
        cai = obj.__cuda_array_interface__
    except Exception as error:
        raise TypeError(f"{what}: reading __cuda_array_interface__ failed: {error}") from error
    where = f"{what} ({type_name(obj)}): __cuda_array_interface__"
    if not isinstance(cai, dict):
        raise TypeError(f"{where} must be a dict, not {type_name(cai)}")
    missing = [k for k in _CAI_REQUIRED if k not in cai]
    if missing:
        raise ValueError(f"{where} lacks the required key(s) {', '.join(map(repr, missing))}")
    shape = _int_tuple(cai["shape"], f"{where}['shape']")
    if any(n < 0 for n in shape):
        raise ValueError(f"{where}['shape'] has a negative extent: {cai['shape']!r}")
    try:
        dtype = np.dtype(cai["typestr"])
    except TypeError:
        raise ValueError(f"{where}['typestr'] {cai['typestr']!r} is not a valid type string") from None
    if not dtype.isnative:
        raise ValueError(f"{where}['typestr'] {cai['typestr']!r} is not in native byte order")
    check_dtype(dtype, what)
    data = cai["data"]
    if (not isinstance(data, tuple) or len(data) != 2 or not isinstance(data[0], int)
            or not isinstance(data[1], bool)):
        raise ValueError(f"{where}['data'] must be a (pointer: int, read_only: bool) tuple, "
                         f"not {data!r}")
    ptr, readonly = data
    strides = cai.get("strides")
    if strides is None:
        strides = c_strides(shape, dtype.itemsize)
    else:
        strides = _int_tuple(strides, f"{where}['strides']")
        if len(strides) != len(shape):
            raise ValueError(f"{where}['strides'] has {len(strides)} entries for "
                             f"{len(shape)} dimensions")
    if cai.get("mask") is not None:
        raise ValueError(f"{where} has a mask; masked device arrays are not supported")
    stream = cai.get("stream")
    if stream is not None:
        if not isinstance(stream, int) or isinstance(stream, bool):
            raise ValueError(f"{where}['stream'] must be an int or None, not {stream!r}")
        if stream == 0:
            raise ValueError(f"{where}['stream'] is 0, which the protocol disallows "
                             "(1 is the legacy default stream, 2 the per-thread one)")
    if ptr == 0 and 0 not in shape:
        raise ValueError(f"{where}['data'] is a null pointer for a non-empty array")
    device = _device.pointer_device(ptr) if ptr else _device.current_device()
    if device < 0:
        raise ValueError(f"{what} ({type_name(obj)}): its pointer {ptr:#x} is not device memory")
    return Buffer(obj, ptr, shape, strides, dtype, device, readonly, stream)


def _int_tuple(value: object, where: str) -> tuple[int, ...]:
    if not isinstance(value, tuple) or not all(isinstance(v, int) and not isinstance(v, bool)
                                               for v in value):
        raise ValueError(f"{where} must be a tuple of ints, not {value!r}")
    return value


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def check_alignment(buffer: Buffer, what: str) -> None:
    """CUDA loads an element only from an address that is a multiple of its size."""
    size = buffer.dtype.itemsize
    if buffer.size and (buffer.ptr % size or any(s % size for n, s in zip(buffer.shape, buffer.strides) if n > 1)):
        raise ValueError(f"{what} is misaligned for {buffer.dtype} (pointer {buffer.ptr:#x}, "
                         f"strides {buffer.strides}): device kernels need every element at a "
                         f"multiple of {size} bytes")


def stream_handle(stream: object) -> int:
    """The raw cudaStream_t of the objects CUDA libraries use for streams."""
    if stream is None:
        return 0
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return int(stream.__cuda_stream__()[1])
    for attribute in ("handle", "ptr", "cuda_stream"):       # ufuncgen/Numba, CuPy, PyTorch
        value = getattr(stream, attribute, None)
        if value is not None:
            value = getattr(value, "value", value)            # Numba's handle is a c_void_p
            return int(value or 0)
    raise TypeError(f"stream= must be an int handle or a CUDA stream object (CuPy, PyTorch, "
                    f"Numba, ufuncgen), not {type_name(stream)}")


def wait_for_producer(buffer: Buffer, consumer: int) -> None:
    """CAI v3: work pending on the producer's stream must finish before the consumer reads."""
    producer = buffer.stream
    if producer is None:
        return
    if producer == _LEGACY_DEFAULT_STREAM:
        producer = 0
    if producer != consumer:
        _device.stream_wait(consumer, producer)
