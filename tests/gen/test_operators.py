"""gen/operators.py: a body's integer divisions rewritten into the prelude's total ufg_div and
ufg_rem, and for C++ (nvcc) its integer +, -, * into the wrapping ufg_add, ufg_sub, ufg_mul,
ufg_neg, with the operands C's grammar gives them; what it cannot follow is left as written."""
from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ufuncgen.gen import load_module, operators
from ufuncgen.gen.model import _CAST, _cast_before, _name_before, _operand_before
from ufuncgen.gen.operators import arithmetic_operators, body_names, rewrite_operators
from ufuncgen.gen.parse import blank_c_noise
from ufuncgen.gen.render import render_module

COMMAND = "python -m ufuncgen.gen (test)"


def _rewritten(code: str) -> tuple[str, tuple]:
    """Every `/`, `%`, `/=` and `%=` of the code rewritten (comments and strings left out)."""
    clean = blank_c_noise(code)
    offsets = {m.start(1) for m in re.finditer(r"(?<![/*])(/(?![/*])=?|%=?)", clean)}
    rewrite = rewrite_operators(code, offsets, body_names(clean))
    return rewrite.code, tuple(offset for offset, _ in rewrite.left_alone)


@pytest.mark.parametrize("code, expected", [
    ("q = a / b;", "q = ufg_div(a, b);"),
    ("q = a % b;", "q = ufg_rem(a, b);"),
    ("q = a/b;", "q = ufg_div(a,b);"),
    # The left operand is the whole multiplicative chain before the operator (left to right).
    ("q = a * c / b * d;", "q = ufg_div(a * c, b) * d;"),
    ("q = a / b / c;", "q = ufg_div(ufg_div(a, b), c);"),
    ("q = a/b%c;", "q = ufg_rem(ufg_div(a,b),c);"),
    ("q = a - b / c;", "q = a - ufg_div(b, c);"),
    ("q = a * -b / c;", "q = ufg_div(a * -b, c);"),
    # Prefix operators, casts, calls, subscripts, members and postfix operators stay with
    # their operand.
    ("q = -a / -b;", "q = ufg_div(-a, -b);"),
    ("q = !a / ~b;", "q = ufg_div(!a, ~b);"),
    ("q = (int64_t)x / b;", "q = ufg_div((int64_t)x, b);"),
    ("q = (T)-a / (unsigned long)b;", "q = ufg_div((T)-a, (unsigned long)b);"),
    ("q = (T)(x + 1) / (b - 1);", "q = ufg_div((T)(x + 1), (b - 1));"),
    ("q = (a) / (b);", "q = ufg_div((a), (b));"),
    ("q = x(i) / y(j, k);", "q = ufg_div(x(i), y(j, k));"),
    ("q = f(a, b) / s.m[2];", "q = ufg_div(f(a, b), s.m[2]);"),
    ("q = p->n / v[i + 1];", "q = ufg_div(p->n, v[i + 1]);"),
    ("q = a++ / b--;", "q = ufg_div(a++, b--);"),
    ("q = sizeof(T) / b;", "q = ufg_div(sizeof(T), b);"),
    # sizeof(T) is an operand of its own, not sizeof of a cast of what follows it
    ("q = sizeof(T) + a / b;", "q = sizeof(T) + ufg_div(a, b);"),
    ("q = b / sizeof(T) + a / (T)256;", "q = b / sizeof(T) + ufg_div(a, (T)256);"),
    ("q = sizeof(int32_t) - a % b;", "q = sizeof(int32_t) - ufg_rem(a, b);"),
    ("acc += x(i) / (T)n;", "acc += ufg_div(x(i), (T)n);"),
    # Lower-precedence operators end the operands.
    ("q = c ? a / b : a % b;", "q = c ? ufg_div(a, b) : ufg_rem(a, b);"),
    ("q = a + b / c << 2;", "q = a + ufg_div(b, c) << 2;"),
    ("return a / b;", "return ufg_div(a, b);"),
    ("if (b) q = a / b;", "if (b) q = ufg_div(a, b);"),
    ("for (i = 0; i < n / k; i++) s += i % k;",
     "for (i = 0; i < ufg_div(n, k); i++) s += ufg_rem(i, k);"),
    ("y = (T)(a / b) + (T)(a % b);", "y = (T)(ufg_div(a, b)) + (T)(ufg_rem(a, b));"),
    ("q = a%*p;", "q = ufg_rem(a,*p);"),
    # By a constant: no rewrite (an array bound stays one); by 0 or a negative one, it is.
    ("#define N 8\n#define K 2\nT v[N / K];", "#define N 8\n#define K 2\nT v[N / K];"),
    ("y = x / -1 + x % -1 + x / 0 + x / 2;", "y = ufg_div(x, -1) + ufg_rem(x, -1) + ufg_div(x, 0) + x / 2;"),
    ("y = (c - 'a') % m;", "y = ufg_rem((c - 'a'), m);"),
    # A name ending in _t is no type unless it is one; a body's typedef is one.
    ("q = (v_t) - a / b;", "q = (v_t) - ufg_div(a, b);"),
    ("typedef long long wide;\nq = (wide)a / b;", "typedef long long wide;\nq = ufg_div((wide)a, b);"),
    # Compound assignment: x = ufg_div(x, <the whole right side>).
    ("bytes /= (int64_t)sizeof(T);", "bytes = ufg_div(bytes, (int64_t)sizeof(T));"),
    ("a > 0 ? t /= b : 0;", "a > 0 ? t = ufg_div(t, b) : 0;"),
    ("x /= c ? a : b;", "x = ufg_div(x, c ? a : b);"),
    ("r %= (a + 1);", "r = ufg_rem(r, (a + 1));"),
    ("x(i) /= n + 1;", "x(i) = ufg_div(x(i), n + 1);"),
    ("q /= c ? a : b, k++;", "q = ufg_div(q, c ? a : b), k++;"),
    # Comments and strings are not code, and keep their place.
    ("q = a / b; /* a / b */ w = \"x/y\";", "q = ufg_div(a, b); /* a / b */ w = \"x/y\";"),
    ("q = a /* half */ / b;", "q = ufg_div(a /* half */, b);"),
    ("q = a /* num *// b;", "q = ufg_div(a /* num */, b);"),
    # In a macro's definition, on its own operands.
    ("#define DIV(a, b) ((a) / (b))", "#define DIV(a, b) (ufg_div((a), (b)))"),
    ("#define QUOT(a, b) \\\n    ((a) / (b))", "#define QUOT(a, b) \\\n    (ufg_div((a), (b)))"),
    # A macro's name and parameters are no operands, and its operands end with its line.
    ("#define HALF(x) ((x) / h)\n    q = a / b;", "#define HALF(x) (ufg_div((x), h))\n    q = ufg_div(a, b);"),
    ("#define N 4\n    x(i) /= b;", "#define N 4\n    x(i) = ufg_div(x(i), b);"),
    # Lines are kept: an operand across lines stays across them.
    ("q = a *\n    b /\n    c;", "q = ufg_div(a *\n    b,\n    c);"),
])
def test_a_division_becomes_a_call_on_the_operands_c_gives_it(code, expected):
    assert _rewritten(code) == (expected, ())


