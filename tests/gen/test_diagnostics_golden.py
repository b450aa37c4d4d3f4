"""Golden tests: the exact text `ufuncgen check` prints for bad signature files.

Each case is `tests/golden/<case>.ufunc` (the bad input) and `<case>.err` (the exact stderr
of `ufuncgen check <case>.ufunc` run in tests/golden). A case may span several files:
`<case>.2.ufunc`, `<case>.3.ufunc`, ... are checked together with `<case>.ufunc`, in that order.

To regenerate the .err files after an intended change to a message:

    UFUNCGEN_REGEN_GOLDEN=1 python -m pytest tests/gen/test_diagnostics_golden.py

then read every changed .err (`git diff tests/golden`) before keeping it.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ufuncgen import cli

GOLDEN = Path(__file__).resolve().parent.parent / "golden"
REGEN = os.environ.get("UFUNCGEN_REGEN_GOLDEN") == "1"
_DIAGNOSTIC = re.compile(r"(?P<path>[^:\n]+\.ufunc):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.+)")


def _cases() -> list[str]:
    return sorted(p.name[:-len(".ufunc")] for p in GOLDEN.glob("*.ufunc") if "." not in p.name[:-len(".ufunc")])


def _files(case: str) -> list[str]:
    extra = sorted(GOLDEN.glob(f"{case}.*.ufunc"), key=lambda p: int(p.name.split(".")[1]))
    return [f"{case}.ufunc"] + [p.name for p in extra]


def _check(files: list[str]) -> subprocess.CompletedProcess:
    """The real `ufuncgen check FILES` command, run in tests/golden."""
    # This interpreter's script (beside it in a venv's bin/), not whichever one PATH finds
    # first: that may be another install's.
    command = Path(sys.executable).parent / "ufuncgen"
    argv = [str(command)] if command.is_file() else [sys.executable, "-m", "ufuncgen"]
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    return subprocess.run([*argv, "check", *files], cwd=GOLDEN, capture_output=True, env=env,
                          timeout=60)


def _check_in_process(files: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
    """`ufuncgen check FILES` in tests/golden, in this process (a process per case is slow)."""
    monkeypatch.chdir(GOLDEN)
    capsys.readouterr()
    try:
        code = cli.main(["check", *files])
    except SystemExit as exc:    # argparse
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", _cases())
def test_check_prints_exactly_the_golden_diagnostics_and_fails(case, monkeypatch, capsys):
    code, out, err = _check_in_process(_files(case), monkeypatch, capsys)
    expected_path = GOLDEN / f"{case}.err"
    if REGEN:
        expected_path.write_text(err, encoding="utf-8")
    assert expected_path.exists(), f"no {expected_path.name}: run with UFUNCGEN_REGEN_GOLDEN=1"
    assert "Traceback" not in err
    assert code != 0
    assert out == ""
    assert err == expected_path.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", ["several_errors", "duplicate_across_files", "not_utf8", "empty_file"])
def test_the_ufuncgen_command_prints_the_same_golden_text_and_exits_non_zero(case):
    result = _check(_files(case))
    stderr = result.stderr.decode("utf-8")
    assert "Traceback" not in stderr
    assert result.returncode == 1
    assert result.stdout == b""
    assert stderr == (GOLDEN / f"{case}.err").read_text(encoding="utf-8")


@pytest.mark.parametrize("case", _cases())
def test_golden_carets_sit_under_the_reported_column_of_the_quoted_source_line(case):
    """Every quoted line is the file's own line, and the caret is at the reported column."""
    expected = (GOLDEN / f"{case}.err").read_text(encoding="utf-8").split("\n")
    diagnostics = 0
    for i, text in enumerate(expected):
        m = _DIAGNOSTIC.fullmatch(text)
        if not m:
            continue
        diagnostics += 1
        data = (GOLDEN / m["path"]).read_bytes().decode("utf-8", "replace").split("\n")
        line, col = int(m["line"]), int(m["col"])
        if i + 2 < len(expected) and expected[i + 1].startswith("    ") and expected[i + 2].strip() == "^":
            shown = data[line - 1].removesuffix("\r")
            assert expected[i + 1] == "    " + shown.replace("\t", " ").replace("\0", " ").replace("\r", " ")
            assert expected[i + 2] == "    " + " " * (col - 1) + "^"
        else:   # no source line to show: only an empty file, or a file that cannot be read
            assert data == [""] or not (GOLDEN / m["path"]).exists(), text
    count = f"{diagnostics} error{'s' if diagnostics != 1 else ''} generated."
    assert expected[-2:] == [count, ""]


def test_every_golden_input_has_an_expected_output_and_vice_versa():
    inputs = {p.name[:-len(".ufunc")] for p in GOLDEN.glob("*.ufunc")}
    outputs = {p.name[:-len(".err")] for p in GOLDEN.glob("*.err")}
    assert outputs == set(_cases())
    assert {name.split(".")[0] for name in inputs} == set(_cases())


def test_the_non_utf8_golden_input_really_is_not_utf8():
    data = (GOLDEN / "not_utf8.ufunc").read_bytes()
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")


