"""A body's integer operators rewritten into calls of the prelude (ufuncgen/prelude.h), so
that they mean the same on the host, in the simulator and on the GPU.

Division, in every compile: a body's integer `a / b`, `a % b`, `x /= b` and `x %= b` become
`ufg_div(a, b)` and `ufg_rem(a, b)`.  C leaves integer division by 0, and INT_MIN / -1,
undefined: on x86-64 the host loops and the simulator stop the whole process with SIGFPE, and
a GPU returns whatever its division routine gives.  The prelude's functions give NumPy's
answers on all three (0, and INT_MIN for INT_MIN / -1), raising NumPy's divide-by-zero or
overflow warning on the host; of floating operands they are plain division.

Wrapping, in the C++ (nvcc) compile only: a body's integer `a + b`, `a - b`, `a * b`, `-a`,
`x += e`, `x -= e` and `x *= e` become `ufg_add`, `ufg_sub`, `ufg_mul`, `ufg_neg`.  The host
loops and the simulator are C compiled with -fwrapv, where signed overflow wraps as in NumPy's
integer loops; nvcc has no such switch, and may fold `x + 1 > x` to true.  The C++ functions
compute a signed type's sum, difference, product and negation in its unsigned twin, which
wraps, and anything else (floats, pointers, complex values) with the plain operator.

The rewrite edits only around the operator: `ufg_div(` goes before the left operand, the
operator becomes a comma, and `)` goes after the right operand, so the user's lines, and what
is between, stay as written (#line directives still name the user's lines).  The operands are
found on C's grammar: the left operand of a multiplicative operator is the chain of
cast-expressions joined by `*`, `/` and `%` before it (they group to the left), its right
operand one cast-expression (prefix operators, casts, a primary, postfix operators); an
additive operator's left operand is the chain of multiplicative expressions joined by `+`
and `-` before it, its right operand one multiplicative expression.  A compound assignment
`x /= e` becomes `x = ufg_div(x, e)`, its left side written twice: only where it has no side
effect (no `++`, `--` or assignment in it).  What the scanner does not understand (a compound
literal, a line continuation, token pasting, unbalanced brackets) is left alone and reported,
so that the caller can warn.
"""
from __future__ import annotations

import ast
import bisect
import math
import re
from dataclasses import dataclass

from .element_types import ELEMENT_TYPES
from .parse import _C_NOISE

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<id>[A-Za-z_]\w*)
  | (?P<num>\.?\d(?:[eEpP][+-]|[\w.])*)
  | (?P<punct><<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|\#\#
               |[][(){}.,;:?~!<>=+\-*/%&|^\#])
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)

# Words after which no operand ends: `return -x / b` starts its operand at the `-`.
_STATEMENT_WORDS = frozenset("""return case else do if while for switch goto sizeof
    typedef static const volatile register extern""".split())
# Words that make up a type name in a cast: C's, ufuncgen's `T`, the typedefs a body may use
# (<stdint.h>'s, <stddef.h>'s, the prelude's complex types); a body's own typedefs are added.
_TYPE_WORDS = frozenset("""void char short int long float double signed unsigned _Bool bool
    _Complex complex const volatile restrict T npy_intp size_t ssize_t ptrdiff_t intptr_t
    uintptr_t intmax_t uintmax_t float_t double_t wchar_t complex64_t complex128_t""".split()
    + [f"{u}int{kind}{bits}_t" for u in ("", "u") for kind in ("", "_fast", "_least")
       for bits in (8, 16, 32, 64)])
_TYPEDEF = re.compile(r"\btypedef\b[^;]*?\b([A-Za-z_]\w*)\s*(?:\[[^;]*\])?\s*;")
_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(?P<name>[A-Za-z_]\w*)(?P<parameters>\([^)]*\))?"
                    r"(?P<replacement>(?:[^\n]*\\\n)*[^\n]*)", re.MULTILINE)


@dataclass(frozen=True)
class BodyNames:
    """What the scanner must know of a body's own names: its types (typedefs, and macros that
    name a type, `#define WIDE int64_t`), its constants (macros of numbers, `#define N 4`), and
    its macros whose uses it cannot take as one operand (`#define DIFF(u, v) u - v`: C
    expands `DIFF(a, b) * 2` to `a - b * 2`)."""
    types: frozenset[str] = frozenset()
    constants: frozenset[str] = frozenset()
    unsafe_macros: frozenset[str] = frozenset()
    # Each constant's replacement lists, (name, replacement), in the order of the body's
    # `#define`s (a name defined twice has two): what a divisor of them evaluates to.
    definitions: tuple[tuple[str, str], ...] = ()


