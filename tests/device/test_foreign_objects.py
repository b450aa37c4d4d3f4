"""What the device path takes from other libraries, and how it tells host memory from device
memory: a host tensor whose type has the CUDA interface is host memory everywhere."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from .conftest import HostTensor, host, to_dev

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
