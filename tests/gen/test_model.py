"""The model: raw declarations → validated, frozen data with what the templates need."""
from __future__ import annotations

import keyword
import re
import textwrap
from pathlib import Path

import pytest

from ufuncgen.gen import SignatureError, load_module
from ufuncgen.gen.diagnostics import DiagnosticSink
from ufuncgen.gen.model import MAX_ARGS, RESERVED_NAMES, Identity, Module, build_module, reserved_reason
from ufuncgen.gen.parse import parse_text

EXAMPLES = Path(__file__).resolve().parents[2] / "signatures" / "examples.ufunc"


def model(text: str, name: str = "pkg.mod") -> Module:
    sink = DiagnosticSink("t.ufunc", [])
    raw = parse_text("t.ufunc", textwrap.dedent(text).lstrip("\n"), sink)
    module = build_module(name, [(raw, sink, "t.ufunc")])
    assert module is not None, "\n".join(d.format() for d in sink.diagnostics)
    return module


def errors(text: str) -> list[str]:
    sink = DiagnosticSink("t.ufunc", [])
    raw = parse_text("t.ufunc", textwrap.dedent(text).lstrip("\n"), sink)
    assert build_module("m", [(raw, sink, "t.ufunc")]) is None
    return [f"{d.location.line}:{d.location.col}: {d.message}"
            for d in sorted(sink.diagnostics, key=lambda d: (d.location.line, d.location.col))]


def function(text: str):
    (fn,) = model(text).functions
    return fn


def ufunc(types: str, header: str = "f(x, y) -> r", extra: str = "") -> str:
    return f"""
        ufunc {header}
            types: {types}
            {extra}
        {{
            r = x;
        }}
    """


def gufunc(layout: str, header: str, types: str, extra: str = "") -> str:
    return f"""
        gufunc {header}
            layout: {layout}
            types: {types}
            {extra}
        {{
        }}
    """


# --------------------------------------------------------------------------- type signatures

def test_a_signature_of_one_type_throughout_is_suffixed_with_that_type():
    fn = function(ufunc("float32(float32, float32), float64(float64, float64)"))
    assert [s.suffix for s in fn.signatures] == ["float32", "float64"]


def test_a_signature_of_mixed_types_is_suffixed_with_inputs_then_outputs():
    fn = function(ufunc("float64(int64, float64), float64(float64, float64)"))
    assert [s.suffix for s in fn.signatures] == ["int64_float64__float64", "float64"]


def test_a_two_output_signature_lists_inputs_then_outputs_and_reads_back_as_written():
    fn = function(ufunc("(float32, int32)(float32)", header="frexp(x) -> (m, e)"))
    (sig,) = fn.signatures
    assert [t.name for t in sig.inputs] == ["float32"]
    assert [t.name for t in sig.outputs] == ["float32", "int32"]
    assert [t.name for t in sig.all_types] == ["float32", "float32", "int32"]
    assert sig.text == "(float32, int32)(float32)"
    assert sig.suffix == "float32__float32_int32"


def test_the_body_type_t_is_the_first_arguments_type():
    fn = function(ufunc("float64(int64, float64), float32(float32, float32)"))
    assert [s.element_type.name for s in fn.signatures] == ["int64", "float32"]
    assert [t.c_type for t in fn.element_types] == ["int64_t", "float"]


def test_a_float16_output_is_held_in_a_double_where_the_signature_names_float64_or_complex128():
    fn = function(ufunc("float16(float64, float64), float16(float16, float64), "
                        "float16(complex128, int8), float16(float32, float32), "
                        "float16(float16, float16), bfloat16(float64, int8)"))
    held = [sig.body_types[-1] for sig in fn.signatures]
    assert [t.c_type for t in held] == ["double", "double", "double", "float", "float", "float"]
    assert [t.store for t in held] == ["ufg_double_to_half"] * 3 + ["ufg_float_to_half"] * 2 + [
        "ufg_float_to_bfloat16"]        # bfloat16 rounds through float, as ml_dtypes' casts do
    assert all(sig.body_types[:2] == sig.inputs for sig in fn.signatures)
    # a held double converts element by element, a float a block at a time
    assert [[a.name for a in fn.block_converted_args(sig)] for sig in fn.signatures] == [
        [], ["x"], [], ["r"], ["x", "y", "r"], []]


def test_a_function_with_no_inputs_takes_its_body_type_from_its_first_output():
    fn = function(ufunc("float32()", header="zero() -> r"))
    assert fn.signatures[0].element_type.name == "float32"


def test_signatures_with_the_same_inputs_but_different_outputs_are_duplicates():
    assert errors(ufunc("float64(float64, float64), float32(float64, float64)")) == [
        "2:39: duplicate type signature float32(float64, float64): inputs (float64, float64) "
        "already have a loop, given at line 2"]


def test_an_unknown_type_is_reported_once_per_misspelling_with_every_known_type():
    (message,) = errors(ufunc("float64(float64, double)"))
    assert message.startswith("2:29: unknown type 'double'; expected one of bool, int8, ")
    assert message.endswith(", float32, float64, complex64, complex128")


# --------------------------------------------------------------------------- arguments

def test_arguments_are_numbered_inputs_first_and_know_whether_they_are_outputs():
    fn = function(ufunc("(float64, float64)(float64, float64)", header="f(x, y) -> (s, d)"))
    assert [(a.name, a.index, a.is_output, a.is_scalar) for a in fn.args] == [
        ("x", 0, False, True), ("y", 1, False, True), ("s", 2, True, True), ("d", 3, True, True)]
    assert [a.name for a in fn.inputs] == ["x", "y"] and [a.name for a in fn.outputs] == ["s", "d"]


def test_more_arguments_than_the_loop_driver_supports_is_an_error():
    names = [f"a{i}" for i in range(MAX_ARGS)]
    text = ufunc("float64(" + ", ".join(["float64"] * MAX_ARGS) + ")",
                 header=f"f({', '.join(names)}) -> r")
    assert errors(text) == [f"1:7: 'f' has {MAX_ARGS + 1} arguments and outputs; at most {MAX_ARGS} "
                            "are supported (ufuncgen's loops take 16, NumPy 64)"]


def test_the_models_limits_are_the_ones_emitted_for_the_loops_and_kernels():
    from ufuncgen.gen.model import UFG_DEVICE_MAX_CORE_DIMS, UFG_DEVICE_MAX_CORE_STRIDES
    from ufuncgen.gen.runtime_headers import limits_header
    text = limits_header()
    assert f"#define UFG_MAX_ARGS {MAX_ARGS}\n" in text
    assert f"#define UFG_DEVICE_MAX_CORE_DIMS {UFG_DEVICE_MAX_CORE_DIMS}\n" in text
    assert f"#define UFG_DEVICE_MAX_CORE_STRIDES {UFG_DEVICE_MAX_CORE_STRIDES}\n" in text


