"""Conformance with NumPy's ufunc/gufunc semantics, on every buffer kind.

Modelled on what NumPy's own ufunc tests check (axes=, axis=, keepdims=, output broadcasting,
core-dimension errors, out= tuples, where=, reductions with and without identity/initial), but
written here.  Each case is a function `case(F, D, H)`: `F` holds the functions, `D` makes an
argument of the buffer kind under test from host data, `H` brings a result back to the host.
The reference run is the bare `np.ufunc` on NumPy arrays; the run under test is ufuncgen's
`Function` on the kind's arrays.  They must agree: same values, shapes and dtypes, or the same
exception type with a message naming the same problem (`match`, a regex both must contain;
the device path prefixes the function name, so whole messages are not compared).

Where the device path deliberately differs from NumPy, the case names the documented device
error (`device=`) and the test asserts exactly that error on the device kinds:

* `.reduce(where=<mask array>)` on the device needs a function with an identity (TypeError
  otherwise): masked-out elements become the identity before the reduction.
* `where=` is rejected by gufuncs everywhere (NumPy: TypeError), the device agrees.
* NumPy's casting errors are private subclasses of TypeError
  (`numpy._core._exceptions._UFuncOutputCastingError`); the device raises TypeError itself,
  with NumPy's message.
"""
from __future__ import annotations

import re
import types
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import ufuncgen.examples as ex

from .conftest import Kind

NAMES = ("add", "custom_op", "hypot", "gaussian_pdf", "polar_distance", "lucas", "sincos",
         "l2_norm", "inner1d", "matmul", "rgb_to_gray", "sq_norm3", "centroid_distances",
         "pairwise_distances", "condensed_distances")
BARE = types.SimpleNamespace(**{n: getattr(ex, n).ufunc for n in NAMES})
WRAPPED = types.SimpleNamespace(**{n: getattr(ex, n) for n in NAMES})


def R(*shape, dtype=np.float64, start=0):
    """Deterministic data with mixed signs."""
    n = int(np.prod(shape, dtype=np.int64))
    return (3 * np.sin(np.arange(start, start + n) * 1.3 + 0.2)).reshape(shape).astype(dtype)


@dataclass
class Case:
    id: str
    fn: object
    raises: type | None = None        # the exception NumPy raises (None: a result)
    match: str | None = None          # a phrase both messages must contain
    device: tuple | None = None       # (type, phrase): the documented device-path error


CASES: list[Case] = []


def case(id, raises=None, match=None, device=None):
    def add(fn):
        CASES.append(Case(id, fn, raises, match, device))
        return fn
    return add


# ============================================================================ gufunc axes=

@case("axes/all-operands-matmul")
def _(F, D, H):
    a, b = R(2, 4, 3), R(3, 5, 4, start=7)        # a: (m, B, n); b: (n, p, B)
    return H(F.matmul(D(a), D(b.transpose(0, 2, 1).copy()), axes=[(0, 2), (0, 2), (0, 2)]))


@case("axes/all-operands-with-out")
def _(F, D, H):
    a, b = R(2, 4, 3), R(3, 4, 5, start=7)
    out = D(np.zeros((2, 4, 5)))
    r = F.matmul(D(a), D(b), axes=[(0, 2), (0, 2), (0, 2)], out=out)
    assert r is out
    return H(out)


@case("axes/output-entries-omitted")
def _(F, D, H):
    return H(F.inner1d(D(R(5, 3)), D(R(5, 3, start=2)), axes=[(0,), (0,)]))


@case("axes/int-entries-for-1d-core")
def _(F, D, H):
    return H(F.inner1d(D(R(5, 3)), D(R(3, 5, start=2)), axes=[0, 1, ()]))


@case("axes/int-entries-l2_norm")
def _(F, D, H):
    return H(F.l2_norm(D(R(4, 6, 2)), axes=[1]))


@case("axes/negative")
def _(F, D, H):
    a, b = R(3, 2, 4), R(3, 4, 5, start=1)        # m=2, n=3, p=5, loop 4
    return H(F.matmul(D(a), D(b), axes=[(-2, -3), (-3, -1), (-1, -2)]))


@case("axes/out-of-bounds", np.exceptions.AxisError, "out of bounds")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), axes=[(2,), (0,)])


@case("axes/negative-out-of-bounds", np.exceptions.AxisError, "out of bounds")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), axes=[(-3,), (0,)])


@case("axes/output-out-of-bounds", np.exceptions.AxisError, "out of bounds")
def _(F, D, H):
    return F.matmul(D(R(2, 3)), D(R(3, 4)), axes=[(0, 1), (0, 1), (0, 2)])


@case("axes/wrong-list-length", ValueError, "entry for all 3 inputs and outputs")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), axes=[(0,)])


@case("axes/outputs-omitted-but-have-core", ValueError, "entry for all 3 inputs and outputs")
def _(F, D, H):
    return F.matmul(D(R(2, 3)), D(R(3, 4)), axes=[(0, 1), (0, 1)])


