"""What the device path takes from other libraries, and how it tells host memory from device
memory: a host tensor whose type has the CUDA interface is host memory everywhere."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from .conftest import ForeignArray, HostTensor, host, to_dev

pytestmark = pytest.mark.skipif(not device.is_available(), reason=str(device.unavailable_reason()))


# --------------------------------------------------------------------------- host tensors

def test_to_device_copies_a_host_tensor_whose_type_has_the_cuda_array_interface():
    values = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_array_equal(host(device.to_device(HostTensor(values))), values)


@pytest.mark.parametrize("call, named", [
    (lambda d, t: ex.add(d, t), r"argument 'y' is a host .*HostTensor, but argument 'x' is on "
                                r"CUDA device 0"),
    (lambda d, t: ex.add(t, d), r"argument 'x' is a host .*HostTensor, but argument 'y' is on "
                                r"CUDA device 0"),
    (lambda d, t: ex.add(d, d, where=t), r"where= is a host .*HostTensor"),
    (lambda d, t: ex.add.reduce(d, where=t), r"where= is a host .*HostTensor"),
    (lambda d, t: ex.add.at(d, [0], t), r"argument 'b' is a .*HostTensor, but argument 'a' is a "
                                        r"CUDA array"),
], ids=["second argument", "first argument", "where=", "reduce where=", "at value"])
def test_a_host_tensor_among_device_arrays_is_refused_as_host_memory(call, named):
    d = to_dev(np.ones(3))
    with pytest.raises(TypeError, match=named) as info:
        call(d, HostTensor(np.array([True, False, True])))
    assert "__cuda_array_interface__" not in str(info.value)
    np.testing.assert_array_equal(host(d), np.ones(3))


# --------------------------------------------------------------------------- DLPack imports

def _refused_fields(d):
    """Fields of DLPack tensors that no kernel may read, each with what the refusal says."""
    count = device.device_count()
    return [
        (dict(ptr=0, shape=(3,)), "data is a null pointer for a non-empty tensor"),
        (dict(ptr=d.ptr, shape=(3,), strides=(2**62,)), r"stride 4611686018427387904 of "
                                                        r"dimension 0, times the item size 8"),
        (dict(ptr=d.ptr, shape=(3,), strides=(-2**62,)), "does not fit in 64 bits"),
        (dict(ptr=d.ptr, shape=(16,), strides=(2**59,)), r"span more than 2\*\*63 bytes"),
        (dict(ptr=d.ptr, shape=(2**31, 2**30)), r"more than 2\*\*63 bytes of elements"),
        (dict(ptr=d.ptr, shape=(3,), device_id=count), f"CUDA device {count}, but the "
                                                       f"{device.backend()} backend has"),
        (dict(ptr=d.ptr, shape=(3,), device_id=-1), "CUDA device -1"),
        (dict(ptr=d.ptr, shape=(1,) * 65), "ndim must be 0 to 64, got 65"),
        (dict(ptr=d.ptr, shape=(3,), shape_missing=True), "has 1 dimensions but no shape"),
        (dict(ptr=d.ptr, shape=(3, -1)), "dimension 1 has negative size -1"),
        (dict(ptr=d.ptr, shape=(3,), byte_offset=2**64 - 8), "leaves the address space"),
        (dict(ptr=d.ptr, shape=(3,), lanes=2), "2 lanes"),
        (dict(ptr=d.ptr, shape=(3,), bits=12), "bits 12"),
        (dict(ptr=d.ptr, shape=(3,), device_type=1, claimed=(2, 0)),
         r"device type 1 \(kDLCPU\)"),
    ]


REFUSED_IDS = ["null data", "stride overflow", "negative stride overflow", "span overflow",
               "size overflow", "device past the last", "negative device", "too many dims",
               "no shape", "negative size", "byte_offset wraps", "lanes", "bits",
               "host memory in a capsule"]


@pytest.mark.parametrize("k", range(len(REFUSED_IDS)), ids=REFUSED_IDS)
@pytest.mark.parametrize("use", [
    lambda p: device.from_dlpack(p),
    lambda p: device.as_device_array(p),
    lambda p: ex.add(p, 1.0),
], ids=["from_dlpack", "as_device_array", "call"])
def test_a_dlpack_tensor_that_no_kernel_may_read_is_refused_saying_what_is_wrong(k, use):
    from .dlpack_capsules import Producer
    d = to_dev(np.arange(3.0))
    fields, message = _refused_fields(d)[k]
    with pytest.raises((BufferError, TypeError), match=message):
        use(Producer(**fields))
    np.testing.assert_array_equal(host(d), np.arange(3.0))


@pytest.mark.parametrize("fields, window", [
    (dict(shape=(2,), byte_offset=8), slice(1, 3)),
    (dict(shape=(2,), strides=(2,)), slice(0, 4, 2)),
    (dict(shape=(3,), strides=(-1,), byte_offset=24), slice(3, 0, -1)),
    (dict(shape=(0,), strides=(2**62,)), slice(0, 0)),
], ids=["byte offset", "strided", "reversed", "empty with a huge stride"])
def test_a_valid_dlpack_tensor_is_read_as_numpy_reads_the_same_window(fields, window):
    from .dlpack_capsules import Producer
    values = np.arange(4.0) * 1.5
    d = to_dev(values)
    view = device.from_dlpack(Producer(ptr=d.ptr, **fields))
    np.testing.assert_array_equal(view.copy_to_host(), values[window])
    np.testing.assert_array_equal(host(ex.add(Producer(ptr=d.ptr, **fields), 1.0)),
                                  values[window] + 1.0)


def test_an_empty_dlpack_tensor_may_have_a_null_pointer():
    from .dlpack_capsules import Producer
    assert device.from_dlpack(Producer(ptr=0, shape=(0, 3))).copy_to_host().shape == (0, 3)


@pytest.mark.parametrize("use", [device.from_dlpack, device.as_device_array],
                         ids=["from_dlpack", "as_device_array"])
def test_a_host_dlpack_producer_is_refused_naming_its_device_before_it_is_asked_for_a_capsule(
        use):
    with pytest.raises(BufferError, match=r"\(numpy.ndarray\): the tensor is on DLPack device "
                                          r"type 1 \(kDLCPU\).*to_device"):
        use(np.arange(3))


class _DLPackOnly:
    """A producer that offers only DLPack, and exports what `array` exports."""

    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)


@pytest.mark.parametrize("answer", [(2,), ("cuda", 0), (2**70, 0), (2, 2**70), "cuda", None])
def test_a_malformed_dlpack_device_answer_is_named_in_the_error(answer):
    """Only an answer whose first entry was an int reached the DLPack import and its message;
    any other was taken for no answer, and the object for "neither a CUDA buffer nor a
    scalar"."""
    buffer = to_dev(np.arange(3.0))

    class Malformed(_DLPackOnly):
        def __dlpack_device__(self):
            return answer

    with pytest.raises(TypeError, match=r"__dlpack_device__\(\) must return a \(device_type, "
                                        r"device_id\) tuple of ints"):
        ex.add(Malformed(buffer), 1.0, out=buffer)
    np.testing.assert_array_equal(host(buffer), [0, 1, 2])


