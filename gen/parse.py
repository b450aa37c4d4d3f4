"""Signature file → raw declarations, losslessly, every piece with its source location.

The parser only knows the shape of the file; what the pieces mean, and whether they fit
together, is decided once, in `model.py`.

    # a comment
    helper void polar_to_cartesian(T rho, T theta, T *x, T *y)
    {
        *x = rho * cos(theta);
        *y = rho * sin(theta);
    }

    ufunc hypot(x, y) -> r
        doc: Euclidean norm sqrt(x*x + y*y), without overflow.
        types: float32(float32, float32), float64(float64, float64)
    {
        r = hypot(x, y);
    }

A body starts with a line whose first character is `{` and ends with a line holding only
`}` at column 1; everything between is C, passed through untouched.  C may follow the `{` on
its line (`{   // the sum`), and a short body may be one line, `{ y = x * x; }`.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from .diagnostics import DiagnosticSink, Location

OPTION_KEYS = ("doc", "types", "layout", "identity", "associative", "fastmath", "threads", "dim",
               "specialize")

# ASCII digits only: Python's \d takes any Unicode digit ('٣'), which neither C nor NumPy reads.
_TOKEN = re.compile(
    r"\s*(?:(?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<arrow>->)|(?P<punct>\S))"
)


@dataclass(frozen=True)
class Token:
    text: str
    location: Location
    kind: str = "name"   # name, number, arrow, punct, end


@dataclass(frozen=True)
class RawTypeSignature:
    outputs: tuple[Token, ...]
    inputs: tuple[Token, ...]
    location: Location
    text: str


@dataclass(frozen=True)
class RawLayout:
    inputs: tuple[tuple[Token, ...], ...]
    outputs: tuple[tuple[Token, ...], ...]
    location: Location
    text: str


@dataclass(frozen=True)
class RawDimDefinition:
    name: Token
    expression: tuple[Token, ...]
    location: Location


@dataclass(frozen=True)
class RawSpecialization:
    """`specialize: m=4, n=4, p=4`: core sizes that get a loop of their own."""
    sizes: tuple[tuple[Token, Token], ...]     # (dimension name, size)
    location: Location


@dataclass(frozen=True)
class RawBody:
    lines: tuple[str, ...]
    first_line: int        # line number of the first line of C, just after the `{`
    location: Location     # the `{`


@dataclass(frozen=True)
class RawFunction:
    kind: Token            # "ufunc" or "gufunc"
    name: Token
    args: tuple[Token, ...]
    outputs: tuple[Token, ...]
    doc: tuple[str, ...]
    types: tuple[RawTypeSignature, ...]
    layout: RawLayout | None
    identity: Token | None
    fastmath: Token | None
    dims: tuple[RawDimDefinition, ...]
    body: RawBody | None
    broken: frozenset[str] = frozenset()   # option keys with a line already reported as an error
    threads: Token | None = None
    associative: Token | None = None
    specializations: tuple[RawSpecialization, ...] = ()


@dataclass(frozen=True)
class RawHelper:
    name: Token
    prototype: str         # "void polar_to_cartesian(T rho, T theta, T *x, T *y)"
    location: Location
    body: RawBody | None


@dataclass(frozen=True)
class RawFile:
    path: str
    lines: tuple[str, ...]
    functions: tuple[RawFunction, ...]
    helpers: tuple[RawHelper, ...]


# Comments, string and character literals of C text (an unterminated one runs to the end).
_C_NOISE = re.compile(r'//[^\n]*|/\*.*?(?:\*/|\Z)|"(?:\\.|[^"\\\n])*"?|\'(?:\\.|[^\'\\\n])*\'?', re.S)


def blank_c_noise(text: str) -> str:
    """C text with its comments and string and character literals blanked, newlines and
    columns kept: what is left is code, at the user's lines and columns."""
    return _C_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)

# A line at column 1 that starts a declaration: where an unclosed body is known to have ended.
_DECLARATION = re.compile(r"(?:ufunc|gufunc|helper)\s+[A-Za-z_]\w*.*\(")

_DELIMITERS = frozenset("(),:=")   # what ends a name even without a space before it


