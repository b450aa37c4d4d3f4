"""ufuncgen._device, the device runtime, on the host simulator (tests/conftest.py selects it).

Everything is checked against NumPy: data goes to the "device" with memcpy_htod, is viewed,
cast or exported there, and comes back with copy_to_host or memcpy_dtoh.  The CUDA backend
is exercised in subprocesses, where on a machine without a GPU it must import and then fail
with a clear error.
"""
import ctypes
import gc
import os
import re
import subprocess
import sys
import threading
import tracemalloc
import weakref

import numpy as np
import pytest

import ufuncgen._device as dev
import ufuncgen.examples as ex

from .dlpack_capsules import (DELETER, DLDataType, DLDevice, DLManagedTensor,
                              DLManagedTensorVersioned, DLTensor)

SUPPORTED = [np.dtype(t) for t in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float32", "float64")]
SIZES = (0, 1, 7, 8, 15, 16, 17, 519, 10007)

# DLPack constants (the specification's numbers).
KDLCPU, KDLCUDA, KDLCUDA_MANAGED = 1, 2, 13
KDLINT, KDLUINT, KDLFLOAT, KDLBFLOAT, KDLBOOL = 0, 1, 2, 4, 6
READ_ONLY, IS_COPIED = 1, 2


# These tests inspect the simulator itself (its devices, error injection, host pointers);
# a session on the real GPU (UFUNCGEN_DEVICE=cuda) runs the gpu-marked tests instead.
pytestmark = pytest.mark.skipif(dev.backend_name() != "sim",
                                reason="needs the simulator backend (UFUNCGEN_DEVICE=sim)")


# ----------------------------------------------------------------------------- helpers


def to_device(host, device=0, stream=0):
    """A C-contiguous DeviceArray holding a copy of `host`."""
    host = np.ascontiguousarray(host)
    array = dev.empty(host.shape, host.dtype, device, stream)
    dev.memcpy_htod(array.ptr, host, host.nbytes, device, stream)
    return array


def sample_values(dtype, shape, rng):
    """Values that every supported type holds exactly: 0..100 (0/1 for bool)."""
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 101, shape).astype(dtype)


def view_of(base, offset_elements, shape, strides_elements, readonly=False):
    """A from_pointer view into DeviceArray `base`, in units of its items."""
    item = base.itemsize
    return dev.from_pointer(base.ptr + offset_elements * item, shape, base.dtype,
                            tuple(s * item for s in strides_elements), base.device, base,
                            readonly)


def host_view_of(host, offset_elements, shape, strides_elements):
    """The NumPy view matching view_of on the host copy of the same data."""
    item = host.itemsize
    flat = host.reshape(-1)
    return np.lib.stride_tricks.as_strided(
        flat[offset_elements:], shape, tuple(s * item for s in strides_elements),
        writeable=False)


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]

# Capsule names must outlive their capsules.
_NAMES = {name: ctypes.create_string_buffer(name) for name in (
    b"dltensor", b"dltensor_versioned", b"something_else")}


def capsule_name(capsule):
    return _capsule_name(capsule).decode()


class HandMadeTensor:
    """A deleter-less DLPack tensor over `array`'s memory, with fields to spoil."""

    def __init__(self, array, versioned=False, device_type=KDLCUDA, code=KDLFLOAT, bits=32,
                 lanes=1, flags=0, byte_offset=0, strides=None):
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.strides = None if strides is None else (ctypes.c_int64 * array.ndim)(*strides)
        tensor = DLTensor(array.ptr, DLDevice(device_type, array.device), array.ndim,
                          DLDataType(code, bits, lanes), self.shape, self.strides, byte_offset)
        if versioned:
            self.struct = DLManagedTensorVersioned(1, 0, None, DELETER(), flags, tensor)
            name = b"dltensor_versioned"
        else:
            self.struct = DLManagedTensor(tensor, None, DELETER())
            name = b"dltensor"
        self.array = array     # keeps the memory alive as long as the tensor
        self.capsule = _capsule_new(ctypes.addressof(self.struct), _NAMES[name], None)
        # A producer keeps its DLManagedTensor valid until the consumer calls the deleter;
        # these have none, and the consumer still reads the (NULL) deleter field when the
        # import dies, which may be after this object (a test's locals die in order).
        # AddressSanitizer caught the read of the freed struct; they now live for the session.
        _HAND_MADE_STRUCTS.append((self.struct, self.shape, self.strides))


_HAND_MADE_STRUCTS = []


# ----------------------------------------------------------------------------- backend


def test_the_simulator_has_two_devices_with_two_multiprocessors_each():
    assert dev.is_available() is True
    assert dev.unavailable_reason() is None
    assert dev.device_count() == 2
    assert dev.current_device() == 0
    assert [dev.multiprocessor_count(d) for d in range(2)] == [2, 2]


def test_a_device_ordinal_out_of_range_is_a_value_error_naming_the_argument():
    with pytest.raises(ValueError, match=r"device: expected a device ordinal from 0 to 1.*got 2"):
        dev.empty(3, np.float32, 2)
    with pytest.raises(ValueError, match="got -1"):
        dev.multiprocessor_count(-1)
    with pytest.raises(TypeError, match="device: expected an int, got float"):
        dev.empty(3, np.float32, 1.0)


def test_streams_can_be_created_waited_on_synchronized_and_destroyed():
    s1, s2 = dev.stream_create(0), dev.stream_create(1)
    assert s1 > 2 and s2 > 2 and s1 != s2
    dev.stream_wait(s1, s2, 1)
    dev.stream_wait(s1, s1)
    dev.synchronize(s1)
    dev.synchronize(s2, 1)
    dev.synchronize(device=1)
    dev.synchronize()
    dev.stream_destroy(s1)
    dev.stream_destroy(s2)


