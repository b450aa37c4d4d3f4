"""The shipped functions built for a CPU without AVX-512: the host loops compiled once, for
x86-64-v3 (AVX2), with the target clones off (`-DUFG_NO_TARGET_CLONES`), as a machine without
AVX-512 runs them.  The tests' own machine picks the AVX-512 clones of the installed module, so
without this build the AVX2 code of most elementwise loops would never run here.  What does
not depend on the vector width gives the installed module's bits; what calls libmvec (whose
256-bit variants may round otherwise) stays within a few ULP of it, with the same NaNs and the
same floating-point errors."""
from __future__ import annotations

import os
import pathlib
import platform
import shutil
import subprocess

import numpy as np
import pytest

import ufuncgen.examples as ex

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "signatures" / "examples.ufunc"
# The flags /proc/cpuinfo shows for what x86-64-v3 adds to x86-64-v2.
X86_64_V3 = {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave"}


def _cpu_runs_x86_64_v3() -> bool:
    if platform.machine() != "x86_64" or not os.path.exists("/proc/cpuinfo"):
        return False
    flags = set()
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    return X86_64_V3 <= flags and ("abm" in flags or "lzcnt" in flags)


pytestmark = pytest.mark.skipif(not _cpu_runs_x86_64_v3() or shutil.which("gcc") is None,
                                reason="needs an x86-64-v3 (AVX2) CPU and gcc")


@pytest.fixture(scope="module")
def avx2(tmp_path_factory, module_importer):
    work = tmp_path_factory.mktemp("avx2_build")
    saved = os.environ.get("CFLAGS")
    # After any flags the run has (a sanitizer's), which -march here overrides.
    os.environ["CFLAGS"] = f"{saved or ''} -DUFG_NO_TARGET_CLONES -march=x86-64-v3".strip()
    try:
        module = module_importer(work, "ufg_examples_avx2", EXAMPLES.read_text(),
                                 "--cuda-arch", "none")
    finally:
        if saved is None:
            del os.environ["CFLAGS"]
        else:
            os.environ["CFLAGS"] = saved
    return module


def test_the_build_holds_avx2_code_and_no_avx512(avx2):
    if shutil.which("objdump") is None:
        pytest.skip("needs objdump")
    library = pathlib.Path(avx2.__file__)
    code = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(library)],
                          capture_output=True, text=True, check=True).stdout
    assert "%ymm" in code
    assert "%zmm" not in code


