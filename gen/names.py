"""Module names: what `python -m ufuncgen.gen --module`, `ufuncgen build --name` and
`ufuncgen.load(name=...)` accept.

A generated module's name becomes its file name (`<last part>.<abi>.so`), its `PyInit_`
function, the name its functions pickle under and the target of `import`: each dotted part
must be an ASCII Python identifier and no keyword.  And a module (or the package holding it)
named like the standard library's modules, NumPy or ufuncgen would shadow them for every
import from its folder: a module `os` beside a script breaks `import numpy` there.

Kept apart from the rest of the generator, so that `ufuncgen.load()` checks a name without
loading the generator.
"""
from __future__ import annotations

import argparse
import keyword
import re
import sys

_ASCII_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# What generated modules import, besides the standard library.
_PACKAGES = {"numpy": "NumPy, which the module imports",
             "ufuncgen": "ufuncgen, which the module imports",
             "ml_dtypes": "ml_dtypes, which a module with bfloat16 loops imports"}

# The modules ufuncgen's own build generates inside its package (CMakeLists.txt).
SHIPPED_MODULES = frozenset({"ufuncgen.examples"})


def module_name_problem(name: str, shipped: bool = False) -> str | None:
    """Why `name` cannot name a generated module, as a sentence about it ("it is ..."); None
    when it can.  shipped=True accepts SHIPPED_MODULES (the generator, run by ufuncgen's own
    build)."""
    if name == "":
        return "it is empty"
    parts = name.split(".")
    for part in parts:
        subject = "it" if len(parts) == 1 else f"its part {part!r}"
        if part == "":
            return "it has an empty part (a leading, trailing or doubled '.')"
        if not _ASCII_IDENTIFIER.fullmatch(part):
            return (f"{subject} is not an ASCII Python identifier (letters, digits and '_', "
                    "not starting with a digit)")
        if keyword.iskeyword(part):
            return f"{subject} is a Python keyword, which an import statement cannot name"
    if shipped and name in SHIPPED_MODULES:
        return None
    first = parts[0]
    subject = "it" if len(parts) == 1 else f"its package {first!r}"
    if first in _PACKAGES:
        return f"{subject} would shadow {_PACKAGES[first]}"
    if first in sys.stdlib_module_names:
        return (f"{subject} would shadow the standard library's module {first!r} for every "
                "import from the module's folder (NumPy's own imports included)")
    return None


def module_name_error(name: str, shipped: bool = False) -> str | None:
    """The one-line message for a name module_name_problem refuses: the value and why."""
    problem = module_name_problem(name, shipped)
    return None if problem is None else f"{name!r} is not a usable module name: {problem}"


def module_name_argument(shipped: bool = False):
    """An argparse `type=` for a module name: the name, or module_name_error's message."""
    def checked(value: str) -> str:
        problem = module_name_error(value, shipped)
        if problem is not None:
            raise argparse.ArgumentTypeError(problem)
        return value
    return checked