@pytest.mark.parametrize("handle", [0, 1, 2])
def test_the_default_streams_cannot_be_destroyed(handle):
    with pytest.raises(ValueError, match="default stream"):
        dev.stream_destroy(handle)


def test_a_negative_stream_handle_is_a_value_error():
    with pytest.raises(ValueError, match=r"stream: expected an int from 0 to 2\*\*64 - 1"):
        dev.empty(3, np.float32, 0, -1)


def test_pointer_device_finds_the_device_of_any_byte_of_a_simulated_allocation():
    a0 = dev.empty(100, np.float64, 0)
    a1 = dev.empty(100, np.float64, 1)
    assert dev.pointer_device(a0.ptr) == 0
    assert dev.pointer_device(a1.ptr) == 1
    assert dev.pointer_device(a1.ptr + 799) == 1
    # Memory the simulator did not allocate is no device's, as CUDA says of host memory.
    host = np.zeros(4)
    assert dev.pointer_device(host.ctypes.data) == -1
    assert dev.pointer_device(4096) == -1
    assert dev.pointer_device(0) == -1


@pytest.mark.parametrize("address", ["host array", 4096])
def test_an_array_interface_over_memory_the_device_did_not_allocate_is_refused(address):
    # Not computed as if it were device memory: a bogus address stopped the interpreter.
    host = np.arange(3.0)
    data = host.ctypes.data if address == "host array" else address
    foreign = type("Foreign", (), {"__cuda_array_interface__": {
        "shape": (3,), "typestr": "<f8", "strides": None, "data": (data, False),
        "version": 3}})()
    with pytest.raises(ValueError, match="is not device memory"):
        ex.add(foreign, 1.0)
    assert host.tolist() == [0.0, 1.0, 2.0]


def test_addresses_and_numbers_in_messages_and_reprs_are_printed_not_their_format_codes():
    # PyErr_Format and PyUnicode_FromFormat know no %llx (nor %g) before Python 3.12: the
    # code itself was printed.
    from .dlpack_capsules import Producer
    host = np.ones(4)
    with pytest.raises(BufferError, match=rf"the tensor's data 0x{host.ctypes.data:x} is not "
                                          r"device memory$"):
        ex.add(Producer(ptr=host.ctypes.data, shape=(4,)), 1.0)
    with pytest.raises(BufferError, match=r"byte_offset 18446744073709551608 past the data "
                                          r"pointer 0x[0-9a-f]+ leaves the address space"):
        ex.add(Producer(ptr=dev.empty(4, np.float64).ptr, shape=(4,), byte_offset=2**64 - 8),
               1.0)
    stream = __import__("ufuncgen").device.Stream()
    assert re.fullmatch(r"<ufuncgen._device.OwnedStream 0x[0-9a-f]+ on device 0>",
                        repr(stream._owned))
    with pytest.raises(ValueError, match=r"^seconds: expected 0 to 60, got 100.5$"):
        dev.sim_stall(0, 100.5)


def test_an_injected_error_fails_the_next_launch_with_the_named_cuda_error():
    src = to_device(np.arange(5, dtype=np.float32))
    dst = dev.empty(5, np.float64)
    dev._sim_inject_error("cudaErrorIllegalAddress")
    with pytest.raises(dev.DeviceError) as info:
        dev.launch_cast(0, 0, (5,), src.ptr, (4,), "f4", dst.ptr, (8,), "f8")
    assert isinstance(info.value, RuntimeError)
    assert str(info.value) == ("ufuncgen: CUDA error cudaErrorIllegalAddress (an illegal "
                               "memory access was encountered) during the cast kernel")
    # One launch only: the next one runs.
    dev.launch_cast(0, 0, (5,), src.ptr, (4,), "f4", dst.ptr, (8,), "f8")
    np.testing.assert_array_equal(dst.copy_to_host(), np.arange(5.0))


def test_injecting_an_unknown_error_name_is_a_value_error():
    with pytest.raises(ValueError, match="cudaErrorNoSuchThing"):
        dev._sim_inject_error("cudaErrorNoSuchThing")


# ----------------------------------------------------------------------------- DeviceArray


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3), (4, 1, 5), (2, 0, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.bool_])
def test_empty_makes_a_c_contiguous_array_with_numpys_attributes(shape, dtype):
    a = dev.empty(shape, dtype, 1, 0)
    reference = np.empty(shape, dtype)
    assert a.shape == reference.shape
    # C strides; NumPy zeroes every stride of an empty array, which we do not copy.
    c_strides = tuple(int(np.prod([max(n, 1) for n in shape[d + 1:]], dtype=np.int64))
                      * reference.itemsize for d in range(len(shape)))
    assert a.strides == (reference.strides if reference.size else c_strides)
    assert a.dtype == reference.dtype and isinstance(a.dtype, np.dtype)
    assert (a.ndim, a.size, a.nbytes, a.itemsize) == (
        reference.ndim, reference.size, reference.nbytes, reference.itemsize)
    assert a.device == 1 and a.readonly is False and a.stream == 0 and a.owner is None
    assert a.ptr != 0 and a.ptr % 256 == 0
    assert dev.pointer_device(a.ptr) == 1


def test_an_int_shape_means_one_dimension():
    assert dev.empty(7, "u2").shape == (7,)


