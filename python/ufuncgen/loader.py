"""`ufuncgen.load()`: a signature file, or its text, in; the imported module out, built on
first use and cached.

The cache is content-addressed: an entry's key hashes the signature text, the module name and
everything `_fingerprint.build_inputs` lists (ufuncgen's generator, templates, headers and
CMake code; the compilers; the options; NumPy's ABI; Python's extension suffix), so a change to
any of them builds a new entry and an unchanged file finds its module.  A hit only hashes,
stats and imports: the generator (Jinja2), CMake and the compilers are not touched.

An entry is a folder `<cache>/<module>-<key16>/` holding the extension, its stub, a `lock`
file, `build.log` (one line per build) and, for text input, the text as `<module>.ufunc`.
Several processes, and threads, may load the same file at once: the build runs under an
exclusive POSIX record lock (`lockf`) on the entry's lock file, which a forked child does not
inherit (a `flock` belongs to the open file, which the child shares: it held the lock as long
as the child lived), and a lock of this process's threads, into a temporary folder, and the
extension is moved into place last with os.replace, so no process ever imports a half-written
module; a process that waited for the lock finds the finished module and does not build again.
Threads that import the same module get the same module object.
"""
from __future__ import annotations

import fcntl
import glob
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

from . import _fingerprint
from ._fingerprint import EXT_SUFFIX


def cache_dir() -> str:
    """$UFUNCGEN_CACHE_DIR, else the per-user cache ($XDG_CACHE_HOME/ufuncgen or
    ~/.cache/ufuncgen)."""
    chosen = os.environ.get("UFUNCGEN_CACHE_DIR")
    if chosen:
        return os.path.abspath(os.path.expanduser(chosen))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "ufuncgen")


@dataclass(frozen=True)
class _Source:
    data: bytes            # the signature text as bytes: what the key hashes
    path: str | None       # the user's file; None for text given directly
    stem: str              # what the default module name starts with


def _is_text(value: str) -> bool:
    # No file name holds a newline, and none of a signature file's definitions lacks a `{`.
    return "\n" in value or "{" in value


def _read_source(path_or_text) -> _Source:
    if isinstance(path_or_text, str) and _is_text(path_or_text):
        return _Source(path_or_text.encode("utf-8", "surrogatepass"), None, "ufg")
    if not isinstance(path_or_text, (str, os.PathLike)):
        raise TypeError("load(): path_or_text: expected a signature file's path (str or "
                        "os.PathLike) or its text (a str holding a newline or '{'); got "
                        f"{type(path_or_text).__name__}")
    path = os.fsdecode(os.fspath(path_or_text))
    with open(path, "rb") as f:        # FileNotFoundError names the path
        data = f.read()
    return _Source(data, path, os.path.splitext(os.path.basename(path))[0])


def _identifier(stem: str) -> str:
    """A file stem as the start of a module name (`my-fns` → `my_fns`, `2d` → `ufg_2d`)."""
    name = re.sub(r"\W", "_", stem, flags=re.ASCII)
    return name if name[:1].isalpha() or name[:1] == "_" else "ufg_" + name


def _check_name(name) -> None:
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise ValueError("load(): name: expected an ASCII Python identifier (no dots: the "
                         f"module lives at the cache's top level); got {name!r}")
    from .gen.names import module_name_error     # not the generator: gen/names.py alone
    problem = module_name_error(name)
    if problem is not None:
        raise ValueError(f"load(): name: {problem}")


def _entry(source: _Source, name: str | None, stem: str | None, threads: bool,
           cuda_arch: str | None) -> tuple[str, str]:
    """(module name, entry folder) for this source and these options."""
    stem = _identifier(stem or source.stem)
    key = _fingerprint.digest({
        "source": hashlib.sha256(source.data).hexdigest(), "name": name, "stem": stem,
        **_fingerprint.build_inputs(threads=threads, cuda_arch=cuda_arch)})
    module = name or f"{stem}_{key[:8]}"
    return module, os.path.join(cache_dir(), f"{module}-{key[:16]}")


