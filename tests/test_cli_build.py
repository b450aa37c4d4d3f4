"""The user's workflow: write a signature file, `ufuncgen build` it, import the module.

Builds take seconds, so each module is built once per session (fixtures below) and the
tests share it. Built modules are imported in subprocesses, with the output directory on
sys.path, as a user's program would.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")

USER_FILE = """\
# A user's first signature file.

helper T clamp01(T v)
{
    return v < (T)0 ? (T)0 : (v > (T)1 ? (T)1 : v);
}

ufunc lerp(a, b, t) -> r
    doc: Linear interpolation a + (b - a) * t, with t clamped to [0, 1].
    types: float32(float32, float32, float32), float64(float64, float64, float64)
{
    r = a + (b - a) * clamp01(t);
}

ufunc wrapping_add(x, y) -> s
    doc: x + y, an identity of 0 so that reduce works on empty input.
    types: int64(int64, int64), float64(float64, float64)
    identity: 0
{
    s = x + y;
}

gufunc cross3(u, v) -> w
    doc: Cross product of 3-vectors.
    layout: (3),(3)->(3)
    types: float32(float32, float32), float64(float64, float64)
{
    w(0) = u(1) * v(2) - u(2) * v(1);
    w(1) = u(2) * v(0) - u(0) * v(2);
    w(2) = u(0) * v(1) - u(1) * v(0);
}

ufunc floor_divmod(x, y) -> (q, r)
    doc: Floor quotient and remainder, as numpy.divmod.
    types: (float64, float64)(float64, float64)
{
    q = floor(x / y);
    r = x - q * y;
}
"""

CHECKS = """
import numpy as np
rng = np.random.default_rng(0)

a, b = rng.standard_normal((2, 50))
t = np.linspace(-0.5, 1.5, 50)
np.testing.assert_allclose(m.lerp(a, b, t), a + (b - a) * np.clip(t, 0, 1), rtol=1e-15)
r32 = m.lerp(a.astype(np.float32), b.astype(np.float32), t.astype(np.float32))
assert r32.dtype == np.float32, r32.dtype
np.testing.assert_allclose(r32, a + (b - a) * np.clip(t, 0, 1), rtol=1e-5, atol=1e-6)

x = np.arange(-5, 7, dtype=np.int64)
assert m.wrapping_add(x, x).dtype == np.int64
assert np.array_equal(m.wrapping_add(x, 3), x + 3)
assert m.wrapping_add.reduce(x) == x.sum()
assert m.wrapping_add.reduce(np.array([], dtype=np.int64)) == 0
assert m.wrapping_add.identity == 0

u, v = rng.standard_normal((2, 4, 7, 3))
np.testing.assert_allclose(m.cross3(u, v), np.cross(u, v), rtol=1e-12, atol=1e-15)
np.testing.assert_allclose(m.cross3(u[..., ::-1].T, v.T, axes=[0, 0, 0]),
                           np.cross(u[..., ::-1], v).T, rtol=1e-12, atol=1e-15)
assert m.cross3(u.astype(np.float32), v.astype(np.float32)).dtype == np.float32
assert m.cross3.signature == "(3),(3)->(3)"
try:
    m.cross3(np.ones(4), np.ones(4))
except ValueError:
    pass
else:
    raise AssertionError("a core dimension of 4 where 3 is frozen was accepted")

