"""`ufuncgen build`: the user's signature files → an importable extension module.

It checks the files first (so a bad file gives the generator's compiler-style messages and
nothing else), then drives CMake with the same `ufuncgen_add_module` function that builds
`ufuncgen.examples`.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from . import _fingerprint
from .build_diagnostics import error_summary, user_diagnostics
from .gen import SignatureError, load_module
from .gen.diagnostics import format_warnings
from .gen.load import directory_problem, display_path
from .gen.names import module_name_error

CMAKE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cmake")

_PROJECT = """\
# Written by `ufuncgen build`; rewritten on every build that runs CMake.
cmake_minimum_required(VERSION 3.18...3.31)
project(ufuncgen_{short} LANGUAGES C)
find_package(Python REQUIRED COMPONENTS Interpreter Development.Module NumPy)
include("{cmake_dir}/ufuncgen.cmake")
ufuncgen_add_module(ufuncgen_{short} MODULE {module}
  SIGNATURES {signatures}
{source_root}  OUTPUT_DIRECTORY "{output_dir}")
"""


class BuildError(Exception):
    """CMake or the C compiler failed.  `report` holds what to show the user first: the
    compilers' diagnostics at the signature files' lines, or the build output when none is
    located there ("" when there is nothing to add to the message).  `removed`: see build()."""

    def __init__(self, message: str, report: str = ""):
        super().__init__(message)
        self.report = report
        self.removed: list[str] = []

    def format(self) -> str:
        """The report, then the message, as one text (what `ufuncgen.load` raises with)."""
        return f"{self.report.rstrip()}\n{self}" if self.report else str(self)


def find_cmake() -> str:
    """The `cmake` package's binary (a dependency of ufuncgen) when installed, else cmake on
    PATH.  The package's binary first: a `cmake` on PATH is often a wrapper script (a pyenv
    shim, the package's own Python entry point) that costs 0.1 to 0.4 s a call."""
    try:
        import cmake
    except ImportError:
        cmake = None
    if cmake is not None:
        binary = os.path.join(cmake.CMAKE_BIN_DIR, "cmake")
        if os.access(binary, os.X_OK):
            return binary
    found = shutil.which("cmake")
    if found:
        return found
    raise BuildError("ufuncgen build needs CMake: install it (pip install cmake)")


def _cmake_path(path: str) -> str:
    return os.path.abspath(path).replace("\\", "/")


# What the CMake build cannot take in a path: each fails to configure, generate or build in a
# signature file's, the output or the build directory's path (CMake's list separator `;`, its
# quoting and escapes `"` `\\` `${`, make's `:` `%` `|` `$(`, and the generators' `[ ] < >`
# and control characters).  Spaces, `#`, a lone `$`, quotes `'`, `&`, `( ) { }`, `!`, `*`
# and non-ASCII letters build.
_UNSAFE_IN_PATHS = re.compile(r'[:;"\\%\[\]<>|\x00-\x1f\x7f]|\$[({]')
_UNSAFE_LIST = ': ; " \\ % [ ] < > | $( ${ or control characters'


def _check_path_characters(files: list[str], output_dir: str, build_dir: str | None) -> None:
    """BuildError naming the first path, and its character, that the build cannot take:
    refused before anything runs, rather than failing in CMake's or make's own words."""
    paths = [("signature file", f, os.path.abspath(f)) for f in files]
    paths.append(("output directory", output_dir, os.path.abspath(output_dir)))
    if build_dir is not None:
        paths.append(("build directory", build_dir, os.path.abspath(build_dir)))
    for what, shown, path in paths:
        m = _UNSAFE_IN_PATHS.search(path)
        if m is not None:
            if m.group(0) not in shown:          # in a folder above a relative path
                shown = path
            raise BuildError(f"{what} {shown!r} has {m.group(0)!r} in its path, which CMake and "
                             f"make cannot handle (nor {_UNSAFE_LIST}): rename or move it")


def _source_root() -> str | None:
    """The folder that messages and #line directives show paths relative to: the current
    directory, or None where CMake cannot take its path (`load(text)` from a notebook in
    `Data [2024]`), and paths are then shown whole.  A signature file below such a folder is
    refused by _check_path_characters for its own path."""
    cwd = os.getcwd()
    return None if _UNSAFE_IN_PATHS.search(cwd) else cwd


