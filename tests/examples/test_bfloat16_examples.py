"""The shipped bfloat16 loops (signatures/examples.ufunc: gelu and l2_norm take ml_dtypes'
bfloat16 arrays): each computes in float32 and rounds once, checked against float64 math
rounded to bfloat16, on the host and through the device path."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen import device

from .conftest import with_layout

ml_dtypes = pytest.importorskip("ml_dtypes", reason="bfloat16 arrays are ml_dtypes' (pip "
                                "install '.[test]' brings it)")
BF16 = np.dtype(ml_dtypes.bfloat16)


def every_bfloat16():
    return np.arange(1 << 16, dtype=np.uint16).view(BF16)


# Every bfloat16 includes the signaling NaNs, whose arithmetic raises invalid, as in NumPy.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


def ulps_apart(got, want):
    """bfloat16 ULPs between same-signed values (NaN against NaN: 0)."""
    a = got.view(np.uint16).astype(np.int64)
    b = want.view(np.uint16).astype(np.int64)
    a = np.where(a & 0x8000, 0x8000 - a, a)     # sign-magnitude onto one line
    b = np.where(b & 0x8000, 0x8000 - b, b)
    apart = np.abs(a - b)
    nan_got, nan_want = np.isnan(got.astype(np.float32)), np.isnan(want.astype(np.float32))
    return np.where(nan_got & nan_want, 0, np.where(nan_got ^ nan_want, 1 << 20, apart))


def gelu_reference(x):
    """x * Phi(x) in float64 (math.erfc), rounded once to bfloat16."""
    def gelu(v):
        if math.isnan(v):
            return v
        phi = math.erfc(-v / math.sqrt(2))
        return -0.0 if phi == 0 else 0.5 * v * phi
    wide = np.array([gelu(float(v)) for v in x.astype(np.float64)], dtype=np.float64)
    return wide.astype(np.float32).astype(BF16)


def test_gelu_of_every_bfloat16_is_the_float64_result_rounded_within_an_ulp():
    x = every_bfloat16()
    got = ex.gelu(x)
    assert got.dtype == BF16
    apart = ulps_apart(got, gelu_reference(x))
    # float32's erfc (libmvec's vector one in the loop) and a double rounding (to float32,
    # then bfloat16) may land on the neighbour of a value close to a rounding boundary.
    assert apart.max() <= 1
    assert (apart == 0).mean() > 0.999


def test_gelu_in_bfloat16_is_its_float32_loop_rounded_once():
    x = every_bfloat16()
    finite = np.isfinite(x.astype(np.float32))
    with np.errstate(all="ignore"):
        via_float32 = ex.gelu(x.astype(np.float32)).astype(BF16)
    assert np.array_equal(ex.gelu(x)[finite].view(np.uint16), via_float32[finite].view(np.uint16))


def test_gelu_of_bfloat16_through_the_device_path_is_the_hosts_within_an_ulp():
    x = every_bfloat16()
    on_device = ex.gelu(device.to_device(x)).copy_to_host()
    assert on_device.dtype == BF16
    # The simulator's scalar erfcf against the host loop's vector one.
    assert ulps_apart(on_device, ex.gelu(x)).max() <= 1


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9, 40])
def test_l2_norm_of_bfloat16_vectors_sums_in_float32_and_rounds_the_result(n, rng):
    x = rng.uniform(-4, 4, (300, n)).astype(BF16)
    got = ex.l2_norm(x)
    assert got.dtype == BF16
    wide = np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=-1))
    # An in-order float32 sum of at most 40 squares of bfloat16s (8 significant bits: their
    # squares are exact in float32) is within 40 float32 ULPs: far below a bfloat16 ULP, but
    # the one rounding may still fall on either side of a value near a boundary.
    assert ulps_apart(got, wide.astype(np.float32).astype(BF16)).max() <= 1
    # 2, 3 and 4 take the specialized loop (`specialize:`), the strided call the general one.
    strided = ex.l2_norm(with_layout(x, "strided"))
    assert np.array_equal(got.view(np.uint16), np.ascontiguousarray(strided).view(np.uint16))
    on_device = ex.l2_norm(device.to_device(x)).copy_to_host()
    assert np.array_equal(got.view(np.uint16), on_device.view(np.uint16))


def test_a_bfloat16_output_asked_of_float32_input_is_found_as_numpy_finds_its_own():
    """NumPy looks for a user dtype's loop only when an input has that dtype: dtype= alone is
    refused as np.exp refuses it, and signature= (or casting the input) runs the loop."""
    x = np.linspace(-3.0, 3.0, 13, dtype=np.float32)
    with pytest.raises(TypeError) as numpy_refusal:
        np.exp(x, dtype=BF16)
    with pytest.raises(TypeError) as ours:
        ex.gelu(x, dtype=BF16)
    assert str(ours.value) == str(numpy_refusal.value).replace("ufunc exp", "ufunc gelu")
    by_signature = ex.gelu(x, signature=(BF16, BF16))
    assert by_signature.dtype == BF16
    np.testing.assert_array_equal(by_signature.view(np.uint16),
                                  ex.gelu(x.astype(BF16)).view(np.uint16))
