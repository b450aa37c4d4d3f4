"""Fuzzing the generator: mutated and generated signature files either render or give
`path:line:col: error:` diagnostics: never another exception, never a hang.  A slower test
compiles a sample of accepted fuzzed files' C with gcc and checks that every compile error
points at the signature file (through #line), not at generated code.

Files per run: `gen-fuzz-ci` (the default) 150 mutated + 150 arbitrary texts/bytes + 150
generated valid files, and 12 compiled with gcc (~20 s); `gen-fuzz-thorough`
(HYPOTHESIS_PROFILE=thorough) 5000 of each and 300 compiled (~15 min).  See conftest.py;
UFUNCGEN_FUZZ_COMPILE_EXAMPLES overrides the compiled count.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import sysconfig
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ufuncgen.build import tool_environment
from ufuncgen.gen import SignatureError, load_module
from ufuncgen.gen.model import RESERVED_NAMES, reserved_reason
from ufuncgen.gen.render import render_module

ROOT = Path(__file__).resolve().parents[2]
SEED = (ROOT / "signatures" / "examples.ufunc").read_text()
PROFILE = settings.get_profile(os.environ.get("UFUNCGEN_FUZZ_PROFILE", "gen-fuzz-ci"))
PER_EXAMPLE_SECONDS = 10
_DIAGNOSTIC = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): error: \S")

SMALL_VALID = [
    """ufunc f(x) -> y
    types: float64(float64)
{
    y = x;
}
""",
    """ufunc add2(a, b) -> c
    doc: sum
    types: int64(int64, int64), float32(float32, float32)
    identity: 0
{
    c = a + b;
}
""",
    """gufunc dot(x, y) -> d
    layout: (n),(n)->()
    types: float64(float64, float64)
{
    T acc = 0;
    for (int64_t i = 0; i < n; i++) acc += x(i) * y(i);
    d = acc;
}
""",
    """helper T sq(T v)
{
    return v * v;
}