class _Cursor:
    """Tokens of one line, with `expect` that reports at the spot it stopped."""

    def __init__(self, sink: DiagnosticSink, text: str, line: int, col: int = 1):
        self.sink = sink
        self.tokens: list[Token] = []
        pos = 0
        while True:
            m = _TOKEN.match(text, pos)
            if not m:
                break
            kind = m.lastgroup
            location = sink.at(line, col + m.start(kind))
            problem = _character_problem(m.group(kind))
            if problem:
                raise ParseError(location, f"unexpected {problem}")
            self.tokens.append(Token(m.group(kind), location, kind))
            pos = m.end()
        end_col = col + len(text.rstrip())
        self.tokens.append(Token("", sink.at(line, end_col), "end"))
        self.index = 0

    def peek(self) -> Token:
        return self.tokens[self.index]

    def next(self) -> Token:
        tok = self.tokens[self.index]
        if tok.kind != "end":
            self.index += 1
        return tok

    def accept(self, text: str) -> Token | None:
        if self.peek().text == text and self.peek().kind != "end":
            return self.next()
        return None

    def expect(self, text: str, what: str) -> Token:
        tok = self.peek()
        if tok.text != text or tok.kind == "end":
            raise ParseError(tok.location, f"expected {what}, found {_describe(tok)}")
        return self.next()

    def expect_name(self, what: str) -> Token:
        """A name; a word that is not an identifier (`my-func`, `2fast`, `café`) comes back
        whole, as one name token, for the model to reject by name."""
        tok = self.peek()
        if tok.kind in ("end", "arrow") or tok.text in _DELIMITERS:
            raise ParseError(tok.location, f"expected {what}, found {_describe(tok)}")
        self.next()
        text, end_col = tok.text, tok.location.col + len(tok.text)
        while True:
            nxt = self.peek()
            if nxt.kind in ("end", "arrow") or nxt.text in _DELIMITERS or nxt.location.col != end_col:
                break
            self.next()
            text, end_col = text + nxt.text, end_col + len(nxt.text)
        return tok if text == tok.text and tok.kind == "name" else Token(text, tok.location, "name")

    def expect_end(self) -> None:
        tok = self.peek()
        if tok.kind != "end":
            raise ParseError(tok.location, f"unexpected {_describe(tok)}")


class ParseError(Exception):
    def __init__(self, location: Location, message: str):
        self.location, self.message = location, message



def _describe(tok: Token) -> str:
    return "end of line" if tok.kind == "end" else f"'{tok.text}'"


def _invisible(c: str) -> bool:
    """A format, control, separator or unassigned character beyond ASCII: nothing shows."""
    return not c.isascii() and unicodedata.category(c)[0] in "CZ"


def _character_problem(c: str) -> str | None:
    """What is wrong with a character outside a body, as the end of a sentence: one that is
    neither ASCII nor a letter (names of letters beyond ASCII are refused, by name, later).  An
    invisible one, often pasted from a web page, is named, since the message cannot show it;
    a digit or sign beyond ASCII looks like one that C and NumPy read, but is not."""
    if c.isascii() or unicodedata.category(c)[0] in "LM":
        return None
    name = f"U+{ord(c):04X} {unicodedata.name(c, 'UNNAMED')}"
    if _invisible(c):
        return (f"invisible character {name}: delete it (text pasted from a web page or a "
                f"word processor often holds one)")
    if unicodedata.category(c) == "Nd":
        return f"'{c}' ({name}): write numbers with the ASCII digits 0-9"
    return f"'{c}' ({name}), which is not ASCII"


def _name_list(cur: _Cursor, what: str, closer: str | None) -> list[Token]:
    names = [cur.expect_name(what)]
    while cur.accept(","):
        names.append(cur.expect_name(what))
    if closer:
        cur.expect(closer, f"',' or '{closer}'")
    return names


def parse_type_signatures(cur: _Cursor) -> list[RawTypeSignature]:
    """`float32(float32, float32), (float64, float64)(float64)`"""
    sigs = []
    while True:
        start = cur.peek()
        if cur.accept("("):
            outputs = _name_list(cur, "an output type", ")")
        else:
            outputs = [cur.expect_name("a type signature such as float64(float64, float64)")]
        cur.expect("(", "'(' and the input types")
        inputs = [] if cur.peek().text == ")" else _name_list(cur, "an input type", None)
        end = cur.expect(")", "',' or ')'")
        line = cur.sink.lines[start.location.line - 1]
        text = line[start.location.col - 1:end.location.col]
        sigs.append(RawTypeSignature(tuple(outputs), tuple(inputs), start.location, text))
        if not cur.accept(","):
            break
    cur.expect_end()
    return sigs