@case("axes/too-many-entries", ValueError, "entry for all 3 inputs and outputs")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), axes=[0, 0, (), ()])


@case("axes/entry-too-long", np.exceptions.AxisError, "core dimension|element")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), axes=[(0, 1), 0])


@case("axes/entry-too-short", np.exceptions.AxisError, "core dimension|element")
def _(F, D, H):
    return F.matmul(D(R(2, 3)), D(R(3, 4)), axes=[(0,), (0, 1), (0, 1)])


@case("axes/output-entry-not-empty", np.exceptions.AxisError, "core dimension|element")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), axes=[0, 0, (0,)])


@case("axes/repeated-axis", ValueError, "repeat")
def _(F, D, H):
    return F.matmul(D(R(3, 3)), D(R(3, 3)), axes=[(1, 1), (0, 1), (0, 1)])


@case("axes/repeated-negative-alias", ValueError, "repeat")
def _(F, D, H):
    return F.matmul(D(R(3, 3)), D(R(3, 3)), axes=[(0, -2), (0, 1), (0, 1)])


@case("axes/not-a-list", TypeError, "list")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), axes=((0,), (0,)))


# ============================================================================ gufunc axis=

@case("axis/valid")
def _(F, D, H):
    return H(F.inner1d(D(R(5, 3)), D(R(5, 3, start=4)), axis=0))


@case("axis/negative-3d")
def _(F, D, H):
    return H(F.l2_norm(D(R(2, 5, 3)), axis=-2))


@case("axis/broadcast-operands")
def _(F, D, H):
    return H(F.inner1d(D(R(5, 1)), D(R(5, 3, start=4)), axis=0))


@case("axis/out-of-bounds", np.exceptions.AxisError, "out of bounds")
def _(F, D, H):
    return F.inner1d(D(R(5, 3)), D(R(5, 3)), axis=2)


@case("axis/multi-dim-core", TypeError, "single shared core dimension")
def _(F, D, H):
    return F.matmul(D(R(3, 3)), D(R(3, 3)), axis=0)


@case("axis/two-core-dims", TypeError, "single shared core dimension")
def _(F, D, H):
    return F.centroid_distances(D(R(3)), D(R(4, 3)), axis=0)


@case("axis/with-axes", TypeError, "both 'axis' and 'axes'")
def _(F, D, H):
    return F.inner1d(D(R(5, 3)), D(R(5, 3)), axis=0, axes=[0, 0])


# ============================================================================ keepdims=

@case("keepdims/default-axes")
def _(F, D, H):
    return H(F.inner1d(D(R(4, 3)), D(R(4, 3, start=1)), keepdims=True))


@case("keepdims/false")
def _(F, D, H):
    return H(F.inner1d(D(R(4, 3)), D(R(4, 3, start=1)), keepdims=False))


@case("keepdims/with-axis")
def _(F, D, H):
    return H(F.inner1d(D(R(4, 3, 2)), D(R(4, 3, 2, start=1)), axis=1, keepdims=True))


@case("keepdims/with-axes")
def _(F, D, H):
    return H(F.l2_norm(D(R(4, 3, 2)), axes=[0], keepdims=True))


@case("keepdims/with-out")
def _(F, D, H):
    out = D(np.zeros((1, 3)))
    r = F.inner1d(D(R(4, 3)), D(R(4, 3, start=1)), axis=0, keepdims=True, out=out)
    assert r is out
    return H(out)


@case("keepdims/with-out-of-wrong-shape", ValueError, "")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), axis=0, keepdims=True, out=D(np.zeros(3)))


@case("keepdims/output-core-dims", TypeError, "keepdims")
def _(F, D, H):
    return F.matmul(D(R(3, 3)), D(R(3, 3)), keepdims=True)


@case("keepdims/output-core-dims-centroid", TypeError, "keepdims")
def _(F, D, H):
    return F.centroid_distances(D(R(3)), D(R(4, 3)), keepdims=True)


# ============================================================================ output broadcasting

@case("outbcast/ufunc-out-larger")
def _(F, D, H):
    out = D(np.zeros((4, 3)))
    r = F.add(D(R(3)), D(R(1, 3, start=2)), out=out)
    assert r is out
    return H(out)


@case("outbcast/gufunc-out-larger")
def _(F, D, H):
    out = D(np.zeros((2, 4)))
    F.inner1d(D(R(4, 3)), D(R(4, 3, start=2)), out=out)
    return H(out)


@case("outbcast/gufunc-core-out-larger")
def _(F, D, H):
    out = D(np.zeros((3, 2, 4)))
    F.matmul(D(R(2, 5)), D(R(5, 4, start=3)), out=out)
    return H(out)


@case("outbcast/ufunc-out-wrong-shape", ValueError, "broadcast")
def _(F, D, H):
    return F.add(D(R(4, 3)), D(R(4, 3)), out=D(np.zeros((4, 2))))


@case("outbcast/ufunc-out-too-few-dims", ValueError, "non-broadcastable output operand")
def _(F, D, H):
    return F.add(D(R(4, 3)), D(R(4, 3)), out=D(np.zeros(3)))


