"""How many threads large host loops use: one setting for every ufuncgen module of a process.

    >>> import ufuncgen
    >>> ufuncgen.get_num_threads()        # UFUNCGEN_NUM_THREADS, OMP_NUM_THREADS or the CPUs
    2
    >>> ufuncgen.set_num_threads(1)       # every call single-threaded from now on

The setting and the thread pool live in `ufuncgen._core` (src/core/threads.c), which every
generated module shares, so it applies to `ufuncgen.examples` and to modules built with
`ufuncgen build` alike.  A call runs on several threads only when it is large (see
`parallel_threshold`), its function does not say `threads: false`, and its module was not built
with `--no-threads`; it then gives the same bits as on one thread.

Several Python threads calling at once share one pool: the first large call uses it, others
run on their own thread, and the helpers step back while other large calls are running, so the
process stays at about `get_num_threads()` busy threads (dask's threaded scheduler included).
dask.distributed's worker processes start with OMP_NUM_THREADS=1, hence one thread per call:
dask parallelizes across chunks there.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

__all__ = ["get_num_threads", "set_num_threads", "parallel_threshold", "ParallelThreshold"]


class ParallelThreshold(NamedTuple):
    """When a call may run on several threads."""
    elements: int   # elementwise ufuncs: at least this many elements in the call, and
    work: int       # gufuncs: outer iterations x the product of the core dimensions, and
    time_ns: int    # a timed sample says the rest takes at least this long on one thread


def get_num_threads() -> int:
    """The number of threads a large host loop may use (the calling thread included).

    The default is UFUNCGEN_NUM_THREADS, else the first number of OMP_NUM_THREADS, else the
    number of CPUs this process may run on (its affinity mask), read when ufuncgen is loaded.
    """
    from ._core import get_num_threads as get
    return get()


def set_num_threads(n: int) -> None:
    """Let large host loops of every ufuncgen module use up to `n` threads (1: no threads).

    `n` is an integer from 1 to 1024 (a Python or NumPy int): a bool, a float or a string is a
    TypeError, a number out of range a ValueError.  The setting is process-wide, not per thread, and takes effect with
    the next call.
    """
    from ._core import set_num_threads as set_
    if not isinstance(n, bool) and hasattr(type(n), "__index__"):
        n = operator.index(n)       # NumPy integers too
    set_(n)


def parallel_threshold() -> ParallelThreshold:
    """The sizes from which calls run on several threads (measured: benchmarks/threads.py)."""
    from ._core import _parallel_threshold
    return ParallelThreshold(*_parallel_threshold())
