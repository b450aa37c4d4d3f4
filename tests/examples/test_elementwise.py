"""Elementwise seed functions against NumPy's composed expressions: every loop, size, layout,
dimensionality, broadcasting, out=/where= and type resolution."""
from pathlib import Path

import numpy as np
import pytest

import ufuncgen.examples as ex
from ufuncgen.gen import load_module

from .conftest import (
    ELEMENTWISE_NAMES,
    LAYOUTS,
    SIZES,
    assert_exactly_equal,
    check_elementwise,
    elementwise_inputs,
    elementwise_reference,
    function_dtype_cases,
    loop_dtypes,
    with_layout,
)

CASES = function_dtype_cases(ELEMENTWISE_NAMES)
# The seed functions whose loops call vector math (libmvec), from the generator's model.
VECTOR_MATH = load_module("ufuncgen.examples", [str(Path(__file__).resolve().parents[2] / "signatures"
                                                    / "examples.ufunc")]).vector_math_functions


def as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_function_matches_reference_for_every_size_and_layout(
        name, dtype, size, layout, rng):
    inputs = elementwise_inputs(name, dtype, (size,), rng)
    args = [with_layout(a, layout) for a in inputs]
    actual = getattr(ex, name)(*args)
    check_elementwise(name, as_tuple(actual), elementwise_reference(name, *inputs), inputs)


@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_function_matches_reference_when_every_argument_has_another_layout(
        name, dtype, rng):
    inputs = elementwise_inputs(name, dtype, (519,), rng)
    args = [with_layout(a, LAYOUTS[(i + 1) % len(LAYOUTS)]) for i, a in enumerate(inputs)]
    actual = getattr(ex, name)(*args)
    check_elementwise(name, as_tuple(actual), elementwise_reference(name, *inputs), inputs)


ND_SHAPES = [(), (0,), (3, 0, 2), (5, 7), (3, 4, 17), (2, 1, 3, 9)]
ND_VIEWS = ["contiguous", "fortran", "reversed", "strided", "unaligned", "transposed"]


def nd_view(a, view):
    if view == "transposed":
        if a.ndim == 0:
            return a.copy()
        # A non-trivial axis permutation of a C-contiguous array (not just .T).
        axes = list(range(a.ndim))[1:] + [0] if a.ndim else []
        return np.ascontiguousarray(np.transpose(a, np.argsort(axes))).transpose(axes)
    return with_layout(a, view)


@pytest.mark.parametrize("view", ND_VIEWS)
@pytest.mark.parametrize("shape", ND_SHAPES, ids=str)
@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_function_matches_reference_for_0d_and_nd_arrays(
        name, dtype, shape, view, rng):
    inputs = elementwise_inputs(name, dtype, shape, rng)
    args = [nd_view(a, view) for a in inputs]
    for a, b in zip(args, inputs):
        np.testing.assert_array_equal(a, b)
    actual = getattr(ex, name)(*args)
    expected = elementwise_reference(name, *inputs)
    for got in as_tuple(actual):
        assert got.shape == shape
    check_elementwise(name, tuple(np.asarray(r) for r in as_tuple(actual)), expected, inputs)


@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_function_of_numpy_scalars_returns_numpy_scalars_like_numpy(
        name, dtype, rng):
    inputs = [a[()] for a in elementwise_inputs(name, dtype, (), rng)]
    assert all(isinstance(a, np.generic) for a in inputs)
    fn = getattr(ex, name)
    out_dtypes = next(outs for ins, outs in loop_dtypes(fn) if ins[0] == dtype)
    actual = as_tuple(fn(*inputs))
    for got, want in zip(actual, out_dtypes):
        assert isinstance(got, np.generic) and got.dtype == want
    check_elementwise(name, tuple(np.asarray(r) for r in actual),
                      elementwise_reference(name, *[np.asarray(a) for a in inputs]), inputs)