@case("outbcast/ufunc-out-broadcast-dim", ValueError, "non-broadcastable output operand")
def _(F, D, H):
    return F.add(D(R(4, 3)), D(R(4, 3)), out=D(np.zeros((1, 3))))


@case("outbcast/gufunc-out-loop-wrong", ValueError, "could not be broadcast")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), out=D(np.zeros(3)))


@case("outbcast/gufunc-out-insufficient-dims", ValueError, "does not have enough dimensions")
def _(F, D, H):
    return F.matmul(D(R(2, 3)), D(R(3, 4)), out=D(np.zeros(4)))


@case("outbcast/gufunc-out-core-wrong", ValueError, "mismatch in its core dimension")
def _(F, D, H):
    return F.matmul(D(R(2, 3)), D(R(3, 4)), out=D(np.zeros((2, 5))))


# ============================================================================ core dimensions

@case("core/mismatch", ValueError, "mismatch in its core dimension")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 2)))


@case("core/mismatch-matmul", ValueError, "mismatch in its core dimension")
def _(F, D, H):
    return F.matmul(D(R(2, 3)), D(R(4, 5)))


@case("core/mismatch-centroid", ValueError, "mismatch in its core dimension")
def _(F, D, H):
    return F.centroid_distances(D(R(3)), D(R(4, 2)))


@case("core/input-insufficient-dims", ValueError, "does not have enough dimensions")
def _(F, D, H):
    return F.matmul(D(R(3)), D(R(3, 4)))


@case("core/loop-dims-not-broadcastable", ValueError, "could not be broadcast")
def _(F, D, H):
    return F.inner1d(D(R(2, 3)), D(R(4, 3)))


@case("core/loop-dims-broadcast")
def _(F, D, H):
    return H(F.inner1d(D(R(2, 1, 3)), D(R(4, 3, start=5))))


@case("core/frozen-dim-right")
def _(F, D, H):
    return H((F.rgb_to_gray(D(R(5, 3))), F.sq_norm3(D(R(2, 3)))))


@case("core/frozen-dim-wrong", ValueError, "mismatch in its core dimension")
def _(F, D, H):
    return F.rgb_to_gray(D(R(5, 4)))


@case("core/frozen-dim-wrong-sq_norm3", ValueError, "mismatch in its core dimension")
def _(F, D, H):
    return F.sq_norm3(D(R(2)))


@case("core/frozen-output-via-out-wrong", ValueError, "")
def _(F, D, H):
    return F.rgb_to_gray(D(R(5, 3)), out=D(np.zeros((5, 1))))


@case("core/computed-dim")
def _(F, D, H):
    return H(F.condensed_distances(D(R(2, 5, 3))))


@case("core/computed-dim-out-right")
def _(F, D, H):
    out = D(np.zeros((2, 10)))
    F.condensed_distances(D(R(2, 5, 3)), out=out)
    return H(out)


@case("core/computed-dim-out-wrong", ValueError, r"p|core dimension")
def _(F, D, H):
    return F.condensed_distances(D(R(5, 3)), out=D(np.zeros(9)))


@case("core/pairwise-out-wrong", ValueError, "mismatch in its core dimension")
def _(F, D, H):
    return F.pairwise_distances(D(R(4, 3)), out=D(np.zeros((4, 5))))


@case("core/empty-loop")
def _(F, D, H):
    return H(F.inner1d(D(np.zeros((0, 3))), D(np.zeros((0, 3)))))


@case("core/empty-core")
def _(F, D, H):
    return H(F.inner1d(D(np.zeros((2, 0))), D(np.zeros((2, 0)))))


# ============================================================================ out= tuples

@case("outtuple/right-length")
def _(F, D, H):
    s, c = D(np.zeros(5)), D(np.zeros(5))
    r = F.sincos(D(R(5)), out=(s, c))
    assert r[0] is s and r[1] is c
    return H((s, c))


@case("outtuple/none-entry")
def _(F, D, H):
    c = D(np.zeros(5))
    r = F.sincos(D(R(5)), out=(None, c))
    assert r[1] is c
    return H(r)


@case("outtuple/all-none")
def _(F, D, H):
    return H(F.sincos(D(R(5)), out=(None, None)))


@case("outtuple/positional")
def _(F, D, H):
    s, c = D(np.zeros(5)), D(np.zeros(5))
    r = F.sincos(D(R(5)), s, c)
    assert r[0] is s and r[1] is c
    return H(r)


@case("outtuple/positional-first-only")
def _(F, D, H):
    s = D(np.zeros(5))
    r = F.sincos(D(R(5)), s)
    assert r[0] is s
    return H(r)


@case("outtuple/too-short", ValueError, "out")
def _(F, D, H):
    return F.sincos(D(R(5)), out=(D(np.zeros(5)),))


@case("outtuple/too-long", ValueError, "out")
def _(F, D, H):
    return F.sincos(D(R(5)), out=(D(np.zeros(5)),) * 3)


