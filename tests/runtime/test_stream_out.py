"""Outputs streamed past the caches (src/include/ufuncgen/stream_out.h): which calls stream,
and that a streamed call writes what an ordinary one does, where it should and nowhere else."""
from __future__ import annotations

import numpy as np
import pytest

# The header's default threshold: a call moving this many bytes or more may stream.
MIN_BYTES = 32 * 1024 * 1024

DEFINITIONS = r"""
#include <sys/mman.h>

/* n bytes of fresh pages, written to (in memory) or not (never faulted in). */
static char *
pages(size_t n, int touched)
{
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        abort();
    }
    if (touched) {
        memset(p, 1, n);
    }
    return p;
}

/* Whether the kernel's b is broadcast (one value, step 0). */
static int b_broadcast;

/* A kernel of two inputs and two outputs of different sizes: o0 = 3 a + b (double),
 * o1 = (int32) a. */
static void
kernel(npy_intp n, char **args)
{
    const double *a = (const double *)args[0], *b = (const double *)args[1];
    double *o0 = (double *)args[2];
    int32_t *o1 = (int32_t *)args[3];
    for (npy_intp i = 0; i < n; i++) {
        const double ai = a[i];     /* read before o0[i] is written: a may be o0 (out=a) */
        o0[i] = 3 * ai + b[b_broadcast ? 0 : i];
        o1[i] = (int32_t)ai;
    }
}

/* Runs n elements with the outputs `shift` bytes past a cache line, streamed or not, inputs
 * `in_shift` elements in, and prints how many of the streamed call's bytes (guards around
 * its outputs included) differ from the ordinary call's. */
static void
compare(npy_intp n, int shift0, int shift1, int in_shift, int broadcast, int in_place)
{
    static double a[5000], b[5000];
    static _Alignas(64) char plain[2][5000 * 8 + 256];
    static _Alignas(64) char streamed[2][5000 * 8 + 256];
    for (int i = 0; i < 5000; i++) {
        a[i] = i * 0.75 - 1000;
        b[i] = (i % 7) * 1e10;
    }
    memset(plain, 0xab, sizeof(plain));
    memset(streamed, 0xab, sizeof(streamed));
    const npy_intp steps[] = {8, broadcast ? 0 : 8, 8, 4};
    const int itemsizes[] = {8, 8, 8, 4};
    b_broadcast = broadcast;
    double copy[5000];
    memcpy(copy, a, sizeof(copy));
    char *ordinary[] = {(char *)(a + in_shift), (char *)(b + in_shift),
                        plain[0] + 64 + shift0, plain[1] + 64 + shift1};
    kernel(n, ordinary);
    if (in_place) {
        /* out=a: the first output is the first input exactly, from a copy of a */
        memcpy(streamed[0] + 64 + shift0, (char *)(a + in_shift), (size_t)n * 8);
    }
    char *args[] = {in_place ? streamed[0] + 64 + shift0 : (char *)(copy + in_shift),
                    (char *)(b + in_shift), streamed[0] + 64 + shift0, streamed[1] + 64 + shift1};
    ufg_run_streaming_outputs(args, n, steps, 2, 4, itemsizes, kernel);
    printf("%d ", memcmp(plain, streamed, sizeof(plain)) != 0);
}
"""