def build(files: list[str], module: str, output_dir: str, build_dir: str | None = None,
          verbose: bool = False, threads: bool = True, cuda_arch: str | None = None) -> str:
    """Builds `module` from `files` into output_dir; returns the extension's path.

    threads=False compiles every loop single-threaded (CMake's UFUNCGEN_THREADS=OFF).
    cuda_arch: None (ufuncgen.cmake's default list), "none" (no nvcc), "native", or compute
    capabilities "90" / "75,80".

    A build whose inputs (the files, module, options, ufuncgen's generator and headers, the
    compilers, NumPy, Python) match the stamp the last build left in build_dir, and whose
    outputs are as it left them, returns at once: no CMake, no compiler, nothing written.

    Raises SignatureError for a bad signature file, BuildError when compiling fails.  A
    build that fails (or is interrupted) leaves no module in output_dir: the extension and
    stub an earlier build left there are removed when a build starts, or when the files are
    found wrong, since they no longer match the files and importing them would run the old
    code.  The paths so removed are the exception's `removed` (SignatureError's too).
    Arguments refused before anything runs (--cuda-arch, the name, the folders) remove
    nothing.
    """
    cuda_architectures(cuda_arch)    # a misspelt --cuda-arch is refused even when up to date
    problem = module_name_error(module)
    if problem is not None:
        raise BuildError(problem)
    for what, folder in (("output directory", output_dir), ("build directory", build_dir)):
        problem = directory_problem(folder) if folder is not None else None
        if problem is not None:
            raise BuildError(f"{what} {folder!r} {problem}")
    _check_path_characters(files, output_dir, build_dir)
    short = module.rpartition(".")[2]
    output_dir = os.path.abspath(output_dir)
    path = os.path.join(output_dir, short + sysconfig.get_config_var("EXT_SUFFIX"))
    outputs = [path, os.path.join(output_dir, short + ".pyi")]
    removed: list[str] = []
    try:
        return _build(files, module, short, output_dir, build_dir, verbose, threads, cuda_arch,
                      path, outputs, removed)
    except (SignatureError, BuildError) as exc:
        removed += _remove(outputs)
        exc.removed = removed
        raise


def _remove(paths: list[str]) -> list[str]:
    """Removes those of `paths` that exist; returns them."""
    removed = []
    for p in paths:
        try:
            os.remove(p)
        except FileNotFoundError:
            continue
        removed.append(p)
    return removed


def _build(files, module, short, output_dir, build_dir, verbose, threads, cuda_arch, path,
           outputs, removed) -> str:
    root = _source_root()
    checked = load_module(module, files, source_root=root)   # file errors before CMake runs
    if checked.warnings:
        print(format_warnings(checked.warnings), file=sys.stderr)
    build_dir = os.path.abspath(build_dir or os.path.join(output_dir, ".ufuncgen-build", short))
    project_dir = os.path.join(build_dir, "project")
    # Without a root, ufuncgen.cmake's default (the project folder, which holds no signature
    # file) shows the files' absolute paths, as they are given here.
    project = _PROJECT.format(
        short=short, module=module, cmake_dir=_cmake_path(CMAKE_DIR),
        signatures=" ".join(f'"{_cmake_path(f)}"' for f in files),
        source_root=f'  SOURCE_ROOT "{_cmake_path(root)}"\n' if root is not None else "",
        output_dir=_cmake_path(output_dir))
    sources = {}
    full_paths = {}     # nvcc's messages name the files by their full paths
    for f in files:
        with open(f, encoding="utf-8") as text:
            # As the generator shows it: CMake hands it absolute paths, so a file outside the
            # root (`../f.ufunc`) is shown whole, in #line directives and compiler messages.
            shown = display_path(os.path.abspath(f), root)
            sources[shown] = text.read().split("\n")
            full_paths[os.path.abspath(f)] = shown
    stamp_path = os.path.join(build_dir, "ufuncgen.stamp")
    key = _build_key(files, sources, module, output_dir, project, threads, cuda_arch)
    if _stamp_matches(stamp_path, key, outputs):
        if verbose:
            print(f"ufuncgen: {module} is up to date ({stamp_path} matches): nothing to build")
        return path

    # The module an earlier build left does not match the files any more: a build that fails
    # or is interrupted must not leave it to be imported.
    removed += _remove(outputs)
    # Written only when a build will run: an up-to-date build writes nothing.
    try:
        os.makedirs(project_dir, exist_ok=True)
        os.makedirs(output_dir, exist_ok=True)
        with open(os.path.join(project_dir, "CMakeLists.txt"), "w", encoding="utf-8") as f:
            f.write(project)
    except OSError as exc:       # no permission, a full disk, ...
        raise BuildError(f"cannot write {exc.filename!r}: {exc.strerror}") from None
    cmake = find_cmake()
    binary_dir = os.path.join(build_dir, "cmake")
    _forget_configuration_if_tools_changed(binary_dir)
    _run([cmake, "-S", project_dir, "-B", binary_dir,
          *cache_options(threads, cuda_arch, _fingerprint.sanitize_requested())], verbose)
    # --config: what a multi-config generator ("Ninja Multi-Config") builds; others ignore it.
    _run([cmake, "--build", binary_dir, "--parallel", "--config", "Release"], verbose, sources,
         checked, full_paths)
    if not os.path.exists(path):
        raise BuildError(f"the build finished but {path} is missing")
    _write_stamp(stamp_path, key, outputs)
    return path


