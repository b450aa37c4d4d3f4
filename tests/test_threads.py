"""ufuncgen.set_num_threads / get_num_threads (python/ufuncgen/threads.py over the pool in
src/core/threads.c): one setting for every module, its defaults, bad values, the opt-outs,
calls from many Python threads at once, and fork."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ufuncgen
import ufuncgen.examples as ex
from ufuncgen import _core


def parallel_calls():
    return _core._thread_pool_stats()["parallel_calls"]


@pytest.fixture
def always_parallel(threads_restored):
    ufuncgen.set_num_threads(2)
    elements, work, _ = _core._parallel_threshold()
    _core._set_parallel_threshold(elements, work, 0)


def test_set_num_threads_round_trips_and_is_exported_by_the_package(threads_restored):
    assert ufuncgen.set_num_threads is ufuncgen.threads.set_num_threads
    for n in (1, 3, 7, 1):
        ufuncgen.set_num_threads(n)
        assert ufuncgen.get_num_threads() == n
    ufuncgen.set_num_threads(np.int64(2))       # any integer, NumPy's too
    assert ufuncgen.get_num_threads() == 2


@pytest.mark.parametrize("bad", [0, -1, -(2**70), 2**70, _core.MAX_THREADS + 1])
def test_set_num_threads_out_of_range_is_a_value_error_naming_the_range(bad, threads_restored):
    before = ufuncgen.get_num_threads()
    with pytest.raises(ValueError, match=r"the number of threads must be between 1 and 1024"):
        ufuncgen.set_num_threads(bad)
    assert ufuncgen.get_num_threads() == before


@pytest.mark.parametrize("bad", [2.0, "2", None, True])
def test_set_num_threads_of_a_non_integer_is_a_type_error(bad, threads_restored):
    with pytest.raises(TypeError, match="the number of threads must be an int"):
        ufuncgen.set_num_threads(bad)


@pytest.mark.parametrize("environment, expected", [
    ({"OMP_NUM_THREADS": "3"}, 3),
    ({"OMP_NUM_THREADS": "5,2"}, 5),
    ({"OMP_NUM_THREADS": " 5 ,2"}, 5),
    ({"UFUNCGEN_NUM_THREADS": "4", "OMP_NUM_THREADS": "3"}, 4),
    ({"UFUNCGEN_NUM_THREADS": " 3"}, 3),
    ({"UFUNCGEN_NUM_THREADS": "3\t"}, 3),
    ({"UFUNCGEN_NUM_THREADS": "\t3\n"}, 3),
    ({"OMP_NUM_THREADS": "nonsense"}, len(os.sched_getaffinity(0))),
    ({}, len(os.sched_getaffinity(0))),
])
def test_the_default_comes_from_the_environment_or_the_cpus_available(environment, expected):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "UFUNCGEN_NUM_THREADS")}
    env.update(environment)
    result = subprocess.run([sys.executable, "-c", "import ufuncgen; print(ufuncgen.get_num_threads())"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == expected


@pytest.mark.parametrize("value, expected, warning", [
    ("abc", None, "UFUNCGEN_NUM_THREADS=abc is not a positive whole number of threads; ignored"),
    ("0", None, "UFUNCGEN_NUM_THREADS=0 is not a positive whole number of threads; ignored"),
    ("-3", None, "UFUNCGEN_NUM_THREADS=-3 is not a positive whole number of threads; ignored"),
    ("3,5", None, "UFUNCGEN_NUM_THREADS=3,5 is not a positive whole number of threads; ignored"),
    ("3 4", None, "UFUNCGEN_NUM_THREADS=3 4 is not a positive whole number of threads; ignored"),
    ("99999999999", 1024,
     "UFUNCGEN_NUM_THREADS=99999999999 is more threads than the 1024 ufuncgen runs; 1024 it is"),
    ("2000", 1024, "UFUNCGEN_NUM_THREADS=2000 is more threads than the 1024 ufuncgen runs"),
])
def test_a_thread_count_in_the_environment_that_is_no_count_says_so(value, expected, warning):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "UFUNCGEN_NUM_THREADS")}
    env["UFUNCGEN_NUM_THREADS"] = value
    result = subprocess.run([sys.executable, "-c", "import ufuncgen; print(ufuncgen.get_num_threads())"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == (len(os.sched_getaffinity(0)) if expected is None else expected)
    assert "RuntimeWarning: ufuncgen: " + warning in result.stderr


def test_one_setting_reaches_every_generated_module(probe_module_dir, always_parallel,
                                                    monkeypatch):
    monkeypatch.syspath_prepend(str(probe_module_dir))
    import ufg_probe
    x = np.arange(200_000.0)
    before = parallel_calls()
    assert np.array_equal(ufg_probe.scaled(x), 3 * x + 1)
    ex.gaussian_pdf(x, 0.0, 1.0)
    assert parallel_calls() == before + 2
    ufuncgen.set_num_threads(1)
    ufg_probe.scaled(x)
    ex.gaussian_pdf(x, 0.0, 1.0)
    assert parallel_calls() == before + 2


def test_a_function_with_threads_false_stays_on_the_calling_thread(probe_module_dir,
                                                                   always_parallel, monkeypatch):
    monkeypatch.syspath_prepend(str(probe_module_dir))
    import ufg_probe
    x = np.arange(200_000.0)
    before = parallel_calls()
    assert np.array_equal(ufg_probe.scaled_serial(x), 3 * x + 1)
    assert parallel_calls() == before


def test_a_module_built_with_no_threads_stays_on_the_calling_thread(
        probe_module_without_threads_dir, always_parallel, monkeypatch):
    monkeypatch.syspath_prepend(str(probe_module_without_threads_dir))
    import ufg_probe_serial
    x = np.arange(200_000.0)
    before = parallel_calls()
    assert np.array_equal(ufg_probe_serial.scaled(x), 3 * x + 1)
    assert parallel_calls() == before


def test_eight_python_threads_calling_at_once_get_correct_results(always_parallel):
    rng = np.random.default_rng(8)
    inputs = [rng.standard_normal(300_000 + 1000 * i) for i in range(8)]
    vectors = [rng.standard_normal((40_000, 3)) for _ in range(8)]
    expected = [ex.gaussian_pdf(x, 0.5, 2.0) for x in inputs]
    expected_norms = [ex.sq_norm3(v) for v in vectors]
    start = threading.Barrier(8)
    failures = []

    def work(i):
        start.wait()
        for _ in range(5):
            if not np.array_equal(ex.gaussian_pdf(inputs[i], 0.5, 2.0), expected[i]):
                failures.append(("gaussian_pdf", i))
            if not np.array_equal(ex.sq_norm3(vectors[i]), expected_norms[i]):
                failures.append(("sq_norm3", i))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert failures == []


def _large_call_in_child(queue):
    x = np.arange(500_000.0)
    queue.put(bool(np.array_equal(ex.add(x, x), 2 * x)))


def test_a_forked_child_uses_threads_after_the_parent_did(always_parallel):
    x = np.arange(500_000.0)
    ex.add(x, x)                                    # the parent's helpers are running
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_large_call_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) is True


# add, with a vector-math call that cannot change the sum: libmvec's cos raises a false
# overflow for |y| > 1e19 (scalar cos does not), so a reduction with such values is re-run in
# NumPy's order, and only that run's flags reach np.errstate.
ASSOCIATIVE_WITH_VECTOR_MATH = """\
ufunc add_cos0(x, y) -> sum
    types: float64(float64, float64)
    identity: 0
    associative: true
{
    sum = x + y + (T)0 * cos(y);
}

