"""`ufuncgen build` shows the compilers' messages about a body at the user's line, with the
source line and a caret, as `ufuncgen check` shows its own: gcc's warnings of a build that
succeeds (without -v), and nvcc's `file(line): error:` rewritten as `file:line:col: error:`.

The first tests feed captured compiler output to the filter; the others run real builds
(one CUDA architecture when nvcc is present, --cuda-arch 75-real, to keep them short).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from ufuncgen.build_diagnostics import error_summary, user_diagnostics
from ufuncgen.gen.diagnostics import DiagnosticSink
from ufuncgen.gen.model import build_module
from ufuncgen.gen.parse import parse_text

EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
NVCC = shutil.which("nvcc") or (shutil.which("nvcc", path="/usr/local/cuda/bin"))
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit) to compile "
                                                     "the device kernels")

SOURCE = """\
ufunc half_square(x) -> y
    types: float32(float32)
{
    y = pow(x, 2) * 0.5;
}

ufunc magnitude(k) -> y
    types: int32(int32)
{
    int unused = 3;
    y = fabs(k);
}
"""
LINES = {"f.ufunc": SOURCE.split("\n")}


def _module():
    sink = DiagnosticSink("f.ufunc", [])
    return build_module("m", [(parse_text("f.ufunc", SOURCE, sink), sink, "f.ufunc")])


# Output as gcc 12 and nvcc 13 print it in a CMake build (abridged).
GCC_OUTPUT = """\
[ 40%] Building C object CMakeFiles/m.dir/m_generated/m_module.c.o
In file included from /tmp/b/m_generated/m_module.c:13:
f.ufunc: In function \u2018ufg_body_half_square_float32\u2019:
f.ufunc:4:9: warning: conversion from \u2018double\u2019 to \u2018float\u2019 may change value [-Wfloat-conversion]
f.ufunc: In function \u2018ufg_body_magnitude_int32\u2019:
f.ufunc:10:9: warning: unused variable \u2018unused\u2019 [-Wunused-variable]
/tmp/b/m_generated/m_module.c:40:5: warning: something in generated code
[ 80%] Building C object CMakeFiles/m.dir/m_generated/m_kernels_sim.c.o
f.ufunc: In function \u2018ufg_body_magnitude_int32\u2019:
f.ufunc:10:9: warning: unused variable \u2018unused\u2019 [-Wunused-variable]
"""
NVCC_OUTPUT = """\
f.ufunc(11): error: calling a constexpr __host__ function("fabs") from a __device__ function("ufg_body_magnitude_int32") is not allowed.
      y = fabs(k);
          ^

f.ufunc(10): warning #177-D: variable "unused" was declared but never referenced
      int unused = 3;
          ^

Remark: The warnings can be suppressed with "-diag-suppress <warning-number>"

