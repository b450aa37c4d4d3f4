"""A first look at ufuncgen: the 16 seed functions of ``ufuncgen.examples``.

Run it with ufuncgen installed (``pip install .``)::

    python examples/demo.py

It calls every seed function on a small input and prints the result next to the same
computation written with NumPy, with a check mark when the two agree.  Then it times a
few of them against NumPy on large arrays (about 20 seconds in all).

Each seed function was generated from a few lines of C in signatures/examples.ufunc and is
a real NumPy ufunc (``ex.add.ufunc``), so broadcasting, ``out=``, ``dtype=``, ``.reduce``
and the rest work as they do for NumPy's own.
"""
import math
import sys
import timeit

import numpy as np

import ufuncgen
import ufuncgen.examples as ex

try:
    "✓✗".encode(sys.stdout.encoding or "ascii")
    YES, NO = "✓", "✗"
except (UnicodeEncodeError, LookupError):
    YES, NO = "ok", "MISMATCH"


def show(value):
    """Short one-line text of an array (or a tuple of them)."""
    if isinstance(value, tuple):
        return ", ".join(show(v) for v in value)
    text = np.array2string(np.asarray(value), precision=4, suppress_small=True,
                           separator=", ", max_line_width=10_000, threshold=12, edgeitems=3)
    return " ".join(text.split())


def same(a, b):
    if isinstance(a, tuple):
        return all(same(x, y) for x, y in zip(a, b))
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "iu":
        return np.array_equal(a, b)
    if a.dtype == np.float16:
        return np.array_equal(a, b)     # one rounding to float16: the same bits
    return np.allclose(a, b, rtol=1e-6 if a.dtype == np.float32 else 1e-12, atol=0)


checks = []


def demo(name, call, result, numpy_text, reference):
    """Print one function's result and NumPy's, and whether they agree."""
    doc = " ".join(getattr(ex, name).__doc__.split("\n\n")[1].split())
    doc = doc.split(". ")[0].rstrip(".")
    ok = same(result, reference)
    checks.append(ok)
    print(f"{YES if ok else NO} {name}: {doc}")
    print(f"    ufuncgen  {call} = {show(result)}")
    print(f"    NumPy     {numpy_text} = {show(reference)}")


def lucas_reference(n):
    """L(n) from the recurrence, in Python integers, wrapped to int64 like NumPy."""
    a, b = 2, 1
    for _ in range(abs(n)):
        a, b = b, a + b
    if n < 0 and n % 2:
        a = -a
    return (a + 2**63) % 2**64 - 2**63


def mandelbrot_reference(c):
    """Steps of z -> z*z + c from 0 until |z| > 2, at most 100, in Python complex numbers."""
    z, k = 0j, 0
    while k < 100 and abs(z) <= 2:
        z, k = z * z + c, k + 1
    return k