def test_repr_and_len_read_like_numpys():
    a = dev.empty((3, 2), np.float32)
    assert repr(a) == "DeviceArray(shape=(3, 2), dtype=float32, device=0)"
    assert len(a) == 3
    assert repr(dev.empty((), np.bool_, 1)) == "DeviceArray(shape=(), dtype=bool, device=1)"
    with pytest.raises(TypeError, match="len"):
        len(dev.empty((), np.float64))


def test_device_arrays_cannot_be_constructed_directly():
    with pytest.raises(TypeError):
        dev.DeviceArray()


@pytest.mark.parametrize("dtype", ["longdouble", "clongdouble", "object", "U3", ">f4", "datetime64[s]"])
def test_unsupported_dtypes_are_type_errors_naming_the_dtype(dtype):
    name = str(np.dtype(dtype))
    with pytest.raises(TypeError, match=r"dtype: device arrays hold bool, int8.*complex128") as info:
        dev.empty(3, dtype)
    assert name in str(info.value) or repr(np.dtype(dtype)) in str(info.value)
    base = dev.empty(3, np.float32)
    with pytest.raises(TypeError, match="dtype: "):
        dev.from_pointer(base.ptr, (3,), dtype, device=0)


def test_negative_dimensions_are_value_errors():
    with pytest.raises(ValueError, match=r"shape\[1\]: expected a non-negative int, got -2"):
        dev.empty((3, -2), np.float32)


def test_array_refuses_implicit_copies_to_the_host():
    a = dev.empty((2, 2), np.float32, 1)
    for convert in (np.asarray, np.array, lambda x: x.__array__()):
        with pytest.raises(TypeError, match=r"lives on device 1.*copy_to_host"):
            convert(a)


def test_the_stream_attribute_is_writable_and_validated():
    a = dev.empty(3, np.float32, 0, 42)
    assert a.stream == 42
    a.stream = 7
    assert a.stream == 7
    with pytest.raises(ValueError, match="stream"):
        a.stream = -3
    with pytest.raises(TypeError, match="stream= must be an int handle or a CUDA stream "
                                        "object .*, not str"):
        a.stream = "7"
    with pytest.raises(AttributeError):
        del a.stream


def test_a_view_keeps_its_owner_alive_and_infers_its_device_from_the_pointer():
    base = dev.empty((4, 4), np.int32, 1)
    view = dev.from_pointer(base.ptr + 16, (4,), np.int32, owner=base, readonly=True, stream=9)
    assert (view.device, view.readonly, view.stream, view.owner) == (1, True, 9, base)
    ref = weakref.ref(base)
    del base
    gc.collect()
    assert ref() is not None
    del view
    gc.collect()
    assert ref() is None


def test_from_pointer_checks_strides_against_the_shape():
    base = dev.empty(8, np.int32)
    with pytest.raises(ValueError, match=r"strides: expected 2 entries.*got 1"):
        dev.from_pointer(base.ptr, (2, 2), np.int32, (4,), 0)


@pytest.mark.parametrize("shape, strides, named", [
    ((3,), (2**62,), r"strides: the elements span more than 2\*\*63 bytes \(stride "
                     r"4611686018427387904 bytes in dimension 0, of extent 3\)"),
    ((2, 3), (-2**62, 2**62), r"strides: the elements span more than 2\*\*63 bytes"),
    ((2**62,), None, r"shape: the elements span more than 2\*\*63 bytes \(stride 4 bytes"),
    # stride 0 spans 4 bytes, but nbytes (size * itemsize) wrapped to a negative number
    ((2**63 - 1,), (0,), r"shape: the array would have more than 2\*\*63 bytes"),
    ((2**61, 2), (0, 0), r"shape: the array would have more than 2\*\*63 bytes"),
], ids=["one huge stride", "two that add up past it", "C strides of a huge shape",
        "a broadcast view of 2**63 - 1 items", "a broadcast view of 2**62 items"])
def test_from_pointer_refuses_a_view_whose_byte_offsets_would_not_fit_in_64_bits(shape, strides,
                                                                                 named):
    base = dev.empty(8, np.int32)
    with pytest.raises(ValueError, match=named):
        dev.from_pointer(base.ptr, shape, np.int32, strides, 0)


def test_from_pointer_takes_any_strides_for_an_empty_view():
    base = dev.empty(8, np.int32)
    view = dev.from_pointer(base.ptr, (0, 3), np.int32, (2**62, 2**62), 0)
    assert view.copy_to_host().shape == (0, 3)


def test_from_pointer_needs_a_device_for_a_null_pointer():
    with pytest.raises(ValueError, match="ptr: 0x0 is not device memory"):
        dev.from_pointer(0, (0,), np.int32)


@pytest.mark.parametrize("address", ["host", "unallocated", "null"])
def test_from_pointer_with_a_device_refuses_memory_the_simulator_did_not_allocate(address):
    host_buffer = np.zeros(8)
    ptr = {"host": host_buffer.ctypes.data, "unallocated": 4096, "null": 0}[address]
    with pytest.raises(ValueError, match=rf"ptr: {ptr:#x} is not device memory: the sim "
                                         r"backend allocated nothing there"):
        dev.from_pointer(ptr, (8,), np.float64, None, 0)
    assert dev.from_pointer(ptr, (0,), np.float64, None, 0).shape == (0,)   # reads nothing
    assert not host_buffer.any()