def test_a_frozen_size_numpy_can_parse_is_accepted_and_one_more_is_refused():
    from ufuncgen.gen.model import NPY_MAX_FROZEN_SIZE
    layout = f"({NPY_MAX_FROZEN_SIZE})->()"
    assert function(gufunc(layout, "f(x) -> y", "float64(float64)")).layout.dims[0].frozen_size \
        == NPY_MAX_FROZEN_SIZE
    too_large = gufunc(f"({NPY_MAX_FROZEN_SIZE + 1})->()", "f(x) -> y", "float64(float64)")
    assert [e.split(": ", 1)[1] for e in errors(too_large)] == [
        f"frozen core dimension {NPY_MAX_FROZEN_SIZE + 1} is too large: NumPy takes sizes up to "
        f"{NPY_MAX_FROZEN_SIZE}"]


def test_numpys_frozen_size_limit_is_the_one_numpy_applies():
    umt = pytest.importorskip("numpy._core._umath_tests")
    from ufuncgen.gen.model import NPY_MAX_FROZEN_SIZE
    assert umt.test_signature(1, 1, f"({NPY_MAX_FROZEN_SIZE})->()")[4] == (NPY_MAX_FROZEN_SIZE,)
    with pytest.raises(ValueError):
        umt.test_signature(1, 1, f"({NPY_MAX_FROZEN_SIZE + 1})->()")


def test_a_name_is_checked_against_identifiers_and_python_and_c_keywords_and_reserved_names():
    assert errors(ufunc("float64(float64, float64)", header="f(x, char) -> r")) == [
        "1:12: argument name 'char' is a C or C++ keyword"]
    assert errors(ufunc("float64(float64, float64)", header="f(x, None) -> r")) == [
        "1:12: argument name 'None' is a Python keyword"]
    assert errors(ufunc("float64(float64, float64)", header="f(x, __y) -> r")) == [
        "1:12: argument name '__y' is reserved for the C and C++ implementation: names starting "
        "with two underscores, or an underscore and a capital letter"]
    assert errors(ufunc("float64(float64, float64)", header="f(x, y) -> UFG_r")) == [
        "1:18: output name 'UFG_r' is reserved by ufuncgen: the generated code's names start "
        "with ufg_ and UFG_"]


@pytest.mark.parametrize("name", sorted(RESERVED_NAMES) + ["_Bool", "__y", "ufg_x", "UFG_X",
                                                           "npy_x", "Py_x", "PyObject"])
def test_every_reserved_name_is_refused_as_argument_output_dimension_and_helper(name):
    gufunc_text = (f"gufunc {name}(x, {name}) -> y\n    layout: ({name}),()->()\n"
                   "    types: float64(float64, float64)\n{\n    y = 0;\n}\n")
    found = errors(gufunc_text)
    kinds = [e.split("'")[0].split(": ", 1)[1] for e in found]
    # A function's own name is refused only for the prefixes: it never stands alone in C.
    by_prefix = keyword.iskeyword(name) or name in ("__y", "ufg_x", "UFG_X", "npy_x", "Py_x",
                                                    "PyObject", "_Bool")
    assert kinds[:2] == (["function name ", "argument name "] if by_prefix
                         else ["argument name ", "core dimension name "]), found
    assert "core dimension name " in kinds, found
    assert all(reserved_reason(name) in e for e in found), found
    helper_text = (f"helper T {name}(T v)\n{{\n    return v;\n}}\n"
                   + textwrap.dedent(ufunc("float64(float64, float64)")))
    assert errors(helper_text) == [f"1:10: helper name '{name}' {reserved_reason(name)}"]


@pytest.mark.parametrize("name", ["clamp", "max", "template", "new", "int64_t", "sqrt"])
def test_a_function_may_be_named_like_a_cpp_keyword_or_a_prelude_function(name):
    assert function(f"ufunc {name}(x) -> y\n    types: float64(float64)\n{{\n    y = x;\n}}\n").name == name


@pytest.mark.parametrize("name", ["sqrt", "pow", "hypot", "fmin", "floor", "real", "imag", "conj",
                                  "arg"])
def test_a_helper_may_not_take_the_name_of_a_prelude_function(name):
    helper_text = (f"helper T {name}(T v)\n{{\n    return v;\n}}\n"
                   + textwrap.dedent(ufunc("float64(float64, float64)")))
    assert errors(helper_text) == [f"1:10: helper name '{name}' is a function of ufuncgen's "
                                   f"prelude of body functions: a helper of that name would hide it"]


