#!/usr/bin/env bash
# ufuncgen: first run of the CUDA device path on a real GPU (written for one H100, CUDA 13 driver,
# no network).  Run from the project root, as ONE command of at most ~9 minutes:
#
#     bash .gpu/validate.sh             # logs under $OUT (default ./gpu_validation_out)
#
# This is the project's copy of ../shared/gpu/validate.sh, adapted to what the project has become
# (what changed, and why, is in the closing notes of the sessions that ran it on a GPU): at most
# 8 files back from $OUT, the prelude corpus test alone and first, the 2**31-element test alone,
# the rest of tests/device under xdist with a per-test timeout, compute-sanitizer over a handful
# of tests, and extra probes (reduction wall time, stream facts, NaN bits, a profile of the
# library calls, the 3d/3e reads of issue 11's probe 3). On a session lent a GPU:
#
#     echo /.gpu/ >> .git/info/exclude; rm -rf .gpu; mkdir .gpu; cp tools/gpu_validate.sh .gpu/validate.sh
#
# then one device run with carry [".gpu"] and `UFG_CUDA_ARCHS=90 DEADLINE=540 bash .gpu/validate.sh`.
#
# Stages (each under its own `timeout`, all under one deadline, so partial results survive):
#   0 env          nvidia-smi, nvcc, Python packages                     -> env.txt
#   1 install      offline build: a venv over the system site-packages, then
#                  pip install --no-build-isolation --no-deps . with UFUNCGEN_CUDA=ON forced
#                  (falls back to a direct CMake build if scikit-build-core is missing)
#                                                                          -> install.log
#   2 smoke        BUILT_WITH_CUDA, backend, one call per library vs NumPy -> smoke.log
#   3 tests        UFUNCGEN_DEVICE=cuda pytest tests/device (not the simulator-only
#                  test_runtime.py), then tests/conformance (cupy/torch/numba kinds)
#                                                                          -> pytest_device.log, pytest_conformance.log (+ .xml)
#   4 bench        benchmarks/device.py (falls back to --quick if the full run times out)
#                                                                          -> bench.log
#   5 probe        targeted measurements and stream-ordering probes:
#                  bandwidth, N-d (broadcast) kernels, reductions, host time per call,
#                  stream-ordering probes with torch side streams / CuPy non-blocking streams
#                                                                          -> probe.log
#   6 sanitizer    compute-sanitizer memcheck over a short GPU subset, CuPy's memory pool and
#                  PyTorch's caching allocator disabled           -> sanitizer.log, sanitizer_report.txt
#   summary.txt    one line per stage (rc, seconds), pass/fail counts, sanitizer error summary
#
# Knobs (environment): PYTHON (default python3), OUT, DEADLINE (seconds, default 540),
# UFG_CUDA_ARCHS (e.g. "90" to build only sm_90; default: the project's own list),
# WHEELHOUSE (a folder of wheels for missing build/test tools, installed with --no-index).
set -u

ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu_validation_out}
mkdir -p "$OUT"
DEADLINE=${DEADLINE:-540}
# ufuncgen.load() builds inside the tests name no architecture: one (CMake reads CUDAARCHS).
export CUDAARCHS=${UFG_CUDA_ARCHS:-90}
PY=${PYTHON:-python3}
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
rm -f "$OUT"/*.log "$OUT"/*.xml "$OUT"/sanitizer_report.txt
# At most 8 files come back from $OUT: scripts and junit XML live beside it, env goes into install.log.
AUX=${TMPDIR:-/tmp}/ufg-gpu-aux; mkdir -p "$AUX"
START=$SECONDS

note() { echo "$*" | tee -a "$SUMMARY"; }
remaining() { echo $(( DEADLINE - (SECONDS - START) )); }
# stage_timeout CAP: the smaller of CAP and what is left of the deadline (minus a reserve).
stage_timeout() {
    local left; left=$(( $(remaining) - ${2:-15} ))
    (( left < $1 )) && echo "$left" || echo "$1"
}
# run_stage NAME CAP LOGFILE CMD...: runs CMD under timeout, appends rc and time to the summary.
run_stage() {
    local name=$1 cap=$2 log=$3; shift 3
    local t; t=$(stage_timeout "$cap")
    if (( t < 20 )); then note "[$name] SKIPPED: only ${t}s of the deadline left"; return 99; fi
    local t0=$SECONDS
    echo "### $name: timeout ${t}s: $*" >> "$log"
    timeout -k 10 "$t" "$@" >> "$log" 2>&1
    local rc=$?
    note "[$name] rc=$rc ($((SECONDS - t0))s, limit ${t}s)$([ $rc = 124 ] && echo ' TIMED OUT')"
    return $rc
}

if [ ! -f "$ROOT/pyproject.toml" ] || [ ! -d "$ROOT/python/ufuncgen" ]; then
    echo "run this from the ufuncgen project root" >&2; exit 2
fi

# ------------------------------------------------------------------ 0 env
{
    echo "date: $(date -u)"; echo "host: $(uname -a)"; echo "nproc: $(nproc)"
    nvidia-smi 2>&1 | head -30
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total,compute_cap --format=csv 2>&1
    NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
    echo "nvcc: ${NVCC:-NOT FOUND}"; [ -n "$NVCC" ] && "$NVCC" --version | tail -2
    echo "compute-sanitizer: $(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo NOT FOUND)"
    echo "cmake: $(cmake --version 2>/dev/null | head -1 || echo NOT FOUND)  ninja: $(ninja --version 2>/dev/null || echo none)"
    "$PY" - <<'EOF'
import importlib, sys
print("python", sys.version.split()[0], sys.executable)
for m in ("numpy", "cupy", "torch", "numba", "numba_cuda", "pytest", "scikit_build_core", "jinja2", "cmake", "ninja"):
    try:
        mod = importlib.import_module(m)
        print(f"{m:18} {getattr(mod, '__version__', '?')}")
    except Exception as e:
        print(f"{m:18} MISSING ({type(e).__name__}: {e})")
try:
    import torch; print("torch.version.cuda", torch.version.cuda, "available", torch.cuda.is_available())
except Exception: pass
try:
    import cupy; print("cupy runtime", cupy.cuda.runtime.runtimeGetVersion(), "driver", cupy.cuda.runtime.driverGetVersion())
except Exception as e: print("cupy cuda:", e)
EOF
} > "$OUT/install.log" 2>&1
note "[env] written ($((SECONDS - START))s)"

NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -n "$NVCC" ]; then
    export CUDACXX="$NVCC"; export PATH="$(dirname "$NVCC"):$PATH"
else
    note "[env] nvcc NOT FOUND: the install below forces UFUNCGEN_CUDA=ON and will fail loudly"
fi
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)

# ------------------------------------------------------------------ 1 install
# A venv over the system site-packages (CuPy, torch, numba, pytest stay visible; pip writes
# into the venv, so no PEP 668 / permission trouble); fall back to the bare interpreter.
# An interpreter that already is a venv/conda env is used as it is (a nested venv would only
# see the base interpreter's packages, not CuPy/torch installed in the env).
VENV=${TMPDIR:-/tmp}/ufg-gpu-venv
VPY=$PY
if "$PY" -c "import sys; sys.exit(sys.prefix != sys.base_prefix or 'conda' in sys.version.lower())" \
        && "$PY" -m venv --system-site-packages --without-pip "$VENV" >> "$OUT/install.log" 2>&1 \
        && "$VENV/bin/python" -m pip --version >> "$OUT/install.log" 2>&1 \
        && "$VENV/bin/python" -c "import numpy" >> "$OUT/install.log" 2>&1; then
    VPY="$VENV/bin/python"
fi
echo "interpreter for the install and tests: $VPY" >> "$OUT/install.log"
if [ -n "${WHEELHOUSE:-}" ] && [ -d "$WHEELHOUSE" ]; then
    "$VPY" -m pip install --no-index --find-links "$WHEELHOUSE" scikit-build-core pytest >> "$OUT/install.log" 2>&1
fi

ARCH_ARG=${UFG_CUDA_ARCHS:+-DCMAKE_CUDA_ARCHITECTURES=$UFG_CUDA_ARCHS}
export CMAKE_BUILD_PARALLEL_LEVEL=$(nproc)
export CMAKE_ARGS="-DUFUNCGEN_CUDA=ON -DCMAKE_CUDA_FLAGS=--threads=0 $ARCH_ARG"
INSTALL_T0=$(date +%s)
# Importable from outside the tree, built with CUDA, and built by this run (not a stale install).
installed_ok() {
    ( cd "$OUT" && "$VPY" -c "import os, ufuncgen, ufuncgen._device as d, ufuncgen.examples as e; \
print('ufuncgen at', ufuncgen.__file__, 'BUILT_WITH_CUDA', d.BUILT_WITH_CUDA); \
assert d.BUILT_WITH_CUDA, 'built without CUDA'; \
assert os.path.getmtime(d.__file__) >= $INSTALL_T0 - 5, 'stale _device: ' + d.__file__; \
assert os.path.getmtime(e.__file__) >= $INSTALL_T0 - 5, 'stale examples: ' + e.__file__" )
}
if "$VPY" -c "import scikit_build_core" 2>/dev/null; then
    run_stage install 150 "$OUT/install.log" "$VPY" -m pip install --no-build-isolation --no-deps -v .
else
    echo "scikit-build-core is not installed: pip install --no-build-isolation cannot build here" >> "$OUT/install.log"
    note "[install] scikit-build-core MISSING (pip install --no-build-isolation would fail); trying a direct CMake build"
fi
if ! installed_ok >> "$OUT/install.log" 2>&1; then
    # Direct CMake build into a staging folder put on PYTHONPATH: needs cmake, jinja2, numpy.
    STAGE=${TMPDIR:-/tmp}/ufg-gpu-stage
    rm -rf "$STAGE" build/gpu-direct
    run_stage install-cmake 300 "$OUT/install.log" bash -c "
        cmake -S . -B build/gpu-direct -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE='$VPY' \
              -DUFUNCGEN_CUDA=ON -DCMAKE_CUDA_FLAGS=--threads=0 $ARCH_ARG &&
        cmake --build build/gpu-direct -j $(nproc) &&
        cmake --install build/gpu-direct --prefix '$STAGE' &&
        cp -rn python/ufuncgen/. '$STAGE/ufuncgen/'"
    export PYTHONPATH="$STAGE${PYTHONPATH:+:$PYTHONPATH}"
fi
if installed_ok >> "$OUT/install.log" 2>&1; then
    note "[install] OK: $(tail -1 "$OUT/install.log")"
else
    note "[install] FAILED: see install.log; later stages will fail too"
fi
grep -E "ufuncgen: CUDA kernels for|no CUDA compiler|Error|error:" "$OUT/install.log" | head -20 >> "$SUMMARY"

export UFUNCGEN_DEVICE=cuda
export PYTHONDONTWRITEBYTECODE=1
export CUPY_CACHE_DIR=${TMPDIR:-/tmp}/ufg-cupy-cache

# ------------------------------------------------------------------ 2 smoke
cat > "$AUX/smoke.py" <<'EOF'
import numpy as np
import ufuncgen.examples as ex
from ufuncgen import device, _device
print("backend", device.backend(), "available", device.is_available(), device.unavailable_reason(),
      "devices", device.device_count(), "BUILT_WITH_CUDA", _device.BUILT_WITH_CUDA,
      "SMs", _device.multiprocessor_count(0))
x = np.linspace(-3, 3, 1_000_003, dtype=np.float32)
want = ex.gaussian_pdf(x, 0.5, 1.5)
got = ex.gaussian_pdf(device.to_device(x), 0.5, 1.5).copy_to_host()
print("DeviceArray gaussian_pdf max |diff|", float(np.max(np.abs(got - want))))
for lib in ("cupy", "torch", "numba"):
    try:
        if lib == "cupy":
            import cupy as cp; r = cp.asnumpy(ex.gaussian_pdf(cp.asarray(x), 0.5, 1.5))
        elif lib == "torch":
            import torch; r = ex.gaussian_pdf(torch.as_tensor(x, device="cuda"), 0.5, 1.5).cpu().numpy()
        else:
            from numba import cuda; r = ex.gaussian_pdf(cuda.to_device(x), 0.5, 1.5).copy_to_host()
        print(lib, "max |diff|", float(np.max(np.abs(r - want))))
    except Exception as e:
        print(lib, "FAILED:", type(e).__name__, e)
s = ex.add.reduce(device.to_device(np.ones(10_000_000, np.float32))).copy_to_host()
print("add.reduce(1e7 ones) =", s)
device.synchronize()
print("smoke OK")
EOF
run_stage smoke 30 "$OUT/smoke.log" "$VPY" -u "$AUX/smoke.py"

# ------------------------------------------------------------------ 3 GPU tests
PYTEST_OPTS=(-p no:cacheprovider -v -rfE --tb=short --durations=15 -o console_output_style=classic
             -n 8 --timeout 60)
# The prelude corpus builds one module with nvcc (a module-scoped fixture; 389 loops, never
# finished on a GPU yet): first, alone, stopping at the first error, so that a failed build
# prints its diagnostics once.
run_stage tests-prelude 180 "$OUT/pytest_device.log" "$VPY" -u -m pytest -p no:cacheprovider -q -x \
    -rfE --tb=long tests/device/test_prelude_on_gpu.py
# More than 2**31 elements (its failure message was cut off with the log last time): alone.
run_stage tests-big 60 "$OUT/pytest_device.log" "$VPY" -u -m pytest -p no:cacheprovider -q -rfE \
    --tb=long "tests/device/test_gpu_libraries.py::test_more_than_two_to_the_31_elements_give_correct_results"
run_stage tests-device 170 "$OUT/pytest_device.log" "$VPY" -u -m pytest "${PYTEST_OPTS[@]}" \
    tests/device --ignore=tests/device/test_runtime.py --ignore=tests/device/test_prelude_on_gpu.py \
    --deselect "tests/device/test_gpu_libraries.py::test_more_than_two_to_the_31_elements_give_correct_results"
run_stage tests-conformance 30 "$OUT/pytest_conformance.log" "$VPY" -u -m pytest "${PYTEST_OPTS[@]}" \
    tests/conformance
for f in pytest_device.log pytest_conformance.log; do
    [ -f "$OUT/$f" ] && note "  $f: $(grep -E '^=+ .*(passed|failed|error).* =+$' "$OUT/$f" | tail -1)"
done

# ------------------------------------------------------------------ 4 benchmarks
run_stage bench 60 "$OUT/bench.log" "$VPY" -u benchmarks/device.py
if [ $? = 124 ]; then
    run_stage bench-quick 40 "$OUT/bench.log" "$VPY" -u benchmarks/device.py --quick
fi

# ------------------------------------------------------------------ 5 probes
cat > "$AUX/probe.py" <<'EOF'
"""Targeted GPU measurements and stream-ordering probes."""
import sys, time, traceback
import numpy as np
import ufuncgen.examples as ex
from ufuncgen import device, _device
import cupy as cp

def section(title):
    print(f"\n=== {title}", flush=True)

def gpu_time(fn, reps=10):
    """Best of `reps`, timed with events on the legacy default stream (ufuncgen's default)."""
    fn(); cp.cuda.Device().synchronize()
    a, b = cp.cuda.Event(), cp.cuda.Event()
    best = 1e9
    for _ in range(reps):
        a.record(cp.cuda.Stream.null); fn(); b.record(cp.cuda.Stream.null); b.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(a, b) / 1e3)
    return best

def host_per_call(fn, calls=2000):
    fn(); cp.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    cp.cuda.Device().synchronize()
    return (time.perf_counter() - t) / calls * 1e6

def probe(fn):
    try:
        fn()
    except Exception:
        traceback.print_exc(file=sys.stdout)
    sys.stdout.flush()

@probe
def bandwidth():
    section("contiguous bandwidth, 2**27 float32 (GB/s; % of cudaMemcpy D2D)")
    n = 1 << 27
    x = cp.random.standard_normal(n, dtype=cp.float32); y = cp.random.standard_normal(n, dtype=cp.float32)
    o = cp.empty_like(x); nb = x.nbytes
    memcpy = gpu_time(lambda: cp.cuda.runtime.memcpyAsync(o.data.ptr, x.data.ptr, nb, 3, 0))
    ref = 2 * nb / memcpy
    print(f"cudaMemcpyAsync D2D            {ref/1e9:8.0f} GB/s")
    k = cp.ElementwiseKernel("float32 x, float32 m, float32 s", "float32 y",
                             "float z = (x - m) / s; y = expf(-0.5f * z * z) / (s * 2.5066282746310002f)", "probe_pdf")
    for name, fn, traffic in [
        ("cupy copyto", lambda: cp.copyto(o, x), 2 * nb),
        ("ufuncgen add", lambda: ex.add(x, y, out=o), 3 * nb),
        ("cupy add", lambda: cp.add(x, y, out=o), 3 * nb),
        ("ufuncgen gaussian_pdf", lambda: ex.gaussian_pdf(x, 0.0, 1.0, out=o), 2 * nb),
        ("cupy ElementwiseKernel pdf", lambda: k(x, np.float32(0), np.float32(1), o), 2 * nb),
        ("ufuncgen add f32 strided x[::2]", lambda: ex.add(x[::2], y[::2], out=o[: n // 2]), 3 * nb // 2),
    ]:
        t = gpu_time(fn)
        print(f"{name:30} {traffic / t / 1e9:8.0f} GB/s  {traffic / t / ref:6.0%}  ({t*1e3:.3f} ms)")

@probe
def nd_kernels():
    section("N-d (non-collapsible) kernels: the 64-bit unravel, float32 (useful bytes / time)")
    m = 8192
    a = cp.random.standard_normal((m, 1), dtype=cp.float32); b = cp.random.standard_normal((1, m), dtype=cp.float32)
    o = cp.empty((m, m), cp.float32)
    big = cp.random.standard_normal((m, m), dtype=cp.float32)
    x3 = cp.random.standard_normal((256, 256, 1024), dtype=cp.float32)
    o3 = cp.empty((1024, 256, 256), cp.float32)
    for name, fn, traffic in [
        ("ufuncgen add (m,1)+(1,m)", lambda: ex.add(a, b, out=o), o.nbytes),
        ("cupy     add (m,1)+(1,m)", lambda: cp.add(a, b, out=o), o.nbytes),
        ("ufuncgen add big.T + big", lambda: ex.add(big.T, big, out=o), 3 * o.nbytes),
        ("cupy     add big.T + big", lambda: cp.add(big.T, big, out=o), 3 * o.nbytes),
        ("ufuncgen add 3-d transpose + 1.0", lambda: ex.add(x3.transpose(2, 0, 1), 1.0, out=o3), 2 * o3.nbytes),
        ("cupy     add 3-d transpose + 1.0", lambda: cp.add(x3.transpose(2, 0, 1), 1.0, out=o3), 2 * o3.nbytes),
    ]:
        t = gpu_time(fn)
        print(f"{name:36} {traffic / t / 1e9:8.0f} GB/s ({t*1e3:.3f} ms)")

@probe
def reductions():
    section("add.reduce vs cupy.sum (float32)")
    for shape, axis in [((1 << 27,), None), ((1 << 20,), None), ((16384, 8192), 1), ((16384, 8192), 0), ((8, 1 << 24), 1)]:
        x = cp.random.random(shape, dtype=cp.float32)
        t_u = gpu_time(lambda: ex.add.reduce(x, axis=axis), 5)
        t_c = gpu_time(lambda: cp.sum(x, axis=axis), 5)
        got = cp.asnumpy(ex.add.reduce(x, axis=axis)).astype(np.float64)
        want = cp.asnumpy(cp.sum(x.astype(cp.float64), axis=axis))
        rel = float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-30)))
        print(f"shape {str(shape):16} axis {axis}: ufuncgen {t_u*1e3:8.3f} ms  cupy {t_c*1e3:8.3f} ms  "
              f"ratio {t_u/t_c:6.1f}x  max rel err vs f64 {rel:.2e}")

@probe
def host_overhead():
    section("host time per call, 1000 float32 elements (us)")
    import torch
    x = cp.random.standard_normal(1000, dtype=cp.float32); o = cp.empty_like(x)
    d = device.to_device(cp.asnumpy(x)); do = device.device_array(1000, np.float32)
    t = torch.randn(1000, device="cuda"); to = torch.empty_like(t)
    k = cp.ElementwiseKernel("float32 x, float32 m, float32 s", "float32 y",
                             "float z = (x - m) / s; y = expf(-0.5f * z * z) / (s * 2.5066282746310002f)", "probe_pdf2")
    for name, fn in [
        ("ufuncgen DeviceArray out=", lambda: ex.gaussian_pdf(d, 0.0, 1.0, out=do)),
        ("ufuncgen DeviceArray alloc", lambda: ex.gaussian_pdf(d, 0.0, 1.0)),
        ("ufuncgen cupy out=", lambda: ex.gaussian_pdf(x, 0.0, 1.0, out=o)),
        ("ufuncgen cupy alloc (CAI sync!)", lambda: ex.gaussian_pdf(x, 0.0, 1.0)),
        ("ufuncgen torch out=", lambda: ex.gaussian_pdf(t, 0.0, 1.0, out=to)),
        ("ufuncgen torch alloc", lambda: ex.gaussian_pdf(t, 0.0, 1.0)),
        ("cupy ElementwiseKernel", lambda: k(x, np.float32(0), np.float32(1), o)),
        ("cupy x * 2 (ufunc)", lambda: cp.multiply(x, 2, out=o)),
        ("torch mul_", lambda: to.mul_(2)),
    ]:
        print(f"{name:34} {host_per_call(fn):7.1f}")
    import cProfile, pstats, io
    for label, fn in [("torch out=", lambda: ex.gaussian_pdf(t, 0.0, 1.0, out=to)),
                      ("cupy out=", lambda: ex.gaussian_pdf(x, 0.0, 1.0, out=o))]:
        prof = cProfile.Profile(); prof.enable()
        for _ in range(2000):
            fn()
        prof.disable(); text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(8)
        print("profile of 2000 calls,", label); print("\n".join(text.getvalue().splitlines()[:22]))
    # Does a ufuncgen call returning a CuPy array block the host?  (CuPy's CAI import
    # streamSynchronize()s the exported stream.)  Queue 50 ms of GPU work first.
    import torch
    torch.cuda._sleep(int(1e8)); t0 = time.perf_counter(); ex.gaussian_pdf(x, 0.0, 1.0)
    print(f"alloc call behind ~50 ms of queued work returned after {(time.perf_counter()-t0)*1e3:.1f} ms "
          "(>> 0.1 ms means the call blocked the host)")
    torch.cuda.synchronize(); t0 = time.perf_counter(); torch.cuda._sleep(int(1e8)); ex.gaussian_pdf(x, 0.0, 1.0, out=o)
    print(f"out= call behind queued work returned after {(time.perf_counter()-t0)*1e3:.1f} ms")
    torch.cuda.synchronize()

@probe
def nan_bits():
    section("NaN bits of Inf - Inf: host loop vs device kernel")
    for dt in (np.float32, np.float64):
        x = np.array([np.inf], dt); y = np.array([-np.inf], dt)
        h = ex.add(x, y); g = ex.add(device.to_device(x), device.to_device(y)).copy_to_host()
        print(dt.__name__, "host", h.view(f"u{h.itemsize}")[0].item().__format__("x"),
              "device", g.view(f"u{g.itemsize}")[0].item().__format__("x"))

@probe
def reduce_wall_time():
    section("add.reduce 2**27 f32 into a 0-d CuPy out=: wall time per call (host sync each), vs cupy.sum")
    x = cp.random.standard_normal(1 << 27, dtype=cp.float32); total = cp.empty((), cp.float32)
    def wall(fn, reps=10):
        fn(); cp.cuda.Device().synchronize(); best = 1e9
        for _ in range(reps):
            t = time.perf_counter(); fn(); cp.cuda.Device().synchronize()
            best = min(best, time.perf_counter() - t)
        return best
    u = wall(lambda: ex.add.reduce(x, out=total)); c = wall(lambda: cp.sum(x, out=total))
    print(f"wall: ufuncgen {u*1e3:.3f} ms  cupy {c*1e3:.3f} ms  ratio {u/c:.2f}x")
    u = gpu_time(lambda: ex.add.reduce(x, out=total)); c = gpu_time(lambda: cp.sum(x, out=total))
    print(f"events: ufuncgen {u*1e3:.3f} ms  cupy {c*1e3:.3f} ms  ratio {u/c:.2f}x")

@probe
def stream_facts():
    section("stream facts for probe 3 (issue 11)")
    import torch, ctypes
    s = torch.cuda.Stream()
    t = torch.ones(4, device="cuda")
    print("torch current stream", hex(torch.cuda.current_stream().cuda_stream),
          "default", hex(torch.cuda.default_stream().cuda_stream), "side", hex(s.cuda_stream))
    try:
        rt = ctypes.CDLL("libcudart.so.13")
    except OSError:
        import glob; rt = ctypes.CDLL(sorted(glob.glob("/usr/local/cuda/lib64/libcudart.so*"))[0])
    flags = ctypes.c_uint(99)
    print("cudaStreamGetFlags(side) rc", rt.cudaStreamGetFlags(ctypes.c_void_p(s.cuda_stream), ctypes.byref(flags)),
          "flags", flags.value, "(1 = cudaStreamNonBlocking)")
    print("torch CAI", {k: v for k, v in t.__cuda_array_interface__.items() if k != "data"})
    ex.add(t, 1.0, out=t)
    print("ufuncgen launch on torch out=:", _device.last_launch())

@probe
def stream_races():
    section("stream-ordering probes: mismatches > 0 = ordering ufuncgen did not provide")
    import torch
    n = 1 << 24
    SLEEP = int(2e8)                      # ~0.1 s of GPU spinning on the stream it is queued on

    def bad(t, want):
        torch.cuda.synchronize(); cp.cuda.Device().synchronize(); device.synchronize()
        if hasattr(t, "copy_to_host"):         # a DeviceArray (a DLPack-only input's result)
            t = t.copy_to_host()
        return int((t != want).sum())

    # 1. Inside `with torch.cuda.stream(s)` (s non-blocking): the input is made on s, the call
    #    uses ufuncgen's default stream (legacy); torch's CAI is v2 and names no stream.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP)
        x = torch.full((n,), 1.0, device="cuda")
        y = ex.add(x, 1.0)
    print("1 torch side-stream input, default stream=      :", bad(y, 2), "mismatches")
    # 2. The same with stream=s: expected 0.
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP)
        x = torch.full((n,), 3.0, device="cuda")
        y = ex.add(x, 1.0, stream=s)
    print("2 torch side-stream input, stream=s (control)   :", bad(y, 4), "mismatches")
    # 3. An out= result read by torch on its side stream (ufuncgen wrote it on the legacy
    #    stream, which is busy; s is non-blocking, so nothing orders the read).
    x = torch.full((n,), 5.0, device="cuda"); out = torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP)
    ex.add(x, 1.0, out=out)
    with torch.cuda.stream(s):
        seen = out.clone()
    print("3 out= read by torch on a side stream           :", bad(seen, 6), "mismatches")
    out.zero_(); torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP)
    torch.add(x, 1.0, out=out)
    with torch.cuda.stream(s):
        seen = out.clone()
    print("3c control: torch.add's own out=, same read     :", bad(seen, 6), "mismatches")
    # 3d/3e: why 3c is 0. Hypothesis: a clone on s that needs a new segment calls cudaMalloc,
    # which waits for the busy device, so the read comes late. Count the segments each clone
    # made, and read into a tensor allocated beforehand (copy_, no allocation while busy).
    def segments():
        return torch.cuda.memory_stats().get("segment.all.allocated", -1)
    dest = torch.empty(n, device="cuda")
    for label, writer in (("3d ufuncgen out=, read by copy_ into a tensor made before",
                           lambda: ex.add(x, 1.0, out=out)),
                          ("3e torch.add out=, read by copy_ into a tensor made before",
                           lambda: torch.add(x, 1.0, out=out))):
        for read in ("copy_", "clone"):
            out.zero_(); dest.zero_(); torch.cuda.synchronize()
            before = segments()
            torch.cuda._sleep(SLEEP)
            writer()
            with torch.cuda.stream(s):
                got = dest.copy_(out) if read == "copy_" else out.clone()
            print(label if read == "copy_" else label.replace("copy_ into a tensor made before", "clone"),
                  ":", bad(got, 6), "mismatches; new segments", segments() - before)
            del got
    # 4. The same with CuPy on a non-blocking stream.
    cs = cp.cuda.Stream(non_blocking=True)
    cx = cp.full(n, 7.0, cp.float32); cout = cp.zeros(n, cp.float32); cp.cuda.Device().synchronize()
    torch.cuda._sleep(SLEEP)
    ex.add(cx, 1.0, out=cout)
    with cs:
        cseen = cout.copy()
    print("4 out= read by CuPy on a non-blocking stream    :", bad(cseen, 8), "mismatches")
    # 5. A DLPack-only producer: buffer_of() calls __dlpack__() without stream=, so torch
    #    orders nothing; with stream=1 torch would make the legacy stream wait for its current one.
    class DLPackOnly:
        def __init__(self, t): self.t = t
        def __dlpack__(self, **kw): return self.t.__dlpack__(**kw)
        def __dlpack_device__(self): return self.t.__dlpack_device__()
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP)
        x = torch.full((n,), 9.0, device="cuda")
        y = ex.add(DLPackOnly(x), 1.0)
    print("5 DLPack-only input made on a side stream       :", bad(y, 10), "mismatches")
    # 6. ufuncgen's own DeviceArray written on stream a (busy), read on stream b: buffer_of()
    #    gives DeviceArrays no producer stream, so b does not wait for a.
    a_, b_ = device.Stream(), device.Stream()
    big = device.to_device(np.zeros(n, np.float32)); device.synchronize()
    with torch.cuda.stream(torch.cuda.ExternalStream(a_.handle)):
        torch.cuda._sleep(SLEEP)
    r1 = ex.add(big, 1.0, stream=a_)
    r2 = ex.add(r1, 1.0, stream=b_)
    device.synchronize()
    print("6 DeviceArray made on stream a, read on stream b:", int((r2.copy_to_host() != 2).sum()), "mismatches")
    # 7. Lifetime: r is read on a busy non-blocking stream, then dropped; its cudaFreeAsync is
    #    ordered on r's own (legacy) stream only, so the next legacy allocation may reuse and
    #    overwrite it before the delayed reader runs.
    r = ex.add(big, 1.0); device.synchronize()                 # r == 1 everywhere, legacy stream
    with torch.cuda.stream(s):
        torch.cuda._sleep(SLEEP)
    z = ex.add(r, 1.0, stream=s)                                # reads r after the sleep
    del r
    w = ex.add(big, 100.0)                                      # legacy: may reuse r's block now
    device.synchronize()
    print("7 freed while a side stream still reads it       :", int((z.copy_to_host() != 2).sum()), "mismatches")

EOF
run_stage probe 45 "$OUT/probe.log" "$VPY" -u "$AUX/probe.py"

# ------------------------------------------------------------------ 6 compute-sanitizer
if [ -n "$SAN" ]; then
    PLUG=${TMPDIR:-/tmp}/ufg-sanitize-plugin
    mkdir -p "$PLUG"
    cat > "$PLUG/ufg_sanitize_plugin.py" <<'EOF'
"""Loaded with -p: memory pools off, so memcheck sees every allocation's real bounds."""
def pytest_configure(config):
    try:
        import cupy
        cupy.cuda.set_allocator(None)
        cupy.cuda.set_pinned_memory_allocator(None)
        print("ufg_sanitize_plugin: CuPy memory pool disabled")
    except Exception as error:          # CuPy missing: nothing to disable
        print("ufg_sanitize_plugin: CuPy pool not disabled:", error)
EOF
    run_stage sanitizer 90 "$OUT/sanitizer.log" env PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
        PYTHONPATH="$PLUG${PYTHONPATH:+:$PYTHONPATH}" \
        "$SAN" --tool memcheck --leak-check no --report-api-errors explicit --print-limit 200 \
        --target-processes all --log-file "$AUX/sanitizer_report.txt" \
        "$VPY" -u -m pytest -p ufg_sanitize_plugin -p no:cacheprovider -q -rfE --tb=line --maxfail=25 \
        tests/device/test_reduce_on_device.py tests/device/test_accumulate_on_device.py \
        -k "(float16 and shape1) or (level and not 1000003)"
    note "  sanitizer: $(grep -h 'ERROR SUMMARY' "$AUX"/sanitizer_report.txt "$OUT/sanitizer.log" 2>/dev/null | tail -1)"
    note "  sanitizer pytest: $(grep -E '(passed|failed|error)' "$OUT/sanitizer.log" | tail -1)"
else
    note "[sanitizer] SKIPPED: compute-sanitizer not found"
fi

{ echo "### sanitizer_report.txt"; head -c 2000000 "$AUX/sanitizer_report.txt" 2>/dev/null; } >> "$OUT/sanitizer.log"
note "total $((SECONDS - START))s; logs in $OUT"
