"""ufuncgen.load(), its cache, the %%ufuncgen cell magic, and `ufuncgen build`'s no-change
rebuild.

Every build here is host-only (cuda_arch="none") and every cache lives under tmp_path
(UFUNCGEN_CACHE_DIR).  Whether something was built is read from the cache entry's build.log
(one line per build) and from files' modification times, never from wall-clock time
(timings are in benchmarks/build.py).
"""
from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import ufuncgen
from ufuncgen import loader
from ufuncgen.build import BuildError
from ufuncgen.gen import SignatureError

SQUARE = """\
ufunc square(x) -> y
    doc: x squared.
    types: float64(float64)
{
    y = x * x;
}
"""

CUBE = SQUARE.replace("square", "cube").replace("x * x", "x * x * x")


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch):
    """load() adds cache entries to sys.path; each test starts from the session's sys.path."""
    monkeypatch.setattr(sys, "path", list(sys.path))


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory) -> Path:
    """One cache for the tests that only read a module built once (saves builds)."""
    return tmp_path_factory.mktemp("shared_cache")


@pytest.fixture
def cache(shared_cache, monkeypatch) -> Path:
    monkeypatch.setenv("UFUNCGEN_CACHE_DIR", str(shared_cache))
    return shared_cache


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("UFUNCGEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="module")
def square_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sources") / "square.ufunc"
    path.write_text(SQUARE)
    return path


def entry_of(module) -> Path:
    return Path(module.__file__).parent


def builds_logged(entry: Path) -> int:
    log = entry / "build.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def snapshot(folder: Path) -> dict[str, int]:
    """Every file under folder with its modification time."""
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns
            for p in folder.rglob("*") if p.is_file()}


def run_python(code: str, cache_dir: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "UFUNCGEN_CACHE_DIR": str(cache_dir)}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input=stdin,
                            capture_output=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    return result


def test_a_file_is_built_on_first_use_then_imported(cache, square_file):
    module = ufuncgen.load(square_file, cuda_arch="none")
    assert module.__name__.startswith("square_") and len(module.__name__) == len("square_") + 8
    np.testing.assert_array_equal(module.square(np.arange(4.0)), [0.0, 1.0, 4.0, 9.0])
    assert entry_of(module).parent == cache
    assert builds_logged(entry_of(module)) == 1
    assert (entry_of(module) / f"{module.__name__}.pyi").exists()
    assert not list(entry_of(module).glob("building-*")), "the staging folder is removed"


def test_loading_again_in_the_same_process_returns_the_same_module(cache, square_file):
    first = ufuncgen.load(str(square_file), cuda_arch="none")
    assert ufuncgen.load(square_file, cuda_arch="none") is first


def test_a_cached_module_loads_in_a_fresh_process_without_building(cache, square_file):
    module = ufuncgen.load(square_file, cuda_arch="none")
    before = snapshot(cache)
    result = run_python(f"""
        import sys, ufuncgen
        module = ufuncgen.load({str(square_file)!r}, cuda_arch="none")
        print(module.__name__, module.square(3.0))
        # A hit neither builds nor loads the generator or the build driver.
        print(sorted(m for m in ("jinja2", "ufuncgen.build", "ufuncgen.gen") if m in sys.modules))
        """, cache)
    assert result.stdout.decode().split("\n")[:2] == [f"{module.__name__} 9.0", "[]"]
    assert snapshot(cache) == before
    assert builds_logged(entry_of(module)) == 1


def test_a_pickled_function_loads_in_a_fresh_process_that_never_called_load(cache, square_file):
    module = ufuncgen.load(square_file, cuda_arch="none")
    result = run_python("""
        import pickle, sys
        square = pickle.loads(sys.stdin.buffer.read())
        print(square.__module__, square(4.0))
        """, cache, stdin=pickle.dumps(module.square))
    assert result.stdout.decode().strip() == f"{module.__name__} 16.0"