def test_the_readme_says_which_name_rules_apply_to_function_names_and_which_to_the_others():
    """README, "Declarations": the names a body sees may not be C keywords, header names or the
    prelude's; a function's own name may, and the README's examples of it are accepted."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    paragraph = readme[readme.index("Every name (of a function"):readme.index("**Options**")]
    body_names = paragraph[paragraph.index("The names a body sees"):paragraph.index("A helper")]
    listed = [n for n in re.findall(r"`(\w+)`", body_names) if n in RESERVED_NAMES]
    assert {"class", "int64_t", "NULL", "main", "T", "abs", "max", "clamp", "PI"} <= set(listed)
    for name in listed:
        assert errors(ufunc("float64(float64, float64)", header=f"f(x, {name}) -> r"))
        if not keyword.iskeyword(name):
            assert function(f"ufunc {name}(x) -> y\n    types: float64(float64)\n"
                            "{\n    y = x;\n}\n").name == name
    for example in re.findall(r"`ufunc (\w+)\(x\) -> y`", paragraph):
        assert function(f"ufunc {example}(x) -> y\n    types: float64(float64)\n"
                        "{\n    y = x;\n}\n").name == example
    for prefix in ("ufg_", "UFG_", "npy_", "NPY_", "Py_", "__", "_X"):
        assert errors(f"ufunc {prefix}f(x) -> y\n    types: float64(float64)\n{{\n    y = x;\n}}\n")


def test_every_function_like_macro_of_the_prelude_is_a_prelude_function_no_helper_may_hide():
    from ufuncgen.gen.model import PRELUDE_FUNCTIONS
    prelude = (Path(__file__).resolve().parents[2] / "src" / "include" / "ufuncgen"
               / "prelude.h").read_text(encoding="utf-8")
    macros = set(re.findall(r"^\s*#\s*define\s+([a-z]\w*)\(", prelude, re.M))
    assert {"real", "conj", "hypot"} <= macros
    assert {m for m in macros if not m.startswith("ufg_")} <= PRELUDE_FUNCTIONS


@pytest.mark.parametrize("word", ["char16_t", "char32_t", "wchar_t"])
def test_cxx_character_type_keywords_are_refused_in_a_body_where_nvcc_cannot_take_them_as_names(word):
    assert errors(f"ufunc f(x) -> y\n    types: float64(float64)\n{{\n    int {word} = 1;\n"
                  f"    y = x + {word};\n}}\n") == [
        f"4:9: '{word}' is a keyword of C++, and a body is also compiled as C++ (nvcc), where it "
        f"cannot name a variable or a parameter; rename it"]


@pytest.mark.parametrize("name", ["defined", "math_errhandling", "MAXFLOAT", "PATH_MAX", "EDOM",
                                  "SEEK_SET", "WEOF", "P_tmpdir", "L_tmpnam", "SSIZE_MAX", "PRIx64"])
def test_the_preprocessors_defined_and_the_library_headers_macros_are_reserved(name):
    assert reserved_reason(name) is not None


def test_a_function_named_like_a_preprocessor_or_library_macro_is_fine_since_it_never_stands_alone():
    assert function("ufunc EDOM(x) -> y\n    types: float64(float64)\n{\n    y = x;\n}\n").name == "EDOM"


def test_names_that_only_resemble_reserved_ones_are_accepted():
    for name in ("_x", "_1", "Tx", "ufg", "abs_", "maximum", "classy", "Pyramid", "int64", "i",
                 "EPS", "E1", "X_MAX", "PRIME", "HAVE", "undefined"):
        assert reserved_reason(name) is None, name


# --------------------------------------------------------------------------- gufunc layouts

def test_core_dimensions_are_numbered_in_numpys_order_of_first_appearance():
    fn = function(gufunc("(m,n),(n,p)->(m,p)", "matmul(a, b) -> c", "float64(float64, float64)"))
    assert [(d.name, d.index) for d in fn.layout.dims] == [("m", 0), ("n", 1), ("p", 2)]
    assert [[d.name for d in a.core_dims] for a in fn.args] == [["m", "n"], ["n", "p"], ["m", "p"]]


def test_each_arguments_core_strides_start_after_those_of_the_arguments_before_it():
    fn = function(gufunc("(m,n),(n,p)->(m,p)", "matmul(a, b) -> c", "float64(float64, float64)"))
    assert [a.first_core_stride for a in fn.args] == [0, 2, 4]
    fn = function(gufunc("(d),(k,d)->(k)", "dist(p, c) -> r", "float64(float64, float64)"))
    assert [a.first_core_stride for a in fn.args] == [0, 1, 3]


def test_a_scalar_argument_of_a_gufunc_takes_no_core_strides():
    fn = function(gufunc("(),(n)->(),(n)", "f(s, v) -> (t, w)", "(float64, float64)(float64, float64)"))
    assert [(a.is_scalar, a.first_core_stride) for a in fn.args] == [
        (True, 0), (False, 0), (True, 1), (False, 1)]


def test_specialized_sizes_are_kept_in_the_layouts_order_of_dimensions_whatever_the_line_says():
    fn = function(gufunc("(m,n),(n,p)->(m,p)", "matmul(a, b) -> c", "float64(float64, float64)",
                         "specialize: p=2, m=4\n            specialize: n=3"))
    assert [[(d.name, d.index, size) for d, size in s.sizes] for s in fn.specializations] == [
        [("m", 0, 4), ("p", 2, 2)], [("n", 1, 3)]]
    assert [s.text for s in fn.specializations] == ["m=4, p=2", "n=3"]
    assert [s.location.line for s in fn.specializations] == [4, 5]


def test_a_function_without_specialize_lines_has_no_specializations():
    fn = function(gufunc("(n)->()", "norm(x) -> r", "float64(float64)"))
    assert fn.specializations == ()


def test_a_frozen_dimension_has_a_size_and_is_not_variable():
    fn = function(gufunc("(3),(n,3)->(3)", "f(u, v) -> w", "float64(float64, float64)"))
    assert [(d.name, d.index, d.frozen_size, d.is_variable) for d in fn.layout.dims] == [
        ("3", 0, 3, False), ("n", 1, None, True)]
    assert [d.name for d in fn.layout.variable_dims] == ["n"]
    assert fn.layout.text == "(3),(n,3)->(3)"


def test_an_output_only_dimension_defined_by_dim_comes_after_the_input_dimensions():
    fn = function(gufunc("(n,d)->(p)", "pdist(x) -> y", "float64(float64)",
                         extra="dim: p = n * (n - 1) / 2"))
    assert [(d.name, d.index, d.size_expression) for d in fn.layout.dims] == [
        ("n", 0, None), ("d", 1, None), ("p", 2, "n * ( n - 1 ) / 2")]
    assert [d.name for d in fn.layout.computed_dims] == ["p"]


HUGE = "1" * 5000   # beyond the 4300 digits Python's int() reads


@pytest.mark.parametrize("line, problem", [
    (f"identity: {HUGE}", f"identity {HUGE} does not fit in int64"),
    (f"layout: ({HUGE})->()", f"frozen core dimension {HUGE} is too large"),
    (f"specialize: n={HUGE}", f"a specialized size must be a whole number from 1 to 1024, not '{HUGE}'"),
    (f"dim: p = n + {HUGE}", f"{HUGE} in the size of 'p' is beyond the largest size"),
])
def test_a_number_of_thousands_of_digits_is_an_error_at_it_not_a_traceback(line, problem):
    if line.startswith("identity"):
        text = f"ufunc f(x, z) -> y\n    types: int64(int64, int64)\n    {line}\n{{\n    y = x;\n}}\n"
    else:
        layout = "" if line.startswith("layout") else \
            ("    layout: (n)->(p)\n" if line.startswith("dim") else "    layout: (n)->()\n")
        text = f"gufunc g(x) -> y\n{layout}    {line}\n    types: float64(float64)\n{{\n}}\n"
    found = errors(text)
    assert len(found) == 1 and found[0].split(": ", 1)[1].startswith(problem), found[0][:200]


@pytest.mark.parametrize("expression", ["(" * 600 + "n" + ")" * 600, "-" * 1200 + "n"])
def test_a_size_expression_nested_hundreds_deep_is_an_error_not_a_recursion_error(expression):
    assert errors(gufunc("(n)->(p)", "g(x) -> y", "float64(float64)", f"dim: p = {expression}")) == [
        "4:46: the size of 'p' nests parentheses and signs more than 32 deep"]


def test_a_size_expression_nested_32_deep_is_accepted():
    fn = function(gufunc("(n)->(p)", "g(x) -> y", "float64(float64)",
                         "dim: p = " + "(" * 31 + "-n" + ")" * 31))
    assert fn.layout.computed_dims[0].size_code.startswith("(" * 31 + "ufg_dim_subtract(0, n,")


def test_a_dim_line_for_an_input_dimension_or_an_unused_one_is_an_error():
    assert errors(gufunc("(n)->(p)", "f(x) -> y", "float64(float64)", extra="dim: n = 3")) == [
        "2:19: output core dimension 'p' is not given by any input; define its size with a line "
        "such as 'dim: p = n*(n-1)/2'",
        "4:10: core dimension 'n' is given by an input; 'dim' defines only output-only dimensions"]
    assert errors(gufunc("(n)->()", "f(x) -> y", "float64(float64)", extra="dim: q = n")) == [
        "4:10: 'dim' defines 'q', which the layout does not use"]


def test_a_size_expression_in_error_does_not_also_report_its_dimension_as_undefined():
    assert errors(gufunc("(n)->(p)", "f(x) -> y", "float64(float64)", extra="dim: p = n ** 2.5")) == [
        "4:19: size expression takes whole numbers only, not '2.5'"]


def test_a_dimension_may_not_share_a_name_with_an_argument():
    assert errors(gufunc("(x)->()", "f(x) -> y", "float64(float64)")) == [
        "2:14: 'x' names both an argument and a core dimension of 'f'"]


# --------------------------------------------------------------------------- identity

@pytest.mark.parametrize("text, types, expected", [
    ("0", "int64(int64, int64)", Identity("value", "0", "int")),
    ("+1", "uint8(uint8, uint8)", Identity("value", "1", "int")),
    ("255", "uint8(uint8, uint8)", Identity("value", "255", "int")),
    ("0", "float64(float64, float64)", Identity("value", "0", "int")),
    ("1.5", "float32(float32, float32)", Identity("value", "1.5", "float")),
    ("-inf", "float64(float64, float64)", Identity("value", "-inf", "float")),
    ("-inf", "float16(float16, float16)", Identity("value", "-inf", "float")),
    ("nan", "float16(float16, float16)", Identity("value", "nan", "float")),
    ("65519", "float16(float16, float16)", Identity("value", "65519", "int")),   # rounds to 65504
    ("0.1", "float16(float16, float16)", Identity("value", "0.1", "float")),     # rounds, as NumPy's
    ("3.3961773e38", "bfloat16(bfloat16, bfloat16)", Identity("value", "3.3961773e+38", "float")),
    ("3.4028235e38", "float32(float32, float32)", Identity("value", "3.4028235e+38", "float")),
    ("true", "bool(bool, bool)", Identity("value", "True", "bool")),
    ("none", "int64(int64, int64)", Identity("reorderable", "None", "none")),
])
def test_an_identity_becomes_the_python_value_numpy_is_given(text, types, expected):
    assert function(ufunc(types, extra=f"identity: {text}")).identity == expected


@pytest.mark.parametrize("text, types, problem", [
    ("0.5", "int64(int64, int64)", "identity 0.5 is not an integer (int64 output), but 'f' has the type "
                                   "signature int64(int64, int64)"),
    ("256", "uint8(uint8, uint8)", "identity 256 does not fit in uint8 (0 to 255), but 'f' has the type "
                                   "signature uint8(uint8, uint8)"),
    ("-129", "int8(int8, int8)", "identity -129 does not fit in int8 (-128 to 127), but 'f' has the "
                                 "type signature int8(int8, int8)"),
    ("true", "int32(int32, int32)", "identity true is a boolean (int32 output), but 'f' has the type "
                                    "signature int32(int32, int32)"),
    ("zero", "int32(int32, int32)", "identity must be a number, inf, -inf, true, false or none, not 'zero'"),
    ("65520", "float32(float32, float32), float16(float16, float16)",
     "identity 65520 is beyond the largest float16 (65504) and would round to inf, but 'f' has "
     "the type signature float16(float16, float16)"),
    ("-1e5", "float16(float16, float16)",
     "identity -1e5 is beyond the largest float16 (65504) and would round to -inf, but 'f' has "
     "the type signature float16(float16, float16)"),
    ("3.3961775e38", "bfloat16(bfloat16, bfloat16)",   # through float32, as ml_dtypes rounds
     "identity 3.3961775e38 is beyond the largest bfloat16 (3.3895314e+38) and would round to "
     "inf, but 'f' has the type signature bfloat16(bfloat16, bfloat16)"),
    ("3.5e38", "float64(float64, float64), float32(float32, float32)",
     "identity 3.5e38 is beyond the largest float32 (3.4028235e+38) and would round to inf, but "
     "'f' has the type signature float32(float32, float32)"),
    ("-1e39", "complex64(complex64, complex64)",
     "identity -1e39 is beyond the largest complex64 (3.4028235e+38) and would round to -inf, "
     "but 'f' has the type signature complex64(complex64, complex64)"),
    ("1" + "0" * 400, "float64(float64, float64)",
     "identity 1" + "0" * 400 + " is beyond the largest float64 (1.7976931e+308) and would "
     "round to inf, but 'f' has the type signature float64(float64, float64)"),
])
def test_an_identity_that_does_not_fit_every_output_type_is_an_error(text, types, problem):
    assert errors(ufunc(types, extra=f"identity: {text}")) == [f"3:15: {problem}"]


def test_fastmath_is_a_flag():
    assert function(ufunc("float64(float64, float64)", extra="fastmath: yes")).fastmath is True
    assert function(ufunc("float64(float64, float64)", extra="fastmath: off")).fastmath is False
    assert function(ufunc("float64(float64, float64)")).fastmath is False
    assert errors(ufunc("float64(float64, float64)", extra="fastmath: maybe")) == [
        "3:15: fastmath must be true or false, not 'maybe'"]


# --------------------------------------------------------------------------- associative

def test_associative_is_a_flag_that_is_off_by_default():
    assert function(ufunc("float64(float64, float64)", extra="associative: true")).associative is True
    assert function(ufunc("float64(float64, float64)", extra="associative: no")).associative is False
    assert function(ufunc("float64(float64, float64)")).associative is False
    assert errors(ufunc("float64(float64, float64)", extra="associative: maybe")) == [
        "3:18: associative must be true or false, not 'maybe'"]


def test_every_loop_of_an_associative_function_gets_a_host_reduction_and_others_none():
    fn = function(ufunc("int64(int64, int64), float32(float32, float32), float16(float16, float16)",
                        extra="associative: true"))
    assert [s.text for s in fn.host_reduce_signatures] == [
        "int64(int64, int64)", "float32(float32, float32)", "float16(float16, float16)"]
    assert function(ufunc("float64(float64, float64)")).host_reduce_signatures == ()
    assert function(ufunc("float64(float64, float64)", extra="associative: false")).host_reduce_signatures == ()


def test_binary_loops_of_one_type_of_a_function_not_associative_reduce_in_order_on_the_host():
    fn = function(ufunc("float64(float64, float64), float32(float32, float64), float16(float16, float16)"))
    assert [s.text for s in fn.in_order_reduce_signatures] == [
        "float64(float64, float64)", "float16(float16, float16)"]
    assert function(ufunc("float64(float64, float64)", extra="associative: true")).in_order_reduce_signatures == ()


def test_associative_on_a_function_that_is_not_binary_with_one_output_is_an_error_at_its_value():
    assert errors(ufunc("float64(float64)", header="f(x) -> r", extra="associative: true")) == [
        "3:18: associative is only meaningful for a ufunc of two inputs and one output (it lets "
        "'f.reduce' reorder its work); 'f' has 1 input and 1 output"]
    assert errors(ufunc("(float64, float64)(float64, float64)", header="f(x, y) -> (r, s)",
                        extra="associative: true")) == [
        "3:18: associative is only meaningful for a ufunc of two inputs and one output (it lets "
        "'f.reduce' reorder its work); 'f' has 2 inputs and 2 outputs"]
    assert errors(gufunc("(n),(n)->()", "f(x, y) -> r", "float64(float64, float64)",
                         extra="associative: true")) == [
        "4:18: associative is only meaningful for a ufunc of two inputs and one output (it lets "
        "'f.reduce' reorder its work); 'f' is a gufunc"]


def test_associative_needs_loops_that_take_and_give_one_type():
    assert errors(ufunc("float64(float64, float64), float64(int64, int64)", extra="associative: true")) == [
        "3:18: associative needs every type signature to take and give one type, as in "
        "float64(float64, float64), but 'f' has the type signature float64(int64, int64)"]
    # associative: false says nothing, so it is fine anywhere
    assert function(ufunc("float64(float64)", header="f(x) -> r", extra="associative: false")).associative is False


def test_the_shipped_add_is_associative_and_the_other_examples_are_not():
    module = load_module("ufuncgen.examples", [str(EXAMPLES)])
    assert [f.name for f in module.functions if f.associative] == ["add"]


# --------------------------------------------------------------------------- module

def test_doc_lines_are_joined_with_newlines():
    fn = function(ufunc("float64(float64, float64)", extra="doc: one\n            doc: two"))
    assert fn.doc == "one\ntwo"


def test_doc_lines_keep_their_indentation_past_what_they_all_share():
    # A NumPy-style parameter's description is indented under it; each line was stripped.
    doc = ["doc: Parameters", "doc: ----------", "doc: x : array_like", "doc:     The values.",
           "doc:", "doc:     trailing   "]
    fn = function(ufunc("float64(float64, float64)", extra="\n            ".join(doc)))
    assert fn.doc == "Parameters\n----------\nx : array_like\n    The values.\n\n    trailing"
    spaced = function(ufunc("float64(float64, float64)", extra="doc:   a\n            doc:     b"))
    assert spaced.doc == "a\n  b"


def test_a_module_knows_its_short_name_sources_and_every_body_type_in_first_use_order():
    m = model("""
        helper T twice(T v)
        {
            return v + v;
        }

        ufunc f(x) -> y
            types: float32(float32), int64(int64)
        {
            y = twice(x);
        }

        ufunc g(x) -> y
            types: float64(float64), float32(float32)
        {
            y = twice(x);
        }
    """)
    assert m.qualified_name == "pkg.mod" and m.short_name == "mod"
    assert m.sources == ("t.ufunc",)
    assert [t.name for t in m.element_types] == ["float32", "int64", "float64"]
    (helper,) = m.helpers
    assert (helper.name, helper.prototype, helper.body.first_line) == ("twice", "T twice(T v)", 3)


HELPERS_IN_ANY_ORDER = """
    helper T before(T v)
    {
        return after(v) + (T)1;
    }

    helper T never_called(T v)
    {
        return v;
    }

    helper T after(T v)
    {
        return exp(v);
    }

    ufunc f(x) -> y
        types: float32(float32), float64(float64)
    {
        y = before(x);
    }

    ufunc g(x) -> y
        types: int64(int64)
    {
        y = x;
    }
