"""Elementwise calls whose arguments are not all contiguous, against NumPy and Numba.

    python benchmarks/broadcast.py            # 10M elements, one thread
    python benchmarks/broadcast.py --quick    # fewer rounds

NumPy hands a loop a scalar operand (`a + 2.0`), a row or a column of an outer operation
(`a[:, None] + b`) and a strided view as strides: 0 for a broadcast input, a multiple of the
itemsize for a view.  ufuncgen's loop driver (src/include/ufuncgen/host_loops.h) runs such a
call in blocks, a broadcast input's block filled once per call and a strided input's gathered
per block.  Each row times the same call three ways, interleaved in one process on one
thread (benchmarks/host.py's time_interleaved): ufuncgen, NumPy's own ufunc, and
`@numba.vectorize` over the same body, and checks that they agree.
"""
import argparse
import os
import sys

import numpy as np

import ufuncgen
import ufuncgen.examples as ex

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host  # noqa: E402  (benchmarks/host.py: its timing and peers)


def numba_add(dtype):
    if host.numba is None:
        return None
    t = np.dtype(dtype).name
    return host.numba.vectorize([f"{t}({t}, {t})"], target="cpu")(lambda x, y: x + y)


def cases(dtype, n, rng):
    """(label, ufuncgen call, NumPy's ufunc, its arguments)."""
    side = int(np.sqrt(n))
    a = rng.random(n).astype(dtype)
    b = rng.random(n).astype(dtype)
    wide = rng.random(2 * n).astype(dtype)
    column = rng.random((side, 1)).astype(dtype)
    row = rng.random((1, side)).astype(dtype)
    scalar = np.dtype(dtype).type(2.5)
    return [
        ("a + scalar", ex.add, np.add, (a, scalar)),
        ("a[::2] + b (strided)", ex.add, np.add, (wide[::2], b)),
        (f"outer: column + row ({side}x{side})", ex.add, np.add, (column, row)),
        (f"hypot outer ({side}x{side})", ex.hypot, np.hypot, (column, row)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 7")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    ufuncgen.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    print(f"# Broadcast and strided elementwise calls ({args.n:,} elements, one thread)\n")
    print("| call | dtype | ufuncgen ms | NumPy ms | Numba ms | NumPy/ufg | Numba/ufg |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for dtype in (np.float32, np.float64):
        peer_add = numba_add(dtype)
        for label, ours, numpy_fn, operands in cases(dtype, args.n, rng):
            expected = ours(*operands)
            if not np.allclose(expected, numpy_fn(*operands), rtol=1e-6):
                sys.exit(f"{label} {np.dtype(dtype).name}: ufuncgen and NumPy differ")
            candidates = {"ufuncgen": lambda f=ours, o=operands: f(*o),
                          "NumPy": lambda f=numpy_fn, o=operands: f(*o)}
            if peer_add is not None and numpy_fn is np.add:
                if not np.array_equal(expected, peer_add(*operands)):
                    sys.exit(f"{label} {np.dtype(dtype).name}: ufuncgen and Numba differ")
                candidates["Numba"] = lambda f=peer_add, o=operands: f(*o)
            times = host.time_interleaved(candidates, 3 if args.quick else 7)
            ours_ms, numpy_ms = times["ufuncgen"], times["NumPy"]
            numba_ms = times.get("Numba")
            numba_time = "-" if numba_ms is None else f"{numba_ms * 1e3:.2f}"
            numba_ratio = "-" if numba_ms is None else f"{numba_ms / ours_ms:.2f}x"
            print(f"| {label} | {np.dtype(dtype).name} | {ours_ms * 1e3:.2f} "
                  f"| {numpy_ms * 1e3:.2f} | {numba_time} | {numpy_ms / ours_ms:.2f}x "
                  f"| {numba_ratio} |", flush=True)

if __name__ == "__main__":
    main()
