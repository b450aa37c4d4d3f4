"""Fixtures of the Function tests, and the C probes of the runtime's headers."""
import pathlib
import shutil
import subprocess
import sysconfig

import numpy as np
import pytest

from ufuncgen.build import tool_environment

SOURCE_INCLUDE = pathlib.Path(__file__).resolve().parents[2] / "src" / "include"


@pytest.fixture
def strided_view():
    """view(values, step): `values` copied into a view of step `step` (reversed where it is
    negative) of a larger buffer, from its second element: the buffer's other elements, 0, 1,
    2, ... in its type, lie between and around the view's, for a test that they stay as
    they were."""
    def view(values, step):
        n = len(values)
        buffer = np.arange(n * abs(step) + 3).astype(values.dtype)
        strided = buffer[1:1 + n * abs(step):abs(step)]
        if step < 0:
            strided = strided[::-1]
        strided[...] = values
        return strided
    return view


@pytest.fixture
def c_probe(tmp_path):
    """run(header, statements, definitions=""): compile `statements` (the body of main,
    printing what they find), after `definitions` (functions they call), against one of the
    runtime's headers under UBSan, run it, and return its standard output's words."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc")
    return lambda header, statements, definitions="": _run_c_probe(tmp_path, header, statements,
                                                                   definitions)


def _run_c_probe(tmp_path, header, statements, definitions):
    source = tmp_path / "probe.c"
    source.write_text(f'#include <Python.h>\n#include <stdio.h>\n#include "{header}"\n'
                      + definitions + "\nint main(void)\n{\n" + "\n".join(statements)
                      + "\n    return 0;\n}\n")
    binary = tmp_path / "probe"
    compiled = subprocess.run(
        ["gcc", "-std=c11", "-O1", "-Wall", "-Werror", "-Wno-unused-function",
         "-fsanitize=undefined", "-fno-sanitize-recover=all", f"-I{SOURCE_INCLUDE}",
         f"-I{sysconfig.get_paths()['include']}", f"-I{np.get_include()}", str(source),
         "-o", str(binary)],
        capture_output=True, text=True, env=tool_environment())
    assert compiled.returncode == 0, compiled.stderr
    run = subprocess.run([str(binary)], capture_output=True, text=True, env=tool_environment())
    assert run.returncode == 0, run.stderr       # UBSan: no undefined behaviour on the way
    return run.stdout.split()

@pytest.fixture
def forbidden_device_hook():
    """Documents that a test's calls must stay on the host: one routed to the device path
    raises TypeError ("built without device kernels"), so a call that returns stayed on the host."""
    return None
