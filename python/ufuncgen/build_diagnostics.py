"""The compilers' messages about the user's bodies, at the user's lines.

The generated code carries `#line` directives back to the signature files, so the C compiler
reports a body's problems as `f.ufunc:LINE:COL: warning: ...`, and nvcc as
`f.ufunc(LINE): error: ...`.  CMake runs the compilers in its build directory, where they
cannot read `f.ufunc` to quote it, and it shows their output only when asked.  This module
picks, out of the captured build output, the diagnostics located in the signature files,
rewrites nvcc's to the C compiler's `path:line:col: severity: message` form, names the
generated functions as the user wrote them, and quotes the source line with a caret, as
`ufuncgen check` does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from collections.abc import Iterable

from .gen.diagnostics import Diagnostic, Location
from .gen.model import PRELUDE_FUNCTIONS, Arg, Module

# gcc and clang: `path:line:col: severity: message`, the column sometimes absent.
_GCC = re.compile(r"(?P<path>[^:\n]+?):(?P<line>\d+):(?:(?P<col>\d+):)? "
                  r"(?P<severity>fatal error|error|warning|note): (?P<message>.*)")
# nvcc (EDG): `path(line): severity #number-D: message`, then the source line and a caret.
_NVCC = re.compile(r"(?P<path>[^(\n]+?)\((?P<line>\d+)\): "
                   r"(?P<severity>error|warning|remark)(?: #[\w-]+)?: (?P<message>.*)")
_NVCC_SUMMARY = re.compile(r"Remark: The warnings can be suppressed|\d+ errors? detected in the compilation")
_QUOTED = re.compile(r"([\"'\u2018\u201c]?)\b(?P<name>\w+)\b([\"'\u2019\u201d]?)")
# A call to a function nothing declares: gcc's `implicit declaration of function 'f'` (an
# error under -Werror=implicit-function-declaration), clang 14's `... is invalid in C99`,
# clang 15's `call to undeclared function 'f'; ISO C99 and later do not support ...`.
_UNDECLARED = re.compile(
    r"(?:implicit declaration of function|call to undeclared function) "
    r"(?P<name>['\u2018]\w+['\u2019])(?P<rest>.*?)"
    r"(?: \[-W(?:error=|error,-W)?implicit-function-declaration\])?")
_DID_YOU_MEAN = re.compile(r"; did you mean [^;]*\?")
# The prelude converts a call's arguments to the type of their sum with `1 ? (a) : (b)`, so
# that a float beside a double (`max(x, 0.0)`) draws -Wdouble-promotion at the call; gcc words
# it as a conditional's, which the body does not have.
_CONDITIONAL_PROMOTION = re.compile(
    r"implicit conversion from (?P<types>\S+ to \S+) to match other result of conditional"
    r"(?P<flag> \[-W[\w=-]*\])?")
_MACRO_EXPANSION = re.compile(r"in expansion of macro (?P<open>['\u2018])(?P<name>\w+)(?P<close>['\u2019])")
# A write to a gufunc's core input: gcc quotes the accessor's expansion,
# `assignment of read-only location '*(const double *)(ufg_core_a + ...)'`, clang says
# `read-only variable is not assignable`.
_READ_ONLY_INPUT = re.compile(r"(?P<what>assignment of|increment of|decrement of) read-only "
                              r"location ['\u2018]\*\(const [^)]*\)\(ufg_core_(?P<name>\w+) \+ .*")
# A name nothing declares: gcc's `'c' undeclared (first use in this function)`, clang's
# `use of undeclared identifier 'c'`, nvcc's `identifier "c" is undefined`.  In a gufunc body
# a core argument is an accessor, `c(i)`, and its bare name is declared nowhere.
_UNDECLARED_NAME = re.compile(r"['\u2018](?P<gcc>\w+)['\u2019] undeclared.*|"
                              r"use of undeclared identifier ['\u2018](?P<clang>\w+)['\u2019]|"
                              r'identifier "(?P<nvcc>\w+)" is undefined')
# What the compilers add that is no help, or bad advice, in a body: gcc's advice to include a
# header for a library function (a body cannot include one, and the call is already reported
# as undeclared), its warning that the same call mismatches a built-in, and its reminder that
# an undeclared name is reported once per function.
# What C accepts in a body and nvcc's C++ refuses, or gives another meaning: gcc's message,
# and what to write instead (README, "The signature file format").
_JUMP_PAST_INITIALIZATION = re.compile(r"(?P<what>jump skips|switch jumps over) variable "
                                       r"initialization(?P<flag> \[-W[\w=-]*\])?")
_VARIABLE_LENGTH_ARRAY = re.compile(r"ISO C90 forbids variable length array (?P<name>\S+)"
                                    r"(?P<flag> \[-W[\w=-]*\])?")
_IMAGINARY_DISCARDED = re.compile(r"conversion from (?P<types>.+ to .+) discards imaginary "
                                  r"component(?P<flag> \[-W[\w=-]*\])?")
# A conditional between a complex64 value and a double one: C's type is complex128, which
# CUDA C++ cannot give it (ufuncgen/complex.h refuses it there).
_COMPLEX_CONDITIONAL = re.compile(
    r"implicit conversion from (?P<from>\S+ \{aka ['\u2018]const _Complex float['\u2019]\}|"
    r"['\u2018](?:const )?(?:complex float|_Complex float)['\u2019]) to (?P<to>\S+ double['\u2019]) "
    r"to match other result of conditional(?P<flag> \[-W[\w=-]*\])?")
# The prelude's total integer division, which a body's `/` and `%` are rewritten into
# (gen/operators.py): a message met in its expansion is about the user's operator.
_DIVISIONS = {"ufg_div": "/", "ufg_rem": "%"}
# -Wconversion is on for its complex message alone: its others are not shown.
_OTHER_CONVERSION = re.compile(r".*\[-W(?:error=)?conversion\]")
_UNHELPFUL = re.compile(r"include ['\u2018]<[^>]*>['\u2019] or provide a declaration of .*|"
                        r"incompatible implicit declaration of built-in function .*|"
                        r"each undeclared identifier is reported only once .*")


@dataclass(frozen=True)
class CompilerDiagnostic:
    location: Location
    severity: str          # "error", "warning", "note"
    message: str
    has_column: bool = True

    def format(self, lines: list[str] | None) -> str:
        where = str(self.location) if self.has_column else \
            f"{self.location.path}:{self.location.line}"
        text = f"{where}: {self.severity}: {self.message}"
        if lines is not None and 0 < self.location.line <= len(lines):
            source = lines[self.location.line - 1].replace("\t", " ")
            text += f"\n    {source}"
            if self.has_column:
                text += f"\n    {' ' * (self.location.col - 1)}^"
        return text


def generated_names(module: Module) -> dict[str, str]:
    """C names of the generated code that the compilers' messages may name, as the user
    wrote them: `ufg_body_lerp_float32` is `'lerp' for float32(float32, float32, float32)`."""
    names = {}
    for fn in module.functions:
        for sig in fn.signatures:
            names[f"ufg_body_{fn.name}_{sig.suffix}"] = f"'{fn.name}' for {sig.text}"
    for t, helpers in module.helper_instances:
        for helper in helpers:
            names[f"{helper.name}__{t.name}"] = f"helper '{helper.name}' for T = {t.name}"
    return names


def core_arguments(module: Module) -> dict[tuple[str, int], dict[str, Arg]]:
    """(path, line) of each line of a gufunc's body → its arguments with core dimensions."""
    found = {}
    for fn in module.functions:
        core = {a.name: a for a in fn.args if a.core_dims}
        if core:
            for n in range(len(fn.body.lines)):
                found[(fn.body.path, fn.body.first_line + n)] = core
    return found