gufunc grow(x) -> y
    layout: (n)->(p)
    dim: p = n + 1
    types: float32(float32)
{
    for (int64_t i = 0; i < p; i++) y(i) = sq(i < n ? x(i) : (T)0);
}
""",
    """ufunc two(x) -> (s, c)
    types: (float64, float64)(float64)
    fastmath: true
    threads: false
{
    s = sin(x);
    c = cos(x);
}
""",
]

# Pieces a mutation inserts: the grammar's own words and punctuation, and a few strangers.
TOKENS = ["ufunc", "gufunc", "helper", "doc:", "types:", "layout:", "identity:", "fastmath:",
          "threads:", "dim:", "float32", "float64", "int64", "int8", "uint16", "bool", "T",
          "void", "(", ")", ",", "->", "{", "}", "[", "]", ":", "=", "*", "/", "%", "#", "\n",
          "\n{\n", "\n}\n", "    ", "\t", "(n)", "(3)", "(m,n)", "()", "0", "-1", "1e999",
          "inf", "-inf", "nan", "True", "true", "false", "reorderable", "x", "y", "n", "p",
          "int", "return", "\"", "'", "/*", "*/", "//", "\\", "\r", "\r\n", "\x00", "\x0c",
          "\u00e9", "\u2028", "\ufeff", "\U0001F600", "9" * 30, "a" * 300,
          # names C++ (nvcc), the C headers, the prelude or ufuncgen keep for themselves
          "class", "new", "template", "this", "int64_t", "I", "abs", "max", "_Bool", "__x",
          "ufg_x", "Py_x", "9223372036854775807",
          # preprocessor lines among body lines
          "\n#if 0\n", "\n#ifdef X\n", "\n#else\n", "\n#elif 1\n", "\n#endif\n"]
TEXT_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs",))


@contextmanager
def time_bound(seconds: int):
    """A hang is a failure: SIGALRM interrupts an example that runs too long."""
    def expired(signum, frame):
        raise TimeoutError(f"the generator ran for more than {seconds} s on one file")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def generate(text: str, tmp_path: Path, name: str = "fuzz.ufunc") -> dict[str, str] | SignatureError:
    """Renders `text` as a signature file; the outputs, or the generator's SignatureError.
    Any other exception propagates: that is the defect this file hunts."""
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    with time_bound(PER_EXAMPLE_SECONDS):
        try:
            module = load_module("fuzzpkg.fuzzmod", [str(path)], str(tmp_path))
        except SignatureError as exc:
            check_diagnostics(exc, text, name)
            return exc
        return render_module(module, "ufuncgen fuzz")


def check_diagnostics(exc: SignatureError, text: str | bytes, name: str) -> None:
    assert exc.diagnostics, "a SignatureError without diagnostics"
    lines = (text if isinstance(text, str) else text.decode("utf-8", "replace")).split("\n")
    for d in exc.diagnostics:
        first = d.format().split("\n")[0]
        m = _DIAGNOSTIC.match(first)
        assert m, f"not a path:line:col: error: diagnostic: {first!r}"
        assert m["path"] == name, first
        assert 1 <= d.location.line <= len(lines) + 1, first
        assert d.location.col >= 1, first
    assert exc.format().endswith("generated.")


@st.composite
def mutated(draw, bases=st.sampled_from([SEED] + SMALL_VALID)):
    text = draw(bases)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "token", "line", "swap"]))
        pos = draw(st.integers(0, len(text)))
        if kind == "insert":
            text = text[:pos] + draw(st.text(TEXT_CHARS, min_size=1, max_size=3)) + text[pos:]
        elif kind == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 12)):]
        elif kind == "replace":
            text = (text[:pos] + draw(st.text(TEXT_CHARS, min_size=1, max_size=2))
                    + text[pos + draw(st.integers(1, 3)):])
        elif kind == "token":
            cut = draw(st.integers(0, 6))
            text = text[:pos] + draw(st.sampled_from(TOKENS)) + text[pos + cut:]
        else:
            lines = text.split("\n")
            i, j = (draw(st.integers(0, len(lines) - 1)) for _ in range(2))
            if kind == "line":     # duplicate or drop a line, or add an option line
                choice = draw(st.integers(0, 2))
                if choice == 0:
                    lines.insert(j, lines[i])
                elif choice == 1:
                    del lines[i]
                else:
                    lines.insert(i, "    " + draw(st.sampled_from(
                        ["doc", "types", "layout", "identity", "fastmath", "threads", "dim",
                         "bogus"])) + ":" + draw(st.text(TEXT_CHARS, max_size=20)))
            else:
                lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
    return text


C_PIECES = ["{", "}", "(", ")", "[", "]", ";", "/*", "*/", "//", "\"", "'", "\\", "#if 0",
            "#endif", "#define T int", "return;", "x", "T", "0", "/", "%", "sin(", "ufg_", "\n",
            "\n#", "int q = 1 / 0;", "goto", "@", "`", "$", "\n#if 1\n", "\n#ifndef T\n",
            "\n#else\n", "\n#endif\n", "\n  #  elif 0\n", "class", "new", "this", "template"]


@st.composite
def body_mutated(draw, bases=st.sampled_from([SEED] + SMALL_VALID)):
    """Mutations inside bodies only (the generator accepts most): what reaches the C compiler."""
    lines = draw(bases).split("\n")
    inside, in_body = [], False
    for i, line in enumerate(lines):
        if line.rstrip() == "{":
            in_body = True
        elif line.rstrip() == "}":
            in_body = False
        elif in_body:
            inside.append(i)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.sampled_from(inside))
        line = lines[i]
        pos = draw(st.integers(0, len(line)))
        piece = draw(st.sampled_from(C_PIECES) | st.text(TEXT_CHARS, min_size=1, max_size=2))
        lines[i] = line[:pos] + piece + line[pos + draw(st.integers(0, 3)):]
    return "\n".join(lines)


NAMES = st.from_regex(r"\A[a-z][a-z0-9_]{0,6}\Z").filter(
    # argument names get a `_<index>` suffix below: that must not make them reserved (npy_1)
    lambda s: reserved_reason(s) is None and reserved_reason(s + "_0") is None
    and s not in {"n", "m", "p", "k", "d", "i", "j", "acc"})
INT_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
FLOAT_TYPES = ["float32", "float64"]


@st.composite
def valid_function(draw, name):
    """A function the generator must accept (the rules from the README, simply)."""
    gufunc = draw(st.booleans())
    nin, nout = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    names = draw(st.lists(NAMES, min_size=nin + nout, max_size=nin + nout, unique=True))
    names = [f"{v}_{i}" for i, v in enumerate(names)]     # never the function's own name
    ins, outs = names[:nin], names[nin:]
    types = draw(st.lists(st.sampled_from(INT_TYPES + FLOAT_TYPES), min_size=1, max_size=3,
                          unique=True))
    def sig(t):
        out = t if nout == 1 else "(" + ", ".join([t] * nout) + ")"
        return f"{out}({', '.join([t] * nin)})"
    lines = [f"{'gufunc' if gufunc else 'ufunc'} {name}({', '.join(ins)}) -> "
             + (outs[0] if nout == 1 else "(" + ", ".join(outs) + ")")]
    if draw(st.booleans()):
        lines.append("    doc: " + draw(st.text(st.characters(codec="utf-8",
                                                               exclude_categories=("Cs", "Cc", "Zl", "Zp")),
                                               max_size=30)).strip().replace("\\", "/"))
    lines.append("    types: " + ", ".join(sig(t) for t in types))
    body = []
    if gufunc:
        lines.append(f"    layout: {','.join(['(n)'] * nin)}->{','.join(['()'] * nout)}")
        for o in outs:
            body.append(f"    {o} = 0;")
            body.append(f"    for (int64_t i = 0; i < n; i++) {o} += {ins[0]}(i);")
    else:
        if nin == 2 and nout == 1 and draw(st.booleans()):
            lines.append("    identity: " + draw(st.sampled_from(["0", "1", "none"])))
        for o in outs:
            body.append(f"    {o} = ({' + '.join(ins)});")
    for key in ("fastmath", "threads"):
        if draw(st.booleans()):
            lines.append(f"    {key}: {draw(st.sampled_from(['true', 'false']))}")
    return "\n".join(lines + ["{"] + body + ["}"]) + "\n"


@st.composite
def valid_file(draw):
    names = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
    parts = [draw(valid_function(f"f_{n}")) for n in names]
    blank = draw(st.sampled_from(["\n", "\n\n", "\n# a comment\n"]))
    return blank.join(parts)


@PROFILE
@given(text=mutated())
def test_mutated_files_render_or_give_diagnostics(text, tmp_path_factory):
    generate(text, tmp_path_factory.mktemp("mut"))


@PROFILE
@given(data=st.binary(max_size=200) | st.text(TEXT_CHARS, max_size=200))
def test_arbitrary_bytes_render_or_give_diagnostics(data, tmp_path_factory):
    generate(data, tmp_path_factory.mktemp("raw"))


@PROFILE
@given(text=valid_file())
def test_generated_valid_files_render(text, tmp_path_factory):
    result = generate(text, tmp_path_factory.mktemp("valid"))
    assert not isinstance(result, SignatureError), f"{text}\n{result}"


RESERVED = st.sampled_from(sorted(RESERVED_NAMES) + [
    "class", "None", "lambda", "_Bool", "_X1", "__x", "ufg_x", "UFG_X", "npy_x", "NPY_X",
    "Py_x", "PyObject"])


@st.composite
def file_with_a_reserved_name(draw):
    """A valid file with one name of its first declaration replaced by a reserved one:
    (text, the name, its line, its column)."""
    text = draw(valid_file())
    lines = text.split("\n")
    header = lines[0]
    words = [m for m in re.finditer(r"[A-Za-z_]\w*", header) if m.group(0) not in ("ufunc", "gufunc")]
    # words[0] is the function's own name, which never stands alone in C: C's keywords and
    # the prelude's names are free for it (tests/golden/reserved_cxx_and_prelude_names).
    m = draw(st.sampled_from(words[1:]))
    name = draw(RESERVED)
    lines[0] = header[:m.start()] + name + header[m.end():]
    return "\n".join(lines), name, 1, m.start() + 1


@PROFILE
@given(case=file_with_a_reserved_name())
def test_a_reserved_name_anywhere_in_a_declaration_is_refused_at_its_place(case, tmp_path_factory):
    text, name, line, col = case
    result = generate(text, tmp_path_factory.mktemp("reserved"))
    assert isinstance(result, SignatureError), text
    assert any(d.location.line == line and d.location.col == col and f"'{name}'" in d.message
               and reserved_reason(name) in d.message for d in result.diagnostics), result.format()


DIRECTIVES = ["#if 1", "#ifdef X", "#ifndef X", "#else", "#elif 0", "#endif", "  #  endif",
              "#define Y 1", "#if 0 /* #endif */"]


def _conditionals_balance(directives: list[str]) -> bool:
    """The reference: every #if... closed by #endif, no #else/#elif/#endif without one, one
    #else per #if, nothing after it but #endif."""
    stack: list[bool] = []      # whether the open #if has had its #else
    for d in directives:
        word = d.strip().lstrip("#").split()[0]
        if word in ("if", "ifdef", "ifndef"):
            stack.append(False)
        elif word in ("else", "elif", "endif"):
            if not stack or stack[-1]:
                if not stack or word != "endif":
                    return False
            if word == "endif":
                stack.pop()
            elif word == "else":
                stack[-1] = True
    return not stack