def test_errors_in_several_files_are_reported_in_command_line_order():
    result = _check(["duplicate_across_files.2.ufunc", "empty_file.ufunc", "duplicate_across_files.ufunc"])
    stderr = result.stderr.decode("utf-8")
    paths = [m["path"] for m in map(_DIAGNOSTIC.fullmatch, stderr.split("\n")) if m]
    assert paths == ["empty_file.ufunc", "duplicate_across_files.ufunc"]
    assert "first defined at duplicate_across_files.2.ufunc:7:7" in stderr
    assert stderr.endswith("2 errors generated.\n")


def test_a_missing_file_is_an_error_message_not_a_traceback():
    result = _check(["no_such_file.ufunc"])
    assert result.returncode != 0
    assert result.stderr.decode() == ("no_such_file.ufunc:1:1: error: cannot read file: "
                                      "No such file or directory\n1 error generated.\n")


def test_a_file_given_twice_is_an_error_saying_so_not_a_duplicate_of_each_function(tmp_path):
    (tmp_path / "a.ufunc").write_text("ufunc f(x) -> y\n    types: float64(float64)\n{ y = x; }\n")
    (tmp_path / "link.ufunc").symlink_to("a.ufunc")
    env = dict(os.environ, PYTHONIOENCODING="utf-8")
    for files, also in ((["a.ufunc", "a.ufunc"], ""), (["a.ufunc", "./a.ufunc"], " (first as 'a.ufunc')"),
                        (["link.ufunc", "a.ufunc"], " (first as 'link.ufunc')")):
        result = subprocess.run([sys.executable, "-m", "ufuncgen", "check", *files], cwd=tmp_path,
                                capture_output=True, text=True, env=env, timeout=60)
        assert (result.returncode, result.stdout) == (1, "")
        assert result.stderr == (f"a.ufunc:1:1: error: file is given twice{also}: give each "
                                 "signature file once\n1 error generated.\n")


def test_check_of_a_good_file_succeeds_quietly_on_stderr():
    examples = GOLDEN.parent.parent / "signatures" / "examples.ufunc"
    result = _check([str(examples)])
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b""
    assert result.stdout.decode().startswith("ok: ")


# ----------------------------------------------------------------------------- warnings

WARNINGS = GOLDEN / "warnings"
_WARNING = re.compile(r"(?P<path>[^:\n]+\.ufunc):(?P<line>\d+):(?P<col>\d+): warning: (?P<message>.+)")


@pytest.mark.parametrize("case", sorted(p.stem for p in WARNINGS.glob("*.ufunc")))
def test_check_prints_exactly_the_golden_warnings_and_succeeds(case, monkeypatch, capsys):
    """tests/golden/warnings/<case>.ufunc generate, with the warnings in <case>.err."""
    monkeypatch.chdir(WARNINGS)
    capsys.readouterr()
    code = cli.main(["check", f"{case}.ufunc"])
    out, err = capsys.readouterr()
    expected_path = WARNINGS / f"{case}.err"
    if REGEN:
        expected_path.write_text(err, encoding="utf-8")
    assert code == 0
    assert out.startswith("ok: ")
    assert err == expected_path.read_text(encoding="utf-8")
    lines = err.split("\n")
    source = (WARNINGS / f"{case}.ufunc").read_text(encoding="utf-8").split("\n")
    count = 0
    for i, text in enumerate(lines):
        m = _WARNING.fullmatch(text)
        if m:
            count += 1
            line, col = int(m["line"]), int(m["col"])
            assert lines[i + 1] == "    " + source[line - 1]
            assert lines[i + 2] == "    " + " " * (col - 1) + "^"
            # At the division or the shift, at the cast to T a warning quotes, or at the
            # helper's name it quotes.
            quoted = re.search(r"helper '(\w+)' is not called", m["message"])
            cast = re.match(r"'(\(\s*T\s*\)[^']*)' is ", m["message"])
            if quoted:
                assert source[line - 1][col - 1:].startswith(quoted[1] + "(")
            elif cast:
                assert source[line - 1][col - 1:].startswith(cast[1])
            elif " shifts ('" in m["message"]:
                assert source[line - 1][col - 1:col + 1] in ("<<", ">>")
            else:
                assert source[line - 1][col - 1] in "/%"
    assert count and lines[-2:] == [f"{count} warning{'s' if count != 1 else ''} generated.", ""]


def test_the_generator_command_prints_warnings_and_still_generates(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "ufuncgen.gen", "--module", "pkg.intdiv", "-o", str(tmp_path),
         "int_division.ufunc"], cwd=WARNINGS, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (WARNINGS / "int_division.err").read_text(encoding="utf-8")
    assert (tmp_path / "intdiv_module.c").exists()


def test_ufuncgen_build_prints_the_warnings_before_compiling(monkeypatch, capsys, tmp_path):
    from ufuncgen import build as build_module

    class Stop(Exception):
        pass

    def no_cmake(*args, **kwargs):
        raise Stop
    monkeypatch.chdir(WARNINGS)
    monkeypatch.setattr(build_module.subprocess, "run", no_cmake)
    with pytest.raises(Stop):
        build_module.build(["int_division.ufunc"], "pkg.intdiv", str(tmp_path))
    assert capsys.readouterr().err == (WARNINGS / "int_division.err").read_text(encoding="utf-8")


def test_the_seed_examples_give_no_warnings():
    from ufuncgen.gen import load_module
    examples = GOLDEN.parent.parent / "signatures" / "examples.ufunc"
    assert load_module("ufuncgen.examples", [str(examples)]).warnings == ()