def load(path_or_text, name: str | None = None, *, cuda_arch: str | None = None,
         threads: bool = True, verbose: bool = False, _stem: str | None = None):
    """Builds the module on first use (or when the file, ufuncgen, the compiler, NumPy or
    an option changed), then imports and returns it.

    path_or_text: a signature file's path, or the text of one (a str holding a newline or
    `{`).  name: the module's name; by default the file's stem (`ufg` for text) and 8 hex
    digits of the cache key, so that two different texts never share a name.  cuda_arch and
    threads: as `ufuncgen build --cuda-arch` and `--no-threads`.  verbose: show the build's
    CMake commands and output.

    The entry's folder is added to sys.path, so the module imports by name afterwards
    (pickled functions refer to it by module and name); in another process, the same load()
    call, or just `import ufuncgen` for a default name (ufuncgen then finds default names in
    the cache), makes it importable there.

    Raises SignatureError (a bad file: `file:line:col: error:` messages as `ufuncgen check`
    gives) or BuildError (the compilers' messages at the file's lines).
    """
    if name is not None:
        _check_name(name)
    if cuda_arch is not None and not isinstance(cuda_arch, str):
        raise TypeError("load(): cuda_arch: expected a str ('none', 'native', or compute "
                        f"capabilities such as '90' or '75,80'); got {cuda_arch!r}")
    source = _read_source(path_or_text)
    module, entry = _entry(source, name, _stem, threads, cuda_arch)
    extension = os.path.join(entry, module + EXT_SUFFIX)
    try:
        cached = os.stat(extension)       # the extension is moved in last: present = complete
    except (FileNotFoundError, NotADirectoryError):     # a cache folder that is a file: named
        cached = None
    if cached is None:                    # built outside the except: no chained stat error
        _check_cache_dir()
        _build_locked(source, module, entry, threads, cuda_arch, verbose)
        return _import(module, entry, extension)
    if _intact(extension, cached.st_size):
        try:
            return _import(module, entry, extension)
        except ImportError as exc:
            if exc.path != extension:      # not the loader's: the module's own import failed
                raise
    # The cached file was cut short since it was moved in whole (a disk that filled, a copy by
    # hand: mapped, such a file may kill the process with SIGBUS, so its size is checked first)
    # or the dynamic loader cannot read it: built once more, and a build that does not load
    # either raises.
    _build_locked(source, module, entry, threads, cuda_arch, verbose, unreadable=cached)
    return _import(module, entry, extension)


def _size_path(extension: str) -> str:
    return extension + ".size"


def _intact(extension: str, size: int | None = None) -> bool:
    """Whether the extension is there (of `size` bytes, when its stat was taken already) at
    the size it was built with, as far as that was recorded."""
    if size is None:
        try:
            size = os.path.getsize(extension)
        except OSError:
            return False
    return _size_recorded(extension) in (None, size)


def _size_recorded(extension: str) -> int | None:
    """The extension's size when it was built, or None where no record was kept."""
    try:
        with open(_size_path(extension), encoding="ascii") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def _check_cache_dir() -> None:
    """NotADirectoryError naming the cache folder and where it came from, where os.makedirs
    would name only the entry inside it."""
    from .gen.load import directory_problem      # on a miss only, as the generator is
    folder = cache_dir()
    problem = directory_problem(folder)
    if problem is not None:
        where = ("UFUNCGEN_CACHE_DIR" if os.environ.get("UFUNCGEN_CACHE_DIR")
                 else "the default cache folder")
        raise NotADirectoryError(f"load(): the cache folder {folder!r} ({where}) {problem}")


def _build_locked(source: _Source, module: str, entry: str, threads: bool,
                  cuda_arch: str | None, verbose: bool,
                  unreadable: os.stat_result | None = None) -> None:
    """Builds the entry's extension unless it is there; `unreadable`: the stat of a file there
    that failed to load, replaced unless another process already replaced it."""
    os.makedirs(entry, exist_ok=True)
    extension = os.path.join(entry, module + EXT_SUFFIX)
    # A record lock is the process's: this process's threads take turns by a lock of its own.
    with _entry_lock(entry), open(os.path.join(entry, "lock"), "a") as lock:
        fcntl.lockf(lock, fcntl.LOCK_EX)           # released when the file closes
        if unreadable is not None and _same_file(extension, unreadable):
            os.remove(extension)
        if os.path.exists(extension):
            return                                 # another process built it while we waited
        # Under the lock nobody else builds here: a staging folder left is from a build that
        # was killed, and only takes space.
        for stale in glob.glob(os.path.join(glob.escape(entry), "building-*")):
            shutil.rmtree(stale, ignore_errors=True)
        _build_into(source, module, entry, threads, cuda_arch, verbose)


