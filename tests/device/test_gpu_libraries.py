"""On a real GPU: the device path with CuPy, PyTorch and Numba arrays (skipped without one)."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from examples.conftest import (ELEMENTWISE_NAMES, check_elementwise, elementwise_inputs,
                               elementwise_reference, function_dtype_cases)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(device.backend() != "cuda" or not device.is_available(),
                       reason=f"needs a CUDA GPU with UFUNCGEN_DEVICE=cuda "
                              f"({device.unavailable_reason() or 'backend ' + device.backend()})"),
]


def _library(name):
    module = pytest.importorskip(name)
    if name == "cupy":
        return module.asarray, lambda a: module.asnumpy(a), module.ndarray
    if name == "torch":
        return (lambda a: module.as_tensor(a, device="cuda"), lambda t: t.cpu().numpy(), module.Tensor)
    from numba import cuda
    return cuda.to_device, lambda a: a.copy_to_host(), type(cuda.device_array(1))


@pytest.mark.parametrize("library", ["cupy", "torch", "numba"])
@pytest.mark.parametrize("name, dtype", function_dtype_cases(ELEMENTWISE_NAMES))
@pytest.mark.parametrize("size", [0, 1, 1000, 1_000_003])
def test_library_arrays_in_give_the_same_librarys_arrays_out(library, name, dtype, size):
    to, back, kind = _library(library)
    rng = np.random.default_rng(size)
    inputs = elementwise_inputs(name, dtype, (size,), rng)
    result = getattr(ex, name)(*[to(a) for a in inputs])
    results = result if isinstance(result, tuple) else (result,)
    assert all(isinstance(r, kind) for r in results)
    check_elementwise(name, tuple(back(r) for r in results),
                      elementwise_reference(name, *inputs), inputs)


def test_more_than_two_to_the_31_elements_give_correct_results():
    cupy = pytest.importorskip("cupy")
    n = 2**31 + 7
    x = cupy.broadcast_to(cupy.full((), 1.5, cupy.float32), (n,))    # a CuPy array, stride 0
    out = cupy.empty(n, cupy.float32)
    ex.add(x, 2.0, out=out)
    assert float(out[0]) == 3.5 and float(out[-1]) == 3.5 and int((out != 3.5).sum()) == 0


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64"])
def test_torch_tensors_of_every_layout_read_through_their_getters_give_torchs_results(dtype):
    # A CUDA tensor's fields come from its C getters, not its __cuda_array_interface__
    # (torch_operands.c): views, transposes, empty and 0-d tensors, and out= views.
    torch = pytest.importorskip("torch")
    base = (torch.arange(48, device="cuda") - 20).to(getattr(torch, dtype)).reshape(6, 8)
    for view in (base, base.T, base[::2, 1::3], base[:, :0], base[2, 3], base[1:, 2:]):
        want = view + view
        got = ex.add(view, view)
        assert isinstance(got, torch.Tensor) and got.dtype == want.dtype
        assert torch.equal(got.cpu(), want.cpu())
    target = torch.full((6, 8), 7, device="cuda").to(getattr(torch, dtype))
    ex.add(base[::2].T, 1, out=target[::2].T)
    want = torch.full((6, 8), 7, device="cuda").to(getattr(torch, dtype))
    want[::2] = base[::2] + 1
    assert torch.equal(target.cpu(), want.cpu())      # the rows between untouched


def test_a_torch_tensor_that_requires_grad_is_refused_as_its_interface_refuses_it():
    torch = pytest.importorskip("torch")
    x = torch.ones(3, device="cuda", requires_grad=True)
    with pytest.raises(TypeError, match="requires grad"):
        ex.add(x, 1.0)
    assert torch.equal(ex.add(x.detach(), 1.0).cpu(), torch.full((3,), 2.0))
