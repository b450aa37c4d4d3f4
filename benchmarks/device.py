"""Device benchmarks: ufuncgen's generated CUDA kernels against CuPy, Numba and the CPU.

    UFUNCGEN_DEVICE=cuda python3 benchmarks/device.py [--quick]

Prints, all measured in one run on one GPU:
  - effective bandwidth of `add` and `gaussian_pdf` (float32, 1e8 elements) as a percentage of
    a device-to-device copy of the same bytes (target >= 90%);
  - host-side time per call for a 1K-element device call, against CuPy's ElementwiseKernel for
    the same expression and Numba's CUDA @vectorize (targets: no slower than CuPy, >= 3x faster
    than Numba);
  - batched 4x4 `matmul` over 1e6 matrices against cupy.matmul;
  - a 10M-element vector add on the GPU against the CPU (ufuncgen's host loop);
  - issue 12's targets: `add.reduce` of 2**27 float32 against cupy.sum (within 1.2x),
    `add.accumulate` of 2**27 float32 against cupy.cumsum (within 1.5x; a chunked scan, `add`
    is associative), and float16 `add` bandwidth as a share of a copy (>= 85%); a `fastmath:`
    function is not among the seed examples, so device fast math has no row.
Without a GPU it says so and exits: simulator timings mean nothing.
"""
import argparse
import sys
import time

import numpy as np

from ufuncgen import device
import ufuncgen.examples as ex