def body_names(clean: str) -> BodyNames:
    """The BodyNames of a body's code (comments and strings blanked)."""
    types = {m.group(1) for m in _TYPEDEF.finditer(clean)}
    constants, unsafe, definitions = set(), set(), []
    for m in _MACRO.finditer(clean):
        words = _tokens(m.group("replacement").replace("\\\n", " \n"))
        texts = [tok.text for tok in words]
        if m.group("parameters") is None and texts and all(t in _TYPE_WORDS | types or t == "*"
                                                           for t in texts):
            types.add(m.group("name"))
        elif m.group("parameters") is None and texts and all(
                tok.kind == "num" or tok.text in constants or
                (tok.kind == "punct" and tok.text not in _ASSIGNMENTS) for tok in words):
            constants.add(m.group("name"))
            definitions.append((m.group("name"), m.group("replacement").replace("\\\n", " \n")))
        if len(words) > 1 and not _parenthesized(words):
            unsafe.add(m.group("name"))
    return BodyNames(frozenset(types), frozenset(constants), frozenset(unsafe),
                     tuple(definitions))


def _parenthesized(words: list[_Token]) -> bool:
    """Whether tokens are one parenthesized group, `(a - b)`."""
    try:
        return words[0].text == "(" and _Scanner(words).match_forward(0) == len(words) - 1
    except _Unsupported:
        return False


def _scan_text(code: str) -> str:
    """What the scanner reads, at the code's offsets: comments blanked, and string and
    character literals as numbers of their length (`'a'` is an operand, `111`)."""
    return _C_NOISE.sub(lambda m: re.sub(r"[^\n]", " " if m.group(0)[0] == "/" else "1",
                                         m.group(0)), code)


_PREFIX = frozenset({"-", "+", "!", "~", "*", "&", "++", "--"})
_ASSIGNMENTS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|="})
_CLOSING = {")": "(", "]": "[", "}": "{"}
_OPENING = {v: k for k, v in _CLOSING.items()}


@dataclass(frozen=True)
class _Token:
    text: str
    kind: str       # id, num, punct or other
    start: int
    end: int


def _tokens(code: str) -> list[_Token]:
    return [_Token(m.group(m.lastgroup), m.lastgroup, m.start(), m.end())
            for m in _TOKEN.finditer(code) if m.lastgroup != "space"]


class _Unsupported(Exception):
    """A construct the scanner does not follow: the operator is left as written.  Its
    argument, when given, says why in words for a warning."""

    def __init__(self, reason: str = "in an expression the generator cannot follow (a "
                                      "compound literal, token pasting, or unbalanced brackets "
                                      "around it); make the division a statement of its own"):
        super().__init__(reason)
        self.reason = reason


class _Constant(_Unsupported):
    """An operation on constants (`N * 2`, `x / K` of a macro K): C evaluates it at compile
    time, and it may have to stay a constant expression (an array bound, a `case` label): left
    as written, without a word.  A division only where its divisor is positive in every type
    it may be compiled for (_surely_positive): GCC compiles `x / 0` of a constant 0 into a trap."""


