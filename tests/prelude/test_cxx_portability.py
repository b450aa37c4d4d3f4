"""One body, one meaning across C and C++: what C accepts and nvcc's C++ would refuse, or
read otherwise, gets one meaning in both (the prelude's C++ branch: `restrict`, `_Bool`,
`_Static_assert`; complex64_t and complex128_t), or is refused in both (tests/golden and
tests/golden/build_errors hold the host's messages).  The C++ side is checked with g++ as
test_agreement.py checks it, and with nvcc -ptx where the CUDA toolkit is present."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

from ufuncgen import device

from .test_agreement import GXX, NVCC, _generated_kernels, _include_dir, _nvcc_ptx

# The portable spellings the README gives, and the goto idiom with its declaration first.
SOURCE = """\
helper T dot2(const T *restrict a, const T *restrict b)
{
    _Static_assert(sizeof(T) >= 4, "a float or wider");
    return a[0] * b[0] + a[1] * b[1];
}

ufunc phasor_sum(theta) -> z
    types: complex128(float64), complex64(float32)
{
    complex128_t acc = 0;
    complex64_t unit = I;
    for (int k = 1; k <= 3; k++) acc += exp(unit * (T)k * theta);
    z = acc;
}

ufunc norm2(z) -> y
    types: float64(complex128), float32(complex64)
{
    y = real(z * conj(z));
}

ufunc widened_select(z, x) -> y
    types: complex128(complex64, float64)
{
    y = x < 0 ? (complex128_t)z : x;
}

ufunc safe_sqrt2(x) -> y
    types: float64(float64), float32(float32)
{
    T t;
    _Bool negative = x < 0;
    if (negative) {
        y = 0;
        goto done;
    }
    t = sqrt(x);
    {
        const T pair[2] = {t, t};
        y = dot2(pair, pair) / (T)2 + t;
    }
done:;
}
"""


@pytest.fixture(scope="module")
def portable(tmp_path_factory, module_importer):
    return module_importer(tmp_path_factory.mktemp("portable"), "ufg_cxx_portable", SOURCE,
                           "--cuda-arch", "none")


def _on_host_and_device(fn, *arrays, rtol=0.0):
    """fn's host result, checked against the device path's (the simulator here); `rtol` for
    vector math, which the simulator's scalar loops call as libm."""
    host = fn(*arrays)
    on_device = fn(*[device.to_device(np.ascontiguousarray(a)) for a in arrays]).copy_to_host()
    np.testing.assert_allclose(on_device, host, rtol=rtol, atol=0)
    return host


def test_the_portable_spellings_build_and_mean_the_same_on_the_host_and_the_device(portable):
    theta = np.array([0.0, 0.5, -1.25, np.pi, 3.0])
    got = _on_host_and_device(portable.phasor_sum, theta, rtol=1e-14)
    np.testing.assert_allclose(got, sum(np.exp(1j * k * theta) for k in (1, 2, 3)), rtol=1e-13)
    z = np.array([3 + 4j, -1j, 0.5 - 2j], np.complex64)
    np.testing.assert_array_equal(_on_host_and_device(portable.norm2, z),
                                  (z * z.conj()).real)
    x = np.array([-1.0, 2.0, np.pi, -1e300])
    got = _on_host_and_device(portable.widened_select, np.full(4, 1 + 2j, np.complex64), x)
    # C's type: complex128, so x is not rounded to float (pi stays pi, 1e300 finite).
    np.testing.assert_array_equal(got, np.where(x < 0, 1 + 2j, x).astype(np.complex128))
    x = np.array([-4.0, 0.0, 4.0, 9.0])
    np.testing.assert_array_equal(_on_host_and_device(portable.safe_sqrt2, x),
                                  np.where(x < 0, 0, np.abs(x) + np.sqrt(np.abs(x))))


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit)")
def test_nvcc_compiles_the_portable_spellings(portable, tmp_path):
    ptx = _nvcc_ptx(_generated_kernels(portable), tmp_path)
    for name in ("phasor_sum", "norm2", "widened_select", "safe_sqrt2"):
        assert f"ufg_kernel_{name}_" in ptx


CONDITIONALS = """\
#include <stdint.h>
#include <math.h>
#include <type_traits>
#include <utility>
#define UFG_CONSTANT_T double
#include "ufuncgen/prelude.h"
template <class A, class B, class = void> struct compiles : std::false_type {};
template <class A, class B>
struct compiles<A, B, decltype(void(true ? std::declval<A>() : std::declval<B>()))>
    : std::true_type {};
template <class A, class B> using type_of = decltype(true ? std::declval<A>() : std::declval<B>());
/* C's type complex128, which C++ cannot give: refused, not narrowed to complex64. */
static_assert(!compiles<complex64_t, double>::value, "z64 : double");
static_assert(!compiles<double, complex64_t>::value, "double : z64");
static_assert(!compiles<complex64_t, complex128_t>::value, "z64 : w128");
static_assert(!compiles<complex128_t, complex64_t>::value, "w128 : z64");
/* C's type, which C++ gives too. */
static_assert(std::is_same<type_of<complex64_t, float>, complex64_t>::value, "z64 : float");
static_assert(std::is_same<type_of<complex64_t, int>, complex64_t>::value, "z64 : int");
static_assert(std::is_same<type_of<complex64_t, int64_t>, complex64_t>::value, "z64 : int64");
static_assert(std::is_same<type_of<complex128_t, float>, complex128_t>::value, "w128 : float");
static_assert(std::is_same<type_of<complex128_t, double>, complex128_t>::value, "w128 : double");
static_assert(std::is_same<type_of<complex128_t, int64_t>, complex128_t>::value, "w128 : int64");
/* Never a real value implicitly; the cast is the real part, as in C. */
static_assert(!std::is_convertible<complex64_t, double>::value, "");
static_assert(!std::is_convertible<complex64_t, float>::value, "");
static_assert(!std::is_convertible<complex128_t, double>::value, "");
double parts(complex64_t z, complex128_t w, double x)
{
    complex64_t n = x;           /* narrowing a declaration or an assignment still compiles */
    n = w;
    _Bool b = (bool)z;
    _Static_assert(sizeof(complex128_t) == 16, "two doubles");
    double *restrict p = &x;
    return (double)z + (float)z + (int)w + real(n) + b + *p;
}
"""


@pytest.mark.skipif(GXX is None, reason="needs g++")
def test_cplusplus_gives_a_complex_conditional_cs_type_or_refuses_it(tmp_path):
    source = tmp_path / "conditionals.cpp"
    source.write_text(CONDITIONALS)
    result = subprocess.run([GXX, "-std=c++17", "-fsyntax-only", "-Wall", "-Wno-unused",
                             f"-I{_include_dir()}", str(source)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit)")
def test_nvcc_gives_a_complex_conditional_cs_type_or_refuses_it(tmp_path):
    source = tmp_path / "conditionals.cu"
    source.write_text(CONDITIONALS.replace("double parts(", "__device__ double parts("))
    result = subprocess.run([str(NVCC), "-std=c++17", "-ptx", "-arch=compute_90",
                             f"-I{_include_dir()}", str(source), "-o", str(tmp_path / "c.ptx")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