x, y = rng.uniform(-10, 10, (2, 100))
q, r = m.floor_divmod(x, y)
nq, nr = np.divmod(x, y)
np.testing.assert_allclose(q, nq)
np.testing.assert_allclose(r, nr, atol=1e-12)
assert m.floor_divmod.nin == 2 and m.floor_divmod.nout == 2
print("checks passed")
"""


def _ufuncgen(*args: str, cwd: Path, via_python_m: bool = False) -> subprocess.CompletedProcess:
    # The `ufuncgen` script of the interpreter running the tests (beside it in a venv's bin/),
    # not whichever one PATH finds first: that may be another install's.
    command = Path(sys.executable).parent / "ufuncgen"
    argv = ([str(command)] if command.is_file() and not via_python_m
            else [sys.executable, "-m", "ufuncgen"])
    return subprocess.run([*argv, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _python(code: str, path: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def _built(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"ufuncgen failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="session")
def mymod(tmp_path_factory):
    """`ufuncgen build f.ufunc --name mymod -o out`, in a fresh directory: the directory."""
    work = tmp_path_factory.mktemp("user")
    (work / "f.ufunc").write_text(USER_FILE)
    result = _built(_ufuncgen("build", "f.ufunc", "--name", "mymod", "-o", "out", cwd=work))
    assert result.stdout.strip() == f"built {work / 'out' / ('mymod' + EXT_SUFFIX)}"
    return work


@pytest.fixture(scope="session")
def pkgmod(tmp_path_factory, compile_check_cuda_arch):
    """`python -m ufuncgen build f.ufunc --name pkg.mod -o out/pkg`: the directory holding out.
    Kernels for one GPU (mymod builds the default list): a dotted name reaches nvcc too."""
    work = tmp_path_factory.mktemp("package")
    (work / "f.ufunc").write_text(USER_FILE)
    (work / "out" / "pkg").mkdir(parents=True)
    (work / "out" / "pkg" / "__init__.py").write_text("")
    _built(_ufuncgen("build", "f.ufunc", "--name", "pkg.mod", "-o", "out/pkg",
                     "--cuda-arch", compile_check_cuda_arch, cwd=work, via_python_m=True))
    return work


# --------------------------------------------------------------------------- a working module

def test_a_built_module_lands_in_the_output_directory_with_its_stub(mymod):
    work = mymod
    assert (work / "out" / ("mymod" + EXT_SUFFIX)).is_file()
    assert (work / "out" / "mymod.pyi").is_file()


def test_a_built_module_imports_and_agrees_with_numpy(mymod):
    work = mymod
    result = _python("import mymod as m\n" + CHECKS, work / "out", cwd=work)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "checks passed"


def test_the_generated_stub_is_valid_python_and_declares_every_function(mymod):
    work = mymod
    stub = (work / "out" / "mymod.pyi").read_text()
    compile(stub, "mymod.pyi", "exec")
    for name in ("lerp", "wrapping_add", "cross3", "floor_divmod"):
        assert f"\n{name}: _Function_{name}\n" in stub
    assert stub.startswith("# mymod: generated by ufuncgen from f.ufunc.")


def test_docstrings_carry_the_users_doc_layout_types_and_source_line(mymod):
    work = mymod
    result = _python("""
        import mymod
        print(mymod.cross3.__doc__)
        print(mymod.cross3.__module__, mymod.cross3.__name__)
    """, work / "out", cwd=work)
    assert result.returncode == 0, result.stderr
    doc = result.stdout
    assert doc.startswith("cross3(u, v, /, out=None, *, axes=<no value>")
    assert "Cross product of 3-vectors." in doc
    assert "Layout: (3),(3)->(3)" in doc
    assert "    float32(float32, float32)\n    float64(float64, float64)" in doc
    assert "Generated by ufuncgen from f.ufunc:23 into mymod." in doc
    assert doc.rstrip().endswith("mymod cross3")


def test_a_dotted_name_gives_functions_that_name_their_package_module_and_pickle(pkgmod):
    result = _python("""
        import pickle
        import numpy as np
        import pkg.mod as m
        assert m.__name__ == "pkg.mod", m.__name__
        for f in (m.lerp, m.wrapping_add, m.cross3, m.floor_divmod):
            assert f.__module__ == "pkg.mod", f.__module__
            assert pickle.loads(pickle.dumps(f)) is f
        u = np.eye(3)
        assert np.array_equal(m.cross3(u[0], u[1]), u[2])
        print("ok")
    """, pkgmod / "out", cwd=pkgmod)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    assert (pkgmod / "out" / "pkg" / "mod.pyi").is_file()


def test_a_second_build_with_nothing_changed_rewrites_nothing(mymod):
    work = mymod
    generated = (work / "out" / ".ufuncgen-build" / "mymod" / "cmake" / "ufuncgen_mymod_generated"
                 / "mymod_module.c")
    extension = work / "out" / ("mymod" + EXT_SUFFIX)
    assert generated.is_file()
    before = {p: p.stat().st_mtime_ns for p in (generated, extension, work / "out" / "mymod.pyi")}
    _built(_ufuncgen("build", "f.ufunc", "--name", "mymod", "-o", "out", cwd=work))
    assert {p: p.stat().st_mtime_ns for p in before} == before



def _module_file(work: Path, name: str, *parts: str) -> Path:
    """A file of `name`'s CMake build folder under work/out."""
    return work / "out" / ".ufuncgen-build" / name / "cmake" / Path(*parts)


def test_an_edited_file_older_than_the_last_build_is_generated_again(tmp_path):
    """Generation follows content, not dates: a file edited back to a version kept with its
    date (cp -p, rsync -t, a tarball, a backup) is older than the last build's outputs, and
    make alone would keep the code of the last build."""
    source = tmp_path / "r.ufunc"
    first = "ufunc f(x) -> y\n    types: float64(float64)\n{ y = x + 1; }\n"
    build = ("build", "r.ufunc", "--name", "datemod", "-o", "out", "--cuda-arch", "none")
    source.write_text(first)
    _built(_ufuncgen(*build, cwd=tmp_path))
    long_ago = source.stat().st_mtime_ns - 3600 * 10**9
    source.write_text(first.replace("x + 1", "x + 2"))
    os.utime(source, ns=(long_ago, long_ago))
    _built(_ufuncgen(*build, cwd=tmp_path))
    result = _python("import datemod; print(datemod.f(1.0))", tmp_path / "out", cwd=tmp_path)
    assert result.stdout == "3.0\n", result.stderr