@pytest.mark.parametrize("code", [
    "p[k++] /= b;",                 # `/=` writes its left side twice
    "v[k = 1] %= b;",
    "q = (T){1, 2} / b;",           # a compound literal: its commas would split the macro
    "#if N / 2 > 1",                # a preprocessor condition
    "q = a ## b / c;",              # token pasting
    "#define SLASH /\n    q = a SLASH b;",   # an operator without its operands
    # A macro whose operands its use decides: `x * PER` is (x * a) / b, `HALF(a + 1)` a + 1 / b.
    "#define PER a / b\n    q = x * PER;",
    "#define HALF(v) (v / b)\n    q = HALF(a + 1);",
    "#define DIFF(u, v) u - v\n    q = c / DIFF(a, b);",     # C: c / a - b
])
def test_what_the_scanner_cannot_follow_is_left_as_written(code):
    rewritten, left_alone = _rewritten(code)
    assert rewritten == code
    assert len(left_alone) == 1


@pytest.mark.parametrize("code, expected", [
    # One text serves every loop of a body, so T may be any element type: (T)256 is 0 in
    # uint8 (GCC traps a constant division by 0), (T)0.5 is 0 in every integer type,
    # (T)0xFFFFFFFF is -1 in int32 (INT_MIN / -1), (T)128 is -128 in int8.
    ("y = x / (T)256;", "y = ufg_div(x, (T)256);"),
    ("#define BINS 256\n    y = x / (T)BINS;", "#define BINS 256\n    y = ufg_div(x, (T)BINS);"),
    ("y = x / (T)0.5;", "y = ufg_div(x, (T)0.5);"),
    ("y = x / (T)0xFFFFFFFF;", "y = ufg_div(x, (T)0xFFFFFFFF);"),
    ("y = x % (T)(256) + x % (T)128;", "y = ufg_rem(x, (T)(256)) + ufg_rem(x, (T)128);"),
    ("typedef long long wide;\n    y = x / (uint8_t)256 + x / (wide)0.25;",
     "typedef long long wide;\n    y = ufg_div(x, (uint8_t)256) + ufg_div(x, (wide)0.25);"),
    # A macro, a character literal or a GNU binary literal that is 0.
    ("#define K 0\n    y = x / K;", "#define K 0\n    y = ufg_div(x, K);"),
    ("y = x / '\\0' + x % 0b0;", "y = ufg_div(x, '\\0') + ufg_rem(x, 0b0);"),
    # Positive whatever T is (bool makes 1 of anything nonzero), or floating: left as written.
    ("y = x / (T)3 + x % (T)127 + x / (unsigned char)300;",
     "y = x / (T)3 + x % (T)127 + x / (unsigned char)300;"),
    ("#define N 4\n#define K (N << 2)\n    y = x / (int)K + x / (int)sizeof(T) + x / (double)0;",
     "#define N 4\n#define K (N << 2)\n    y = x / (int)K + x / (int)sizeof(T) + x / (double)0;"),
    ("y = x / 'a' + x / 10u;", "y = x / 'a' + x / 10u;"),
])
def test_a_constant_divisor_is_left_as_written_only_where_every_type_makes_it_positive(code, expected):
    assert _rewritten(code) == (expected, ())


