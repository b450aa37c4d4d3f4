"""The finder that imports, from load()'s cache, a module load() named by default.

A process that unpickles a generated function without having called load() (a dask worker, a
multiprocessing child) imports its module by name; `import ufuncgen` puts this finder last on
sys.meta_path so that the name is found in the cache.  It lives apart from loader.py because
every `import ufuncgen` installs it: it imports nothing that Python has not already imported,
and the loader (hashlib, tempfile, the build-input digest) only when a name has load()'s shape.
"""
from __future__ import annotations

import re
import sys

# A module name load() chose itself: `<stem>_<8 hex digits of the key>`.
DEFAULT_NAME = re.compile(r"[A-Za-z_]\w*_[0-9a-f]{8}", re.ASCII)


class CacheFinder:
    """A meta-path finder (importlib's protocol: find_spec) asked only about names nothing
    before it on sys.meta_path found."""

    def find_spec(self, fullname, path=None, target=None):
        if path is not None or not DEFAULT_NAME.fullmatch(fullname):
            return None
        from .loader import cached_spec
        return cached_spec(fullname)


def install() -> None:
    if not any(isinstance(f, CacheFinder) for f in sys.meta_path):
        sys.meta_path.append(CacheFinder())