_entry_locks: dict[str, threading.Lock] = {}
_entry_locks_guard = threading.Lock()
# Imports of load()'s modules, one at a time: the check of sys.modules, the module's
# execution (which imports NumPy, letting other threads run) and its entry there.
_import_lock = threading.RLock()


def _entry_lock(entry: str) -> threading.Lock:
    with _entry_locks_guard:
        return _entry_locks.setdefault(entry, threading.Lock())


def _fresh_locks_in_child() -> None:
    """A forked child has only the thread that forked: a lock another thread held (a build
    in progress) would never be released there."""
    global _entry_locks_guard, _import_lock
    _entry_locks.clear()
    _entry_locks_guard = threading.Lock()
    _import_lock = threading.RLock()


os.register_at_fork(after_in_child=_fresh_locks_in_child)


def _same_file(path: str, seen: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    return (now.st_ino, now.st_size, now.st_mtime_ns) == (seen.st_ino, seen.st_size,
                                                         seen.st_mtime_ns)


def _build_into(source: _Source, module: str, entry: str, threads: bool,
                cuda_arch: str | None, verbose: bool) -> None:
    from .build import BuildError, build          # the generator and CMake: only on a miss

    staging = tempfile.mkdtemp(prefix="building-", dir=entry)
    try:
        signature = source.path or _write_text(source.data, os.path.join(entry, module + ".ufunc"))
        if verbose:
            print(f"ufuncgen: building {module} from {signature} in {entry}", flush=True)
        try:
            built = build([signature], module, staging, build_dir=os.path.join(staging, "build"),
                          verbose=verbose, threads=threads, cuda_arch=cuda_arch)
        except BuildError as exc:
            raise BuildError(exc.format()) from None   # the located report in the message
        os.replace(os.path.join(staging, module + ".pyi"), os.path.join(entry, module + ".pyi"))
        extension = os.path.join(entry, module + EXT_SUFFIX)
        _write_text(str(os.path.getsize(built)).encode(), _size_path(extension))
        os.replace(built, extension)       # last: now complete
        with open(os.path.join(entry, "build.log"), "a", encoding="utf-8") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pid {os.getpid()} built "
                      f"{module} from {signature}\n")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_text(data: bytes, path: str) -> str:
    """A file of the entry (the text given to load(), so that messages point at a file the
    user can open; the extension's size), written whole, then moved into place."""
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)
    return path


def _import(module: str, entry: str, extension: str):
    with _import_lock:
        return _import_once(module, entry, extension)


def _import_once(module: str, entry: str, extension: str):
    if entry not in sys.path:
        sys.path.append(entry)
    loaded = sys.modules.get(module)
    if loaded is not None:
        if os.path.dirname(os.path.abspath(getattr(loaded, "__file__", "") or "")) == entry:
            return loaded
        raise ImportError(f"load(): name: a different module named {module!r} is already "
                          f"imported (from {getattr(loaded, '__file__', None)}); choose "
                          "another name", name=module)
    # From the entry's file itself: a module of the same name elsewhere on sys.path must not
    # be picked instead.
    spec = importlib.util.spec_from_file_location(module, extension)
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded
    try:
        spec.loader.exec_module(loaded)
    except BaseException:
        del sys.modules[module]
        raise
    return loaded


def cached_spec(fullname: str):
    """The import spec of `fullname`, a name load() chose itself, from the newest cache entry
    that holds it, or None (ufuncgen._cache_finder asks)."""
    pattern = os.path.join(glob.escape(cache_dir()), glob.escape(fullname) + "-*",
                           glob.escape(fullname + EXT_SUFFIX))
    found = [path for path in glob.glob(pattern) if _intact(path)]
    if not found:
        return None
    return importlib.util.spec_from_file_location(fullname, max(found, key=os.path.getmtime))
