"""add.reduce on device arrays: one axis, several, all, keepdims, initial, dtype and out=."""
import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from .conftest import host, to_dev, view


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.float64])
@pytest.mark.parametrize("axis", [0, 1, -1, None, (0, 2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
def test_add_reduce_matches_numpys_sum(dtype, axis, keepdims, rng):
    x = (rng.integers(-1000, 1000, (5, 6, 7)) if np.dtype(dtype).kind == "i"
         else rng.standard_normal((5, 6, 7))).astype(dtype)
    got = host(ex.add.reduce(to_dev(x), axis=axis, keepdims=keepdims))
    want = np.add.reduce(x, axis=axis, keepdims=keepdims)
    assert np.shape(got) == np.shape(want) and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("n", [0, 1, 4095, 4096, 100_003])
def test_long_reductions_split_into_chunks_give_exact_integer_sums(n, rng):
    x = rng.integers(-2**40, 2**40, n)
    assert int(host(ex.add.reduce(to_dev(x)))) == int(x.sum())


def test_reduce_over_a_strided_view_and_a_reversed_view(rng):
    x = rng.standard_normal((30, 40))
    np.testing.assert_allclose(host(ex.add.reduce(to_dev(x, "strided"), axis=1)), x.sum(1))
    np.testing.assert_allclose(host(ex.add.reduce(to_dev(x, "reversed"), axis=None)), x.sum())


def test_reduce_of_an_empty_array_gives_the_identity_or_initial():
    x = to_dev(np.zeros((0, 3)))
    np.testing.assert_array_equal(host(ex.add.reduce(x, axis=0)), np.zeros(3))
    np.testing.assert_array_equal(host(ex.add.reduce(x, axis=0, initial=5.0)), np.full(3, 5.0))


def test_reduce_dtype_and_out_follow_numpy(rng):
    x = rng.integers(-100, 100, (4, 5)).astype(np.int32)
    got = ex.add.reduce(to_dev(x), axis=1)
    assert got.dtype == ex.add.reduce(x, axis=1).dtype
    out = device.device_array(4, np.float64)
    assert ex.add.reduce(to_dev(x.astype(np.float64)), axis=1, out=out) is out
    np.testing.assert_array_equal(host(out), x.sum(1))


def test_reduce_of_more_than_two_to_the_31_elements_uses_64_bit_indexing():
    ones = to_dev(np.ones(1, np.int64))
    n = 2**31 + 5
    broadcast = view(ones, (n,), (0,))
    assert int(host(ex.add.reduce(broadcast))) == n


def test_reduce_refuses_where_and_host_out():
    x = to_dev(np.ones(4))
    with pytest.raises(TypeError, match="where"):
        ex.add.reduce(x, where=to_dev(np.ones(4, bool)))
    with pytest.raises(TypeError, match="host and device"):
        ex.add.reduce(x, out=np.zeros(()))


def test_reduce_of_host_arrays_still_goes_to_numpy():
    assert ex.add.reduce(np.arange(5.0)) == 10.0


# ----------------------------------------------------------------------------- associative or not

@pytest.fixture
def order_module(reduce_order_module_dir, monkeypatch):
    import importlib
    monkeypatch.syspath_prepend(str(reduce_order_module_dir))
    return importlib.import_module("ufg_order")


def test_a_function_without_associative_reduces_each_output_in_numpys_order_on_the_device(order_module):
    # Long enough that an associative function's reduction is split into chunks.
    x = np.random.default_rng(5).standard_normal(100_003).astype(np.float32)
    in_order = np.add.accumulate(x)[-1]              # sequential float32 sums
    got = host(order_module.plus_in_order.reduce(to_dev(x)))
    assert got.tobytes() == np.float32(in_order).tobytes()
    x2 = np.stack([x, x[::-1]])
    got = host(order_module.plus_in_order.reduce(to_dev(x2), axis=1))
    assert got.tobytes() == np.array([in_order, np.add.accumulate(x[::-1])[-1]], np.float32).tobytes()


def test_an_associative_function_may_split_its_device_reduction_and_stays_accurate(order_module):
    x = np.random.default_rng(5).standard_normal(100_003).astype(np.float32)
    got = float(host(order_module.plus.reduce(to_dev(x))))
    exact = float(np.sum(x.astype(np.float64)))
    assert abs(got - exact) <= 64 * np.finfo(np.float32).eps * float(np.abs(x).sum())
    # Split into chunks: not the in-order sum that plus_in_order gives on the same data.
    assert got != float(np.add.accumulate(x)[-1])


def test_a_built_associative_function_reduces_on_the_host_with_the_same_bits_as_the_shipped_add(order_module):
    x = np.random.default_rng(6).standard_normal(300_007).astype(np.float32)
    assert order_module.plus.reduce(x).tobytes() == ex.add.reduce(x).tobytes()
    assert order_module.plus_in_order.reduce(x).tobytes() == np.add.accumulate(x)[-1].tobytes()
