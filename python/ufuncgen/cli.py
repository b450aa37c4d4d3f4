"""The `ufuncgen` command (also `python -m ufuncgen`).

    ufuncgen build FILE... --name MOD -o DIR   build an importable module from signature files
    ufuncgen check FILE...                     only check the files
    ufuncgen cmake-dir                         where ufuncgen.cmake is, for your own CMake
"""
from __future__ import annotations

import argparse
import os
import sys


def cuda_arch_argument(value: str) -> str:
    """argparse type of --cuda-arch: a misspelling is a usage error (exit status 2) naming it,
    as a bad --name is."""
    from .build import cuda_arch_problem
    problem = cuda_arch_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value


def _parser() -> argparse.ArgumentParser:
    from .gen.names import module_name_argument
    parser = argparse.ArgumentParser(prog="ufuncgen", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser("build", help="build an importable module from signature files")
    build.add_argument("files", nargs="+", metavar="FILE")
    # --name is refused before anything runs when it cannot name a module (gen/names.py)
    build.add_argument("--name", required=True, metavar="MOD", type=module_name_argument(),
                       help="module name; dotted (pkg.mod) when it will live inside a package")
    build.add_argument("-o", "--output-dir", default=".", metavar="DIR",
                       help="where the module goes (default: the current directory)")
    build.add_argument("--build-dir", default=None,
                       help="CMake's build directory (default: DIR/.ufuncgen-build/MOD)")
    build.add_argument("--no-threads", dest="threads", action="store_false",
                       help="compile every loop single-threaded (no multi-core host loops)")
    build.add_argument("--cuda-arch", default=None, metavar="ARCHS", type=cuda_arch_argument,
                       help="GPUs to compile for: 'none' (host and simulator only), 'native' "
                            "(the GPU present), or compute capabilities such as 90 or 75,80 "
                            "(default: 75, 80, 86, 89 and 90 when nvcc is found)")
    build.add_argument("-v", "--verbose", action="store_true", help="show CMake and compiler output")

    check = commands.add_parser("check", help="check signature files without building")
    check.add_argument("files", nargs="+", metavar="FILE")

    commands.add_parser("cmake-dir", help="print the directory holding ufuncgen.cmake")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from .build import CMAKE_DIR, BuildError, build
    from .gen import SignatureError, load_module
    from .gen.diagnostics import format_warnings

    if args.command == "cmake-dir":
        print(CMAKE_DIR)
        return 0
    try:
        if args.command == "check":
            module = load_module("checked", args.files, source_root=os.getcwd())
            if module.warnings:
                print(format_warnings(module.warnings), file=sys.stderr)
            print(f"ok: {len(module.functions)} functions")
            return 0
        path = build(args.files, args.name, args.output_dir, args.build_dir, args.verbose,
                     threads=args.threads, cuda_arch=args.cuda_arch)
    except SignatureError as exc:
        print(exc.format(), file=sys.stderr)
        _removed_note(exc)
        return 1
    except BuildError as exc:
        if exc.report:
            print(exc.report.rstrip(), file=sys.stderr)
        print(f"ufuncgen: error: {exc}", file=sys.stderr)
        _removed_note(exc)
        return 1
    print(f"built {path}")
    return 0


def _removed_note(exc: Exception) -> None:
    """Says which module (and stub) of an earlier build the failed one removed (build())."""
    removed = getattr(exc, "removed", [])
    if removed:
        print(f"ufuncgen: note: removed {' and '.join(removed)}, left by an earlier build: "
              "they no longer match the files, and importing them would run the old code",
              file=sys.stderr)
