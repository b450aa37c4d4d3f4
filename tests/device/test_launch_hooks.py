"""The launch record (_device.launch_count / last_launch) and the simulator's switch that skips
kernels (UFUNCGEN_SIM_SKIP_KERNELS, _device.sim_set_skip_kernels): below the Python dispatch
layer, so that tests and benchmarks/device_dispatch.py observe launches whatever that layer is."""
import numpy as np
import pytest

import ufuncgen._device as dev
import ufuncgen.examples as ex
from ufuncgen import device

from .conftest import SIM, host, to_dev
from .test_runtime import run_python

sim_only = pytest.mark.skipif(not SIM, reason="the skip switch exists only under the simulator")


@pytest.fixture
def skipping():
    """Kernels skipped for the test, and the previous setting restored after it."""
    previous = dev.sim_set_skip_kernels(True)
    yield
    dev.sim_set_skip_kernels(previous)


def test_each_launch_is_counted_and_recorded_with_its_collapsed_shape_and_grid():
    x = to_dev(np.ones((3, 1000)))
    before = dev.launch_count()
    ex.add(x, x)
    assert dev.launch_count() == before + 1
    assert dev.last_launch() == {"kind": "elementwise", "shape": (3000,), "reduce_shape": (),
                                 "grid": dev.last_launch()["grid"], "block": dev.BLOCK,
                                 "device": 0, "stream": 0, "ran": True}
    assert dev.last_launch()["grid"] >= 1


def test_a_launch_is_recorded_with_the_stream_it_was_queued_on():
    # what a GPU run prints to see where a call went (issue 11's torch out= probe)
    stream = device.Stream()
    ex.add(to_dev(np.ones(10)), 1.0, stream=stream)
    assert dev.last_launch()["stream"] == stream.handle != 0
    with stream:
        ex.add(to_dev(np.ones(10)), 1.0)
    assert dev.last_launch()["stream"] == stream.handle
    ex.add(to_dev(np.ones(10)), 1.0)
    assert dev.last_launch()["stream"] == 0


def test_a_reduction_is_recorded_with_its_kept_and_reduced_dimensions():
    ex.add.reduce(to_dev(np.ones((4, 5))), axis=1)
    launch = dev.last_launch()
    assert launch["kind"] == "reduce" and launch["shape"] == (4,) and launch["reduce_shape"] == (5,)


@sim_only
def test_with_kernels_skipped_a_call_leaves_out_untouched_but_still_launches(skipping):
    out = to_dev(np.full(1000, -1.0))
    before = dev.launch_count()
    result = ex.add(to_dev(np.ones(1000)), 1.0, out=out)
    assert result is out
    assert dev.launch_count() == before + 1
    assert dev.last_launch()["kind"] == "elementwise" and dev.last_launch()["ran"] is False
    np.testing.assert_array_equal(host(out), np.full(1000, -1.0))


@sim_only
def test_turned_off_again_kernels_run_and_results_are_correct():
    assert dev.sim_set_skip_kernels(True) is False
    assert dev.sim_set_skip_kernels(False) is True
    out = to_dev(np.zeros(1000))
    ex.add(to_dev(np.arange(1000.0)), 1.0, out=out)
    assert dev.last_launch()["ran"] is True
    np.testing.assert_array_equal(host(out), np.arange(1000.0) + 1.0)


@sim_only
def test_a_skipped_launch_still_reports_an_injected_launch_error(skipping):
    dev._sim_inject_error("cudaErrorLaunchFailure")
    with pytest.raises(dev.DeviceError, match="cudaErrorLaunchFailure"):
        ex.add(to_dev(np.ones(10)), 1.0)


@sim_only
def test_the_switch_takes_only_a_bool():
    with pytest.raises(TypeError, match="skip: expected a bool, got int"):
        dev.sim_set_skip_kernels(1)


@sim_only
def test_the_environment_variable_sets_the_switch_at_startup_and_a_bad_value_is_refused():
    probe = ("import ufuncgen._device as d\n"
             "try:\n"
             "    print(d.sim_set_skip_kernels(False))\n"
             "except ValueError as e:\n"
             "    print(e)\n")
    on = run_python(probe, UFUNCGEN_DEVICE="sim", UFUNCGEN_SIM_SKIP_KERNELS="1")
    off = run_python(probe, UFUNCGEN_DEVICE="sim", UFUNCGEN_SIM_SKIP_KERNELS=None)
    bad = run_python(probe, UFUNCGEN_DEVICE="sim", UFUNCGEN_SIM_SKIP_KERNELS="yes")
    assert (on.stdout, off.stdout) == ("True\n", "False\n"), (on.stderr, off.stderr)
    assert bad.stdout.startswith("UFUNCGEN_SIM_SKIP_KERNELS must be 1"), bad.stderr


def test_the_supported_dtypes_are_the_generators_device_element_types():
    from ufuncgen.gen.element_types import DEVICE_ELEMENT_TYPES
    assert dev.SUPPORTED_DTYPES == tuple(DEVICE_ELEMENT_TYPES)
