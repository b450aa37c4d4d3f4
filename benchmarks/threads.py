"""Multi-core host loops: ufuncgen on 1 thread and on all, against numexpr and Numba parallel.

    python benchmarks/threads.py              # 10M elements
    python benchmarks/threads.py --n 1000000

For gaussian_pdf float64 and add float32: the time on one thread and on all threads
(`ufuncgen.set_num_threads`), the speedup, and the same for numexpr (`set_num_threads`) and
Numba `@vectorize(target='parallel')` (`numba.set_num_threads`) when installed.  Outputs are
written to a preallocated `out=` (the compute, which threads split) and, in a second column,
allocated by each call (adds the kernel's page faults).  Times are the best of interleaved
rounds, as in benchmarks/host.py.  Then the threshold evidence: small calls at default
settings against one thread (must not be slower), and the crossover when every call is forced
onto the pool.
"""
import argparse
import math
import os
import timeit

import numpy as np

import ufuncgen
import ufuncgen.examples as ex
from ufuncgen import _core

try:
    import numexpr
except ImportError:
    numexpr = None
try:
    import numba
except ImportError:
    numba = None

SQRT_2PI = 2.50662827463100050242


def best(candidates, rounds=7, min_seconds=0.02):
    numbers = {k: max(1, math.ceil(min_seconds / max(timeit.timeit(f, number=1), 1e-9)))
               for k, f in candidates.items()}
    result = {k: math.inf for k in candidates}
    names = list(candidates)
    for r in range(rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            result[k] = min(result[k], timeit.timeit(candidates[k], number=numbers[k]) / numbers[k])
    return result


def with_threads(n, f, lib="ufuncgen"):
    """f, run with the library's thread count set to n (each library's own setting only:
    numba.set_num_threads alone costs some 100 us)."""
    setter = {"ufuncgen": ufuncgen.set_num_threads,
              "numexpr": numexpr.set_num_threads if numexpr else None,
              "Numba parallel": numba.set_num_threads if numba else None}[lib]

    def run():
        setter(n)
        return f()
    return run


def peers(name, dt, args, out):
    c = dt.type
    result = {"ufuncgen": (lambda: getattr(ex, name)(*args, out=out),
                           lambda: getattr(ex, name)(*args))}
    if numexpr:
        expr = ("exp(half * ((x - mean) / sigma) ** 2) / (sigma * norm)" if name == "gaussian_pdf"
                else "x + y")
        names = ("x", "mean", "sigma") if name == "gaussian_pdf" else ("x", "y")
        local = dict(zip(names, args), half=c(-0.5), norm=c(SQRT_2PI))
        result["numexpr"] = (lambda: numexpr.evaluate(expr, local_dict=local, out=out),
                             lambda: numexpr.evaluate(expr, local_dict=local))
    if numba:
        sig = f"{dt.name}({', '.join([dt.name] * len(args))})"
        if name == "gaussian_pdf":
            half, norm = c(-0.5), c(SQRT_2PI)

            @numba.vectorize([sig], target="parallel")
            def f(x, mean, sigma):
                z = (x - mean) / sigma
                return math.exp(half * z * z) / (sigma * norm)
        else:
            @numba.vectorize([sig], target="parallel")
            def f(x, y):
                return x + y
        result["Numba parallel"] = (lambda: f(*args, out=out), lambda: f(*args))
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    all_threads = ufuncgen.get_num_threads()
    rng = np.random.default_rng(0)
    print(f"# ufuncgen threads benchmark: n = {args.n:,}, {os.cpu_count()} CPUs, "
          f"all threads = {all_threads}\n")
    print("| function | dtype | library | 1 thread ms | all ms | speedup "
          "| 1 thread ms (alloc) | all ms (alloc) | speedup (alloc) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    times = {}
    for name, dtype in (("gaussian_pdf", "float64"), ("add", "float32")):
        dt = np.dtype(dtype)
        if name == "gaussian_pdf":
            call_args = (rng.standard_normal(args.n).astype(dt), dt.type(0.1), dt.type(1.3))
        else:
            call_args = tuple(rng.uniform(-10, 10, args.n).astype(dt) for _ in range(2))
        out = np.empty(args.n, dt)
        candidates = {}
        for lib, (pre, alloc) in peers(name, dt, call_args, out).items():
            for threads in (1, all_threads):
                candidates[(lib, threads, "out")] = with_threads(threads, pre, lib)
                candidates[(lib, threads, "alloc")] = with_threads(threads, alloc, lib)
        t = best(candidates, args.rounds)
        for lib in dict.fromkeys(k[0] for k in t):
            one, many = t[(lib, 1, "out")], t[(lib, all_threads, "out")]
            one_a, many_a = t[(lib, 1, "alloc")], t[(lib, all_threads, "alloc")]
            times[(name, lib)] = (one, many, one_a, many_a)
            print(f"| {name} | {dtype} | {lib} | {one*1e3:.2f} | {many*1e3:.2f} | {one/many:.2f}x "
                  f"| {one_a*1e3:.2f} | {many_a*1e3:.2f} | {one_a/many_a:.2f}x |", flush=True)
    ufuncgen.set_num_threads(all_threads)

    print("\n## Targets (ratios from this one run)\n")
    g = times[("gaussian_pdf", "ufuncgen")]
    print(f"- {'PASS' if g[0]/g[1] >= 1.8 else 'FAIL'}: gaussian_pdf float64 all threads vs one: "
          f"{g[0]/g[1]:.2f}x with out= (target >= 1.8x); {g[2]/g[3]:.2f}x allocating")
    if ("gaussian_pdf", "numexpr") in times:
        ne = times[("gaussian_pdf", "numexpr")]
        print(f"- {'PASS' if ne[1]/g[1] >= 1.2 else 'FAIL'}: gaussian_pdf float64 vs numexpr, "
              f"{all_threads} threads each: {ne[1]/g[1]:.2f}x with out= (target >= 1.2x); "
              f"{ne[3]/g[3]:.2f}x allocating")
    a = times[("add", "ufuncgen")]
    print(f"- {'PASS' if a[0]/a[1] >= 0.95 else 'FAIL'}: add float32 all threads vs one: "
          f"{a[0]/a[1]:.2f}x with out= (target: no slower); {a[2]/a[3]:.2f}x allocating")

    print("\n## Threshold evidence (add float32 / gaussian_pdf float64, out=, us per call)\n")
    print("threshold (elements, work, time_ns):", tuple(_core._parallel_threshold()))
    print("\n| n | add 1 thr | add default | add forced | gauss 1 thr | gauss default | gauss forced |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    default = _core._parallel_threshold()
    for n in (1, 1000, 16384, 32768, 65536, 262144, 1048576):
        xa, ya = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        xg = rng.standard_normal(n)
        oa, og = np.empty_like(xa), np.empty_like(xg)
        fa = lambda: ex.add(xa, ya, out=oa)
        fg = lambda: ex.gaussian_pdf(xg, 0.1, 1.3, out=og)

        def forced(f):
            def run():
                _core._set_parallel_threshold(1, 1, 0)
                try:
                    return f()
                finally:
                    _core._set_parallel_threshold(*default)
            return run
        t = best({"a1": with_threads(1, fa), "ad": with_threads(all_threads, fa),
                  "af": with_threads(all_threads, forced(fa)), "g1": with_threads(1, fg),
                  "gd": with_threads(all_threads, fg), "gf": with_threads(all_threads, forced(fg))},
                 args.rounds, 0.005)
        print(f"| {n:,} | " + " | ".join(f"{t[k]*1e6:.2f}" for k in ("a1", "ad", "af", "g1", "gd", "gf"))
              + " |", flush=True)
    ufuncgen.set_num_threads(all_threads)


if __name__ == "__main__":
    main()
