"""Source locations and compiler-style error messages.

Every declaration the parser produces carries a `Location`; every problem found in a
signature file becomes a `Diagnostic`, printed as

    path:line:col: error: message
        the offending line
        ^

Warnings (`path:line:col: warning: message`) point at likely mistakes that still generate
code; they never make the generator fail.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Location:
    path: str
    line: int          # 1-based
    col: int           # 1-based

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    location: Location
    message: str
    source_line: str | None = None
    severity: str = "error"     # or "warning"

    def format(self) -> str:
        text = f"{self.location}: {self.severity}: {self.message}"
        if self.source_line is not None:
            # A tab, a NUL or a carriage return shows as one space, so that the caret stays
            # under its column (and a CR does not send the line back to its start).
            line = self.source_line.rstrip("\n").removesuffix("\r")
            line = line.replace("\t", " ").replace("\0", " ").replace("\r", " ")
            text += f"\n    {line}\n    {' ' * (self.location.col - 1)}^"
        return text


class SignatureError(Exception):
    """Raised with every diagnostic found in one run of the generator."""

    def __init__(self, diagnostics: list[Diagnostic]):
        # Files in the order given (the order of the command line), each file top to bottom.
        files = {d.location.path: i for i, d in reversed(list(enumerate(diagnostics)))}
        self.diagnostics = sorted(
            diagnostics, key=lambda d: (files[d.location.path], d.location.line, d.location.col)
        )
        super().__init__(self.format())

    def format(self) -> str:
        count = len(self.diagnostics)
        summary = f"{count} error{'s' if count != 1 else ''} generated."
        return "\n".join([d.format() for d in self.diagnostics] + [summary])


@dataclass
class DiagnosticSink:
    """Collects diagnostics for one file so that all errors are reported, not only the first."""

    path: str
    lines: list[str]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    warnings: list[Diagnostic] = field(default_factory=list)

    def error(self, location: Location, message: str) -> None:
        source = self.lines[location.line - 1] if 0 < location.line <= len(self.lines) else None
        self.diagnostics.append(Diagnostic(location, message, source))

    def warning(self, location: Location, message: str) -> None:
        source = self.lines[location.line - 1] if 0 < location.line <= len(self.lines) else None
        self.warnings.append(Diagnostic(location, message, source, "warning"))

    def at(self, line: int, col: int) -> Location:
        return Location(self.path, line, col)


def format_warnings(warnings) -> str:
    """The warnings of a module that generated, as printed to stderr ('' when none)."""
    if not warnings:
        return ""
    count = len(warnings)
    return "\n".join([w.format() for w in warnings]
                     + [f"{count} warning{'s' if count != 1 else ''} generated."])