def test_a_rebuild_recompiles_only_the_generated_files_whose_text_changed(
        tmp_path, compile_check_cuda_arch):
    """A changed doc line changes the module's C (its docstrings), not the bodies or the
    kernels: those are neither rewritten nor compiled again by the C compiler.  nvcc, where it
    is found, lists the signature file in its dependency file (the files #line directives
    name), so it compiles the kernels again for the changed file; but not when nothing
    changed: it names the file by its full path, where a name relative to the source root,
    missing from the build folder, was out of date at every build."""
    source = tmp_path / "d.ufunc"
    text = "ufunc f(x) -> y\n    doc: One.\n    types: float64(float64)\n{ y = x + 1; }\n"
    build = ("build", "d.ufunc", "--name", "docmod", "-o", "out",
             "--cuda-arch", compile_check_cuda_arch)
    source.write_text(text)
    _built(_ufuncgen(*build, cwd=tmp_path))
    generated = "ufuncgen_docmod_generated"         # the CMake target's folder
    kept = [_module_file(tmp_path, "docmod", generated, f"docmod_{name}")
            for name in ("bodies.h", "kernels.cu", "kernels_sim.c")]
    objects = _module_file(tmp_path, "docmod", "CMakeFiles", "ufuncgen_docmod.dir", generated)
    kept.append(objects / "docmod_kernels_sim.c.o")
    nvcc_objects = [objects / name for name in ("docmod_kernels.cu.o",
                                                "docmod_kernels_fastmath.cu.o")
                    if (objects / name).exists()]       # where nvcc is found
    if nvcc_objects:
        from ufuncgen.build import find_cmake
        compiled = {p: p.stat().st_mtime_ns for p in nvcc_objects}
        # CMake's build step itself (`ufuncgen build` would return at once: its stamp matches)
        subprocess.run([find_cmake(), "--build", str(_module_file(tmp_path, "docmod"))],
                       check=True, capture_output=True)
        assert {p: p.stat().st_mtime_ns for p in nvcc_objects} == compiled
    module_c = _module_file(tmp_path, "docmod", generated, "docmod_module.c")
    before = {p: p.stat().st_mtime_ns for p in kept + [module_c]}
    source.write_text(text.replace("One.", "Two."))
    _built(_ufuncgen(*build, cwd=tmp_path))
    assert {p: p.stat().st_mtime_ns for p in kept} == {p: before[p] for p in kept}
    assert module_c.stat().st_mtime_ns != before[module_c]
    result = _python("import docmod; print(docmod.f.__doc__.split(chr(10))[2])",
                     tmp_path / "out", cwd=tmp_path)
    assert result.stdout == "Two.\n", result.stderr

HELPERS_IN_ANY_ORDER = """\
# `scaled` calls `offset`, defined after it; `collatz_steps` and `collatz_next` call each other.
helper T scaled(T v)
{
    return offset(v * (T)2);
}

helper T offset(T v)
{
    return v + (T)1;
}

helper int64_t collatz_steps(T v, int64_t steps)
{
    return v <= (T)1 ? steps : collatz_next(v, steps + 1);
}

helper int64_t collatz_next(T v, int64_t steps)
{
    return collatz_steps(v % (T)2 == (T)0 ? v / (T)2 : (T)3 * v + (T)1, steps);
}

ufunc twice_plus_one(x) -> y
    types: float32(float32), float64(float64)
{
    y = scaled(x);
}

ufunc collatz(n) -> steps
    types: int64(uint64)
{
    steps = collatz_steps(n, 0);
}
"""


def test_helpers_call_each_other_whatever_their_order_in_the_file(tmp_path):
    (tmp_path / "order.ufunc").write_text(HELPERS_IN_ANY_ORDER)
    # One CUDA architecture where nvcc is found: the device declarations compile too.
    _built(_ufuncgen("build", "order.ufunc", "--name", "ordermod", "-o", "out",
                     "--cuda-arch", "75-real", cwd=tmp_path))
    result = _python("""
        import numpy as np
        import ordermod as m
        x = np.array([0.5, -2.0, 3.0])
        assert np.array_equal(m.twice_plus_one(x), 2 * x + 1)
        assert m.twice_plus_one(x.astype(np.float32)).dtype == np.float32
        assert m.collatz(np.array([1, 6, 27], dtype=np.uint64)).tolist() == [0, 8, 111]
        print("ok")
    """, tmp_path / "out", cwd=tmp_path)
    assert (result.returncode, result.stdout.strip()) == (0, "ok"), result.stderr


