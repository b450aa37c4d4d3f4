"""Strided elementwise calls against NumPy (README, "How the host loops are fast": strided
calls).

Run it from anywhere, with ufuncgen installed (a minute, the first time compiling its module)::

    python benchmarks/strided.py                # 100,000 elements, one thread
    python benchmarks/strided.py --n 1000000

Each row times a ufuncgen call and a peer computing the same values, interleaved in one process
on one thread (the order alternating, the minimum of the repeats), and prints the peer's time
over ufuncgen's: above 1 means ufuncgen is faster.  To compare two builds, run this once with
each on PYTHONPATH, alternating, and take each row's best.
"""
import argparse
import os
import sys

import numpy as np

import ufuncgen
import ufuncgen.examples as ex

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slow_cases import best_times  # noqa: E402

FUNCTIONS = r"""
ufunc myadd2(x, y) -> sum
    types: float32(float32, float32), float64(float64, float64)
{
    sum = x + y;
}

ufunc axpy(x, y) -> r
    types: float32(float32, float32), float64(float64, float64)
{
    r = (T)2.5 * x + y;
}

ufunc clip0(x) -> y
    types: float32(float32), float64(float64)
{
    y = x > 0 ? x : (T)0;
}

ufunc poly2(x) -> y
    types: float32(float32), float64(float64)
{
    y = ((T)0.1 * x + (T)0.2) * x + (T)0.3;
}

ufunc poly4(x) -> y
    types: float32(float32), float64(float64)
{
    y = ((((T)0.1 * x + (T)0.2) * x + (T)0.3) * x + (T)0.4) * x + (T)0.5;
}

ufunc poly8(x) -> y
    types: float32(float32), float64(float64)
{
    y = ((((((((T)0.1 * x + (T)0.2) * x + (T)0.3) * x + (T)0.4) * x + (T)0.5) * x + (T)0.6) * x
          + (T)0.7) * x + (T)0.8) * x + (T)0.9;
}
"""


def poly_numpy(x, degree=8):
    y = x * x.dtype.type(0.1) + x.dtype.type(0.2)
    for c in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)[:degree - 1]:
        y = y * x + x.dtype.type(c)
    return y


def cases(m, n):
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64):
        name = np.dtype(dt).name
        a = rng.random(3 * n).astype(dt) + 0.5
        b = rng.random(3 * n).astype(dt) + 0.5
        o = np.empty(3 * n, dt)
        s3a, s3b = a[::3], b[::3]
        yield (f"add a[::3] + b[::3] {name}", lambda: m.myadd2(s3a, s3b), lambda: np.add(s3a, s3b))
        r2 = a[::-2][:n]
        c1 = b[:n]
        yield (f"add a[::-2] + b {name}", lambda: m.myadd2(r2, c1), lambda: np.add(r2, c1))
        s3 = a[::3]
        yield (f"add a[::3] + b {name}", lambda: m.myadd2(s3, c1), lambda: np.add(s3, c1))
        oc, o3 = o[:n], o[::3]
        c2 = a[:n]
        yield (f"add a + b -> out[::3] {name}", lambda: m.myadd2(c2, c1, out=o3),
               lambda: np.add(c2, c1, out=o3))
        c = rng.random((n // 100, 100)).astype(dt)
        col3, col5 = c[:, 3], c[:, 5]
        yield (f"add c[:, 3] + c[:, 5] (1000x100) {name}" if n == 100_000 else
               f"add columns {name}", lambda: m.myadd2(col3, col5), lambda: np.add(col3, col5))
        z = (rng.random(n) + 1j * rng.random(n)).astype(np.complex64 if dt == np.float32
                                                          else np.complex128)
        zr, zi = z.real, z.imag
        yield (f"add z.real + z.imag {name}", lambda: m.myadd2(zr, zi), lambda: np.add(zr, zi))
        s2a, s2b = a[::2][:n], b[::2][:n]
        yield (f"add a[::2] + b[::2] {name}", lambda: m.myadd2(s2a, s2b), lambda: np.add(s2a, s2b))
        ra, rb = a[::-1][:n], b[::-1][:n]
        yield (f"add a[::-1] + b[::-1] {name}", lambda: m.myadd2(ra, rb), lambda: np.add(ra, rb))
        yield (f"add a + b (contiguous) {name}", lambda: m.myadd2(c2, c1, out=oc),
               lambda: np.add(c2, c1, out=oc))
        two = dt(2.5)
        yield (f"axpy 2.5 a[::3] + b[::3] {name}", lambda: m.axpy(s3a, s3b),
               lambda: np.add(np.multiply(two, s3a), s3b))
        half = dt(-0.5)
        sa = (a - 1)[::3]
        zero = dt(0)
        yield (f"clip0 (a - 1)[::3] {name}", lambda: m.clip0(sa), lambda: np.maximum(sa, zero))
        yield (f"poly2 a[::3] {name}", lambda: m.poly2(s3a), lambda: poly_numpy(s3a, 2))
        yield (f"poly4 a[::3] {name}", lambda: m.poly4(s3a), lambda: poly_numpy(s3a, 4))
        yield (f"poly8 a[::3] {name}", lambda: m.poly8(s3a), lambda: poly_numpy(s3a))
        yield (f"hypot a[::3], b[::3] {name}", lambda: ex.hypot(s3a, s3b),
               lambda: np.hypot(s3a, s3b))
        sig = b[::3]
        yield (f"gaussian_pdf a[::3] {name}", lambda: ex.gaussian_pdf(s3a, half, sig),
               lambda: np.exp(half * ((s3a - half) / sig) ** 2) / (sig * dt(2.5066282746310002)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="", help="rows whose name holds this text")
    args = parser.parse_args()
    ufuncgen.set_num_threads(1)
    m = ufuncgen.load(FUNCTIONS, name="bench_strided_calls", cuda_arch="none")
    print(f"| call ({args.n:,} elements, one thread) | ufuncgen us | peer us | peer / ufuncgen |")
    print("|---|---:|---:|---:|")
    for name, ours, peer in cases(m, args.n):
        if args.only not in name:
            continue
        t_ours, t_peer = best_times(ours, peer, args.repeat)
        print(f"| {name} | {t_ours * 1e6:.1f} | {t_peer * 1e6:.1f} | {t_peer / t_ours:.2f}x |",
              flush=True)


if __name__ == "__main__":
    main()