def test_a_read_only_dlpack_input_is_read_through_a_versioned_capsule():
    """Only versioned DLPack can say read-only: asked for a legacy capsule, the producer
    refused (BufferError), as NumPy's does for a read-only array."""
    from ufuncgen import _device
    buffer = to_dev(np.arange(4.0))
    read_only = _device.from_pointer(buffer.ptr, (4,), np.float64, readonly=True, owner=buffer)
    np.testing.assert_array_equal(host(ex.add(_DLPackOnly(read_only), 1.0)), [1, 2, 3, 4])
    with pytest.raises(ValueError, match="read-only"):
        ex.add(buffer, 1.0, out=_DLPackOnly(read_only))
    np.testing.assert_array_equal(host(buffer), [0, 1, 2, 3])


def test_an_object_with_no_cuda_interface_at_all_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match=r"as_device_array\(obj\) \(list\) is not a CUDA array"):
        device.as_device_array([1.0, 2.0])


# --------------------------------------------------------------------------- views past their buffer

# The simulator knows each allocation's bounds (CUDA's runtime API does not tell them), so a
# foreign view whose elements reach outside the buffer its pointer is in is refused there,
# before a kernel reads or writes the host memory around it: huge strides stopped the
# interpreter, a view running backwards from the start read what lay before the buffer.
# 32 float64s fill one 256-byte simulated allocation exactly.
on_the_simulator = pytest.mark.skipif(device.backend() != "sim",
                                      reason="only the simulator knows allocations' bounds")
INSIDE = [((32,), (8,), 0), ((32,), (-8,), 31), ((4, 8), (64, 8), 0), ((8,), (0,), 31),
          ((2, 2), (-128, 120), 16)]
OUTSIDE = [((33,), (8,), 0), ((32,), (-8,), 30), ((2,), (2**40,), 0), ((3,), (-8,), 0),
           ((4, 9), (64, 8), 0), ((10**7,), (8,), 0)]
OUTSIDE_IDS = ["one past the end", "one before the start, backwards", "a huge stride",
               "backwards from the start", "rows one too long", "ten million"]