# --------------------------------------------------------------------------- failures

BAD_BODY = """\
# A typo in a body: the C compiler finds it.
ufunc scale(x, k) -> y
    types: float64(float64, float64)
{
    const T twice = 2 * x;
    y = twice * kk;
}
"""


def test_a_c_error_in_a_body_is_reported_at_the_users_line_without_a_traceback(tmp_path):
    (tmp_path / "bad.ufunc").write_text(BAD_BODY)
    result = _ufuncgen("build", "bad.ufunc", "--name", "badmod", "-o", str(tmp_path / "out"),
                       cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if ": error:" in line]
    assert errors and errors[0].startswith("bad.ufunc:6:"), result.stderr
    assert "kk" in errors[0]
    assert result.stderr.rstrip().splitlines()[-1].startswith("ufuncgen: error: ")
    assert not (tmp_path / "out" / ("badmod" + EXT_SUFFIX)).exists()


def test_a_c_error_in_a_file_outside_the_current_folder_is_reported_at_its_line(tmp_path):
    """`../bad.ufunc`: CMake hands the generator absolute paths, so the file is shown whole
    there; its errors were then in none of the signature files, without line or caret."""
    (tmp_path / "bad.ufunc").write_text(BAD_BODY)
    (tmp_path / "sub").mkdir()
    result = _ufuncgen("build", "../bad.ufunc", "--name", "badmod", "-o", "out", "--cuda-arch",
                       "none", cwd=tmp_path / "sub")
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if ": error:" in line]
    assert errors and errors[0].startswith(f"{tmp_path / 'bad.ufunc'}:6:"), result.stderr
    assert "failed at the lines above" in result.stderr, result.stderr


@pytest.mark.parametrize("name", ["clean", "install", "all"])
def test_a_module_may_be_named_like_a_target_cmake_reserves(name, tmp_path):
    (tmp_path / "f.ufunc").write_text("ufunc twice(x) -> y\n    types: float64(float64)\n"
                                      "{ y = 2 * x; }\n")
    _built(_ufuncgen("build", "f.ufunc", "--name", name, "-o", "out", "--cuda-arch", "none",
                     cwd=tmp_path))
    result = _python(f"import {name}; print({name}.twice(2.5))", tmp_path / "out", tmp_path)
    assert result.stdout == "5.0\n", result.stderr


def test_two_modules_of_one_last_name_in_one_cmake_project_stay_two(tmp_path):
    """pkg.a._ufuncs and pkg.b._ufuncs were built into one file, the last built installed as
    both (with Makefiles; Ninja refused the project)."""
    from ufuncgen.build import find_cmake
    (tmp_path / "CMakeLists.txt").write_text(textwrap.dedent("""\
        cmake_minimum_required(VERSION 3.19...3.31)
        project(pk LANGUAGES C)
        find_package(Python REQUIRED COMPONENTS Interpreter Development.Module NumPy)
        execute_process(COMMAND "${Python_EXECUTABLE}" -m ufuncgen cmake-dir
                        OUTPUT_VARIABLE UFUNCGEN_CMAKE_DIR OUTPUT_STRIP_TRAILING_WHITESPACE
                        COMMAND_ERROR_IS_FATAL ANY)
        include("${UFUNCGEN_CMAKE_DIR}/ufuncgen.cmake")
        ufuncgen_add_module(pk_a MODULE pk.a._ufuncs SIGNATURES a.ufunc)
        ufuncgen_add_module(pk_b MODULE pk.b._ufuncs SIGNATURES b.ufunc)
        install(TARGETS pk_a LIBRARY DESTINATION pk/a)
        install(TARGETS pk_b LIBRARY DESTINATION pk/b)
        """))
    for part, add in (("a", 1), ("b", 2)):
        (tmp_path / f"{part}.ufunc").write_text(
            f"ufunc f{part}(x) -> y\n    types: float64(float64)\n{{ y = x + {add}; }}\n")
    cmake = find_cmake()
    for command in ([cmake, "-S", ".", "-B", "build", "-DUFUNCGEN_CUDA=OFF",
                     f"-DPython_EXECUTABLE={sys.executable}"],
                    [cmake, "--build", "build", "--parallel"],
                    [cmake, "--install", "build", "--prefix", "inst"]):
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    for part in ("", "/a", "/b"):
        (tmp_path / f"inst/pk{part}/__init__.py").touch()
    result = _python("import pk.a._ufuncs as a, pk.b._ufuncs as b; print(a.fa(1.0), b.fb(1.0))",
                     tmp_path / "inst", tmp_path)
    assert result.stdout == "2.0 3.0\n", result.stderr


