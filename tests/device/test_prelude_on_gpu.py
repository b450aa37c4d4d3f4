"""The body prelude's three-way agreement corpus (tests/prelude/test_agreement.py) on a real
GPU.  Collected here as well because the GPU validation run (shared/gpu/validate.sh) runs
tests/device; without a GPU it is skipped here, since tests/prelude has already run the same
corpus through the simulator."""
import pytest

from ufuncgen import device

if not (device.backend() == "cuda" and device.is_available()):
    pytest.skip(f"needs a CUDA GPU with UFUNCGEN_DEVICE=cuda "
                f"({device.unavailable_reason() or 'backend ' + device.backend()}); "
                f"tests/prelude runs the corpus on the simulator", allow_module_level=True)

from prelude.test_agreement import *   # noqa: E402,F401,F403 - the corpus's tests and fixtures