@st.composite
def body_with_directives(draw):
    """A valid file with preprocessor lines inserted, in order, among one body's lines:
    (text, whether its conditionals balance)."""
    lines = draw(valid_file()).split("\n")
    opening = lines.index("{")
    closing = lines.index("}", opening)
    directives = draw(st.lists(st.sampled_from(DIRECTIVES), min_size=1, max_size=5))
    body = lines[opening + 1:closing]
    for d in directives:
        body.insert(draw(st.integers(0, len(body))), d)
    # inserted in order: keep their relative order by re-sorting positions
    ordered = iter(directives)
    body = [next(ordered) if b in DIRECTIVES else b for b in body]
    return "\n".join(lines[:opening + 1] + body + lines[closing:]), _conditionals_balance(directives)


@PROFILE
@given(case=body_with_directives())
def test_preprocessor_conditionals_in_a_body_are_accepted_exactly_when_they_balance(case, tmp_path_factory):
    text, balanced = case
    result = generate(text, tmp_path_factory.mktemp("pp"))
    if balanced:
        assert not isinstance(result, SignatureError), f"{text}\n{result}"
    else:
        assert isinstance(result, SignatureError), text
        assert any("#" in d.message for d in result.diagnostics), result.format()


# ------------------------------------------------------------------------------ compiling

