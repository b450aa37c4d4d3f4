"""bfloat16 elements (src/include/ufuncgen/bfloat16.h) on the host: ml_dtypes.bfloat16 arrays
reach loops that a module registers for them when ml_dtypes can be imported; elements are
loaded into float exactly and stored rounded to nearest even with ml_dtypes' bits.  ml_dtypes'
own casts and loops are the reference."""
from __future__ import annotations

import math

import numpy as np
import pytest

from ufuncgen import device

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 arrays are ml_dtypes' (pip "
                                "install '.[test]' brings it)")
BF16 = np.dtype(ml_dtypes.bfloat16)

BFLOAT16_FILE = """\
ufunc widen(x) -> y
    types: float32(bfloat16)
{
    y = x;
}

ufunc narrow(x) -> y
    types: bfloat16(float32)
{
    y = x;
}

ufunc narrow64(x) -> y
    doc: float64 rounded to float first (as the body's float does), then to bfloat16.
    types: bfloat16(float64)
{
    y = (float)x;
}

ufunc bsum(x, y) -> s
    types: float32(float32, float32), bfloat16(bfloat16, bfloat16)
    identity: 0
{
    s = x + y;
}

ufunc bsum_reordered(x, y) -> s
    doc: bsum, associative: its .reduce steps in float and rounds once per loop call.
    types: bfloat16(bfloat16, bfloat16)
    identity: 0
    associative: true
{
    s = x + y;
}

ufunc bfma(x, y, z) -> r
    doc: x*y + z with float32's roundings, then one rounding to bfloat16.
    types: bfloat16(bfloat16, bfloat16, bfloat16)
{
    r = x * y + z;
}

ufunc bexp(x) -> y
    types: bfloat16(bfloat16)
{
    y = exp(x);
}

gufunc bdot(x, y) -> d
    layout: (n),(n)->()
    types: float64(float64, float64), bfloat16(bfloat16, bfloat16)
{
    T acc = 0;
    for (int64_t i = 0; i < n; i++) {
        acc += x(i) * y(i);
    }
    d = acc;
}
"""


@pytest.fixture(scope="module")
def bf(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("bfloat16"), "ufg_bfloat16", BFLOAT16_FILE,
                           "--cuda-arch", "none")


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint16)


def _float32_patterns():
    """Every bfloat16 rounding boundary and its neighbours (each bfloat16 value with every
    choice of the 16 dropped bits near a half: below, at, above; odd and even kept bits), the
    largest finite value's overflow boundary, subnormals, zeros, infinities, NaNs with
    payloads in either half, and random bits."""
    kept = np.arange(1 << 16, dtype=np.uint32) << 16
    dropped = np.array([0, 1, 0x7fff, 0x8000, 0x8001, 0xffff], dtype=np.uint32)
    edges = (kept[:, None] | dropped[None, :]).ravel()
    nans = np.array([0x7f800001, 0x7fc00000, 0xffc00001, 0x7fbfffff, 0xff800001, 0x7fffffff],
                    dtype=np.uint32)
    random = np.random.default_rng(16).integers(0, 1 << 32, 200_000, dtype=np.uint32)
    return np.concatenate([edges, nans, random]).view(np.float32)


def test_every_bfloat16_widens_to_the_float32_ml_dtypes_gives(bf):
    every = np.arange(1 << 16, dtype=np.uint16).view(BF16)
    got = bf.widen(every)
    assert got.dtype == np.float32
    want = every.astype(np.float32)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_float32_narrows_to_ml_dtypes_bits_rounding_to_nearest_even(bf):
    values = _float32_patterns()
    got = bf.narrow(values)
    assert got.dtype == BF16
    with np.errstate(invalid="ignore"):     # ml_dtypes' cast of a NaN
        want = values.astype(BF16)
    assert np.array_equal(_bits(got), _bits(want))


def test_a_nan_narrows_to_the_quiet_nan_of_its_sign(bf):
    nans = np.array([0x7f800001, 0xffc00001, 0x7fffffff], dtype=np.uint32).view(np.float32)
    assert list(_bits(bf.narrow(nans))) == [0x7fc0, 0xffc0, 0x7fc0]