def _build_key(files, sources, module, output_dir, project, threads, cuda_arch) -> str:
    """Everything a build's result depends on: the files' text (and the paths shown in its
    messages), the module, where it goes, the toolkit, compilers and options."""
    return _fingerprint.digest({
        "files": [os.path.abspath(f) for f in files],
        "sources": sources, "module": module, "output_dir": output_dir, "project": project,
        "cwd": os.getcwd(), "configuration": _first_configure_inputs(),
        **_fingerprint.build_inputs(threads=threads, cuda_arch=cuda_arch)})


def cache_options(threads: bool, cuda_arch: str | None, sanitize: bool) -> list[str]:
    """The CMake cache settings of a configure, every one of them said on every configure:
    CMake keeps a -D in the build folder's cache for every later run, so a setting given only
    when it differs from the default would stick to later builds there (a host-only build's
    UFUNCGEN_CUDA=OFF to a `--cuda-arch 90` build, a sanitized build's ASan to a plain one,
    whose module then kills the interpreter at import).  A setting left to ufuncgen.cmake's
    default is removed (-U), so that the default is decided again."""
    settings: dict[str, str | None] = {
        "CMAKE_BUILD_TYPE": "Release",
        "Python_EXECUTABLE": sys.executable,
        "UFUNCGEN_THREADS": "ON" if threads else "OFF",
        "UFUNCGEN_SANITIZE": "ON" if sanitize else "OFF",
        # None: on when CMake finds nvcc (ufuncgen.cmake); the sanitizers need it off.
        "UFUNCGEN_CUDA": "OFF" if sanitize or cuda_arch == "none" else None,
        # None: ufuncgen.cmake's list of GPUs.
        "CMAKE_CUDA_ARCHITECTURES": cuda_architectures(cuda_arch),
    }
    return [f"-D{name}={value}" if value is not None else f"-U{name}"
            for name, value in settings.items()]


# What CMake reads from the environment only when it first configures a build folder, keeping
# it in the cache whatever a later run's environment says: the compilers ($CC, $CUDACXX, or
# those found on PATH), their flags and the generator.
_FIRST_CONFIGURE_ENVIRONMENT = ("CC", "CFLAGS", "CUDACXX", "CUDAFLAGS", "CUDAHOSTCXX",
                                "LDFLAGS", "CMAKE_GENERATOR")


def _first_configure_inputs() -> dict:
    return {"environment": {k: os.environ.get(k) for k in _FIRST_CONFIGURE_ENVIRONMENT},
            "cc": _fingerprint.c_compiler_identity(),
            "nvcc": _fingerprint.cuda_compiler_identity()}


