"""The software prefetch of a gufunc's contiguous loop (src/include/ufuncgen/prefetch.h): which
calls it prefetches for.  That a prefetched call gives the bits of the general loop is
tests/examples/test_gufuncs.py's."""
from __future__ import annotations

# (label, input steps in bytes, core sizes, outer iterations): the chunk the header picks.
DECISIONS = [
    ("l2_norm float64 rows of 10, 1M rows", (80,), (10,), 1_000_000),
    ("rgb_to_gray float32 pixels, 4M", (12,), (3,), 4_000_000),
    ("inner1d float64 rows of 9, two inputs streamed", (72, 72), (9,), 100_000),
    ("a short call, 100 rows of 10 doubles", (80,), (10,), 100),
    ("matmul 5x5 float64: 3.2 bytes per core step", (200, 200), (5, 5, 5), 100_000),
    ("matmul 4x4 float64: exactly 4 bytes per core step", (128, 128), (4, 4, 4), 100_000),
    ("rows wider than a chunk: 129 doubles", (1032,), (129,), 100_000),
    ("rows exactly a chunk: 128 doubles", (1024,), (128,), 100_000),
    ("a broadcast input (step 0) beside a streamed one", (0, 80), (10,), 100_000),
    ("only broadcast inputs", (0,), (10,), 100_000),
    ("an empty core", (0,), (0,), 100_000),
    ("an output's core size near 2**62 beside the input's", (80,), (10, 2**62 - 1), 100_000),
]
EXPECTED = [12, 80, 100_000, 100, 100_000, 100_000, 100_000, 1, 12, 100_000, 100_000, 100_000]


def test_the_loops_that_are_prefetched_are_the_ones_waiting_on_memory(c_probe):
    # The chunk is the whole call (nothing prefetched) for short calls, rows wider than a
    # chunk, loops reading under 4 bytes per core step, and loops with two inputs advancing
    # with the outer loop (inner1d, matmul); otherwise the chunk holds 1 KiB of the widest
    # input, in whole 16-iteration vectors where it holds more.
    lines = []
    for label, steps, core, iterations in DECISIONS:
        lines.append(
            f'    {{ npy_intp steps[] = {{{", ".join(map(str, steps))}}}, '
            f'dims[] = {{{iterations}, {", ".join(f"{c}L" for c in core)}}}; '
            f'printf("%ld\\n", (long)ufg_prefetch_chunk(steps, {len(steps)}, dims, {len(core)}, '
            f'0, {iterations})); }}  /* {label} */')
    chunks = [int(v) for v in c_probe("ufuncgen/prefetch.h", lines)]
    assert len(chunks) == len(DECISIONS)
    for (label, *_), got, want in zip(DECISIONS, chunks, EXPECTED):
        assert got == want, label
