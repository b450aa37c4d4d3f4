"""Host-side cost of a device call's dispatch, without a GPU.

    UFUNCGEN_DEVICE=sim python3 benchmarks/device_dispatch.py

Times a 1,000-element gaussian_pdf call through the device path with the kernel launch
stubbed out (so only the Python dispatch is measured: argument checks, type resolution,
broadcasting, output allocation, parameter packing), against the host call of the same
function on NumPy arrays in the same run.  On a GPU, benchmarks/device.py compares whole
calls with CuPy and Numba.
"""
import time

import numpy as np

import ufuncgen.examples as ex
from ufuncgen import _device, device


def best_per_call(call, calls=20_000, repeats=5):
    call()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main():
    x = np.ones(1000, np.float32)
    host_out = np.empty_like(x)
    d = device.to_device(x)
    d_out = device.device_array(1000, np.float32)
    _device.launch_elementwise = lambda *args: None      # dispatch only
    host = best_per_call(lambda: ex.gaussian_pdf(x, 0.0, 1.0, out=host_out))
    with_out = best_per_call(lambda: ex.gaussian_pdf(d, 0.0, 1.0, out=d_out))
    allocating = best_per_call(lambda: ex.gaussian_pdf(d, 0.0, 1.0))
    print(f"backend: {device.backend()}")
    print(f"host call, 1,000 elements:           {host:7.1f} us")
    print(f"device dispatch, out=:               {with_out:7.1f} us  ({with_out / host:.1f}x the host call)")
    print(f"device dispatch, allocating output:  {allocating:7.1f} us  ({allocating / host:.1f}x the host call)")


if __name__ == "__main__":
    main()
