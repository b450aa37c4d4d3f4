"""The C headers generated from the generator's tables (gen/runtime_headers.py): the element
types and the limits are written once, in gen/, and the runtime and kernels read them."""
from __future__ import annotations

import pathlib
import re
import shutil
import subprocess

import pytest

from ufuncgen.build import tool_environment
from ufuncgen.gen import limits
from ufuncgen.gen.__main__ import main
from ufuncgen.gen.element_types import DEVICE_ELEMENT_TYPES, ELEMENT_TYPES, NUMPY_ELEMENT_TYPES
from ufuncgen.gen.runtime_headers import element_types_header, limits_header

X_ROW = re.compile(r"^    X\((\w+), \"(\w+)\", (\w+), (NPY_\w+|UFG_NPY_RUNTIME_TYPE), (\d+), '(\w)', (\w+), "
                   r"(kDL\w+)\)",
                   re.MULTILINE)
SOURCE_INCLUDE = pathlib.Path(__file__).resolve().parents[2] / "src" / "include"
DLPACK = {"b": "kDLBool", "i": "kDLInt", "u": "kDLUInt", "f": "kDLFloat", "h": "kDLFloat",
          "c": "kDLComplex", "bf": "kDLBfloat"}


def test_the_element_types_header_lists_exactly_the_device_element_types_in_order():
    rows = X_ROW.findall(element_types_header())
    assert rows == [(t.name.upper(), t.name, t.storage_type, t.npy_enum or "UFG_NPY_RUNTIME_TYPE",
                     str(t.itemsize), t.kind, t.access, DLPACK[t.access])
                    for t in DEVICE_ELEMENT_TYPES.values()]
    text = element_types_header()
    assert f"#define UFG_ELEMENT_TYPE_COUNT {len(DEVICE_ELEMENT_TYPES)}\n" in text
    assert f'#define UFG_ELEMENT_TYPE_NAMES "{", ".join(DEVICE_ELEMENT_TYPES)}"\n' in text


def test_the_device_element_types_are_numpys_own_then_bfloat16_so_numpys_keep_their_codes():
    assert list(DEVICE_ELEMENT_TYPES) == list(NUMPY_ELEMENT_TYPES) + ["bfloat16"]
    assert DEVICE_ELEMENT_TYPES["bfloat16"].access == "bf"


def test_numpys_own_types_are_every_type_but_the_ones_another_package_defines():
    others = [t.name for t in ELEMENT_TYPES.values() if t.name not in NUMPY_ELEMENT_TYPES]
    assert others == ["bfloat16"]
    assert all(ELEMENT_TYPES[name].dtype_module == "ml_dtypes" for name in others)
    assert list(NUMPY_ELEMENT_TYPES) == [n for n in ELEMENT_TYPES if n not in others]


def test_the_pair_list_has_every_source_destination_pair_once():
    pairs = re.findall(r"^    X\((\w+), [\w ]+, \w+, (\w+), [\w ]+, \w+\)", element_types_header(),
                       re.MULTILINE)
    codes = [name.upper() for name in DEVICE_ELEMENT_TYPES]
    assert pairs == [(s, d) for s in codes for d in codes]


def test_the_limits_header_defines_every_limit_of_limits_py():
    text = limits_header()
    for name, value, _ in limits.C_LIMITS:
        assert f"\n#define {name} {value}\n" in text
    assert limits.DEVICE_MAX_ARGS == limits.MAX_ARGS + 1


def test_the_command_writes_both_headers_and_leaves_unchanged_ones_alone(tmp_path):
    assert main(["runtime-headers", str(tmp_path)]) == 0
    header = tmp_path / "ufuncgen" / "element_types.h"
    assert header.read_text() == element_types_header()
    assert (tmp_path / "ufuncgen" / "limits.h").read_text() == limits_header()
    stamp = header.stat().st_mtime_ns
    assert main(["runtime-headers", str(tmp_path)]) == 0
    assert header.stat().st_mtime_ns == stamp


def test_the_generated_headers_name_their_source():
    assert "from gen/element_types.py: do not edit" in element_types_header()
    assert "from gen/limits.py: do not edit" in limits_header()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_the_element_types_header_compiles_and_its_rows_agree_with_c(tmp_path):
    main(["runtime-headers", str(tmp_path)])
    source = tmp_path / "probe.c"
    source.write_text("""
#include <stdbool.h>
#include <stdint.h>
#include "ufuncgen/half.h"
#include "ufuncgen/bfloat16.h"
#include "ufuncgen/complex.h"
#include "ufuncgen/element_types.h"
#define CHECK(CODE, name, c_type, npy, itemsize, kind_char, kind, dl) \\
    _Static_assert(sizeof(c_type) == itemsize, name);
UFG_ELEMENT_TYPES(CHECK)
""")
    result = subprocess.run(["gcc", "-std=c11", "-fsyntax-only", f"-I{tmp_path}",
                             f"-I{SOURCE_INCLUDE}", str(source)],
                            capture_output=True, text=True, env=tool_environment())
    assert result.returncode == 0, result.stderr