def _core_dims(cur: _Cursor) -> tuple[Token, ...]:
    cur.expect("(", "'(' opening a core dimension list")
    dims: list[Token] = []
    if not cur.accept(")"):
        while True:
            tok = cur.next()
            if tok.kind not in ("name", "number"):
                raise ParseError(tok.location, f"expected a dimension name or size, found {_describe(tok)}")
            dims.append(tok)
            if cur.accept(")"):
                break
            cur.expect(",", "',' or ')'")
    return tuple(dims)


def parse_layout(cur: _Cursor) -> RawLayout:
    """`(m,n),(n,p)->(m,p)`"""
    start = cur.peek()
    inputs = [_core_dims(cur)]
    while cur.accept(","):
        inputs.append(_core_dims(cur))
    cur.expect("->", "'->' between input and output core dimensions")
    outputs = [_core_dims(cur)]
    while cur.accept(","):
        outputs.append(_core_dims(cur))
    cur.expect_end()
    line = cur.sink.lines[start.location.line - 1]
    text = "".join(line[start.location.col - 1:].split())
    return RawLayout(tuple(inputs), tuple(outputs), start.location, text)


def parse_dim_definition(cur: _Cursor) -> RawDimDefinition:
    """`p = n*(n-1)/2`"""
    name = cur.expect_name("the name of an output core dimension")
    cur.expect("=", "'=' and a size expression")
    expression = []
    while cur.peek().kind != "end":
        expression.append(cur.next())
    if not expression:
        raise ParseError(cur.peek().location, "expected a size expression after '='")
    return RawDimDefinition(name, tuple(expression), name.location)


def parse_specialization(cur: _Cursor) -> RawSpecialization:
    """`m=4, n=4, p=4`"""
    start = cur.peek()
    sizes = []
    while True:
        name = cur.expect_name("the name of a core dimension")
        cur.expect("=", "'=' and a size")
        size = cur.next()
        if size.kind != "number":
            raise ParseError(size.location, f"expected a size such as 4, found {_describe(size)}")
        sizes.append((name, size))
        if not cur.accept(","):
            break
    cur.expect_end()
    return RawSpecialization(tuple(sizes), start.location)


class _FunctionBuilder:
    """Collects the option lines of one function before its body."""

    def __init__(self, kind: Token, name: Token, args: list[Token], outputs: list[Token]):
        self.kind, self.name, self.args, self.outputs = kind, name, args, outputs
        self.doc: list[str] = []
        self.types: list[RawTypeSignature] = []
        self.layout: RawLayout | None = None
        self.identity: Token | None = None
        self.fastmath: Token | None = None
        self.threads: Token | None = None
        self.associative: Token | None = None
        self.dims: list[RawDimDefinition] = []
        self.specializations: list[RawSpecialization] = []
        self.broken: set[str] = set()

    def build(self, body: RawBody | None) -> RawFunction:
        return RawFunction(self.kind, self.name, tuple(self.args), tuple(self.outputs),
                           tuple(self.doc), tuple(self.types), self.layout, self.identity,
                           self.fastmath, tuple(self.dims), body, frozenset(self.broken),
                           self.threads, self.associative, tuple(self.specializations))


def _parse_header(cur: _Cursor, kind: Token) -> _FunctionBuilder:
    name = cur.expect_name(f"a function name after '{kind.text}'")
    cur.expect("(", "'(' and the argument names")
    args = [] if cur.peek().text == ")" else _name_list(cur, "an argument name", None)
    cur.expect(")", "',' or ')'")
    cur.expect("->", "'->' and the output names")
    if cur.accept("("):
        outputs = _name_list(cur, "an output name", ")")
    else:
        outputs = _name_list(cur, "an output name", None)
    cur.expect_end()
    return _FunctionBuilder(kind, name, args, outputs)


