"""Fixtures of the Function tests: the device hook replaced, to see which calls take the
device path without running one."""
import sys
import types

import pytest

DEVICE_MODULE = "ufuncgen._device_dispatch"


@pytest.fixture
def device_hook(monkeypatch):
    """Replace ufuncgen._device_dispatch with a recorder; returns its calls."""
    calls = []
    module = types.ModuleType(DEVICE_MODULE)

    def call(function, args, kwargs):
        calls.append((function, args, kwargs))
        return "device result"

    module.call = call
    monkeypatch.setitem(sys.modules, DEVICE_MODULE, module)
    return calls


@pytest.fixture
def forbidden_device_hook(monkeypatch):
    """A device hook that fails the test if the host path is not taken."""
    module = types.ModuleType(DEVICE_MODULE)

    def call(function, args, kwargs):
        raise AssertionError("host call was routed to the device hook")

    module.call = call
    monkeypatch.setitem(sys.modules, DEVICE_MODULE, module)
