"""Signatures whose first argument is an integer or bool, where T (the first argument's type)
is that integer: the prelude's constants (PI, TWO_PI, SQRT2, LN2) and I are in the loop's
floating type there, not in T (where PI would be 3); and the shift guards the README gives
mean NumPy's left_shift and right_shift for every count, in the vector part of a long array,
in its scalar tail and on the device path (the simulator here)."""
from __future__ import annotations

import numpy as np
import pytest

from ufuncgen import device

SOURCE = """\
ufunc deg2rad(x) -> y
    types: float64(int64), float32(int32), float64(float64), float32(float32)
{
    y = x * PI / 180;
}

ufunc consts(n) -> (a, b, c)
    types: (float64, float64, float64)(int64), (float32, float32, float32)(uint8)
{
    a = TWO_PI * n;
    b = SQRT2 * n;
    c = LN2 * n;
}

ufunc half_plus(n, x) -> y
    types: float64(int64, float64), float64(bool, float64)
{
    y = (double)0.5 * n + x;
}

ufunc rotation(n) -> z
    types: complex128(int64)
{
    z = n * I;
}

ufunc shl(x, s) -> y
    types: int8(int8, int8), uint8(uint8, uint8), int16(int16, int16), int32(int32, int32), uint32(uint32, uint32), int64(int64, int64), uint64(uint64, uint64)
{
    y = s >= 0 && s < 8 * (int)sizeof(T) ? x << s : 0;
}

ufunc shr(x, s) -> y
    types: int8(int8, int8), uint8(uint8, uint8), int16(int16, int16), int32(int32, int32), uint32(uint32, uint32), int64(int64, int64), uint64(uint64, uint64)
{
    y = s >= 0 && s < 8 * (int)sizeof(T) ? x >> s : (x < 0 ? -1 : 0);
}
"""


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("mixed"), "ufg_mixed_signatures", SOURCE,
                           "--cuda-arch", "none")


def _everywhere(fn, *arrays):
    """fn's results on a long array (vectorized, then a scalar tail), element by element,
    strided, and on the device path."""
    host = fn(*arrays)
    single = [fn(*[a[i:i + 1] for a in arrays]) for i in range(len(arrays[0]))]
    strided = fn(*[np.repeat(a, 2)[::2] for a in arrays])
    on_device = fn(*[device.to_device(np.ascontiguousarray(a)) for a in arrays])
    if isinstance(host, tuple):
        return [(h, np.concatenate([s[k] for s in single]), st, d.copy_to_host())
                for k, (h, st, d) in enumerate(zip(host, strided, on_device))]
    return [(host, np.concatenate(single), strided, on_device.copy_to_host())]


def _assert_all(results, want):
    for got, expected in zip(results, want):
        for where, array in zip(("host", "one element", "strided", "device"), got):
            np.testing.assert_array_equal(array, expected, err_msg=where)
            assert array.dtype == expected.dtype, where


def test_pi_is_floating_where_t_is_an_integer_and_float32_where_the_loop_is(mixed):
    n = np.tile(np.array([180, 90, 1, 45, -30, 7], dtype=np.int64), 50)
    _assert_all(_everywhere(mixed.deg2rad, n), [n * np.pi / 180])
    n32 = n.astype(np.int32)
    # In float32 arithmetic: float32(n) * float32(pi) / 180, not in double then rounded.
    want = n32.astype(np.float32) * np.float32(np.pi) / np.float32(180)
    _assert_all(_everywhere(mixed.deg2rad, n32), [want])


def test_the_other_constants_are_floating_where_t_is_an_integer(mixed):
    n = np.arange(300, dtype=np.int64) - 100
    _assert_all(_everywhere(mixed.consts, n),
                [2 * np.pi * n, np.sqrt(2) * n, np.log(2) * n])
    u = np.arange(300, dtype=np.uint8)
    f = u.astype(np.float32)
    _assert_all(_everywhere(mixed.consts, u),
                [np.float32(2 * np.pi) * f, np.float32(np.sqrt(2)) * f, np.float32(np.log(2)) * f])


def test_a_half_written_in_the_floating_type_is_a_half_where_t_is_an_integer_or_bool(mixed):
    n = np.tile(np.array([1, 3, -5], dtype=np.int64), 100)
    x = np.linspace(-1, 1, 300)
    _assert_all(_everywhere(mixed.half_plus, n, x), [0.5 * n + x])
    b = np.tile(np.array([True, False, True]), 100)
    _assert_all(_everywhere(mixed.half_plus, b, x), [0.5 * b + x])


def test_i_is_complex128_in_a_complex128_loop_whose_t_is_an_integer(mixed):
    n = np.array([2**40 + 1, -(2**30) - 3, 5] * 100, dtype=np.int64)
    _assert_all(_everywhere(mixed.rotation, n), [n * 1j])


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "uint32", "int64", "uint64"])
def test_the_readmes_shift_guards_give_numpys_shifts_for_every_count(mixed, dtype):
    bits = 8 * np.dtype(dtype).itemsize
    signed = np.dtype(dtype).kind == "i"
    counts = np.arange(-3 if signed else 0, bits + 40)
    values = np.array([5, 1, np.iinfo(dtype).max] + ([-5, -1, np.iinfo(dtype).min] if signed else []),
                      dtype=dtype)
    x = np.repeat(values, len(counts)).astype(dtype)
    s = np.tile(counts, len(values)).astype(dtype)
    _assert_all(_everywhere(mixed.shl, x, s), [np.left_shift(x, s)])
    _assert_all(_everywhere(mixed.shr, x, s), [np.right_shift(x, s)])
