"""Test-session set-up shared by every folder.

The device path runs under the simulator unless the caller chose a backend: CI has no GPU,
and the simulator runs the very same kernels on the CPU.  `UFUNCGEN_DEVICE=cuda pytest -m gpu`
runs the GPU tests on a real device.
"""
import os

os.environ.setdefault("UFUNCGEN_DEVICE", "sim")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a real CUDA GPU (UFUNCGEN_DEVICE=cuda)")