_INDEX_NAMES = "ijklmnopqrstuvwx"     # as many as an argument's core dimensions can be


def _core_argument_as_value(name: str, arg: Arg) -> str:
    dims = ", ".join(d.name for d in arg.core_dims)
    index = ", ".join(_INDEX_NAMES[:len(arg.core_dims)])
    if arg.is_output:
        return (f"'{name}' is an output with core dimensions ({dims}): write its elements, "
                f"{name}({index})")
    return (f"'{name}' is an input with core dimensions ({dims}): read its elements, "
            f"{name}({index})")


def _reworded(message: str, names: dict[str, str], core: dict[str, Arg] | None = None) -> str:
    """The compilers' wording where it does not say what is wrong in a body's terms: an
    "implicit declaration" is a call to a function that is not declared (a typo, `expp(x)`);
    every helper is declared before any body, so a helper so called is one whose prototype
    the compiler refused.  A gufunc's core argument used as a plain value (`c = 2;`) is
    undeclared: its elements are what a body reads or writes (`core`: the body's core
    arguments)."""
    m = _UNDECLARED_NAME.fullmatch(message)
    if m is not None and core:
        name = m["gcc"] or m["clang"] or m["nvcc"]
        if name in core:
            return _core_argument_as_value(name, core[name])
    m = _READ_ONLY_INPUT.fullmatch(message)
    if m is not None:
        return (f"{m['what']} an element of '{m['name']}', an input: a body reads its inputs "
                f"and writes only its outputs")
    m = _JUMP_PAST_INITIALIZATION.fullmatch(message)
    if m is not None:
        where = "a goto" if m["what"] == "jump skips" else "a switch's case label"
        return (f"{m['what']} variable initialization: C allows it, but a body "
                f"is also compiled as C++ (nvcc), where {where} may not jump past an initialised "
                f"declaration; declare the variable before the jump and assign it after "
                f"(`T t;` ... `t = ...;`), or enclose its declaration and the code using it in "
                f"a block, {{ ... }}{m['flag'] or ''}")
    m = _VARIABLE_LENGTH_ARRAY.fullmatch(message)
    if m is not None:
        return (f"variable length array {m['name']}: an array's size must be a "
                f"constant; C allows one known only at run time, C++ (nvcc) does not; size it "
                f"with a constant bound (and check the run-time size against it), or compute "
                f"without the array{m['flag'] or ''}")
    m = _IMAGINARY_DISCARDED.fullmatch(message)
    if m is not None:
        return (f"conversion from {m['types']} discards imaginary component: "
                f"C keeps the real part, nvcc's C++ refuses the conversion; write real(...) "
                f"for the real part, or abs(...) for the modulus{m['flag'] or ''}")
    m = _COMPLEX_CONDITIONAL.fullmatch(message)
    if m is not None:
        return (f"implicit conversion from {m['from']} to {m['to']} to match other result of "
                f"conditional: C gives this conditional the type complex128, "
                f"which nvcc's C++ cannot, and refuses it; convert the complex64 operand "
                f"(`(complex128_t)z`), or the other one to complex64{m['flag'] or ''}")
    m = _UNDECLARED.fullmatch(message)
    if m is None:
        return message
    helper = names.get(m["name"][1:-1])
    if helper is not None:
        return f"call to {helper}, which is not declared: its prototype did not compile"
    suggestion = _DID_YOU_MEAN.search(m["rest"])
    return (f"call to undeclared function {m['name']}: it is not a helper, nor declared by "
            f"ufuncgen's prelude or the C headers it includes"
            f"{suggestion.group(0) if suggestion else ''}")