def functions_tour():
    print("=" * 78)
    print("The seed functions, each next to the same computation in NumPy")
    print("=" * 78)

    x = np.array([1.0, 2.0, 3.0])
    y = np.array([10.0, 20.0, 30.0])
    demo("add", "add([1, 2, 3], [10, 20, 30])", ex.add(x, y), "x + y", x + y)
    print(f"    and it is a real ufunc: add.reduce([]) = {ex.add.reduce(np.array([]))}, "
          f"add.accumulate([1, 2, 3]) = {show(ex.add.accumulate(x))}")

    demo("custom_op", "custom_op([1, 2, 3], [10, 20, 30])", ex.custom_op(x, y),
         "x * y + x", x * y + x)

    legs_x = np.array([3e200, 3.0, 3e-200])
    legs_y = np.array([4e200, 4.0, 4e-200])
    demo("hypot", "hypot([3e200, 3, 3e-200], [4e200, 4, 4e-200])", ex.hypot(legs_x, legs_y),
         "np.hypot(x, y)", np.hypot(legs_x, legs_y))
    with np.errstate(over="ignore", under="ignore"):
        naive = np.sqrt(legs_x**2 + legs_y**2)
    print(f"    (the naive sqrt(x**2 + y**2) gives {show(naive)})")

    xs = np.array([-1.0, 0.0, 1.0, 2.0], dtype=np.float32)
    mean, sigma = np.float32(0), np.float32(1)
    reference = np.exp(np.float32(-0.5) * ((xs - mean) / sigma) ** 2) / (
        sigma * np.float32(math.sqrt(2 * math.pi)))
    demo("gaussian_pdf", "gaussian_pdf(float32 [-1, 0, 1, 2], 0, 1)",
         ex.gaussian_pdf(xs, mean, sigma), "exp(-z**2/2) / (sigma*sqrt(2 pi))", reference)

    rho1, theta1 = np.array([1.0, 2.0]), np.array([0.0, np.pi / 2])
    rho2, theta2 = np.array([1.0, 2.0]), np.array([np.pi / 2, np.pi])
    reference = np.hypot(rho1 * np.cos(theta1) - rho2 * np.cos(theta2),
                         rho1 * np.sin(theta1) - rho2 * np.sin(theta2))
    demo("polar_distance", "polar_distance([1, 2], [0, pi/2], [1, 2], [pi/2, pi])",
         ex.polar_distance(rho1, theta1, rho2, theta2), "hypot(x1 - x2, y1 - y2)", reference)

    n = np.array([0, 1, 2, 3, 4, 5, 10, -5, 90])
    demo("lucas", f"lucas({show(n)})", ex.lucas(n), "recurrence L(n+1) = L(n) + L(n-1)",
         np.array([lucas_reference(int(k)) for k in n]))

    angles = np.array([0.0, np.pi / 6, np.pi / 2])
    demo("sincos", "sincos([0, pi/6, pi/2])", ex.sincos(angles),
         "np.sin(x), np.cos(x)", (np.sin(angles), np.cos(angles)))

    halves = np.array([-3.0, -1.0, 0.0, 0.5, 2.0], dtype=np.float16)
    exact = np.array([0.5 * float(v) * math.erfc(-float(v) / math.sqrt(2)) for v in halves])
    demo("gelu", "gelu(float16 [-3, -1, 0, 0.5, 2])", ex.gelu(halves),
         "x/2 * erfc(-x/sqrt 2) in Python floats, rounded to float16", exact.astype(np.float16))
    print("    (float16 in and out: computed in float32 and rounded once, as NumPy's float16 "
          "loops do)")

    c = np.array([0, -1, 0.3 + 0.5j, -0.75 + 0.1j, 1 + 1j], dtype=np.complex128)
    demo("mandelbrot", "mandelbrot(complex128 [0, -1, 0.3+0.5j, -0.75+0.1j, 1+1j])",
         ex.mandelbrot(c), "z = z*z + c in Python complex numbers, counted",
         np.array([mandelbrot_reference(complex(v)) for v in c], dtype=np.int32))

    print("\n-- generalized ufuncs: they work on the last axes and loop over the rest --")
    vectors = np.array([[3.0, 4.0], [5.0, 12.0], [1.0, 1.0]])
    demo("l2_norm", "l2_norm([[3, 4], [5, 12], [1, 1]])", ex.l2_norm(vectors),
         "np.linalg.norm(x, axis=-1)", np.linalg.norm(vectors, axis=-1))

    other = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 3.0]])
    demo("inner1d", "inner1d(those, [[1, 0], [0, 1], [2, 3]])", ex.inner1d(vectors, other),
         "(x * y).sum(-1)", (vectors * other).sum(-1))

    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((100, 2, 3)), rng.standard_normal((100, 3, 2))
    demo("matmul", "matmul(100 stacked 2x3, 100 stacked 3x2)[0]", ex.matmul(a, b)[0],
         "np.matmul(a, b)[0]", np.matmul(a, b)[0])

    pixels = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]], dtype=np.float32)
    weights = np.array([0.299, 0.587, 0.114], dtype=np.float32)
    demo("rgb_to_gray", "rgb_to_gray([red, green, white])", ex.rgb_to_gray(pixels),
         "rgb @ [0.299, 0.587, 0.114]", pixels @ weights)

    v = np.array([[1.0, 2.0, 2.0], [0.0, 3.0, 4.0]])
    demo("sq_norm3", "sq_norm3([[1, 2, 2], [0, 3, 4]])", ex.sq_norm3(v),
         "(v**2).sum(-1)", (v**2).sum(-1))

    point = np.array([0.0, 0.0])
    centroids = np.array([[3.0, 4.0], [1.0, 0.0], [-6.0, 8.0]])
    demo("centroid_distances", "centroid_distances([0, 0], [[3, 4], [1, 0], [-6, 8]])",
         ex.centroid_distances(point, centroids), "norm(centroids - point, axis=-1)",
         np.linalg.norm(centroids - point, axis=-1))

    points = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    pairwise = np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(-1))
    demo("pairwise_distances", "pairwise_distances([[0, 0], [3, 4], [6, 8]])",
         ex.pairwise_distances(points), "sqrt(((p[:,None]-p[None])**2).sum(-1))", pairwise)
    demo("condensed_distances", "condensed_distances(same points)",
         ex.condensed_distances(points), "the upper triangle of that matrix",
         pairwise[np.triu_indices(len(points), 1)])

    print(f"\n{sum(checks)} of {len(checks)} functions agree with NumPy.")