def test_importing_ufuncgen_and_a_built_module_leaves_the_loader_unimported(tmp_path):
    # The cache finder is installed by every `import ufuncgen`; the loader it falls back to
    # (hashing the build inputs, temporary folders, locks) only loads for a name of load()'s
    # shape that nothing else found.
    heavy = ("ufuncgen.loader", "ufuncgen._fingerprint", "hashlib", "tempfile", "jinja2")
    code = f"""
        import sys, numpy
        before = {{m for m in {heavy!r} if m in sys.modules}}
        import ufuncgen, ufuncgen.examples
        ufuncgen.examples.add(1.0, 2.0)
        print(sorted({{m for m in {heavy!r} if m in sys.modules}} - before))
        """
    assert run_python(code, tmp_path).stdout.decode().strip() == "[]"


def test_two_processes_loading_the_same_file_at_once_both_succeed_and_only_one_builds(
        fresh_cache, tmp_path):
    path = tmp_path / "cube.ufunc"
    path.write_text(CUBE)
    code = f"""
        import ufuncgen
        module = ufuncgen.load({str(path)!r}, cuda_arch="none")
        print(module.__file__, module.cube(2.0))
        """
    env = {**os.environ, "UFUNCGEN_CACHE_DIR": str(fresh_cache)}
    racers = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outputs = [racer.communicate(timeout=300) for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0], [e.decode() for _, e in outputs]
    lines = {out.decode().strip() for out, _ in outputs}
    assert len(lines) == 1 and lines.pop().endswith(" 8.0"), "both import the same module"
    entries = list(fresh_cache.iterdir())
    assert len(entries) == 1
    assert builds_logged(entries[0]) == 1


def test_a_changed_file_is_built_again_as_a_new_module(fresh_cache, tmp_path):
    path = tmp_path / "f.ufunc"
    path.write_text(SQUARE)
    old = ufuncgen.load(path, cuda_arch="none")
    path.write_text(SQUARE.replace("x * x", "x + x"))
    new = ufuncgen.load(path, cuda_arch="none")
    assert new.__name__ != old.__name__ and entry_of(new) != entry_of(old)
    assert (old.square(3.0), new.square(3.0)) == (9.0, 6.0), "the old module keeps working"
    assert builds_logged(entry_of(new)) == 1


def test_a_bad_file_raises_the_located_report_without_building(fresh_cache, tmp_path):
    path = tmp_path / "bad.ufunc"
    path.write_text(SQUARE.replace("types:", "typo:"))
    with pytest.raises(SignatureError) as error:
        ufuncgen.load(path, cuda_arch="none")
    assert f"{path}:3:5: error: unknown option 'typo'" in str(error.value)
    assert error.value.__context__ is None      # not "during handling of" the cache's stat
    assert not list(fresh_cache.rglob(f"*{loader.EXT_SUFFIX}"))


def test_a_body_the_compiler_refuses_raises_its_message_at_the_files_line(fresh_cache, tmp_path):
    path = tmp_path / "broken.ufunc"
    path.write_text(SQUARE.replace("x * x", "x +* "))
    with pytest.raises(BuildError) as error:
        ufuncgen.load(path, cuda_arch="none")
    message = str(error.value)
    assert message.startswith(f"{path}:5:"), message
    assert ": error: " in message and "CMake" not in message and "Building C object" not in message


def test_a_call_to_an_undeclared_function_raises_the_message_ufuncgen_build_prints(
        fresh_cache, tmp_path):
    """The golden case tests/golden/build_errors/undeclared_function: a typo (`expp`) is a build
    error at the file's line, not a module that fails to import (undefined symbol)."""
    golden = Path(__file__).resolve().parent / "golden" / "build_errors"
    path = tmp_path / "undeclared_function.ufunc"
    path.write_text((golden / "undeclared_function.ufunc").read_text())
    with pytest.raises(BuildError) as error:
        ufuncgen.load(path, cuda_arch="none")
    expected = (golden / "undeclared_function.err").read_text()
    expected = expected.replace("undeclared_function.ufunc:", f"{path}:")
    expected = expected.replace("ufuncgen: error: ", "").rstrip("\n")
    assert str(error.value).translate({0x2018: "'", 0x2019: "'"}) == expected
    assert not list(fresh_cache.rglob(f"*{loader.EXT_SUFFIX}"))


