"""complex64 and complex128 on the host: ufuncgen bodies against NumPy and its peers.

Run it with ufuncgen installed (``pip install .``; numexpr and Numba from ``.[bench]`` are
used when present)::

    python benchmarks/complex.py              # 4M elements, ~1 minute (after a first build)
    python benchmarks/complex.py --quick      # 500k elements, fewer repeats

The functions are built from the signature text below with ``ufuncgen.load`` (cached after
the first run).  Rows, each against the same computation:

- multiply: ``x * y`` against ``np.multiply``: one pass over memory each;
- fma: ``x * y + z`` against NumPy's composed expression (two passes, a temporary) and
  numexpr (which computes complex in complex128 only: complex64 inputs give a complex128
  result there);
- magnitude: ``abs(z)`` against ``np.abs``;
- rotate: ``z * exp(I * angle)`` against ``z * np.exp(1j * angle)`` and numexpr;
- mandelbrot: the escape time of z -> z*z + c (at most 64 steps), a data-dependent loop that
  does not vectorize, against Numba ``@vectorize`` of the same loop (NumPy has no loop to
  compose it from).

Loops of complex signatures are compiled without FMA (README, "Complex numbers").  Ratios are
``peer time / ufuncgen time`` (above 1: ufuncgen faster), minimum times over interleaved
repeats on one core (benchmarks/host.py's ``time_interleaved``).  Markdown output.
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host import time_interleaved  # noqa: E402

import ufuncgen  # noqa: E402

SIGNATURES = """\
ufunc multiply(x, y) -> out
    types: complex64(complex64, complex64), complex128(complex128, complex128)
{
    out = x * y;
}

ufunc fma(x, y, z) -> out
    types: complex64(complex64, complex64, complex64), complex128(complex128, complex128, complex128)
{
    out = x * y + z;
}

ufunc magnitude(z) -> r
    types: float32(complex64), float64(complex128)
{
    r = abs(z);
}

ufunc rotate(z, angle) -> out
    types: complex64(complex64, float32), complex128(complex128, float64)
{
    out = z * exp(I * angle);
}

ufunc mandelbrot(c) -> steps
    types: int32(complex64), int32(complex128)
{
    T z = 0;
    int32_t k = 0;
    while (k < 64 && real(z) * real(z) + imag(z) * imag(z) <= 4) {
        z = z * z + c;
        k++;
    }
    steps = k;
}
"""


def _numexpr():
    try:
        import numexpr
    except ImportError:
        return None
    numexpr.set_num_threads(1)
    return numexpr


def _numba_mandelbrot():
    try:
        import numba
    except ImportError:
        return None

    @numba.vectorize(["int32(complex64)", "int32(complex128)"])
    def mandelbrot(c):
        z = c * 0
        k = 0
        while k < 64 and z.real * z.real + z.imag * z.imag <= 4:
            z = z * z + c
            k += 1
        return k
    return mandelbrot


def rows(m, n, dtype, rng):
    part = np.dtype(dtype).type(0).real.dtype
    x = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype)
    y = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype)
    z = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype)
    angle = rng.uniform(-np.pi, np.pi, n).astype(part)
    c = (rng.uniform(-2, 0.5, n) + 1j * rng.uniform(-1.2, 1.2, n)).astype(dtype)
    ne = _numexpr()
    yield "multiply", {"ufuncgen": lambda: m.multiply(x, y), "np.multiply": lambda: x * y}
    yield "fma", {"ufuncgen": lambda: m.fma(x, y, z), "NumPy x * y + z": lambda: x * y + z}
    if ne is not None:
        yield "fma", {"ufuncgen": lambda: m.fma(x, y, z),
                      "numexpr": lambda: ne.evaluate("x * y + z", local_dict={"x": x, "y": y, "z": z})}
    yield "magnitude", {"ufuncgen": lambda: m.magnitude(x), "np.abs": lambda: np.abs(x)}
    unit = part.type(1)
    yield "rotate", {"ufuncgen": lambda: m.rotate(x, angle),
                     "NumPy z * exp(1j * angle)": lambda: x * np.exp(1j * unit * angle)}
    if ne is not None:
        yield "rotate", {"ufuncgen": lambda: m.rotate(x, angle),
                         "numexpr": lambda: ne.evaluate("x * exp(1j * angle)",
                                                         local_dict={"x": x, "angle": angle})}
    numba_mandelbrot = _numba_mandelbrot()
    if numba_mandelbrot is not None:
        # The same loop; near the set's boundary an ULP of difference in z (LLVM's and GCC's
        # code for the product) may change a count, so most, not all, counts agree.
        agree = np.mean(m.mandelbrot(c[:10_000]) == numba_mandelbrot(c[:10_000]))
        assert agree > 0.99, agree
        small = c[: n // 8]
        yield "mandelbrot", {"ufuncgen": lambda: m.mandelbrot(small),
                             "Numba @vectorize": lambda: numba_mandelbrot(small)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=4_000_000)
    parser.add_argument("--quick", action="store_true", help="500k elements, 3 repeats")
    args = parser.parse_args()
    n, repeat = (500_000, 3) if args.quick else (args.n, 7)
    m = ufuncgen.load(SIGNATURES, "ufg_bench_complex")
    ufuncgen.set_num_threads(1)
    rng = np.random.default_rng(0)
    print(f"complex on the host, {n:,} elements (mandelbrot: {n // 8:,}), one thread, "
          f"NumPy {np.__version__}\n")
    print("| function | dtype | ufuncgen ms | peer | peer ms | peer / ufuncgen |")
    print("|---|---|---|---|---|---|")
    for dtype in (np.complex64, np.complex128):
        for name, candidates in rows(m, n, dtype, rng):
            times = time_interleaved(candidates, repeat)
            (peer, peer_time), = ((k, v) for k, v in times.items() if k != "ufuncgen")
            ours = times["ufuncgen"]
            print(f"| {name} | {np.dtype(dtype).name} | {ours * 1e3:.2f} | {peer} "
                  f"| {peer_time * 1e3:.2f} | {peer_time / ours:.2f}x |")


if __name__ == "__main__":
    main()