"""


def test_a_helper_may_call_a_helper_defined_after_it_and_both_are_compiled_for_each_t():
    m = model(HELPERS_IN_ANY_ORDER)
    assert [(t.name, [h.name for h in helpers]) for t, helpers in m.helper_instances] == [
        ("float32", ["before", "after"]), ("float64", ["before", "after"])]


def test_what_a_later_helper_calls_counts_for_the_functions_that_reach_it():
    assert model(HELPERS_IN_ANY_ORDER).flag_exact_functions == {"f"}    # exp, through after


def test_a_helpers_prototype_remembers_its_column():
    m = model("helper   T   spaced(T v)\n{\n    return v;\n}\n"
              + textwrap.dedent(ufunc("float64(float64, float64)")))
    (helper,) = m.helpers
    assert (helper.location.line, helper.prototype_column) == (1, 10)


def test_a_function_body_remembers_where_it_starts_in_the_signature_file():
    fn = function(ufunc("float64(float64, float64)"))
    assert (fn.body.path, fn.body.first_line, fn.body.lines) == ("t.ufunc", 5, ("    r = x;",))
    assert (fn.location.line, fn.location.col) == (1, 7)


def test_the_c_name_tables_hold_every_generated_name_the_templates_derive_from_a_function_name():
    """Each `ufg_<role>_` the templates put before a loop's C name (cname, or the function's
    name and its signature's suffix) or before a function's name, and every part of
    UFG_REDUCE_NAME, is in the tables _check_c_names_distinct compares."""
    from ufuncgen.gen.model import (C_NAME_FUNCTION_ROLES, C_NAME_LOOP_ROLES,
                                    C_NAME_LOOP_TAILS)
    root = Path(__file__).resolve().parents[2]
    templates = "\n".join(p.read_text(encoding="utf-8") for p in (root / "templates").glob("*.j2"))
    loop = r"(?:\{\{ *cname *\}\}|\{\{ *fn\.name *\}\}_\{\{ *sig\.suffix *\}\}|\" ~ *cname|\" ~ *fn\.name ~ \"_\" ~ sig\.suffix)"
    loop_roles = set(re.findall(rf"\bufg_([a-z_]+?)_{loop}", templates))
    loop_roles |= {f"launch_{where}_{kind}" for kind in re.findall(
        rf"(?:UFG_LAUNCHER|UFG_CUDA_LAUNCHER|UFG_DECLARE_LAUNCHERS)\(([a-z]+)_{loop}", templates)
        for where in ("sim", "cuda")}
    function_roles = set(re.findall(r"\bufg_([a-z_]+?)_(?:\{\{ *fn\.name *\}\}(?!_\{\{ *sig)|\" ~ *fn\.name(?! ~))",
                                    templates))
    assert {"range_body", "body", "launch_sim_elementwise"} <= loop_roles
    assert loop_roles <= set(C_NAME_LOOP_ROLES)
    assert {"types", "loops"} <= function_roles <= set(C_NAME_FUNCTION_ROLES)
    headers = "\n".join(p.read_text(encoding="utf-8")
                        for p in (root / "src" / "include" / "ufuncgen").glob("*.h"))
    parts = set(re.findall(r"UFG_REDUCE_NAME\((_\w+)\)", headers))
    assert "_ops" in parts and parts <= set(C_NAME_LOOP_TAILS["reduce"])
    tails = set(re.findall(rf"\bufg_body_{loop}(_[a-z]+)", templates))
    assert tails <= set(C_NAME_LOOP_TAILS["body"])


def test_two_functions_whose_generated_names_meet_through_a_role_word_are_an_error_at_the_second():
    text = ("gufunc {}(x) -> y\n    layout: (n)->()\n    types: float64(float64)\n{{\n    y = x(0);\n}}\n\n")
    for word in ("body", "cores", "prefetched", "contiguous", "contiguous_cores"):
        found = errors(text.format("f") + text.format(f"{word}_f"))
        assert len(found) == 1 and found[0].startswith(
            f"8:8: the C name of '{word}_f' for float64(float64) would be ufg_"), found
    assert function(text.format("f_squared"))   # a longer name alone meets nothing
    assert len(model(text.format("f") + text.format("f_squared")).functions) == 2
    # kernel_f would meet f only in names of reductions, which one-input gufuncs have none of
    assert len(model(text.format("f") + text.format("kernel_f")).functions) == 2


BINARY = "ufunc {}(x, y) -> z\n    types: float64(float64, float64){}\n{{\n    z = x + y;\n}}\n\n"
UNARY_GUFUNC = "gufunc {}(x) -> y\n    layout: (n)->()\n    types: float64(float64)\n{{\n    y = x(0);\n}}\n\n"


@pytest.mark.parametrize("first, second", [
    (BINARY.format("density", ""), BINARY.format("kernel_density", "")),
    (BINARY.format("sum", "\n    associative: true"), BINARY.format("step_sum", "")),
    (BINARY.format("gauss", ""), BINARY.format("kernel_gauss", "")),
    (BINARY.format("x", ""), BINARY.format("body_x", "")),
    (UNARY_GUFUNC.format("f"), UNARY_GUFUNC.format("few_f")),
])
def test_functions_whose_names_would_meet_only_in_names_never_generated_are_accepted(
        first, second):
    """`kernel_density`'s in-order .reduce has no ufg_reduce_kernel_density_float64 (its host
    reduction's names all take a part: _ops, ...), the name of `density`'s device reduction
    kernel; a ufunc has no ufg_range_ names of a gufunc's loops."""
    assert len(model(first + second).functions) == 2


