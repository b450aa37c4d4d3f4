"""What a built module depends on besides its signature file, as one digest.

Shared by `ufuncgen build`'s no-change stamp and `ufuncgen.load()`'s cache key.  Everything
here must stay cheap, since a cache hit pays for it: no generator (Jinja2) import, no
compiler run.  A compiler is identified by its resolved path, size and modification time
(an upgrade replaces the binary, so these change), not by running `cc --version`.
"""
from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import shlex
import shutil
import sys
import sysconfig

from . import __version__

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")


def _toolkit_dir(installed: str, source: str, marker: str) -> str:
    """A part of the toolkit: `installed` inside the package, or `source` (relative to the top
    of the source tree) in a source checkout or an editable install, where the package is
    python/ufuncgen (the same choice ufuncgen.cmake makes)."""
    path = os.path.join(PACKAGE_DIR, installed)
    if os.path.exists(os.path.join(path, marker)):
        return path
    return os.path.normpath(os.path.join(PACKAGE_DIR, "..", "..", source))


def _include_dir() -> str:
    """The C headers: ufuncgen/include, or src/include in the source tree."""
    return _toolkit_dir("include", os.path.join("src", "include"),
                        os.path.join("ufuncgen", "host_loops.h"))


@functools.lru_cache(maxsize=None)
def toolkit_digest() -> str:
    """sha256 over the generator, its templates, the C headers and the CMake code, as this
    process sees them installed: a change to any of them changes what a build produces, even
    when ufuncgen's version number stays the same (an editable or development install)."""
    patterns = ["cmake/*.cmake", "build.py", "build_diagnostics.py"]
    files = sorted(f for p in patterns for f in glob.glob(os.path.join(PACKAGE_DIR, p)))
    files += sorted(glob.glob(os.path.join(_toolkit_dir("gen", "gen", "__init__.py"), "*.py")))
    files += sorted(glob.glob(os.path.join(_toolkit_dir("templates", "templates", "module.c.j2"),
                                           "*.j2")))
    files += sorted(glob.glob(os.path.join(_include_dir(), "ufuncgen", "*.h")))
    digest = hashlib.sha256(__version__.encode())
    for path in files:
        with open(path, "rb") as f:
            digest.update(os.path.basename(path).encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


def _tool_identity(path: str | None) -> list | None:
    """(resolved path, size, mtime) of an executable, or None when there is none."""
    if not path:
        return None
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        return None
    return [real, st.st_size, st.st_mtime_ns]


@functools.lru_cache(maxsize=None)
def c_compiler_identity() -> list | None:
    """The C compiler CMake will pick: $CC, else cc (then gcc, clang) on PATH."""
    chosen = os.environ.get("CC")
    if chosen:
        return _tool_identity(shutil.which(shlex.split(chosen)[0]))
    for name in ("cc", "gcc", "clang"):
        found = shutil.which(name)
        if found:
            return _tool_identity(found)
    return None


@functools.lru_cache(maxsize=None)
def cuda_compiler_identity() -> list | None:
    """nvcc as CMake's check_language(CUDA) finds it: $CUDACXX, PATH, then /usr/local/cuda."""
    chosen = os.environ.get("CUDACXX")
    found = shutil.which(shlex.split(chosen)[0]) if chosen else (
        shutil.which("nvcc") or shutil.which("/usr/local/cuda/bin/nvcc"))
    return _tool_identity(found)


def _native_gpus() -> list[str]:
    """The GPU models present, for `--cuda-arch native` (read from the driver's /proc files,
    which costs nothing; empty without the NVIDIA driver)."""
    models = []
    for info in sorted(glob.glob("/proc/driver/nvidia/gpus/*/information")):
        try:
            with open(info, encoding="utf-8", errors="replace") as f:
                models += [line.strip() for line in f if line.startswith("Model:")]
        except OSError:
            pass
    return models


def numpy_abi() -> str:
    """numpy major.minor: the C API a module compiled against this NumPy needs."""
    import numpy
    return ".".join(numpy.__version__.split(".")[:2])


def sanitize_requested() -> bool:
    """ASan + UBSan: asked for by UFUNCGEN_SANITIZE=1, or always from a sanitized install
    (its cmake/sanitize.cmake, beside ufuncgen.cmake)."""
    return (os.environ.get("UFUNCGEN_SANITIZE", "") not in ("", "0")
            or os.path.exists(os.path.join(PACKAGE_DIR, "cmake", "sanitize.cmake")))


def build_inputs(*, threads: bool, cuda_arch: str | None) -> dict:
    """Everything besides the signature text and the module name that decides what a build
    produces: the toolkit, the compilers, the options, NumPy's ABI and Python's."""
    uses_cuda = cuda_arch != "none"
    return {
        "ufuncgen": __version__,
        "toolkit": toolkit_digest(),
        "cc": c_compiler_identity(),
        "nvcc": cuda_compiler_identity() if uses_cuda else None,
        "gpus": _native_gpus() if cuda_arch == "native" else None,
        "threads": bool(threads),
        "cuda_arch": cuda_arch,
        "sanitize": sanitize_requested(),
        "numpy": numpy_abi(),
        "python": [sys.executable, EXT_SUFFIX],
    }


def digest(parts: dict) -> str:
    """sha256 hex of a JSON-able dict, independent of key order."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