def _forget_configuration_if_tools_changed(binary_dir: str) -> None:
    """Makes CMake configure binary_dir afresh when the compilers or the environment it read
    at its first configure there changed since (a new $CC, another nvcc): its cache would
    keep the old ones.  Records what this configure runs with."""
    record = os.path.join(binary_dir, "ufuncgen-configuration.json")
    current = _first_configure_inputs()
    try:
        with open(record, encoding="utf-8") as f:
            previous = json.load(f)
    except (OSError, ValueError):
        previous = None
    if previous != current:
        try:
            os.remove(os.path.join(binary_dir, "CMakeCache.txt"))
        except FileNotFoundError:
            pass
        shutil.rmtree(os.path.join(binary_dir, "CMakeFiles"), ignore_errors=True)
        try:
            os.makedirs(binary_dir, exist_ok=True)
            with open(record, "w", encoding="utf-8") as f:
                json.dump(current, f)
        except OSError as exc:
            raise BuildError(f"cannot write {exc.filename!r}: {exc.strerror}") from None


def _file_state(path: str) -> list | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _stamp_matches(stamp_path: str, key: str, outputs: list[str]) -> bool:
    """True when the last build had these inputs and its outputs are still as it left them
    (a deleted or replaced extension or stub is built again)."""
    try:
        with open(stamp_path, encoding="utf-8") as f:
            stamp = json.load(f)
    except (OSError, ValueError):
        return False
    states = [_file_state(p) for p in outputs]
    return stamp.get("key") == key and None not in states and stamp.get("outputs") == states


def _write_stamp(stamp_path: str, key: str, outputs: list[str]) -> None:
    with open(stamp_path, "w", encoding="utf-8") as f:
        json.dump({"key": key, "outputs": [_file_state(p) for p in outputs]}, f)


def cuda_arch_problem(cuda_arch: str) -> str | None:
    """Why `--cuda-arch` cannot take this spelling; None when it can."""
    if cuda_arch in ("none", "native") or all(
            re.fullmatch(r"[0-9]+(-real|-virtual)?", a) for a in cuda_arch.split(",")):
        return None
    return (f"expected 'none', 'native' or compute capabilities such as 90 or 75,80; "
            f"got {cuda_arch!r}")


def cuda_architectures(cuda_arch: str | None) -> str | None:
    """CMAKE_CUDA_ARCHITECTURES for `--cuda-arch` (None: ufuncgen.cmake's default, or no
    CUDA); BuildError for a spelling that is none of them."""
    problem = cuda_arch_problem(cuda_arch) if cuda_arch is not None else None
    if problem is not None:
        raise BuildError(f"--cuda-arch: {problem}")
    if cuda_arch is None or cuda_arch == "none":
        return None
    return ";".join(cuda_arch.split(","))


def tool_environment() -> dict[str, str]:
    """The environment for CMake and the compiler.  A process running under the sanitizers
    (tools/sanitize.sh preloads libasan) does not pass them on: those tools are not the code
    under test."""
    return {k: v for k, v in os.environ.items()
            if k not in ("LD_PRELOAD", "ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS")}


def _run(command: list[str], verbose: bool, sources: dict[str, list[str]] | None = None,
         module=None, aliases: dict[str, str] | None = None) -> None:
    """Runs a build step, its output captured unless verbose.  When it fails, the diagnostics
    located in the signature files (`sources`) are shown at the user's lines, or all of its
    output when there are none; when it succeeds, the warnings located there are shown."""
    if verbose:
        print("$ " + shlex.join(command), flush=True)
    result = subprocess.run(command, stdout=None if verbose else subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace",
                            env=tool_environment())
    located = (user_diagnostics(result.stdout or "", sources, module,
                                module.warnings if module is not None else (), aliases)
               if sources else [])
    if result.returncode != 0:
        if located:
            raise BuildError("compiling the generated code failed at the lines above "
                             "(-v shows the full build output)", "\n".join(located))
        if verbose:          # the output is on the screen already
            raise BuildError(f"{os.path.basename(command[0])} failed (exit {result.returncode})")
        # Not the whole log, which would bury what matters under make's and CMake's lines.
        summary = error_summary(result.stdout or "", module)
        where = ("its errors above are in none of the signature files"
                 if summary else "it printed no error message")
        raise BuildError(f"{os.path.basename(command[0])} failed (exit {result.returncode}): "
                         f"{where} (-v shows the full build output)", "\n".join(summary))
    if located:
        count = sum(1 for d in located if ": warning: " in d.split("\n")[0])
        summary = f"{count} compiler warning{'s' if count != 1 else ''} in the bodies."
        sys.stderr.write("\n".join(located + [summary]) + "\n")
