"""Integer division made total: a body's `a / b`, `a % b`, `x /= b` and `x %= b` rewritten
into the prelude's `ufg_div(a, b)` and `ufg_rem(a, b)` (ufuncgen/prelude.h).

C leaves integer division by 0, and INT_MIN / -1, undefined: on x86-64 the host loops and the
simulator stop the whole process with SIGFPE, and a GPU returns whatever its division
routine gives.  The prelude's functions give NumPy's answers on all three (0, and INT_MIN for
INT_MIN / -1), raising NumPy's divide-by-zero or overflow warning on the host; of floating
operands they are plain division.

The rewrite edits only around the operator: `ufg_div(` goes before the left operand, the
operator becomes a comma, and `)` goes after the right operand, so the user's lines, and what
is between, stay as written (#line directives still name the user's lines).  The operands are
found on C's grammar: the left operand of a multiplicative operator is the chain of
cast-expressions joined by `*`, `/` and `%` before it (they group to the left), the right
operand one cast-expression (prefix operators, casts, a primary, postfix operators).  A
compound assignment `x /= e` becomes `x = ufg_div(x, e)`, its left side written twice: only
where it has no side effect (no `++`, `--` or assignment in it).  What the scanner does not
understand (a compound literal, a line continuation, token pasting, unbalanced brackets) is
left alone and reported, so that the caller can warn.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

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
# Words that make up a type name in a cast: C's, ufuncgen's `T`, and any `*_t` typedef.
_TYPE_WORDS = frozenset("""void char short int long float double signed unsigned _Bool bool
    _Complex complex const volatile restrict T npy_intp""".split())
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
    """A construct the scanner does not follow: the division is left as written.  Its
    argument, when given, says why in words for a warning."""

    def __init__(self, reason: str = "in an expression the generator cannot follow (a "
                                      "compound literal, token pasting, or unbalanced brackets "
                                      "around it); make the division a statement of its own"):
        super().__init__(reason)
        self.reason = reason


class _Scanner:
    def __init__(self, tokens: list[_Token]):
        self.t = tokens

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
            all(w in _TYPE_WORDS or w.endswith("_t") for w in words)

    def ends_operand(self, i: int) -> bool:
        """Whether token i ends an operand, so that an operator after it is binary."""
        tok = self.t[i] if 0 <= i < len(self.t) else None
        if tok is None:
            return False
        if tok.kind == "num" or (tok.kind == "id" and tok.text not in _STATEMENT_WORDS):
            return True
        if tok.text == "]":
            return True
        if tok.text == ")":
            return not self.is_type_group(self.match_backward(i), i)
        if tok.text in ("++", "--"):
            return self.ends_operand(i - 1)
        return False

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
        j = i
        while j < len(self.t):
            self.check(j)
            word = self.text(j)
            if word in _OPENING:
                j = self.match_forward(j) + 1
            elif word in (";", ",", ")", "]", "}") or word in _STATEMENT_WORDS:
                break
            else:
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
            if before == ")" and self.is_type_group(self.match_backward(i - 1), i - 1):
                i = self.match_backward(i - 1)
            elif before in _PREFIX and not self.ends_operand(i - 2):
                i -= 1
            elif before == "sizeof":
                i -= 1
            else:
                break
        self.check(i - 1)
        return i

    def multiplicative_start(self, e: int) -> int:
        """The first token of the left operand of a `*`, `/` or `%` after token e: the chain of
        cast-expressions joined by those operators that ends there (they group to the left)."""
        i = self.cast_expression_start(e)
        while self.text(i - 1) in ("*", "/", "%") and self.ends_operand(i - 2):
            i = self.cast_expression_start(i - 2)
        return i


@dataclass(frozen=True)
class Rewrite:
    """A body's code after the rewrite, and the divisions left as written: (offset, why)."""
    code: str
    left_alone: tuple[tuple[int, str], ...]


