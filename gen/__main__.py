"""`python -m ufuncgen.gen --module PKG.MOD -o DIR FILE...`: what the build runs."""
from __future__ import annotations

import argparse
import sys

from . import SignatureError, generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ufuncgen.gen",
                                     description="Generate C sources from ufuncgen signature files.")
    parser.add_argument("files", nargs="+", metavar="FILE", help="signature files")
    parser.add_argument("--module", required=True, help="qualified module name, e.g. mypkg.fast")
    parser.add_argument("-o", "--output-dir", required=True, help="where the sources go")
    parser.add_argument("--source-root", default=None,
                        help="paths in messages and #line directives are relative to this directory")
    args = parser.parse_args(argv)
    try:
        generate(args.module, args.files, args.output_dir, args.source_root, warnings_to=sys.stderr)
    except SignatureError as exc:
        print(exc.format(), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