1 error detected in the compilation of "/tmp/b/m_generated/m_kernels.cu".
"""


def test_gcc_warnings_in_a_signature_file_are_kept_once_each_with_source_line_and_caret():
    assert user_diagnostics(GCC_OUTPUT, LINES, _module()) == [
        "f.ufunc:4:9: warning: conversion from \u2018double\u2019 to \u2018float\u2019 may change "
        "value [-Wfloat-conversion]\n"
        "        y = pow(x, 2) * 0.5;\n"
        "            ^",
        "f.ufunc:10:9: warning: unused variable \u2018unused\u2019 [-Wunused-variable]\n"
        "        int unused = 3;\n"
        "            ^",
    ]


# gcc 12 on `max(x, 0.0)` of a float32 x: the prelude converts the arguments to the type of
# their sum in its own macros, so the warning is in prelude.h, and the user's line is the last
# macro-expansion note (abridged: gcc also quotes each line with a caret).
PROMOTION_OUTPUT = """\
f.ufunc: In function \u2018ufg_body_half_square_float32\u2019:
/x/include/ufuncgen/prelude.h:419:37: warning: implicit conversion from \u2018float\u2019 to \u2018double\u2019 to match other result of conditional [-Wdouble-promotion]
/x/include/ufuncgen/prelude.h:433:74: note: in expansion of macro \u2018UFG_SUM_ARGS_2\u2019
f.ufunc:4:9: note: in expansion of macro \u2018max\u2019
/x/include/ufuncgen/prelude.h:419:58: warning: implicit conversion from \u2018float\u2019 to \u2018double\u2019 to match other result of conditional [-Wdouble-promotion]
/x/include/ufuncgen/prelude.h:433:74: note: in expansion of macro \u2018UFG_SUM_ARGS_2\u2019
f.ufunc:4:9: note: in expansion of macro \u2018max\u2019
"""


def test_a_prelude_call_computing_in_double_is_reported_once_at_the_call_in_the_bodys_words():
    assert user_diagnostics(PROMOTION_OUTPUT, LINES, _module()) == [
        "f.ufunc:4:9: warning: implicit conversion from \u2018float\u2019 to \u2018double\u2019 "
        "to match another argument of \u2018max\u2019, which computes in the type of their sum "
        "[-Wdouble-promotion]\n"
        "        y = pow(x, 2) * 0.5;\n"
        "            ^",
    ]


def test_nvcc_diagnostics_are_rewritten_to_file_line_col_and_name_the_users_function():
    assert user_diagnostics(NVCC_OUTPUT, LINES, _module()) == [
        "f.ufunc:11:9: error: calling a constexpr __host__ function(\"fabs\") from a __device__ "
        "function('magnitude' for int32(int32)) is not allowed.\n"
        "        y = fabs(k);\n"
        "            ^",
        "f.ufunc:10:9: warning: variable \"unused\" was declared but never referenced\n"
        "        int unused = 3;\n"
        "            ^",
    ]


def test_nvcc_diagnostics_naming_a_file_by_its_full_path_are_shown_under_its_display_name():
    """The kernels name the signature files by their full paths for nvcc (its dependency file
    must list files that exist); messages show them as the generator does."""
    full = NVCC_OUTPUT.replace("f.ufunc(", "/home/me/project/f.ufunc(")
    assert (user_diagnostics(full, LINES, _module(), aliases={"/home/me/project/f.ufunc": "f.ufunc"})
            == user_diagnostics(NVCC_OUTPUT, LINES, _module()))
    assert user_diagnostics(full, LINES, _module()) == []    # not a signature file's name


def test_an_nvcc_diagnostic_without_a_quoted_line_keeps_file_and_line_only():
    assert user_diagnostics("f.ufunc(4): error: expected a \";\"\n", LINES) == [
        "f.ufunc:4: error: expected a \";\"\n        y = pow(x, 2) * 0.5;"]


ACCENTED = {"a.ufunc": ["{", "    /* \u00e9t\u00e9 */ y = xx;", "}"]}


def test_a_gcc_column_in_bytes_after_accented_letters_is_counted_in_characters():
    # `xx` is the 19th character and the 21st byte: gcc counts bytes under
    # -fdiagnostics-column-unit=byte, and the caret belongs under the character.
    assert user_diagnostics("a.ufunc:2:21: error: \u2018xx\u2019 undeclared\n", ACCENTED) == [
        "a.ufunc:2:19: error: \u2018xx\u2019 undeclared\n"
        "        /* \u00e9t\u00e9 */ y = xx;\n"
        "                      ^"]


def test_an_nvcc_caret_under_a_line_whose_comment_it_blanked_is_counted_in_characters():
    # EDG quotes the line with its comment replaced by one space a byte (11 for `/* été */`)
    # and puts the caret under the byte.
    output = ("a.ufunc(2): error: identifier \"xx\" is undefined\n"
              "  " + " " * 16 + "y = xx;\n"
              "  " + " " * 20 + "^\n\n")
    assert user_diagnostics(output, ACCENTED) == [
        "a.ufunc:2:19: error: identifier \"xx\" is undefined\n"
        "        /* \u00e9t\u00e9 */ y = xx;\n"
        "                      ^"]


def test_an_nvcc_quote_of_another_line_gives_no_column():
    output = ("a.ufunc(2): error: identifier \"xx\" is undefined\n"
              "    z = xx;\n"
              "        ^\n")
    assert user_diagnostics(output, ACCENTED) == [
        "a.ufunc:2: error: identifier \"xx\" is undefined\n        /* \u00e9t\u00e9 */ y = xx;"]


def test_an_error_in_generated_code_is_reported_at_the_users_line_its_macro_note_names():
    output = ("/tmp/b/include/ufuncgen/host_loops.h:12:3: error: invalid operands to binary %\n"
              "f.ufunc:4:9: note: in expansion of macro \u2018T\u2019\n")
    assert user_diagnostics(output, LINES) == [
        "f.ufunc:4:9: error: invalid operands to binary %\n"
        "        y = pow(x, 2) * 0.5;\n"
        "            ^"]


def test_the_notes_of_a_hidden_warning_are_hidden_with_it_at_every_level_of_macros():
    """A user's macro calling the prelude's min on int16 values: GCC's -Wconversion inside min
    is hidden, and so is each "in expansion of macro" note that follows it (min's, then the
    user's CSWAP's): a note alone said nothing, before "0 compiler warnings"."""
    output = ("/tmp/b/include/ufuncgen/prelude.h:12:3: warning: conversion from \u2018int\u2019 "
              "to \u2018short int\u2019 may change value [-Wconversion]\n"
              "f.ufunc:4:9: note: in expansion of macro \u2018min\u2019\n"
              "f.ufunc:4:5: note: in expansion of macro \u2018CSWAP\u2019\n"
              "f.ufunc:4:9: error: \u2018zz\u2019 undeclared\n")
    shown = user_diagnostics(output, LINES)
    assert [d.split("\n")[0] for d in shown] == ["f.ufunc:4:9: error: \u2018zz\u2019 undeclared"]


@pytest.mark.parametrize("message", [
    "implicit declaration of function \u2018expp\u2019; did you mean \u2018expl\u2019? "
    "[-Werror=implicit-function-declaration]",                                  # gcc 12
    "implicit declaration of function 'expp' is invalid in C99 "
    "[-Werror,-Wimplicit-function-declaration]",                                 # clang 14
    "call to undeclared function 'expp'; ISO C99 and later do not support implicit function "
    "declarations [-Wimplicit-function-declaration]",                            # clang 15
])
def test_a_call_to_an_undeclared_function_is_reported_as_such_in_every_compilers_words(message):
    (shown,) = user_diagnostics(f"f.ufunc:4:9: error: {message}\n", LINES)
    first = _normalised(shown).split("\n")[0]
    suggestion = "; did you mean 'expl'?" if "did you mean" in message else ""
    assert first == ("f.ufunc:4:9: error: call to undeclared function 'expp': it is not a "
                     "helper, nor declared by ufuncgen's prelude or the C headers it includes"
                     + suggestion)


def test_a_call_to_a_helper_whose_prototype_failed_says_so():
    output = ("f.ufunc:1:12: error: unknown type name \u2018Q\u2019\n"
              "f.ufunc:4:9: error: implicit declaration of function \u2018twice__float32\u2019 "
              "[-Werror=implicit-function-declaration]\n")
    sink = DiagnosticSink("f.ufunc", [])
    text = ("helper T twice(T v)\n{\n    return v + v;\n}\n\n"
            "ufunc f(x) -> y\n    types: float32(float32)\n{\n    y = twice(x);\n}\n")
    module = build_module("m", [(parse_text("f.ufunc", text, sink), sink, "f.ufunc")])
    assert [d.split("\n")[0] for d in user_diagnostics(output, LINES, module)][1] == (
        "f.ufunc:4:9: error: call to helper 'twice' for T = float32, which is not declared: "
        "its prototype did not compile")


GUFUNC_SOURCE = """\
gufunc fill(a) -> c
    layout: (n, m)->(n)
    types: float64(float64)
{
    c = a;
}
"""


@pytest.mark.parametrize("message, name", [
    ("\u2018c\u2019 undeclared (first use in this function)", "c"),   # gcc
    ("use of undeclared identifier 'c'", "c"),                         # clang
    ("\u2018a\u2019 undeclared (first use in this function)", "a"),
])
def test_a_core_argument_used_as_a_value_is_reported_as_such_in_every_compilers_words(
        message, name):
    sink = DiagnosticSink("g.ufunc", [])
    module = build_module("m", [(parse_text("g.ufunc", GUFUNC_SOURCE, sink), sink, "g.ufunc")])
    lines = {"g.ufunc": GUFUNC_SOURCE.split("\n")}
    (shown,) = user_diagnostics(f"g.ufunc:5:5: error: {message}\n", lines, module)
    assert shown.split("\n")[0] == {
        "c": "g.ufunc:5:5: error: 'c' is an output with core dimensions (n): write its "
             "elements, c(i)",
        "a": "g.ufunc:5:5: error: 'a' is an input with core dimensions (n, m): read its "
             "elements, a(i, j)"}[name]
    nvcc = f'g.ufunc(5): error: identifier "{name}" is undefined\n'
    assert user_diagnostics(nvcc, lines, module)[0].split("\n")[0] == \
        shown.split("\n")[0].replace(":5:5:", ":5:")


def test_gccs_advice_to_include_a_header_and_its_echoes_of_an_undeclared_call_are_dropped():
    output = ("f.ufunc:4:9: error: implicit declaration of function \u2018labs\u2019 "
              "[-Werror=implicit-function-declaration]\n"
              "f.ufunc:1:1: note: include \u2018<stdlib.h>\u2019 or provide a declaration of "
              "\u2018labs\u2019\n"
              "f.ufunc:4:9: warning: incompatible implicit declaration of built-in function "
              "\u2018labs\u2019 [-Wbuiltin-declaration-mismatch]\n"
              "f.ufunc:4:9: note: include \u2018<stdlib.h>\u2019 or provide a declaration of "
              "\u2018labs\u2019\n"
              "f.ufunc:10:9: note: each undeclared identifier is reported only once for each "
              "function it appears in\n")
    shown = user_diagnostics(output, LINES, _module())
    assert [d.split("\n")[0] for d in shown] == [
        "f.ufunc:4:9: error: call to undeclared function \u2018labs\u2019: it is not a helper, "
        "nor declared by ufuncgen's prelude or the C headers it includes"]


def test_output_about_other_files_only_gives_nothing():
    assert user_diagnostics("/tmp/b/x.c:1:1: error: oops\nmake: *** Error 1\n", LINES) == []


# Errors in no signature file, as gcc 12 and make print them (abridged): a header a body
# included, which the checker now refuses.
SYSTEM_HEADER_OUTPUT = """\
[ 80%] Building C object CMakeFiles/m.dir/m_generated/m_kernels_sim.c.o
In file included from /usr/include/stdio.h:902,
                 from f.ufunc:4,
                 from /tmp/b/m_generated/m_kernels.cu:25:
