"""A function's `fastmath: true` reaches its device kernels: nvcc compiles them with
--use_fast_math (its other kernels keep --fmad=false and IEEE division), and the simulator
compiles them under GCC's fast math, as the host loops are.  The results need not agree to the
bit: GCC vectorizes the host loops with approximate instructions (float32 division through a
reciprocal estimate), the simulator runs a scalar loop, the GPU its own approximations; what
README promises is agreement within those approximations' error for normal values.  The
functions are tests/conftest.py's FASTMATH_FILE."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ufuncgen import device

NVCC = shutil.which("nvcc") or (Path("/usr/local/cuda/bin/nvcc")
                                if Path("/usr/local/cuda/bin/nvcc").exists() else None)

@pytest.fixture(scope="module")
def host_and_sim(tmp_path_factory, module_importer, fastmath_signatures, device_cuda_arch):
    return module_importer(tmp_path_factory.mktemp("fastmath"), "ufg_fastmath",
                           fastmath_signatures, "--cuda-arch", device_cuda_arch)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_simulator_compiles_a_fastmath_body_under_fast_math_as_the_host_loops_are(
        host_and_sim, dtype):
    if device.backend() != "sim":
        pytest.skip("compares the host loops with the simulator (UFUNCGEN_DEVICE=sim)")
    x = np.array([-0.0, 0.0, -1.5, 2.0, np.inf, -np.inf] * 7, dtype=dtype)
    fast_host = host_and_sim.plus_zero_fast(x)
    fast_sim = host_and_sim.plus_zero_fast(device.to_device(x)).copy_to_host()
    exact_host = host_and_sim.plus_zero_exact(x)
    exact_sim = host_and_sim.plus_zero_exact(device.to_device(x)).copy_to_host()
    # GCC's fast math drops the sign of zero: x + 0 is x, so -0.0 stays -0.0 ...
    assert np.signbit(fast_host[0]), "the host loop did not compile under fast math"
    np.testing.assert_array_equal(np.signbit(fast_sim), np.signbit(fast_host))
    np.testing.assert_array_equal(fast_sim, fast_host)
    # ... where IEEE arithmetic, everywhere else, gives +0.0, as NumPy's x + 0.0.
    want = x + dtype(0)
    np.testing.assert_array_equal(np.signbit(exact_host), np.signbit(want))
    np.testing.assert_array_equal(np.signbit(exact_sim), np.signbit(want))


# README's bound for float32 division and square root under fast math, for normal operands
# and results: GCC's reciprocal estimate and Newton step (within 3 ulp: rcpps on SSE and AVX2,
# 2 with AVX-512's rcp14ps), nvcc's div.approx (2 ulp for divisors in [2**-126, 2**126]).
FAST_FLOAT32_RELATIVE_ERROR = 2.0**-21


def test_fast_float32_division_is_within_the_stated_error_of_ieee_on_the_host_and_the_device(
        host_and_sim):
    """The host's vectorized division is approximate where the simulator's scalar one is IEEE:
    1558 of 4096 random quotients differed between the two, by an ulp or two; both are within
    README's bound of NumPy's x / y."""
    rng = np.random.default_rng(4096)
    n = 100_000
    x = (rng.uniform(1, 2, n) * np.exp2(rng.integers(-60, 60, n))).astype(np.float32)
    y = (rng.uniform(1, 2, n) * np.exp2(rng.integers(-60, 60, n))).astype(np.float32)
    y[:1 << 14] = (np.arange(1 << 14, dtype=np.uint32) << 9 | 0x3F800000).view(np.float32)
    x *= rng.choice(np.array([-1, 1], np.float32), n)
    want = (x / y).astype(np.float64)                       # IEEE, and every quotient normal
    assert (np.abs(want) >= np.finfo(np.float32).tiny).all() and np.isfinite(want).all()
    for got in (host_and_sim.ratio_fast(x, y),
                host_and_sim.ratio_fast(device.to_device(x), device.to_device(y)).copy_to_host()):
        error = np.abs(got.astype(np.float64) - want) / np.abs(want)
        assert error.max() <= FAST_FLOAT32_RELATIVE_ERROR, (error.max(), np.argmax(error))
    assert np.array_equal(host_and_sim.ratio_exact(x, y), x / y)


def _ptx_functions(ptx: str) -> dict[str, str]:
    """{entry name: its PTX text} of the kernels in a PTX file."""
    return {m[1]: m[2] for m in re.finditer(r"\.entry\s+(\w+)\s*\((.*?)\n\}", ptx, re.S)}


def _per_source_options(build_make: str, source: str) -> list[str]:
    """The options CMake gives one .cu file of its own (after the target's CUDA_FLAGS)."""
    for line in build_make.splitlines():
        if "nvcc" in line and line.rstrip().endswith(".o") and f"{source} -o" in line:
            return line.split("$(CUDA_FLAGS)")[1].split(" -MD ")[0].split()
    raise AssertionError(f"no nvcc command for {source}")


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit)")
def test_nvcc_compiles_only_the_fastmath_kernels_with_fast_math(tmp_path_factory, module_builder,
                                                               fastmath_signatures):
    work = tmp_path_factory.mktemp("fastmath_cuda")
    out = module_builder(work, "ufg_fastmath_cuda", fastmath_signatures, "--cuda-arch", "90")
    cmake = next(out.glob(".ufuncgen-build/*/cmake"))
    generated = next(cmake.glob("*_generated"))
    build_make = next(cmake.glob("CMakeFiles/*.dir/build.make")).read_text()
    if "nvcc" not in build_make:
        pytest.skip("this ufuncgen install builds modules without nvcc (UFUNCGEN_CUDA=OFF, "
                    "as tools/sanitize.sh's does)")
    import ufuncgen
    include = Path(ufuncgen.__file__).parent / "include"
    ptx = {}
    for name, flag in (("kernels_fastmath", "--use_fast_math"), ("kernels", "--fmad=false")):
        source = generated / f"ufg_fastmath_cuda_{name}.cu"
        options = _per_source_options(build_make, str(source))
        assert options == [flag], options              # what the module's build gave nvcc
        target = work / f"{name}.ptx"
        result = subprocess.run(
            [str(NVCC), "-ptx", "-arch=compute_90", "-O3", *options, f"-I{include}",
             f"-I{generated}", str(source), "-o", str(target)],
            capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        ptx[name] = _ptx_functions(target.read_text())
    fast = [body for entry, body in ptx["kernels_fastmath"].items() if "ufg_kernel_ratio_fast_float32" in entry]
    exact = [body for entry, body in ptx["kernels"].items() if "ufg_kernel_ratio_exact_float32" in entry]
    assert not any("ratio_exact" in entry for entry in ptx["kernels_fastmath"])
    assert not any("ratio_fast" in entry for entry in ptx["kernels"])
    assert len(fast) == 1 and len(exact) == 1
    # --use_fast_math: approximate division with denormals flushed; elsewhere IEEE division
    assert re.search(r"div\.(approx|full)\.ftz\.f32", fast[0]), fast[0]
    assert "div.rn.f32" in exact[0] and ".ftz" not in exact[0], exact[0]