def test_a_cache_folder_make_cannot_take_is_refused_naming_the_character(tmp_path, monkeypatch,
                                                                        square_file):
    monkeypatch.setenv("UFUNCGEN_CACHE_DIR", str(tmp_path / "my:cache"))
    with pytest.raises(BuildError, match=r"^output directory '.*/my:cache/.*' has ':' in its "
                                         r"path, which CMake and make cannot handle"):
        ufuncgen.load(square_file, cuda_arch="none")
    assert not list((tmp_path / "my:cache").rglob(f"*{loader.EXT_SUFFIX}"))


def test_text_loads_from_a_current_folder_whose_name_make_cannot_take(
        fresh_cache, tmp_path, monkeypatch):
    """The current folder is only where messages show paths from: text given to load() lives in
    the cache, so a notebook in `data [2024]: draft` builds; its errors name the cache's file in
    full."""
    work = tmp_path / "data [2024]: draft"
    work.mkdir()
    monkeypatch.chdir(work)
    module = ufuncgen.load(SQUARE.replace("square", "from_odd_folder"), cuda_arch="none")
    x = np.array([-1.5, 0.0, 3.0])
    np.testing.assert_array_equal(module.from_odd_folder(x), x * x)
    with pytest.raises(BuildError) as error:
        ufuncgen.load(SQUARE.replace("x * x", "x * missing_name"), cuda_arch="none")
    first = str(error.value).translate({0x2018: "'", 0x2019: "'"}).splitlines()[0]
    path, line = first.split(":")[:2]
    assert Path(path).is_absolute() and Path(path).parent.parent == fresh_cache, first
    assert Path(path).read_text().splitlines()[int(line) - 1].strip() == "y = x * missing_name;"
    assert first.endswith(": error: 'missing_name' undeclared (first use in this function)")


@pytest.mark.parametrize("kept_bytes", [0, 1000])
def test_a_cached_module_the_loader_cannot_read_is_built_again(kept_bytes, fresh_cache,
                                                               square_file):
    """A cache entry's extension cut short (a disk that filled, a copy by hand) is built again
    by the next load(), not an ImportError on every load() from then on."""
    code = f"""
        import numpy as np, ufuncgen
        m = ufuncgen.load({str(square_file)!r}, cuda_arch="none")
        print(m.__file__, m.square(np.array([3.0, -0.5]))[1])
        """
    first = run_python(code, fresh_cache).stdout.decode().split()
    extension = Path(first[0])
    with open(extension, "r+b") as f:
        f.truncate(kept_bytes)
    second = run_python(code, fresh_cache).stdout.decode().split()
    assert second == [str(extension), "0.25"] and first == second
    assert extension.stat().st_size > kept_bytes
    assert builds_logged(extension.parent) == 2


def test_threads_loading_one_module_at_once_get_the_same_module_whose_functions_pickle(
        cache):
    """Each try is a fresh process (the module not yet imported) whose threads load it at once:
    one module object, or the functions of all but the last one in sys.modules do not pickle.
    Before the loader's import lock, about 1 try in 5 gave 2 to 8 module objects."""
    text = SQUARE.replace("square", "raced")
    ufuncgen.load(text, cuda_arch="none")                      # built once, outside the race
    code = f"""
        import pickle, sys, threading, ufuncgen
        sys.setswitchinterval(1e-6)
        modules = [None] * 8
        barrier = threading.Barrier(8)
        def load(i):
            barrier.wait()
            modules[i] = ufuncgen.load({text!r}, cuda_arch="none")
        threads = [threading.Thread(target=load, args=(i,)) for i in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        for m in modules: pickle.dumps(m.raced)
        print(len({{id(m) for m in modules}}))
        """
    for _ in range(15):
        assert run_python(code, cache).stdout == b"1\n"


def test_a_child_forked_during_a_build_loads_the_module_once_the_build_is_done(fresh_cache):
    """A fork pool started while a thread builds: the child's load() waits for the build, not
    for a lock its own inherited descriptor held (a flock) or a thread lock no thread of the
    child will release."""
    text = SQUARE.replace("square", "forked_during_build")
    code = f"""
        import os, sys, threading, time, ufuncgen
        cache = os.environ["UFUNCGEN_CACHE_DIR"]
        builder = threading.Thread(target=lambda: ufuncgen.load({text!r}, cuda_arch="none"))
        builder.start()
        while not any(d.startswith("building-") for _, dirs, _ in os.walk(cache) for d in dirs):
            time.sleep(0.01)
        pid = os.fork()
        if pid == 0:
            m = ufuncgen.load({text!r}, cuda_arch="none")
            os._exit(0 if m.forked_during_build(3.0) == 9.0 else 3)
        builder.join()
        finished = time.time() + 60
        while time.time() < finished:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                print("child", os.waitstatus_to_exitcode(status))
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            print("child still waiting 60 s after the build")
        """
    assert run_python(code, fresh_cache).stdout == b"child 0\n"