def _rename(message: str, names: dict[str, str]) -> str:
    def replace(m: re.Match) -> str:
        described = names.get(m.group("name"))
        return m.group(0) if described is None else described
    return _QUOTED.sub(replace, message)


def _character_column(lines: list[str] | None, line: int, byte_column: int) -> int:
    """The column in characters, as ufuncgen counts it, of GCC's or Clang's column in bytes
    (-fdiagnostics-column-unit=byte): an accented letter before it is two bytes, one column."""
    if lines is None or not 0 < line <= len(lines):
        return byte_column
    return len(lines[line - 1].encode()[:byte_column - 1].decode("utf-8", "ignore")) + 1


def _edg_caret_column(quoted: str, caret: str, source: str) -> int | None:
    """The column in characters that nvcc's front end (EDG) marks: it quotes the line indented
    by two spaces, its comments blanked byte for byte, then a caret under the column, which
    counts bytes.  None when `quoted` is not the user's `source` line."""
    if not quoted.startswith("  ") or caret.strip() != "^":
        return None
    shown, line = quoted[2:].encode(), source.encode()
    if len(shown) > len(line) or any(a != b and a != 0x20 for a, b in zip(shown, line)):
        return None
    return _character_column([source], 1, caret.index("^") - 1)


def user_diagnostics(output: str, sources: dict[str, list[str]], module: Module | None = None,
                     shown: Iterable[Diagnostic] = (),
                     aliases: dict[str, str] | None = None) -> list[str]:
    """The diagnostics of `output` (a build's combined output) located in the signature files
    `sources` (display path → lines), each formatted with its source line and caret; an error
    in generated code whose macro-expansion note points at a signature file is reported there.
    Duplicates (a body is compiled several times) are dropped; order is kept.  So are the
    generator's own warnings (`shown`, printed already by the check before the build): the
    generator that the build runs prints them into its output again, and they are not the
    compilers'.  `aliases` maps another name of a file in messages to its name in `sources`
    (nvcc's #line directives name the files by their full paths)."""
    aliases = aliases or {}
    names = generated_names(module) if module is not None else {}
    already = {(str(d.location), d.severity, d.message) for d in shown}
    core = core_arguments(module) if module is not None else {}
    lines = output.splitlines()
    found: list[CompilerDiagnostic] = []
    pending: tuple[str, str, bool] | None = None   # a message in generated code (hidden?), awaiting its note
    hiding_notes = False    # the notes of a hidden message (a macro's expansions, one per level)
    i = 0
    while i < len(lines):
        text = lines[i]
        i += 1
        m = _GCC.fullmatch(text)
        if m and (f"{m['path']}:{m['line']}:{m['col']}", m["severity"], m["message"]) in already:
            continue
        if m:
            path, line = aliases.get(m["path"], m["path"]), int(m["line"])
            col = _character_column(sources.get(path), line, int(m["col"])) if m["col"] else 1
            severity, message = m["severity"].replace("fatal error", "error"), m["message"]
            hidden = bool(_UNHELPFUL.fullmatch(message) or (
                _OTHER_CONVERSION.fullmatch(message) and not _IMAGINARY_DISCARDED.fullmatch(message)))
            if severity != "note":
                hiding_notes = False
            if path not in sources:
                if severity in ("error", "warning"):
                    pending = (severity, message, hidden)
                continue
            if hidden or (severity == "note" and hiding_notes):
                continue
            if severity == "note" and pending is not None and "in expansion of macro" in message:
                macro = _MACRO_EXPANSION.search(message)
                severity, message, hidden = pending     # the user's line is where it went wrong
                pending = None
                if hidden:      # met inside a prelude macro: as hidden as in the user's code
                    hiding_notes = True     # and the expansions of the macros around it
                    continue
                promotion = _CONDITIONAL_PROMOTION.fullmatch(message)
                if promotion and macro and macro["name"] in PRELUDE_FUNCTIONS:
                    message = (f"implicit conversion from {promotion['types']} to match another "
                               f"argument of {macro['open']}{macro['name']}{macro['close']}, which computes in the type of "
                               f"their sum{promotion['flag'] or ''}")
                elif promotion and macro and macro["name"] in _DIVISIONS:
                    message = (f"implicit conversion from {promotion['types']} to match the other "
                               f"operand of '{_DIVISIONS[macro['name']]}'{promotion['flag'] or ''}")
            elif severity != "note":
                pending = None
            found.append(CompilerDiagnostic(Location(path, line, col), severity,
                                            _rename(_reworded(message, names,
                                                              core.get((path, line))), names),
                                            m["col"] is not None))
            continue
        m = _NVCC.fullmatch(text)
        if m and aliases.get(m["path"], m["path"]) in sources:
            path, line = aliases.get(m["path"], m["path"]), int(m["line"])
            source = sources[path][line - 1] if 0 < line <= len(sources[path]) else None
            col = None
            if i + 1 < len(lines) and source is not None:
                col = _edg_caret_column(lines[i], lines[i + 1], source)
                i += 2 if col is not None else 0
            found.append(CompilerDiagnostic(Location(path, line, col or 1),
                                            m["severity"].replace("remark", "note"),
                                            _rename(_reworded(m["message"], names,
                                                              core.get((path, line))), names),
                                            col is not None))
    return [d.format(sources.get(d.location.path)) for d in dict.fromkeys(found)]


