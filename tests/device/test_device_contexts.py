"""Device calls leave the calling thread's current device (its CUDA context) as they found it,
and make no context on a device the process does not use.

Since CUDA 12, cudaSetDevice(d) creates device d's primary context (hundreds of MiB of its
memory; an error on an exclusive-process GPU another process holds).  A thread that never
made a device current has none, while cudaGetDevice answers 0 there: putting that "previous
device" back by number gave device 0 a context in every process that used only device 1.  The
simulator models the rule (making a device current creates its context; _sim_contexts lists
them), and each case runs in a fresh interpreter, whose contexts are its own.
"""
import subprocess
import sys
import textwrap

import pytest

from ufuncgen import device

pytestmark = pytest.mark.skipif(device.backend() != "sim" or device.device_count() < 2,
                                reason="needs two simulated devices")


def _run(script):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                            text=True, timeout=120, env={**__import__("os").environ,
                                                         "UFUNCGEN_DEVICE": "sim"})
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_work_on_device_1_alone_makes_no_context_on_device_0():
    out = _run("""
        import threading
        import numpy as np
        import ufuncgen.examples as ex
        from ufuncgen import _device, device

        def work():
            x = np.linspace(-3.0, 3.0, 1001)
            d = device.to_device(x, device=1)
            got = ex.add(ex.add(d, 1.0), d).copy_to_host()
            np.testing.assert_array_equal(got, np.add(np.add(x, 1.0), x))

        work()                                     # the main thread, never given a device
        thread = threading.Thread(target=work)     # and a new thread
        thread.start()
        thread.join()
        print(_device._sim_contexts())
    """)
    assert out == "[1]"


def test_the_current_device_stays_what_cudas_get_device_answers_after_work_elsewhere():
    """Device 0, as CUDA's cudaGetDevice answers on a thread with no device current, before
    and after work on device 1: device_array() without device= still lands on device 0."""
    out = _run("""
        import numpy as np
        import ufuncgen.examples as ex
        from ufuncgen import _device, device

        x = np.arange(5.0)
        before = _device.current_device()
        on_1 = ex.add(device.to_device(x, device=1), 2.0)
        np.testing.assert_array_equal(on_1.copy_to_host(), x + 2.0)
        print(before, _device.current_device(), device.device_array(3).device,
              _device._sim_contexts())
    """)
    assert out == "0 0 0 [0, 1]"
