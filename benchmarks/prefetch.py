"""The gufunc input prefetch (src/include/ufuncgen/prefetch.h), on and off, against Numba.

    python benchmarks/prefetch.py            # the shipped gufuncs at benchmarks/host.py's sizes
    python benchmarks/prefetch.py --quick    # fewer rounds

Builds the shipped gufuncs (l2_norm, matmul, rgb_to_gray, pairwise_distances, as
signatures/examples.ufunc writes them) twice with `ufuncgen.load()` into a temporary cache:
once as shipped, once with the prefetch turned off (`-DUFG_PREFETCH_MIN_BYTES=...` larger than
any call, given through CFLAGS).  Both are timed in one process on one thread, interleaved
with `@numba.guvectorize` (benchmarks/host.py's peers and inputs), and checked to give the same
bits.  The table gives the times and each build's ratio to Numba; the last column is what the
prefetch gains (off / on).  Re-run it after changing the constants of prefetch.h to tune them
for another machine: they may be set the same way, through CFLAGS.
"""
import argparse
import os
import pathlib
import re
import sys
import tempfile

import numpy as np

import ufuncgen

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import host  # noqa: E402  (benchmarks/host.py: its timing, peers and inputs)

GUFUNCS = ("l2_norm", "matmul", "rgb_to_gray", "pairwise_distances")
SIGNATURES = pathlib.Path(__file__).resolve().parents[1] / "signatures" / "examples.ufunc"
NEVER = "-DUFG_PREFETCH_MIN_BYTES=0x7fffffffffffffffL"


def gufunc_text():
    """The four definitions, as signatures/examples.ufunc has them."""
    text = SIGNATURES.read_text()
    blocks = [re.search(rf"^gufunc {name}\(.*?^\}}\n", text, re.S | re.M) for name in GUFUNCS]
    return "\n".join(block.group(0) for block in blocks)


def build(text, cflags, name):
    previous = os.environ.get("CFLAGS")
    os.environ["CFLAGS"] = " ".join(filter(None, [previous, cflags]))
    try:
        return ufuncgen.load(text, name=name)
    finally:
        if previous is None:
            del os.environ["CFLAGS"]
        else:
            os.environ["CFLAGS"] = previous


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 7")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if host.numba is None:
        sys.exit("needs numba (pip install ufuncgen[bench])")
    with tempfile.TemporaryDirectory() as cache:
        os.environ["UFUNCGEN_CACHE_DIR"] = cache
        text = gufunc_text()
        on = build(text, "", "prefetch_on")
        off = build(text, NEVER, "prefetch_off")
        ufuncgen.set_num_threads(1)
        rng = np.random.default_rng(args.seed)
        print("# Gufunc input prefetch, on and off (one thread, one process)\n")
        print("| function | dtype | on ms | off ms | Numba ms | Numba/on | Numba/off "
              "| off/on |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for dtype in (np.dtype("float32"), np.dtype("float64")):
            peers = host.numba_gufuncs(dtype)
            for name, inputs, _, _ in host.gufunc_cases(dtype, rng, 1.0):
                with_on, with_off = getattr(on, name), getattr(off, name)
                if with_on(*inputs).tobytes() != with_off(*inputs).tobytes():
                    sys.exit(f"{name} {dtype}: the two builds differ")
                times = host.time_interleaved(
                    {"on": lambda: with_on(*inputs), "off": lambda: with_off(*inputs),
                     "Numba": lambda f=peers[name]: f(*inputs)},
                    3 if args.quick else 7)
                print(f"| {host.gufunc_label(name, inputs)} | {dtype} | {times['on'] * 1e3:.2f} "
                      f"| {times['off'] * 1e3:.2f} "
                      f"| {times['Numba'] * 1e3:.2f} | {times['Numba'] / times['on']:.2f}x "
                      f"| {times['Numba'] / times['off']:.2f}x "
                      f"| {times['off'] / times['on']:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
