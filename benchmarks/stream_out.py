"""Large elementwise calls into preallocated outputs, whose outputs stream past the caches
(README, "How the host loops are fast": outputs past the caches), against NumPy and peers.

Run it from anywhere, with ufuncgen installed (about half a minute)::

    python benchmarks/stream_out.py                 # 10M elements, one thread
    python benchmarks/stream_out.py --n 3000000 --threads 2

Each row times a ufuncgen call and a peer computing the same values into the same kind of
output, interleaved in one process (the order alternating, the minimum of the repeats), and
prints the peer's time over ufuncgen's: above 1 means ufuncgen is faster.  The outputs of the
`out=` rows are written once before timing, as a buffer a program reuses is; the `new array`
rows allocate theirs (NumPy's fresh pages, which do not stream).  To compare two builds, run
this once with each on PYTHONPATH, alternating, and take each row's best.
"""
import argparse
import os
import sys

import numpy as np

import ufuncgen
import ufuncgen.examples as ex

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slow_cases import best_times  # noqa: E402

try:
    import numexpr
except ImportError:
    numexpr = None


def cases(n):
    rng = np.random.default_rng(0)
    for dt in (np.float32, np.float64):
        name = np.dtype(dt).name
        x, y = rng.standard_normal(n).astype(dt), rng.standard_normal(n).astype(dt)
        out = np.zeros(n, dt)
        yield (f"add x + y -> out= {name}", lambda: ex.add(x, y, out=out),
               "np.add", lambda: np.add(x, y, out=out))
        if numexpr is not None:
            yield (f"add x + y -> out= {name}", lambda: ex.add(x, y, out=out),
                   "numexpr", lambda: numexpr.evaluate("x + y", local_dict={"x": x, "y": y}, out=out))
        two = dt(2)
        yield (f"add x + 2 -> out= {name}", lambda: ex.add(x, two, out=out),
               "np.add", lambda: np.add(x, two, out=out))
        inplace = x.copy()
        yield (f"add in place, out=x {name}", lambda: ex.add(inplace, y, out=inplace),
               "np.add", lambda: np.add(inplace, y, out=inplace))
        yield (f"add x + y, new array {name}", lambda: ex.add(x, y),
               "np.add", lambda: np.add(x, y))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    ufuncgen.set_num_threads(args.threads)
    if numexpr is not None:
        numexpr.set_num_threads(args.threads)
    print(f"| call ({args.n:,} elements, {args.threads} thread(s)) | peer | ufuncgen ms "
          "| peer ms | peer / ufuncgen |")
    print("|---|---|---:|---:|---:|")
    for name, ours, peer_name, peer in cases(args.n):
        t_ours, t_peer = best_times(ours, peer, args.repeat)
        print(f"| {name} | {peer_name} | {t_ours * 1e3:.2f} | {t_peer * 1e3:.2f} "
              f"| {t_peer / t_ours:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
