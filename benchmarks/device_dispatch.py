"""Host-side cost of a device call's dispatch, without a GPU.

    UFUNCGEN_DEVICE=sim python3 benchmarks/device_dispatch.py

Times a 1,000-element gaussian_pdf call through the device path under the simulator with its
kernels skipped, against the host call of the same function on NumPy arrays of the same size
in the same run.  Skipping is the simulator's switch (UFUNCGEN_SIM_SKIP_KERNELS=1 at startup,
or ufuncgen._device.sim_set_skip_kernels, which this script flips around the device timings):
every launch still goes through the whole call path (argument checks, type resolution,
broadcasting, output allocation, parameter packing, launch configuration, the device switch
and the launch record) and only the simulated kernel is left out, so what is measured is
the dispatch, whatever code implements it.  On a GPU, benchmarks/device.py compares whole
calls with CuPy and Numba.

The simulator runs synchronously here (UFUNCGEN_SIM_SYNC=1 unless set otherwise): what is
measured is the calling thread's work, and the asynchronous simulator's executor thread,
which stands in for the GPU and has nothing to do with dispatch, would share the CPU with it
(with kernels skipped it still runs every stream-ordered free).

Each time is the best of REPEATS runs of CALLS calls (timeit's min-of-N), in µs per call.
"""
import os
import sys
import timeit

os.environ.setdefault("UFUNCGEN_SIM_SYNC", "1")

import numpy as np  # noqa: E402 (after the simulator setting above)

import ufuncgen.examples as ex  # noqa: E402
from ufuncgen import _device, device  # noqa: E402

SIZE = 1000
CALLS = 5_000
REPEATS = 7


def best_per_call(call):
    call()      # warm caches (type resolution, the first allocation)
    return min(timeit.repeat(call, number=CALLS, repeat=REPEATS)) / CALLS * 1e6


def main():
    if device.backend() != "sim":
        sys.exit("device_dispatch.py measures the simulator's dispatch: run it with "
                 "UFUNCGEN_DEVICE=sim (on a GPU, benchmarks/device.py times whole calls)")
    x = np.ones(SIZE, np.float32)
    host_out = np.empty_like(x)
    d = device.to_device(x)
    d_out = device.device_array(SIZE, np.float32)

    host_with_out = best_per_call(lambda: ex.gaussian_pdf(x, 0.0, 1.0, out=host_out))
    host_allocating = best_per_call(lambda: ex.gaussian_pdf(x, 0.0, 1.0))
    previous = _device.sim_set_skip_kernels(True)
    try:
        launches = _device.launch_count()
        with_out = best_per_call(lambda: ex.gaussian_pdf(d, 0.0, 1.0, out=d_out))
        allocating = best_per_call(lambda: ex.gaussian_pdf(d, 0.0, 1.0))
        launched = _device.launch_count() - launches
    finally:
        _device.sim_set_skip_kernels(previous)
    expected = 2 * (1 + CALLS * REPEATS)
    assert launched == expected, f"{launched} launches recorded, {expected} expected"
    assert _device.last_launch()["ran"] is False

    print(f"backend: {device.backend()}, kernels skipped; {SIZE:,} float32 elements; "
          f"best of {REPEATS} x {CALLS:,} calls"
          + (f"; UFUNCGEN_SIM_SKIP_KERNELS={os.environ['UFUNCGEN_SIM_SKIP_KERNELS']}"
             if "UFUNCGEN_SIM_SKIP_KERNELS" in os.environ else ""))
    print(f"host call, out=:                   {host_with_out:7.2f} us")
    print(f"host call, allocating output:      {host_allocating:7.2f} us")
    print(f"device dispatch, out=:             {with_out:7.2f} us  "
          f"({with_out / host_with_out:.1f}x the host call)")
    print(f"device dispatch, allocating:       {allocating:7.2f} us  "
          f"({allocating / host_allocating:.1f}x the host call)")


if __name__ == "__main__":
    main()