def test_float64_is_rounded_to_float_first_as_the_body_says(bf):
    values = np.random.default_rng(3).standard_normal(10_000) * 10.0 ** np.arange(-30, 30, 0.006)
    got = bf.narrow64(values)
    assert np.array_equal(_bits(got), _bits(values.astype(np.float32).astype(BF16)))


@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (1000,), (33, 65)])
def test_a_sum_is_float32_arithmetic_rounded_once_as_ml_dtypes_adds(bf, shape):
    rng = np.random.default_rng(sum(shape))
    x = (rng.standard_normal(shape) * 100).astype(BF16)
    y = (rng.standard_normal(shape) * 3).astype(BF16)
    got = bf.bsum(x, y)
    assert got.dtype == BF16 and got.shape == shape
    assert np.array_equal(_bits(got), _bits(np.add(x, y)))
    assert np.array_equal(_bits(got), _bits((x.astype(np.float32) + y.astype(np.float32))
                                            .astype(BF16)))


def test_edge_values_add_as_ml_dtypes_adds_them(bf):
    edges = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3.3895314e38, -3.3895314e38,
                      1e-40, -1e-40, 1.1754944e-38, 0.00390625], dtype=np.float32).astype(BF16)
    x, y = (a.ravel() for a in np.meshgrid(edges, edges))
    with np.errstate(all="ignore"):
        got, want = bf.bsum(x, y), np.add(x, y)
    assert np.array_equal(_bits(got), _bits(want))


def test_strided_and_broadcast_operands_take_the_same_loop(bf):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((40, 30)).astype(BF16)[::3, ::-2]
    y = rng.standard_normal(15).astype(BF16)
    out = np.full((40, 30), np.nan, dtype=BF16)
    got = bf.bsum(x, y, out=out[::3, 1::2])
    assert np.shares_memory(got, out)
    assert np.array_equal(_bits(out[::3, 1::2]), _bits(np.add(x, y)))
    assert np.isnan(out[:, ::2].astype(np.float32)).all()        # nothing else written


def test_a_product_and_sum_rounds_once_at_the_end(bf):
    rng = np.random.default_rng(6)
    x, y, z = (rng.standard_normal(5000).astype(BF16) for _ in range(3))
    want = (x.astype(np.float32) * y.astype(np.float32) + z.astype(np.float32)).astype(BF16)
    assert np.array_equal(_bits(bf.bfma(x, y, z)), _bits(want))


def test_exp_is_float32_exp_rounded_once(bf):
    x = np.linspace(-100, 100, 4001, dtype=np.float32).astype(BF16)
    with np.errstate(over="ignore"):
        got = bf.bexp(x).astype(np.float32)
        want = np.exp(x.astype(np.float32))
    # libm's expf and NumPy's are each within a few float32 ULP; bfloat16 keeps 8 bits, so
    # the two round to the same bfloat16 or to neighbours across a rounding boundary.
    assert np.array_equal(np.isinf(got), np.isinf(want.astype(BF16).astype(np.float32)))
    finite = np.isfinite(got)
    ulps = np.abs(got[finite].view(np.int32) - want[finite].astype(BF16).astype(np.float32)
                  .view(np.int32)) >> 16
    assert ulps.max() <= 1


def test_a_gufunc_with_bfloat16_core_inputs_sums_in_float32_and_rounds_the_result(bf):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((50, 17)).astype(BF16)
    y = rng.standard_normal((17,)).astype(BF16)
    got = bf.bdot(x, y)
    assert got.dtype == BF16 and got.shape == (50,)
    acc = np.zeros(50, np.float32)
    for i in range(17):                      # the body's order, float32 roundings
        acc = acc + x[:, i].astype(np.float32) * y[i].astype(np.float32)
    assert np.array_equal(_bits(got), _bits(acc.astype(BF16)))


def test_reduce_runs_the_bfloat16_loop_in_numpys_order(bf):
    x = np.random.default_rng(8).standard_normal(300).astype(BF16)
    acc = x[0]
    for v in x[1:]:
        acc = np.add(acc, v)                  # ml_dtypes rounds every step too
    assert _bits(bf.bsum.reduce(x)) == _bits(np.asarray(acc))
    assert bf.bsum.reduce(np.zeros(0, BF16)).astype(np.float32) == 0


