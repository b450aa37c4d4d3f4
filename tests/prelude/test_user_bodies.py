"""Bodies a scientist writes that the generator must read right (found by the eleventh
session's hunt with functions of its own): integer divisions it took for floating ones, which
stopped the process with SIGFPE for a zero divisor; GCC's folding of `-a / b`; `arg`, which
is vector math; and a gufunc whose assignment to its output reads it."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

SIGNATURES = """\
ufunc quotients(a, b) -> (y, z)
    types: (int32, int32)(int32, int32), (int64, int64)(int64, int64)
{
    y = a / b;
    z = -a / b;
}

ufunc chosen_divisor(x, k, d) -> y
    types: float64(float64, int32, int32)
{
    y = (x > 0 ? k : 1) / d + k / (x > 0 ? d : 1) + (k + (x > 0)) / d;
}

ufunc macro_quotient(x, k, d) -> y
    types: float64(float64, int32, int32)
{
    #define QQ(u, v) ((u) / (v))
    y = x + QQ(k, d);
}

ufunc listed_counts(x) -> r
    types: float64(float64)
{
    int64_t total = 1, pos = x > 0, neg = x < 0;
    r = pos / neg + total;
}

ufunc angle_of(x) -> y
    types: float64(float64), float32(float32)
{
    y = arg(x);
}

gufunc add_exp(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    for (int64_t i = 0; i < n; i++)
        y(i) = y(i) + exp(x(i));
}
"""


@pytest.fixture(scope="module")
def fns(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("user_bodies"), "ufg_user_bodies", SIGNATURES,
                           "--cuda-arch", "none")


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_minus_int_min_divided_wraps_before_it_divides(fns, dtype):
    low = np.iinfo(dtype).min
    a = np.array([low, low, 7, -7, low], dtype)
    b = np.array([2, 4, 2, 2, 3], dtype)
    y, z = fns.quotients(a, b)
    negated = (-a.astype(object)).astype(object)
    negated[negated > np.iinfo(dtype).max] = low           # -INT_MIN wraps to INT_MIN
    want = [int(n / int(d)) if n * d >= 0 else -(abs(n) // abs(int(d)))
            for n, d in zip(negated, b.tolist())]
    assert z.tolist() == want
    assert y.tolist() == [int(n / d) if n * d >= 0 else -(abs(n) // abs(d))
                          for n, d in zip(a.tolist(), b.tolist())]


def _run_child(fns, code):
    """code run in a child that imports the module: a SIGFPE stops only the child."""
    folder = os.path.dirname(fns.__file__)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import sys, warnings
        sys.path.insert(0, {folder!r})
        import numpy as np, ufg_user_bodies as fns
        """) + textwrap.dedent(code)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("call, want", [
    ("fns.chosen_divisor(np.array([1.0, -1.0]), np.array([7, 7], np.int32), "
     "np.array([0, 2], np.int32))", [0.0, 10.0]),
    ("fns.macro_quotient(np.array([1.0, 1.0]), np.array([7, 7], np.int32), "
     "np.array([2, 0], np.int32))", [4.0, 1.0]),
    ("fns.listed_counts(np.array([1.0, 0.0, -1.0]))", [1.0, 1.0, 1.0]),
])
def test_an_integer_division_by_zero_is_numpys_zero_with_its_warning(fns, call, want):
    """Divisions the generator had taken for floating ones (a comparison inside the divided
    expression, a macro's untyped parameters, the second name of a declaration list)."""
    child = _run_child(fns, f"""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = {call}
        print(repr((got.tolist(), any("divide by zero" in str(w.message) for w in caught))))
        """)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.strip() == repr((want, True))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arg_of_reals_raises_no_flag_as_numpys_angle_raises_none(fns, dtype):
    x = np.array([-0.0, 1.0, -np.nan, np.inf, -2.0, 0.0] * 50, dtype)
    with np.errstate(all="raise"):
        got = fns.angle_of(x)
    np.testing.assert_array_equal(got, np.angle(x).astype(dtype))


def test_a_gufunc_whose_assignment_reads_its_output_adds_once_when_a_row_overflows(fns):
    x = np.zeros((40, 3))
    x[20, 1] = 1000.0                   # exp overflows in one row
    out = np.ones((40, 3))
    with np.errstate(all="ignore"):
        fns.add_exp(x, out=out)
        want = np.ones((40, 3)) + np.exp(x)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("method, args", [("reduce", ()), ("accumulate", ()),
                                          ("reduceat", ([0, 1],))])
def test_a_method_of_a_binary_function_of_two_outputs_is_refused_as_numpy_refuses_it(
        fns, method, args):
    """NumPy's reason is its result count ("functions returning a single value"); the device
    said "binary functions", of a function that is one."""
    from ufuncgen import device
    x = np.arange(1, 4, dtype=np.int64)
    with pytest.raises(ValueError) as host:
        getattr(fns.quotients, method)(x, *args)
    assert f"{method} only supported for functions returning a single value" in str(host.value)
    if device.is_available():
        with pytest.raises(ValueError) as on_device:
            getattr(fns.quotients, method)(device.to_device(x), *args)
        assert f"quotients.{method}: {method} only supported for functions returning a " \
               "single value" in str(on_device.value)
