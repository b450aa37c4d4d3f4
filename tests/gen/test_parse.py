"""The parser: signature-file text → raw declarations, each piece with its location."""
from __future__ import annotations

import textwrap

from ufuncgen.gen.diagnostics import DiagnosticSink
from ufuncgen.gen.parse import RawFile, parse_text


def parse(text: str, path: str = "t.ufunc") -> tuple[RawFile, DiagnosticSink]:
    sink = DiagnosticSink(path, [])
    return parse_text(path, textwrap.dedent(text).lstrip("\n"), sink), sink


def parse_ok(text: str) -> RawFile:
    raw, sink = parse(text)
    assert sink.diagnostics == [], [d.format() for d in sink.diagnostics]
    return raw


def test_a_ufunc_header_gives_kind_name_arguments_and_outputs_with_their_columns():
    raw = parse_ok("""
        ufunc hypot(x, y) -> r
            types: float64(float64, float64)
        {
            r = hypot(x, y);
        }
    """)
    (fn,) = raw.functions
    assert fn.kind.text == "ufunc"
    assert fn.name.text == "hypot"
    assert (fn.name.location.line, fn.name.location.col) == (1, 7)
    assert [t.text for t in fn.args] == ["x", "y"]
    assert [t.location.col for t in fn.args] == [13, 16]
    assert [t.text for t in fn.outputs] == ["r"]
    assert fn.layout is None and fn.identity is None and fn.fastmath is None


def test_several_outputs_are_written_in_parentheses():
    raw = parse_ok("""
        ufunc sincos(x) -> (s, c)
            types: (float32, float32)(float32)
        {
            s = sin(x);
            c = cos(x);
        }
    """)
    (fn,) = raw.functions
    assert [t.text for t in fn.outputs] == ["s", "c"]
    (sig,) = fn.types
    assert [t.text for t in sig.outputs] == ["float32", "float32"]
    assert [t.text for t in sig.inputs] == ["float32"]
    assert sig.text == "(float32, float32)(float32)"


def test_a_types_line_holds_a_comma_separated_list_and_types_lines_accumulate():
    raw = parse_ok("""
        ufunc add(x, y) -> s
            types: int64(int64, int64), float32(float32, float32)
            types: float64(float64, float64)
        {
            s = x + y;
        }
    """)
    sigs = raw.functions[0].types
    assert [s.text for s in sigs] == ["int64(int64, int64)", "float32(float32, float32)",
                                      "float64(float64, float64)"]
    assert [(s.location.line, s.location.col) for s in sigs] == [(2, 12), (2, 33), (3, 12)]


def test_a_type_signature_may_have_no_inputs():
    raw = parse_ok("""
        ufunc zero() -> z
            types: float64()
        {
            z = 0;
        }
    """)
    (sig,) = raw.functions[0].types
    assert sig.inputs == () and [t.text for t in sig.outputs] == ["float64"]


def test_a_layout_keeps_frozen_sizes_as_numbers_and_its_text_without_spaces():
    raw = parse_ok("""
        gufunc cross(u, v) -> w
            layout: (3), (3) -> (3)
            types: float64(float64, float64)
        {
            w(0) = 0;
        }
    """)
    lay = raw.functions[0].layout
    assert lay.text == "(3),(3)->(3)"
    assert [[(t.text, t.kind) for t in group] for group in lay.inputs] == [[("3", "number")]] * 2
    assert [[t.text for t in group] for group in lay.outputs] == [["3"]]
    assert (lay.location.line, lay.location.col) == (2, 13)


def test_a_layout_may_mix_names_frozen_sizes_and_scalars():
    raw = parse_ok("""
        gufunc f(a, b) -> (c, d)
            layout: (m,n),(n,3)->(m),()
            types: (float64, float64)(float64, float64)
        {
            d = 0;
        }
    """)
    lay = raw.functions[0].layout
    assert [[t.text for t in g] for g in lay.inputs] == [["m", "n"], ["n", "3"]]
    assert [[t.text for t in g] for g in lay.outputs] == [["m"], []]


def test_a_dim_line_gives_an_output_dimension_name_and_its_expression_tokens():
    raw = parse_ok("""
        gufunc pairs(points) -> d
            layout: (n,k)->(p)
            dim: p = n * (n - 1) / 2
            types: float64(float64)
        {
            d(0) = 0;
        }
    """)
    (dim,) = raw.functions[0].dims
    assert dim.name.text == "p"
    assert [t.text for t in dim.expression] == ["n", "*", "(", "n", "-", "1", ")", "/", "2"]
    assert (dim.location.line, dim.location.col) == (3, 10)


