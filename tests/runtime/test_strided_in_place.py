"""A strided call of a cheap body (a few operations, no call: render.strided_kernel) runs over
the call's own steps, each element read and written in place (host_loops.h,
ufg_in_place_pays), where its block copies would take an element at a time: the values of
NumPy's loops, the bits and the flags of the same call made contiguous, whatever the step,
size, thread count or out= view.  A body with a conditional keeps the flags its flag-exact
re-runs give (a guarded division by zero raises nothing), and a body too long for the path
(a polynomial) the bits of its vector loop."""
from __future__ import annotations

import numpy as np
import pytest

SIGNATURES = """\
ufunc plus(x, y) -> z
    types: int32(int32, int32), int64(int64, int64)
    types: float32(float32, float32), float64(float64, float64)
{
    z = x + y;
}

ufunc axpy(x, y) -> r
    types: float32(float32, float32), float64(float64, float64)
{
    r = (T)2.5 * x + y;
}

ufunc safe_div(x, y) -> r
    types: float32(float32, float32), float64(float64, float64)
{
    r = y != 0 ? x / y : (T)0;
}

ufunc poly4(x) -> y
    types: float32(float32), float64(float64)
{
    y = ((((T)0.1 * x + (T)0.2) * x + (T)0.3) * x + (T)0.4) * x + (T)0.5;
}

ufunc exp_called_by_name(x) -> y
    types: float32(float32), float64(float64)
{
    y = (exp)(x);
}

ufunc to_uint64(x) -> o
    types: uint64(float32), uint64(float64)
{
    o = x;
}

ufunc to_uint32(x) -> o
    types: uint32(float32), uint32(float64)
{
    o = x;
}
"""

FLOATS = [np.float32, np.float64]
SIZES = [1, 2, 255, 256, 257, 1000, 4099]
STEPS = [2, 3, -1, -2, 7]


@pytest.fixture(scope="module")
def m(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("strided_in_place"), "ufg_strided_in_place",
                           SIGNATURES, "--cuda-arch", "none")


def _values(dtype, n, rng, specials=True):
    """Random values of `dtype`, for floats with NaN, +-Inf, -0.0 and 0.0 among them."""
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, n, endpoint=True,
                            dtype=dtype)
    values = (rng.standard_normal(n) * 100).astype(dtype)
    if specials:
        where = rng.random(n) < 0.05
        values[where] = rng.choice(np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype),
                                   int(where.sum()))
    return values



def _assert_same_bits(got, want, message=""):
    """The same values, zeros' signs included, NaN where NumPy has NaN (the payload of a NaN
    sum depends on which operand the compiler put first, in NumPy too)."""
    np.testing.assert_array_equal(got, want, err_msg=message)
    if got.dtype.kind == "f":
        keep = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[keep]), np.signbit(want[keep]),
                                      err_msg=message)


def _axpy(x, y):
    return x.dtype.type(2.5) * x + y


@pytest.mark.parametrize("dtype", [np.int32, np.int64, *FLOATS])
@pytest.mark.parametrize("step", STEPS)
def test_sums_of_strided_inputs_are_numpys_across_block_boundaries(m, dtype, step, strided_view):
    rng = np.random.default_rng(abs(step) * 10 + (step < 0))
    with np.errstate(all="ignore"):
        for n in SIZES:
            x, y = _values(dtype, n, rng), _values(dtype, n, rng)
            want = np.add(x, y)
            for got in (m.plus(strided_view(x, step), y), m.plus(x, strided_view(y, step)),
                        m.plus(strided_view(x, step), strided_view(y, -step))):
                _assert_same_bits(got, want, f"n={n}")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("step", STEPS)
def test_a_two_operation_body_over_strided_views_gives_numpys_bits(m, dtype, step, strided_view):
    rng = np.random.default_rng(abs(step) * 10 + (step < 0) + 1)
    with np.errstate(all="ignore"):
        for n in SIZES:
            x, y = _values(dtype, n, rng), _values(dtype, n, rng)
            _assert_same_bits(m.axpy(strided_view(x, step), strided_view(y, 3)), _axpy(x, y),
                              f"n={n}")


