"""Bad device calls: each gives a clear exception naming the argument, and writes nothing."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import _device, device

from .conftest import DROP, SIM, ForeignArray, host, to_dev, view

pytestmark = pytest.mark.skipif(not device.is_available(), reason=str(device.unavailable_reason()))


@pytest.fixture
def out():
    """An out= buffer whose contents must survive every refused call."""
    return to_dev(np.full(8, 7.0))


def _untouched(out):
    np.testing.assert_array_equal(host(out), np.full(8, 7.0))


def test_a_host_array_mixed_with_a_device_array_names_both_and_how_to_move_it(out):
    with pytest.raises(TypeError) as info:
        ex.gaussian_pdf(to_dev(np.ones(8)), np.zeros(8), 1.0, out=out)
    message = str(info.value)
    assert "argument 'mean' is a host numpy.ndarray" in message
    assert "argument 'x' is on CUDA device 0" in message
    assert "to_device" in message
    _untouched(out)


def test_a_host_out_for_device_inputs_is_refused():
    with pytest.raises(TypeError, match="output 'sum' is a host numpy.ndarray"):
        ex.add(to_dev(np.ones(3)), 1.0, out=np.zeros(3))


@pytest.mark.skipif(not SIM or device.device_count() < 2, reason="needs two (simulated) devices")
def test_arrays_on_different_gpus_are_refused(out):
    other = device.to_device(np.ones(8), device=1)
    with pytest.raises(ValueError, match="argument 'y' is on CUDA device 1.*same GPU"):
        ex.add(to_dev(np.ones(8)), other, out=out)
    _untouched(out)


def test_a_read_only_out_is_refused(out):
    readonly = ForeignArray(out, data=(out.ptr, True))
    with pytest.raises(ValueError, match="output 'sum' is read-only"):
        ex.add(to_dev(np.ones(8)), 1.0, out=readonly)
    _untouched(out)


@pytest.mark.parametrize("shape", [(4,), (8, 2), ()])
def test_an_out_of_the_wrong_shape_is_refused(shape):
    with pytest.raises(ValueError, match=r"output 'sum' has shape .* but the result's shape is \(8,\)"):
        ex.add(to_dev(np.ones(8)), 1.0, out=device.device_array(shape))


def test_an_out_of_a_dtype_the_result_cannot_be_cast_to_is_refused():
    target = to_dev(np.full(8, 7, np.int64))
    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'add' output from dtype\('float64'\) to dtype\('int64'\)"):
        ex.add(to_dev(np.ones(8)), 1.0, out=target)
    np.testing.assert_array_equal(host(target), np.full(8, 7))


def test_an_input_that_cannot_be_cast_safely_is_refused():
    with pytest.raises(TypeError, match="lucas"):
        ex.lucas(to_dev(np.ones(3)))


def test_a_misaligned_pointer_is_refused(out):
    base = to_dev(np.zeros(9))
    misaligned = view(base, (8,), (8,), offset=4)
    with pytest.raises(ValueError, match="argument 'x' is misaligned for float64"):
        ex.add(misaligned, 1.0, out=out)
    _untouched(out)


@pytest.mark.parametrize("dtype", ["longdouble", "clongdouble"])
def test_an_unsupported_dtype_is_refused_and_named(dtype, out):
    base = to_dev(np.zeros(8))
    foreign = ForeignArray(base, typestr=np.dtype(dtype).str)
    with pytest.raises(TypeError, match=f"argument 'x' has dtype {np.dtype(dtype)}, which "
                                        "device kernels do not support"):
        ex.add(foreign, 1.0, out=out)
    _untouched(out)


@pytest.mark.parametrize("overrides, error", [
    (dict(shape=DROP), "lacks the required key\\(s\\) 'shape'"),
    (dict(typestr=DROP, data=DROP), "'typestr', 'data'"),
    (dict(typestr="<q9"), "not a valid type string"),
    (dict(typestr=">f8"), "native byte order"),
    # not a str: np.dtype would read None as float64, a type or a dtype as itself
    (dict(typestr=None), "typestr'\\] None is not a valid type string: a str"),
    (dict(typestr=float), "typestr'\\] <class 'float'> is not a valid type string: a str"),
    (dict(typestr=np.dtype("f8")), "is not a valid type string: a str"),
    (dict(shape=(-8,)), "negative extent"),
    (dict(shape=[8]), "tuple of ints"),
    (dict(data=(0, False)), "null pointer"),
    (dict(data=("0x10", False)), "pointer: int"),
    (dict(strides=(8, 8)), "2 entries for 1 dimensions"),
    (dict(stream=0), "stream'\\] is 0"),
    (dict(mask=object()), "mask"),
    (dict(shape=(3,), strides=(2**62,)), r"span more than 2\*\*63 bytes \(stride "
                                         r"4611686018427387904 bytes in dimension 0"),
    (dict(shape=(3, 2), strides=(-2**62, 8)), r"span more than 2\*\*63 bytes"),
    (dict(shape=(2, 2), strides=(2**62, 2**62)), r"span more than 2\*\*63 bytes \(stride "
                                                 r"4611686018427387904 bytes in dimension 1"),
    (dict(shape=(3,), strides=(-2**63,)), r"span more than 2\*\*63 bytes"),
    (dict(shape=(2**61,), strides=None), r"the array would have more than 2\*\*63 bytes"),
    (dict(shape=(2**40, 2**40), strides=None), r"the shape has more than 2\*\*63 elements"),
])
def test_a_malformed_cuda_array_interface_is_refused_with_what_is_wrong(overrides, error, out):
    foreign = ForeignArray(to_dev(np.ones(8)), **overrides)
    with pytest.raises((ValueError, TypeError), match=error):
        ex.add(foreign, 1.0, out=out)
    _untouched(out)


def test_messages_name_the_function_the_argument_its_type_and_the_device_in_full():
    # the names are joined on every call, for messages most calls never raise: spelled out
    # here whole, so that the cheaper joining keeps every word
    with pytest.raises(ValueError) as info:
        ex.add(ForeignArray(to_dev(np.ones(8)), shape=DROP, typestr=DROP), 1.0)
    assert str(info.value) == (
        f"add: argument 'x' ({ForeignArray.__module__}.ForeignArray): __cuda_array_interface__ "
        "lacks the required key(s) 'shape', 'typestr'")
    with pytest.raises(TypeError) as info:
        ex.add(to_dev(np.ones(3)), np.ones(3))
    assert str(info.value).startswith(
        "add: argument 'y' is a host numpy.ndarray, but argument 'x' is on CUDA device 0: "
        "host and device arrays do not mix.")


def test_a_cuda_array_interface_that_is_not_a_dict_is_refused():
    class Broken:
        __cuda_array_interface__ = [1, 2]
    with pytest.raises(TypeError, match="must be a dict, not list"):
        ex.add(Broken(), 1.0)


def _raising_interface(error):
    class Adapter:
        @property
        def __cuda_array_interface__(self):
            raise error
    return Adapter()


@pytest.mark.parametrize("error", [KeyboardInterrupt, MemoryError, SystemExit])
@pytest.mark.parametrize("use", ["argument", "out=", "as_device_array"])
def test_a_ctrl_c_or_memory_error_while_an_interface_is_read_goes_on_as_raised(error, use):
    d = to_dev(np.arange(4.0))
    calls = {"argument": lambda o: ex.add(d, o), "out=": lambda o: ex.add(d, 1.0, out=o),
             "as_device_array": device.as_device_array}
    with pytest.raises(error):
        calls[use](_raising_interface(error()))


def test_an_interface_that_raises_is_a_type_error_from_its_error():
    d = to_dev(np.arange(4.0))
    with pytest.raises(TypeError, match="reading __cuda_array_interface__ failed: boom") as info:
        ex.add(d, _raising_interface(RuntimeError("boom")))
    assert isinstance(info.value.__cause__, RuntimeError)


def test_an_unsupported_keyword_is_numpys_type_error_naming_it():
    """NumPy's words: the device takes every keyword NumPy's calls and methods take, so one
    it refuses is no keyword of the call at all (it had said "not supported on the device",
    as if the host took where= for a gufunc)."""
    x = to_dev(np.ones(3))
    with pytest.raises(TypeError, match=r"add\(\) got an unexpected keyword argument 'extobj'"):
        ex.add(x, 1.0, extobj=None)
    with pytest.raises(TypeError, match=r"inner1d\(\) got an unexpected keyword argument 'where'"):
        ex.inner1d(x, x, where=True)
    with pytest.raises(TypeError, match=r"inner1d\(\) got an unexpected keyword argument 'where'"):
        ex.inner1d.ufunc(np.ones(3), np.ones(3), where=True)
    for method, args in (("accumulate", ()), ("reduceat", ([0],))):
        with pytest.raises(TypeError, match=rf"add.{method}\(\) got an unexpected keyword "
                                            "argument 'where'"):
            getattr(ex.add, method)(x, *args, where=True)
        with pytest.raises(TypeError, match=rf"{method}\(\) got an unexpected keyword argument "
                                            "'where'"):
            getattr(ex.add, method)(np.ones(3), *args, where=True)
    with pytest.raises(ValueError, match="order must be one of"):
        ex.add(x, 1.0, order="X")


def test_too_many_or_too_few_arguments_are_type_errors():
    x = to_dev(np.ones(3))
    with pytest.raises(TypeError, match="takes 3 input argument"):
        ex.gaussian_pdf(x, 1.0)


def test_inputs_that_do_not_broadcast_are_named(out):
    with pytest.raises(ValueError, match=r"could not be broadcast together: x \(3,\), y \(4,\)"):
        ex.add(to_dev(np.ones(3)), to_dev(np.ones(4)))


@pytest.mark.skipif(not SIM, reason="error injection is a simulator feature")
def test_a_cuda_error_in_the_kernel_becomes_an_exception_naming_it():
    _device._sim_inject_error("cudaErrorIllegalAddress")
    with pytest.raises(device.DeviceError, match="cudaErrorIllegalAddress"):
        ex.add(to_dev(np.ones(8)), 1.0)
    # the next call is fine again
    np.testing.assert_array_equal(host(ex.add(to_dev(np.ones(2)), 1.0)), [2.0, 2.0])


def test_to_device_of_a_device_array_is_refused_rather_than_copied():
    with pytest.raises(TypeError, match="already on the device"):
        device.to_device(to_dev(np.ones(2)))


def test_numpy_will_not_silently_copy_a_device_array_to_the_host():
    with pytest.raises(TypeError, match="copy_to_host"):
        np.asarray(to_dev(np.ones(2)))


def _refusal(call):
    try:
        call()
    except Exception as error:      # compared by the caller
        return error
    raise AssertionError("expected a refusal")


@pytest.mark.parametrize("call", [
    lambda D: ex.add(D(np.ones(3)), 1.0, out=D(np.zeros(3, np.int64))),
    lambda D: ex.add(D(np.ones(3)), D(np.ones(3)), out=D(np.zeros(3, np.float32)),
                     casting="safe"),
    lambda D: ex.add(D(np.ones(3)), D(np.ones(3, np.int64)), dtype=np.int64, casting="safe"),
    lambda D: ex.add(D(np.arange(3)), 2.5, dtype=np.int64, casting="no"),
    lambda D: ex.add(D(np.arange(3, dtype=np.int32)), np.int64(1), casting="no"),
], ids=["out= of a narrower kind", "out= under safe", "input under safe",
        "Python float under no", "NumPy scalar under no"])
def test_a_refused_cast_raises_numpys_own_exception_class_and_message_as_the_host_does(call):
    on_host, on_device = _refusal(lambda: call(np.asarray)), _refusal(lambda: call(to_dev))
    assert type(on_device) is type(on_host), (on_device, on_host)
    assert isinstance(on_device, TypeError) and type(on_host).__module__.startswith("numpy")
    assert str(on_device) == str(on_host)


def test_a_cuda_array_of_reduceat_indices_is_refused_naming_indices():
    with pytest.raises(TypeError, match=r"add.reduceat: indices are a CUDA array "
                                        r"\(ufuncgen._device.DeviceArray\); reduceat takes host "
                                        r"indices"):
        ex.add.reduceat(to_dev(np.ones(4)), to_dev(np.array([0, 2])))


@pytest.mark.parametrize("where", [np.array([True, False, True]), [True, False, True]],
                         ids=["ndarray", "list"])
def test_a_host_where_mask_with_device_arrays_is_refused_naming_its_type(where):
    d = to_dev(np.ones(3))
    with pytest.raises(TypeError, match=f"add: where= is a host "
                                        f"{'numpy.ndarray' if isinstance(where, np.ndarray) else 'list'}; "
                                        "with CUDA arrays it must be True, False or a CUDA bool "
                                        "array"):
        ex.add(d, d, where=where)


@pytest.mark.parametrize("call, named", [
    (lambda m: ex.add(1.0, 2.0, where=m), r"add: where= is a CUDA array, but no argument is"),
    (lambda m: ex.add(np.ones(3), 2.0, where=m), r"add: where= is a CUDA array, but no argument"),
    (lambda m: ex.add.outer(np.ones(3), np.ones(1), where=m), r"add: where= is a CUDA array"),
    (lambda m: ex.add.reduce(np.ones(3), where=m),
     r"add.reduce: argument 'array' is a numpy.ndarray, but where= is a CUDA array"),
], ids=["scalars", "host array", "outer", "reduce"])
def test_a_device_where_mask_with_only_host_values_is_refused_naming_where(call, named):
    # It went to NumPy, which said only that a DeviceArray cannot be converted.
    mask = to_dev(np.array([True, False, True]))
    with pytest.raises(TypeError, match=named):
        call(mask)


@pytest.mark.parametrize("shape, want", [
    (np.int64(3), (3,)), (np.uint8(0), (0,)), ((np.int32(2), 3), (2, 3)),
    (np.array([2, 3]), (2, 3)), (range(2, 4), (2, 3)), ([], ()),
], ids=["numpy int", "numpy zero", "tuple of numpy ints", "integer array", "range", "empty list"])
def test_device_array_takes_a_shape_as_numpy_takes_it(shape, want):
    assert device.device_array(shape).shape == np.empty(shape).shape == want


@pytest.mark.parametrize("shape, error, message", [
    (3.0, TypeError, r"shape: expected an int or a sequence of ints, got float"),
    ("3", TypeError, r"shape: expected an int or a sequence of ints, got str"),
    ((2, 1.5), TypeError, r"shape\[1\]: expected an int, got float"),
    (-1, ValueError, r"shape: expected a non-negative size, got -1"),
    ((1,) * 65, ValueError, r"shape: expected at most 64 entries, got 65"),
], ids=["float", "str", "float in a tuple", "negative", "too many dimensions"])
def test_a_bad_shape_names_the_argument_what_it_expected_and_what_it_got(shape, error, message):
    with pytest.raises(error, match=message):
        device.device_array(shape)


@pytest.mark.parametrize("make", [
    lambda device_arg: device.Stream(device=device_arg),
    lambda device_arg: device.device_array(3, device=device_arg),
    lambda device_arg: device.to_device(np.ones(3), device=device_arg),
], ids=["Stream", "device_array", "to_device"])
def test_a_bad_device_names_the_argument(make):
    with pytest.raises(TypeError, match="device: expected an int, got str"):
        make("a")
    with pytest.raises(ValueError, match="device: expected a device ordinal from 0 to"):
        make(device.device_count())


def test_a_cuda_array_interface_with_too_many_dimensions_says_the_limit(out):
    foreign = ForeignArray(to_dev(np.ones(8)), shape=(1,) * 65, strides=None)
    with pytest.raises(ValueError, match=r"\['shape'\] has 65 entries; device arrays have at "
                                         r"most 64 dimensions"):
        ex.add(foreign, 1.0, out=out)
    _untouched(out)


@pytest.mark.parametrize("version, message", [
    (99, r"\['version'\] is 99; the CUDA array interface defines versions 0 to 3"),
    (-1, r"\['version'\] is -1"),
    (2**70, r"\['version'\] is 1180591620717411303424"),
    ("3", r"\['version'\] must be an int, not '3'"),
    (True, r"\['version'\] must be an int, not True"),
])
def test_a_cuda_array_interface_version_the_spec_does_not_define_is_refused(version, message,
                                                                           out):
    with pytest.raises(ValueError, match=message):
        ex.add(ForeignArray(to_dev(np.ones(8)), version=version), 1.0, out=out)
    _untouched(out)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_every_cuda_array_interface_version_the_spec_defines_is_taken(version):
    x = np.arange(8.0)
    np.testing.assert_array_equal(host(ex.add(ForeignArray(to_dev(x), version=version), 1.0)),
                                  x + 1)