def test_only_the_offsets_given_are_rewritten():
    code = "q = a / b + c / d;"
    assert rewrite_operators(code, {code.index("/ d")}).code == "q = a / b + ufg_div(c, d);"


def _wrapped(code: str, accessors=frozenset()) -> str:
    """Every +, -, * the wrapping rewrite takes, rewritten (types aside: the model's part)."""
    names = body_names(blank_c_noise(code))
    offsets = {offset for offset, _ in arithmetic_operators(code, frozenset(accessors), names)}
    return rewrite_operators(code, offsets, names).code


@pytest.mark.parametrize("code, expected", [
    ("y = a + b * c - -d;", "y = ufg_sub(ufg_add(a, ufg_mul(b, c)), ufg_neg(d));"),
    ("y = -a * b;", "y = ufg_mul(ufg_neg(a), b);"),
    ("y = (a + b) * (c - 1);", "y = ufg_mul((ufg_add(a, b)), (ufg_sub(c, 1)));"),
    ("y = a < b + c ? a - b : c;", "y = a < ufg_add(b, c) ? ufg_sub(a, b) : c;"),
    ("acc += x(i) * 3;", "acc = ufg_add(acc, ufg_mul(x(i), 3));"),
    # Indices, loop headers and core accessors' arguments keep C's operators (nvcc's loop
    # analysis relies on their overflow being undefined; array bounds stay constant).
    ("v[i + 1] = a - 1;", "v[i + 1] = ufg_sub(a, 1);"),
    ("for (int64_t i = 0; i < n - 1; i += 2) s -= i;",
     "for (int64_t i = 0; i < n - 1; i += 2) s = ufg_sub(s, i);"),
    ("y = x(n - 1 - i) * k;", "y = ufg_mul(x(n - 1 - i), k);"),
    # A declarator's or a dereference's star, a unary plus and a negative literal: no arithmetic.
    ("T *p = &a; int64_t *q; y = *p + -3 + +b;", "T *p = &a; int64_t *q; y = ufg_add(ufg_add(*p, -3), +b);"),
    ("y = (T)-a * (int64_t)c - b;", "y = ufg_sub(ufg_mul((T)ufg_neg(a), (int64_t)c), b);"),
    ("y = sizeof(T) - a;", "y = ufg_sub(sizeof(T), a);"),
    ("y = sizeof(T) + a * b;", "y = ufg_add(sizeof(T), ufg_mul(a, b));"),
    ("#define TWICE(a) (2 * (a))\ny = TWICE(b) + 1;", "#define TWICE(a) (ufg_mul(2, (a)))\ny = ufg_add(TWICE(b), 1);"),
    # A statement after a condition starts afresh: the star is a dereference.
    ("if (a < 0) *neg = 1;", "if (a < 0) *neg = 1;"),
    ("while (k--) *p++ = x;", "while (k--) *p++ = x;"),
    # Constants stay constant expressions (case labels, array bounds): C folds them.
    ("switch (x) { case 2 * 3: y = a * 2; }", "switch (x) { case 2 * 3: y = ufg_mul(a, 2); }"),
    ("#define BLOCK (2 * 4)\nT buf[BLOCK];", "#define BLOCK (2 * 4)\nT buf[BLOCK];"),
    # Types: <stdint.h>'s, a macro naming one; a character literal is an operand.
    ("y = (int_fast64_t)-*p;", "y = (int_fast64_t)ufg_neg(*p);"),
    ("#define WIDE int64_t\ny = (WIDE)a * b;", "#define WIDE int64_t\ny = ufg_mul((WIDE)a, b);"),
    ("y = (c - 'a' + 13) * 2;", "y = ufg_mul((ufg_add(ufg_sub(c, 'a'), 13)), 2);"),
    # A macro that is no parenthesized whole: `DIFF(a, b) * 2` is `a - b * 2` in C.
    ("#define DIFF(u, v) u - v\ny = q - DIFF(a, b) * 2;", "#define DIFF(u, v) u - v\ny = q - DIFF(a, b) * 2;"),
    ("if (x != 5) { t += 1; } s *= 3;", "if (x != 5) { t = ufg_add(t, 1); } s = ufg_mul(s, 3);"),
])
def test_signed_arithmetic_becomes_a_wrapping_call_where_it_is_arithmetic(code, expected):
    assert _wrapped(code, {"x"}) == expected