@case("outtuple/not-a-tuple-for-two-outputs", TypeError, "tuple")
def _(F, D, H):
    return F.sincos(D(R(5)), out=D(np.zeros(5)))


@case("outtuple/positional-and-keyword", TypeError, "out")
def _(F, D, H):
    return F.sincos(D(R(5)), D(np.zeros(5)), out=(None, D(np.zeros(5))))


@case("outtuple/single-output-tuple")
def _(F, D, H):
    o = D(np.zeros(4))
    r = F.add(D(R(4)), D(R(4)), out=(o,))
    assert r is o
    return H(o)


@case("outtuple/single-output-tuple-too-long", ValueError, "out")
def _(F, D, H):
    return F.add(D(R(4)), D(R(4)), out=(D(np.zeros(4)), D(np.zeros(4))))


@case("outtuple/gufunc-wrong-shape-second", ValueError, "")
def _(F, D, H):
    return F.sincos(D(R(5)), out=(D(np.zeros(5)), D(np.zeros(4))))


# ============================================================================ where= (ufuncs)

@case("where/bool-array-broadcast")
def _(F, D, H):
    out = D(np.full((4, 3), -7.0))
    r = F.add(D(R(4, 3)), D(R(3, start=1)), where=D(np.array([True, False, True])), out=out)
    assert r is out
    return H(out)


@case("where/2d-mask-column-broadcast")
def _(F, D, H):
    out = D(np.full((4, 3), -7.0))
    F.hypot(D(R(4, 3)), D(R(4, 3, start=1)), where=D(np.array([[True], [False], [True], [True]])),
            out=out)
    return H(out)


@case("where/false")
def _(F, D, H):
    out = D(np.full(4, 9.0))
    r = F.add(D(R(4)), D(R(4)), where=False, out=out)
    assert r is out
    return H(out)


@case("where/true")
def _(F, D, H):
    out = D(np.full(4, 9.0))
    F.add(D(R(4)), D(R(4)), where=True, out=out)
    return H(out)


@case("where/without-out-masked-entries")
def _(F, D, H):
    mask = np.array([True, False, True, False, True])
    with pytest.warns(UserWarning, match="'where' used without 'out'"):
        r = H(F.gaussian_pdf(D(R(5)), 0.5, 2.0, where=D(mask)))
    return r[mask], r.shape, r.dtype


@case("where/out-None-no-warning")
def _(F, D, H):
    mask = np.array([True, False, True, False, True])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = H(F.gaussian_pdf(D(R(5)), 0.5, 2.0, where=D(mask), out=None))
    return r[mask], r.shape, r.dtype


@case("where/two-outputs")
def _(F, D, H):
    s, c = D(np.full(4, 5.0)), D(np.full(4, 6.0))
    F.sincos(D(R(4)), out=(s, c), where=D(np.array([True, False, False, True])))
    return H((s, c))


@case("where/wrong-dtype", TypeError, "int64.*bool|bool")
def _(F, D, H):
    return F.add(D(R(4)), D(R(4)), where=D(np.ones(4, np.int64)), out=D(np.zeros(4)))


@case("where/not-broadcastable", ValueError, "could not be broadcast|broadcast")
def _(F, D, H):
    return F.add(D(R(4)), D(R(4)), where=D(np.ones(3, bool)), out=D(np.zeros(4)))


@case("where/on-gufunc", TypeError, "where")
def _(F, D, H):
    return F.inner1d(D(R(4, 3)), D(R(4, 3)), where=D(np.ones(4, bool)))


# ============================================================================ add.reduce

A3 = (2, 3, 4)


for _axis in (None, 0, 1, -1, (0, 2), (2, 0), (), (0, 1, 2)):
    def _make(axis):
        def fn(F, D, H):
            return H(F.add.reduce(D(R(*A3)), axis=axis))
        return fn
    case(f"reduce/axis={_axis}")(_make(_axis))
    def _make_keep(axis):
        def fn(F, D, H):
            return H(F.add.reduce(D(R(*A3)), axis=axis, keepdims=True))
        return fn
    case(f"reduce/axis={_axis}-keepdims")(_make_keep(_axis))


@case("reduce/default-axis-int64")
def _(F, D, H):
    return H(F.add.reduce(D(np.arange(12).reshape(3, 4))))


@case("reduce/0d-default-axis")
def _(F, D, H):
    return H(F.add.reduce(D(np.array(3.5))))


@case("reduce/0d-axis-None")
def _(F, D, H):
    return H(F.add.reduce(D(np.array(3.5)), axis=None))


@case("reduce/0d-axis-1", np.exceptions.AxisError, "out of bounds")
def _(F, D, H):
    return F.add.reduce(D(np.array(3.5)), axis=1)


@case("reduce/initial")
def _(F, D, H):
    return H(F.add.reduce(D(R(3, 4)), axis=1, initial=5.0))


@case("reduce/initial-int")
def _(F, D, H):
    return H(F.add.reduce(D(np.arange(12).reshape(3, 4)), axis=0, initial=100))