gufunc softmax(x) -> y
    layout: (n)->(n)
    types: float32(float32), float64(float64)
    specialize: n=8
{
    T top = x(0);
    for (int64_t i = 1; i < n; i++) top = max(top, x(i));
    T sum = 0;
    for (int64_t i = 0; i < n; i++) { y(i) = exp(x(i) - top); sum += y(i); }
    for (int64_t i = 0; i < n; i++) y(i) /= sum;
}

gufunc minmax(x) -> (lo, hi)
    layout: (n)->(),()
    types: (float64, float64)(float64), (float32, float32)(float32)
{
    lo = x(0);
    hi = x(0);
    for (int64_t i = 1; i < n; i++) { lo = min(lo, x(i)); hi = max(hi, x(i)); }
}

gufunc softmax8(x) -> y
    layout: (8)->(8)
    types: float64(float64)
{
    T top = x(0);
    for (int64_t i = 1; i < 8; i++) top = max(top, x(i));
    T sum = 0;
    for (int64_t i = 0; i < 8; i++) { y(i) = exp(x(i) - top); sum += y(i); }
    for (int64_t i = 0; i < 8; i++) y(i) /= sum;
}
"""


@pytest.fixture(scope="module")
def vector_math(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("add_cos0"), "ufg_add_cos0",
                           ASSOCIATIVE_WITH_VECTOR_MATH, "--cuda-arch", "none")


@pytest.fixture
def add_cos0(vector_math):
    return vector_math.add_cos0


@pytest.mark.parametrize("name, dtype", [("softmax", np.float32), ("softmax", np.float64),
                                         ("softmax8", np.float64)])
@pytest.mark.parametrize("rows", [20_000, 20_003])
def test_a_gufunc_calling_vector_math_gives_the_same_bits_on_any_number_of_threads(
        vector_math, always_parallel, name, dtype, rows):
    # Its vector loop takes the last rows of a range otherwise (libmvec's exp differs from
    # glibc's in the last bit): ranges that began where the threads' parts did changed 134 of
    # 20,000 softmax rows of 8 between one thread and two.
    fn = getattr(vector_math, name)
    x = np.random.default_rng(10).standard_normal((rows, 8)).astype(dtype)
    ufuncgen.set_num_threads(1)
    one = fn(x)
    np.testing.assert_allclose(one, np.exp(x - x.max(-1, keepdims=True)) /
                               np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True),
                               rtol=8 * np.finfo(dtype).eps)
    for threads in (2, 3, 4):
        ufuncgen.set_num_threads(threads)
        before = parallel_calls()
        assert fn(x).tobytes() == one.tobytes(), threads
        assert parallel_calls() > before


def _reduce_with_flags(fn, x):
    raised = []
    with np.errstate(all="call", call=lambda kind, flag: raised.append(kind)):
        value = fn.reduce(x)
    return value.tobytes(), sorted(set(raised))


@pytest.mark.parametrize("where", [[-70_000], [-70_000, 5, 1_500_000]],
                         ids=["in the last part", "in several parts"])
def test_a_reduction_whose_helper_raised_overflow_is_rerun_as_on_one_thread(
        add_cos0, always_parallel, where):
    # A helper's overflow flag reached the caller through glibc's feraiseexcept, which sets it
    # in the x87 unit, not in the SSE register the loops read: the re-run in order was
    # skipped (another sum, and "overflow") or its flags kept the helper's false overflow.
    x = np.random.default_rng(5).standard_normal(4_000_000)
    for k in where:
        x[k], x[k + 1] = 1e300, -1e300
    ufuncgen.set_num_threads(1)
    expected = _reduce_with_flags(add_cos0, x)
    ufuncgen.set_num_threads(2)
    before = parallel_calls()
    for _ in range(8):
        assert _reduce_with_flags(add_cos0, x) == expected
    assert parallel_calls() > before


def test_an_output_whose_rows_share_memory_keeps_the_last_rows_values_on_any_thread_count(
        always_parallel):
    """NumPy writes such an out= in order, the last write winning; parts on two threads raced
    (1 run in 3 kept another row's value)."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((200_000, 8)), rng.standard_normal((200_000, 8))
    buffer = np.zeros(1)
    shared = np.lib.stride_tricks.as_strided(buffer, (200_000,), (0,))
    last = ex.inner1d(x[-1], y[-1])
    for _ in range(20):
        ex.inner1d(x, y, out=shared)
        assert buffer[0] == last
    # A gufunc whose output rows overlap without sharing whole rows: each (4) block of
    # centroid_distances' (k) output starts 3 elements after the last one's start.
    point, centroids = rng.standard_normal((5_000, 3)), rng.standard_normal((4, 3))
    flat = np.zeros(3 * 5_000 + 1)
    rows = np.lib.stride_tricks.as_strided(flat, (5_000, 4), (3 * 8, 8))
    want_flat = np.zeros_like(flat)
    want_rows = np.lib.stride_tricks.as_strided(want_flat, (5_000, 4), (3 * 8, 8))
    for i in range(5_000):
        want_rows[i] = ex.centroid_distances(point[i], centroids)
    ex.centroid_distances(point, centroids, out=rows)
    np.testing.assert_array_equal(flat, want_flat)
    # An elementwise out= of step 0.
    a = rng.standard_normal(200_000)
    ex.add(a, 1.0, out=np.lib.stride_tricks.as_strided(buffer, a.shape, (0,)))
    assert buffer[0] == a[-1] + 1.0


def test_two_outputs_that_meet_keep_numpys_order_on_any_thread_count(vector_math,
                                                                     always_parallel):
    """out=(o[:-1], o[1:]): NumPy writes row i's outputs in order, then row i+1's, so o[i]
    ends as row i's first output.  Parts on two threads raced where they met (a few rows in
    400,000 kept the second output of the row before)."""
    x = np.random.default_rng(6).standard_normal((400_000, 4))
    want = np.empty(400_001)
    want[1:] = x.max(-1)
    want[:-1] = x.min(-1)
    for threads in (1, 2, 3):
        ufuncgen.set_num_threads(threads)
        for _ in range(5):
            o = np.zeros(400_001)
            vector_math.minmax(x, out=(o[:-1], o[1:]))
            np.testing.assert_array_equal(o, want)
    # Outputs apart are still split across threads, side by side in one buffer too.
    for lo, hi in ((np.empty(400_000), np.empty(400_000)), np.empty((2, 400_000))):
        before = parallel_calls()
        vector_math.minmax(x, out=(lo, hi))
        assert parallel_calls() > before
        np.testing.assert_array_equal(lo, want[:-1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows", [3, 8, 100, 4001])
def test_two_outputs_that_meet_keep_numpys_order_where_rows_would_run_in_lanes(
        vector_math, dtype, rows, threads_restored):
    """Rows of 4 (one variable core dimension, scalar outputs) run side by side in SIMD lanes,
    each output's block stored after the other's; with out=(o[:-1], o[1:]) row i's second
    output and row i+1's first are one element, which NumPy's order leaves as row i+1's."""
    ufuncgen.set_num_threads(1)
    x = np.random.default_rng(rows).standard_normal((rows, 4)).astype(dtype)
    want = np.empty(rows + 1, dtype)
    want[1:] = x.max(-1)
    want[:-1] = x.min(-1)
    o = np.zeros(rows + 1, dtype)
    vector_math.minmax(x, out=(o[:-1], o[1:]))
    np.testing.assert_array_equal(o, want)


def test_two_outputs_that_interleave_without_sharing_a_byte_keep_the_vector_loop_and_threads(
        always_parallel):
    """A complex array's real and imaginary parts, or the columns of an (n, 2) array: their
    spans meet but no element does, and such a call had been run element by element."""
    x = np.random.default_rng(7).standard_normal(1_000_000)
    s, c = ex.sincos(x)
    for out in (np.empty(x.size, complex), np.empty((x.size, 2))):
        first, second = (out.real, out.imag) if out.dtype.kind == "c" else (out[:, 0], out[:, 1])
        before = parallel_calls()
        ex.sincos(x, out=(first, second))
        assert parallel_calls() > before
        np.testing.assert_array_equal(first, s)
        np.testing.assert_array_equal(second, c)
