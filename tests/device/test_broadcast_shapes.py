"""The device call broadcasts operands as NumPy does, refusals included: every triple of small
shapes, as the two inputs of `add` and its where= mask."""
import itertools

import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

pytestmark = pytest.mark.skipif(not device.is_available(), reason="no device")

SHAPES = [(), (1,), (3,), (4,), (1, 3), (2, 1), (2, 3), (5, 1, 1), (0,), (1, 0), (2, 0)]


def _outcome(call):
    try:
        return call().shape
    except ValueError:
        return ValueError


def test_device_broadcasting_agrees_with_numpy_on_every_triple_of_small_shapes():
    for x_shape, y_shape, mask_shape in itertools.product(SHAPES, repeat=3):
        x, y = np.ones(x_shape), np.ones(y_shape)
        mask = np.ones(mask_shape, bool)
        want = _outcome(lambda: np.add(x, y, where=mask, out=None))
        got = _outcome(lambda: ex.add(device.to_device(x), device.to_device(y),
                                      where=device.to_device(mask), out=None))
        assert got == want, (x_shape, y_shape, mask_shape)


def test_a_call_of_0_d_operands_has_a_0_d_result():
    result = ex.add(device.to_device(np.float64(2.0)), 1.0)
    assert result.shape == ()
    assert result.copy_to_host() == 3.0