def test_a_raw_copy_from_or_to_memory_the_simulator_did_not_allocate_is_invalid():
    a = dev.empty(8, np.float64)
    host_buffer = np.zeros(8)
    for copy in (lambda: dev.memcpy_dtoh(host_buffer, 4096, 64, 0),
                 lambda: dev.memcpy_htod(4096, host_buffer, 64, 0),
                 lambda: dev.memcpy_dtod(4096, a.ptr, 64, 0),
                 lambda: dev.memcpy_dtod(a.ptr, 4096, 64, 0)):
        with pytest.raises(dev.DeviceError, match="cudaErrorInvalidValue"):
            copy()


# ----------------------------------------------------------------------------- copies


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", SUPPORTED, ids=str)
def test_memcpy_round_trips_every_dtype_and_size(dtype, size):
    rng = np.random.default_rng(size)
    host = rng.integers(0, 256, size * dtype.itemsize, dtype=np.uint8).view(dtype)
    if dtype == np.bool_:
        host = host.view(np.uint8) % 2 == 1
    a = to_device(host, device=size % 2)
    assert a.nbytes == host.nbytes
    back = np.empty_like(host)
    dev.memcpy_dtoh(back, a.ptr, host.nbytes, a.device)
    np.testing.assert_array_equal(back.view(np.uint8), host.view(np.uint8))
    np.testing.assert_array_equal(a.copy_to_host(), host, strict=True)
    b = dev.empty(size, dtype, a.device)
    dev.memcpy_dtod(b.ptr, a.ptr, host.nbytes, a.device)
    np.testing.assert_array_equal(b.copy_to_host(), host, strict=True)


def test_memcpy_refuses_more_bytes_than_the_host_buffer_holds():
    a = dev.empty(4, np.float32)
    with pytest.raises(ValueError, match="nbytes: 17 is more than the 16 bytes of src"):
        dev.memcpy_htod(a.ptr, np.zeros(4, np.float32), 17, 0)
    with pytest.raises(ValueError, match="nbytes: 17 is more than the 16 bytes of dst"):
        dev.memcpy_dtoh(np.zeros(4, np.float32), a.ptr, 17, 0)
    with pytest.raises(TypeError, match="dst: expected a writable"):
        dev.memcpy_dtoh(b"0123456789abcdef", a.ptr, 16, 0)
    with pytest.raises(TypeError, match="src: expected a C-contiguous"):
        dev.memcpy_htod(a.ptr, np.zeros(8, np.float32)[::2], 16, 0)


# (offset, shape, strides) in elements, over a base of 60 elements.
VIEWS = {
    "c-contiguous": (0, (3, 4, 5), (20, 5, 1)),
    "transposed": (0, (5, 4, 3), (1, 5, 20)),
    "every-other": (1, (2, 2, 3), (30, 10, 2)),
    "negative": (59, (3, 4, 5), (-20, -5, -1)),
    "mixed-negative": (15, (4, 5), (-5, 1)),
    "zero-stride": (7, (3, 4, 2), (0, 1, 0)),
    "all-zero-stride": (11, (6, 2), (0, 0)),
    "zero-size": (0, (3, 0, 5), (20, 5, 1)),
    "scalar": (13, (), ()),
}


@pytest.mark.parametrize("name", VIEWS)
@pytest.mark.parametrize("dtype", [np.float64, np.int8, np.bool_], ids=str)
def test_copy_to_host_of_any_view_matches_numpys_view(name, dtype):
    host = sample_values(dtype, 60, np.random.default_rng(1))
    base = to_device(host, device=1)
    offset, shape, strides = VIEWS[name]
    view = view_of(base, offset, shape, strides)
    expected = host_view_of(host, offset, shape, strides)
    got = view.copy_to_host()
    assert got.flags.c_contiguous and got.flags.writeable
    np.testing.assert_array_equal(got, expected, strict=True)
    np.testing.assert_array_equal(view.copy_to_host(stream=dev.stream_create(1)), expected)


# ----------------------------------------------------------------------------- CAI v3


@pytest.mark.parametrize("dtype", SUPPORTED, ids=str)
def test_the_cuda_array_interface_describes_a_contiguous_array(dtype):
    a = dev.empty((2, 3), dtype, 1)
    cai = a.__cuda_array_interface__
    assert cai == {"shape": (2, 3), "typestr": dtype.str, "data": (a.ptr, False),
                   "version": 3, "strides": None, "stream": 1}


def test_the_cuda_array_interface_gives_strides_only_when_not_c_contiguous():
    base = dev.empty(60, np.float32)
    transposed = view_of(base, 0, (5, 12), (1, 5))
    assert transposed.__cuda_array_interface__["strides"] == (4, 20)
    # Size-1 dimensions may carry any stride and still be contiguous, as in NumPy.
    column = view_of(base, 0, (6, 1), (1, 123))
    assert column.__cuda_array_interface__["strides"] is None
    assert view_of(base, 0, (0, 5), (7, 3)).__cuda_array_interface__["strides"] is None


def test_the_cuda_array_interface_never_exports_stream_zero():
    a = dev.empty(3, np.float32)
    assert a.__cuda_array_interface__["stream"] == 1    # the legacy default stream
    a.stream = 2
    assert a.__cuda_array_interface__["stream"] == 2
    a.stream = 12345
    assert a.__cuda_array_interface__["stream"] == 12345


def test_the_cuda_array_interface_reports_read_only_views():
    base = dev.empty(4, np.uint8)
    view = dev.from_pointer(base.ptr, (4,), np.uint8, owner=base, readonly=True)
    assert view.__cuda_array_interface__["data"] == (base.ptr, True)


# ----------------------------------------------------------------------------- DLPack