@pytest.mark.parametrize("dtype", [np.int64, *FLOATS])
@pytest.mark.parametrize("step", STEPS)
def test_a_strided_output_gets_numpys_values_and_leaves_the_elements_between_alone(
        m, dtype, step, strided_view):
    rng = np.random.default_rng(abs(step) * 10 + (step < 0) + 5)
    with np.errstate(all="ignore"):
        for n in SIZES:
            x, y = _values(dtype, n, rng), _values(dtype, n, rng)
            out = strided_view(np.zeros(n, dtype), step)
            base = out.base
            before = base.copy()
            assert m.plus(strided_view(x, 3), y, out=out) is out
            _assert_same_bits(out, np.add(x, y), f"n={n}")
            written = np.zeros(len(base), bool)
            written[1:1 + n * abs(step):abs(step)] = True
            np.testing.assert_array_equal(base[~written].view(np.uint8),
                                          before[~written].view(np.uint8), err_msg=f"n={n}")


@pytest.mark.parametrize("dtype", FLOATS)
def test_columns_real_and_imaginary_parts_and_out_a_column_give_numpys_sums(m, dtype):
    rng = np.random.default_rng(7)
    c = _values(dtype, 1000 * 100, rng, specials=False).reshape(1000, 100)
    _assert_same_bits(m.plus(c[:, 3], c[:, 5]), np.add(c[:, 3], c[:, 5]))
    _assert_same_bits(m.axpy(c[:, 3], c[:, 5]), _axpy(c[:, 3], c[:, 5]))
    d = c.copy()
    m.plus(c[:, 3], c[:, 5], out=d[:, 7])
    want = c.copy()
    want[:, 7] = c[:, 3] + c[:, 5]
    _assert_same_bits(d, want)
    z = (rng.standard_normal(4099) + 1j * rng.standard_normal(4099)).astype(
        np.complex64 if dtype == np.float32 else np.complex128)
    _assert_same_bits(m.plus(z.real, z.imag), np.add(z.real, z.imag))
    _assert_same_bits(m.plus(z.real[::-3], z.imag[::3]), np.add(z.real[::-3], z.imag[::3]))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("step", [3, -2])
def test_out_the_strided_input_itself_updates_it_in_place(m, dtype, step, strided_view):
    rng = np.random.default_rng(11)
    for n in SIZES:
        x, y = _values(dtype, n, rng, specials=False), _values(dtype, n, rng, specials=False)
        view = strided_view(x, step)
        assert m.axpy(view, y, out=view) is view
        _assert_same_bits(view, _axpy(x, y), f"n={n}")


def _raised(call):
    """The error np.errstate(all="raise") turns the call's flags into, or None."""
    try:
        with np.errstate(all="raise"):
            call()
    except FloatingPointError as error:
        return str(error).split(" encountered")[0]
    return None


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("step", [3, -2, 7])
def test_a_guarded_division_raises_the_flags_of_the_same_call_contiguous(m, dtype, step,
                                                                         strided_view):
    rng = np.random.default_rng(13)
    big, tiny = np.finfo(dtype).max, np.finfo(dtype).tiny
    patterns = {
        "guarded zeros": (rng.standard_normal(4099), np.where(rng.random(4099) < 0.1, 0.0, 1.5)),
        "guarded 0 / 0": (np.zeros(4099), np.zeros(4099)),
        "overflow": (np.full(4099, big), np.full(4099, 0.5)),
        "underflow": (np.full(4099, tiny), np.full(4099, 4.0)),
        "invalid": (np.full(4099, np.inf), np.full(4099, np.inf)),
    }
    for name, (x, y) in patterns.items():
        x, y = x.astype(dtype), y.astype(dtype)
        with np.errstate(all="ignore"):
            want = np.where(y != 0, x / np.where(y != 0, y, 1), 0).astype(dtype)
        for n in (1, 255, 257, 4099):
            xs, ys = strided_view(x[:n], step), strided_view(y[:n], -step)
            assert _raised(lambda: m.safe_div(xs, ys)) == _raised(
                lambda: m.safe_div(x[:n], y[:n])), (name, n)
            with np.errstate(all="ignore"):
                _assert_same_bits(m.safe_div(xs, ys), want[:n], f"{name} n={n}")
    x = np.array([1.0, 0.0, big], dtype)
    assert _raised(lambda: m.safe_div(strided_view(x, step), np.zeros(3, dtype))) is None
    assert _raised(lambda: m.safe_div(strided_view(x[2:], step), np.full(1, 0.5, dtype))) == \
        "overflow"
    # A call of more than 4 MiB, which in blocks runs the kernel's AVX2 copy (no masked
    # division: the guarded lanes are computed and re-run).
    x, y = rng.standard_normal(400_000).astype(dtype), np.zeros(400_000, dtype)
    y[::7] = 2
    assert _raised(lambda: m.safe_div(strided_view(x, step), y)) is None
    assert _raised(lambda: m.safe_div(x, y)) is None


