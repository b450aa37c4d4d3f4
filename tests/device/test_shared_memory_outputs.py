"""An out= whose elements share memory (a zero stride over more than one element) keeps, in each
address, what NumPy's loop writes there last, and NumPy's visiting order is not always index
order (src/device/call/numpy_order.c lists its rules): small inputs of another dtype are cast
ahead of the loop, a single strided loop runs in index order, the iterator runs an axis
backwards where every operand steps <= 0 along it (not under order='C'/'F'/'A', nor when it
allocates an output), an out= that overlaps what the loop reads is written through a copy, and
where= keeps the last element whose mask is true.  Every case runs the same call on host
arrays and on device arrays of the same layout, and compares the memory afterwards."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from .conftest import host, to_dev, view

pytestmark = pytest.mark.skipif(not device.is_available(), reason=str(device.unavailable_reason()))


class Twins:
    """One block of memory on the host and on the device, viewed alike."""

    def __init__(self, values):
        self.values = np.array(values)
        self.host_base = self.values.copy()
        self.device_base = to_dev(self.values)

    def views(self, shape, strides, offset=0):
        """(host view, device view): strides and offset in elements."""
        item = self.values.itemsize
        strides = tuple(s * item for s in strides)
        h = np.ndarray(shape, self.values.dtype, buffer=self.host_base, offset=offset * item,
                       strides=strides)
        return h, view(self.device_base, shape, strides, offset * item)

    def check(self):
        """The same values (within an ULP or two: sin/cos are libm's on the device and
        vector math on the host), which are far apart for elements that differ."""
        np.testing.assert_allclose(host(self.device_base), self.host_base, rtol=1e-12)


def reversed_twins(values):
    """Twins holding `values` backwards, and their (host, device) views in `values`' order."""
    values = np.asarray(values)
    t = Twins(values[::-1])
    return t, t.views(values.shape, (-1,), values.size - 1)


def shared(n, dtype=np.float64, value=0.0):
    """An out= of n elements that all are one address."""
    t = Twins(np.full(1, value, dtype))
    return t, t.views((n,), (0,))


def run_both(fn, args, out, **kwargs):
    """fn on the host views and on the device views; args/out entries: (host, device) pairs,
    or one value for both."""
    def side(i):
        pick = (lambda a: a[i] if isinstance(a, tuple) else a)
        return [pick(a) for a in args], tuple(pick(o) if o is not None else None for o in out), {
            k: pick(v) for k, v in kwargs.items()}
    for i in (0, 1):
        a, o, kw = side(i)
        with np.errstate(all="ignore"):
            fn(*a, out=o if len(o) > 1 else o[0], **kw)


@pytest.mark.parametrize("fn", [ex.add, ex.hypot])
@pytest.mark.parametrize("dtype", [np.int32, np.int16, np.float32])
def test_a_small_input_numpy_casts_ahead_of_the_loop_keeps_index_order(fn, dtype):
    # the tester's case: add(int32 (1,), int32 [42, 16] stepping -4, out=float64 stepping 0)
    _, b = reversed_twins(np.array([42, 16], dtype))
    out, o = shared(2)
    run_both(fn, [(np.array([42], dtype), to_dev(np.array([42], dtype))), b], [o])
    out.check()


def test_polar_distance_with_a_cast_input_stepping_backwards_gets_numpys_value():
    _, b = reversed_twins(np.array([42, 16], np.int32))
    a = np.array([42], np.int32)
    out, o = shared(2)
    run_both(ex.polar_distance, [(a, to_dev(a)), 2.5, b, 2.5], [o])
    out.check()


def test_an_input_longer_than_numpys_buffer_is_cast_by_the_iterator_in_memory_order():
    _, b = reversed_twins(np.arange(100, dtype=np.int32))
    a = np.array([7], np.int32)
    out, o = shared(100)
    previous = np.setbufsize(16)        # the device asks NumPy for its buffer size
    try:
        run_both(ex.add, [(a, to_dev(a)), b], [o])
    finally:
        np.setbufsize(previous)
    out.check()


def test_operands_of_one_shape_run_in_numpys_single_strided_loop_in_index_order():
    _, b = reversed_twins(np.arange(5.0))
    out, o = shared(5)
    run_both(ex.add, [b, 1.0], [o])
    out.check()