def test_every_name_the_c_name_check_takes_as_generated_is_in_the_generated_code():
    """The other way from the tables' test: a role's names are counted where the code has
    them, so that a name never generated refuses nothing (roles of every loop excepted:
    their names depend on the body, and counting them everywhere only refuses too much)."""
    from ufuncgen.gen.model import C_NAME_LOOP_ROLE_LOOPS, _c_names
    from ufuncgen.gen.render import render_module
    root = Path(__file__).resolve().parents[2]
    module = load_module("pkg.ex", [str(root / "signatures" / "examples.ufunc")],
                         source_root=str(root))
    text = "\n".join(render_module(module, "cmd").values())
    present = set(re.findall(r"\bufg_\w+", text)) | {
        f"ufg_launch_{where}_{name}" for name in re.findall(
            r"UFG_(?:CUDA_)?LAUNCHER\((\w+)\)|UFG_DECLARE_LAUNCHERS\((\w+),", text)
        for name in name if name for where in ("sim", "cuda")}
    checked = 0
    for fn in module.functions:
        for name, sig in _c_names(fn):
            role = next((r for r in C_NAME_LOOP_ROLE_LOOPS
                         if sig is not None and name.startswith(f"ufg_{r}_{fn.name}_{sig.suffix}")),
                        None)
            if role is None or role in ("range_lanes", "range_widened", "widened_steps",
                                        "exact_range", "launch_sim_total",
                                        "launch_cuda_total") or \
                    (role == "reduce" and not name.endswith("_ops")):
                continue        # these depend on the body: counted where they may be
            checked += 1
            assert name in present, (fn.name, sig.text, name)
    assert checked > 250