def test_text_is_built_as_a_module_named_by_its_hash(cache):
    module = ufuncgen.load(SQUARE.replace("square", "from_text"), cuda_arch="none")
    assert module.__name__.startswith("ufg_") and module.from_text(5.0) == 25.0
    assert (entry_of(module) / f"{module.__name__}.ufunc").read_text() == \
        SQUARE.replace("square", "from_text")


def test_two_different_texts_never_share_a_module_name():
    first = loader._entry(loader._read_source(SQUARE), None, None, True, "none")
    second = loader._entry(loader._read_source(CUBE), None, None, True, "none")
    assert first[0] != second[0] and first[1] != second[1]


def test_errors_in_text_point_at_the_text_written_into_the_cache(fresh_cache):
    with pytest.raises(SignatureError) as error:
        ufuncgen.load(SQUARE.replace("types:", "typo:"), cuda_arch="none")
    location = str(error.value).split(":3:5: error:")[0]
    assert location.endswith(".ufunc") and Path(location).resolve().is_relative_to(fresh_cache)


def test_a_name_that_is_not_an_identifier_is_refused(cache, square_file):
    with pytest.raises(ValueError, match=r"name: expected an ASCII Python identifier.*'a\.b'"):
        ufuncgen.load(square_file, "a.b", cuda_arch="none")


@pytest.mark.parametrize("name, why", [
    ("class", "it is a Python keyword, which an import statement cannot name"),
    ("numpy", "it would shadow NumPy, which the module imports"),
    ("csv", "it would shadow the standard library's module 'csv' for every import from the "
            "module's folder (NumPy's own imports included)"),
])
def test_a_name_that_is_a_keyword_or_shadows_a_module_numpy_needs_is_refused(
        fresh_cache, square_file, name, why):
    with pytest.raises(ValueError) as error:
        ufuncgen.load(square_file, name, cuda_arch="none")
    assert str(error.value) == f"load(): name: {name!r} is not a usable module name: {why}"
    assert not fresh_cache.exists()