@pytest.mark.skipif(__import__("shutil").which("clang") is None, reason="no clang on PATH")
def test_clang_builds_a_module_of_floats_halves_and_complex_numbers(tmp_path):
    """glibc defines CMPLX for GCC only, and Clang before 16 knows no "f16c" CPU feature: every
    build failed in ufuncgen's own headers under CC=clang."""
    (tmp_path / "f.ufunc").write_text(
        "ufunc grow(x) -> y\n    types: float64(float64), float16(float16), "
        "complex128(complex128)\n{\n    y = 2 * x + exp(x);\n}\n")
    env = dict(os.environ, CC="clang")
    command = [sys.executable, "-m", "ufuncgen", "build", "f.ufunc", "--name", "clmod", "-o",
               "out", "--cuda-arch", "none"]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    result = _python("""
        import numpy as np, clmod
        for dt in (np.float64, np.complex128):
            x = np.linspace(-2, 2, 101).astype(dt)
            assert np.allclose(clmod.grow(x), 2 * x + np.exp(x), rtol=1e-14), dt
        h = np.linspace(-2, 2, 101).astype(np.float16)
        wide = h.astype(np.float32)         # float16 computes in float32, rounding once
        want = (2 * wide + np.exp(wide)).astype(np.float16).astype(np.float32)
        assert np.allclose(clmod.grow(h).astype(np.float32), want, rtol=2e-3, atol=2e-3)
        print("ok")
        """, tmp_path / "out", tmp_path)
    assert result.stdout == "ok\n", result.stderr


def _stale_note(out: Path, name: str) -> str:
    return (f"ufuncgen: note: removed {out / (name + EXT_SUFFIX)} and {out / (name + '.pyi')}, "
            "left by an earlier build: they no longer match the files, and importing them "
            "would run the old code")


def test_a_failed_rebuild_removes_the_module_an_earlier_build_left_and_says_so(tmp_path):
    good = "ufunc sq(x) -> y\n    types: float64(float64)\n{\n    y = x * x;\n}\n"
    (tmp_path / "f.ufunc").write_text(good)
    build = ("build", "f.ufunc", "--name", "stale", "-o", "out", "--cuda-arch", "none")
    _built(_ufuncgen(*build, cwd=tmp_path))
    out = tmp_path / "out"
    assert _python("import stale; print(stale.sq(3.0))", out, cwd=tmp_path).stdout == "9.0\n"

    # An argument refused before anything runs leaves the module alone.
    assert _ufuncgen(*build[:-1], "bogus", cwd=tmp_path).returncode == 2
    assert (out / ("stale" + EXT_SUFFIX)).is_file()

    (tmp_path / "f.ufunc").write_text(good.replace("x * x", "x * x + undefined_name"))
    result = _ufuncgen(*build, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-2].startswith("ufuncgen: error: compiling the generated code")
    assert result.stderr.splitlines()[-1] == _stale_note(out, "stale")
    assert sorted(p.name for p in out.iterdir()) == [".ufuncgen-build"]
    imported = _python("import stale", out, cwd=tmp_path)
    assert "ModuleNotFoundError: No module named 'stale'" in imported.stderr


def test_a_rebuild_stopped_by_a_bad_signature_file_removes_the_earlier_module_too(tmp_path):
    good = "ufunc sq(x) -> y\n    types: float64(float64)\n{\n    y = x * x;\n}\n"
    (tmp_path / "f.ufunc").write_text(good)
    build = ("build", "f.ufunc", "--name", "stale", "-o", "out", "--cuda-arch", "none")
    _built(_ufuncgen(*build, cwd=tmp_path))
    (tmp_path / "f.ufunc").write_text(good.replace("float64(float64)", "float64(float46)"))
    result = _ufuncgen(*build, cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.splitlines()[-2:] == ["1 error generated.",
                                               _stale_note(tmp_path / "out", "stale")]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".ufuncgen-build"]
    # The file fixed: built again, though the stamp of the first build matches it.
    (tmp_path / "f.ufunc").write_text(good)
    assert _built(_ufuncgen(*build, cwd=tmp_path)).stdout.startswith("built ")
    assert _python("import stale; print(stale.sq(4.0))", tmp_path / "out", cwd=tmp_path).stdout == "16.0\n"


