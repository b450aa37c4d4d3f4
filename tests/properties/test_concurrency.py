"""Concurrency: the seed functions called from 8 Python threads at once, on the host and
through the device simulator, give the results one thread gives; and the GIL is released
during host loops and simulated launches (a Python thread keeps running meanwhile).

tests/test_threads.py already runs gaussian_pdf and sq_norm3 from 8 threads on the host
with the thread pool; here: every seed function, out= and where=, the device simulator
through the generated functions (streams, casts, reduce), and the GIL."""
import threading
import time

import numpy as np
import pytest

import ufuncgen
import ufuncgen.examples as ex
from ufuncgen import device

from examples.conftest import (ELEMENTWISE_NAMES, GUFUNC_NAMES, elementwise_inputs,
                               loop_dtypes)
from examples.test_gufuncs import gufunc_inputs

THREADS = 8


def _cases(rng):
    """[(function name, inputs)] for every loop of every seed function."""
    cases = []
    for name in ELEMENTWISE_NAMES:
        for ins, _ in loop_dtypes(getattr(ex, name)):
            cases.append((name, elementwise_inputs(name, ins[0], (3001,), rng)))
    for name in GUFUNC_NAMES:
        for ins, _ in loop_dtypes(getattr(ex, name)):
            cases.append((name, gufunc_inputs(name, ins[0], (37,), 6, rng)))
    return cases


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


def _run_in_threads(work):
    start = threading.Barrier(THREADS)
    failures = []

    def body(i):
        start.wait()
        try:
            work(i, failures)
        except Exception as error:      # noqa: BLE001 - reported below
            failures.append((i, repr(error)))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert failures == []


def test_every_seed_function_from_eight_host_threads_gives_one_threads_bits():
    rng = np.random.default_rng(81)
    cases = _cases(rng)
    expected = [_as_tuple(getattr(ex, name)(*args)) for name, args in cases]

    def work(i, failures):
        for _ in range(3):
            for (name, args), want in zip(cases[i::2] + cases, expected[i::2] + expected):
                fn = getattr(ex, name)
                outs = tuple(np.empty_like(w) for w in want)
                got = _as_tuple(fn(*args, out=outs))
                if not all(np.array_equal(g, w, equal_nan=True) for g, w in zip(got, want)):
                    failures.append((i, name))

    _run_in_threads(work)


def test_every_seed_function_from_eight_threads_on_the_simulator_gives_one_threads_bits():
    rng = np.random.default_rng(82)
    cases = _cases(rng)
    # One thread's results on the simulator (its loops may round unlike the host's SIMD ones).
    expected = [tuple(g.copy_to_host() for g in _as_tuple(
        getattr(ex, name)(*[device.to_device(a) for a in args]))) for name, args in cases]
    x = rng.uniform(-5, 5, 5000)
    mask = rng.random(5000) < 0.5
    expected_masked = np.where(
        mask, ex.gaussian_pdf(device.to_device(x), 0.5, 2.0).copy_to_host(), -1.0)
    ints = rng.integers(-1000, 1000, 5000).astype(np.int32)
    expected_sum = ex.add.reduce(ints.astype(np.int64))
    expected_cast = ex.hypot(device.to_device(ints), device.to_device(ints[::-1])).copy_to_host()

    def work(i, failures):
        stream = device.Stream() if i % 2 else None     # half on the default stream
        on = (lambda a: device.to_device(a, stream=stream))
        for _ in range(2):
            for (name, args), want in zip(cases, expected):
                got = _as_tuple(getattr(ex, name)(*[on(a) for a in args]))
                got = [g.copy_to_host() for g in got]
                if not all(np.array_equal(g, w, equal_nan=True) for g, w in zip(got, want)):
                    failures.append((i, name))
            out = on(np.full(5000, -1.0))
            ex.gaussian_pdf(on(x), 0.5, 2.0, out=out, where=on(mask))
            if not np.array_equal(out.copy_to_host(), expected_masked):
                failures.append((i, "gaussian_pdf where="))
            if ex.add.reduce(on(ints), dtype=np.int64).copy_to_host() != expected_sum:
                failures.append((i, "add.reduce"))
            if not np.array_equal(ex.hypot(on(ints), on(ints[::-1])).copy_to_host(),
                                  expected_cast):
                failures.append((i, "hypot of int32"))
        device.synchronize(stream)

    _run_in_threads(work)