def test_each_specialize_line_gives_its_name_and_size_pairs_with_their_columns():
    raw = parse_ok("""
        gufunc matmul(a, b) -> c
            layout: (m,n),(n,p)->(m,p)
            types: float64(float64, float64)
            specialize: m=4, n = 4,p=4
            specialize: n=3
        {
            c(0, 0) = 0;
        }
    """)
    first, second = raw.functions[0].specializations
    assert [(n.text, v.text) for n, v in first.sizes] == [("m", "4"), ("n", "4"), ("p", "4")]
    assert [n.location.col for n, _ in first.sizes] == [17, 22, 28]
    assert [(n.text, v.text) for n, v in second.sizes] == [("n", "3")]
    assert (second.location.line, second.location.col) == (5, 17)


def test_a_specialize_line_without_a_size_is_reported_where_the_size_should_be():
    raw, sink = parse("""
        gufunc norm(x) -> r
            layout: (n)->()
            types: float64(float64)
            specialize: n=
        {
            r = 0;
        }
    """)
    assert [f"{d.location.line}:{d.location.col}: {d.message}" for d in sink.diagnostics] == [
        "4:19: expected a size such as 4, found end of line"]


def test_doc_lines_continue_one_another_and_keep_their_text():
    raw = parse_ok("""
        ufunc f(x) -> y
            doc: First line: with a colon, (parentheses) and -> arrows.
            doc:   second line.
            types: float64(float64)
        {
            y = x;
        }
    """)
    # Each line's text after 'doc:' as written (but trailing blanks): the model removes the
    # indentation all lines share, keeping what one has more (a description under its name).
    assert raw.functions[0].doc == (" First line: with a colon, (parentheses) and -> arrows.",
                                    "   second line.")


def test_comments_and_blank_lines_are_skipped_between_declarations_and_options():
    raw = parse_ok("""
        # a comment

        ufunc f(x) -> y
            # a comment among the options

            types: float64(float64)
        # a comment at column 1, still before the body
        {
            y = x;   # not a comment in C, but a body is passed through untouched
        }
        # trailing comment
    """)
    (fn,) = raw.functions
    assert fn.body.lines == ("    y = x;   # not a comment in C, but a body is passed through untouched",)


def test_a_body_is_passed_through_untouched_with_the_line_number_of_its_first_line():
    raw = parse_ok("""
        ufunc f(x) -> y
            types: float64(float64)
        {
            if (x > 0) {
        \ty = x;
            }
          }
            else y = 0;
        }
    """)
    body = raw.functions[0].body
    assert body.first_line == 4
    assert (body.location.line, body.location.col) == (3, 1)
    assert body.lines == ("    if (x > 0) {", "\ty = x;", "    }", "  }", "    else y = 0;")


def test_a_helper_gives_its_name_prototype_and_body():
    raw = parse_ok("""
        helper void polar(T rho, T theta, T *x, T *y)
        {
            *x = rho * cos(theta);
            *y = rho * sin(theta);
        }
    """)
    (helper,) = raw.helpers
    assert helper.name.text == "polar"
    assert helper.prototype == "void polar(T rho, T theta, T *x, T *y)"
    assert helper.body.first_line == 3
    assert helper.body.lines == ("    *x = rho * cos(theta);", "    *y = rho * sin(theta);")
    assert raw.functions == ()


def test_a_helper_prototype_whose_first_parenthesis_follows_no_name_is_refused_not_named_helper():
    for prototype in ("(void) h(T *a)", "(x)", "T (h)(T a)"):
        raw, sink = parse(f"helper {prototype}\n{{\n}}\n")
        assert raw.helpers == ()
        assert [(d.location.line, d.location.col, d.message) for d in sink.diagnostics] == [
            (1, 8, "expected a C prototype such as 'void f(T x, T *y)' after 'helper'")]


def test_a_signed_identity_keeps_its_sign_and_points_at_it():
    raw = parse_ok("""
        ufunc m(x, y) -> r
            types: int64(int64, int64)
            identity: -1
            fastmath: true
        {
            r = x & y;
        }
    """)
    fn = raw.functions[0]
    assert (fn.identity.text, fn.identity.kind) == ("-1", "number")
    assert (fn.identity.location.line, fn.identity.location.col) == (3, 15)
    assert fn.fastmath.text == "true"


