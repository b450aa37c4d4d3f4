"""Concurrency: the seed functions called from 8 Python threads at once, on the host and
through the device simulator, give the results one thread gives; and the GIL is released
during host loops and simulated launches (a Python thread keeps running meanwhile).

tests/test_threads.py already runs gaussian_pdf and sq_norm3 from 8 threads on the host
with the thread pool; here: every seed function, out= and where=, the device simulator
through the generated functions (streams, casts, reduce), and the GIL."""
import ctypes
import sys
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
#
# A Python thread (the spinner) notes the time every millisecond while a call runs.  Whether
# the call released the GIL is judged by how many notes fall inside it, against how many the
# same spinner makes in the same run while the caller merely sleeps for as long: nothing is
# compared with a fixed number of seconds, so the verdict holds on a fast or a slow machine.
#
# The control shows that the spinner is a probe that can see the GIL held: during a C call that
# holds the GIL, no note can be taken, so the spinner's longest silence spans the whole hold.
# The hold is a sleep (ctypes.PyDLL keeps the GIL in the call), so its length is what the test
# asks for on any machine.  (An object-dtype sum was the control before: its CPU time, and so
# the verdict, depended on the machine and on NumPy.)

RELEASED = 1 / 5     # a call that releases the GIL lets the spinner make this share, or more
LONG_ENOUGH = 0.15   # seconds: calls are grown until one is this long (ten switch intervals+)


class _Run:
    """What the spinner saw during one call: its duration, the notes made strictly inside it
    away from its ends, and the longest time with no note."""

    def __init__(self, begin, end, stamps):
        self.duration = end - begin
        # The GIL may change hands once a switch interval after `begin` and before `end`
        # (the caller waiting to get it back): margins of three intervals on each side
        # exclude it.
        margin = max(3 * sys.getswitchinterval(), 0.1 * self.duration)
        self.inside = len([t for t in stamps if begin + margin < t < end - margin])
        edges = [begin] + [t for t in stamps if begin < t < end] + [end]
        self.longest_silence = max(b - a for a, b in zip(edges, edges[1:]))


def _spinner_during(call):
    """Runs `call` while the spinner notes the time."""
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
    return _Run(begin, end, stamps)


def _long_run(call_at_scale):
    """Grows the work (call_at_scale(1), (2), (4), ...) until one call lasts LONG_ENOUGH."""
    for scale in (1, 2, 4, 8, 16, 32, 64):
        run = _spinner_during(call_at_scale(scale))
        if run.duration >= LONG_ENOUGH:
            return run
    pytest.fail(f"the call still took only {run.duration:.3f} s at 64 times its smallest work")


def _share_of_free_progress(call_at_scale):
    """(duration, notes inside a long enough call / notes inside an equally long sleep)."""
    run = _long_run(call_at_scale)
    free = _spinner_during(lambda: time.sleep(run.duration)).inside
    assert free >= 10, (f"the spinner made only {free} notes while the caller slept "
                        f"{run.duration:.2f} s")
    return run.duration, run.inside / free


@pytest.fixture
def one_host_thread():
    threads = ufuncgen.get_num_threads()
    ufuncgen.set_num_threads(1)
    yield
    ufuncgen.set_num_threads(threads)


def _long_inputs(name, scale):
    rng = np.random.default_rng(7)
    if name == "lucas":
        return [rng.integers(-2**62, 2**62, 200_000 * scale)]
    return [rng.uniform(-1, 1, (scale, 700, 100))]    # pairwise_distances: scale x 700 x 700 x 100


def _calls_of(name, call_with, prepare=lambda a: a):
    def call_at_scale(scale):
        args = [prepare(a) for a in _long_inputs(name, scale)]
        return lambda: call_with(args)
    return call_at_scale


@pytest.mark.parametrize("name", ["lucas", "pairwise_distances"])
def test_the_gil_is_released_during_a_long_host_loop(name, one_host_thread):
    fn = getattr(ex, name)
    duration, share = _share_of_free_progress(_calls_of(name, lambda args: fn(*args)))
    assert share >= RELEASED, (f"a Python thread made {share:.0%} of its free progress during a "
                               f"{duration:.2f} s host call: the GIL was held")


def test_the_gil_is_released_during_a_long_host_at(one_host_thread):
    # lucas.at through its generated indexed loop (src/core/host_at.c): a 64-step loop per
    # update, on one thread.
    def call_at_scale(scale):
        indices = np.random.default_rng(7).integers(0, 100, 200_000 * scale)
        target = np.arange(-50, 50)
        return lambda: ex.lucas.at(target, indices)

    duration, share = _share_of_free_progress(call_at_scale)
    assert share >= RELEASED, (f"a Python thread made {share:.0%} of its free progress during a "
                               f"{duration:.2f} s host .at: the GIL was held")


@pytest.mark.parametrize("name", ["lucas", "pairwise_distances"])
def test_the_gil_is_released_during_a_long_simulated_launch_and_synchronize(name):
    fn = getattr(ex, name)

    def call(args):
        fn(*args)
        device.synchronize()

    duration, share = _share_of_free_progress(_calls_of(name, call, device.to_device))
    assert share >= RELEASED, (f"a Python thread made {share:.0%} of its free progress during a "
                               f"{duration:.2f} s simulated launch: the GIL was held")


def test_the_probe_sees_a_call_that_holds_the_gil():
    """The control: libc's usleep called through ctypes.PyDLL, which never releases the GIL,
    silences the spinner for the whole sleep."""
    hold = 2 * LONG_ENOUGH
    libc = ctypes.PyDLL(None)
    run = _spinner_during(lambda: libc.usleep(int(hold * 1e6)))
    free = _spinner_during(lambda: time.sleep(run.duration)).inside
    assert free >= 10, (f"the spinner made only {free} notes while the caller slept "
                        f"{run.duration:.2f} s: it would be silent whatever the GIL did")
    # No note can fall inside the hold: the spinner needs the GIL to take one.
    assert run.longest_silence >= hold, (
        f"the spinner's longest silence was {run.longest_silence:.3f} s during a "
        f"{run.duration:.3f} s call through ctypes.PyDLL, which holds the GIL, of usleep({hold} s)")