class _Scanner:
    def __init__(self, tokens: list[_Token], names: BodyNames = BodyNames()):
        self.t = tokens
        self.names = names
        self.types = _TYPE_WORDS | names.types

    def text(self, i: int) -> str:
        return self.t[i].text if 0 <= i < len(self.t) else ""

    def match_forward(self, i: int) -> int:
        return self._match(i, range(i, len(self.t)), _OPENING, _CLOSING)

    def match_backward(self, i: int) -> int:
        return self._match(i, range(i, -1, -1), _CLOSING, _OPENING)

    def _match(self, i: int, order: range, deeper: dict, shallower: dict) -> int:
        """The bracket matching token i, walking `order` from it; its kind must pair."""
        depth = 0
        for j in order:
            if self.t[j].text in deeper:
                depth += 1
            elif self.t[j].text in shallower:
                depth -= 1
                if depth == 0:
                    if deeper[self.t[i].text] != self.t[j].text:
                        raise _Unsupported
                    return j
        raise _Unsupported

    def is_type_group(self, opening: int, closing: int) -> bool:
        """Whether tokens (opening, closing) are a type name: `(T)`, `(unsigned long)`,
        `(const int64_t)`, `(double *)`."""
        inner = self.t[opening + 1:closing]
        words = [tok.text for tok in inner if tok.text != "*"]
        return bool(words) and all(tok.kind == "id" or tok.text == "*" for tok in inner) and \
            all(w in self.types for w in words)

    def ends_operand(self, i: int) -> bool:
        """Whether token i ends an operand, so that an operator after it is binary."""
        tok = self.t[i] if 0 <= i < len(self.t) else None
        if tok is None:
            return False
        if tok.kind == "num" or (tok.kind == "id" and tok.text not in _STATEMENT_WORDS
                                 and tok.text not in self.types):
            return True
        if tok.text == "]":
            return True
        if tok.text == ")":
            opening = self.match_backward(i)
            if self.text(opening - 1) in ("if", "while", "for", "switch"):
                return False        # `if (c) *p = v`: a statement starts after it
            if self.text(opening - 1) == "sizeof":
                return True         # `sizeof(T) + x`: an operand, not a cast of `+x`
            return not self.is_type_group(opening, i)
        if tok.text in ("++", "--"):
            return self.ends_operand(i - 1)
        return False

    def is_constant(self, first: int, last: int) -> bool:
        """Whether tokens first..last are a constant expression: numbers, the body's constant
        macros, operators and `sizeof`."""
        return first <= last and all(
            tok.kind == "num" or tok.text in self.names.constants or tok.text in self.types or
            tok.text == "sizeof" or (tok.kind == "punct" and tok.text not in _ASSIGNMENTS)
            for tok in self.t[first:last + 1])

    def check(self, i: int) -> None:
        if self.text(i) in ("{", "}", "#", "##") or (0 <= i < len(self.t) and self.t[i].kind == "other"):
            raise _Unsupported

    # ------------------------------------------------------------------ forwards

    def cast_expression_end(self, i: int) -> int:
        """The index after the cast-expression that starts at token i."""
        while True:
            self.check(i)
            word = self.text(i)
            if word in _PREFIX:
                i += 1
            elif word == "sizeof":
                i += 1
                if self.text(i) == "(" and self.is_type_group(i, self.match_forward(i)):
                    return self.match_forward(i) + 1
            elif word == "(":
                closing = self.match_forward(i)
                if self.is_type_group(i, closing):
                    if self.text(closing + 1) == "{":
                        raise _Unsupported       # a compound literal: its commas split macros
                    i = closing + 1
                else:
                    i = closing + 1
                    break
            elif i < len(self.t) and self.t[i].kind in ("id", "num") and word not in _STATEMENT_WORDS:
                i += 1
                break
            else:
                raise _Unsupported
        while True:                     # postfix operators
            self.check(i)
            word = self.text(i)
            if word in ("(", "["):
                i = self.match_forward(i) + 1
            elif word in (".", "->") and i + 1 < len(self.t) and self.t[i + 1].kind == "id":
                i += 2
            elif word in ("++", "--"):
                i += 1
            else:
                return i

    def assignment_expression_end(self, i: int) -> int:
        """The index after the expression that starts at token i and runs to the end of its
        statement or argument: the right side of `x /= ...`."""
        j, questions = i, 0
        while j < len(self.t):
            self.check(j)
            word = self.text(j)
            if word in _OPENING:
                j = self.match_forward(j) + 1
                continue
            if word in (";", ",", ")", "]", "}") or (word == ":" and questions == 0):
                break       # `c ? t /= b : 0`: the `:` of an enclosing conditional
            questions += (word == "?") - (word == ":")
            j += 1
        if j == i:
            raise _Unsupported
        return j

    # ------------------------------------------------------------------ backwards

    def cast_expression_start(self, e: int) -> int:
        """The first token of the cast-expression that ends at token e."""
        i = e
        while True:                     # the postfix expression, from its end
            self.check(i)
            word = self.text(i)
            if word == "]":
                i = self.match_backward(i) - 1
            elif word == ")":
                opening = self.match_backward(i)
                before = self.text(opening - 1)
                if before == ")" and self.is_type_group(self.match_backward(opening - 1), opening - 1):
                    i = opening         # `(T)(x)`: a cast of the group
                    break
                if self.ends_operand(opening - 1) and before not in ("++", "--"):
                    i = opening - 1     # a call: `f(x)`, `x(i)`, `g(a)(b)`
                else:
                    i = opening
                    break
            elif word in ("++", "--"):
                i -= 1
            elif 0 <= i < len(self.t) and self.t[i].kind in ("id", "num") and word not in _STATEMENT_WORDS:
                if self.text(i - 1) in (".", "->"):
                    i -= 2
                else:
                    break
            else:
                raise _Unsupported
        while i > 0:                    # prefix operators and casts
            before = self.text(i - 1)
            if before == ")" and self.is_type_group(self.match_backward(i - 1), i - 1) and \
                    self.text(self.match_backward(i - 1) - 1) != "sizeof":
                i = self.match_backward(i - 1)
            elif before in _PREFIX and not self.ends_operand(i - 2):
                i -= 1
            elif before == "sizeof":
                i -= 1
            else:
                break
        if self.text(i - 1) in ("#", "##") or (i > 0 and self.t[i - 1].kind == "other"):
            raise _Unsupported      # token pasting or a line continuation before it
        return i

    def multiplicative_start(self, e: int) -> int:
        """The first token of the left operand of a `*`, `/` or `%` after token e: the chain of
        cast-expressions joined by those operators that ends there (they group to the left)."""
        i = self.cast_expression_start(e)
        while self.text(i - 1) in ("*", "/", "%") and self.ends_operand(i - 2):
            i = self.cast_expression_start(i - 2)
        return i


    def multiplicative_end(self, i: int) -> int:
        """The index after the multiplicative expression that starts at token i: the right
        operand of a `+` or `-`."""
        j = self.cast_expression_end(i)
        while self.text(j) in ("*", "/", "%"):
            j = self.cast_expression_end(j + 1)
        return j

    def additive_start(self, e: int) -> int:
        """The first token of the left operand of a binary `+` or `-` after token e."""
        i = self.multiplicative_start(e)
        while self.text(i - 1) in ("+", "-") and self.ends_operand(i - 2):
            i = self.multiplicative_start(i - 2)
        return i


@dataclass(frozen=True)
class Rewrite:
    """A body's code after the rewrite, and the operators left as written: (offset, why)."""
    code: str
    left_alone: tuple[tuple[int, str], ...]