TYPED = """\
ufunc mean_step(total, count) -> m
    types: float64(float64, int64)
{
    double c = (double)count;
    m = total / c + total / count + (double)count / count + 1.0 / count;
}

ufunc per_item(total, count) -> m
    types: float64(int64, int64)
{
    const int64_t whole = total / count;
    m = (double)whole + (double)(total % count) / (double)count + whole / 4;
}

gufunc bucket(x, width) -> b
    layout: (n),()->(n)
    types: int32(int32, int32), float64(float64, int32)
{
    for (int64_t i = 0; i < n; i++) b(i) = x(i) / width;
}
"""


def test_a_body_compiles_its_integer_divisions_as_calls_and_its_float_ones_as_written(tmp_path):
    source = tmp_path / "typed.ufunc"
    source.write_text(TYPED)
    module = load_module("pkg.typed", [str(source)], source_root=str(tmp_path))
    bodies = render_module(module, COMMAND)["typed_bodies.h"]
    # A float operand makes a float division: by 0 it gives inf or nan, defined.
    assert "m = total / c + total / count + (double)count / count + 1.0 / count;" in bodies
    # Integers on both sides (the locals' types count); a nonzero literal divisor cannot fail.
    assert "const int64_t whole = ufg_div(total, count);" in bodies
    assert "m = (double)whole + (double)(ufg_rem(total, count)) / (double)count + whole / 4;" \
        in bodies
    # Integer in one of its loops: rewritten for all (ufg_div divides floats plainly).
    assert "b(i) = ufg_div(x(i), width);" in bodies
    # The user's lines are what the model keeps; only the compiled text changes.
    per_item = next(f for f in module.functions if f.name == "per_item")
    assert per_item.body.lines[0].strip() == "const int64_t whole = total / count;"
    assert len(per_item.body.compiled_lines) == len(per_item.body.lines)
    # nvcc's text: integer +, -, * wrap; a float operation is left as written.
    mean_step = next(f for f in module.functions if f.name == "mean_step")
    assert mean_step.body.device_code is None
    bucket = next(f for f in module.functions if f.name == "bucket")
    assert bucket.body.cxx_lines[0].strip() == \
        "for (int64_t i = 0; i < n; i++) b(i) = ufg_div(x(i), width);"
    assert "#ifdef __cplusplus" not in bodies.split("ufg_body_mean_step")[1].split("ufg_body_")[0]