def test_duplicate_helpers_are_an_error():
    text = "helper T h(T v)\n{\n    return v;\n}\n" * 2 + "ufunc f(x) -> y\n    types: float64(float64)\n{\n    y = h(x);\n}\n"
    assert errors(text) == ["5:10: duplicate helper name 'h' (first defined at t.ufunc:1:10)"]


def test_a_module_of_helpers_only_is_refused_at_its_first_helper():
    assert errors("helper T h(T v)\n{\n    return v;\n}\n") == [
        "1:10: no functions are declared, only helpers: helper 'h' is compiled only into the "
        "functions that call it; add a declaration starting with 'ufunc' or 'gufunc'"]


def test_a_file_of_helpers_only_is_accepted_beside_a_file_of_functions():
    files = []
    for name, text in (("h.ufunc", "helper T h(T v)\n{\n    return v;\n}\n"),
                       ("f.ufunc", textwrap.dedent(ufunc("float64(float64, float64)")).lstrip())):
        sink = DiagnosticSink(name, [])
        files.append((parse_text(name, text, sink), sink, name))
    module = build_module("m", files)
    assert module is not None and [f.name for f in module.functions] == ["f"]
    assert [h.name for h in module.helpers] == ["h"]


def test_the_seed_examples_load_and_paths_are_relative_to_the_source_root():
    m = load_module("ufuncgen.examples", [str(EXAMPLES)], source_root=str(EXAMPLES.parent.parent))
    assert m.sources == ("signatures/examples.ufunc",)
    names = [f.name for f in m.functions]
    assert names[:2] == ["add", "custom_op"] and "condensed_distances" in names
    assert all(f.body.path == "signatures/examples.ufunc" for f in m.functions)