def rewrite_operators(code: str, offsets: set[int], names: BodyNames = BodyNames()) -> Rewrite:
    """`code` with the operators at `offsets` rewritten into the prelude's calls (ufg_div,
    ufg_rem; ufg_add, ufg_sub, ufg_mul, ufg_neg), left to right, and the offsets left as
    written (not those on constants, which need no rewrite).  `names`: the body's own types,
    constants and macros (body_names).  Lines starting with `#` other than `#define` are never touched; in a
    `#define`, only an operation whose operands the macro itself delimits (not at either end
    of its replacement list, and its parameters parenthesized: `((a) / (b))`), since the
    operands of `#define HALF(v) v / 2` are decided where it is used.

    Each statement is rewritten on its own text (_statement_starts), since an operator's
    rewrite scans the text again, the calls of those before it included: over the whole
    body, that would take time in its length times its operators."""
    starts = _statement_starts(code)
    offsets_in = [set() for _ in starts]        # each statement's, in its own text
    for offset in offsets:          # one outside the code: in the first or last, left alone
        k = max(bisect.bisect_right(starts, offset) - 1, 0)
        offsets_in[k].add(offset - starts[k])
    texts, left_alone = [], []
    for start, end, statement_offsets in zip(starts, starts[1:] + [len(code)], offsets_in):
        rewrite = _rewrite_statement(code[start:end], statement_offsets, names)
        texts.append(rewrite.code)
        left_alone += [(start + offset, why) for offset, why in rewrite.left_alone]
    return Rewrite("".join(texts), tuple(sorted(left_alone)))


def _statement_starts(code: str) -> list[int]:
    """Where a body's statements start: 0, and after each `;`, `{` and `}` that no
    parentheses or brackets enclose.  An operand ends before each of them, or is not followed
    past a `{` or `}`, and no bracket's match passes one, so an operator's rewrite reads
    nothing of another statement.  Not where a `#` follows on the line (at the start of a
    statement's own text, it would start a directive), nor anywhere in a body whose brackets
    do not pair (a bracket's match, or its lack of one, may lie in another statement)."""
    scan = _scan_text(code)
    starts, opened, enclosing = [0], [], 0      # enclosing: the ( and [ among those opened
    for tok in _tokens(_code_only(scan)):
        if tok.text in _OPENING:
            opened.append(tok.text)
            enclosing += tok.text != "{"
        elif tok.text in _CLOSING:
            if not opened or opened.pop() != _CLOSING[tok.text]:
                return [0]
            enclosing -= tok.text != "}"
        if tok.text in (";", "{", "}") and not enclosing and \
                not _DIRECTIVE_AHEAD.match(scan, tok.end):
            starts.append(tok.end)
    return [0] if opened else starts


_DIRECTIVE_AHEAD = re.compile(r"[ \t]*#")


def _rewrite_statement(code: str, offsets: set[int], names: BodyNames) -> Rewrite:
    """rewrite_operators of one statement's text (or the whole body's): each operator in
    turn, on the text the rewrites before it left."""
    left_alone: list[tuple[int, str]] = []
    pending = sorted(offsets)           # in the current text's offsets
    original = dict(zip(pending, pending))
    while pending:
        position = pending.pop(0)
        start = original.pop(position)
        scan = _scan_text(code)
        found = _view(scan, position)
        if found is None:
            left_alone.append((start, "in a preprocessor directive; move it to the body's code"))
            continue
        view, parameters = found
        tokens = _tokens(view)
        index = next((k for k, tok in enumerate(tokens) if tok.start == position), None)
        try:
            if index is None:
                raise _Unsupported
            pieces = _pieces(_Scanner(tokens, names), index, code, scan, parameters)
        except _Constant:
            continue
        except _Unsupported as unsupported:
            left_alone.append((start, unsupported.reason))
            continue
        # (offset, length replaced, text), applied from the last.
        for at, length, text in sorted(pieces, reverse=True):
            code = code[:at] + text + code[at + length:]
            delta = len(text) - length
            moved = [p + delta if p >= at + length else p for p in pending]
            original = {moved[k]: original[p] for k, p in enumerate(pending)}
            pending = moved
    return Rewrite(code, tuple(sorted(left_alone)))


_ZERO = re.compile(r"0+[uUlL]*|0[xX]0+[uUlL]*")
# The prelude's function of each operator (unary minus: "neg").
_CALLS = {"/": "ufg_div", "%": "ufg_rem", "*": "ufg_mul", "+": "ufg_add", "-": "ufg_sub",
          "neg": "ufg_neg"}


_UNHYGIENIC = ("in a macro whose use decides its operands (at an end of its replacement list, "
               "or a parameter not in parentheses); parenthesize the macro: "
               "#define F(a, b) ((a) / (b))")


