"""Where a call with a CUDA buffer argument goes (the device path's seam).

ufuncgen._core routes a call here when any argument (or out=) is a CUDA buffer:
`__cuda_array_interface__` on its type, or a CUDA `__dlpack_device__`. The CUDA kernels and
device runtime are a later step; until they land this raises instead of copying silently.
"""
from __future__ import annotations


def _describe(args: tuple, kwargs: dict) -> str:
    names = [f"argument {i} ({type(a).__module__}.{type(a).__qualname__})" for i, a in enumerate(args)]
    return ", ".join(names)


def call(function, args: tuple, kwargs: dict):
    raise NotImplementedError(
        f"{function.__name__}: called with a CUDA device buffer ({_describe(args, kwargs)}), "
        "but this build of ufuncgen has no device support yet; move the data to the host "
        "first (for example with .get() on a CuPy array or .cpu().numpy() on a torch tensor)")