def test_checking_a_name_does_not_load_the_generator():
    result = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys
        from ufuncgen import loader
        loader._check_name("fine")
        print(sorted(m for m in ("jinja2", "ufuncgen.gen.model", "ufuncgen.gen.parse")
                     if m in sys.modules))
        """)], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "[]\n"), result.stderr


def test_the_cell_magic_refuses_a_keyword_for_a_name():
    pytest.importorskip("IPython")
    from IPython.core.error import UsageError
    from ufuncgen.ipython import _arguments
    with pytest.raises(UsageError, match="not a keyword.*got 'class'"):
        _arguments("class --cuda-arch none")


def test_an_argument_that_is_neither_path_nor_text_is_refused():
    with pytest.raises(TypeError, match="path_or_text: expected .* got int"):
        ufuncgen.load(42)


def test_the_cell_magic_binds_the_module_and_its_functions(cache):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "ufuncgen")
    shell.run_cell_magic("ufuncgen", "cellmod --cuda-arch none", SQUARE.replace("square", "sq"))
    assert shell.user_ns["sq"](6.0) == 36.0
    assert shell.user_ns["cellmod"].__name__.startswith("cellmod_")
    assert shell.user_ns["sq"] is shell.user_ns["cellmod"].sq
    # `%%ufuncgen?` shows the magic's usage.
    magic = shell.find_cell_magic("ufuncgen")
    assert "%%ufuncgen fast [--cuda-arch none]" in (magic.__doc__ or "")


def test_a_cell_with_a_bad_signature_shows_the_checkers_messages_without_a_traceback(
        cache, capsys):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from ufuncgen.gen import SignatureError
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "ufuncgen")
    capsys.readouterr()
    result = shell.run_cell("%%ufuncgen bad --cuda-arch none\n"
                            + SQUARE.replace("float64(float64)", "flaot64(float64)"))
    out, err = capsys.readouterr()
    shown = out + err
    assert isinstance(result.error_in_exec, SignatureError)     # the cell failed
    assert "Traceback" not in shown and "File " not in shown, shown
    lines = shown.strip().splitlines()
    assert lines[0] == "SignatureError:"
    assert "error: unknown type 'flaot64'" in lines[1]
    assert lines[-1] == "1 error generated."


def test_a_misspelt_cuda_arch_in_the_cell_magic_is_a_usage_error():
    pytest.importorskip("IPython")
    from IPython.core.error import UsageError
    from ufuncgen.ipython import _arguments
    with pytest.raises(UsageError):
        _arguments("fast --cuda-arch 91x")


def test_an_unbalanced_quote_in_the_cell_magics_line_is_a_usage_error():
    # shlex's ValueError ("No closing quotation") came out as a traceback.
    pytest.importorskip("IPython")
    from IPython.core.error import UsageError
    from ufuncgen.ipython import _arguments
    with pytest.raises(UsageError, match=r"cannot be split into words: No closing quotation"):
        _arguments("'fast --cuda-arch none")


@pytest.mark.parametrize("cuda_arch", [90, ("75", "80"), b"none"])
def test_a_cuda_arch_that_is_not_a_str_is_refused_naming_it(fresh_cache, square_file, cuda_arch):
    # cuda_arch=90 raised "AttributeError: 'int' object has no attribute 'split'".
    with pytest.raises(TypeError, match=rf"load\(\): cuda_arch: expected a str .*; got "
                                        rf"{re.escape(repr(cuda_arch))}"):
        ufuncgen.load(square_file, cuda_arch=cuda_arch)
    assert not fresh_cache.exists()


@pytest.mark.parametrize("where", ["the folder", "a folder above it"])
def test_a_cache_folder_that_is_a_file_is_refused_naming_it(tmp_path, monkeypatch, square_file,
                                                             where):
    # os.makedirs's NotADirectoryError named only the entry inside it.
    (tmp_path / "file").write_text("")
    folder = tmp_path / "file" if where == "the folder" else tmp_path / "file" / "cache"
    monkeypatch.setenv("UFUNCGEN_CACHE_DIR", str(folder))
    with pytest.raises(NotADirectoryError, match=rf"load\(\): the cache folder "
                                                 rf"{re.escape(repr(str(folder)))} "
                                                 r"\(UFUNCGEN_CACHE_DIR\) (exists and is not a "
                                                 r"directory|cannot be created)"):
        ufuncgen.load(square_file, cuda_arch="none")


# --- `ufuncgen build` with nothing changed -------------------------------------------------

def ufuncgen_build(work: Path, *options: str) -> str:
    # This interpreter's ufuncgen, not whichever `ufuncgen` comes first on PATH.
    result = subprocess.run([sys.executable, "-m", "ufuncgen", "build", "square.ufunc", "--name", "square", "-o", "out",
                             "--cuda-arch", "none", "-v", *options],
                            cwd=work, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def cmake_commands(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("$ ") and "cmake" in line]


def test_an_unchanged_build_runs_no_cmake_and_writes_nothing(tmp_path):
    (tmp_path / "square.ufunc").write_text(SQUARE)
    first = ufuncgen_build(tmp_path)
    assert len(cmake_commands(first)) == 2, "-v shows the configure and build commands"
    before = snapshot(tmp_path)
    again = ufuncgen_build(tmp_path)
    assert cmake_commands(again) == [] and "up to date" in again
    assert snapshot(tmp_path) == before

    (tmp_path / "square.ufunc").write_text(SQUARE.replace("x * x", "x * x + 1.0"))
    changed = ufuncgen_build(tmp_path)
    assert len(cmake_commands(changed)) == 2, "a changed file is built again"
    (tmp_path / "out" / f"square{loader.EXT_SUFFIX}").unlink()
    assert len(cmake_commands(ufuncgen_build(tmp_path))) == 2, "a deleted module is built again"
