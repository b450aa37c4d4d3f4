"""The host calls known to run slower than a peer (README, "Where the host loops are slow").

Run it from anywhere, with ufuncgen installed (about a minute)::

    python benchmarks/slow_cases.py            # 100,000 elements
    python benchmarks/slow_cases.py --n 1000000

Each row times a ufuncgen call and a peer computing the same values, interleaved in one
process on one thread (the order alternating, the minimum of the repeats), and prints the
peer's time over ufuncgen's: below 1 means ufuncgen is slower.  A row that reaches 1 has been
fixed; move it out of the README's list.  The Markdown table goes to stdout.
"""
import argparse
import gc
import time

import numpy as np

import ufuncgen
import ufuncgen.examples as ex

try:
    import numba
except ImportError:         # the .at rows' peer
    numba = None

USER_FUNCTIONS = r"""
ufunc log_of(x) -> y
    types: float32(float32), float64(float64)
{
    y = log(x);
}

ufunc exp_of(x) -> y
    types: float32(float32), float64(float64)
{
    y = exp(x);
}

gufunc log_likelihood(p) -> s
    layout: (n)->()
    types: float32(float32), float64(float64)
{
    T acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += log(p(i));
    s = acc;
}
"""


def seconds(call, number):
    start = time.perf_counter()
    for _ in range(number):
        call()
    return (time.perf_counter() - start) / number


def best_times(ours, peer, repeat):
    """The seconds a call of `ours` and of `peer` take: the minimum of `repeat` rounds, the two
    interleaved, their order alternating (benchmarks/strided.py times its rows so too)."""
    ours(), peer()
    number = max(1, int(0.02 / max(seconds(ours, 1), 1e-7)))
    best = {ours: float("inf"), peer: float("inf")}
    gc.disable()
    try:
        for r in range(repeat):
            for call in ((ours, peer) if r % 2 else (peer, ours)):
                best[call] = min(best[call], seconds(call, number))
    finally:
        gc.enable()
    return best[ours], best[peer]


def numba_add_at():
    if numba is None:
        return None

    @numba.njit
    def add_at(a, indices, b):
        for i in range(indices.shape[0]):
            a[indices[i]] += b
    return add_at


def cases(n, user, rng):
    """(call, peer name, ufuncgen's call, the peer's call)."""
    with_zeros = {}
    for dt in (np.float32, np.float64):
        x = (np.abs(rng.standard_normal(n)) + 0.01).astype(dt)
        x[::7] = 0
        with_zeros[dt] = x
    past_underflow = rng.uniform(-2000, 0, n).astype(np.float32)
    masked = rng.normal(0, 3, (max(1, n // 256), 256)).astype(np.float32)
    masked[:, -1] = -1e9                # one padded position a row, masked out
    masked = (masked - masked.max()).ravel()
    rows_with_zeros = rng.uniform(0.01, 1, (max(1, n // 16), 16)).astype(np.float32)
    rows_with_zeros[:, 3] = 0
    with_infs = rng.standard_normal(n).astype(np.float32)
    with_infs[::7] = np.inf
    grid = np.linspace(-10, 10, n).astype(np.float32)
    mean, sigma = np.float32(0), np.float32(0.1)
    scale = np.float32(1 / np.sqrt(2 * np.pi)) / sigma
    table = np.zeros(1000, np.float32)
    indices = rng.integers(0, 1000, n)
    add_at = numba_add_at()
    rows = [
        ("log(x) float32, a zero every 7th", "np.log",
         lambda: user.log_of(with_zeros[np.float32]), lambda: np.log(with_zeros[np.float32])),
        ("log(x) float64, a zero every 7th", "np.log",
         lambda: user.log_of(with_zeros[np.float64]), lambda: np.log(with_zeros[np.float64])),
        ("exp(x) float32 over [-2000, 0]", "np.exp",
         lambda: user.exp_of(past_underflow), lambda: np.exp(past_underflow)),
        ("exp(x) float32, one argument of 256 past underflow (a masked softmax)", "np.exp",
         lambda: user.exp_of(masked), lambda: np.exp(masked)),
        ("sum of log over rows of 16 float32, a zero in each", "np.log(p).sum(axis=1)",
         lambda: user.log_likelihood(rows_with_zeros),
         lambda: np.log(rows_with_zeros).sum(axis=1)),
        ("sincos float32, an Inf every 7th", "np.sin, np.cos",
         lambda: ex.sincos(with_infs), lambda: (np.sin(with_infs), np.cos(with_infs))),
        ("gaussian_pdf float32, sigma 0.1 over [-10, 10]", "NumPy composed",
         lambda: ex.gaussian_pdf(grid, mean, sigma),
         lambda: np.exp(np.float32(-0.5) * ((grid - mean) / sigma) ** 2) * scale),
    ]
    if add_at is not None:
        rows.append(("add.at(float32 array, indices, 1.0)", "Numba loop",
                     lambda: ex.add.at(table, indices, 1.0), lambda: add_at(table, indices, 1.0)))
    for side in (10, 32):        # sizes the shipped matmul has no `specialize:` line for
        stack = rng.standard_normal((max(1, n // side ** 2), side, side))
        rows.append((f"matmul {side}x{side} float64", "np.matmul",
                     lambda s=stack: ex.matmul(s, s), lambda s=stack: np.matmul(s, s)))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="elements per call")
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()
    ufuncgen.set_num_threads(1)
    user = ufuncgen.load(USER_FUNCTIONS, name="slow_cases", cuda_arch="none")
    rng = np.random.default_rng(0)
    print(f"{args.n:,} elements, one thread, peer time / ufuncgen time (below 1: slower)\n")
    print("| call | peer | ufuncgen us | peer us | peer/ufg |")
    print("|---|---|---:|---:|---:|")
    with np.errstate(all="ignore"):
        for label, peer_name, ours, peer in cases(args.n, user, rng):
            ours_s, peer_s = best_times(ours, peer, args.repeat)
            print(f"| {label} | {peer_name} | {ours_s * 1e6:.1f} | {peer_s * 1e6:.1f} "
                  f"| {peer_s / ours_s:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