def _pieces(scanner: _Scanner, index: int, code: str, scan: str,
            parameters: frozenset[str] | None) -> list[tuple[int, int, str]]:
    """The edits that make the operator at token `index` a call; `parameters`: those of the
    `#define` it is in (None in the body's code)."""
    pieces, first, last = _edits(scanner, index, code, scan)
    tokens = scanner.t
    operator = tokens[index].text
    unary = first == index
    divisor = [tok for tok in tokens[index + 1:last + 1] if tok.text not in ("(", ")")]
    if operator in ("/", "%") and scanner.is_constant(index + 1, last) and (
            (len(divisor) == 1 and divisor[0].kind == "num" and not _ZERO.fullmatch(divisor[0].text))
            or (any(tok.kind == "id" for tok in divisor) and
                not any(tok.text in ("-", "~") for tok in divisor))) and \
            _surely_positive(scanner, index + 1, last, code):
        # `x / 2`, `x % (T)3`; `N / K` of macros or sizeof, which may have to stay a constant
        # expression (an array bound).  Not `x / 0`, `x / -1`, `x / (2 - 2)`, nor a divisor
        # that some type makes 0 or negative: `x / (T)256` (0 in uint8), `x / (T)0.5`.
        raise _Constant
    if operator in ("+", "-", "*") and scanner.is_constant(first, index - 1 if not unary else first) \
            and scanner.is_constant(index + 1, last):
        raise _Constant
    unsafe = [tok.text for tok in tokens[first:last + 1] if tok.text in scanner.names.unsafe_macros]
    if unsafe:
        raise _Unsupported(f"beside '{unsafe[0]}', a macro whose replacement list is not "
                           f"parenthesized (C decides the operands where it expands); "
                           f"parenthesize the macro's replacement list")
    if parameters is not None:
        tokens = scanner.t
        if first == 0 or last >= len(tokens) - 1:
            raise _Unsupported(_UNHYGIENIC)
        for k in range(first, last + 1):
            if tokens[k].text in parameters and not (
                    scanner.text(k - 1) == "(" and scanner.text(k + 1) == ")"):
                raise _Unsupported(_UNHYGIENIC)
    return pieces


# --------------------------------------------------------------------------- constant divisors
#
# A constant divisor is left as written only when it is a positive number whatever the types
# it names are: the rewrite gets no element type (one text serves every loop of a body), so T,
# and a type the body names itself (a typedef, a macro), may be any element type.  Its value
# is computed as C computes it, for every type each cast may name: a set of (value, type),
# type ("i", bits, signed) after C's promotions, or ("f",) for a floating or complex one.

_BOOL, _FLOATING = ("b",), ("f",)
_INT, _LONG, _UNSIGNED, _UNSIGNED_LONG = ("i", 32, True), ("i", 64, True), ("i", 32, False), \
    ("i", 64, False)
# T: any element type, each as a cast converts to it.
_ANY_TYPE = tuple(dict.fromkeys(
    _BOOL if t.kind == "b" else ("i", 8 * t.itemsize, t.kind == "i") if t.kind in "iu"
    else _FLOATING for t in ELEMENT_TYPES.values()))
_FLOATING_WORDS = frozenset("""float double float_t double_t _Complex complex complex64_t
    complex128_t""".split())
_QUALIFIER_WORDS = frozenset("const volatile restrict register static".split())
# <stdint.h>'s and <stddef.h>'s types, with every width a platform may give them.
_NAMED_INTEGERS = {
    **{f"{u}int{bits}_t": (("i", bits, not u),) for u in ("", "u") for bits in (8, 16, 32, 64)},
    **{f"{u}int_{kind}{bits}_t": tuple(("i", wider, not u) for wider in (8, 16, 32, 64)
                                       if wider >= bits)
       for u in ("", "u") for kind in ("fast", "least") for bits in (8, 16, 32, 64)},
    "intmax_t": (_LONG,), "uintmax_t": (_UNSIGNED_LONG,),
    "size_t": (_UNSIGNED, _UNSIGNED_LONG), "uintptr_t": (_UNSIGNED, _UNSIGNED_LONG),
    **{name: (_INT, _LONG) for name in ("ssize_t", "ptrdiff_t", "intptr_t", "npy_intp")},
    "wchar_t": (_INT, ("i", 16, False)), "_Bool": (_BOOL,), "bool": (_BOOL,),
}
_MOST_VALUES = 4096         # past this many possible values, a divisor is not followed


class _Unknown(Exception):
    """A divisor whose value the evaluation does not follow, or that C leaves undefined."""


def _surely_positive(scanner: _Scanner, first: int, last: int, code: str) -> bool:
    """Whether tokens first..last, a constant expression, are a number above 0 (an integer) or a
    floating value, for every type each type name in them may be."""
    try:
        values = _Evaluation(scanner, code).value(scanner.t[first:last + 1])
    except (_Unknown, RecursionError):
        return False
    return all(kind == _FLOATING or value > 0 for value, kind in values)


def _cast_types(words: list[str], names: BodyNames) -> tuple:
    """The types a type name may be: one for most, each width a platform gives `long` or
    `size_t`, every element type for T and for the body's own typedefs and type macros."""
    words = [w for w in words if w not in _QUALIFIER_WORDS]
    if not words or "*" in words or "void" in words:
        raise _Unknown
    if any(w in _FLOATING_WORDS for w in words):
        return (_FLOATING,)
    if len(words) == 1 and words[0] in _NAMED_INTEGERS:
        return _NAMED_INTEGERS[words[0]]
    if any(w == "T" or w in names.types for w in words):
        return _ANY_TYPE
    if not set(words) <= {"char", "short", "int", "long", "signed", "unsigned"}:
        raise _Unknown
    signedness = (False,) if "unsigned" in words else (True,) if "signed" in words or \
        "char" not in words else (True, False)      # a plain char: either, by platform
    longs = words.count("long")
    widths = (8,) if "char" in words else (16,) if "short" in words else \
        (32, 64) if longs == 1 else (64,) if longs else (32,)
    return tuple(("i", bits, signed) for bits in widths for signed in signedness)