@case("reduce/dtype")
def _(F, D, H):
    return H(F.add.reduce(D(R(3, 4, dtype=np.float32)), axis=1, dtype=np.float64))


@case("reduce/float32")
def _(F, D, H):
    return H(F.add.reduce(D(R(3, 40, dtype=np.float32)), axis=1))


@case("reduce/out")
def _(F, D, H):
    out = D(np.zeros(4))
    r = F.add.reduce(D(R(3, 4)), axis=0, out=out)
    assert r is out
    return H(out)


@case("reduce/out-tuple")
def _(F, D, H):
    out = D(np.zeros(4))
    r = F.add.reduce(D(R(3, 4)), axis=0, out=(out,))
    assert r is out
    return H(out)


@case("reduce/out-keepdims")
def _(F, D, H):
    out = D(np.zeros((1, 4)))
    F.add.reduce(D(R(3, 4)), axis=0, out=out, keepdims=True)
    return H(out)


@case("reduce/out-wrong-shape", ValueError, "could not be broadcast|shape")
def _(F, D, H):
    return F.add.reduce(D(R(3, 4)), axis=0, out=D(np.zeros(3)))


@case("reduce/empty-with-identity")
def _(F, D, H):
    return H((F.add.reduce(D(np.zeros((0, 3))), axis=0), F.add.reduce(D(np.zeros((0, 3))), axis=None),
              F.add.reduce(D(np.zeros((3, 0))), axis=1)))


@case("reduce/empty-initial")
def _(F, D, H):
    return H(F.add.reduce(D(np.zeros((0, 3))), axis=0, initial=2.5))


@case("reduce/empty-result")
def _(F, D, H):
    return H(F.add.reduce(D(np.zeros((0, 3))), axis=1))


@case("reduce/initial-None-empty", ValueError, "zero-size array|no identity")
def _(F, D, H):
    return F.add.reduce(D(np.zeros((0, 3))), axis=0, initial=None)


@case("reduce/axis-out-of-bounds", np.exceptions.AxisError, "out of bounds")
def _(F, D, H):
    return F.add.reduce(D(R(3, 4)), axis=2)


@case("reduce/negative-axis-out-of-bounds", np.exceptions.AxisError, "out of bounds")
def _(F, D, H):
    return F.add.reduce(D(R(3, 4)), axis=-3)


@case("reduce/duplicate-axis", ValueError, "duplicate value in 'axis'")
def _(F, D, H):
    return F.add.reduce(D(R(3, 4)), axis=(0, 0))


@case("reduce/duplicate-axis-negative-alias", ValueError, "duplicate value in 'axis'")
def _(F, D, H):
    return F.add.reduce(D(R(3, 4)), axis=(1, -1))


@case("reduce/no-identity")
def _(F, D, H):
    return H(F.hypot.reduce(D(R(3, 4)), axis=1))


@case("reduce/no-identity-initial")
def _(F, D, H):
    return H(F.hypot.reduce(D(R(3, 4)), axis=0, initial=0.0))


@case("reduce/no-identity-custom_op")
def _(F, D, H):
    return H(F.custom_op.reduce(D(R(3, 4)), axis=0))


@case("reduce/no-identity-empty", ValueError, "zero-size array|no identity")
def _(F, D, H):
    return F.hypot.reduce(D(np.zeros((0, 3))), axis=0)


@case("reduce/no-identity-empty-initial")
def _(F, D, H):
    return H(F.hypot.reduce(D(np.zeros((0, 3))), axis=0, initial=1.5))


@case("reduce/no-identity-long-axis")
def _(F, D, H):
    return H(F.hypot.reduce(D(R(3, 5000) / 50), axis=1))


@case("reduce/no-identity-all-of-1d-keepdims")
def _(F, D, H):
    return H(F.custom_op.reduce(D(R(7) / 4), axis=None, keepdims=True))


@case("reduce/no-identity-where-false", ValueError, "to use a where mask one has to specify")
def _(F, D, H):
    return F.hypot.reduce(D(R(3, 4)), axis=0, where=False)


@case("reduce/no-identity-where-false-initial")
def _(F, D, H):
    return H(F.hypot.reduce(D(R(3, 4)), axis=0, where=False, initial=2.5))


@case("reduce/no-identity-empty-result")
def _(F, D, H):
    return H(F.hypot.reduce(D(np.zeros((0, 3))), axis=1))


@case("reduce/initial-None-long-axis")
def _(F, D, H):
    return H(F.add.reduce(D(R(2, 9000)), axis=1, initial=None))


@case("reduce/not-reorderable-multi-axis", ValueError, "not reorderable")
def _(F, D, H):
    return F.hypot.reduce(D(R(3, 4)), axis=(0, 1))


@case("reduce/where")
def _(F, D, H):
    return H(F.add.reduce(D(R(3, 4)), axis=1, where=D(np.array([True, False, True, True]))))


@case("reduce/where-2d-all-axes-initial")
def _(F, D, H):
    mask = np.array([[True, False, True, True], [False, False, True, False], [True] * 4])
    return H(F.add.reduce(D(R(3, 4)), axis=None, where=D(mask), initial=1.5))


