"""Comparing float results in units in the last place, for the prelude's tests."""
from __future__ import annotations

import numpy as np


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """ULPs between same-typed floats, exactly (NaN against NaN: 0, NaN against a number:
    inf)."""
    signed = np.dtype(f"i{a.dtype.itemsize}")
    lowest = np.iinfo(signed).min

    def on_line(x):
        # Sign-magnitude bits onto one line, so that neighbouring floats are 1 apart (-0.0 and
        # +0.0 both at 0).
        bits = np.ascontiguousarray(x).view(signed).astype(np.int64)
        return np.where(bits < 0, lowest - bits, bits)

    la, lb = on_line(a), on_line(b)
    same_side = (la >= 0) == (lb >= 0)
    # On one side the difference is exact in int64; across zero it is the sum of the two
    # distances from zero, exact in float64 wherever it is small enough to matter.
    out = np.where(same_side, np.abs(la - lb).astype(float),
                   np.abs(la).astype(float) + np.abs(lb).astype(float))
    both_nan = np.isnan(a) & np.isnan(b)
    out[both_nan] = 0
    out[np.isnan(a) ^ np.isnan(b)] = np.inf
    return out


def assert_agree(got, want, ulps, what):
    """Same dtype, and each element (complex: each part) within `ulps` ULPs of the expected,
    or of the same bits where `ulps` is 0; a NaN agrees with any NaN."""
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    if got.dtype.kind == "c":       # each part on its own
        part = got.real.dtype
        got, want = got.view(part), np.ascontiguousarray(want).view(part)
    if got.dtype.kind != "f":
        bad = got != want
    elif ulps == 0:
        same_bits = got.view(f"u{got.dtype.itemsize}") == want.view(f"u{want.dtype.itemsize}")
        bad = ~(same_bits | (np.isnan(got) & np.isnan(want)))
    else:
        bad = ulp_distance(got, want) > ulps
    assert not bad.any(), (f"{what}: {int(bad.sum())} of {bad.size} differ, first at "
                           f"{int(np.argmax(bad))}: got {got[bad][:4]}, expected {want[bad][:4]}")
