"""A large elementwise call runs its loop's copy compiled up to AVX2 (host_loops.h,
ufg_kernel_for_call), a small one the copy for the widest vectors the CPU has: every element
gets the same bits from both, so a call's results do not depend on its size."""
from __future__ import annotations

import numpy as np
import pytest

SIGNATURES = """\
ufunc poly(x) -> y
    types: float16(float16), float32(float32), float64(float64), int64(int64)
{
    y = ((x * (T)3 + (T)2) * x - (T)7) * x + (T)1;
}

ufunc rational(x, z) -> y
    types: float32(float32, float32), float64(float64, float64)
{
    y = (x * x + z) / (x * (T)3 + (T)2) - x / (z * z + (T)4);
}
"""

# Elements past the copy's threshold (4 MiB of a call's arguments together) for every type
# here, and a slice well under it.
LARGE, SLICE = 2_100_000, 50_000


@pytest.fixture(scope="module")
def m(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("stream_kernel"), "ufg_stream_kernel",
                           SIGNATURES, "--cuda-arch", "none")


def _values(dtype, rng):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-1000, 1000, LARGE).astype(dtype)
    x = rng.standard_normal(LARGE).astype(dtype)
    x[::1001] = np.inf
    x[::1003] = np.nan
    x[::1007] = -0.0
    return x


def _sliced(fn, *args):
    return np.concatenate([fn(*(a[i:i + SLICE] for a in args))
                           for i in range(0, LARGE, SLICE)])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int64])
def test_a_large_call_gives_the_bits_of_the_same_elements_in_small_calls(m, dtype,
                                                                         threads_restored):
    import ufuncgen
    ufuncgen.set_num_threads(1)
    x = _values(dtype, np.random.default_rng(1))
    with np.errstate(all="ignore"):
        whole, parts = m.poly(x), _sliced(m.poly, x)
        want = ((x * dtype(3) + dtype(2)) * x - dtype(7)) * x + dtype(1)
    np.testing.assert_array_equal(whole.view(f"u{whole.itemsize}"), parts.view(f"u{parts.itemsize}"))
    if dtype != np.float16:         # NumPy's float16 arithmetic rounds each step to float16
        np.testing.assert_array_equal(whole, want)
    if dtype in (np.float32, np.float64):
        z = np.random.default_rng(2).uniform(-3, 3, LARGE).astype(dtype)
        with np.errstate(all="ignore"):
            whole, parts = m.rational(x, z), _sliced(m.rational, x, z)
            want = (x * x + z) / (x * dtype(3) + dtype(2)) - x / (z * z + dtype(4))
        np.testing.assert_array_equal(whole.view(f"u{whole.itemsize}"),
                                      parts.view(f"u{parts.itemsize}"))
        np.testing.assert_array_equal(whole, want)
