"""Helpers for the device-path tests: moving arrays to the device and back, and a stand-in
for a foreign CUDA library's array (anything exporting __cuda_array_interface__)."""
import time

import numpy as np
import pytest

from ufuncgen import _device, device

SIM = device.backend() == "sim"
ON_GPU = device.backend() == "cuda" and device.is_available()


def to_dev(a, layout="contiguous"):
    """A device view of `a` with the given memory layout (made on the device)."""
    a = np.asarray(a)
    if layout == "contiguous":
        return device.to_device(a)
    if layout == "strided":
        big = np.zeros(tuple(2 * n for n in a.shape), a.dtype)
        big[tuple(slice(None, None, 2) for _ in a.shape)] = a
        d = device.to_device(big)
        return view(d, a.shape, tuple(2 * s for s in d.strides))
    if layout == "reversed":
        d = device.to_device(a[tuple(slice(None, None, -1) for _ in a.shape)])
        offset = sum((n - 1) * s for n, s in zip(d.shape, d.strides))
        return view(d, a.shape, tuple(-s for s in d.strides), offset)
    if layout == "fortran":
        d = device.to_device(np.ascontiguousarray(a.T))
        return view(d, a.shape, d.strides[::-1])
    raise KeyError(layout)


# Stalls of growing length, for a check that something has NOT happened yet on a stalled
# stream: it is judged only while the stall surely holds the stream, so a check that a loaded
# machine delays past its stall tries again with a longer one instead of failing.
STALLS = (0.05, 0.5, 5.0)


def stalled(handle, seconds):
    """Holds stream `handle` for `seconds` (the asynchronous simulator's sim_stall); returns a
    function that tells whether the stall surely holds it still: less than `seconds` since
    the stall was queued, when it had not even begun."""
    start = time.perf_counter()
    _device.sim_stall(handle, seconds)
    return lambda: time.perf_counter() - start < seconds


def view(d, shape, strides, offset=0):
    from ufuncgen import _device
    return _device.from_pointer(d.ptr + offset, tuple(shape), d.dtype, tuple(strides), d.device,
                                d, False, 0)


def host(x):
    """The host copy of a device result (or a tuple of them)."""
    if isinstance(x, tuple):
        return tuple(host(e) for e in x)
    return x.copy_to_host()


def assert_same(got, want):
    """Equal bit for bit, NaN where NaN (for results computed in NumPy's order)."""
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    if want.dtype.kind in "fc":
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        assert same.all(), f"{int((~same).sum())} differ: got {got[~same][:4]}, want {want[~same][:4]}"
    else:
        np.testing.assert_array_equal(got, want)


class ForeignArray:
    """What a CUDA library's array looks like to ufuncgen: only __cuda_array_interface__."""

    def __init__(self, d, **overrides):
        self._d = d
        self._overrides = overrides

    @property
    def __cuda_array_interface__(self):
        cai = dict(self._d.__cuda_array_interface__)
        cai.update(self._overrides)
        return {k: v for k, v in cai.items() if v is not _DROP}


_DROP = object()
DROP = _DROP


class CapsuleProducer:
    """A DLPack producer that hands out one capsule made already (a CUDA device's)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        return self.capsule


class HostTensor:
    """What a PyTorch CPU tensor looks like to ufuncgen: its type has __cuda_array_interface__
    (a property that raises AttributeError off the GPU), its __dlpack_device__ says kDLCPU, and
    NumPy reads it through __array__.  Host memory, as np.add takes it."""

    def __init__(self, values):
        self._values = np.asarray(values)

    @property
    def __cuda_array_interface__(self):
        raise AttributeError("Can't get __cuda_array_interface__ on non-CUDA tensor type")

    def __dlpack_device__(self):
        return (1, 0)

    def __array__(self, dtype=None, copy=None):
        return self._values if dtype is None else self._values.astype(dtype)


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)
