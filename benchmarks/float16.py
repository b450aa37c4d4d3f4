"""float16 and bfloat16 on the host: ufuncgen's loops against NumPy's own (float16) and
ml_dtypes' (bfloat16), same computation.

Run it with ufuncgen installed (``pip install .``)::

    python benchmarks/float16.py              # 10M elements, ~1 minute
    python benchmarks/float16.py --quick      # 1M elements, fewer repeats

A float16 loop loads each half into a float, runs the body in float32 and rounds the result
once (README, "float16"); NumPy's float16 loops do the same per operation.  Rows:

- add: ``ex.add`` of two float16 arrays against ``np.add`` (bit-identical results), with new
  outputs and with ``out=``;
- gelu: ``ex.gelu`` in float16 against the same function in float32, the cost of the
  conversions around the body (NumPy has no erf to compose it from);
- inner1d and l2_norm over rows of 16: against ``np.vecdot`` and ``np.sqrt(np.vecdot(x, x))``
  on the float16 arrays;
- add.reduce: ``ex.add.reduce`` (associative: steps in float, rounded once) against
  ``np.add.reduce`` (float32 steps, rounded once per loop call), 1-D and along the rows of a
  2-D array (results within one float16 ULP of NumPy's, checked: 1 row of 10,000 differs);
- bfloat16 add (when ml_dtypes is installed): a function with a ``bfloat16(bfloat16,
  bfloat16)`` loop, built with ``ufuncgen.load()``, against ``np.add`` on ml_dtypes.bfloat16
  arrays, which runs ml_dtypes' own loop (bit-identical results).

Ratios are ``peer time / ufuncgen time`` (above 1: ufuncgen faster), minimum times over
interleaved repeats on one core (benchmarks/host.py's ``time_interleaved``).  Markdown output.
"""
import argparse
import importlib.util
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from host import time_interleaved  # noqa: E402

import ufuncgen  # noqa: E402
import ufuncgen.examples as ex  # noqa: E402


def rows(n, rng):
    a = rng.uniform(-100, 100, n).astype(np.float16)
    b = rng.uniform(-100, 100, n).astype(np.float16)
    out = np.empty_like(a)
    x = rng.uniform(-4, 4, n).astype(np.float16)
    x32 = x.astype(np.float32)
    m = rng.uniform(-2, 2, (n // 16, 16)).astype(np.float16)
    assert np.array_equal(ex.add(a, b).view(np.uint16), np.add(a, b).view(np.uint16))
    yield "add", "new output", {"ufuncgen": lambda: ex.add(a, b), "np.add": lambda: np.add(a, b)}
    yield "add", "out=", {"ufuncgen": lambda: ex.add(a, b, out=out),
                          "np.add": lambda: np.add(a, b, out=out)}
    yield "gelu", "float16 vs float32", {"ufuncgen": lambda: ex.gelu(x),
                                         "float32 loop": lambda: ex.gelu(x32)}
    yield "inner1d", "rows of 16", {"ufuncgen": lambda: ex.inner1d(m, m),
                                    "np.vecdot": lambda: np.vecdot(m, m)}
    yield "l2_norm", "rows of 16", {"ufuncgen": lambda: ex.l2_norm(m),
                                    "np.sqrt(np.vecdot)": lambda: np.sqrt(np.vecdot(m, m))}
    s = rng.standard_normal(n).astype(np.float16)
    rows_of_1000 = s[: n // 1000 * 1000].reshape(-1, 1000)
    for ours, numpys in ((ex.add.reduce(s), np.add.reduce(s)),
                         (ex.add.reduce(rows_of_1000, axis=1), np.add.reduce(rows_of_1000, axis=1))):
        # The same float32 sum but for the order of its steps: the float16 results differ by
        # one ULP at most, where the sum lies next to a float16 rounding boundary.
        ulps = np.abs(np.asarray(ours).view(np.int16).astype(np.int64)
                      - np.asarray(numpys).view(np.int16).astype(np.int64))
        assert ulps.max() <= 1, ulps.max()
    yield "add.reduce", "1-D", {"ufuncgen": lambda: ex.add.reduce(s),
                                "np.add.reduce": lambda: np.add.reduce(s)}
    yield "add.reduce", "rows of 1,000", {"ufuncgen": lambda: ex.add.reduce(rows_of_1000, axis=1),
                                          "np.add.reduce": lambda: np.add.reduce(rows_of_1000,
                                                                                 axis=1)}


BFLOAT16_FILE = """\
ufunc badd(x, y) -> z
    types: bfloat16(bfloat16, bfloat16)
{
    z = x + y;
}
"""


def bfloat16_rows(n, rng):
    try:
        import ml_dtypes
    except ImportError:
        return
    bf16 = ufuncgen.load(BFLOAT16_FILE, name="ufg_bench_bfloat16", cuda_arch="none")
    a = rng.uniform(-100, 100, n).astype(ml_dtypes.bfloat16)
    b = rng.uniform(-100, 100, n).astype(ml_dtypes.bfloat16)
    out = np.empty_like(a)
    assert np.array_equal(bf16.badd(a, b).view(np.uint16), np.add(a, b).view(np.uint16))
    yield "add (bfloat16)", "new output", {"ufuncgen": lambda: bf16.badd(a, b),
                                           "np.add (ml_dtypes)": lambda: np.add(a, b)}
    yield "add (bfloat16)", "out=", {"ufuncgen": lambda: bf16.badd(a, b, out=out),
                                     "np.add (ml_dtypes)": lambda: np.add(a, b, out=out)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="1M elements, 3 repeats")
    args = parser.parse_args()
    n, repeat = (1_000_000, 3) if args.quick else (args.n, 7)
    ufuncgen.set_num_threads(1)
    rng = np.random.default_rng(0)
    print(f"float16 and bfloat16 on the host, {n:,} elements, one thread, NumPy {np.__version__}\n")
    print("| function | case | ufuncgen ms | peer | peer ms | peer / ufuncgen |")
    print("|---|---|---|---|---|---|")
    for name, case, candidates in [*rows(n, rng), *bfloat16_rows(n, rng)]:
        times = time_interleaved(candidates, repeat)
        (peer, peer_time), = ((k, v) for k, v in times.items() if k != "ufuncgen")
        ours = times["ufuncgen"]
        print(f"| {name} | {case} | {ours * 1e3:.2f} | {peer} | {peer_time * 1e3:.2f} "
              f"| {peer_time / ours:.2f}x |")
    if importlib.util.find_spec("ml_dtypes") is None:
        print("\nml_dtypes is not installed: no bfloat16 rows (pip install ml_dtypes)")


if __name__ == "__main__":
    main()
