"""Build times: `ufuncgen build` and `ufuncgen.load()`, in seconds (absolute targets, issue 14).

    python benchmarks/build.py              # every row (nvcc rows when nvcc is found)
    python benchmarks/build.py --no-cuda    # host-only rows

Rows:
  host-only build     `ufuncgen build` of a one-function file, --cuda-arch none, from nothing
                      (CMake configure included)                            target <= 5 s
  1-arch build        the same with --cuda-arch 90 (needs nvcc)
  5-arch build        the same with the default architectures (needs nvcc)
  no-change rebuild   `ufuncgen build` again with nothing changed            target <= 1 s
  cached load()       ufuncgen.load() of the built file in a new process, the call alone
                      (NumPy and ufuncgen already imported, as in a user's script)
                                                                            target <= 50 ms
  cached load() process   the whole new process: `python -c "import ufuncgen; load(...)"`
Each command-line row runs once from a clean folder (a build is long and a second run would
find it built); the load() rows take the best of several new processes.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

FILE = """\
ufunc scaled(x) -> y
    doc: 3 x + 1.
    types: float64(float64)
{
    y = (T)3 * x + (T)1;
}
"""


def timed_build(work: str, *options: str) -> float:
    """Seconds for `ufuncgen build` in `work` (a subprocess, as a user runs it)."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "ufuncgen", "build", "scaled.ufunc",
                             "--name", "scaled", "-o", "out", *options],
                            cwd=work, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"ufuncgen build {' '.join(options)} failed:\n{result.stderr}")
    return elapsed


def fresh_build(root: str, label: str, *options: str) -> float:
    work = os.path.join(root, label)
    os.makedirs(work)
    with open(os.path.join(work, "scaled.ufunc"), "w") as f:
        f.write(FILE)
    return timed_build(work, *options)


LOAD = """\
import time
import numpy, ufuncgen
start = time.perf_counter()
module = ufuncgen.load({path!r}, cuda_arch="none")
print(time.perf_counter() - start)
assert module.scaled(1.0) == 4.0
"""


def cached_load(path: str, cache: str, runs: int) -> tuple[float, float]:
    """(best load() call, best whole process) over `runs` new processes, after one load()
    that builds."""
    env = {**os.environ, "UFUNCGEN_CACHE_DIR": cache}
    code = LOAD.format(path=path)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True)
    calls, processes = [], []
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                             capture_output=True, text=True).stdout
        processes.append(time.perf_counter() - start)
        calls.append(float(out.strip()))
    return min(calls), min(processes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-cuda", action="store_true", help="skip the nvcc rows")
    parser.add_argument("--runs", type=int, default=7, help="new processes for load() rows")
    args = parser.parse_args()
    nvcc = not args.no_cuda and (shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"))

    root = tempfile.mkdtemp(prefix="ufuncgen-bench-build-")
    try:
        rows = [("host-only build (--cuda-arch none)", fresh_build(root, "host", "--cuda-arch", "none"), 5.0)]
        rows.append(("no-change rebuild", timed_build(os.path.join(root, "host"), "--cuda-arch", "none"), 1.0))
        if nvcc:
            rows.append(("1-arch build (--cuda-arch 90)", fresh_build(root, "one", "--cuda-arch", "90"), None))
            rows.append(("5-arch build (default archs)", fresh_build(root, "five"), None))
        call, process = cached_load(os.path.join(root, "host", "scaled.ufunc"),
                                    os.path.join(root, "cache"), args.runs)
        rows.append(("cached load() in a new process: the call", call, 0.050))
        rows.append(("cached load() in a new process: whole process", process, None))
    finally:
        shutil.rmtree(root, ignore_errors=True)

    print(f"{'':48} {'seconds':>9}  target")
    for label, seconds, target in rows:
        verdict = "" if target is None else f"<= {target:g} s  {'ok' if seconds <= target else 'MISSED'}"
        print(f"{label:48} {seconds:9.3f}  {verdict}")


if __name__ == "__main__":
    main()
