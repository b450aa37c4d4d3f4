"""A short run of the host path for tools/valgrind.sh: every seed function of
ufuncgen.examples, in each of its dtypes, on contiguous, strided, broadcast and empty inputs,
with out= and where=, plus reductions, the multi-threaded loop and a few device calls
through the simulator.  It checks results against NumPy, so memcheck's "uninitialised value"
reports come with a use.
"""
import numpy as np

import ufuncgen.examples as ex
from ufuncgen import device

rng = np.random.default_rng(5)


def arr(shape, dtype, low=0.5, high=2.0):
    return rng.uniform(low, high, shape).astype(dtype)


def close(a, b):
    np.testing.assert_allclose(a, b, rtol=1e-5 if np.asarray(a).dtype == np.float32 else 1e-12)


for repeat in range(3):
    for dt in (np.float32, np.float64):
        x, y = arr(37, dt), arr(37, dt)
        close(ex.add(x, y), x + y)
        close(ex.add(x[::3], y[::-3]), x[::3] + y[::-3])
        close(ex.add(x[:, None], y[None, :5]), x[:, None] + y[None, :5])
        out = np.zeros(37, dt)
        where = np.arange(37) % 2 == 0
        ex.add(x, y, out=out, where=where)
        close(out[where], (x + y)[where])
        close(ex.add.reduce(x), np.add.reduce(x))
        close(ex.add.accumulate(x), np.add.accumulate(x))
        close(ex.hypot(x, y), np.hypot(x, y))
        close(ex.gaussian_pdf(x, dt(1), dt(0.5)),
              np.exp(-0.5 * ((x - 1) / dt(0.5)) ** 2) / (dt(0.5) * np.sqrt(2 * np.pi)))
        ex.polar_distance(x, y, y, x)
        s, c = ex.sincos(x)
        close(s, np.sin(x)), close(c, np.cos(x))
        m = arr((5, 7), dt)
        close(ex.l2_norm(m), np.linalg.norm(m, axis=-1))
        close(ex.inner1d(m, m), (m * m).sum(-1))
        close(ex.matmul(m, m.T), m @ m.T)
        close(ex.rgb_to_gray(arr((4, 3), dt)).shape, (4,))
        v = arr((6, 3), dt)
        close(ex.sq_norm3(v), (v * v).sum(-1))
        close(ex.centroid_distances(v, v).shape, (6, 6))
        close(ex.pairwise_distances(v), np.sqrt(((v[:, None] - v[None]) ** 2).sum(-1)))
        assert ex.condensed_distances(v).shape == (15,)
        assert ex.add(np.zeros(0, dt), np.zeros(0, dt)).shape == (0,)
        assert ex.inner1d(np.zeros((0, 3), dt), np.zeros((0, 3), dt)).shape == (0,)
    close(ex.custom_op(arr(9, np.float64), 2.0).shape, (9,))
    i = np.arange(-20, 20, dtype=np.int64)
    assert (ex.add(i, i) == i + i).all()
    assert ex.lucas(np.arange(10)).tolist() == [2, 1, 3, 4, 7, 11, 18, 29, 47, 76]
    big = arr(300_000, np.float64)          # large enough for the thread pool
    close(ex.add(big, 1.0), big + 1.0)

    if device.is_available():
        d = device.to_device(arr(33, np.float64))
        close(ex.add(d, d).copy_to_host(), 2 * d.copy_to_host())
        close(ex.add.reduce(d).copy_to_host(), d.copy_to_host().sum())
        dm = device.to_device(arr((4, 5), np.float64))
        close(ex.inner1d(dm, dm).copy_to_host(), (dm.copy_to_host() ** 2).sum(-1))
print("valgrind_host.py: ok")