def test_only_large_calls_into_outputs_already_in_memory_stream(c_probe):
    # A call streams when its arguments move 32 MiB or more (a broadcast input's one value
    # not counted) and each output's first and last pages are in memory; never into one of
    # its inputs (out=x), nor when its outputs take more than 32 bytes an element (a chunk's
    # buffer holds 64 of them).
    lines = ["    char *touched = pages(40u << 20, 1), *fresh = pages(20u << 20, 0);"]
    cases = [
        # (label, n, steps, nin, output touched): streams?
        ("add float32, exactly 32 MiB", MIN_BYTES // 12 + 1, (4, 4, 4), 2, True, 1),
        ("add float32, just under", MIN_BYTES // 12 - 1, (4, 4, 4), 2, True, 0),
        ("add float32 into new pages", MIN_BYTES // 12 + 1, (4, 4, 4), 2, False, 0),
        ("add float32 in place (out=x)", MIN_BYTES // 12 + 1, (4, 4, 4), 2, "in place", 0),
        ("x + 2.0: the broadcast value not counted", MIN_BYTES // 12 + 1, (4, 0, 4), 2, True, 0),
        ("x + 2.0, large enough", MIN_BYTES // 8 + 1, (4, 0, 4), 2, True, 1),
        ("two outputs of 16 bytes: 32 an element", MIN_BYTES // 48 + 1, (16, 16, 16), 1, True, 1),
        ("three outputs of 16 bytes: too wide", MIN_BYTES // 64 + 1, (16, 16, 16, 16), 1, True, 0),
        ("int8 of one byte each", MIN_BYTES // 2 + 1, (1, 1), 1, True, 1),
    ]
    for label, n, steps, nin, touched, _ in cases:
        out = {True: "touched + (40u << 19)", False: "fresh", "in place": "touched"}[touched]
        args = ", ".join(out if k >= nin else "touched" for k in range(len(steps)))
        lines.append(
            f'    {{ char *args[] = {{{args}}}; npy_intp steps[] = {{{", ".join(map(str, steps))}}}; '
            f'printf("%d\\n", (int)ufg_streams_outputs(args, {n}, steps, {nin}, {len(steps)})); }}'
            f'  /* {label} */')
    got = [int(v) for v in c_probe("ufuncgen/stream_out.h", lines, DEFINITIONS)]
    for (label, *_, want), streams in zip(cases, got, strict=True):
        assert streams == want, label


def test_a_streamed_call_writes_the_bytes_of_an_ordinary_call_and_nothing_around_them(c_probe):
    # Lengths around the chunk (2048 bytes of the outputs together: 12 bytes an element here,
    # so 128 elements), outputs at every offset from a cache line, inputs aligned or not, a
    # broadcast input, and the first output the first input exactly (out=a).
    lines = []
    count = 0
    for n in (0, 1, 5, 63, 64, 127, 128, 129, 255, 256, 1000, 4999 - 16):
        for shift0, shift1 in ((0, 0), (8, 4), (56, 0), (16, 60), (24, 4)):
            for in_shift in (0, 1):
                for broadcast in (0, 1):
                    for in_place in (0, 1):
                        lines.append(f"    compare({n}, {shift0}, {shift1}, {in_shift}, "
                                     f"{broadcast}, {in_place});")
                        count += 1
    got = c_probe("ufuncgen/stream_out.h", lines, DEFINITIONS)
    assert got == ["0"] * count


SIGNATURES = """\
ufunc blend(x, y) -> out
    types: int16(int16, int16), float32(float32, float32), float64(float64, float64), complex128(complex128, complex128)
{
    out = x * (T)3 + y;
}

ufunc sum_difference(x, y) -> (s, d)
    types: (float64, float64)(float64, float64)
{
    s = x + y;
    d = x - y;
}
"""


@pytest.fixture(scope="module")
def m(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("stream_out"), "ufg_stream_out",
                           SIGNATURES, "--cuda-arch", "none")


def _streamed_length(dtype, arguments):
    """Elements of a call of `arguments` arrays of dtype moving just over the threshold."""
    return MIN_BYTES // (arguments * np.dtype(dtype).itemsize) + 777


def _values(dtype, n, rng):
    if np.dtype(dtype).kind == "i":
        return rng.integers(-10_000, 10_000, n).astype(dtype)
    x = rng.standard_normal(n).astype(dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(n)
    x[::1001] = np.inf
    x[::1003] = np.nan
    x[::1007] = -0.0
    return x


def _guarded(n, dtype, offset):
    """A view of n elements, `offset` elements into a buffer of sevens (in memory, so the
    call may stream into it), and the buffer."""
    buffer = np.full(n + 16, 7, dtype)
    return buffer[offset:offset + n], buffer


@pytest.mark.parametrize("dtype", [np.int16, np.float32, np.float64, np.complex128])
def test_a_large_call_into_out_gives_numpys_values_and_leaves_the_rest_of_its_buffer(
        m, dtype, threading_mode):
    rng = np.random.default_rng(len(threading_mode))
    n = _streamed_length(dtype, 3)
    x, y = _values(dtype, n + 3, rng), _values(dtype, n + 3, rng)
    three = np.dtype(dtype).type(3)
    for x_offset, out_offset in ((0, 0), (1, 3), (3, 1), (2, 5)):
        a, b = x[x_offset:x_offset + n], y[:n]
        out, buffer = _guarded(n, dtype, out_offset)
        with np.errstate(all="ignore"):
            m.blend(a, b, out=out)
            want = a * three + b
        np.testing.assert_array_equal(out, want)
        assert (buffer[:out_offset] == 7).all() and (buffer[out_offset + n:] == 7).all()
        # The same elements in calls far too small to stream: the same bits.
        with np.errstate(all="ignore"):
            parts = np.concatenate([m.blend(a[i:i + 65_536], b[i:i + 65_536])
                                    for i in range(0, n, 65_536)])
        assert out.tobytes() == parts.tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_large_call_in_place_and_with_a_broadcast_input_gives_numpys_values(m, dtype):
    rng = np.random.default_rng(5)
    # x + 2 into out= streams; out=x does not (ufg_streams_outputs), and must give the same.
    n = _streamed_length(dtype, 2)
    x, y = _values(dtype, n, rng), _values(dtype, n, rng)
    three, two = dtype(3), dtype(2)
    with np.errstate(all="ignore"):
        want = x * three + y
        in_place = x.copy()
        m.blend(in_place, y, out=in_place)
        np.testing.assert_array_equal(in_place, want)
        out, buffer = _guarded(n, dtype, 1)
        m.blend(x, two, out=out)
        np.testing.assert_array_equal(out, x * three + two)
        assert buffer[0] == 7 and (buffer[1 + n:] == 7).all()


def test_a_large_call_with_two_outputs_writes_each_where_it_lies(m):
    rng = np.random.default_rng(6)
    n = _streamed_length(np.float64, 4)
    x, y = _values(np.float64, n, rng), _values(np.float64, n, rng)
    s, s_buffer = _guarded(n, np.float64, 0)
    d, d_buffer = _guarded(n, np.float64, 3)
    with np.errstate(all="ignore"):
        m.sum_difference(x, y, out=(s, d))
        np.testing.assert_array_equal(s, x + y)
        np.testing.assert_array_equal(d, x - y)
    assert (s_buffer[n:] == 7).all()
    assert (d_buffer[:3] == 7).all() and (d_buffer[3 + n:] == 7).all()


def test_a_large_call_into_out_raises_the_overflow_numpy_raises(m):
    n = _streamed_length(np.float32, 3)
    x = np.ones(n, np.float32)
    x[-5] = np.float32(3e38)                 # 3 * 3e38 overflows float32, near the end
    out = np.zeros(n, np.float32)
    with np.errstate(over="raise"), pytest.raises(FloatingPointError, match="overflow"):
        m.blend(x, x, out=out)
    with np.errstate(over="ignore"):
        m.blend(x, x, out=out)
    assert np.isinf(out[-5]) and (np.delete(out, n - 5) == 4).all()
