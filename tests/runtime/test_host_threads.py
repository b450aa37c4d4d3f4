"""The gufunc loop driver's choice of the contiguous loops (src/include/ufuncgen/host_threads.h,
ufg_same_steps): which of NumPy's steps it compares.  That the contiguous loops give the bits
of the general one is tests/examples/test_gufuncs.py's."""

# matmul's layout (m,n),(n,p)->(m,p), float64: NumPy's `dimensions` are (outer, m, n, p) and
# its steps the three outer ones, then a's (m, n), b's (n, p), out's (m, p).
WALKS = (0, 0, 0, 1, 2, 2, 3, 1, 3)


def contiguous_matmul_steps(outer, m, n, p):
    return (8 * m * n, 8 * n * p, 8 * m * p, 8 * n, 8, 8 * p, 8, 8 * p, 8)


# (label, dimensions, NumPy's steps, whether the call is C-contiguous, whether its core slices
# are: the loop takes its contiguous copy, its contiguous-cores copy, or the general one).
CALLS = [
    ("a stack of 4x4 pairs, all C-contiguous", (100, 4, 4, 4),
     contiguous_matmul_steps(100, 4, 4, 4), True, True),
    ("one pair, no loop dimension: NumPy's outer steps are 0", (1, 4, 4, 4),
     (0, 0, 0) + contiguous_matmul_steps(1, 4, 4, 4)[3:], True, True),
    ("two pairs with outer steps 0: both broadcast, the cores contiguous", (2, 4, 4, 4),
     (0, 0, 0) + contiguous_matmul_steps(2, 4, 4, 4)[3:], False, True),
    ("a stack of 5x5 times one matrix: b's outer step 0", (100, 5, 5, 5),
     (200, 0, 200) + contiguous_matmul_steps(100, 5, 5, 5)[3:], False, True),
    ("the same with a's rows Fortran-ordered", (100, 5, 5, 5),
     (200, 0, 200, 8, 40) + contiguous_matmul_steps(100, 5, 5, 5)[5:], False, False),
    ("a row times a column (m=1, p=1): their steps are anything", (5, 1, 4, 1),
     (32, 32, 8, 999, 8, 8, -3, 0, 77), True, True),
    ("the same with b's n step wrong", (5, 1, 4, 1),
     (32, 32, 8, 999, 16, 8, -3, 0, 77), False, False),
    ("an empty stack, every step odd", (0, 4, 4, 4), (1, 2, 3) + (8,) * 6,
     False, False),
    ("an empty core (n=0) with b's p step wrong", (3, 4, 0, 4),
     (0, 0, 128, 0, 8, 32, 99, 32, 8), False, False),
    ("an empty core (n=0), steps along n odd (a and b hold nothing: outer steps 0)",
     (3, 4, 0, 4), (0, 0, 128, 0, 7, 9, 8, 32, 8), True, True),
]


def test_only_the_steps_of_axes_longer_than_one_decide_whether_a_call_is_contiguous(c_probe):
    lines = []
    for label, dims, steps, _, _ in CALLS:
        want = contiguous_matmul_steps(*dims)
        lines.append(
            f'    {{ static const unsigned char walks[] = {{{", ".join(map(str, WALKS))}}}; '
            f'npy_intp dims[] = {{{", ".join(map(str, dims))}}}, '
            f'steps[] = {{{", ".join(map(str, steps))}}}, '
            f'want[] = {{{", ".join(map(str, want))}}}; '
            f'printf("%d %d\\n", (int)ufg_same_steps(steps, want, walks, dims, 0, {len(WALKS)}), '
            f'(int)ufg_same_steps(steps, want, walks, dims, 3, {len(WALKS)})); }}'
            f'  /* {label} */')
    got = c_probe("ufuncgen/host_threads.h", lines)
    assert len(got) == 2 * len(CALLS)
    for (label, *_, whole, cores), value, core_value in zip(CALLS, got[::2], got[1::2]):
        assert (value, core_value) == (str(int(whole)), str(int(cores))), label