def test_nvcc_text_wraps_integer_arithmetic_and_leaves_float_arithmetic(tmp_path):
    source = tmp_path / "mixed.ufunc"
    source.write_text("""\
ufunc affine(x, a, b) -> y
    types: int64(int64, int64, int64), float64(float64, float64, float64)
{
    y = a * x + b;
}

ufunc scaled(x, k) -> y
    types: float64(float64, int64)
{
    const int64_t twice = k * 2;
    y = x * (double)twice - x;
}
""")
    module = load_module("pkg.mixed", [str(source)], source_root=str(tmp_path))
    affine, scaled = module.functions
    # One text for every loop of a function: ufg_add of doubles is their plain sum.
    assert affine.body.compiled_lines == ("    y = a * x + b;",)
    assert affine.body.cxx_lines == ("    y = ufg_add(ufg_mul(a, x), b);",)
    assert scaled.body.cxx_lines == ("    const int64_t twice = ufg_mul(k, 2);",
                                     "    y = x * (double)twice - x;")


# --------------------------------------------------------------------------- against C itself

_PRECEDENCE = {"?": 1, "<": 6, "+": 8, "-": 8, "*": 9, "/": 9, "%": 9}


def _wrap64(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


def _c_quotient(a: int, b: int) -> int:
    if b == 0:
        return 0
    q = abs(a) // abs(b)
    return _wrap64(q if (a < 0) == (b < 0) else -q)


def _random_expression(rng: random.Random, depth: int):
    """(C text with the fewest parentheses C's precedence allows, its precedence, its value
    under the prelude's total division, int64 wrapping)."""
    values = {"a": 7, "b": -3, "c": 0, "d": -(2**63), "e": -1, "f": 100}
    if depth == 0 or rng.random() < 0.2:
        if rng.random() < 0.3:
            k = rng.choice([0, 1, 2, 5, 13])
            return str(k), 20, k
        name = rng.choice(sorted(values))
        return name, 20, values[name]
    kind = rng.random()
    if kind < 0.15:                         # a prefix operator or a cast: binds tighter
        text, prec, value = _random_expression(rng, depth - 1)
        text = text if prec >= 15 and not text.startswith("-") else f"({text})"    # not `--`
        if rng.random() < 0.5:
            return f"-{text}", 15, _wrap64(-value)
        return f"(int64_t){text}", 15, value
    if kind < 0.25:                         # a conditional
        c, x, y = (_random_expression(rng, depth - 1) for _ in range(3))
        text = f"{c[0] if c[1] > 1 else '(' + c[0] + ')'} ? {x[0]} : " \
               f"{y[0] if y[1] >= 1 else '(' + y[0] + ')'}"
        return text, 1, x[2] if c[2] else y[2]
    op = rng.choice(["+", "-", "*", "/", "%", "/", "%", "<"])
    left, right = _random_expression(rng, depth - 1), _random_expression(rng, depth - 1)
    prec = _PRECEDENCE[op]
    # Left-associative: the left operand may have the same precedence, the right must bind tighter.
    lt = left[0] if left[1] >= prec else f"({left[0]})"
    rt = right[0] if right[1] > prec else f"({right[0]})"
    a, b = left[2], right[2]
    value = {"+": lambda: _wrap64(a + b), "-": lambda: _wrap64(a - b),
             "*": lambda: _wrap64(a * b), "/": lambda: _c_quotient(a, b),
             "%": lambda: 0 if b == 0 else _wrap64(a - b * _c_quotient(a, b)),
             "<": lambda: int(a < b)}[op]()
    return f"{lt} {op} {rt}", prec, value


CC = shutil.which("cc") or shutil.which("gcc")


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_rewritten_expressions_compute_in_c_what_the_precedence_of_the_original_gives(tmp_path):
    """Random integer expressions with the fewest parentheses C allows, so that an operand
    taken wrongly would change the value: the rewritten text, compiled with the prelude,
    computes what the expression tree computes with total division."""
    import ufuncgen
    rng = random.Random(20261127)
    cases = [_random_expression(rng, 4) for _ in range(400)]
    lines = []
    for text, _, _ in cases:
        clean = blank_c_noise(text)
        offsets = {m.start(1) for m in re.finditer(r"(?<![/*])(/|%)(?![/*=])", clean)}
        rewrite = rewrite_operators(text, offsets)
        assert rewrite.left_alone == (), text
        lines.append(f'    printf("%lld\\n", (long long)({rewrite.code}));')
    program = tmp_path / "expressions.c"
    program.write_text("#include <stdio.h>\n#include <stdint.h>\n#include \"ufuncgen/prelude.h\"\n"
                       "int main(void)\n{\n    int64_t a = 7, b = -3, c = 0, d = INT64_MIN, e = -1, "
                       "f = 100;\n    (void)a; (void)b; (void)c; (void)d; (void)e; (void)f;\n"
                       + "\n".join(lines) + "\n    return 0;\n}\n")
    include = Path(ufuncgen.__file__).parent / "include"
    binary = tmp_path / "expressions"
    # Not under tools/sanitize.sh's preloaded ASan: the compiler's own leaks are not ours.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    built = subprocess.run([CC, "-std=gnu11", "-O1", "-fwrapv", f"-I{include}", str(program),
                            "-o", str(binary), "-lm"], capture_output=True, text=True, timeout=300,
                           env=env)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=60, env=env)
    assert ran.returncode == 0, ran.stderr
    got = [int(v) for v in ran.stdout.split()]
    for (text, _, want), value in zip(cases, got):
        assert value == want, text
    assert sum("/" in t or "%" in t for t, _, _ in cases) > 250


