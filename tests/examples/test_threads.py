"""Multi-core host loops on the seed functions: several threads give the very bits one thread
gives, for every function and dtype, just below and just above the size threshold, and with
non-contiguous inputs; reductions stay in order; floating-point errors raised on helper threads
reach np.errstate."""
import numpy as np
import pytest

import ufuncgen
import ufuncgen.examples as ex
from ufuncgen import _core

from .conftest import ELEMENTWISE_NAMES, GUFUNC_NAMES, elementwise_inputs, function_dtype_cases
from .conftest import with_layout

MIN_ELEMENTS, MIN_WORK, MIN_TIME_NS = _core._parallel_threshold()
LAYOUTS = ("contiguous", "offset", "strided", "reversed")


def parallel_calls():
    return _core._thread_pool_stats()["parallel_calls"]


@pytest.fixture
def always_parallel():
    """Three threads (uneven parts on any machine), and every call from the size threshold
    on goes to the pool without timing a sample first."""
    threads, threshold = ufuncgen.get_num_threads(), _core._parallel_threshold()
    ufuncgen.set_num_threads(3)
    _core._set_parallel_threshold(threshold[0], threshold[1], 0)
    yield
    _core._set_parallel_threshold(*threshold)
    ufuncgen.set_num_threads(threads)


def on_one_thread(fn, *args, **kwargs):
    threads = ufuncgen.get_num_threads()
    ufuncgen.set_num_threads(1)
    try:
        return fn(*args, **kwargs)
    finally:
        ufuncgen.set_num_threads(threads)


def laid_out(a, layout):
    if layout == "offset":   # contiguous, but starting one element into its buffer
        buf = np.empty(a.size + 1, dtype=a.dtype)
        view = buf[1:].reshape(a.shape)
        view[...] = a
        return view
    return with_layout(a, layout)