def test_dlpack_device_is_cuda_and_the_array_device():
    assert dev.empty(1, np.float32, 1).__dlpack_device__() == (KDLCUDA, 1)


@pytest.mark.parametrize("versioned", [False, True], ids=["dltensor", "dltensor_versioned"])
@pytest.mark.parametrize("name", ["c-contiguous", "transposed", "negative", "zero-stride"])
def test_a_dlpack_round_trip_shares_memory(versioned, name):
    host = np.arange(60, dtype=np.int32)
    base = to_device(host, device=1)
    offset, shape, strides = VIEWS[name]
    view = view_of(base, offset, shape, strides)
    capsule = view.__dlpack__(max_version=(1, 2) if versioned else None)
    expected_name = "dltensor_versioned" if versioned else "dltensor"
    assert capsule_name(capsule) == expected_name
    imported = dev.from_dlpack_capsule(capsule)
    assert capsule_name(capsule) == "used_" + expected_name
    assert (imported.ptr, imported.shape, imported.strides, imported.dtype, imported.device) \
        == (view.ptr, view.shape, view.strides, view.dtype, 1)
    # Same memory: a write through the base shows in the import.
    dev.memcpy_htod(base.ptr, host * 3, host.nbytes, 1)
    np.testing.assert_array_equal(imported.copy_to_host(),
                                  host_view_of(host * 3, offset, shape, strides))


def test_a_consumed_capsule_cannot_be_imported_twice():
    capsule = dev.empty(3, np.float32).__dlpack__()
    dev.from_dlpack_capsule(capsule)
    with pytest.raises(ValueError, match="used_dltensor.*consumed already"):
        dev.from_dlpack_capsule(capsule)


@pytest.mark.parametrize("versioned", [False, True], ids=["dltensor", "dltensor_versioned"])
def test_the_dlpack_deleter_runs_exactly_once_when_the_import_dies(versioned):
    exporter = dev.empty((4, 4), np.float64)
    ref = weakref.ref(exporter)
    before = sys.getrefcount(exporter)
    capsule = exporter.__dlpack__(max_version=(1, 0) if versioned else None)
    assert sys.getrefcount(exporter) == before + 1
    imported = dev.from_dlpack_capsule(capsule)
    del capsule     # consumed: its destructor must leave the deleter to the import
    gc.collect()
    assert sys.getrefcount(exporter) == before + 1
    del imported    # the deleter, which drops the export's reference once, runs when the
    gc.collect()    # stream of the import's last use has passed it: the next synchronisation
    dev.synchronize()
    assert sys.getrefcount(exporter) == before
    del exporter
    gc.collect()
    assert ref() is None


def test_an_unconsumed_capsule_releases_the_array_when_it_dies():
    exporter = dev.empty(4, np.float32)
    before = sys.getrefcount(exporter)
    for versioned in (None, (1, 0)):
        capsule = exporter.__dlpack__(max_version=versioned)
        del capsule
        gc.collect()
        assert sys.getrefcount(exporter) == before


def test_a_versioned_import_keeps_the_read_only_flag():
    base = dev.empty(6, np.float32)
    tensor = HandMadeTensor(base, versioned=True, flags=READ_ONLY)
    assert dev.from_dlpack_capsule(tensor.capsule).readonly is True
    base_ro = dev.from_pointer(base.ptr, (6,), np.float32, owner=base, readonly=True)
    capsule = base_ro.__dlpack__(max_version=(1, 0))
    address = _capsule_get(capsule, b"dltensor_versioned")
    assert DLManagedTensorVersioned.from_address(address).flags & READ_ONLY
    assert dev.from_dlpack_capsule(capsule).readonly is True


def test_a_hand_made_tensor_with_null_strides_and_a_byte_offset_is_read_correctly():
    host = np.arange(12, dtype=np.float32)
    base = to_device(host)
    # Element 2 onwards as a (2, 5) C-contiguous tensor.
    tensor = HandMadeTensor(dev.from_pointer(base.ptr, (2, 5), np.float32, owner=base),
                            byte_offset=8)
    imported = dev.from_dlpack_capsule(tensor.capsule)
    assert imported.strides == (20, 4)
    np.testing.assert_array_equal(imported.copy_to_host(), host[2:12].reshape(2, 5))
    # Managed memory is accepted too.
    managed = HandMadeTensor(base, device_type=KDLCUDA_MANAGED, strides=(2,))
    assert dev.from_dlpack_capsule(managed.capsule).strides == (8,)


@pytest.mark.parametrize("change, error, message", [
    (dict(device_type=KDLCPU), BufferError, r"device type 1 \(kDLCPU\).*kDLCUDA \(2\)"),
    (dict(device_type=3), BufferError, r"device type 3 \(kDLCUDAHost\)"),
    (dict(lanes=4), TypeError, r"4 lanes.*lanes == 1"),
    (dict(code=KDLBFLOAT, bits=32), TypeError, r"code 4 kDLBfloat, bits 32"),
    (dict(code=KDLFLOAT, bits=128), TypeError, r"code 2 kDLFloat, bits 128"),
    (dict(code=99), TypeError, r"code 99"),
])
@pytest.mark.parametrize("versioned", [False, True], ids=["dltensor", "dltensor_versioned"])
def test_bad_dlpack_tensors_are_refused_clearly_and_left_unconsumed(change, error, message,
                                                                    versioned):
    tensor = HandMadeTensor(dev.empty(4, np.float32), versioned=versioned, **change)
    with pytest.raises(error, match="from_dlpack_capsule: .*" + message):
        dev.from_dlpack_capsule(tensor.capsule)
    assert not capsule_name(tensor.capsule).startswith("used_")