def test_a_signature_error_holds_every_diagnostic_and_formats_like_a_compiler(tmp_path):
    bad = tmp_path / "bad.ufunc"
    bad.write_text(textwrap.dedent(ufunc("float64(float64, flot64)", header="f(x, int) -> r")).lstrip("\n"))
    with pytest.raises(SignatureError) as info:
        load_module("m", [str(bad)], source_root=str(tmp_path))
    text = info.value.format()
    assert [d.location.line for d in info.value.diagnostics] == [1, 2]
    assert text.splitlines()[0] == "bad.ufunc:1:12: error: argument name 'int' is a C or C++ keyword"
    assert text.endswith("\n2 errors generated.")


# --------------------------------------------------------------------------- integer divisions

def _compiled(text: str) -> str:
    """The first function's body as it is compiled (gen/operators.py's rewrite applied)."""
    return "\n".join(model(text).functions[0].body.compiled_lines)


def test_dividing_by_a_float_local_under_a_float_t_is_a_float_division_although_an_argument_is_int():
    assert "y = k < 0 ? (T)1 / acc : acc;" in _compiled("""
        ufunc power(x, k) -> y
            types: float64(float64, int64)
        {
            T acc = (T)1;
            y = k < 0 ? (T)1 / acc : acc;
        }
    """)


def test_an_integer_local_divided_by_an_integer_argument_is_made_total_even_in_a_float_function():
    assert "y = x + ufg_div(half, k);" in _compiled("""
        ufunc f(x, k) -> y
            types: float64(float64, int64)
        {
            int64_t half = 7;
            y = x + half / k;
        }
    """)


def test_a_cast_to_a_floating_type_on_either_side_makes_the_division_floating():
    for expression in ("(double)a / b", "a / (double)b", "a * 1.0 / b", "a / (b + 0.5)",
                       "(float)(a + 1) / b", "a / (const double)b"):
        assert f"y = {expression};" in _compiled(f"""
            ufunc f(a, b) -> y
                types: float64(int64, int64)
            {{
                y = {expression};
            }}
        """), expression
    for expression, total in (("a / b", "ufg_div(a, b)"), ("(T)a / b", "ufg_div((T)a, b)"),
                              ("a / (int64_t)b", "ufg_div(a, (int64_t)b)"),
                              ("2 * a / b", "ufg_div(2 * a, b)"),
                              ("(a + 1) / b", "ufg_div((a + 1), b)")):
        assert f"y = {total};" in _compiled(f"""
            ufunc f(a, b) -> y
                types: float64(int64, int64)
            {{
                y = {expression};
            }}
        """), expression


@pytest.mark.parametrize("expression, total", [
    ("(x > 0 ? k : 1) / d", "ufg_div((x > 0 ? k : 1), d)"),    # a condition's kind is not its
    ("k / (x > 0 ? d : 1)", "ufg_div(k, (x > 0 ? d : 1))"),    # result's
    ("(k + (x > 0)) / d", "ufg_div((k + (x > 0)), d)"),         # a comparison is an int
    ("(k + !x) / d", "ufg_div((k + !x), d)"),
    ("(x > 0 ? x : 1) / d", "(x > 0 ? x : 1) / d"),              # a floating result
    ("(k > 0 ? 1.5 : 2) / d", "(k > 0 ? 1.5 : 2) / d"),
])
def test_a_conditional_or_comparison_inside_a_divided_expression_takes_its_kind_from_its_result(
        expression, total):
    assert f"y = {total};" in _compiled(f"""
        ufunc f(x, k, d) -> y
            types: float64(float64, int32, int32)
        {{
            y = {expression};
        }}
    """), expression


def test_every_name_of_a_declaration_list_has_its_type():
    compiled = _compiled("""
        ufunc f(x) -> y
            types: float64(float64)
        {
            int64_t total = 0, pos = x > 0, *none = 0, neg = x < 0;
            y = pos / neg + total;
        }
    """)
    assert "y = ufg_div(pos, neg) + total;" in compiled


def test_a_division_in_a_macro_of_a_floating_function_is_made_total():
    """A macro's parameters have no type: QQ(k, d) may divide the int32 arguments."""
    compiled = _compiled("""
        ufunc f(x, k, d) -> y
            types: float64(float64, int32, int32)
        {
            #define QQ(u, v) ((u) / (v))
            y = x + QQ(k, d) + x / 2.0;
        }
    """)
    assert "#define QQ(u, v) (ufg_div((u), (v)))" in compiled
    assert "y = x + QQ(k, d) + x / 2.0;" in compiled


def test_a_division_by_a_nonzero_literal_cannot_fail_and_is_left_as_written():
    assert "y = a / 2 + a % (T)3 + ufg_div(a, 0) + ufg_rem(a, -1);" in _compiled("""
        ufunc f(a) -> y
            types: int32(int32)
        {
            y = a / 2 + a % (T)3 + a / 0 + a % -1;
        }
    """)


FLAG_EXACT = """\
ufunc guarded(x) -> y
    types: float64(float64)
{
    if (x < 0) { y = -1; goto done; }
    y = sqrt(x);
done:;
}

ufunc plain(x) -> y
    types: float64(float64)
{
    y = sqrt(x) * 2;   /* if this were x ? ... : ..., it would count; a comment does not */
}

gufunc rows_exp(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    for (int64_t i = 0; i < n; i++)
        y(i) = exp(x(i));
}

gufunc rows_sum(x) -> s
    layout: (n)->()
    types: float64(float64)
{
    T acc = 0;
    for (int64_t i = 0; i < n; i++)
        acc += x(i);
    s = acc;
}

gufunc rows_guarded(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    for (int64_t i = 0; i < n; i++)
        y(i) = x(i) > 0 ? sqrt(x(i)) : (T)0;
}

gufunc rows_softmax(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    T total = 0;
    for (int64_t i = 0; i < n; i++) {
        y(i) = exp(x(i));
        total += y(i);
    }
    for (int64_t i = 0; i < n; i++)
        y(i) /= total;
}

gufunc rows_add_exp(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    for (int64_t i = 0; i < n; i++)
        y(i) += exp(x(i));
}
"""