@pytest.mark.parametrize("dtype", FLOATS)
def test_infinities_of_opposite_signs_raise_invalid_as_numpy_does(m, dtype):
    x = np.array([np.inf] * 900, dtype)
    y = np.array([-np.inf] * 600, dtype)
    assert _raised(lambda: np.add(x[::3], y[::2])) == "invalid value"
    assert _raised(lambda: m.plus(x[::3], y[::2])) == "invalid value"
    assert _raised(lambda: m.plus(x[::3], x[::-3])) is None


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("step", [3, -2])
def test_a_body_of_more_operations_keeps_the_bits_of_its_vector_loop(m, dtype, step, strided_view):
    rng = np.random.default_rng(17)
    x = _values(dtype, 4099, rng, specials=False) / 50
    _assert_same_bits(m.poly4(strided_view(x, step)), m.poly4(x))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("step", [3, -2])
def test_a_math_function_called_through_its_parenthesized_name_keeps_its_vector_bits(
        m, dtype, step, strided_view):
    # `(exp)(x)` escapes the prelude's macro and GCC still vectorizes it through libmvec: the
    # body calls vector math (model.vector_math_functions), so its strided calls run in blocks
    # and get the contiguous call's bits, not scalar libm's
    rng = np.random.default_rng(23)
    x = rng.uniform(-20, 20, 4099).astype(dtype)
    _assert_same_bits(m.exp_called_by_name(strided_view(x, step)), m.exp_called_by_name(x))


@pytest.mark.parametrize("name", ["to_uint64", "to_uint32"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("step", [3, -2])
def test_a_conversion_to_unsigned_of_any_float_does_not_depend_on_the_layout(m, name, dtype,
                                                                            step, strided_view):
    # C leaves NaN, infinities and values out of range undefined there, and scalar x86-64 code
    # and AVX-512's conversions differ: a strided call of such a loop runs through the vector
    # loop in blocks, as the contiguous call does, not in place (scalar code)
    fn = getattr(m, name)
    rng = np.random.default_rng(29)
    specials = np.array([np.nan, -np.inf, np.inf, 1e20, -3e5, -1.0, 7.0, 4e9, 3e19])
    x = rng.choice(specials, 4099).astype(dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(fn(strided_view(x, step)), fn(x))


@pytest.mark.parametrize("dtype", FLOATS)
def test_the_bits_and_flags_do_not_depend_on_the_thread_count(m, dtype, on_thread_counts):
    rng = np.random.default_rng(19)
    n = 300_000
    x = _values(dtype, 3 * n, rng)
    y = np.where(rng.random(n) < 0.01, 0.0, rng.standard_normal(n)).astype(dtype)
    out = np.zeros(2 * n, dtype)

    def calls():
        with np.errstate(all="ignore"):
            return (m.plus(x[::3], y[::-1]).tobytes(), m.axpy(x[::-3], y).tobytes(),
                    m.safe_div(x[1::3], y[::-1]).tobytes(), m.poly4(x[::3]).tobytes(),
                    m.plus(x[::3], y, out=out[::2]).tobytes(),
                    _raised(lambda: m.safe_div(x[1::3], y[::-1])))

    first, *others = on_thread_counts(calls)
    assert all(other == first for other in others)
