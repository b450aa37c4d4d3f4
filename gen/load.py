"""Signature files on disk → a validated Module, or a SignatureError holding every diagnostic."""
from __future__ import annotations

import os

from .diagnostics import Diagnostic, DiagnosticSink, Location, SignatureError
from .model import Module, build_module
from .parse import parse_text


def display_path(path: str, source_root: str | None) -> str:
    """The path as written in messages and #line directives: relative to source_root when inside it."""
    if source_root:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(source_root))
        if not rel.startswith(".."):
            return rel
    return path


def directory_problem(path: str) -> str | None:
    """Why `path` can be neither a directory nor made one, as the end of a sentence about it
    ("exists and is not a directory"); None when it is one or can be created as far as the
    folders above it go.  Checked before anything is written, so a bad `-o` is reported as
    such rather than as the traceback of os.makedirs."""
    target = current = os.path.abspath(path)
    while not os.path.lexists(current):        # a file above it: not even lexists
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    if os.path.isdir(current):
        return None
    if current == target:
        return "exists and is not a directory"
    return f"cannot be created: {current!r} exists and is not a directory"


def _decode(shown: str, data: bytes) -> str | Diagnostic:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        source = data[start:end if end >= 0 else len(data)].decode("utf-8", "replace")
        col = len(data[start:exc.start].decode("utf-8", "replace")) + 1   # in characters, as shown
        return Diagnostic(Location(shown, line, col),
                          f"file is not valid UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}",
                          source)


def _nul_bytes(shown: str, text: str) -> list[Diagnostic]:
    """A NUL byte ends a C string: the compiler would ignore it, or cut a line short.  One
    diagnostic for the first NUL of each line holding one."""
    found = []
    offset = 0          # in bytes, as an editor's "go to byte" counts
    for number, line in enumerate(text.split("\n"), 1):
        col = line.find("\0")
        if col >= 0:
            found.append(Diagnostic(
                Location(shown, number, col + 1),
                f"file contains a NUL byte (0x00) at offset {offset + len(line[:col].encode())}: "
                "a signature file must be text", line))
        offset += len(line.encode()) + 1
    return found


def _lone_carriage_return(shown: str, text: str) -> list[Diagnostic]:
    """A carriage return that ends no line (classic Mac OS line endings, or one stray): this
    reader would take the line on as one, and C compilers would count it as a line's end, so
    every line number after it would differ between the two.  A diagnostic for the first."""
    for number, line in enumerate(text.split("\n"), 1):
        col = line.removesuffix("\r").find("\r")
        if col >= 0:
            return [Diagnostic(Location(shown, number, col + 1),
                               "file has a carriage return (CR) that ends no line: end lines "
                               "with LF or CR LF (a file saved with classic Mac OS line endings "
                               "has CR alone)", line)]
    return []


def _file_identity(path: str):
    """What two spellings of one file share: its device and inode, else its absolute path."""
    try:
        st = os.stat(path)
    except OSError:
        return os.path.abspath(path)
    return st.st_dev, st.st_ino


def load_module(qualified_name: str, paths: list[str], source_root: str | None = None) -> Module:
    files = []
    sinks: list[DiagnosticSink] = []     # one per path, in the order given
    given: dict[object, str] = {}        # file → the path it was first given as
    for path in paths:
        shown = display_path(path, source_root)
        sink = DiagnosticSink(shown, [])
        sinks.append(sink)
        identity = _file_identity(path)
        if identity in given:
            # Read twice, its every function would be "defined twice", at its own lines.
            first = given[identity]
            also = "" if first == path else f" (first as {first!r})"
            sink.diagnostics.append(Diagnostic(Location(shown, 1, 1), f"file is given twice"
                                               f"{also}: give each signature file once"))
            continue
        given[identity] = path
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as exc:
            sink.diagnostics.append(Diagnostic(Location(shown, 1, 1), f"cannot read file: {exc.strerror}"))
            continue
        text = _decode(shown, data)
        if isinstance(text, Diagnostic):
            sink.diagnostics.append(text)
            continue
        unreadable = _nul_bytes(shown, text) or _lone_carriage_return(shown, text)
        if unreadable:
            sink.diagnostics.extend(unreadable)
            continue
        raw = parse_text(shown, text, sink)
        files.append((raw, sink, shown))
    module = build_module(qualified_name, files)
    if module is None or any(sink.diagnostics for sink in sinks):
        raise SignatureError([d for sink in sinks for d in sink.diagnostics])
    return module