def test_without_a_cast_numpys_iterator_runs_an_axis_backwards_where_every_operand_steps_back():
    _, b = reversed_twins(np.arange(5.0))
    a = np.array([1.0])                 # shape (1,): no single strided loop
    out, o = shared(5)
    run_both(ex.add, [(a, to_dev(a)), b], [o])
    out.check()


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
def test_order_c_f_or_a_keeps_index_order_and_k_lets_numpy_run_backwards(order):
    _, b = reversed_twins(np.arange(5.0))
    a = np.array([1.0])
    out, o = shared(5)
    run_both(ex.add, [(a, to_dev(a)), b], [o], order=order)
    out.check()


def test_an_output_numpy_allocates_keeps_every_axis_in_index_order():
    _, x = reversed_twins(np.arange(1.0, 5.0))
    out, o = shared(4)
    run_both(ex.sincos, [x], [o, None])
    out.check()


def test_two_shared_outputs_both_follow_numpys_backward_run():
    _, x = reversed_twins(np.arange(1.0, 5.0))
    s, os_ = shared(4)
    c, oc = shared(4)
    run_both(ex.sincos, [x], [os_, oc])
    s.check()
    c.check()


def test_an_out_overlapping_an_input_is_written_through_a_copy_in_index_order():
    t = Twins(np.arange(1.0, 6.0))
    x = t.views((4,), (-1,), 4)         # elements 4, 3, 2, 1 of the block
    o = t.views((4,), (0,), 4)          # element 4, which x reads
    a = np.array([0.5])
    run_both(ex.add, [(a, to_dev(a)), x], [o])
    t.check()


@pytest.mark.parametrize("mask_backwards", [False, True])
@pytest.mark.parametrize("bits", range(16))
def test_where_keeps_the_last_element_whose_mask_is_true_in_numpys_order(bits, mask_backwards):
    mask = np.array([bits >> i & 1 for i in range(4)], bool)
    if mask_backwards:
        _, m = reversed_twins(mask)     # with x stepping back too: NumPy runs backwards
    else:
        m = (mask, to_dev(mask))
    _, x = reversed_twins(np.arange(1.0, 5.0))
    out, o = shared(4, value=-1.0)
    run_both(ex.add, [x, 0.5], [o], where=m)
    out.check()


@pytest.mark.parametrize("bits", [0b0001, 0b1000, 0b0110, 0b1111, 0b0000])
def test_where_into_an_out_overlapping_an_input_keeps_the_last_element_only_if_its_mask_is_true(
        bits):
    mask = np.array([bits >> i & 1 for i in range(4)], bool)
    t = Twins(np.arange(1.0, 6.0))
    x = t.views((4,), (1,), 0)
    o = t.views((4,), (0,), 3)          # x's element 3
    run_both(ex.add, [x, 0.5], [o], where=(mask, to_dev(mask)))
    t.check()


@pytest.mark.parametrize("mask_order", ["C", "F"])
@pytest.mark.parametrize("seed", range(6))
def test_where_over_two_shared_axes_follows_numpys_nesting_of_them(seed, mask_order):
    # x steps fastest along axis 0: NumPy nests axis 0 inside axis 1 when the mask agrees
    # (Fortran order), and keeps C order when it does not
    rng = np.random.default_rng(seed)
    mask = rng.random((3, 4)) < 0.4
    m = (mask, to_dev(mask)) if mask_order == "C" else Twins(mask.T).views((3, 4), (1, 3))
    x = Twins(rng.standard_normal((4, 3))).views((3, 4), (1, 3))
    out = Twins(np.full(1, -1.0))
    run_both(ex.add, [x, 0.5], [out.views((3, 4), (0, 0))], where=m)
    out.check()


@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("in_dtype", [np.float64, np.int32])
def test_a_gufunc_runs_backwards_like_numpys_iterator_unless_its_out_is_cast_through_a_copy(
        in_dtype, out_dtype):
    rows = (np.arange(1.0, 5.0)[:, None] * np.ones(3)).astype(in_dtype)
    t = Twins(rows[::-1])
    x = t.views((4, 3), (-3, 1), 9)     # rows 1..4, stepping back through memory
    out, o = shared(4, out_dtype)
    run_both(ex.l2_norm, [x], [o])
    out.check()