@functools.lru_cache(maxsize=None)
def _generated_include_dir() -> str:
    """ufuncgen/element_types.h and limits.h, which the build generates beside src/include."""
    from ufuncgen.gen.runtime_headers import write_runtime_headers
    path = tempfile.mkdtemp(prefix="ufuncgen-fuzz-include-")
    write_runtime_headers(path)
    return path


def _c_flags() -> list[str] | None:
    gcc = shutil.which("gcc")
    try:
        import numpy
    except ImportError:
        return None
    if gcc is None:
        return None
    return [gcc, "-fsyntax-only", "-std=gnu11", "-fopenmp-simd", "-w",
            f"-I{ROOT / 'src' / 'include'}", f"-I{_generated_include_dir()}",
            f"-I{numpy.get_include()}",
            f"-I{sysconfig.get_paths()['include']}"]


# gcc takes ~0.2 s a file: few in CI, more in the thorough profile; or set the count.
COMPILE_EXAMPLES = int(os.environ.get(
    "UFUNCGEN_FUZZ_COMPILE_EXAMPLES",
    "300" if PROFILE.max_examples > 1000 else "12"))


@settings(PROFILE, max_examples=COMPILE_EXAMPLES)
@given(text=body_mutated() | mutated() | valid_file())
def test_compile_errors_in_fuzzed_files_point_at_the_signature_file(text, tmp_path_factory):
    flags = _c_flags()
    if flags is None:
        pytest.skip("needs gcc and numpy headers")
    tmp = tmp_path_factory.mktemp("cc")
    result = generate(text, tmp)
    if isinstance(result, SignatureError):
        event("rejected by the generator")
        return
    event("compiled")
    for name, source in result.items():
        (tmp / name).write_text(source)
    proc = subprocess.run([*flags, "fuzzmod_module.c"], cwd=tmp, capture_output=True,
                          text=True, timeout=120, env=tool_environment())
    assert not stray_errors(proc.stderr), f"compile errors outside the signature file:\n{proc.stderr}\n{text}"
    if proc.returncode != 0:
        assert re.search(r"^fuzz\.ufunc:\d+:\d+: (error|note): ", proc.stderr, re.M), proc.stderr


def stray_errors(stderr: str) -> list[str]:
    """gcc errors that do not point at the signature file.  An error inside a macro (tgmath's
    `cos` in host_loops.h, the generated `#define T double`, ...) counts as pointing there when
    gcc's macro backtrace names the user's line ("fuzz.ufunc:L:C: note: in expansion of macro")."""
    lines = stderr.splitlines()
    stray = []
    for i, line in enumerate(lines):
        if ": error: " not in line or line.startswith("fuzz.ufunc:"):
            continue
        rest = []
        for following in lines[i + 1:]:
            if ": error: " in following:
                break
            rest.append(following)
        if not (any(r.startswith("fuzz.ufunc:") and "in expansion of macro" in r
                                  for r in rest)):
            stray.append(line)
    return stray