@pytest.mark.parametrize("size", [5, 16, 63, 64, 300, 70_000])
def test_reduce_of_an_associative_bfloat16_function_steps_in_float32_and_rounds_once(bf, size):
    """ml_dtypes' np.add.reduce rounds every step to bfloat16 (8 bits): over 300 values its
    error is many ULP of the sum, where one rounding of float32 steps is within one."""
    x = np.random.default_rng(size).standard_normal(size).astype(BF16)
    got = bf.bsum_reordered.reduce(x)
    assert got.dtype == BF16
    exact = math.fsum(x.astype(np.float64).tolist())
    # Half a bfloat16 ULP (8 bits) of rounding, after float32 steps in a pairwise order
    # (tests/examples/test_reductions.py's pairwise_bound).
    steps = min(size, 64 + max(0, math.ceil(math.log2(size / 128)))) + 3
    bound = 2.0 ** (math.floor(math.log2(abs(exact))) - 8) + steps * 2.0 ** -24 * float(
        np.sum(np.abs(x.astype(np.float64))))
    assert abs(float(got) - exact) <= bound, (float(got), exact)
    if size < 17:                 # one call of size - 1 elements, in order, from the first
        acc = np.float32(x[0])
        for v in x[1:]:
            acc = np.float32(acc + np.float32(v))
        assert _bits(got) == _bits(np.asarray(acc).astype(BF16))
    step_by_step = np.add.reduce(x)                    # ml_dtypes' loop
    assert abs(float(got) - exact) <= abs(float(step_by_step) - exact)


def test_numpys_own_loops_of_the_same_function_are_untouched(bf):
    assert bf.bsum.types == ["ff->f"]
    assert bf.bdot.types == ["dd->d"]
    assert bf.bexp.types == []
    np.testing.assert_array_equal(bf.bsum(np.float32([1.5]), np.float32([2])), [3.5])


def test_a_function_without_a_loop_for_the_dtype_refuses_it_as_numpy_does(bf):
    with pytest.raises(TypeError, match="no loop|did not contain a loop|not supported"):
        bf.bexp(np.ones(3, np.float32))


def test_device_arrays_hold_bfloat16_with_its_bits():
    """The device side is tests/device/test_bfloat16_on_device.py's."""
    x = np.array([1.5, -0.0, np.inf, np.nan], BF16)
    back = device.to_device(x).copy_to_host()
    assert back.dtype == BF16
    np.testing.assert_array_equal(back.view(np.uint16), x.view(np.uint16))


def test_a_broken_ml_dtypes_costs_only_the_bfloat16_loops_with_a_warning(bf, tmp_path):
    import os
    import subprocess
    import sys
    (tmp_path / "ml_dtypes.py").write_text("raise RuntimeError('built for another NumPy')\n")
    script = ("import warnings, numpy as np\n"
              "with warnings.catch_warnings(record=True) as caught:\n"
              "    warnings.simplefilter('always')\n"
              "    import ufg_bfloat16 as m\n"
              "print(m.bsum(np.float32([1.5]), np.float32([2]))[0])\n"
              "print(sorted({str(w.category.__name__) for w in caught}))\n"
              "print(sorted({str(w.message) for w in caught}))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(tmp_path), os.path.dirname(bf.__file__), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    value, categories, message = run.stdout.splitlines()
    assert value == "3.5"
    assert categories == "['RuntimeWarning']"
    assert message == ("[\"ufuncgen: loops for ml_dtypes's dtypes are left out: importing "
                       "ml_dtypes failed: RuntimeError('built for another NumPy')\"]")


def test_without_ml_dtypes_the_module_imports_with_its_other_loops(bf):
    import os
    import subprocess
    import sys
    script = ("import sys; sys.modules['ml_dtypes'] = None\n"   # `import ml_dtypes` fails
              "import numpy as np, ufg_bfloat16 as m\n"
              "print(m.bsum(np.float32([1.5]), np.float32([2]))[0], m.bsum.types, m.bexp.types)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.dirname(bf.__file__), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["3.5", "['ff->f']", "[]"]