def _through_cai(d, shape, strides, first):
    return ForeignArray(d, shape=shape, strides=strides, data=(d.ptr + 8 * first, False))


def _through_dlpack(d, shape, strides, first):
    from .dlpack_capsules import Producer
    return Producer(ptr=d.ptr, shape=shape, strides=tuple(s // 8 for s in strides),
                    byte_offset=8 * first)


def _through_from_pointer(d, shape, strides, first):
    from ufuncgen import _device
    return _device.from_pointer(d.ptr + 8 * first, shape, np.float64, strides)


@on_the_simulator
@pytest.mark.parametrize("shape, strides, first", INSIDE,
                         ids=["whole", "reversed", "2-d", "broadcast last", "2-d backwards"])
@pytest.mark.parametrize("through", [_through_cai, _through_dlpack, _through_from_pointer],
                         ids=["cai", "dlpack", "from_pointer"])
def test_a_foreign_view_inside_its_allocation_is_read_as_numpy_reads_it(shape, strides, first,
                                                                         through):
    values = np.arange(32.0) - 7.5
    d = to_dev(values)
    want = np.lib.stride_tricks.as_strided(values[first:], shape, strides) * 2.0
    np.testing.assert_array_equal(host(ex.add(through(d, shape, strides, first),
                                              through(d, shape, strides, first))), want)


@on_the_simulator
@pytest.mark.parametrize("shape, strides, first", OUTSIDE, ids=OUTSIDE_IDS)
@pytest.mark.parametrize("through, error", [
    (_through_cai, ValueError), (_through_dlpack, BufferError),
    (_through_from_pointer, ValueError)], ids=["cai", "dlpack", "from_pointer"])
def test_a_foreign_view_reaching_past_its_allocation_is_refused_before_any_kernel(
        shape, strides, first, through, error):
    values = np.arange(32.0)
    d = to_dev(values)
    out = to_dev(np.full(32, -1.0))
    with pytest.raises(error, match=r"its elements span bytes 0x[0-9a-f]+ to 0x[0-9a-f]+, beyond "
                                    r"the 256-byte device allocation at 0x[0-9a-f]+ that its "
                                    r"pointer 0x[0-9a-f]+ points into"):
        ex.add(through(d, shape, strides, first), 1.0)
    if through is not _through_from_pointer:
        # The same view as out=: nothing written, in it or around it.
        with pytest.raises(error, match="beyond the 256-byte device allocation"):
            ex.add(to_dev(np.ones(shape)), 1.0, out=through(out, shape, strides, first))
    np.testing.assert_array_equal(host(d), values)
    np.testing.assert_array_equal(host(out), np.full(32, -1.0))


# --------------------------------------------------------------------------- the interface on an instance

class _InterfaceSetInInit:
    """A wrapper that sets the interface on itself, as simple adapters do; CuPy and Numba read
    it with getattr."""

    def __init__(self, d):
        self.__cuda_array_interface__ = dict(d.__cuda_array_interface__)


class _AnswersThroughGetattr:
    """A proxy whose __getattr__ makes up the interface, as mocks make up any name: neither its
    type nor its own dict has one."""

    def __getattr__(self, name):
        if name == "__cuda_array_interface__":
            return {}
        raise AttributeError(name)


@pytest.mark.parametrize("wrap", [
    lambda d: _InterfaceSetInInit(d),
    lambda d: __import__("types").SimpleNamespace(
        __cuda_array_interface__=dict(d.__cuda_array_interface__)),
], ids=["set in __init__", "SimpleNamespace"])
def test_an_object_carrying_the_interface_in_its_own_dict_is_a_device_array(wrap):
    values = np.linspace(-2.0, 2.0, 7)
    d = to_dev(values)
    np.testing.assert_array_equal(host(ex.add(wrap(d), 1.5)), values + 1.5)
    np.testing.assert_array_equal(host(ex.add(d, wrap(d))), values + values)
    np.testing.assert_array_equal(device.as_device_array(wrap(d)).copy_to_host(), values)
    out = to_dev(np.zeros(7))
    ex.add(wrap(d), 0.5, out=wrap(out))
    np.testing.assert_array_equal(host(out), values + 0.5)


def test_an_interface_made_up_by_getattr_leaves_the_object_to_numpy_as_any_other_object():
    with pytest.raises(TypeError) as plain_object:
        ex.add(object(), 1.0)
    with pytest.raises(TypeError) as proxy:
        ex.add(_AnswersThroughGetattr(), 1.0)
    assert str(proxy.value) == str(plain_object.value)
    assert "ufunc 'add' not supported for the input types" in str(proxy.value)