@case("reduce/where-column-broadcast-keepdims")
def _(F, D, H):
    return H(F.add.reduce(D(R(3, 4)), axis=0, keepdims=True,
                          where=D(np.array([[True], [False], [True]]))))


@case("reduce/where-int-upcast-into-out")
def _(F, D, H):
    out = D(np.zeros(2, np.int64))
    F.add.reduce(D(np.arange(10, dtype=np.int8).reshape(2, 5)), axis=1, out=out,
                 where=D(np.array([True, True, False, True, False])))
    return H(out)


@case("reduce/where-long-split-axis")
def _(F, D, H):
    mask = (np.arange(20000) % 3) != 0
    return H(F.add.reduce(D(np.arange(20000, dtype=np.int64)), where=D(mask), initial=-7))


@case("reduce/where-does-not-broadcast", ValueError)
def _(F, D, H):
    return F.add.reduce(D(R(3, 4)), where=D(np.ones(3, bool)))


@case("reduce/where-no-identity-initial",
      device=(TypeError, "where= mask on the device needs a function with an identity"))
def _(F, D, H):
    return H(F.hypot.reduce(D(R(3, 4)), axis=1, initial=0.5,
                            where=D(np.array([True, False, True, True]))))


# ============================================================================ outer

@case("outer/1d-by-1d")
def _(F, D, H):
    return H(F.add.outer(D(R(3)), D(R(4, start=5))))


@case("outer/2d-by-1d-float32")
def _(F, D, H):
    return H(F.hypot.outer(D(R(2, 3, dtype=np.float32)), D(R(4, start=2, dtype=np.float32))))


@case("outer/size-1-axes-are-not-broadcast-away")
def _(F, D, H):
    return H(F.custom_op.outer(D(R(2, 1)), D(R(1, 3, start=4))))


@case("outer/scalar-first")
def _(F, D, H):
    return H(F.add.outer(2.5, D(R(4))))


@case("outer/scalar-second")
def _(F, D, H):
    return H(F.add.outer(D(R(2, 3)), 7))


@case("outer/a-python-scalar-is-an-array-not-a-weak-scalar")
def _(F, D, H):
    return H(F.add.outer(D(R(3, dtype=np.float32)), 2.5))        # float64, as np.asarray(2.5)


@case("outer/a-python-int-numpy-holds-as-object", TypeError, "not supported for the input types")
def _(F, D, H):
    return F.add.outer(D(R(3)), 2**70)


@case("outer/mixed-int-float")
def _(F, D, H):
    return H(F.add.outer(D(np.arange(3)), D(R(2))))


@case("outer/out-and-dtype")
def _(F, D, H):
    out = D(np.zeros((3, 4), np.float32))
    r = F.add.outer(D(R(3)), D(R(4, start=1)), out=out, dtype=np.float32)
    assert r is out
    return H(out)


@case("outer/where")
def _(F, D, H):
    out = D(np.full((2, 3), -1.0))
    F.add.outer(D(R(2)), D(R(3, start=3)), out=out, where=D(np.array([True, False, True])))
    return H(out)


@case("outer/empty")
def _(F, D, H):
    return H(F.add.outer(D(np.zeros((0, 2))), D(R(3))))


@case("outer/wrong-out-shape", ValueError)
def _(F, D, H):
    return F.add.outer(D(R(3)), D(R(4)), out=D(np.zeros((4, 3))))


@case("outer/gufunc", TypeError, "method outer is not allowed")
def _(F, D, H):
    return F.matmul.outer(D(R(2, 2)), D(R(2, 2)))


@case("outer/not-binary", ValueError, "outer product only supported for binary functions")
def _(F, D, H):
    return F.lucas.outer(D(np.arange(3)), D(np.arange(2)))


@case("outer/one-argument", TypeError, "exactly two arguments")
def _(F, D, H):
    return F.add.outer(D(R(3)))


@case("reduce/gufunc", RuntimeError, "Reduction not defined on ufunc with signature")
def _(F, D, H):
    return F.inner1d.reduce(D(R(3, 4)))


@case("reduce/not-binary", ValueError, "reduce only supported for binary functions")
def _(F, D, H):
    return F.lucas.reduce(D(np.arange(3)))


@case("reduce/initial-None-empty-result")
def _(F, D, H):
    return H(F.add.reduce(D(np.zeros((0, 3))), axis=1, initial=None))


@case("reduce/initial-None-nonempty")
def _(F, D, H):
    return H(F.add.reduce(D(R(3, 4)), axis=1, initial=None))


@case("keepdims/axes-with-output-entry")
def _(F, D, H):
    return H(F.l2_norm(D(R(4, 3, 2)), axes=[0, 1], keepdims=True))


@case("keepdims/axes-output-entry-empty", np.exceptions.AxisError, "core dimension")
def _(F, D, H):
    return F.l2_norm(D(R(4, 3, 2)), axes=[0, ()], keepdims=True)