def test_a_newer_major_dlpack_version_is_refused():
    tensor = HandMadeTensor(dev.empty(4, np.float32), versioned=True)
    tensor.struct.major = 2
    with pytest.raises(BufferError, match="version 2.0 is newer"):
        dev.from_dlpack_capsule(tensor.capsule)


def test_a_numpy_cpu_capsule_is_refused_naming_its_device_type():
    capsule = np.arange(3.0).__dlpack__()
    with pytest.raises(BufferError, match=r"device type 1 \(kDLCPU\)"):
        dev.from_dlpack_capsule(capsule)


def test_capsules_with_other_names_and_other_objects_are_refused():
    base = dev.empty(4, np.float32)
    other = _capsule_new(base.ptr, _NAMES[b"something_else"], None)
    with pytest.raises(ValueError, match=r'named "dltensor" or "dltensor_versioned", got '
                                         r'"something_else"'):
        dev.from_dlpack_capsule(other)
    with pytest.raises(TypeError, match="expected a DLPack capsule"):
        dev.from_dlpack_capsule(base)


def test_dlpack_export_checks_its_keywords():
    a = dev.empty(4, np.float32, 1)
    with pytest.raises(BufferError, match=r"cannot export to dl_device \(1, 0\)"):
        a.__dlpack__(dl_device=(KDLCPU, 0))
    with pytest.raises(BufferError, match=r"dl_device \(2, 0\)"):
        a.__dlpack__(dl_device=(KDLCUDA, 0))
    assert capsule_name(a.__dlpack__(dl_device=(KDLCUDA, 1))) == "dltensor"
    with pytest.raises(ValueError, match="0 is ambiguous"):
        a.__dlpack__(stream=0)
    for stream in (None, -1, 1, 2, 99):
        a.__dlpack__(stream=stream)
    with pytest.raises(TypeError):
        a.__dlpack__(1)     # keyword-only
    with pytest.raises(TypeError, match="max_version"):
        a.__dlpack__(max_version=1)


def test_a_read_only_array_exports_only_as_versioned_dlpack():
    base = dev.empty(4, np.float32)
    view = dev.from_pointer(base.ptr, (4,), np.float32, owner=base, readonly=True)
    with pytest.raises(BufferError, match="read-only"):
        view.__dlpack__()
    view.__dlpack__(max_version=(1, 0))


def test_dlpack_copy_true_exports_a_flagged_contiguous_copy():
    host = np.arange(20, dtype=np.int16)
    base = to_device(host)
    view = view_of(base, 19, (4, 5), (-5, -1))
    capsule = view.__dlpack__(max_version=(1, 0), copy=True)
    address = _capsule_get(capsule, b"dltensor_versioned")
    assert DLManagedTensorVersioned.from_address(address).flags & IS_COPIED
    imported = dev.from_dlpack_capsule(capsule)
    assert imported.ptr != view.ptr and imported.strides == (10, 2)
    np.testing.assert_array_equal(imported.copy_to_host(), host[::-1].reshape(4, 5))


# ----------------------------------------------------------------------------- cast kernel


def cast_layouts(rng, dtype):
    """(host view, device view) pairs over one uploaded base: strided, broadcast, reversed."""
    host = sample_values(dtype, 60, rng)
    base = to_device(host, device=1)
    for offset, shape, strides in [
        (0, (6, 10), (10, 1)),          # contiguous
        (0, (10, 6), (1, 10)),          # transposed
        (59, (3, 4), (-20, -3)),        # reversed and strided
        (5, (4, 3, 5), (0, 7, 1)),      # broadcast along the first axis
        (8, (), ()),                    # a scalar
        (0, (3, 0), (1, 1)),            # empty
    ]:
        yield (host_view_of(host, offset, shape, strides),
               view_of(base, offset, shape, strides))


@pytest.mark.parametrize("dst_dtype", SUPPORTED, ids=str)
@pytest.mark.parametrize("src_dtype", SUPPORTED, ids=str)
def test_launch_cast_matches_numpy_astype_for_every_dtype_pair(src_dtype, dst_dtype):
    rng = np.random.default_rng(src_dtype.num * 100 + dst_dtype.num)
    for host_view, src in cast_layouts(rng, src_dtype):
        dst = dev.empty(src.shape, dst_dtype, 1)
        dev.launch_cast(1, 0, src.shape, src.ptr, src.strides, src.dtype, dst.ptr,
                        dst.strides, dst_dtype)
        np.testing.assert_array_equal(dst.copy_to_host(), host_view.astype(dst_dtype),
                                      strict=True)


def _floating_types():
    types = [np.dtype(t) for t in ("float16", "float32", "float64", "complex64", "complex128")]
    try:
        import ml_dtypes
    except ImportError:         # no bfloat16 arrays without it
        return types
    return types + [np.dtype(ml_dtypes.bfloat16)]