def _wrap(value: int, kind: tuple) -> int:
    bits, signed = kind[1], kind[2]
    value %= 1 << bits
    return value - (1 << bits) if signed and value >= 1 << (bits - 1) else value


def _promoted(value, kind: tuple) -> tuple:
    """A converted value as an operand: bool and the integers narrower than int are ints."""
    if kind == _FLOATING:
        return float(value), _FLOATING
    if kind == _BOOL or kind[1] < 32:
        return int(value), _INT
    return value, kind


def _converted(value, kind: tuple, to: tuple) -> tuple:
    """(value, kind) converted to type `to`, as a cast does, then promoted."""
    if to == _BOOL:
        return _promoted(1 if value != 0 else 0, _BOOL)
    if to == _FLOATING:
        return float(value), _FLOATING
    if kind == _FLOATING:
        if not math.isfinite(value):
            raise _Unknown
        value = int(value)                 # toward 0; out of the type's range: undefined
        if _wrap(value, to) != value:
            raise _Unknown
    return _promoted(_wrap(value, to), to)


def _common(a: tuple, b: tuple) -> tuple:
    """C's usual arithmetic conversions of two promoted kinds."""
    if _FLOATING in (a, b):
        return _FLOATING
    bits = max(a[1], b[1])
    widest = [k for k in (a, b) if k[1] == bits]
    return ("i", bits, all(k[2] for k in widest))


def _binary(operator: str, a: tuple, b: tuple) -> tuple:
    (x, kx), (y, ky) = a, b
    if operator in ("&&", "||"):
        truth = (x != 0 and y != 0) if operator == "&&" else (x != 0 or y != 0)
        return int(truth), _INT
    if operator in ("<<", ">>"):
        if _FLOATING in (kx, ky) or not 0 <= y < kx[1] or (operator == "<<" and x < 0):
            raise _Unknown
        return _wrap(x << y if operator == "<<" else x >> y, kx), kx
    kind = _common(kx, ky)
    if kind == _FLOATING:
        x, y = float(x), float(y)
    else:
        x, y = _wrap(x, kind), _wrap(y, kind)
    if operator in ("<", ">", "<=", ">=", "==", "!="):
        return int({"<": x < y, ">": x > y, "<=": x <= y, ">=": x >= y, "==": x == y,
                    "!=": x != y}[operator]), _INT
    if operator in ("/", "%"):
        if y == 0 or (kind == _FLOATING and operator == "%"):
            raise _Unknown
        if kind == _FLOATING:
            return x / y, kind
        quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        if _wrap(quotient, kind) != quotient:
            raise _Unknown                      # INT_MIN / -1
        return (quotient if operator == "/" else x - y * quotient), kind
    if kind == _FLOATING:
        if operator not in ("+", "-", "*"):
            raise _Unknown                      # `&` of a float: not C
        return {"+": x + y, "-": x - y, "*": x * y}[operator], kind
    return _wrap({"+": x + y, "-": x - y, "*": x * y, "&": x & y, "^": x ^ y,
                  "|": x | y}[operator], kind), kind


# Binary operators by precedence, loosest first.
_PRECEDENCE = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, ">": 7,
               "<=": 7, ">=": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}


