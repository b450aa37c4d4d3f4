"""Generated functions on dask arrays (python/ufuncgen/dask.py): lazily, with NumPy's results,
on the threaded scheduler and on a LocalCluster of worker processes; deterministic tokens;
a split core dimension never gives a wrong answer; a worker that cannot import the module
says which module."""
from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

import ufuncgen.dask
import ufuncgen.examples as ex

da = pytest.importorskip("dask.array")
import dask  # noqa: E402
from dask.base import tokenize  # noqa: E402

X = np.linspace(-4, 4, 1001)
V = np.random.default_rng(3).standard_normal((300, 3))


def cases():
    """(name, lazy result, NumPy's result) for a ufunc, a gufunc and a two-output function."""
    x = da.from_array(X, chunks=128)
    v = da.from_array(V, chunks=(64, 3))
    return [
        ("gaussian_pdf", ex.gaussian_pdf(x, 0.5, 1.5), ex.gaussian_pdf(X, 0.5, 1.5)),
        ("l2_norm", ex.l2_norm(v), ex.l2_norm(V)),
        ("sincos", ufuncgen.dask.apply(ex.sincos, x.astype(np.float32)),
         ex.sincos(X.astype(np.float32))),
    ]


# A chunk is a call of its own: where chunk boundaries are not multiples of 256 elements, an
# element at a chunk's end may go through libm's scalar sin/exp instead of libmvec's vector one
# (as it would in a short NumPy call), a difference within the documented vector math bound.
MAX_ULP = 8


def assert_same(actual, expected):
    actual = actual if isinstance(actual, tuple) else (actual,)
    expected = expected if isinstance(expected, tuple) else (expected,)
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_max_ulp(a, e, maxulp=MAX_ULP)


def test_a_ufunc_on_a_dask_array_is_lazy_and_computes_numpys_result():
    y = ex.gaussian_pdf(da.from_array(X, chunks=100), 0.0, 1.0)
    assert isinstance(y, da.Array) and y.dtype == np.float64 and y.numblocks == (11,)
    assert_same(y.compute(), ex.gaussian_pdf(X, 0.0, 1.0))


def test_a_gufunc_on_a_dask_array_goes_through_apply_gufunc():
    y = ex.inner1d(da.from_array(V, chunks=(50, 3)), V[0])
    assert isinstance(y, da.Array) and y.shape == (300,)
    assert_same(y.compute(), ex.inner1d(V, V[0]))


def test_a_gufunc_with_a_frozen_core_dimension_goes_through_ufuncgen_dask_apply():
    v = da.from_array(V, chunks=(50, 3))
    with pytest.raises(ValueError, match="dtype` inference failed"):
        ex.sq_norm3(v)     # dask infers the dtype on size-1 core dimensions, not (3)
    y = ufuncgen.dask.apply(ex.sq_norm3, v)
    assert isinstance(y, da.Array) and y.dtype == np.float64
    assert_same(y.compute(), ex.sq_norm3(V))


def test_a_gufunc_with_a_computed_output_dimension_goes_through_ufuncgen_dask_apply():
    points = np.random.default_rng(3).standard_normal((6, 5, 2))
    x = da.from_array(points, chunks=(3, 5, 2))
    with pytest.raises(KeyError, match="p"):
        ex.condensed_distances(x)     # dask cannot size `dim: p = n * (n - 1) / 2`
    y = ufuncgen.dask.apply(ex.condensed_distances, x)
    assert isinstance(y, da.Array) and y.shape == (6, 10)
    assert_same(y.compute(), ex.condensed_distances(points))
    # A size the caller gives is dask's to use.
    assert ufuncgen.dask.apply(ex.condensed_distances, x, output_sizes={"p": 10}).shape == (6, 10)


def test_a_two_output_function_has_a_working_path_through_ufuncgen_dask_apply():
    x = da.from_array(X.astype(np.float32), chunks=100)
    with pytest.raises(TypeError):
        ex.sincos(x)                       # dask dispatches several outputs only for NumPy's
    s, c = ufuncgen.dask.apply(ex.sincos, x)
    assert isinstance(s, da.Array) and s.dtype == c.dtype == np.float32
    assert_same((s.compute(), c.compute()), ex.sincos(X.astype(np.float32)))
    assert_same(ufuncgen.dask.apply(ex.gaussian_pdf, x, 0.0, 1.0).compute(),
                ex.gaussian_pdf(X.astype(np.float32), 0.0, 1.0))


def test_apply_rejects_what_is_not_a_ufunc_and_wrong_argument_counts():
    with pytest.raises(TypeError, match="needs a ufuncgen function or a numpy.ufunc"):
        ufuncgen.dask.apply(len, X)
    with pytest.raises(TypeError, match=r"gaussian_pdf\(\) takes 3 input\(s\), got 1"):
        ufuncgen.dask.apply(ex.gaussian_pdf, X)


def test_a_split_core_dimension_is_dasks_error_or_rechunked_never_wrong():
    split = da.from_array(V, chunks=(100, 2))
    with pytest.raises(ValueError, match="Core dimension .* consists of multiple chunks"):
        ex.l2_norm(split)
    with pytest.raises(ValueError, match="multiple chunks"):
        ufuncgen.dask.apply(ex.l2_norm, split)
    assert_same(ufuncgen.dask.apply(ex.l2_norm, split, allow_rechunk=True).compute(),
                ex.l2_norm(V))


def test_the_threaded_scheduler_gives_numpys_results():
    names, lazy, expected = zip(*cases())
    results = dask.compute(*lazy, scheduler="threads")
    for name, got, want in zip(names, results, expected):
        assert_same(got, want)