def best_ms(fn, repeat=5):
    fn()
    return min(timeit.repeat(fn, number=1, repeat=repeat)) * 1e3


def race(label, ours, theirs, numpy_label):
    """Time ufuncgen and NumPy alternately; print both and the speed-up."""
    t_ours, t_numpy = math.inf, math.inf
    for _ in range(3):
        t_ours = min(t_ours, best_ms(ours, 2))
        t_numpy = min(t_numpy, best_ms(theirs, 2))
    print(f"  {label:<40} ufuncgen {t_ours:8.2f} ms   NumPy {t_numpy:8.2f} ms   "
          f"{t_numpy / t_ours:5.2f}x  ({numpy_label})")


def speed_tour():
    n = 10_000_000
    print()
    print("=" * 78)
    print("Speed: ufuncgen against NumPy, one core, best of several runs")
    print("=" * 78)
    # NumPy runs on one core, so ufuncgen does too here; its default is every core
    # (benchmarks/threads.py measures that).
    threads = ufuncgen.get_num_threads()
    ufuncgen.set_num_threads(1)
    try:
        _speed_races(n)
    finally:
        ufuncgen.set_num_threads(threads)
    print("\n(> 1x: ufuncgen is faster.  benchmarks/host.py has the full comparison,"
          " with numexpr and Numba; benchmarks/threads.py uses every core.)")


def _speed_races(n):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32)
    mean = np.float32(0.5)
    sigma = np.float32(1.5)
    half, norm = np.float32(-0.5), np.float32(math.sqrt(2 * math.pi))

    def numpy_gaussian():
        z = (x - mean) / sigma
        return np.exp(half * z * z) / (sigma * norm)

    race("gaussian_pdf, 10M float32", lambda: ex.gaussian_pdf(x, mean, sigma),
         numpy_gaussian, "5 NumPy ufuncs, 4 temporaries")

    y = rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    race("add, 10M float32, out=", lambda: ex.add(x, y, out=out),
         lambda: np.add(x, y, out=out), "np.add: both are memory bound")

    points = rng.standard_normal((1000, 3))
    race("pairwise_distances, 1000 points in 3-D", lambda: ex.pairwise_distances(points),
         lambda: np.sqrt(((points[:, None, :] - points[None, :, :]) ** 2).sum(-1)),
         "broadcasting")


if __name__ == "__main__":
    functions_tour()
    speed_tour()
