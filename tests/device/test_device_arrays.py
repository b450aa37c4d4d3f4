"""DeviceArray and the exchange protocols: round trips, CAI and DLPack consumed back, streams."""
import ctypes

import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import _device, device

from .conftest import CapsuleProducer, ForeignArray, host, to_dev, view

pytestmark = pytest.mark.skipif(not device.is_available(), reason=str(device.unavailable_reason()))

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 3, 4)])
def test_to_device_and_copy_to_host_round_trip(dtype, shape, rng):
    a = (rng.standard_normal(shape) * 50).astype(dtype)
    d = device.to_device(a)
    assert d.shape == shape and d.dtype == np.dtype(dtype) and d.size == a.size
    np.testing.assert_array_equal(d.copy_to_host(), a)


def test_device_array_allocates_the_requested_shape_and_dtype():
    d = device.device_array((3, 4), np.float32)
    assert (d.shape, d.dtype, d.strides) == ((3, 4), np.float32, (16, 4))


def test_a_foreign_cuda_array_is_consumed_without_a_copy_and_results_are_device_arrays(rng):
    x = rng.standard_normal(100)
    d = to_dev(x)
    foreign = ForeignArray(d)
    result = ex.add(foreign, 1.0)
    assert isinstance(result, device.DeviceArray)
    np.testing.assert_array_equal(host(result), x + 1)
    out = ForeignArray(device.device_array(100))
    assert ex.add(foreign, 1.0, out=out) is out
    np.testing.assert_array_equal(host(out._d), x + 1)


def test_the_cuda_array_interface_exported_is_version_3_and_consumed_back(rng):
    x = rng.standard_normal((4, 5))
    d = to_dev(x)
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (4, 5) and cai["typestr"] == "<f8"
    assert cai["data"] == (d.ptr, False) and cai["strides"] is None
    assert cai.get("stream") != 0
    back = device.as_device_array(ForeignArray(d))
    assert back.ptr == d.ptr
    np.testing.assert_array_equal(back.copy_to_host(), x)


@pytest.mark.parametrize("versioned", [False, True])
def test_dlpack_export_is_consumed_back_sharing_memory(versioned, rng):
    x = rng.standard_normal(10).astype(np.float32)
    d = to_dev(x)
    assert d.__dlpack_device__() == (2, d.device)
    capsule = d.__dlpack__(max_version=(1, 0) if versioned else None)
    back = _device.from_dlpack_capsule(capsule)
    assert back.ptr == d.ptr
    np.testing.assert_array_equal(back.copy_to_host(), x)
    result = ex.add(back, back)
    np.testing.assert_array_equal(host(result), x + x)


def test_from_dlpack_takes_any_cuda_dlpack_producer(rng):
    x = rng.standard_normal(6)
    d = to_dev(x)

    class Producer:
        def __dlpack__(self, **kwargs):
            return d.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return d.__dlpack_device__()

    np.testing.assert_array_equal(device.from_dlpack(Producer()).copy_to_host(), x)
    np.testing.assert_array_equal(host(ex.add(Producer(), 1.0)), x + 1)


@pytest.mark.skipif(device.backend() != "sim", reason="reads the simulator's record of waits")
def test_a_producer_stream_named_in_the_interface_is_waited_on(rng):
    stream = device.Stream()
    d = to_dev(rng.standard_normal(4))
    ex.add(ForeignArray(d, stream=stream.handle), 1.0)
    ex.add(ForeignArray(d, stream=None), 1.0)
    _device._sim_stream_waits()
    ex.add(ForeignArray(d, stream=stream.handle), 1.0)
    ex.add(ForeignArray(d, stream=None), 1.0)
    ex.add(ForeignArray(d, stream=1), 1.0)            # the legacy default: the consumer's own
    assert _device._sim_stream_waits() == [(0, stream.handle)]


@pytest.mark.parametrize("make", [
    lambda s: s, lambda s: s.handle,
    lambda s: type("CuPyLike", (), {"ptr": s.handle})(),
    lambda s: type("TorchLike", (), {"cuda_stream": s.handle})(),
])
def test_stream_accepts_the_stream_objects_of_cuda_libraries(make, rng):
    s = device.Stream()
    x = rng.standard_normal(5)
    result = ex.add(to_dev(x), 1.0, stream=make(s))
    assert result.stream == s.handle
    device.synchronize(s)
    np.testing.assert_array_equal(host(result), x + 1)
    # The array is freed on its stream: with a bare handle (or a wrapper that does not own
    # the stream) the caller keeps the stream alive until then, as with any CUDA library.
    del result