/usr/include/x86_64-linux-gnu/bits/stdio.h: In function \u2018ufg_body_half_square_float32\u2019:
/usr/include/x86_64-linux-gnu/bits/stdio.h:39:1: error: nested function \u2018vprintf\u2019 declared \u2018extern\u2019
   39 | vprintf (const char *__restrict __fmt, __gnuc_va_list __arg)
      | ^~~~~~~
/usr/include/stdio.h:371:12: note: previous declaration of \u2018vprintf\u2019
/usr/include/x86_64-linux-gnu/bits/stdio.h:39:1: warning: something [-Werror=unused]
/usr/include/x86_64-linux-gnu/bits/stdio.h:39:1: error: nested function \u2018vprintf\u2019 declared \u2018extern\u2019
/usr/include/x86_64-linux-gnu/bits/stdio.h:40:1: error: invalid storage class in ufg_body_half_square_float32
gmake[2]: *** [CMakeFiles/m.dir/build.make:93: CMakeFiles/m.dir/m_kernels_sim.c.o] Error 1
gmake[2]: *** Waiting for unfinished jobs....
/usr/bin/ld: m.o: undefined reference to `missing'
collect2: error: ld returned 1 exit status
gmake: *** [Makefile:91: all] Error 2
"""
CMAKE_OUTPUT = """\
-- ufuncgen: CUDA kernels for 90
CMake Error at /site/ufuncgen/cmake/ufuncgen.cmake:112 (message):
  UFUNCGEN_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)
Call Stack (most recent call first):
  CMakeLists.txt:5 (include)


-- Configuring incomplete, errors occurred!
"""


def test_errors_in_no_signature_file_are_summed_up_as_their_error_lines_once_each():
    assert error_summary(SYSTEM_HEADER_OUTPUT, _module()) == [
        "/usr/include/x86_64-linux-gnu/bits/stdio.h:39:1: error: nested function \u2018vprintf\u2019 "
        "declared \u2018extern\u2019",
        "/usr/include/x86_64-linux-gnu/bits/stdio.h:40:1: error: invalid storage class in "
        "'half_square' for float32(float32)",
        "/usr/bin/ld: m.o: undefined reference to `missing'",
        "collect2: error: ld returned 1 exit status"]