@case("keepdims/axis-3d")
def _(F, D, H):
    return H(F.l2_norm(D(R(4, 3, 2)), axis=1, keepdims=True))


# ============================================================================ accumulate

@case("accumulate/default-axis")
def _(F, D, H):
    return H(F.add.accumulate(D(R(4, 5))))


@case("accumulate/last-axis-int64")
def _(F, D, H):
    return H(F.add.accumulate(D(np.arange(24).reshape(2, 3, 4) - 7), axis=-1))


@case("accumulate/no-identity")
def _(F, D, H):
    return H(F.custom_op.accumulate(D(R(6, 3) / 4), axis=0))


@case("accumulate/dtype")
def _(F, D, H):
    return H(F.add.accumulate(D(R(3, 7)), axis=1, dtype=np.float32))


@case("accumulate/out-cast")
def _(F, D, H):
    out = D(np.zeros((3, 7), np.float32))
    r = F.add.accumulate(D(R(3, 7)), axis=1, out=out)
    assert r is out
    return H(out)


@case("accumulate/in-place")
def _(F, D, H):
    a = D(R(5, 4))
    F.add.accumulate(a, axis=0, out=a)
    return H(a)


@case("accumulate/empty-axis")
def _(F, D, H):
    return H(F.hypot.accumulate(D(np.zeros((0, 3))), axis=0))


@case("accumulate/multiple-axes", ValueError, "does not allow multiple axes")
def _(F, D, H):
    return F.add.accumulate(D(R(3, 4)), axis=(0, 1))


@case("accumulate/axis-out-of-bounds", np.exceptions.AxisError, "out of bounds")
def _(F, D, H):
    return F.add.accumulate(D(R(3, 4)), axis=2)


@case("accumulate/unary", ValueError, "accumulate only supported for binary functions")
def _(F, D, H):
    return F.lucas.accumulate(D(np.arange(5)))


@case("accumulate/gufunc", RuntimeError, "Reduction not defined on ufunc with signature")
def _(F, D, H):
    return F.inner1d.accumulate(D(R(3, 4)))


# ============================================================================ at
# In place: each case returns the array it updated.

@case("at/repeated-and-negative-indices")
def _(F, D, H):
    a = D(R(6))
    F.add.at(a, [0, 0, 3, -1, 0], 1.5)
    return H(a)


@case("at/not-reorderable-array-b")
def _(F, D, H):
    a = D(R(3))
    F.custom_op.at(a, [2, 2, 0, 2], D(R(4, start=5)))
    return H(a)


@case("at/tuple-of-index-arrays")
def _(F, D, H):
    a = D(R(4, 5))
    F.add.at(a, (np.array([0, 3, 0]), np.array([4, 4, 4])), D(R(3, start=2)))
    return H(a)


@case("at/slice-and-array-broadcast-b")
def _(F, D, H):
    a = D(R(4, 5))
    F.hypot.at(a, (slice(None, None, -1), [1, 1]), D(R(2, start=3)))
    return H(a)


@case("at/boolean-mask")
def _(F, D, H):
    a = D(R(4, 5))
    F.add.at(a, R(4, 5) > 0, 2.0)
    return H(a)


@case("at/unary-int64")
def _(F, D, H):
    a = D(np.arange(8))
    F.lucas.at(a, [1, 1, 7, 1])
    return H(a)


@case("at/python-float-into-float32-runs-the-float64-loop")
def _(F, D, H):
    a = D(np.ones(3, np.float32))
    F.add.at(a, [0, 0, 0, 2], 1.5 * 2.0**-24)
    return H(a)


@case("at/int8-converted-back-after-each-update")
def _(F, D, H):
    a = D(np.array([100, -100, 5], np.int8))
    F.add.at(a, [0, 0, 1, 1], 100)
    return H(a)


@case("at/0d")
def _(F, D, H):
    a = D(np.array(2.5))
    F.add.at(a, (), 1.0)
    return H(a)


@case("at/nothing-selected")
def _(F, D, H):
    a = D(R(4))
    F.add.at(a, [], D(np.zeros(0)))
    return H(a)


@case("at/out-of-bounds", IndexError, "index 4 is out of bounds for axis 0 with size 4")
def _(F, D, H):
    return F.add.at(D(R(4)), [0, 4], 1.0)


@case("at/b-of-the-wrong-shape", ValueError, "not broadcastable to correct shape")
def _(F, D, H):
    return F.add.at(D(R(4)), [0, 1], D(R(3)))


@case("at/binary-without-b", ValueError, "second operand needed")
def _(F, D, H):
    return F.add.at(D(R(4)), [0])


@case("at/unary-with-b", ValueError, "second operand provided when ufunc is unary")
def _(F, D, H):
    return F.lucas.at(D(np.arange(4)), [0], 1)


@case("at/gufunc", TypeError, "does not support ufunc with non-trivial signature")
def _(F, D, H):
    return F.inner1d.at(D(R(4)), [0], 1.0)


@case("at/two-outputs", ValueError, "Only single output ufuncs supported")
def _(F, D, H):
    return F.sincos.at(D(R(4)), [0])


