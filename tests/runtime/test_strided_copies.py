"""A strided elementwise call copies its strided inputs into block buffers and its strided
outputs back (host_loops.h, ufg_copy_elements): steps of 2 and -1 each have a vectorized copy
of their own, others one element at a time.  Every element size, every such step, inputs and
outputs, across block boundaries, against NumPy's own loops; an output view leaves the
elements between its own untouched.  The body is a sum written in four operations, too many
for a strided call to run in place (render.strided_kernel): every call here takes the
copies."""
from __future__ import annotations

import numpy as np
import pytest

SIGNATURES = """\
ufunc plus(x, y) -> z
    types: int8(int8, int8), int16(int16, int16), float16(float16, float16)
    types: int32(int32, int32), float32(float32, float32), int64(int64, int64)
    types: float64(float64, float64), complex64(complex64, complex64)
    types: complex128(complex128, complex128)
{
    z = x * (T)1 * (T)1 * (T)1 + y;
}
"""

DTYPES = [np.int8, np.int16, np.float16, np.int32, np.float32, np.int64, np.float64,
          np.complex64, np.complex128]
SIZES = [1, 2, 7, 255, 256, 257, 1000, 4099]
STEPS = [1, 2, -1, -2, 3]


@pytest.fixture(scope="module")
def m(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("strided_copies"), "ufg_strided_copies",
                           SIGNATURES, "--cuda-arch", "none")


def _values(dtype, n, rng):
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, n, endpoint=True,
                            dtype=dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    return (rng.standard_normal(n) * 100).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("step", STEPS)
def test_strided_inputs_of_every_element_size_give_numpys_sums(m, dtype, step, strided_view):
    rng = np.random.default_rng(abs(step) * 10 + (step < 0))
    for n in SIZES:
        x, y = _values(dtype, n, rng), _values(dtype, n, rng)
        want = np.add(x, y)
        for got in (m.plus(strided_view(x, step), y), m.plus(x, strided_view(y, step)),
                    m.plus(strided_view(x, step), strided_view(y, -step))):
            np.testing.assert_array_equal(got, want, err_msg=f"n={n}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("step", STEPS)
def test_a_strided_output_gets_numpys_sums_and_leaves_the_elements_between_alone(
        m, dtype, step, strided_view):
    rng = np.random.default_rng(abs(step) * 10 + (step < 0) + 5)
    for n in SIZES:
        x, y = _values(dtype, n, rng), _values(dtype, n, rng)
        out = strided_view(np.zeros(n, dtype), step)
        base = out.base if out.base is not None else out
        before = base.copy()
        result = m.plus(strided_view(x, -step), y, out=out)
        assert result is out
        np.testing.assert_array_equal(out, np.add(x, y), err_msg=f"n={n}")
        written = np.zeros(len(base), bool)
        written[1:1 + n * abs(step):abs(step)] = True
        np.testing.assert_array_equal(base[~written], before[~written], err_msg=f"n={n}")