@pytest.mark.parametrize("size", [1, 17, 519])
@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_function_broadcasts_stride_0_and_scalar_operands_mixed_with_arrays(
        name, dtype, size, rng):
    fn = getattr(ex, name)
    inputs = elementwise_inputs(name, dtype, (size,), rng)
    for k in range(len(inputs)):
        # Argument k as a stride-0 view of one value, as a NumPy scalar, as a 0-d array.
        single = inputs[k][:1]
        full = [a if i != k else np.broadcast_to(single, (size,)).copy()
                for i, a in enumerate(inputs)]
        expected = elementwise_reference(name, *full)
        stride0 = np.broadcast_to(single, (size,))
        assert stride0.strides == (0,)
        # With one input a scalar would make the whole call 0-d: only the stride-0 view.
        operands = (stride0, single[0], single.reshape(())) if len(inputs) > 1 else (stride0,)
        for operand in operands:
            args = [a if i != k else operand for i, a in enumerate(inputs)]
            check_elementwise(name, as_tuple(fn(*args)), expected, full)


@pytest.mark.parametrize("name, dtype", CASES)
def test_a_broadcast_input_gives_the_bits_of_its_repeated_copy_at_every_block_length(
        name, dtype, rng, threading_mode):
    # A call whose arguments are contiguous but for stride-0 inputs runs blocks longer than
    # 256 elements (up to a quarter of the call, and what the broadcast buffers hold): the same
    # elements go through the kernel's vector loop and its tail as in a contiguous call of the
    # input repeated in memory, so the same bits, on one thread or split across two, around
    # every block length.
    fn = getattr(ex, name)
    for n in (255, 1024, 1031, 4 * 4096 + 5, 70_001):
        inputs = elementwise_inputs(name, dtype, (n,), rng)
        for k in range(len(inputs)):
            shared = np.broadcast_to(inputs[k][n // 2:n // 2 + 1], (n,))
            args = [shared if i == k else a for i, a in enumerate(inputs)]
            repeated = [np.ascontiguousarray(a) for a in args]
            for got, want in zip(as_tuple(fn(*args)), as_tuple(fn(*repeated))):
                assert_exactly_equal(got, want)
            if len(inputs) == 1:
                break


@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_function_broadcasts_row_and_column_operands(name, dtype, rng):
    fn = getattr(ex, name)
    nin = fn.nin
    shapes = [(5, 1) if i % 2 == 0 else (1, 19) for i in range(nin)]
    inputs = [elementwise_inputs(name, dtype, s, rng)[i] for i, s in enumerate(shapes)]
    full = [np.broadcast_to(a, (5, 19)).copy() for a in inputs]
    if nin == 1:
        inputs = [np.broadcast_to(inputs[0], (5, 19))]
    actual = as_tuple(fn(*inputs))
    assert all(r.shape == (5, 19) for r in actual)
    check_elementwise(name, actual, elementwise_reference(name, *full), full)


@pytest.mark.parametrize("out_layout", ["contiguous", "strided", "reversed"])
@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_function_writes_out_and_leaves_unselected_where_elements_untouched(
        name, dtype, out_layout, rng):
    fn = getattr(ex, name)
    size = 519
    inputs = elementwise_inputs(name, dtype, (size,), rng)
    expected = elementwise_reference(name, *inputs)
    mask = rng.random(size) < 0.5
    sentinel = 77
    outs = tuple(with_layout(np.full(size, sentinel, dtype=e.dtype), out_layout)
                 for e in expected)
    result = fn(*inputs, out=outs if len(outs) > 1 else outs[0], where=mask)
    for got, out in zip(as_tuple(result), outs):
        assert got is out
    for out, want in zip(outs, expected):
        assert np.all(out[~mask] == sentinel), "where=False elements were written"
    check_elementwise(name, tuple(np.asarray(o[mask]) for o in outs),
                      tuple(e[mask] for e in expected), [a[mask] for a in inputs])


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name, dtype", CASES)
def test_an_out_of_every_other_element_is_written_there_and_its_gaps_are_left_alone(
        name, dtype, size, rng):
    # Inputs read and outputs written every other element (`a[::2]`) take the driver's
    # stride-2 gather and scatter loops; a reversed one (`a[::-2]`) its general loop.
    fn = getattr(ex, name)
    inputs = elementwise_inputs(name, dtype, (size,), rng)
    expected = elementwise_reference(name, *inputs)
    for step in (2, -2):
        bufs = tuple(np.full(2 * size, 77, dtype=e.dtype) for e in expected)
        outs = tuple(b[::step] for b in bufs)
        args = []
        for a in inputs:
            spread = np.zeros(2 * size, dtype=a.dtype)
            spread[::step] = a
            args.append(spread[::step])
        fn(*args, out=outs if len(outs) > 1 else outs[0])
        check_elementwise(name, outs, expected, inputs)
        for b in bufs:
            gaps = b[1::2] if step == 2 else b[0::2]
            assert np.all(gaps == 77), "an element between the outputs was written"


@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_function_writes_out_in_place_over_its_first_input(name, dtype, rng):
    fn = getattr(ex, name)
    inputs = elementwise_inputs(name, dtype, (1000,), rng)
    expected = elementwise_reference(name, *inputs)
    if fn.nout != 1 or expected[0].dtype != inputs[0].dtype:
        pytest.skip("one output of the input's dtype needed")
    for view in (slice(None), slice(None, None, 3), slice(None, None, -2)):
        buf = inputs[0].copy()
        args = [buf[view]] + [a[view] for a in inputs[1:]]
        fn(*args, out=buf[view])
        check_elementwise(name, (buf[view],), tuple(e[view] for e in expected),
                          [a[view] for a in inputs])


def _written_in_order(length, views, values):
    """A buffer of `length` written as NumPy's two-output loops write it: element i's outputs
    in order (views[0][i], views[1][i]), then element i+1's."""
    buffer = np.zeros(length)
    targets = [v(buffer) for v in views]
    for i in range(len(values[0])):
        for target, value in zip(targets, values):
            target[i] = value[i]
    return buffer


@pytest.mark.parametrize("n", [1, 2, 7, 300, 1000, 5000])
@pytest.mark.parametrize("shift", [1, 3, -1])
def test_two_outputs_that_overlap_are_written_element_by_element_like_numpys_two_output_loops(
        n, shift):
    """out=(o[:-1], o[1:]): NumPy writes element i's outputs in order, then element i+1's (as
    np.modf shows); the vector kernel stored a block's first outputs, then its second ones,
    and 750 of 1,001 elements kept the second output."""
    length = n + abs(shift)
    views = ((lambda b: b[:n], lambda b: b[shift:]) if shift > 0
             else (lambda b: b[-shift:], lambda b: b[:n]))
    x = np.linspace(-3, 3, n)
    modf = np.zeros(length)
    np.modf(x, out=tuple(v(modf) for v in views))
    np.testing.assert_array_equal(modf, _written_in_order(length, views, np.modf(x)))
    o = np.zeros(length)
    ex.sincos(x, out=tuple(v(o) for v in views))
    # Run element by element, sin and cos are glibc's, not the vector loop's (within 4 ulp:
    # README, "How the host loops are fast"); a wrong winner is another value altogether.
    np.testing.assert_allclose(o, _written_in_order(length, views, ex.sincos(x)),
                               rtol=4 * np.finfo(np.float64).eps, atol=0)


@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_function_result_has_the_loop_output_dtype(name, dtype, rng):
    fn = getattr(ex, name)
    (ins, outs), = [(i, o) for i, o in loop_dtypes(fn) if i[0] == dtype]
    args = [a.astype(t) for a, t in zip(elementwise_inputs(name, dtype, (8,), rng), ins)]
    assert tuple(r.dtype for r in as_tuple(fn(*args))) == outs


def test_float32_add_computes_in_float32_not_double():
    result = ex.add(np.float32(16777216), np.float32(1))
    assert result.dtype == np.float32
    assert result == np.float32(16777216)
    assert np.float32(16777216) + np.float32(1) == np.float32(16777216)
    big = ex.add(np.full(10007, 16777216, np.float32), np.ones(10007, np.float32))
    assert big.dtype == np.float32
    assert np.all(big == np.float32(16777216))
    # Rounding to float32 after a double sum would also give 16777216 here, so check a case
    # where the float32 sum of three terms differs: (2**24 + 1) + 1 in float32 is 2**24.
    acc = ex.add(ex.add(np.float32(16777216), np.float32(1)), np.float32(1))
    assert acc == np.float32(16777216)


def test_float32_gaussian_pdf_and_sincos_stay_in_float32():
    x = np.linspace(-3, 3, 33, dtype=np.float32)
    assert ex.gaussian_pdf(x, np.float32(0), np.float32(1)).dtype == np.float32
    assert all(r.dtype == np.float32 for r in ex.sincos(x))
    assert ex.polar_distance(x, x, x, x).dtype == np.float32
    assert ex.hypot(x, x).dtype == np.float32


# NumPy's type resolution picks the first loop all inputs cast to safely (Python scalars are
# "weak" under NumPy 2 and take the array's dtype).  Each row: args -> expected dtype(s).
I64, F32, F64 = np.int64, np.float32, np.float64
TYPE_RESOLUTION = [
    ("gaussian_pdf", (np.array([1, 2]), 2, 3), F64),
    ("gaussian_pdf", (np.array([1, 2], np.int32), np.int8(2), np.uint16(3)), F64),
    ("gaussian_pdf", (np.array([1.0], F32), 2.0, 3.0), F32),
    ("gaussian_pdf", (np.array([1.0], F32), 2, 3), F32),
    ("gaussian_pdf", (np.array([1.0], F32), np.array([2.0]), 3.0), F64),
    ("gaussian_pdf", (np.array([1.0], np.float16), np.float16(0), np.float16(1)), F32),
    ("add", (np.array([1.0], F32), 1.5), F32),
    ("add", (np.array([1.0], F32), np.float64(1.5)), F64),
    ("add", (np.array([1], np.int32), np.array([1], np.int8)), I64),
    ("add", (np.array([True]), np.array([True])), I64),
    ("add", (np.array([1], np.uint64), np.array([1], I64)), F64),
    ("add", (np.array([1], I64), 1.5), F64),
    ("add", (np.array([1], np.int16), np.array([1.0], F32)), F32),
    ("add", (np.array([1], np.int32), np.array([1.0], F32)), F64),
    ("hypot", (3, 4), F64),
    ("hypot", (np.float32(3), 4), F32),
    ("lucas", (np.array([5], np.int8),), I64),
    ("lucas", (np.uint32(5),), I64),
    ("sincos", (np.array([1], np.int16),), (F32, F32)),
    ("sincos", (1,), (F64, F64)),
    ("polar_distance", (np.float32(1), 0.0, 1, np.float32(0.5)), F32),
]


@pytest.mark.parametrize("name, args, expected", TYPE_RESOLUTION,
                         ids=[f"{r[0]}-{i}" for i, r in enumerate(TYPE_RESOLUTION)])
def test_mixed_dtype_inputs_follow_numpy_type_resolution(name, args, expected):
    fn = getattr(ex, name)
    result = as_tuple(fn(*args))
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert tuple(np.asarray(r).dtype for r in result) == tuple(np.dtype(e) for e in expected)
    loop = [np.dtype(e) for e in expected][0]
    cast = [np.asarray(a).astype(loop) if not isinstance(a, (int, float)) else loop.type(a)
            for a in args]
    check_elementwise(name, tuple(np.asarray(r) for r in result),
                      elementwise_reference(name, *[np.asarray(c) for c in cast]), cast)


def test_add_resolves_types_like_numpy_add_where_numpy_add_has_the_same_loops():
    operands = [np.array([3], I64), np.array([3.0], F32), np.array([3.0], F64),
                np.array([True]), np.array([3], np.int16), np.float32(2), 2, 2.0]
    for x in operands:
        for y in operands:
            want = np.add(x, y).dtype
            if want in (np.dtype(I64), np.dtype(F32), np.dtype(F64)):
                got = ex.add(x, y)
                assert np.asarray(got).dtype == want, (x, y)
                assert_exactly_equal(np.asarray(got), np.asarray(np.add(x, y)))


def _packed(arrays, gap_bytes, rng):
    """Copies of `arrays` laid one after another in one buffer, `gap_bytes` apart (as NumPy's
    allocator often leaves small arrays), each aligned to its itemsize."""
    sizes = [a.nbytes + gap_bytes for a in arrays]
    buffer = np.zeros(sum(sizes) + 128, np.uint8)
    at = (-buffer.ctypes.data) % 64 + int(rng.integers(0, 8)) * 8
    views = []
    for a in arrays:
        view = buffer[at:at + a.nbytes].view(a.dtype)
        view[...] = a
        views.append(view)
        at += a.nbytes + gap_bytes
    return views


@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_result_bits_do_not_depend_on_how_near_its_arrays_lie(name, dtype, rng):
    # GCC's run-time overlap test once sent a short call whose output lay within a few
    # elements of another argument to the scalar (libm) copy of its loop: 1-2 ULP from the
    # vector (libmvec) results of the same call with the arrays further apart.
    fn = getattr(ex, name)
    out_dtypes = next(outs for ins, outs in loop_dtypes(fn) if ins[0] == dtype)
    for n in (3, 4, 5, 7, 9, 15, 17, 31):
        inputs = elementwise_inputs(name, dtype, (n,), rng)
        expected = as_tuple(fn(*inputs))
        for gap in (0, 8, 24, 64):
            *placed_inputs, = _packed(inputs, gap, rng)
            outs = _packed([np.empty(n, d) for d in out_dtypes], gap, rng)
            fn(*placed_inputs, out=tuple(outs))
            for got, want in zip(outs, expected):
                assert_exactly_equal(got, want)
            # An output right after the inputs, the other order.
            both = _packed(list(inputs) + [np.empty(n, d) for d in out_dtypes], gap, rng)
            fn(*both[:fn.nin], out=tuple(both[fn.nin:]))
            for got, want in zip(both[fn.nin:], expected):
                assert_exactly_equal(got, want)


def _at_line_offset(a, offset):
    """A copy of `a` starting `offset` bytes past a 64-byte boundary."""
    buffer = np.empty(a.nbytes + 128, np.uint8)
    start = (-buffer.ctypes.data) % 64 + offset
    view = buffer[start:start + a.nbytes].view(a.dtype)
    view[...] = a
    return view


@pytest.mark.parametrize("name, dtype", CASES)
def test_elementwise_result_bits_do_not_depend_on_where_in_a_cache_line_the_arrays_start(
        name, dtype, rng):
    # A kernel without vector math runs the elements before its output's next cache line apart
    # from the rest (NumPy's large arrays start 16 bytes past one): that split moves with the
    # arrays' offset in the line, and must not change a bit.  Every function is checked; those
    # calling vector math do not split.
    fn = getattr(ex, name)
    out_dtypes = next(outs for ins, outs in loop_dtypes(fn) if ins[0] == dtype)
    step = np.dtype(out_dtypes[0]).itemsize
    for n in (1, 3, 16, 17, 100, 1000):
        inputs = elementwise_inputs(name, dtype, (n,), rng)
        expected = as_tuple(fn(*inputs))
        for offset in range(0, 64, step):
            placed = [_at_line_offset(a, offset) for a in inputs]
            outs = tuple(_at_line_offset(np.zeros(n, d), offset) for d in out_dtypes)
            fn(*placed, out=outs)
            for got, want in zip(outs, expected):
                assert_exactly_equal(got, want)


@pytest.mark.parametrize("name, dtype", CASES)
def test_a_call_of_one_element_gives_the_bits_of_that_element_in_a_long_call(name, dtype, rng):
    # A call of one element (NumPy's .at calls the loop once per index) runs the loop's scalar
    # copy where that gives the vector loop's bits: each element alone must be the long call's.
    if name in VECTOR_MATH:
        pytest.skip(f"{name} calls vector math: libmvec and scalar libm differ by a few ULP")
    fn = getattr(ex, name)
    inputs = elementwise_inputs(name, dtype, (37,), rng)
    expected = as_tuple(fn(*inputs))
    for i in (0, 1, 17, 36):
        alone = as_tuple(fn(*[a[i:i + 1] for a in inputs]))
        for got, want in zip(alone, expected):
            assert_exactly_equal(got, want[i:i + 1])


@pytest.mark.parametrize("name", ["add", "custom_op", "hypot"])
def test_at_with_repeated_indices_is_numpys_element_by_element_update(name, rng):
    fn = getattr(ex, name)
    step = {"add": np.add, "hypot": np.hypot}.get(name)
    for dtype in sorted({ins[0] for ins, _ in loop_dtypes(fn) if ins[0] == ins[1]}, key=str):
        values = elementwise_inputs(name, dtype, (500,), rng)[1]
        indices = rng.integers(0, 20, 500)
        mine = elementwise_inputs(name, dtype, (20,), rng)[0]
        expected = mine.copy()
        with np.errstate(all="ignore"):
            for k, v in zip(indices, values):        # in order, once per occurrence
                expected[k] = (step(expected[k], v) if step is not None
                               else expected[k] * v + expected[k])
            fn.at(mine, indices, values)
        assert_exactly_equal(mine, expected)