def _values(dtype, n, rng):
    """Random values of dtype with every special value among them."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        x[:4] = [info.min, info.max, 0, 1][:n]
        return x
    part = np.float64 if dtype.kind == "c" else dtype
    x = (rng.standard_normal(n) * 10).astype(part)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-300, -1e300, 1e30, 1e-40],
                       dtype=np.float64)
    with np.errstate(all="ignore"):
        x[rng.integers(0, n, 64)] = special[rng.integers(0, len(special), 64)].astype(part)
        if dtype.kind == "c":
            x = (x + 1j * x[::-1]).astype(dtype)
    return x


def _errors_and_result(fn, *args):
    """The floating-point errors a call raises (each kind alone) and its result."""
    raised = []
    for kind in ("invalid", "divide", "over", "under"):
        with np.errstate(all="ignore", **{kind: "raise"}):
            try:
                fn(*args)
            except FloatingPointError:
                raised.append(kind)
    with np.errstate(all="ignore"):
        return raised, fn(*args)


def _same_bits(a, b):
    if isinstance(a, tuple):
        return all(_same_bits(x, y) for x, y in zip(a, b, strict=True))
    nan = np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)
    return (a.dtype == b.dtype and np.array_equal(nan, np.isnan(b) if b.dtype.kind in "fc"
                                                  else nan)
            and np.array_equal(a[~nan], b[~nan]))


# (function, dtypes, inputs, ULP): the installed module's bits (0), or within that many ULP
# with the same NaNs and infinities where libmvec's 256-bit and 512-bit variants compute (each
# within 4 ULP of the exact result).
ELEMENTWISE = [
    ("add", ["int8", "uint16", "int32", "int64", "float16", "float32", "float64"], 2, 0),
    ("custom_op", ["float64"], 2, 0),
    ("hypot", ["float32", "float64"], 2, 0),
    ("lucas", ["int64"], 1, 0),
    ("mandelbrot", ["complex64", "complex128"], 1, 0),
    ("gaussian_pdf", ["float32", "float64"], 3, 8),
    ("gelu", ["float32", "float64"], 1, 8),
    ("sincos", ["float32", "float64"], 1, 8),
    ("polar_distance", ["float32", "float64"], 4, 8),
]


def _arguments(name, dtype, n, nin, rng):
    args = [_values(dtype, n, rng) for _ in range(nin)]
    with np.errstate(all="ignore"):
        if name == "lucas":
            return [a % 200 for a in args]
        if name == "mandelbrot":
            return [a / 8 for a in args]        # around the set, where the counts vary
        if name == "gaussian_pdf":
            args[2] = np.abs(args[2]) + np.dtype(dtype).type(0.5)
    return args


def _within_ulp(got, want, maxulp):
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,), strict=True):
        assert np.array_equal(np.isnan(g), np.isnan(w))
        finite, infinite = np.isfinite(w), np.isinf(w)
        assert np.array_equal(g[infinite], w[infinite])
        np.testing.assert_array_max_ulp(g[finite], w[finite], maxulp=maxulp)


@pytest.mark.parametrize("name, dtypes, nin, maxulp", ELEMENTWISE,
                         ids=[row[0] for row in ELEMENTWISE])
def test_an_elementwise_loop_gives_the_installed_results_and_errors_at_any_vector_width(
        avx2, name, dtypes, nin, maxulp):
    rng = np.random.default_rng(3)
    for dtype in dtypes:
        for n in (1, 5, 31, 257, 5000):
            args = _arguments(name, dtype, n, nin, rng)
            want_errors, want = _errors_and_result(getattr(ex, name), *args)
            got_errors, got = _errors_and_result(getattr(avx2, name), *args)
            assert got_errors == want_errors, (name, dtype, n)
            if maxulp == 0:
                assert _same_bits(got, want), (name, dtype, n)
            else:
                _within_ulp(got, want, maxulp)


def test_a_reduction_gives_the_installed_bits_whatever_the_vector_width(avx2):
    # The associative reduction's order is fixed by its lanes constants, not by the CPU.
    rng = np.random.default_rng(4)
    for dtype in ("float16", "float32", "float64", "int64"):
        for n in (3, 100, 10_000, 100_003):
            x = _values(dtype, n, rng)
            if np.dtype(dtype).kind in "fc":
                x = np.where(np.isfinite(x), x, 1).astype(dtype)
            with np.errstate(all="ignore"):
                assert _same_bits(avx2.add.reduce(x), ex.add.reduce(x)), (dtype, n)
                rows = x[: n // 10 * 10].reshape(-1, 10)
                assert _same_bits(avx2.add.reduce(rows, axis=1), ex.add.reduce(rows, axis=1))
                assert _same_bits(avx2.add.accumulate(x), ex.add.accumulate(x)), (dtype, n)


GUFUNCS = [
    ("l2_norm", lambda r: [r(300, 10)]),
    ("inner1d", lambda r: [r(300, 7), r(300, 7)]),
    ("matmul", lambda r: [r(50, 4, 4), r(50, 4, 4)]),
    ("matmul", lambda r: [r(50, 5, 5), r(50, 5, 5)]),
    ("matmul", lambda r: [r(20, 16, 16), r(20, 16, 16)]),
    ("rgb_to_gray", lambda r: [r(40, 30, 3)]),
    ("sq_norm3", lambda r: [r(500, 3)]),
    ("pairwise_distances", lambda r: [r(60, 3)]),
    ("centroid_distances", lambda r: [r(400, 3), r(8, 3)]),
]


@pytest.mark.parametrize("name, make", GUFUNCS, ids=[f"{g[0]}-{i}" for i, g in enumerate(GUFUNCS)])
def test_a_gufunc_gives_the_installed_bits_whatever_the_vector_width(avx2, name, make):
    # Gufunc loops have no AVX-512 clone unless they call vector math: the same code.
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64):
        def r(*shape):
            return rng.uniform(-3, 3, shape).astype(dtype)
        args = make(r)
        assert _same_bits(getattr(avx2, name)(*args), getattr(ex, name)(*args)), (name, dtype)