def test_a_bad_stream_object_is_a_type_error():
    with pytest.raises(TypeError, match="stream="):
        ex.add(to_dev(np.ones(2)), 1.0, stream="default")


def test_the_backend_and_availability_are_reported():
    assert device.backend() in ("cuda", "sim")
    assert device.is_available() is True
    assert device.unavailable_reason() is None
    device.synchronize()


# Every form stream= takes: ufuncgen's Stream, a raw handle (a Python or NumPy int), CuPy's
# (.ptr), PyTorch's (.cuda_stream), Numba's (.handle, a c_void_p), the __cuda_stream__ protocol.
STREAM_FORMS = {
    "Stream": lambda s: s,
    "handle": lambda s: s.handle,
    "numpy int handle": lambda s: np.uint64(s.handle),
    "CuPy-like": lambda s: type("CuPyLike", (), {"ptr": s.handle})(),
    "PyTorch-like": lambda s: type("TorchLike", (), {"cuda_stream": s.handle})(),
    "Numba-like": lambda s: type("NumbaLike", (), {"handle": ctypes.c_void_p(s.handle)})(),
    "__cuda_stream__": lambda s: type("Protocol", (), {
        "__cuda_stream__": lambda self: (0, s.handle)})(),
}


@pytest.mark.parametrize("make", STREAM_FORMS.values(), ids=STREAM_FORMS.keys())
def test_copy_to_host_takes_every_form_of_stream_a_call_takes(make, rng):
    s = device.Stream()
    x = rng.standard_normal((3, 4))
    d = to_dev(x)
    np.testing.assert_array_equal(d.copy_to_host(stream=make(s)), x)
    # A strided view is gathered by a device copy on that stream first.
    every_other = view(d, (3, 2), (d.strides[0], 2 * d.strides[1]))
    np.testing.assert_array_equal(every_other.copy_to_host(stream=make(s)), x[:, ::2])
    assert every_other.stream == s.handle


@pytest.mark.parametrize("make", STREAM_FORMS.values(), ids=STREAM_FORMS.keys())
def test_the_stream_of_a_device_array_is_set_with_every_form_of_stream_a_call_takes(make, rng):
    s = device.Stream()
    x = rng.standard_normal(4)
    d = to_dev(x)
    d.stream = make(s)
    assert d.stream == s.handle
    np.testing.assert_array_equal(host(ex.add(d, 1.0, stream=s)), x + 1)
    d.stream = None
    assert d.stream == 0


@pytest.mark.parametrize("use", [
    lambda d: d.copy_to_host(stream="default"),
    lambda d: setattr(d, "stream", 1.5),
], ids=["copy_to_host", "stream setter"])
def test_a_bad_stream_for_a_device_array_is_the_type_error_of_a_call(use):
    with pytest.raises(TypeError, match="stream= must be an int handle or a CUDA stream object"):
        use(to_dev(np.ones(2)))


# Views whose elements do not sit at multiples of their size (another library's view with
# odd strides or offset): (dtype, base length, shape, byte strides, byte offset).
MISALIGNED_VIEWS = {
    "float64 stride 12": ("float64", 5, (3,), (12,), 0),
    "float64 offset 4": ("float64", 8, (3,), (16,), 4),
    "complex128 stride 24": ("complex128", 6, (3,), (24,), 0),
    "float32 2-d": ("float32", 16, (2, 3), (20, 6), 2),
    "int16 reversed": ("int16", 8, (4,), (-3,), 13),
}


@pytest.mark.parametrize("dtype, n, shape, strides, offset", MISALIGNED_VIEWS.values(),
                         ids=MISALIGNED_VIEWS.keys())
@pytest.mark.parametrize("copy", [
    lambda v: v.copy_to_host(),
    lambda v: _device.from_dlpack_capsule(v.__dlpack__(copy=True)).copy_to_host(),
], ids=["copy_to_host", "__dlpack__(copy=True)"])
def test_a_misaligned_view_is_copied_as_numpy_reads_the_same_bytes(dtype, n, shape, strides,
                                                                     offset, copy, rng):
    base = (rng.standard_normal(n) * 100).astype(dtype)
    d = to_dev(base)
    want = np.ndarray(shape, dtype, buffer=base, offset=offset, strides=strides)
    got = copy(view(d, shape, strides, offset))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


