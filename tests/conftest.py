"""Test-session set-up and fixtures shared by every folder.

The device path runs under the simulator unless the caller chose a backend: CI has no GPU,
and the simulator runs the very same kernels on the CPU.  `UFUNCGEN_DEVICE=cuda pytest -m gpu`
runs the GPU tests on a real device.  The fixtures build small modules with `ufuncgen build`.
"""
from __future__ import annotations

import os
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("UFUNCGEN_DEVICE", "sim")


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a real CUDA GPU (UFUNCGEN_DEVICE=cuda)")


# A module for the thread and dask tests: one function that may use threads, one that opts out.
PROBE_FILE = """\
ufunc scaled(x) -> y
    doc: 3 x + 1, on several threads when large.
    types: float64(float64)
{
    y = (T)3 * x + (T)1;
}

ufunc scaled_serial(x) -> y
    doc: 3 x + 1, always on the calling thread.
    types: float64(float64)
    threads: false
{
    y = (T)3 * x + (T)1;
}
"""


# A module for the reduction-order tests: the same sum, reorderable or not.
REDUCE_ORDER_FILE = """\
ufunc plus(x, y) -> s
    types: float32(float32, float32)
    identity: 0
    associative: true
{
    s = x + y;
}

ufunc plus_in_order(x, y) -> s
    types: float32(float32, float32)
    identity: 0
{
    s = x + y;
}
"""


def build_module(work: Path, name: str, text: str, *options: str) -> Path:
    """`ufuncgen build` of `text` as module `name` into work/out; returns work/out."""
    work.mkdir(parents=True, exist_ok=True)
    (work / f"{name}.ufunc").write_text(text)
    # The interpreter running the tests, not whichever `ufuncgen` PATH finds first: a venv's
    # bin/ need not be on PATH, and another install would then be tested.
    argv = [sys.executable, "-m", "ufuncgen"]
    result = subprocess.run([*argv, "build", f"{name}.ufunc", "--name", name, "-o", "out",
                             *options], cwd=work, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"ufuncgen build failed:\n{result.stdout}\n{result.stderr}"
    return work / "out"


@pytest.fixture
def threads_restored():
    """Puts back the thread count and the parallel threshold a test changes."""
    import ufuncgen
    from ufuncgen import _core
    threads, threshold = ufuncgen.get_num_threads(), _core._parallel_threshold()
    yield
    _core._set_parallel_threshold(*threshold)
    ufuncgen.set_num_threads(threads)


def split_every_call(threads: int) -> None:
    """`threads` threads with no parallel threshold, so that every call large enough to split
    does (test fixtures put the thread count and threshold back: threads_restored)."""
    import ufuncgen
    from ufuncgen import _core
    ufuncgen.set_num_threads(threads)
    elements, work, _ = _core._parallel_threshold()
    _core._set_parallel_threshold(elements, work, 0)


@pytest.fixture(params=["serial", "threads"])
def threading_mode(request, threads_restored):
    """The test twice: on the calling thread alone, and on two threads with no parallel
    threshold, so that every call large enough to split does."""
    import ufuncgen
    if request.param == "threads":
        split_every_call(2)
    else:
        ufuncgen.set_num_threads(1)
    return request.param


@pytest.fixture
def on_thread_counts(threads_restored):
    """A function running call() on each of `counts` threads, every call large enough to
    split split between them: the results, in order."""
    def run(call, counts=(1, 2, 3)):
        results = []
        for threads in counts:
            split_every_call(threads)
            results.append(call())
        return results
    return run


@pytest.fixture(scope="session")
def module_builder():
    """build_module, for test folders that build modules of their own."""
    return build_module


def build_and_import(work: Path, name: str, text: str, *options: str):
    """build_module, then the module imported (sys.path left as it was)."""
    out = build_module(work, name, text, *options)
    sys.path.insert(0, str(out))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(out))


@pytest.fixture(scope="session")
def module_importer():
    """build_and_import, for test folders that build and use modules of their own."""
    return build_and_import


@pytest.fixture(scope="session")
def device_cuda_arch():
    """`--cuda-arch` of a module a test builds to run on the device path: kernels for the card
    at hand on a GPU (UFUNCGEN_DEVICE=cuda), host code alone where the simulator runs it (a
    host-only module has no kernels for a GPU's arrays)."""
    from ufuncgen import device
    return "native" if device.backend() == "cuda" and device.is_available() else "none"


@pytest.fixture(scope="session")
def compile_check_cuda_arch(device_cuda_arch):
    """`--cuda-arch` of a module whose kernels should at least compile where nvcc is found:
    one architecture (a fifth of the default list's nvcc time), or the card at hand on a GPU.
    Without nvcc the build is host-only, as any build is."""
    return "native" if device_cuda_arch == "native" else "75-real"


# Two functions alike but for `fastmath: true` (tests/gen/test_render.py,
# tests/device/test_fastmath_on_device.py).  plus_zero: IEEE gives +0.0 for -0.0 + 0, fast
# math (no signed zeros) may fold x + 0 to x; ratio: IEEE division, or an approximate one.
FASTMATH_FILE = """\
ufunc plus_zero_fast(x) -> y
    types: float64(float64), float32(float32)
    fastmath: true
{
    y = x + (T)0;
}

ufunc plus_zero_exact(x) -> y
    types: float64(float64), float32(float32)
{
    y = x + (T)0;
}

ufunc ratio_fast(x, y) -> r
    types: float32(float32, float32)
    fastmath: true
{
    r = x / y;
}

ufunc ratio_exact(x, y) -> r
    types: float32(float32, float32)
{
    r = x / y;
}
"""


@pytest.fixture(scope="session")
def fastmath_signatures() -> str:
    return FASTMATH_FILE


# The modules below are built for the device the run has (device_cuda_arch): their tests are
# about threads, dask and reduction order, not about nvcc, and kernels for five GPUs the run
# cannot use took 30 to 45 s of nvcc each.


@pytest.fixture(scope="session")
def probe_module_dir(tmp_path_factory, device_cuda_arch) -> Path:
    """The directory holding the built module `ufg_probe` (not on sys.path)."""
    return build_module(tmp_path_factory.mktemp("probe"), "ufg_probe", PROBE_FILE,
                        "--cuda-arch", device_cuda_arch)


@pytest.fixture(scope="session")
def probe_module_without_threads_dir(tmp_path_factory, device_cuda_arch) -> Path:
    """The same file built with `ufuncgen build --no-threads`, as `ufg_probe_serial`."""
    return build_module(tmp_path_factory.mktemp("probe_serial"), "ufg_probe_serial",
                        PROBE_FILE, "--no-threads", "--cuda-arch", device_cuda_arch)


@pytest.fixture(scope="session")
def reduce_order_module_dir(tmp_path_factory, device_cuda_arch) -> Path:
    """The directory holding the built module `ufg_order` (not on sys.path)."""
    return build_module(tmp_path_factory.mktemp("order"), "ufg_order", REDUCE_ORDER_FILE,
                        "--cuda-arch", device_cuda_arch)
