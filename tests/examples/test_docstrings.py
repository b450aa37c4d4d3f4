"""Docstrings: `name(arg1, arg2, /, ...` with the argument names of the signature file, and
every type signature listed; names read independently from signatures/examples.ufunc."""
import pathlib
import re

import numpy as np
import pytest

import ufuncgen.examples as ex

from .conftest import FUNCTION_NAMES

SIGNATURE_FILE = pathlib.Path(__file__).resolve().parents[2] / "signatures" / "examples.ufunc"
HEADER = re.compile(r"^(g?ufunc)\s+(\w+)\((.*?)\)\s*->\s*\(?([\w\s,]+?)\)?\s*$")


def split_top_level(text):
    """'a, (b, c)(d)' -> ['a', '(b, c)(d)']: commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    return parts + [current.strip()] if current.strip() else parts


def parse_declarations():
    """{name: (kind, [argument names], [output names], [type signatures])} in plain Python."""
    declarations, current = {}, None
    for line in SIGNATURE_FILE.read_text().splitlines():
        match = HEADER.match(line)
        if match:
            kind, name, args, outs = match.groups()
            current = declarations[name] = (
                kind, [a.strip() for a in args.split(",")], [o.strip() for o in outs.split(",")], [])
        elif current is not None and line.strip().startswith("types:"):
            current[3].extend(split_top_level(line.split(":", 1)[1]))
    return declarations


DECLARATIONS = parse_declarations()


def test_signature_file_declares_exactly_the_module_functions():
    assert sorted(DECLARATIONS) == FUNCTION_NAMES
    assert len(FUNCTION_NAMES) == 17


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_docstring_starts_with_the_call_signature_using_the_real_argument_names(name):
    kind, args, outs, _ = DECLARATIONS[name]
    doc = getattr(ex, name).__doc__
    assert doc.startswith(f"{name}({', '.join(args)}, /, "), doc.splitlines()[0]
    first = doc.splitlines()[0]
    assert "out=None" in first
    assert ("axes=<no value>" in first) == (kind == "gufunc")
    assert ("where=True" in first) == (kind == "ufunc")


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_docstring_lists_every_type_signature_and_the_outputs(name):
    kind, _, outs, types = DECLARATIONS[name]
    fn = getattr(ex, name)
    doc = fn.__doc__
    lines = [line.strip() for line in doc.splitlines()]
    # ufunc.types lists NumPy's own types' loops; bfloat16's are added for ml_dtypes' dtype.
    assert types and len([t for t in types if "bfloat16" not in t]) == len(fn.ufunc.types)
    for signature in types:
        assert signature in lines, f"{signature!r} not listed in {name}.__doc__"
    assert f"Returns: {', '.join(outs)}" in lines
    if kind == "gufunc":
        assert f"Layout: {fn.signature}" in lines


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_function_identifies_itself_by_name_module_and_argument_counts(name):
    kind, args, outs, _ = DECLARATIONS[name]
    fn = getattr(ex, name)
    assert fn.__name__ == name
    assert fn.__module__ == "ufuncgen.examples"
    assert (fn.nin, fn.nout) == (len(args), len(outs))
    assert (fn.signature is None) == (kind == "ufunc")
    assert name in repr(fn)


def _stub_call_parameters(name):
    """The parameters of `name`'s __call__ in the installed ufuncgen/examples.pyi, as
    (name, kind) with inspect's kinds, `self` left out."""
    import ast
    import inspect
    stub = pathlib.Path(ex.__file__).with_name("examples.pyi")
    tree = ast.parse(stub.read_text())
    annotated = {node.target.id: node.annotation.id for node in tree.body
                 if isinstance(node, ast.AnnAssign)}
    (cls,) = [node for node in tree.body
              if isinstance(node, ast.ClassDef) and node.name == annotated[name]]
    (call,) = [node for node in cls.body if isinstance(node, ast.FunctionDef)]
    p = inspect.Parameter
    params = ([(a.arg, p.POSITIONAL_ONLY) for a in call.args.posonlyargs]
              + [(a.arg, p.POSITIONAL_OR_KEYWORD) for a in call.args.args]
              + [(a.arg, p.KEYWORD_ONLY) for a in call.args.kwonlyargs])
    return params[1:] + ([(call.args.kwarg.arg, p.VAR_KEYWORD)] if call.args.kwarg else [])


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_inspect_signature_is_the_docstrings_call_with_the_declared_argument_names(name):
    import inspect
    kind, args, _, _ = DECLARATIONS[name]
    fn = getattr(ex, name)
    signature = inspect.signature(fn)
    assert f"{name}{signature}" == fn.__doc__.splitlines()[0]
    params = list(signature.parameters.values())
    assert [q.name for q in params[:len(args)]] == args
    assert all(q.kind == q.POSITIONAL_ONLY for q in params[:len(args)])
    keywords = {q.name for q in params if q.kind == q.KEYWORD_ONLY}
    assert ({"axes", "axis", "keepdims"} <= keywords) == (kind == "gufunc")
    assert ("where" in keywords) == (kind == "ufunc")
    # The stub: the same inputs, positional-only, then `out`; the keywords as **kwargs.  Several
    # outputs may also be passed one by one after the inputs, as NumPy's own stubs allow
    # (`np.modf(x, o1, o2)`): a positional-only parameter each, and `out` by keyword only.
    stub = _stub_call_parameters(name)
    assert stub[:len(args)] == [(q.name, q.kind) for q in params[:len(args)]]
    if fn.nout == 1:
        assert stub[len(args)] == ("out", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    else:
        assert stub[len(args):len(args) + fn.nout + 1] == [
            *[(f"_Out{i + 1}", inspect.Parameter.POSITIONAL_ONLY) for i in range(fn.nout)],
            ("out", inspect.Parameter.KEYWORD_ONLY)]


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_inspect_signature_has_the_keywords_numpy_gives_its_own_ufunc_of_that_kind(name):
    import inspect
    kind, _, _, _ = DECLARATIONS[name]
    numpy_peer = np.matmul if kind == "gufunc" else np.add
    ours = inspect.signature(getattr(ex, name)).parameters.values()
    numpy = inspect.signature(numpy_peer).parameters.values()
    assert ([(q.name, q.default) for q in ours if q.kind == q.KEYWORD_ONLY]
            == [(q.name, q.default) for q in numpy if q.kind == q.KEYWORD_ONLY])


def test_the_function_type_itself_still_has_a_signature():
    import inspect
    import ufuncgen
    assert "ufunc" in str(inspect.signature(ufuncgen.Function))