def test_a_word_that_is_not_an_identifier_comes_back_whole_for_the_model_to_reject():
    raw = parse_ok("""
        ufunc my-func(x, 2y, kö) -> out
            types: float64(float64, float64, float64)
        {
            out = x;
        }
    """)
    fn = raw.functions[0]
    assert fn.name.text == "my-func" and fn.name.location.col == 7
    assert [t.text for t in fn.args] == ["x", "2y", "kö"]


def test_after_a_syntax_error_parsing_resumes_at_the_next_declaration():
    raw, sink = parse("""
        ufunc broken(x -> y
            types: float64(float64)
        {
            y = x;
        }

        ufunc good(x) -> y
            types: float64(float64)
        {
            y = x;
        }
    """)
    assert [d.location.line for d in sink.diagnostics] == [1]
    assert [f.name.text for f in raw.functions] == ["good"]


def test_an_option_line_in_error_is_remembered_so_that_it_is_not_also_reported_missing():
    raw, sink = parse("""
        gufunc norm(x) -> r
            layout: (n)(n)->()
            types: float64(float64
        {
            r = 0;
        }
    """)
    assert [(d.location.line, d.location.col) for d in sink.diagnostics] == [(2, 16), (3, 27)]
    (fn,) = raw.functions
    assert fn.broken == {"layout", "types"}
    assert fn.layout is None and fn.types == ()


def test_a_file_with_windows_line_endings_parses_like_one_with_unix_endings():
    text = "ufunc f(x) -> y\r\n    types: float64(float64)\r\n{\r\n    y = x;\r\n}\r\n"
    sink = DiagnosticSink("t.ufunc", [])
    raw = parse_text("t.ufunc", text, sink)
    assert sink.diagnostics == []
    fn = raw.functions[0]
    assert [s.text for s in fn.types] == ["float64(float64)"]
    assert fn.body.first_line == 4


def test_a_file_without_a_final_newline_parses():
    raw = parse_ok("ufunc f(x) -> y\n    types: float64(float64)\n{\n    y = x;\n}")
    assert raw.functions[0].body.lines == ("    y = x;",)


def test_a_one_line_body_keeps_its_columns_with_its_braces_blanked():
    raw = parse_ok("""
        ufunc sq(x) -> y
            types: float64(float64)
        { y = x * x; }   // squared

        ufunc nested(x) -> y
            types: float64(float64)
        { if (x > 0) { y = x; } else { y = -x; } }
    """)
    square, nested = raw.functions
    assert square.body.lines == ("  y = x * x;     // squared",) and square.body.first_line == 3
    assert nested.body.lines == ("  if (x > 0) { y = x; } else { y = -x; }  ",)
    assert nested.body.first_line == 7


def test_code_after_the_opening_brace_starts_the_body_on_that_line():
    raw = parse_ok("""
        ufunc inc(x) -> y
            types: float64(float64)
        {   // one more
            y = x + 1;
        }
        ufunc dec(x) -> y
            types: float64(float64)
        {
            y = x - 1;
        }
    """)
    inc, dec = raw.functions
    assert inc.body.lines == ("    // one more", "    y = x + 1;") and inc.body.first_line == 3
    assert dec.body.lines == ("    y = x - 1;",) and dec.body.first_line == 9


def test_a_brace_line_whose_last_brace_closes_an_inner_block_opens_a_longer_body():
    raw = parse_ok("""
        ufunc f(x) -> y
            types: float64(float64)
        { if (x > 0) { y = x; }
            else { y = 0; }
        }
    """)
    (fn,) = raw.functions
    assert fn.body.lines == ("  if (x > 0) { y = x; }", "    else { y = 0; }")


def test_a_byte_order_mark_at_the_start_of_the_file_is_not_part_of_the_first_line():
    raw, sink = parse("\ufeffufunc f(x) -> y\n    types: float64(float64)\n{\n    y = x;\n}\n")
    assert sink.diagnostics == []
    assert raw.functions[0].name.location.col == 7


def test_a_body_left_open_before_the_next_declaration_is_reported_and_the_next_one_parses():
    raw, sink = parse("""
        ufunc f(x) -> y
            types: float64(float64)
        {
            y = x;

        ufunc g(x) -> y
            types: float64(float64)
        {
            y = x;
        }
    """)
    (error,) = sink.diagnostics
    assert (error.location.line, error.location.col) == (3, 1)
    assert "before the declaration at line 6" in error.message
    assert [fn.name.text for fn in raw.functions] == ["g"]