def test_functions_with_a_conditional_or_vector_math_are_flag_exact_gufuncs_included():
    assert model(FLAG_EXACT).flag_exact_functions == {"guarded", "rows_exp", "rows_guarded",
                                                      "rows_softmax"}


def test_of_those_a_function_with_a_conditional_re_runs_a_block_that_raised_underflow_too():
    """A guard may turn off an underflow the vector run computed (`x < -700 ? 0 : exp(x)`);
    without one an underflow is the element's own (fp_errors.h)."""
    assert model(FLAG_EXACT).guarded_functions == {"guarded", "rows_guarded"}


DATA_LOOPS = """
helper int64_t steps_to_one(int64_t v)
{
    int64_t count = 0;
    while (v > 1) {
        v = (v & 1) ? 3 * v + 1 : v / 2;
        count++;
    }
    return count;
}

ufunc power(x, n) -> y
    types: int64(int64, int64)
{
    int64_t result = 1, e = n;
    while (e > 0) { result *= x; e--; }
    y = result;
}

ufunc collatz(x) -> y
    types: int64(int64)
{
    y = steps_to_one(x);
}

ufunc once(x) -> y
    types: float64(float64)
{
    do { y = x + 1; } while (0);
}

ufunc counted(x) -> y
    types: float64(float64)
{
    T acc = 0;
    for (int k = 0; k < 4; k++)
        acc += x;
    y = acc;
}

gufunc rows_until(x) -> y
    layout: (n)->()
    types: float64(float64)
{
    int64_t i = 0;
    while (i < n && x(i) > 0)
        i++;
    y = i;
}
"""


def test_elementwise_functions_whose_body_or_helper_loops_until_the_data_says_are_data_loops():
    """Their loops over elements stay scalar, a few elements an iteration
    (render.kernel_unroll); a macro's do { } while (0) and a counted for loop do not count."""
    assert model(DATA_LOOPS).data_loop_functions == {"power", "collatz"}


EXP_CALLS = """
helper T exp_of(T v)
{
    return exp(v);
}

ufunc gauss(x) -> y
    types: float32(float32), float64(float64)
{
    y = exp(-x * x);   /* exp (a comment's exp(x) would not count) */
}

ufunc through_helper(x) -> y
    types: float64(float64)
{
    y = exp_of(x);
}

ufunc fast_gauss(x) -> y
    types: float64(float64)
    fastmath: true
{
    y = exp(-x * x);
}

ufunc other_exps(x) -> y
    types: float32(float32)
{
    y = expf(x) + exp2(x) + expm1(x) + log2(x) + log1p(x) + log10(x);
}

ufunc log_of(x) -> y
    types: float32(float32)
{
    y = log(x);
}

ufunc both(x) -> y
    types: float64(float64)
{
    y = log(exp(x));
}

gufunc rows_exp(x) -> y
    layout: (n)->(n)
    types: float64(float64)
{
    for (int64_t i = 0; i < n; i++)
        y(i) = exp(x(i));
}
"""


def test_elementwise_functions_whose_own_body_calls_exp_or_log_get_a_kernel_for_special_arguments():
    """After a block that raised exp's underflow or log's divide-by-zero.  Not through a helper
    (it keeps one variant), not fast math, not a gufunc, not expf, exp2, expm1 or log's kin."""
    assert model(EXP_CALLS).special_kernel_flags == {
        "gauss": ("UFG_FP_UNDERFLOW",), "log_of": ("UFG_FP_DIVIDE",),
        "both": ("UFG_FP_UNDERFLOW", "UFG_FP_DIVIDE")}


@pytest.mark.parametrize("body, reads", [
    ("y(i) = x(i);", False),
    ("y(i) = 0; y(i) += x(i);", False),
    ("if (y(i) == 0) y(i) = x(i);", True),
    ("y(i) += x(i);", True),
    ("y (i) *= x(i);", True),
    ("++y(i);", True),
    ("T t = y(i); y(i) = t + x(i);", True),
    ("h(&y(i), x(i));", True),
    ("y(i) = x(i) && y(i) == 0;", True),        # its right side reads y(i)
    ("y(i) = y(i) + exp(x(i));", True),
    ("y(i) = x(i) == 0;", False),
    ("if (x(i) > 0) y(i) = 0; y(i) += x(i);", True),     # the assignment may not run
    ("if (x(i) > 0) { y(i) = 0; } y(i) += x(i);", True),
    ("if (x(i) > 0) { t = 1; } y(i) = x(i);", False),
    ("T m = x(i); if (x(i) > m) m = x(i); y(i) = exp(x(i) - m);", False),
    ("if (x(i) == 0) return; y(i) = x(i);", True),
    ("/* y(i) += 1 */ y(x(i) > 0) = 1;", False),
])
def test_a_gufunc_reads_its_output_first_where_its_first_mention_is_no_assignment(body, reads):
    text = ("helper void h(T *p, T v)\n{ *p = v; }\n"
            "gufunc g(x) -> y\n    layout: (n)->(n)\n    types: float64(float64)\n"
            "{\n    for (int64_t i = 0; i < n; i++) { %s }\n}\n" % body)
    assert model(text).functions[0].reads_core_outputs_first is reads


SCALAR_BODIES = """
helper double h(double a, double b)
{
    return hypot(a, b);
}

ufunc norm2(x, y) -> r
    types: float64(float64, float64)
{
    r = hypot (x, y);
}

ufunc summed(x, y) -> r
    types: float64(float64, float64)
    associative: true
{
    r = hypot(x, y);
}

ufunc through_helper(x, y) -> r
    types: float64(float64, float64)
{
    r = h(x, y);
}

ufunc commented(x, y) -> r
    types: float64(float64, float64)
{
    r = x + y;   /* not hypot(x, y) */
}

ufunc three(x, y, z) -> r
    types: float64(float64, float64, float64)
{
    r = hypot(x, y) + z;
}

ufunc mixed(x, y) -> r
    types: float64(float32, float64)
{
    r = hypot(x, y);
}

gufunc rows(x) -> r
    layout: (n)->()
    types: float64(float64)
{
    r = 0;
    for (int64_t i = 0; i < n; i++)
        r = hypot(r, x(i));
}
"""


def test_elementwise_functions_whose_own_body_calls_hypot_get_a_scalar_body():
    # Not through a helper (compiled once), nor in a comment; a gufunc's loops have no scalar
    # copy of the kernel.
    assert model(SCALAR_BODIES).scalar_body_functions == {"norm2", "summed", "three", "mixed"}