def test_a_cmake_error_is_summed_up_as_its_message():
    assert error_summary(CMAKE_OUTPUT) == [
        "CMake Error at /site/ufuncgen/cmake/ufuncgen.cmake:112 (message):\n"
        "  UFUNCGEN_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER)"]


CMAKE_COMPILER_TEST_OUTPUT = """\
-- The CUDA compiler identification is NVIDIA 13.0.48
CMake Error at /usr/share/cmake-3.25/Modules/CMakeTestCUDACompiler.cmake:70 (message):
  The CUDA compiler

    "/usr/local/cuda/bin/nvcc"

  is not able to compile a simple test program.

  It fails with the following output:

    Change Dir: /tmp/b/CMakeFiles/CMakeScratch/TryCompile-x1
    nvcc fatal   : Unsupported gpu architecture 'compute_70'
    gmake[1]: *** [CMakeFiles/cmTC.dir/build.make:78: main.cu.o] Error 1



  CMake will not be able to correctly generate this project.
Call Stack (most recent call first):
  CMakeLists.txt:3 (project)


-- Configuring incomplete, errors occurred!
"""


def test_a_cmake_error_keeps_its_whole_message_across_blank_lines():
    # Cut at its first blank line, the message said only "The CUDA compiler".
    (summary,) = error_summary(CMAKE_COMPILER_TEST_OUTPUT)
    lines = summary.split("\n")
    assert lines[0].startswith("CMake Error at /usr/share/cmake-3.25/Modules/CMakeTest")
    assert "    nvcc fatal   : Unsupported gpu architecture 'compute_70'" in lines
    assert lines[-1] == "  CMake will not be able to correctly generate this project."
    long = CMAKE_COMPILER_TEST_OUTPUT.replace("    Change Dir", "    line\n" * 60 + "    Change Dir")
    (cut,) = error_summary(long)
    assert cut.split("\n")[-1] == "  ..." and len(cut.split("\n")) == 42