def _parse_option(sink: DiagnosticSink, fn: _FunctionBuilder, text: str, number: int) -> None:
    indent = len(text) - len(text.lstrip())
    key_match = re.match(r"([A-Za-z_]\w*)\s*:", text[indent:])
    col = indent + 1
    if not key_match:
        raise ParseError(sink.at(number, col),
                          "expected an option line 'key: value' or a line holding only '{'")
    key = key_match.group(1)
    if key not in OPTION_KEYS:
        raise ParseError(sink.at(number, col),
                          f"unknown option '{key}'; expected one of {', '.join(OPTION_KEYS)}")
    value_col = col + key_match.end()
    value = text[indent + key_match.end():]
    if key == "doc":
        fn.doc.append(value.rstrip())     # its indentation kept: the model removes what all share
        return
    try:
        cur = _Cursor(sink, value, number, value_col)
        _parse_option_value(sink, fn, key, cur, number, col)
    except ParseError:
        fn.broken.add(key)   # so that the model does not also report the option as missing
        raise


def _parse_option_value(sink: DiagnosticSink, fn: _FunctionBuilder, key: str, cur: _Cursor,
                        number: int, col: int) -> None:
    if key == "types":
        fn.types.extend(parse_type_signatures(cur))
    elif key == "layout":
        if fn.layout is not None:
            raise ParseError(sink.at(number, col), "layout given twice")
        fn.layout = parse_layout(cur)
    elif key == "dim":
        fn.dims.append(parse_dim_definition(cur))
    elif key == "specialize":
        fn.specializations.append(parse_specialization(cur))
    else:   # identity, associative, fastmath, threads: one word or number, maybe signed
        sign = cur.accept("-") or cur.accept("+")
        tok = cur.next()
        if tok.kind not in ("name", "number"):
            raise ParseError(tok.location, f"expected a value for '{key}', found {_describe(tok)}")
        cur.expect_end()
        if sign:
            tok = Token(sign.text + tok.text, sign.location, tok.kind)
        if getattr(fn, key) is not None:
            raise ParseError(sink.at(number, col), f"{key} given twice")
        setattr(fn, key, tok)


def opens_body(text: str) -> bool:
    return text.startswith("{")


def _one_line_body_end(text: str) -> int | None:
    """Where the `}` that closes a one-line body is, `{ y = x * x; }`, or None when the `{`
    line leaves its body open (braces in comments and literals do not count)."""
    code = blank_c_noise(text).rstrip()
    if not code.endswith("}"):
        return None
    depth = 0
    for c in code[:-1]:
        depth += (c == "{") - (c == "}")
        if depth == 0:
            return None         # `{ a; } b; }`: the first `}` closed the body already
    return len(code) - 1 if depth == 1 else None


def _read_body(sink: DiagnosticSink, lines: list[str], index: int, owner: str) -> tuple[RawBody, int]:
    """`lines[index]` is the `{` line; returns the body and the index after its `}`.  The `{`
    (and a one-line body's `}`) become spaces, so that the C keeps the user's columns."""
    opening = sink.at(index + 1, 1)
    first = " " + lines[index][1:]
    end = _one_line_body_end(lines[index])
    if end is not None:
        return RawBody((first[:end] + " " + first[end + 1:],), index + 1, opening), index + 1
    end = index + 1
    while end < len(lines) and lines[end].rstrip() != "}":
        _refuse_invisible_after_closing_brace(sink, lines[end], end + 1)
        if _DECLARATION.match(lines[end]):
            raise ParseError(opening, f"the body of {owner} is never closed: end it with a line "
                                       f"holding only '}}' at column 1, before the declaration "
                                       f"at line {end + 1}")
        end += 1
    if end == len(lines):
        raise ParseError(opening, f"the body of {owner} is never closed: end it with a line "
                                   "holding only '}' at column 1")
    if first.strip():
        return RawBody((first, *lines[index + 1:end]), index + 1, opening), end + 1
    return RawBody(tuple(lines[index + 1:end]), index + 2, opening), end + 1