def assert_same_bits(actual, expected):
    actual = actual if isinstance(actual, tuple) else (actual,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(e).tobytes()


# --------------------------------------------------------------------------- elementwise

ELEMENTWISE_SIZES = {"just below": MIN_ELEMENTS - 1, "just above": MIN_ELEMENTS + 1,
                     "several parts": 5 * MIN_ELEMENTS + 77}


@pytest.mark.parametrize("size", ELEMENTWISE_SIZES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name, dtype", function_dtype_cases(ELEMENTWISE_NAMES))
def test_elementwise_results_on_several_threads_are_bitwise_those_of_one_thread(
        name, dtype, layout, size, always_parallel, rng):
    n = ELEMENTWISE_SIZES[size]
    fn = getattr(ex, name)
    inputs = [laid_out(a, layout) for a in elementwise_inputs(name, dtype, n, rng)]
    expected = on_one_thread(fn, *inputs)
    before = parallel_calls()
    actual = fn(*inputs)
    assert_same_bits(actual, expected)
    assert (parallel_calls() > before) == (n >= MIN_ELEMENTS)


@pytest.mark.parametrize("name, dtype", function_dtype_cases(["gaussian_pdf", "add"]))
def test_broadcast_scalars_and_out_give_the_same_bits_on_several_threads(
        name, dtype, always_parallel, rng):
    inputs = elementwise_inputs(name, dtype, 3 * MIN_ELEMENTS + 5, rng)
    inputs[1:] = [a[:1].reshape(()) for a in inputs[1:]]      # 0-d: broadcast, stride 0
    out = np.empty_like(inputs[0])
    fn = getattr(ex, name)
    expected = on_one_thread(fn, *inputs)
    assert fn(*inputs, out=out) is out
    assert_same_bits(out, expected)


def test_large_calls_with_the_default_threshold_give_the_same_bits(rng):
    x = rng.standard_normal(1_000_003)
    expected = on_one_thread(ex.gaussian_pdf, x, 0.25, 1.5)
    threads = ufuncgen.get_num_threads()
    ufuncgen.set_num_threads(2)
    try:
        assert_same_bits(ex.gaussian_pdf(x, 0.25, 1.5), expected)
        assert_same_bits(ex.sincos(x[::-3]), on_one_thread(ex.sincos, x[::-3]))
    finally:
        ufuncgen.set_num_threads(threads)


def test_reduce_and_accumulate_stay_serial_and_in_order(always_parallel, rng):
    x = rng.standard_normal(4 * MIN_ELEMENTS)
    expected_sum = on_one_thread(ex.add.reduce, x)
    expected_running = on_one_thread(ex.add.accumulate, x)
    before = parallel_calls()
    assert ex.add.reduce(x).tobytes() == expected_sum.tobytes()
    assert_same_bits(ex.add.accumulate(x), expected_running)
    running = np.cumsum(x)       # NumPy's cumsum adds in order too
    assert_same_bits(ex.add.accumulate(x), running)
    assert parallel_calls() == before


def test_a_floating_point_error_raised_on_a_helper_thread_reaches_errstate(always_parallel):
    x = np.ones(8 * MIN_ELEMENTS)
    x[-1] = 1e308                # overflows in the last part, whichever thread runs it
    for _ in range(20):
        with np.errstate(over="raise"):
            with pytest.raises(FloatingPointError, match="overflow"):
                ex.add(x, x)
    with np.errstate(over="ignore"):
        assert np.isinf(ex.add(x, x)[-1])


# --------------------------------------------------------------------------- gufuncs

# name: (inputs for `outer` loop iterations, the product of the distinct core dimensions)
GUFUNC_INPUTS = {
    "l2_norm": (lambda outer, rng: [rng.standard_normal((outer, 8))], 8),
    "inner1d": (lambda outer, rng: [rng.standard_normal((outer, 8)),
                                    rng.standard_normal((outer, 8))], 8),
    "matmul": (lambda outer, rng: [rng.standard_normal((outer, 4, 3)),
                                   rng.standard_normal((outer, 3, 2))], 24),
    "rgb_to_gray": (lambda outer, rng: [rng.uniform(0, 1, (outer, 3))], 3),
    "sq_norm3": (lambda outer, rng: [rng.standard_normal((outer, 3))], 3),
    "centroid_distances": (lambda outer, rng: [rng.standard_normal((outer, 4)),
                                               rng.standard_normal((5, 4))], 20),
    "pairwise_distances": (lambda outer, rng: [rng.standard_normal((outer, 6, 2))], 12),
    "condensed_distances": (lambda outer, rng: [rng.standard_normal((outer, 6, 2))], 180),
}


def test_every_seed_gufunc_has_threaded_inputs():
    assert sorted(GUFUNC_INPUTS) == sorted(GUFUNC_NAMES)


@pytest.mark.parametrize("size", ["just below", "just above", "several parts"])
@pytest.mark.parametrize("layout", ["contiguous", "strided", "reversed"])
@pytest.mark.parametrize("name, dtype", function_dtype_cases(GUFUNC_NAMES))
def test_gufunc_results_on_several_threads_are_bitwise_those_of_one_thread(
        name, dtype, layout, size, always_parallel, rng):
    make, unit = GUFUNC_INPUTS[name]
    outer = {"just below": (MIN_WORK - 1) // unit, "just above": MIN_WORK // unit + 1,
             "several parts": 6 * MIN_WORK // unit + 5}[size]
    inputs = [with_layout(a.astype(dtype), layout) for a in make(outer, rng)]
    fn = getattr(ex, name)
    expected = on_one_thread(fn, *inputs)
    before = parallel_calls()
    actual = fn(*inputs)
    assert_same_bits(actual, expected)
    assert (parallel_calls() > before) == (outer * unit >= MIN_WORK)


@pytest.mark.parametrize("name, make", [
    ("matmul", lambda outer, rng: [rng.standard_normal((outer, 4, 4)),
                                   rng.standard_normal((outer, 4, 4))]),
    ("l2_norm", lambda outer, rng: [rng.standard_normal((outer, 3))]),
])
def test_a_specialized_loop_on_several_threads_gives_the_bits_of_one_thread(
        name, make, always_parallel, rng):
    # 4x4 matmul and 3-vector l2_norm run the `specialize:` loops, each thread its part.
    inputs = make(6 * MIN_WORK // 16 + 5, rng)
    fn = getattr(ex, name)
    expected = on_one_thread(fn, *inputs)
    before = parallel_calls()
    assert_same_bits(fn(*inputs), expected)
    assert parallel_calls() > before
