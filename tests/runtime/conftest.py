"""Fixtures of the Function tests."""
import pytest

# A Function made without a descriptor (these tests wrap NumPy's ufuncs) refuses a call that
# reaches the device path with this TypeError: seeing it proves the routing.
ROUTED = "built without device kernels"


@pytest.fixture
def forbidden_device_hook():
    """Documents that a test's calls must stay on the host: one routed to the device path
    raises TypeError (ROUTED), so a call that returns stayed on the host."""
    return None