@case("at/three-inputs", ValueError, "Only unary and binary ufuncs supported")
def _(F, D, H):
    return F.gaussian_pdf.at(D(R(4)), [0], 1.0)


# ============================================================================ float16
# float16 elements computed in float32 and rounded once (README, "float16"): the same bits on
# every kind, NumPy's casting rules between float16 and the other types.

@case("float16/add-broadcast")
def _(F, D, H):
    return H(F.add(D(R(4, 5, dtype=np.float16)), D(R(5, start=3, dtype=np.float16))))


@case("float16/add-with-float32-runs-the-float32-loop")
def _(F, D, H):
    return H(F.add(D(R(4, 5, dtype=np.float16)), D(R(5, start=3, dtype=np.float32))))


@case("float16/python-scalar-stays-float16")
def _(F, D, H):
    return H(F.add(D(R(6, dtype=np.float16)), 2.5))


@case("float16/out-from-a-float64-loop")
def _(F, D, H):
    out = D(np.zeros(6, np.float16))
    r = F.add(D(R(6) * 1000), D(R(6, start=4)), out=out, casting="unsafe")
    assert r is out
    return H(out)


def _error_type(call):
    try:
        call()
    except Exception as error:
        return type(error)
    raise AssertionError("expected NumPy to refuse")


# NumPy's private TypeError subclass for an output it may not cast to.
OUTPUT_CASTING_ERROR = _error_type(
    lambda: np.add(np.ones(1), 1.0, out=np.zeros(1, np.float16), casting="safe"))


@case("float16/out-refused-under-casting-safe", OUTPUT_CASTING_ERROR, "Cannot cast")
def _(F, D, H):
    return F.add(D(R(6)), D(R(6)), out=D(np.zeros(6, np.float16)), casting="safe")


@case("float16/gufunc-core-inputs")
def _(F, D, H):
    return H(F.inner1d(D(R(3, 7, dtype=np.float16)), D(R(7, start=5, dtype=np.float16))))


@case("float16/reduce-rounds-every-step")
def _(F, D, H):
    return H(F.add.reduce(D(R(3, 40, dtype=np.float16) * 50), axis=1))


@case("float16/reduce-dtype-float32")
def _(F, D, H):
    return H(F.add.reduce(D(R(3, 40, dtype=np.float16)), axis=0, dtype=np.float32))


@case("float16/outer")
def _(F, D, H):
    return H(F.add.outer(D(R(3, dtype=np.float16)), D(R(4, start=2, dtype=np.float16))))


# ============================================================================ the test

def _outcome(c: Case, F, kind: Kind):
    try:
        return "ok", c.fn(F, kind.D, kind.H)
    except Exception as error:      # compared below
        return "error", error


def _assert_same_values(got, want, path="result"):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), path
        for k, (g, w) in enumerate(zip(got, want)):
            _assert_same_values(g, w, f"{path}[{k}]")
        return
    if isinstance(want, (tuple, np.dtype)) or not hasattr(want, "shape"):
        assert got == want, path
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{path}: shape {got.shape} != {want.shape}"
    assert got.dtype == want.dtype, f"{path}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind == "f":
        rtol = 1e-5 if want.dtype.itemsize == 4 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=path)
    else:
        np.testing.assert_array_equal(got, want, err_msg=path)


@pytest.mark.parametrize("c", CASES, ids=[c.id for c in CASES])
def test_conformance(kind, c: Case):
    status, want = _outcome(c, BARE, Kind("numpy"))
    # The case's own statement of NumPy's behaviour holds for this NumPy.
    if c.raises is None:
        assert status == "ok", f"NumPy raised {want!r}"
    else:
        assert status == "error" and type(want) is c.raises, f"NumPy gave {want!r}"
        if c.match:
            assert re.search(c.match, str(want), re.I), str(want)
    status_got, got = _outcome(c, WRAPPED, kind)
    if kind.name != "numpy" and c.device is not None:
        # A documented difference of the device path: its own clear error.
        error_type, phrase = c.device
        assert status_got == "error", f"expected the documented {error_type.__name__}, got {got!r}"
        assert type(got) is error_type and phrase in str(got), repr(got)
        return
    if status == "error":
        assert status_got == "error", f"NumPy raised {want!r}, {kind.name} gave a result"
        assert type(got) is type(want), f"{kind.name} raised {got!r}, NumPy {want!r}"
        if c.match:
            assert re.search(c.match, str(got), re.I), f"{kind.name}: {got}  (NumPy: {want})"
        return
    if status_got == "error":
        raise AssertionError(f"NumPy gave a result, {kind.name} raised {got!r}") from got
    _assert_same_values(got, want)


def test_identities_of_the_seed_functions():
    """What the reduce cases rely on: only `add` has an identity."""
    assert {n: getattr(ex, n).identity for n in NAMES if getattr(ex, n).nin == 2
            and getattr(ex, n).nout == 1 and not getattr(ex, n).signature} == {
        "add": 0, "custom_op": None, "hypot": None}