def total_divisions(code: str, clean: str, offsets: set[int]) -> Rewrite:
    """`code` with the division operators at `offsets` rewritten into ufg_div and ufg_rem,
    left to right, and the offsets left as written.  `clean` is `code` with its comments and
    string literals blanked (gen.parse.blank_c_noise: the same offsets), what is scanned.
    Lines starting with `#` other than `#define` are never touched."""
    left_alone: list[tuple[int, str]] = []
    pending = sorted(offsets)           # in the current text's offsets
    original = dict(zip(pending, pending))
    while pending:
        position = pending.pop(0)
        start = original.pop(position)
        view = _view(clean, position)
        if view is None:
            left_alone.append((start, "in a preprocessor directive; move it to the body's code"))
            continue
        tokens = _tokens(view)
        index = next((k for k, tok in enumerate(tokens) if tok.start == position), None)
        try:
            if index is None:
                raise _Unsupported
            pieces = _pieces(_Scanner(tokens), index, code, clean)
        except _Unsupported as unsupported:
            left_alone.append((start, unsupported.reason))
            continue
        # (offset, length replaced, text in code, text in clean), applied from the last.
        for at, length, text, blanked in sorted(pieces, reverse=True):
            code = code[:at] + text + code[at + length:]
            clean = clean[:at] + blanked + clean[at + length:]
            delta = len(text) - length
            moved = [p + delta if p >= at + length else p for p in pending]
            original = {moved[k]: original[p] for k, p in enumerate(pending)}
            pending = moved
    return Rewrite(code, tuple(sorted(left_alone)))


def _pieces(scanner: _Scanner, index: int, code: str, clean: str) -> list[tuple[int, int, str, str]]:
    """The edits that make the division at token `index` a call."""
    tokens = scanner.t
    operator = tokens[index].text
    name = "ufg_div" if operator[0] == "/" else "ufg_rem"
    if operator in ("/", "%"):
        first = scanner.multiplicative_start(index - 1)
        last = scanner.cast_expression_end(index + 1) - 1
        at = tokens[index].start
        spaced = at > 0 and clean[at - 1] == " " and tokens[index - 1].end < at    # `a / b`: `a, b`
        return [(tokens[first].start, 0, f"{name}(", f"{name}("),
                (at - spaced, 1 + spaced, ",", ","),
                (tokens[last].end, 0, ")", ")")]
    if operator in ("/=", "%="):
        first = scanner.cast_expression_start(index - 1)
        if any(tok.text in ("++", "--") or tok.text in _ASSIGNMENTS for tok in tokens[first:index]):
            raise _Unsupported(         # written twice: x = ufg_div(x, e)
                f"whose left side has a side effect ('++', '--' or an assignment) that "
                f"`x = {name}(x, ...)` would repeat; move the side effect to a statement of "
                f"its own")
        last = scanner.assignment_expression_end(index + 1) - 1
        span = slice(tokens[first].start, tokens[index - 1].end)
        if "\n" in code[span] or code[span] != clean[span]:
            raise _Unsupported          # a copy must not add a line, nor copy a comment
        return [(tokens[index].start, 2, f"= {name}({code[span]},", f"= {name}({clean[span]},"),
                (tokens[last].end, 0, ")", ")")]
    raise _Unsupported


_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)
_DEFINE_HEAD = re.compile(r"[ \t]*#[ \t]*define[ \t]+[A-Za-z_]\w*(?:\([^)]*\))?")


def _view(clean: str, position: int) -> str | None:
    """The text the division at `position` is scanned in, at the same offsets: in the body's
    code, the code with every preprocessor directive blanked; in a `#define`, its replacement
    list alone (an operand ends with the directive's line, continuations included); None in
    any other directive (`#if N / 2`)."""
    for m in _DIRECTIVE.finditer(clean):
        if m.start() <= position < m.end():
            head = _DEFINE_HEAD.match(clean, m.start())
            if head is None or position < head.end():
                return None
            return _blank(clean[:head.end()]) + clean[head.end():m.end()] + _blank(clean[m.end():])
    return _DIRECTIVE.sub(lambda m: _blank(m.group(0)), clean)


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)