def _refuse_invisible_after_closing_brace(sink: DiagnosticSink, text: str, number: int) -> None:
    """A `}` at column 1 followed only by invisible characters looks like the line that closes
    a body, but does not close it: say so there, not that the body is never closed."""
    rest = text[1:].strip()
    if text.startswith("}") and rest and all(map(_invisible, rest)):
        col = 2 + text[1:].index(rest[0])
        raise ParseError(sink.at(number, col), f"unexpected {_character_problem(rest[0])}; "
                                               f"a body ends at a line holding only '}}'")


def _is_blank_or_comment(text: str) -> bool:
    stripped = text.strip()
    return not stripped or stripped.startswith("#")


def parse_text(path: str, text: str, sink: DiagnosticSink) -> RawFile:
    text = text.removeprefix("\ufeff")   # a byte order mark some editors write: not the user's text
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    sink.lines = lines
    functions: list[RawFunction] = []
    helpers: list[RawHelper] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        number = i + 1
        if _is_blank_or_comment(line):
            i += 1
            continue
        try:
            if line[0].isspace():
                raise ParseError(sink.at(number, len(line) - len(line.lstrip()) + 1),
                                  "unexpected indented line; declarations start at column 1 with "
                                  "'ufunc', 'gufunc' or 'helper'")
            cur = _Cursor(sink, line, number)
            head = cur.next()
            if head.text == "helper":
                i = _parse_helper(sink, lines, i, cur, head, helpers)
            elif head.text in ("ufunc", "gufunc"):
                i = _parse_function(sink, lines, i, cur, head, functions)
            else:
                raise ParseError(head.location,
                                  f"expected 'ufunc', 'gufunc' or 'helper', found {_describe(head)}")
        except ParseError as exc:
            sink.error(exc.location, exc.message)
            i = _skip_declaration(lines, i + 1)
    return RawFile(path, tuple(lines), tuple(functions), tuple(helpers))


def _skip_declaration(lines: list[str], i: int) -> int:
    """After an error, resume at the next line that starts a declaration."""
    inside_body = False
    while i < len(lines):
        text = lines[i].rstrip()
        if inside_body:
            inside_body = text != "}" and not _DECLARATION.match(text)
            if not inside_body and text != "}":
                return i
        elif opens_body(text):
            inside_body = _one_line_body_end(text) is None
        elif text and not text[0].isspace() and text.split()[0] in ("ufunc", "gufunc", "helper"):
            return i
        i += 1
    return i


def _parse_helper(sink, lines, i, cur, head, helpers) -> int:
    prototype_start = cur.peek()
    prototype = lines[i][prototype_start.location.col - 1:].strip()
    # The name is the word before the prototype's first '(', after a return type: a '(' that
    # opens the prototype (`helper (x)`) or follows the return type alone (`helper T (h)(T a)`)
    # names nothing, and the `helper` keyword itself never is the name.
    start = cur.index
    first_paren = next((k for k in range(start, len(cur.tokens) - 1)
                        if cur.tokens[k].text == "(" and cur.tokens[k].kind == "punct"), None)
    name = None
    if first_paren is not None and first_paren - 1 > start and \
            cur.tokens[first_paren - 1].kind == "name":
        name = cur.tokens[first_paren - 1]
    if name is None:
        raise ParseError(prototype_start.location,
                          "expected a C prototype such as 'void f(T x, T *y)' after 'helper'")
    i += 1
    body = None
    if i < len(lines) and opens_body(lines[i]):
        body, i = _read_body(sink, lines, i, f"helper '{name.text}'")
    else:
        sink.error(name.location, f"helper '{name.text}' has no body: expected a line starting with '{{'")
    helpers.append(RawHelper(name, prototype, head.location, body))
    return i


def _parse_function(sink, lines, i, cur, head, functions) -> int:
    fn = _parse_header(cur, head)
    i += 1
    while i < len(lines) and not opens_body(lines[i]):
        text = lines[i]
        if _is_blank_or_comment(text):
            i += 1
            continue
        if not text[0].isspace():
            break        # the next declaration: this function has no body
        try:
            _parse_option(sink, fn, text, i + 1)
        except ParseError as exc:
            sink.error(exc.location, exc.message)
        i += 1
    body = None
    if i < len(lines) and opens_body(lines[i]):
        body, i = _read_body(sink, lines, i, f"function '{fn.name.text}'")
    functions.append(fn.build(body))
    return i