@pytest.mark.skipif(device.backend() != "sim", reason="the simulator's model of a GPU fault")
def test_the_simulator_faults_a_cast_of_misaligned_elements_as_a_gpu_does():
    d = to_dev(np.arange(8.0))
    out = device.device_array(3)
    with pytest.raises(device.DeviceError, match="cudaErrorMisalignedAddress"):
        _device.launch_cast(0, 0, (3,), d.ptr + 4, (16,), "f8", out.ptr, (8,), "f8")
    # complex128 needs its parts' alignment (8 bytes), not its size's
    c = to_dev(np.arange(4.0).view(np.complex128))
    out = device.device_array(1, np.complex128)
    _device.launch_cast(0, 0, (1,), c.ptr + 8, (16,), "c16", out.ptr, (16,), "c16")
    device.synchronize()


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2)])
def test_the_cuda_array_interface_of_a_zero_size_array_has_a_null_pointer_as_the_spec_asks(
        shape):
    d = device.device_array(shape)
    assert d.__cuda_array_interface__["data"] == (0, False)
    back = device.as_device_array(ForeignArray(d))
    assert back.shape == shape and back.copy_to_host().shape == shape
    assert host(ex.add(ForeignArray(d), 1.0)).shape == shape


# ------------------------------------------------------------------ the array API, as NumPy's

@pytest.mark.parametrize("values", [[0.0], [1.0], [0.0, 0.0], []])
def test_the_truth_value_of_a_device_array_is_refused_naming_copy_to_host(values):
    d = to_dev(np.array(values))
    with pytest.raises(TypeError, match=r"truth value .* call \.copy_to_host\(\) first"):
        bool(d)
    with pytest.raises(TypeError, match="truth value"):
        bool(device.to_device(np.float64(1.0)))              # 0-d


@pytest.mark.parametrize("dtype_class", [np.dtypes.Float64DType, np.dtypes.Int32DType,
                                         np.dtypes.Float16DType])
def test_device_array_takes_a_dtype_class_as_np_empty_does(dtype_class):
    assert device.device_array(3, dtype_class).dtype == np.empty(3, dtype_class).dtype


@pytest.mark.parametrize("shape", [(0, 2**63 - 1), (0, 2**61), (2**62, 0, 4)])
def test_an_empty_shape_whose_other_extents_overflow_is_refused_as_numpy_refuses_it(shape):
    with pytest.raises(ValueError):
        np.empty(shape)
    with pytest.raises(ValueError, match="more than 2\\*\\*63"):
        device.device_array(shape)


def test_a_view_of_more_than_2_63_bytes_through_the_interface_is_refused():
    d = to_dev(np.zeros(4))
    for shape in ((2**61,), (2**63 - 1,)):
        view = ForeignArray(d, shape=shape, strides=(0,))
        with pytest.raises(ValueError, match="more than 2\\*\\*63 bytes"):
            ex.add(view, 1.0)


def test_an_empty_interface_array_may_point_anywhere_as_an_empty_dlpack_tensor_may():
    d = to_dev(np.zeros(4))
    empty = ForeignArray(d, shape=(0,), data=(0x1000, False), strides=None)
    assert ex.add(empty, 1.0).shape == (0,)


def test_dlpack_exports_a_size_one_dimensions_stride_whatever_it_is():
    """A stride never stepped (a size-1 dimension's, an empty array's) need not be a whole
    number of elements: NumPy's __dlpack__ exports such views, as the C-contiguous stride."""
    d = to_dev(np.arange(8, dtype=np.uint16))
    for shape, strides in (((1, 4), (3, 2)), ((0, 4), (3, 2))):
        v = view(d, shape, strides)
        back = device.from_dlpack(v)
        assert back.shape == shape
        np.testing.assert_array_equal(host(back), host(v))


def test_copying_a_strided_bool_view_keeps_its_bytes_as_numpy_does():
    raw = np.array([0, 2, 4, 6, 8, 10, 12, 14], np.uint8)
    d = to_dev(raw)
    strided = _device.from_pointer(d.ptr, (4,), np.bool_, (2,), d.device, d, False, 0)
    want = raw[::2].view(np.bool_).copy()
    assert host(strided).view(np.uint8).tolist() == want.view(np.uint8).tolist() == [0, 4, 8, 12]
    copy = device.from_dlpack(CapsuleProducer(strided.__dlpack__(copy=True)))
    assert host(copy).view(np.uint8).tolist() == [0, 4, 8, 12]


def test_a_read_only_out_is_refused_naming_no_protocol_it_did_not_use():
    d = to_dev(np.zeros(4))
    read_only = _device.from_pointer(d.ptr, (4,), np.float64, readonly=True, owner=d)
    with pytest.raises(ValueError, match="is read-only \\(as its exporter says"):
        ex.add(d, 1.0, out=read_only)