def test_a_bad_signature_file_stops_the_build_with_the_checkers_messages_only(tmp_path):
    (tmp_path / "bad.ufunc").write_text(BAD_BODY.replace("float64(float64, float64)",
                                                         "float64(float64, float46)"))
    result = _ufuncgen("build", "bad.ufunc", "--name", "badmod", "-o", "out", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("bad.ufunc:3:29: error: unknown type 'float46'; expected one of ")
    assert result.stderr.endswith("\n1 error generated.\n")
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()     # CMake never ran


def test_check_accepts_a_good_file_and_counts_its_functions(tmp_path):
    (tmp_path / "f.ufunc").write_text(USER_FILE)
    result = _ufuncgen("check", "f.ufunc", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "ok: 4 functions\n", "")


def test_cmake_dir_prints_where_ufuncgen_cmake_is(tmp_path):
    result = _ufuncgen("cmake-dir", cwd=tmp_path)
    assert result.returncode == 0
    assert (Path(result.stdout.strip()) / "ufuncgen.cmake").is_file()


IDENTIFIER = "not an ASCII Python identifier (letters, digits and '_', not starting with a digit)"
SHADOWS_STDLIB = ("would shadow the standard library's module {!r} for every import from the "
                  "module's folder (NumPy's own imports included)")
BAD_NAMES = {
    "my-mod": "it is " + IDENTIFIER,
    "my mod": "it is " + IDENTIFIER,
    "": "it is empty",
    "x.": "it has an empty part (a leading, trailing or doubled '.')",
    "a/b": "it is " + IDENTIFIER,
    "gr\u00f6\u00dfe": "it is " + IDENTIFIER,
    "1abc": "it is " + IDENTIFIER,
    "pkg.1abc": "its part '1abc' is " + IDENTIFIER,
    "class": "it is a Python keyword, which an import statement cannot name",
    "numpy": "it would shadow NumPy, which the module imports",
    "ufuncgen": "it would shadow ufuncgen, which the module imports",
    "ml_dtypes": "it would shadow ml_dtypes, which a module with bfloat16 loops imports",
    "os": "it " + SHADOWS_STDLIB.format("os"),
    "sys": "it " + SHADOWS_STDLIB.format("sys"),
    "json.fast": "its package 'json' " + SHADOWS_STDLIB.format("json"),
}


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_name_that_cannot_name_a_module_is_a_usage_error_naming_it_and_why(name, tmp_path,
                                                                           monkeypatch, capsys):
    from ufuncgen import cli
    (tmp_path / "f.ufunc").write_text(USER_FILE)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit:
        cli.main(["build", "f.ufunc", "--name", name, "-o", "out"])
    err = capsys.readouterr().err
    assert exit.value.code == 2
    assert err.splitlines()[-1] == (f"ufuncgen build: error: argument --name: {name!r} is not "
                                    f"a usable module name: {BAD_NAMES[name]}")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["os", "my-mod"])