def test_a_macro_that_divides_by_a_positive_literal_needs_no_warning_where_its_use_decides_the_operands(
        tmp_path):
    """`#define HALF(v) v / 2`: `HALF(a + 1)` is `a + 1 / 2`, a division by 2 all the same,
    which cannot fail: left as written without a word.  A divisor its use decides, or one a
    type makes 0 (`(T)(256)` in uint8), is left as written with a warning."""
    source = tmp_path / "macros.ufunc"
    source.write_text("""\
ufunc half(a, b) -> y
    types: uint8(uint8, uint8), int64(int64, int64)
{
#define HALF(v) v / 2
#define QQ(v, w) v / w
#define BYTE(v) v / (T)(256)
    y = HALF(a + 1) + QQ(a, b) + BYTE(a);
}
""")
    module = load_module("pkg.macros", [str(source)], source_root=str(tmp_path))
    warned = sorted((w.location.line, w.location.col) for w in module.warnings
                    if "in a macro whose use decides its operands" in w.message)
    assert warned == [(5, 20), (6, 19)]


# --------------------------------------------------------------------------- long bodies

class _CountingText(str):
    """A text that counts the characters read from it by indexing and slicing."""

    def __getitem__(self, key):
        got = str.__getitem__(self, key)
        self.read = getattr(self, "read", 0) + len(got)
        return got


def test_the_operand_before_an_operator_is_found_reading_back_over_it_not_the_whole_body():
    line = "    y = (T)(int64_t)y * x(i) + 1;\n"
    names = {"T": "f", "x": "i", "y": "i"}
    short = _operand_before(line, line.rindex("+"), names)
    body = _CountingText(line * 10_000)
    assert _operand_before(body, body.rindex("+"), names) == short == "f"
    assert body.read < 10 * len(line)


def test_a_long_body_is_rewritten_scanning_each_statement_not_the_whole_body_per_operator(
        monkeypatch):
    """Each operator's rewrite reads its statement again, not the whole body: over the body,
    that would take time in its length times its operators (minutes for `ufuncgen check` of
    a few thousand integer divisions)."""
    tokenized = []                  # the length of each text tokenized
    tokens = operators._tokens

    def counting(code: str):
        tokenized.append(len(code))
        return tokens(code)

    monkeypatch.setattr(operators, "_tokens", counting)
    line = "    y = y / d + (y % d) * 3; if (d) { y /= d; }\n"
    body = line * 100
    assert _rewritten(body) == (_rewritten(line)[0] * 100, ())
    # The body once, and each statement once per operator in it: about 2.5 times the body
    # (the whole body per operator: 380 times it).
    assert sum(tokenized) < 10 * len(body)


@pytest.mark.parametrize("text", [
    "f(x)", "f  (x)", "9ab (", "return (", "a\u00e9b(", "12 ", "(T)", "( const unsigned long )",
    "(T)(int64_t)", "x (T) ", "(a)(b)", ")T)", "((T)", "(static\nint  )\n", "(T x)", "(1T)",
])
def test_reading_back_finds_the_name_and_the_cast_the_expressions_over_the_text_before_find(text):
    for end in range(len(text) + 1):
        name = re.search(r"([A-Za-z_]\w*)\s*$", text[:end])
        assert _name_before(text, end) == (name.start(1) if name else None), (text, end)
        cast, found = re.search(rf"{_CAST.pattern}\s*$", text[:end]), _cast_before(text, end)
        assert (found.span(), found.group("type")) == (cast.span(), cast.group("type")) \
            if cast else found is None, (text, end)