def best_of(fn, repeat, sync):
    fn()
    sync()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def per_call(fn, calls, sync):
    """Host-side time per call: many asynchronous calls, one synchronize at the end."""
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1e7 elements instead of 1e8")
    args = parser.parse_args()
    if device.backend() != "cuda" or not device.is_available():
        print(f"no GPU: backend {device.backend()}, {device.unavailable_reason() or 'simulator'}; "
              "device figures need a real GPU")
        return 0
    try:
        import cupy as cp
    except ImportError:
        print("CuPy is needed for the device benchmarks (allocation, copies, peers)")
        return 0
    sync = cp.cuda.Device().synchronize
    n = 10_000_000 if args.quick else 100_000_000
    rows = []

    x = cp.random.standard_normal(n, dtype=cp.float32)
    y = cp.random.standard_normal(n, dtype=cp.float32)
    out = cp.empty_like(x)
    copy_t = best_of(lambda: cp.copyto(out, x), 10, sync)            # reads n, writes n
    add_t = best_of(lambda: ex.add(x, y, out=out), 10, sync)         # reads 2n, writes n
    pdf_t = best_of(lambda: ex.gaussian_pdf(x, 0.0, 1.0, out=out), 10, sync)   # reads n, writes n
    copy_bw = 2 * 4 * n / copy_t
    rows.append(("add f32 bandwidth vs D2D copy", f"{3 * 4 * n / add_t / copy_bw:.0%}", ">= 90%"))
    rows.append(("gaussian_pdf f32 bandwidth vs copy", f"{2 * 4 * n / pdf_t / copy_bw:.0%}", ">= 90%"))

    small = cp.random.standard_normal(1000, dtype=cp.float32)
    small_out = cp.empty_like(small)
    kernel = cp.ElementwiseKernel("float32 x, float32 m, float32 s", "float32 y",
                                  "float z = (x - m) / s; y = expf(-0.5f * z * z) / (s * 2.5066282746310002f)",
                                  "bench_gaussian_pdf")
    ours = per_call(lambda: ex.gaussian_pdf(small, 0.0, 1.0, out=small_out), 2000, sync)
    cupy_t = per_call(lambda: kernel(small, np.float32(0), np.float32(1), small_out), 2000, sync)
    rows.append(("1K call, host time: ufuncgen", f"{ours * 1e6:.1f} us", ""))
    rows.append(("1K call: CuPy ElementwiseKernel / ufuncgen", f"{cupy_t / ours:.2f}x", ">= 1.0x"))
    try:
        from numba import cuda, vectorize
        import math

        @vectorize(["float32(float32, float32, float32)"], target="cuda")
        def numba_pdf(v, m, s):
            z = (v - m) / s
            return math.exp(-0.5 * z * z) / (s * 2.5066282746310002)

        d_small = cuda.as_cuda_array(small)
        d_out = cuda.as_cuda_array(small_out)
        numba_t = per_call(lambda: numba_pdf(d_small, np.float32(0), np.float32(1), out=d_out), 500,
                           cuda.synchronize)
        rows.append(("1K call: Numba CUDA vectorize / ufuncgen", f"{numba_t / ours:.2f}x", ">= 3x"))
    except Exception as error:      # not installed, or one that cannot compile for this NumPy
        rows.append(("1K call: Numba CUDA vectorize", f"unavailable: {error!r}"[:60], ""))

    a = cp.random.standard_normal((1_000_000, 4, 4), dtype=cp.float32)
    b = cp.random.standard_normal((1_000_000, 4, 4), dtype=cp.float32)
    c = cp.empty_like(a)
    ours = best_of(lambda: ex.matmul(a, b, out=c), 10, sync)
    theirs = best_of(lambda: cp.matmul(a, b, out=c), 10, sync)
    rows.append(("batched 4x4 matmul 1e6: cupy.matmul / ufuncgen", f"{theirs / ours:.2f}x", ""))

    m = 10_000_000
    hx, hy = np.random.standard_normal((2, m))
    hout = np.empty(m)
    cpu = best_of(lambda: ex.add(hx, hy, out=hout), 5, lambda: None)
    gx, gy = cp.asarray(hx), cp.asarray(hy)
    gout = cp.empty_like(gx)
    gpu = best_of(lambda: ex.add(gx, gy, out=gout), 10, sync)
    rows.append(("10M add f64: CPU (ufuncgen host) / GPU", f"{cpu / gpu:.1f}x", ""))

    try:    # issue 12's rows, new and never run on a GPU yet: a failure is a row, not a crash
        long = cp.random.standard_normal(2**27 // (10 if args.quick else 1), dtype=cp.float32)
        total = cp.empty((), dtype=cp.float32)
        ours = best_of(lambda: ex.add.reduce(long, out=total), 10, sync)
        theirs = best_of(lambda: cp.sum(long, out=total), 10, sync)
        rows.append(("add.reduce 2**27 f32: ufuncgen / cupy.sum", f"{ours / theirs:.2f}x",
                     "<= 1.2x"))
        running = cp.empty_like(long)
        ours = best_of(lambda: ex.add.accumulate(long, out=running), 5, sync)
        theirs = best_of(lambda: cp.cumsum(long, out=running), 5, sync)
        rows.append(("add.accumulate 2**27 f32: ufuncgen / cupy.cumsum", f"{ours / theirs:.2f}x",
                     "<= 1.5x"))

        hx16, hy16 = x.astype(cp.float16), y.astype(cp.float16)
        out16 = cp.empty_like(hx16)
        copy16_t = best_of(lambda: cp.copyto(out16, hx16), 10, sync)
        add16_t = best_of(lambda: ex.add(hx16, hy16, out=out16), 10, sync)
        copy16_bw = 2 * 2 * n / copy16_t
        rows.append(("add f16 bandwidth vs D2D copy", f"{3 * 2 * n / add16_t / copy16_bw:.0%}",
                     ">= 85%"))
    except Exception as error:      # reported, so that the rows above still print
        rows.append(("issue 12 rows", f"failed: {error!r}"[:60], ""))

    try:    # walked in memory order since the first GPU run, never measured since
        side = 256 if args.quick else 512
        cube = cp.random.standard_normal((side,) * 3, dtype=cp.float32).transpose(2, 0, 1)
        ours = best_of(lambda: ex.add(cube, np.float32(1)), 10, sync)
        theirs = best_of(lambda: cube + np.float32(1), 10, sync)
        rows.append(("3-d transposed x + 1: ufuncgen / CuPy", f"{ours / theirs:.2f}x", "<= 1.0x"))
    except Exception as error:
        rows.append(("3-d transposed row", f"failed: {error!r}"[:60], ""))

    width = max(len(r[0]) for r in rows)
    print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    for name, value, target in rows:
        print(f"{name:<{width}}  {value:>10}  {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