def test_the_generator_refuses_the_same_module_names(name, tmp_path):
    (tmp_path / "f.ufunc").write_text(USER_FILE)
    result = subprocess.run([sys.executable, "-m", "ufuncgen.gen", "--module", name, "-o", "out",
                             "f.ufunc"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"python -m ufuncgen.gen: error: argument --module: {name!r} is not a usable module "
        f"name: {BAD_NAMES[name]}")
    assert not (tmp_path / "out").exists()


def test_the_generator_accepts_the_module_ufuncgen_ships(tmp_path):
    examples = Path(__file__).resolve().parent.parent / "signatures" / "examples.ufunc"
    result = subprocess.run([sys.executable, "-m", "ufuncgen.gen", "--module", "ufuncgen.examples",
                             "-o", str(tmp_path), str(examples)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "examples_module.c").is_file()


def test_a_numpy_shadowing_name_is_refused_by_the_real_command_too(tmp_path):
    (tmp_path / "f.ufunc").write_text(USER_FILE)
    result = _ufuncgen("build", "f.ufunc", "--name", "numpy", "-o", ".", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == ("ufuncgen build: error: argument --name: 'numpy' "
                                              "is not a usable module name: " + BAD_NAMES["numpy"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.ufunc"]


@pytest.mark.parametrize("options, message", [
    (["-o", "afile"], "output directory 'afile' exists and is not a directory"),
    (["-o", "afile/sub"], "output directory 'afile/sub' cannot be created: '{afile}' exists and "
                          "is not a directory"),
    (["-o", "out", "--build-dir", "afile"], "build directory 'afile' exists and is not a directory"),
])
def test_an_output_or_build_directory_that_is_a_file_is_an_error_naming_it(
        options, message, tmp_path, monkeypatch, capsys):
    from ufuncgen import cli
    (tmp_path / "f.ufunc").write_text(USER_FILE)
    (tmp_path / "afile").write_text("mine")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["build", "f.ufunc", "--name", "mymod", *options]) == 1
    assert capsys.readouterr().err == "ufuncgen: error: " + message.format(afile=tmp_path / "afile") + "\n"
    assert (tmp_path / "afile").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "f.ufunc"]


def test_the_generator_given_a_file_for_its_output_directory_says_so(tmp_path):
    (tmp_path / "f.ufunc").write_text(USER_FILE)
    (tmp_path / "afile").write_text("mine")
    result = subprocess.run([sys.executable, "-m", "ufuncgen.gen", "--module", "mymod", "-o",
                             "afile", "f.ufunc"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stderr) == (
        1, "python -m ufuncgen.gen: error: output directory 'afile' exists and is not a directory\n")


UNSAFE_LIST = ': ; " \\ % [ ] < > | $( ${ or control characters'


@pytest.mark.parametrize("folder, character", [
    ("a:b", ":"), ("a;b", ";"), ('a"b', '"'), ("a\\b", "\\"), ("a%b", "%"), ("a[b", "["),
    ("a]b", "]"), ("a<b", "<"), ("a>b", ">"), ("a|b", "|"), ("a$(x)b", "$("), ("a${x}b", "${"),
    ("a\tb", "\t"), ("a\nb", "\n"),
])
def test_a_path_with_a_character_cmake_or_make_cannot_take_is_refused_naming_it(
        folder, character, tmp_path, monkeypatch, capsys):
    from ufuncgen import cli
    (tmp_path / "f.ufunc").write_text(USER_FILE)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["build", "f.ufunc", "--name", "mymod", "-o", folder]) == 1
    assert capsys.readouterr().err == (
        f"ufuncgen: error: output directory {folder!r} has {character!r} in its path, which "
        f"CMake and make cannot handle (nor {UNSAFE_LIST}): rename or move it\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.ufunc"]


def test_a_signature_file_in_such_a_folder_is_named_by_its_full_path(tmp_path, monkeypatch, capsys):
    from ufuncgen import cli
    work = tmp_path / "my:work"
    work.mkdir()
    (work / "f.ufunc").write_text(USER_FILE)
    monkeypatch.chdir(work)
    assert cli.main(["build", "f.ufunc", "--name", "mymod", "-o", str(tmp_path / "out"),
                     "--build-dir", str(tmp_path / "build")]) == 1
    assert capsys.readouterr().err.startswith(
        f"ufuncgen: error: signature file {str(work / 'f.ufunc')!r} has ':' in its path")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my:work"]


def test_spaces_hashes_dollars_quotes_and_stars_in_every_path_build_and_import(tmp_path):
    """What make and CMake take in a path: the signature file's folder (`a*` and the file
    make `*/`, which must not end the generated files' banner comments), the output and the
    build directories.  One CUDA architecture where nvcc is found: it compiles there too."""
    source = tmp_path / "src dir #1 $x 'q' a*"
    source.mkdir()
    (source / "f.ufunc").write_text(USER_FILE)
    result = _built(_ufuncgen("build", f"{source.name}/f.ufunc", "--name", "mymod", "-o",
                              "out dir #2 $y", "--build-dir", "build dir #3 & (z)",
                              "--cuda-arch", "75-real", cwd=tmp_path))
    out = tmp_path / "out dir #2 $y"
    assert result.stdout.strip() == f"built {out / ('mymod' + EXT_SUFFIX)}"
    imported = _python("import mymod as m\n" + CHECKS, out, cwd=tmp_path)
    assert (imported.returncode, imported.stdout.strip()) == (0, "checks passed"), imported.stderr


@pytest.mark.parametrize("cuda_arch", ["91x", "90,", "sm_90", ""])
def test_a_misspelt_cuda_arch_is_a_usage_error_naming_it(cuda_arch, tmp_path):
    (tmp_path / "f.ufunc").write_text(USER_FILE)
    result = _ufuncgen("build", "f.ufunc", "--name", "m", "-o", "out", "--cuda-arch", cuda_arch,
                       cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "ufuncgen build: error: argument --cuda-arch: expected 'none', 'native' or compute "
        f"capabilities such as 90 or 75,80; got {cuda_arch!r}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.ufunc"]


def test_build_without_a_name_is_a_usage_error(tmp_path):
    result = _ufuncgen("build", "f.ufunc", cwd=tmp_path)
    assert result.returncode == 2
    assert "--name" in result.stderr and "Traceback" not in result.stderr


# --------------------------------------------------------------------------- CMake's cache

def _configure_commands(monkeypatch, tmp_path, builds) -> list[list[str]]:
    """The CMake configure command of each build in `builds` ((cuda_arch, threads, sanitize
    environment) each), run one after the other in one build folder; CMake itself is not
    run."""
    from ufuncgen import build as build_module

    class Stop(Exception):
        pass
    commands = []

    def configure_only(command, **kwargs):
        commands.append(command)
        raise Stop
    (tmp_path / "f.ufunc").write_text(USER_FILE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(build_module.subprocess, "run", configure_only)
    for cuda_arch, threads, sanitize in builds:
        if sanitize:
            monkeypatch.setenv("UFUNCGEN_SANITIZE", "1")
        else:
            monkeypatch.delenv("UFUNCGEN_SANITIZE", raising=False)
        with pytest.raises(Stop):
            build_module.build(["f.ufunc"], "cachemod", "out", cuda_arch=cuda_arch,
                               threads=threads)
    return commands


def _settings(command: list[str]) -> dict[str, str | None]:
    """-DNAME=VALUE as NAME: VALUE and -UNAME as NAME: None."""
    settings = {}
    for word in command:
        if word.startswith("-D"):
            name, _, value = word[2:].partition("=")
            settings[name] = value
        elif word.startswith("-U"):
            settings[word[2:]] = None
    return settings


def test_every_configure_says_every_setting_so_that_none_sticks_from_an_earlier_build(
        monkeypatch, tmp_path):
    """CMake keeps each -D in the build folder's cache: a host-only or sanitized build's
    settings would otherwise stay for the builds after it in the same folder."""
    commands = _configure_commands(monkeypatch, tmp_path, [
        ("none", False, True), ("90", True, False), (None, True, False), ("native", False, False),
        ("none", True, False)])
    settings = [_settings(c) for c in commands]
    assert [sorted(s) for s in settings] == [sorted(settings[0])] * len(settings)
    assert [(s["UFUNCGEN_CUDA"], s["CMAKE_CUDA_ARCHITECTURES"], s["UFUNCGEN_SANITIZE"],
             s["UFUNCGEN_THREADS"]) for s in settings] == [
        ("OFF", None, "ON", "OFF"),      # sanitized: never nvcc
        (None, "90", "OFF", "ON"),       # None: decided again (on when nvcc is found)
        (None, None, "OFF", "ON"),       # None: ufuncgen.cmake's default list
        (None, "native", "OFF", "OFF"),
        ("OFF", None, "OFF", "ON"),
    ]
    assert all(s["CMAKE_BUILD_TYPE"] == "Release" and s["Python_EXECUTABLE"] == sys.executable
               for s in settings)


def test_a_plain_build_after_a_sanitized_one_in_the_same_folder_imports(tmp_path):
    """The sanitized build's ASan once stayed in the cache: the next module's import then
    killed the interpreter ("ASan runtime does not come first")."""
    (tmp_path / "f.ufunc").write_text("ufunc f(x) -> y\n    types: float64(float64)\n"
                                      "{ y = x + 1; }\n")
    build = ("build", "f.ufunc", "--name", "sanmod", "-o", "out", "--cuda-arch", "none")
    sanitized = subprocess.run([sys.executable, "-m", "ufuncgen", *build], cwd=tmp_path,
                               env=dict(os.environ, UFUNCGEN_SANITIZE="1"), capture_output=True,
                               text=True, timeout=300)
    if sanitized.returncode != 0:
        pytest.skip(f"no sanitizer build here:\n{sanitized.stderr}")
    _built(_ufuncgen(*build, cwd=tmp_path))
    result = _python("import sanmod; print(sanmod.f(1.0))", tmp_path / "out", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "2.0\n"), result.stderr
    cache = _module_file(tmp_path, "sanmod", "CMakeCache.txt").read_text()
    assert "UFUNCGEN_SANITIZE:BOOL=OFF" in cache and "UFUNCGEN_CUDA:BOOL=OFF" in cache


def test_a_changed_compiler_configures_the_build_folder_afresh(monkeypatch, tmp_path):
    """CMake reads $CC (and the compilers on PATH) only at a folder's first configure."""
    from ufuncgen import build as build_module
    _configure_commands(monkeypatch, tmp_path, [("none", True, False)])
    binary_dir = tmp_path / "out" / ".ufuncgen-build" / "cachemod" / "cmake"
    (binary_dir / "CMakeCache.txt").write_text("CMAKE_C_COMPILER:FILEPATH=/old/cc\n")
    build_module._forget_configuration_if_tools_changed(str(binary_dir))
    assert (binary_dir / "CMakeCache.txt").exists()          # nothing changed: kept
    monkeypatch.setenv("CC", "clang")
    build_module._forget_configuration_if_tools_changed(str(binary_dir))
    assert not (binary_dir / "CMakeCache.txt").exists()