# A build's own chatter about a failure, which says nothing of what went wrong: make's and
# Ninja's `*** [...] Error 1`, `Waiting for unfinished jobs`, `build stopped`.
_BUILD_TOOL_NOISE = re.compile(r"g?make(?:\[\d+\])?: \*\*\*|ninja: build stopped|FAILED: |"
                               r"-- Configuring incomplete")
_ERROR_WORD = re.compile(r"\berror\b|undefined reference", re.IGNORECASE)
_CMAKE_ERROR = re.compile(r"CMake Error\b")
# A CMake error's message lines kept at most (a failed compiler test quotes its whole output).
_CMAKE_MESSAGE_LINES = 40


def error_summary(output: str, module: Module | None = None, limit: int = 10) -> list[str]:
    """The errors of a failed build's `output` that are located in no signature file (in the
    system headers, in generated code, CMake's own), each once, at most `limit` of them then
    a count of the rest: what to show instead of the whole log.  A compiler's error is its
    one line; CMake's, its first line and its message: the indented lines that follow, with
    the blank lines between them (a failed compiler test's cause, `nvcc fatal : Unsupported
    gpu architecture`, comes after several)."""
    names = generated_names(module) if module is not None else {}
    lines = output.splitlines()
    found: list[str] = []
    i = 0
    while i < len(lines):
        text = lines[i].rstrip()
        i += 1
        if _CMAKE_ERROR.match(text):
            block = [text]
            while i < len(lines) and (lines[i].startswith(" ") or not lines[i].strip()):
                block.append(lines[i].rstrip())
                i += 1
            while not block[-1]:
                block.pop()
            if len(block) > 1 + _CMAKE_MESSAGE_LINES:
                block = block[:1 + _CMAKE_MESSAGE_LINES] + ["  ..."]
            found.append("\n".join(block))
            continue
        if _BUILD_TOOL_NOISE.search(text) or not _ERROR_WORD.search(text):
            continue
        m = _GCC.fullmatch(text) or _NVCC.fullmatch(text)
        if m is not None and m["severity"] not in ("error", "fatal error"):
            continue
        found.append(_rename(text, names))
    found = list(dict.fromkeys(found))
    if len(found) > limit:
        found = found[:limit] + [f"... and {len(found) - limit} more"]
    return found