class _Evaluation:
    """The values of a constant expression's tokens (numbers, the body's constant macros,
    casts, sizeof of a type, C's operators), a set over the types its casts may name."""

    def __init__(self, scanner: _Scanner, code: str):
        self.scanner = scanner
        self.code = code
        self.definitions: dict[str, list[str]] = {}
        for name, replacement in scanner.names.definitions:
            self.definitions.setdefault(name, []).append(replacement)
        self.expanding: list[str] = []

    def value(self, tokens: list[_Token]) -> frozenset:
        self.tokens, self.at = tokens, 0
        values = self.conditional()
        if self.at != len(tokens):
            raise _Unknown
        return values

    def peek(self, ahead: int = 0) -> str:
        k = self.at + ahead
        return self.tokens[k].text if k < len(self.tokens) else ""

    def take(self, text: str) -> None:
        if self.peek() != text:
            raise _Unknown
        self.at += 1

    @staticmethod
    def each(values, function) -> frozenset:
        found = frozenset(function(v) for v in values)
        if len(found) > _MOST_VALUES:
            raise _Unknown
        return found

    def conditional(self) -> frozenset:
        condition = self.binary(1)
        if self.peek() != "?":
            return condition
        self.at += 1
        chosen = self.conditional()
        self.take(":")
        otherwise = self.conditional()
        truths = {value != 0 for value, _ in condition}
        return (chosen if True in truths else frozenset()) | \
            (otherwise if False in truths else frozenset())

    def binary(self, lowest: int) -> frozenset:
        left = self.unary()
        while _PRECEDENCE.get(self.peek(), 0) >= lowest:
            operator = self.peek()
            self.at += 1
            right = self.binary(_PRECEDENCE[operator] + 1)
            left = self.each([(a, b) for a in left for b in right],
                             lambda pair: _binary(operator, *pair))
        return left

    def type_name(self) -> tuple | None:
        """The types of a parenthesized type name at the current token, past it; None (and
        nothing taken) when the parentheses hold no type name."""
        if self.peek() != "(":
            return None
        k = self.at + 1
        while k < len(self.tokens) and self.tokens[k].text != ")":
            k += 1
        words = [tok.text for tok in self.tokens[self.at + 1:k]]
        if k == len(self.tokens) or not words or not all(
                w in self.scanner.types or w == "*" for w in words):
            return None
        self.at = k + 1
        return _cast_types(words, self.scanner.names)

    def unary(self) -> frozenset:
        word = self.peek()
        if word in ("-", "+", "~", "!"):
            self.at += 1
            operand = self.unary()
            if word == "!":
                return self.each(operand, lambda v: (int(v[0] == 0), _INT))
            if word == "~" and any(kind == _FLOATING for _, kind in operand):
                raise _Unknown
            return self.each(operand, lambda v: (
                v if word == "+" else
                (-v[0], _FLOATING) if v[1] == _FLOATING else
                (_wrap(-v[0] if word == "-" else ~v[0], v[1]), v[1])))
        if word == "sizeof":
            self.at += 1
            types = self.type_name()
            if types is None:
                raise _Unknown      # of an expression
            sizes = {1, 2, 4, 8, 16} if types == _ANY_TYPE else \
                {4, 8, 16} if _FLOATING in types else {1 if k == _BOOL else k[1] // 8 for k in types}
            return frozenset((size, _UNSIGNED_LONG) for size in sizes)
        types = self.type_name()
        if types is not None:       # a cast
            operand = self.unary()
            return self.each([(v, to) for v in operand for to in types],
                             lambda pair: _converted(*pair[0], pair[1]))
        return self.primary()

    def primary(self) -> frozenset:
        if self.at >= len(self.tokens):
            raise _Unknown
        tok = self.tokens[self.at]
        self.at += 1
        if tok.text == "(":
            values = self.conditional()
            self.take(")")
            return values
        if tok.kind == "num":       # the code's text: a character literal is `'a'` there
            return frozenset({_number(tok.text if self.expanding else
                                      self.code[tok.start:tok.end])})
        if tok.text in self.definitions and tok.text not in self.expanding:
            self.expanding.append(tok.text)
            saved = self.tokens, self.at
            try:
                return frozenset().union(*(self.value(_tokens(replacement))
                                           for replacement in self.definitions[tok.text]))
            finally:
                self.tokens, self.at = saved
                self.expanding.pop()
        raise _Unknown


_INTEGER_LITERAL = re.compile(r"(?P<digits>0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)"
                              r"(?P<suffix>[uU]?(?:ll|LL|[lL])?|(?:ll|LL|[lL])[uU])")


def _number(text: str) -> tuple:
    """The (value, kind) of a number or character literal as C reads it."""
    if text.startswith("'"):
        try:
            character = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise _Unknown from None
        if not isinstance(character, str) or len(character) != 1:
            raise _Unknown
        return ord(character), _INT
    m = _INTEGER_LITERAL.fullmatch(text)
    if m is None:                   # a floating literal: `2.5`, `1e3f`, `0x1p-3`
        body = text.rstrip("fFlL")
        hexadecimal = body[:2].lower() == "0x"
        if not re.fullmatch(r"[0-9.]", body[:1]) or \
                not re.search(r"[pP]" if hexadecimal else r"[.eE]", body):
            raise _Unknown
        try:
            value = float.fromhex(body) if hexadecimal else float(body)
        except ValueError:
            raise _Unknown from None
        return value, _FLOATING
    digits, suffix = m.group("digits").lower(), m.group("suffix").lower()
    value = int(digits, 16 if digits.startswith("0x") else 2 if digits.startswith("0b") else
                8 if digits.startswith("0") and len(digits) > 1 else 10)
    decimal = digits[0] != "0" or digits == "0"
    if "u" in suffix:
        kinds = (_UNSIGNED_LONG,) if "l" in suffix else (_UNSIGNED, _UNSIGNED_LONG)
    elif decimal:
        kinds = (_LONG,) if "l" in suffix else (_INT, _LONG)
    else:
        kinds = (_LONG, _UNSIGNED_LONG) if "l" in suffix else (_INT, _UNSIGNED, _LONG, _UNSIGNED_LONG)
    kind = next((k for k in kinds if _wrap(value, k) == value), None)
    if kind is None:
        raise _Unknown
    return value, kind


def _edits(scanner: _Scanner, index: int, code: str, scan: str):
    """The edits that make the operator at token `index` a call, and the first and last tokens
    of the operation."""
    tokens = scanner.t
    operator = tokens[index].text
    at = tokens[index].start
    if operator in ("-", "+", "*") and not scanner.ends_operand(index - 1):
        if operator != "-":
            raise _Unsupported("a unary plus or a dereference; no arithmetic")
        last = scanner.cast_expression_end(index + 1) - 1      # -x: ufg_neg(x)
        return [(at, 1, _CALLS["neg"] + "("), (tokens[last].end, 0, ")")], index, last
    if operator in ("/", "%", "*", "+", "-"):
        name = _CALLS[operator]
        if operator in ("+", "-"):
            first = scanner.additive_start(index - 1)
            last = scanner.multiplicative_end(index + 1) - 1
        else:
            first = scanner.multiplicative_start(index - 1)
            last = scanner.cast_expression_end(index + 1) - 1
        spaced = at > 0 and code[at - 1] == " " and tokens[index - 1].end < at     # `a / b`: `a, b`
        return [(tokens[first].start, 0, f"{name}("), (at - spaced, 1 + spaced, ","),
                (tokens[last].end, 0, ")")], first, last
    if operator in ("/=", "%=", "*=", "+=", "-="):
        name = _CALLS[operator[0]]
        first = scanner.cast_expression_start(index - 1)
        if any(tok.text in ("++", "--") or tok.text in _ASSIGNMENTS for tok in tokens[first:index]):
            raise _Unsupported(         # written twice: x = ufg_div(x, e)
                f"whose left side has a side effect ('++', '--' or an assignment) that "
                f"`x = {name}(x, ...)` would repeat; move the side effect to a statement of "
                f"its own")
        last = scanner.assignment_expression_end(index + 1) - 1
        span = slice(tokens[first].start, tokens[index - 1].end)
        if "\n" in code[span] or "/*" in code[span] or "//" in code[span]:
            raise _Unsupported          # a copy must not add a line, nor copy a comment
        return [(at, 2, f"= {name}({code[span]},"), (tokens[last].end, 0, ")")], first, last
    raise _Unsupported


_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)
_DEFINE_HEAD = re.compile(r"[ \t]*#[ \t]*define[ \t]+[A-Za-z_]\w*(?P<parameters>\([^)]*\))?")