def test_tokens_are_deterministic_in_a_process_and_across_processes():
    tokens = [tokenize(ex.gaussian_pdf), tokenize(ex.gaussian_pdf.ufunc), tokenize(ex.sincos)]
    assert tokens == [tokenize(ex.gaussian_pdf), tokenize(ex.gaussian_pdf.ufunc),
                      tokenize(ex.sincos)]
    assert tokenize(ex.gaussian_pdf) != tokenize(ex.add)
    code = ("import ufuncgen.examples as ex; from dask.base import tokenize; "
            "print(tokenize(ex.gaussian_pdf), tokenize(ex.gaussian_pdf.ufunc), tokenize(ex.sincos))")
    for _ in range(2):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                timeout=60)
        assert result.returncode == 0, result.stderr
        assert result.stdout.split() == tokens


def test_the_bare_ufunc_pickles_by_reference_and_numpys_own_still_do():
    for protocol in range(0, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(ex.sincos.ufunc, protocol)) is ex.sincos.ufunc
        assert pickle.loads(pickle.dumps(np.add, protocol)) is np.add
    assert ex.sincos.ufunc.__module__ == "ufuncgen.examples"
    assert ex.sincos.ufunc.__qualname__ == "sincos.ufunc"
    code = ("import pickle, sys; u = pickle.loads(bytes.fromhex(sys.argv[1])); "
            "import ufuncgen.examples as ex; print(u is ex.l2_norm.ufunc)")
    result = subprocess.run([sys.executable, "-c", code, pickle.dumps(ex.l2_norm.ufunc).hex()],
                            capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "True", result.stderr


# --------------------------------------------------------------------------- worker processes

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster:
        with distributed.Client(cluster) as client:
            yield client


def test_a_local_cluster_of_worker_processes_gives_numpys_results(client):
    names, lazy, expected = zip(*cases())
    results = client.compute(list(lazy), sync=True)
    for name, got, want in zip(names, results, expected):
        assert_same(got, want)
    # Workers start with OMP_NUM_THREADS=1 (dask's default): one thread per call there.
    assert client.run(lambda: __import__("ufuncgen").get_num_threads()) == {
        w: 1 for w in client.scheduler_info()["workers"]}


def test_a_worker_that_cannot_import_the_module_names_it(client, probe_module_dir, monkeypatch):
    # On sys.path here only, after the workers started: they cannot import ufg_probe.
    monkeypatch.syspath_prepend(str(probe_module_dir))
    import ufg_probe
    y = ufg_probe.scaled(da.from_array(X, chunks=500))
    assert_same(y.compute(scheduler="threads"), 3 * X + 1)
    with pytest.raises(ImportError, match="cannot import module 'ufg_probe'"):
        client.compute(y, sync=True)


def test_a_worker_that_cannot_import_the_module_of_a_mapped_function_names_it(
        client, probe_module_dir, monkeypatch):
    # The Function object itself in the graph (map_blocks), not only its bare ufunc.
    monkeypatch.syspath_prepend(str(probe_module_dir))
    import ufg_probe
    y = da.from_array(X, chunks=500).map_blocks(ufg_probe.scaled, dtype=X.dtype)
    assert_same(y.compute(scheduler="threads"), 3 * X + 1)
    with pytest.raises(ImportError, match="cannot import module 'ufg_probe'"):
        client.compute(y, sync=True)



def numpy_with_dtype(name, *operands, dtype):
    """NumPy's own function for each example, called with dtype=: the reference."""
    if name == "sincos":
        return np.sin(*operands, dtype=dtype), np.cos(*operands, dtype=dtype)
    return {"hypot": np.hypot, "inner1d": np.vecdot}[name](*operands, dtype=dtype)


@pytest.mark.parametrize("name, operands", [
    ("hypot", (X, 1.5)),                 # one output: the chunks must compute the dtype too
    ("inner1d", (V, V)),
    ("sincos", (X,)),                    # several outputs: dtype= fixes each of them
])
def test_apply_with_dtype_computes_the_dtype_numpy_gives_and_the_graph_announces(name, operands):
    lazy = [da.from_array(o, chunks=100) if isinstance(o, np.ndarray) else o for o in operands]
    got = ufuncgen.dask.apply(getattr(ex, name), *lazy, dtype=np.float32)
    want = numpy_with_dtype(name, *operands, dtype=np.float32)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    assert [g.dtype for g in got] == [w.dtype for w in want] == [np.float32] * len(want)
    assert_same(dask.compute(*got), want)


@pytest.mark.parametrize("name, operands", [
    ("add", (np.arange(10), True)),              # a Python bool is NumPy's bool_
    ("add", (X, False)),
    ("hypot", ([3.0, 5.0, 8.0], 4.0)),           # a list is an array, as NumPy takes it
    ("inner1d", (np.abs(V), [1.0, 2.0, 3.0])),   # no cancellation: np.vecdot sums otherwise
    ("add", ((1, 2, 3), np.arange(3))),
])
def test_apply_takes_python_bools_and_sequences_as_numpy_does(name, operands):
    lazy = [da.from_array(o, chunks=4) if isinstance(o, np.ndarray) else o for o in operands]
    got = ufuncgen.dask.apply(getattr(ex, name), *lazy)
    want = {"add": np.add, "hypot": np.hypot, "inner1d": np.vecdot}[name](*operands)
    assert got.dtype == want.dtype
    assert_same(got.compute(), want)
