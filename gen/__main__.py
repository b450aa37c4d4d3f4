"""What the build runs:

    python -m ufuncgen.gen --module PKG.MOD -o DIR FILE...   a module's sources
    python -m ufuncgen.gen runtime-headers INCLUDE_DIR       ufuncgen/element_types.h and
                                                             ufuncgen/limits.h (runtime_headers.py)
"""
from __future__ import annotations

import argparse
import sys

from . import SignatureError, generate
from .load import directory_problem
from .names import module_name_argument


def _runtime_headers(argv: list[str]) -> int:
    from .runtime_headers import write_runtime_headers

    parser = argparse.ArgumentParser(prog="python -m ufuncgen.gen runtime-headers",
                                     description="Write the C headers generated from the "
                                                 "generator's tables (element types, limits).")
    parser.add_argument("include_dir", help="the include directory; headers go to its ufuncgen/")
    args = parser.parse_args(argv)
    write_runtime_headers(args.include_dir)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # A word first, not an option, so that the module form keeps its flat command line.
    if argv[:1] == ["runtime-headers"]:
        return _runtime_headers(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m ufuncgen.gen",
                                     description="Generate C sources from ufuncgen signature files.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="signature files")
    # shipped: ufuncgen's own build generates ufuncgen.examples, in ufuncgen's package
    parser.add_argument("--module", required=True, type=module_name_argument(shipped=True),
                        help="qualified module name, e.g. mypkg.fast")
    parser.add_argument("-o", "--output-dir", required=True, help="where the sources go")
    parser.add_argument("--source-root", default=None,
                        help="paths in messages and #line directives are relative to this directory")
    args = parser.parse_args(argv)
    problem = directory_problem(args.output_dir)
    if problem is not None:
        print(f"{parser.prog}: error: output directory {args.output_dir!r} {problem}", file=sys.stderr)
        return 1
    try:
        generate(args.module, args.files, args.output_dir, args.source_root, warnings_to=sys.stderr)
    except SignatureError as exc:
        print(exc.format(), file=sys.stderr)
        return 1
    except OSError as exc:       # a folder without write permission, a full disk, ...
        print(f"{parser.prog}: error: cannot write {exc.filename!r}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
