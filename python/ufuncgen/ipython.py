"""The `%%ufuncgen` cell magic: a notebook cell's signature text, built and imported.

    %load_ext ufuncgen

    %%ufuncgen fast [--cuda-arch none] [--no-threads] [-v]
    ufunc sq(x) -> y
        types: float64(float64)
    { y = x * x; }

binds `fast` (the module) and `sq` in the notebook's namespace.  The cell goes through
ufuncgen.load(), so an unchanged cell, rerun or run again after a restart, is not rebuilt;
each version of a cell is its own module (`fast_<8 hex digits>`), so functions built from an
earlier version keep working and pickle under their own module's name.
"""
from __future__ import annotations

import argparse
import keyword
import shlex

from .cli import cuda_arch_argument
from .loader import load


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%%ufuncgen", add_help=False,
                                     description="build the cell's signature text")
    parser.add_argument("name", help="the name the module is bound to in the namespace")
    parser.add_argument("--cuda-arch", default=None, type=cuda_arch_argument)
    parser.add_argument("--no-threads", dest="threads", action="store_false")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def _arguments(line: str) -> argparse.Namespace:
    from IPython.core.error import UsageError
    try:
        words = shlex.split(line)
    except ValueError as exc:            # an unbalanced quote: "No closing quotation"
        raise UsageError(f"%%ufuncgen: the line {line!r} cannot be split into words: "
                         f"{exc}") from None
    try:
        args = _parser().parse_args(words)
    except SystemExit:       # argparse has printed what is wrong
        raise UsageError("usage: %%ufuncgen NAME [--cuda-arch ARCHS] [--no-threads] [-v]") from None
    if not args.name.isidentifier() or keyword.iskeyword(args.name):
        raise UsageError(f"%%ufuncgen: NAME: expected a Python identifier that is not a "
                         f"keyword (the module is bound to it); got {args.name!r}")
    return args


def public_names(module) -> list[str]:
    names = getattr(module, "__all__", None)
    return list(names) if names is not None else [n for n in vars(module) if not n.startswith("_")]


def ufuncgen_cell(ipython, line: str, cell: str):
    from .build import BuildError
    from .gen import SignatureError
    args = _arguments(line)
    try:
        # The cell's text always counts as text, even a one-line cell without `{`.
        module = load(cell if "\n" in cell else cell + "\n", cuda_arch=args.cuda_arch,
                      threads=args.threads, verbose=args.verbose, _stem=args.name)
    except (SignatureError, BuildError) as exc:
        # The messages point at the cell's text, as `ufuncgen check` shows them: IPython shows
        # what _render_traceback_ gives instead of a traceback through ufuncgen's own code.
        # The exception still fails the cell (a "run all" stops there).
        shown = [f"{type(exc).__name__}:", str(exc)]
        exc._render_traceback_ = lambda: shown
        raise
    namespace = {n: getattr(module, n) for n in public_names(module)}
    namespace[args.name] = module
    ipython.user_ns.update(namespace)


def load_ipython_extension(ipython) -> None:
    def magic(line, cell):
        return ufuncgen_cell(ipython, line, cell)
    magic.__doc__ = __doc__         # what `%%ufuncgen?` shows
    ipython.register_magic_function(magic, magic_kind="cell", magic_name="ufuncgen")