def _hard_floating_values(dtype):
    """Every bit pattern of a 16-bit type; for the others their zeros, infinities, largest and
    smallest values, random bit patterns, and NaNs of many payloads (signalling ones, with
    payloads only in the bits a narrower type drops, and quiet ones), with both signs; a
    complex type has them as real parts and, reversed, as imaginary parts."""
    if dtype.kind == "c":
        parts = _hard_floating_values(np.dtype(f"f{dtype.itemsize // 2}"))
        values = np.empty(parts.size, dtype)
        values.real, values.imag = parts, parts[::-1]
        return values
    if dtype.itemsize == 2:
        return np.arange(1 << 16, dtype=np.uint16).view(dtype)
    rng = np.random.default_rng(dtype.itemsize)
    u = np.dtype(f"u{dtype.itemsize}").type
    mantissa = {4: 23, 8: 52}[dtype.itemsize]
    infinity = u(((1 << (8 * dtype.itemsize - 1 - mantissa)) - 1) << mantissa)
    quiet = u(1 << (mantissa - 1))
    payloads = np.concatenate([
        np.array([1, 2, quiet - 1, quiet >> 10, quiet >> 13, quiet >> 29 if mantissa > 29 else 1,
                  (1 << mantissa) - 1], dtype=u),
        rng.integers(1, 1 << mantissa, 5000, dtype=u)])
    nans = np.concatenate([payloads, payloads | quiet]) | infinity
    numbers = rng.integers(0, np.iinfo(u).max, 20_000, dtype=u, endpoint=True)
    edges = np.array([0, 1, infinity - 1, infinity, 1 << mantissa], dtype=u)
    bits = np.concatenate([nans, numbers, edges])
    sign = u(1 << (8 * dtype.itemsize - 1))
    return np.concatenate([bits, bits | sign]).view(dtype)


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")
@pytest.mark.parametrize("dst_dtype", _floating_types(), ids=str)
@pytest.mark.parametrize("src_dtype", _floating_types(), ids=str)
def test_launch_cast_between_floating_types_gives_numpys_bits_nan_payloads_included(
        src_dtype, dst_dtype):
    """float16 to float64 kept a signalling NaN signalling only on the host (the device went
    through float, whose conversion to double quiets it), float32 to float16 kept the payload
    only on the host (the device went through double); every pair now gives the bits of
    NumPy's astype (ml_dtypes' for bfloat16)."""
    values = _hard_floating_values(src_dtype)
    with np.errstate(all="ignore"):
        want = values.astype(dst_dtype)
    src = to_device(values)
    dst = dev.empty(values.shape, dst_dtype)
    dev.launch_cast(0, 0, values.shape, src.ptr, values.strides, src_dtype, dst.ptr,
                    dst.strides, dst_dtype)
    got = dst.copy_to_host()
    unsigned = f"u{min(dst_dtype.itemsize, 8)}"
    got_bits, want_bits = (a.view(unsigned).reshape(values.size, -1) for a in (got, want))
    bad = np.nonzero((got_bits != want_bits).any(axis=1))[0]
    assert bad.size == 0, (f"{bad.size} of {values.size} differ, first from "
                           f"{values[bad[:3]]!r}: {[hex(b) for b in got_bits[bad[0]]]}, "
                           f"expected {[hex(b) for b in want_bits[bad[0]]]}")


def test_simulated_launches_from_several_threads_at_once_keep_their_grids_apart():
    # Launches release the GIL and the simulator's grid coordinates are per thread: each
    # thread's strided cast must come out right while the others run.
    n, errors = 50_000, []

    def work(k):
        try:
            host = np.arange(2 * n, dtype=np.int64) * (k + 1)
            src = to_device(host, device=k % 2)
            dst = dev.empty(n, np.float64, k % 2)
            for _ in range(3):
                dev.launch_cast(k % 2, 0, (n,), src.ptr, (16,), np.int64, dst.ptr, (8,),
                                np.float64)
                np.testing.assert_array_equal(dst.copy_to_host(), host[::2].astype(float))
        except BaseException as error:      # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def test_launch_cast_to_bool_means_nonzero_and_from_bool_gives_zero_or_one():
    values = np.array([0.0, -0.0, 0.5, -2.0, np.inf, np.nan], dtype=np.float64)
    src = to_device(values)
    dst = dev.empty(values.shape, np.bool_)
    dev.launch_cast(0, 0, values.shape, src.ptr, (8,), np.float64, dst.ptr, (1,), np.bool_)
    np.testing.assert_array_equal(dst.copy_to_host(), [False, False, True, True, True, True])
    raw = to_device(np.array([0, 1, 2, 255], dtype=np.uint8))
    out = dev.empty(4, np.int32)
    dev.launch_cast(0, 0, (4,), raw.ptr, (1,), np.bool_, out.ptr, (4,), np.int32)
    np.testing.assert_array_equal(out.copy_to_host(), [0, 1, 1, 1])


def test_launch_cast_handles_more_than_the_kernel_limit_of_contiguous_dimensions():
    shape = (1, 2) * 10     # 20 dimensions, 10 after dropping size-1 ones, 1 after merging
    host = np.arange(2 ** 10, dtype=np.uint16).reshape(shape)
    src = to_device(host)
    dst = dev.empty(shape, np.float32)
    dev.launch_cast(0, 0, shape, src.ptr, host.strides, np.uint16, dst.ptr, dst.strides,
                    np.float32)
    np.testing.assert_array_equal(dst.copy_to_host(), host.astype(np.float32))