# --------------------------------------------------------------------------- the GIL


def _progress_during(call, seconds_wanted=0.3):
    """Runs `call` (made longer until it takes seconds_wanted) while a Python thread spins
    and notes the time every millisecond; returns (call duration, notes made strictly inside
    the call, away from its ends)."""
    stamps, stop = [], threading.Event()

    def spin():
        last = 0.0
        while not stop.is_set():
            now = time.perf_counter()
            if now - last >= 0.001:
                stamps.append(now)
                last = now

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        time.sleep(0.01)
        begin = time.perf_counter()
        call()
        end = time.perf_counter()
    finally:
        stop.set()
        spinner.join()
    # A switch interval (5 ms) may pass between `begin` and the call holding or dropping the
    # GIL; margins of 30 ms on each side exclude it.
    inside = [t for t in stamps if begin + 0.03 < t < end - 0.03]
    return end - begin, len(inside)


@pytest.fixture
def one_host_thread():
    threads = ufuncgen.get_num_threads()
    ufuncgen.set_num_threads(1)
    yield
    ufuncgen.set_num_threads(threads)


def _long_inputs(name, scale=1):
    rng = np.random.default_rng(7)
    if name == "lucas":
        return [rng.integers(-2**62, 2**62, 400_000 * scale)]
    return [rng.uniform(-1, 1, (2 * scale, 700, 100))]    # pairwise_distances: 2 x 700 x 700 x 100


def _progress_during_a_long_enough(name, call_with, prepare=lambda a: a):
    """_progress_during for a call on inputs grown until one call takes over 0.15 s, however
    fast the machine: a single call, since between calls the GIL changes hands anyway."""
    for scale in (1, 4, 16):
        args = [prepare(a) for a in _long_inputs(name, scale)]
        duration, inside = _progress_during(lambda: call_with(args))
        if duration > 0.15:
            break
    return duration, inside


@pytest.mark.parametrize("name", ["lucas", "pairwise_distances"])
def test_the_gil_is_released_during_a_long_host_loop(name, one_host_thread):
    fn = getattr(ex, name)
    duration, inside = _progress_during_a_long_enough(name, lambda args: fn(*args))
    assert duration > 0.1, f"the call took only {duration:.3f} s: too short to tell"
    assert inside >= 10, (f"a Python thread made {inside} steps during a {duration:.2f} s "
                          f"host call: the GIL was held")


@pytest.mark.parametrize("name", ["lucas", "pairwise_distances"])
def test_the_gil_is_released_during_a_long_simulated_launch_and_synchronize(name):
    fn = getattr(ex, name)

    def call(args):
        fn(*args)
        device.synchronize()

    duration, inside = _progress_during_a_long_enough(name, call, device.to_device)
    assert duration > 0.1, f"the call took only {duration:.3f} s: too short to tell"
    assert inside >= 10, (f"a Python thread made {inside} steps during a {duration:.2f} s "
                          f"simulated launch: the GIL was held")


def test_the_probe_sees_a_call_that_holds_the_gil():
    """The control: NumPy's object-dtype sum holds the GIL, and the spinner stops meanwhile
    (a few steps may slip in on a loaded machine while the caller waits to get the GIL back;
    the tests above ask for 10 or more)."""
    values = np.ones(8_000_000, dtype=object)
    duration, inside = _progress_during(values.sum)
    assert duration > 0.1 and inside < 10
