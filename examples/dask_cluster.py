"""A seed ufunc and a seed gufunc on a chunked dask array, on a LocalCluster of worker processes.

    python examples/dask_cluster.py                # 1e8 elements (800 MB of float64)
    python examples/dask_cluster.py --size 1e7     # smaller

Applies gaussian_pdf (elementwise) and l2_norm (a gufunc over rows of 100) to the same array,
checks both against a single-process NumPy call, and prints the time for 1, 2 and all workers
(one thread each: dask parallelizes across chunks; workers start with OMP_NUM_THREADS=1, so
ufuncgen uses one thread per call there).  Needs dask[array] and distributed.
"""
import argparse
import os
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=float, default=1e8, help="elements (default 1e8)")
    parser.add_argument("--chunk", type=float, default=6.5e6, help="elements per chunk (rounded to 6400s)")
    args = parser.parse_args()
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    import ufuncgen.examples as ex

    n = int(args.size) // 100 * 100
    chunk_rows = max(64, int(args.chunk) // 100 // 64 * 64)   # chunks: multiples of 256 elements
    cpus = len(os.sched_getaffinity(0))
    print(f"{n:,} float64 elements in chunks of {chunk_rows * 100:,}; {cpus} CPUs")
    expected = None
    for workers in sorted({1, min(2, cpus), cpus}):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            # The data is made on the workers (the same for every cluster: a seeded generator
            # per chunk) and the reference once, in this process, with plain NumPy calls.
            dx = da.random.default_rng(0).standard_normal(n, chunks=chunk_rows * 100)
            dx = client.persist(dx)
            wait(dx)
            if expected is None:
                x = dx.compute()
                expected = ex.gaussian_pdf(x, 0.5, 2.0), ex.l2_norm(x.reshape(-1, 100))
                del x
            start = time.perf_counter()
            pdf = ex.gaussian_pdf(dx, 0.5, 2.0)
            norm = ex.l2_norm(dx.reshape(-1, 100).rechunk((chunk_rows, 100)))
            pdf, norm = client.persist([pdf, norm])
            wait([pdf, norm])                         # computed where the chunks live
            seconds = time.perf_counter() - start
            got_pdf, got_norm = client.compute([pdf, norm], sync=True)
        # Chunk boundaries are multiples of 256 elements, so the bits are those of one call.
        assert np.array_equal(got_pdf, expected[0]), "gaussian_pdf differs from NumPy's"
        assert np.array_equal(got_norm, expected[1]), "l2_norm differs from NumPy's"
        print(f"{workers} worker(s): {seconds:.2f} s, results equal to one NumPy process")


if __name__ == "__main__":
    main()
