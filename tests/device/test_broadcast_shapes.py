"""The dispatcher's own shape broadcasting agrees with NumPy's, errors included."""
import itertools

import numpy as np

from ufuncgen._device_dispatch import broadcast_shapes

SHAPES = [(), (1,), (3,), (4,), (1, 3), (2, 1), (2, 3), (5, 1, 1), (0,), (1, 0), (2, 0)]


def test_broadcast_shapes_agrees_with_numpy_on_every_triple_of_small_shapes():
    for shapes in itertools.product(SHAPES, repeat=3):
        try:
            want = np.broadcast_shapes(*shapes)
        except ValueError:
            want = None
        try:
            got = broadcast_shapes(shapes)
        except ValueError:
            got = None
        assert got == want, shapes


def test_broadcast_shapes_of_nothing_is_a_0d_shape():
    assert broadcast_shapes(()) == ()