@pytest.mark.parametrize("args, error, message", [
    (dict(src_dtype="clongdouble"), TypeError, r"src_dtype: device arrays hold"),
    (dict(dst_dtype=None), TypeError, r"dst_dtype: expected a dtype"),
    (dict(src_strides=(4,)), ValueError, r"src_strides: expected 2 entries \(one per "
                                          r"dimension of shape\), got 1"),
    (dict(dst_strides=[8, 4]), TypeError, r"dst_strides: expected a tuple, got list"),
    (dict(shape=(2, -3)), ValueError, r"shape\[1\]: expected a non-negative int, got -3"),
    (dict(src_ptr=-8), ValueError, r"src_ptr: expected an int from 0"),
    (dict(device=5), ValueError, r"device: expected a device ordinal"),
    (dict(stream=1.5), TypeError, r"stream: expected an int, got float"),
])
def test_launch_cast_names_the_bad_argument(args, error, message):
    src, dst = dev.empty((2, 3), np.float32), dev.empty((2, 3), np.float64)
    call = dict(device=0, stream=0, shape=(2, 3), src_ptr=src.ptr, src_strides=(12, 4),
                src_dtype=np.float32, dst_ptr=dst.ptr, dst_strides=(24, 8),
                dst_dtype=np.float64)
    call.update(args)
    with pytest.raises(error, match=message):
        dev.launch_cast(*call.values())


def test_launch_cast_takes_exactly_nine_positional_arguments():
    with pytest.raises(TypeError, match=r"launch_cast\(\) takes exactly 9 positional"):
        dev.launch_cast(0, 0)


def test_the_kernel_contract_limits_are_exported():
    assert (dev.MAX_DIMS, dev.MAX_ARGS, dev.MAX_CORE_DIMS, dev.MAX_CORE_STRIDES, dev.BLOCK) \
        == (12, 17, 16, 48, 256)
    assert isinstance(dev.BUILT_WITH_CUDA, bool)


# ----------------------------------------------------------------------------- reference counts


def test_creating_viewing_exporting_and_destroying_arrays_leaks_nothing():
    dtype = np.dtype(np.float32)
    owner = object()
    host = np.arange(12, dtype=np.float32)

    def cycle():
        a = to_device(host, device=1)
        view = dev.from_pointer(a.ptr, (3, 4), dtype, (4, 12), 1, a)
        keep = dev.from_pointer(a.ptr, (12,), dtype, None, 1, owner)
        view.copy_to_host()
        view.__cuda_array_interface__
        for versioned in (None, (1, 0)):
            dev.from_dlpack_capsule(view.__dlpack__(max_version=versioned)).copy_to_host()
            view.__dlpack__(max_version=versioned)      # dropped unconsumed
        view.__dlpack__(max_version=(1, 0), copy=True)
        dev.launch_cast(1, 0, (3, 4), view.ptr, view.strides, dtype, keep.ptr, (16, 4), "f4")
        try:
            np.asarray(view)
        except TypeError:
            pass
        del a, view, keep

    for _ in range(20):
        cycle()
    gc.collect()
    dev.synchronize()       # views let go of their owners once their streams have passed
    counts = sys.getrefcount(dtype), sys.getrefcount(owner), sys.getrefcount(host)
    tracemalloc.start()
    for _ in range(300):
        cycle()
    gc.collect()
    dev.synchronize()
    grown, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (sys.getrefcount(dtype), sys.getrefcount(owner), sys.getrefcount(host)) == counts
    assert grown < 64 * 1024


# ----------------------------------------------------------------------------- other backends


def run_python(code, **env_changes):
    """Runs `code` in a fresh interpreter with the environment changed; returns it."""
    env = dict(os.environ)
    for key, value in env_changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_an_unknown_ufuncgen_device_is_a_value_error_naming_the_variable_and_choices():
    result = run_python(
        "import ufuncgen._device as d\n"
        "try:\n"
        "    d.backend_name()\n"
        "except ValueError as e:\n"
        "    print(e)\n",
        UFUNCGEN_DEVICE="bogus")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "UFUNCGEN_DEVICE=bogus is not a device backend; expected 'cuda' (the default, also "
        "when unset) or 'sim' (the host simulator)")


def test_ufuncgen_sim_devices_sets_the_number_of_simulated_devices():
    result = run_python("import ufuncgen._device as d; print(d.device_count())",
                        UFUNCGEN_SIM_DEVICES="3")
    assert result.stdout.strip() == "3", result.stderr
    result = run_python(
        "import ufuncgen._device as d\n"
        "try:\n"
        "    d.device_count()\n"
        "except ValueError as e:\n"
        "    print(e)\n",
        UFUNCGEN_SIM_DEVICES="zero")
    assert "UFUNCGEN_SIM_DEVICES must be a whole number" in result.stdout, result.stderr


CUDA_PROBE = """
import ufuncgen._device as d
print(d.backend_name())
print(d.is_available())
print(d.unavailable_reason())
print(d.device_count())
if not d.is_available():
    try:
        d.empty((3,), "float32")
    except d.DeviceError as e:
        print(e)
    try:
        d._sim_inject_error("cudaErrorIllegalAddress")
    except RuntimeError as e:
        print(e)
"""


def test_the_cuda_backend_imports_without_a_gpu_and_fails_clearly_on_use():
    result = run_python(CUDA_PROBE, UFUNCGEN_DEVICE=None)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "cuda"
    if lines[1] == "True":
        pytest.skip("a CUDA device is present; the no-GPU behaviour cannot be observed")
    name, reason, count, empty_error, inject_error = lines[1:]
    assert name == "False" and count == "0"
    assert reason.startswith("CUDA error cudaError") or reason in (
        "ufuncgen was built without CUDA", "no CUDA device is visible")
    assert empty_error.startswith("ufuncgen: CUDA error cudaError"), empty_error
    if dev.BUILT_WITH_CUDA:
        assert any(code in empty_error for code in (
            "cudaErrorNoDevice", "cudaErrorInsufficientDriver", "cudaErrorStubLibrary"))
    else:
        assert "ufuncgen was built without CUDA" in empty_error
    assert "error injection exists only under the simulator" in inject_error
