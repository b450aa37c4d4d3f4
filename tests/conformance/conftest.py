"""Buffer kinds for the conformance suite.

Every case runs once per kind.  "numpy" checks ufuncgen's host path (the `Function` wrapper)
against the bare `np.ufunc` it wraps; every other kind runs the case on device arrays of that
library and checks the device path against the host path, errors included.
"""
from __future__ import annotations

import numpy as np
import pytest

from ufuncgen import device

KINDS = ("numpy", "sim", "cupy", "torch", "numba")


def _gpu_reason(library: str) -> str | None:
    if device.backend() != "cuda":
        return f"{library} arrays need the cuda backend (this run uses {device.backend()!r})"
    if not device.is_available():
        return f"no CUDA GPU: {device.unavailable_reason()}"
    try:
        __import__(library if library != "numba" else "numba.cuda")
    except Exception as error:  # ImportError, or a library that fails to load its CUDA part
        return f"{library} does not import: {error}"
    return None


class Kind:
    """How one buffer kind moves test data in (`D`) and results out (`H`)."""

    def __init__(self, name: str):
        self.name = name

    def D(self, a, dtype=None):
        a = np.array(a, dtype=dtype)          # always a fresh copy
        if self.name == "numpy":
            return a
        if self.name == "sim":
            return device.to_device(a)
        if self.name == "cupy":
            import cupy
            return cupy.asarray(a)
        if self.name == "torch":
            import torch
            return torch.from_numpy(a).to("cuda")
        from numba import cuda
        return cuda.to_device(a)

    def H(self, x):
        if isinstance(x, tuple):
            return tuple(self.H(e) for e in x)
        if isinstance(x, (np.ndarray, np.generic, int, float, bool)):
            return np.asarray(x)
        if isinstance(x, device.DeviceArray):
            return x.copy_to_host()
        root = type(x).__module__.split(".")[0]
        if root == "cupy":
            import cupy
            return cupy.asnumpy(x)
        if root == "torch":
            return x.cpu().numpy()
        if root == "numba":
            return x.copy_to_host()
        raise TypeError(f"unexpected result type {type(x)!r}")


@pytest.fixture(params=KINDS)
def kind(request) -> Kind:
    name = request.param
    if name == "sim":
        if device.backend() != "sim":
            pytest.skip("the simulator kind runs with UFUNCGEN_DEVICE=sim")
    elif name != "numpy":
        reason = _gpu_reason(name)
        if reason:
            pytest.skip(reason)
    return Kind(name)


def pytest_terminal_summary(terminalreporter):
    """The differential test's examples per run, and how they ended (host vs device)."""
    from .test_differential import DIFFERENTIAL_EXAMPLES, STATS
    if STATS:
        total = sum(v for k, v in STATS.items()
                    if k.startswith(("elementwise", "gufunc", "reduce ", "outer ", "accumulate ",
                                     "at ")))
        outcomes = ", ".join(f"{k}: {v}" for k, v in sorted(STATS.items()) if k.startswith("host"))
        terminalreporter.write_line(
            f"differential: {total} examples ({DIFFERENTIAL_EXAMPLES} per property); {outcomes}")