def _view(clean: str, position: int) -> tuple[str, frozenset[str] | None] | None:
    """The text the operator at `position` is scanned in, at the same offsets, and the
    parameters of the `#define` it is in (None in the body's code): in the body's code, the
    code with every preprocessor directive blanked; in a `#define`, its replacement list alone
    (an operand ends with the directive's line, continuations included); None in any other
    directive (`#if N / 2`)."""
    for m in _DIRECTIVE.finditer(clean):
        if m.start() <= position < m.end():
            head = _DEFINE_HEAD.match(clean, m.start())
            if head is None or position < head.end():
                return None
            parameters = frozenset(re.findall(r"[A-Za-z_]\w*", head.group("parameters") or ""))
            return (_blank(clean[:head.end()]) + clean[head.end():m.end()] +
                    _blank(clean[m.end():]), parameters)
    return _code_only(clean), None


def _code_only(clean: str) -> str:
    """The body's code, every preprocessor directive blanked."""
    return _DIRECTIVE.sub(lambda m: _blank(m.group(0)), clean)


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def arithmetic_operators(code: str, accessors: frozenset[str] = frozenset(),
                         names: BodyNames = BodyNames()) -> list[tuple[int, bool]]:
    """(offset, unary) of each `+`, `-`, `*`, `+=`, `-=` and `*=` of a body's code that the
    wrapping rewrite takes: not in a preprocessor directive other than a `#define`'s
    replacement list, nor in brackets (an array bound must stay a constant expression, and an
    index that overflows means nothing), nor in a `for (...)` header or the arguments of a core
    accessor `x(i + 1)` (loop counters and indices: nvcc's loop analysis relies on their
    overflow being undefined, and they do not overflow); a unary `-` only of something other
    than a number literal; a unary `+` or `*` (a dereference) never."""
    view = _DIRECTIVE.sub(_define_replacement_only, _scan_text(code))
    tokens = _tokens(view)
    scanner = _Scanner(tokens, names)
    found = []
    contexts: list[bool] = []       # per open bracket: whether it excludes what is inside
    for k, tok in enumerate(tokens):
        if tok.text in _OPENING:
            before = scanner.text(k - 1)
            contexts.append(tok.text == "[" or (tok.text == "(" and (before == "for" or before in accessors)))
            continue
        if tok.text in _CLOSING:
            if contexts:
                contexts.pop()
            continue
        if tok.text not in ("+", "-", "*", "+=", "-=", "*=") or any(contexts):
            continue
        try:
            binary = scanner.ends_operand(k - 1)
        except _Unsupported:
            continue
        if binary or tok.text in ("+=", "-=", "*="):
            found.append((tok.start, False))
        elif tok.text == "-" and 0 <= k + 1 < len(tokens) and tokens[k + 1].kind != "num":
            found.append((tok.start, True))
    return found


def _define_replacement_only(m: re.Match) -> str:
    """A directive as arithmetic_operators sees it: a `#define`'s replacement list, else
    nothing."""
    head = _DEFINE_HEAD.match(m.group(0))
    if head is None:
        return _blank(m.group(0))
    return _blank(m.group(0)[:head.end()]) + m.group(0)[head.end():]