def test_a_long_list_of_errors_is_cut_with_a_count_of_the_rest():
    output = "".join(f"/usr/include/h.h:{n}:1: error: number {n}\n" for n in range(1, 15))
    summary = error_summary(output)
    assert summary[:2] == ["/usr/include/h.h:1:1: error: number 1", "/usr/include/h.h:2:1: error: number 2"]
    assert summary[10:] == ["... and 4 more"]


# ------------------------------------------------------------------------------ real builds

def _build(tmp_path: Path, text: str, name: str) -> subprocess.CompletedProcess:
    (tmp_path / f"{name}.ufunc").write_text(textwrap.dedent(text))
    return subprocess.run([sys.executable, "-m", "ufuncgen", "build", f"{name}.ufunc", "--name",
                           name, "-o", "out", "--cuda-arch", "75-real"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)


def _normalised(stderr: str) -> str:
    """Quotes as ASCII (gcc's depend on the locale)."""
    return stderr.translate({0x2018: "'", 0x2019: "'"})


BUILD_GOLDEN = Path(__file__).resolve().parent / "golden" / "build_errors"
REGEN = os.environ.get("UFUNCGEN_REGEN_GOLDEN") == "1"


@pytest.mark.parametrize("case", sorted(p.stem for p in BUILD_GOLDEN.glob("*.ufunc")))
def test_a_body_c_accepts_only_with_a_warning_fails_the_build_with_the_golden_message(case, tmp_path):
    """tests/golden/build_errors/<case>.ufunc: a body that C before C23 compiles with a warning but
    that would not import (an undeclared function: an undefined symbol) or would silently
    reinterpret memory (a pointer of another type, an integer as a pointer, a const input
    written through); and the other messages of a failed build (a core argument used as a
    plain value, errors located in no signature file).  <case>.err is the exact stderr of `ufuncgen build <case>.ufunc --name
    <case> -o out --cuda-arch none` (gcc; quotes as ASCII); UFUNCGEN_REGEN_GOLDEN=1 rewrites
    it."""
    shutil.copy(BUILD_GOLDEN / f"{case}.ufunc", tmp_path)
    result = subprocess.run([sys.executable, "-m", "ufuncgen", "build", f"{case}.ufunc", "--name",
                             case, "-o", "out", "--cuda-arch", "none"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    expected_path = BUILD_GOLDEN / f"{case}.err"
    if REGEN:
        expected_path.write_text(_normalised(result.stderr), encoding="utf-8")
    assert result.returncode == 1
    assert _normalised(result.stderr) == expected_path.read_text(encoding="utf-8")
    assert not (tmp_path / "out" / f"{case}{EXT_SUFFIX}").exists()


def test_a_float32_body_computing_in_double_builds_and_warns_at_the_users_line(tmp_path):
    result = _build(tmp_path, """\
        ufunc half_square(x) -> y
            types: float32(float32)
        {
            y = pow(x, 2) * 0.5;
        }

        ufunc scaled(x) -> y
            types: float32(float32)
        {
            y = x * 1.5;
        }
    """, "promo")
    assert result.returncode == 0, result.stderr
    assert _normalised(result.stderr) == """\
promo.ufunc:4:19: warning: implicit conversion from 'float' to 'double' to match other operand of binary expression [-Wdouble-promotion]
        y = pow(x, 2) * 0.5;
                      ^
promo.ufunc:4:9: warning: conversion from 'double' to 'float' may change value [-Wfloat-conversion]
        y = pow(x, 2) * 0.5;
            ^
promo.ufunc:10:11: warning: implicit conversion from 'float' to 'double' to match other operand of binary expression [-Wdouble-promotion]
        y = x * 1.5;
              ^
promo.ufunc:10:9: warning: conversion from 'double' to 'float' may change value [-Wfloat-conversion]
        y = x * 1.5;
            ^
4 compiler warnings in the bodies.
"""


def test_a_float32_body_computing_in_double_through_a_prelude_call_warns_at_the_call(tmp_path):
    # _Generic's controlling expression is not evaluated and GCC warned of nothing there:
    # these computed in double in silence, cast back to T.  Written in T, no warning.
    result = _build(tmp_path, """\
        ufunc positive(x) -> y
            types: float32(float32)
        {
            y = (T)(max(x, 0.0));
        }

        ufunc calls(x) -> (a, b, c)
            types: (float32, float32, float32)(float32)
        {
            a = (T)pow(x, 0.5) + (T)clamp(x, 0.0, 1.0);
            b = (T)fma(x, x, 1.0);
            c = max(x, (T)0) + pow(x, 2) + atan2(x, 1.0f) + (T)min(x, 1e-3f);
        }
    """, "promo_calls")
    assert result.returncode == 0, result.stderr
    message = ("warning: implicit conversion from 'float' to 'double' to match another argument "
               "of '{}', which computes in the type of their sum [-Wdouble-promotion]")
    assert _normalised(result.stderr) == f"""\
promo_calls.ufunc:4:13: {message.format("max")}
        y = (T)(max(x, 0.0));
                ^
promo_calls.ufunc:10:12: {message.format("pow")}
        a = (T)pow(x, 0.5) + (T)clamp(x, 0.0, 1.0);
               ^
promo_calls.ufunc:10:29: {message.format("clamp")}
        a = (T)pow(x, 0.5) + (T)clamp(x, 0.0, 1.0);
                                ^
promo_calls.ufunc:11:12: {message.format("fma")}
        b = (T)fma(x, x, 1.0);
               ^
4 compiler warnings in the bodies.
"""


def test_a_generator_warning_is_shown_once_by_a_build_as_check_shows_it(tmp_path):
    # The build runs the generator again inside CMake, which printed the warning into the
    # build's output; it came back a second time, counted as "1 compiler warning".
    text = """\
        ufunc shifted(a, b) -> y
            types: int64(int64, int64)
        { y = a << b; }
    """
    result = _build(tmp_path, text, "unguarded")
    assert result.returncode == 0, result.stderr
    check = subprocess.run([sys.executable, "-m", "ufuncgen", "check", "unguarded.ufunc"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert "warning: function 'shifted' shifts" in check.stderr
    assert result.stderr == check.stderr


def test_a_compiler_error_after_accented_letters_and_tabs_is_at_the_users_character(tmp_path):
    result = _build(tmp_path, "ufunc f(x) -> y\n    types: float64(float64)\n{\n"
                              "\t/* \u00e9t\u00e9 */\ty = xx;\n}\n", "accented")
    assert result.returncode == 1
    first = _normalised(result.stderr).split("\n")[:3]
    assert first[0].startswith("accented.ufunc:4:16: error: 'xx' undeclared"), result.stderr
    assert first[2] == "    " + " " * 15 + "^", result.stderr


@needs_nvcc
def test_a_body_that_compiles_for_the_host_but_not_for_the_device_fails_at_the_users_line(tmp_path):
    result = _build(tmp_path, """\
        ufunc magnitude(k) -> y
            types: int32(int32)
        {
            int class = k < 0;
            y = class ? -k : k;
        }
    """, "device_only")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    # nvcc refused it at these lines ("invalid combination of type specifiers"); the check
    # before the build now refuses it, on machines without nvcc too.
    assert _normalised(result.stderr) == """\
device_only.ufunc:4:9: error: 'class' is a keyword of C++, and a body is also compiled as C++ (nvcc), where it cannot name a variable or a parameter; rename it
        int class = k < 0;
            ^
1 error generated.
"""


@needs_nvcc
def test_an_nvcc_error_naming_an_undefined_identifier_points_at_the_users_column(tmp_path):
    """gcc stops first on the same typo; the message is then gcc's, at the same place."""
    result = _build(tmp_path, """\
        ufunc scale(x, k) -> y
            types: float64(float64, float64)
        {
            y = x * kk;
        }
    """, "typo")
    assert result.returncode == 1
    first = _normalised(result.stderr).split("\\n")[0]
    assert first.startswith("typo.ufunc:4:13: error: ") and "kk" in first, result.stderr


def test_a_complex_value_taken_as_real_or_narrowed_by_a_conditional_warns_at_the_users_line(tmp_path):
    """What C converts and nvcc's C++ refuses: a complex value assigned to a real variable
    (C keeps the real part; -Wconversion's one message shown, its others dropped), and a
    conditional between a complex64 and a double (C's type complex128, ufuncgen/complex.h
    refuses it in C++ rather than narrow the double).  The host build (no CUDA architecture)
    succeeds and says so at the user's lines."""
    (tmp_path / "cplx.ufunc").write_text(textwrap.dedent("""\
        ufunc norm2(z) -> y
            types: float64(complex128)
        {
            y = z * conj(z);
        }

        ufunc select(z, x) -> y
            types: complex128(complex64, float64)
        {
            y = x < 0 ? z : x;
        }

        ufunc narrow(k) -> y
            types: int32(int64)
        {
            y = k;
        }
    """))
    result = subprocess.run([sys.executable, "-m", "ufuncgen", "build", "cplx.ufunc", "--name",
                             "cplx", "-o", "out", "--cuda-arch", "none"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert _normalised(result.stderr) == """\
cplx.ufunc:4:9: warning: conversion from 'complex double' to 'double' discards imaginary component: C keeps the real part, nvcc's C++ refuses the conversion; write real(...) for the real part, or abs(...) for the modulus [-Wconversion]
        y = z * conj(z);
            ^
cplx.ufunc:10:19: warning: implicit conversion from 'ufg_complex64' {aka 'const _Complex float'} to 'complex double' to match other result of conditional: C gives this conditional the type complex128, which nvcc's C++ cannot, and refuses it; convert the complex64 operand (`(complex128_t)z`), or the other one to complex64 [-Wdouble-promotion]
        y = x < 0 ? z : x;
                      ^
2 compiler warnings in the bodies.
"""
