"""Pickling: a Function pickles as a reference to its module global, so unpickling in a
fresh process gives back that very object; copy/deepcopy give the object itself."""
import copy
import json
import pickle
import subprocess
import sys

import numpy as np
import pytest

import ufuncgen.examples as ex

from .conftest import FUNCTION_NAMES

CHECK_IN_FRESH_PROCESS = r"""
import json, pickle, sys
blobs = json.load(open(sys.argv[1]))
assert "ufuncgen.examples" not in sys.modules
results = {}
for key, hex_blob in blobs.items():
    name = key.split(":")[0]
    obj = pickle.loads(bytes.fromhex(hex_blob))
    import ufuncgen.examples
    results[key] = obj is getattr(ufuncgen.examples, name) and obj.__name__ == name
print(json.dumps(results))
"""


def run_fresh(blobs, tmp_path):
    path = tmp_path / "blobs.json"
    path.write_text(json.dumps({k: v.hex() for k, v in blobs.items()}))
    proc = subprocess.run([sys.executable, "-c", CHECK_IN_FRESH_PROCESS, str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def fresh_process_results(tmp_path_factory):
    blobs = {f"{name}:{protocol}": pickle.dumps(getattr(ex, name), protocol=protocol)
             for name in FUNCTION_NAMES
             for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1)}
    return run_fresh(blobs, tmp_path_factory.mktemp("pickles"))


@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_function_unpickles_to_the_same_module_global_in_a_fresh_process(
        name, protocol, fresh_process_results):
    assert fresh_process_results[f"{name}:{protocol}"] is True


@pytest.mark.parametrize("name", FUNCTION_NAMES)
def test_function_round_trips_to_itself_in_process_and_through_copy(name):
    fn = getattr(ex, name)
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(fn, protocol=protocol)) is fn
    assert copy.copy(fn) is fn
    assert copy.deepcopy(fn) is fn
    container = pickle.loads(pickle.dumps({"f": [fn, fn]}))
    assert container["f"][0] is fn and container["f"][1] is fn


def test_pickled_function_payload_does_not_embed_the_ufunc():
    blob = pickle.dumps(ex.gaussian_pdf, protocol=pickle.HIGHEST_PROTOCOL)
    assert b"ufuncgen.examples" in blob and b"gaussian_pdf" in blob
    assert len(blob) < 200


def test_cloudpickle_round_trip_in_a_fresh_process(tmp_path):
    cloudpickle = pytest.importorskip("cloudpickle")
    blobs = {f"{name}:cloudpickle": cloudpickle.dumps(getattr(ex, name))
             for name in FUNCTION_NAMES}
    for name in FUNCTION_NAMES:
        assert pickle.loads(cloudpickle.dumps(getattr(ex, name))) is getattr(ex, name)
    results = run_fresh(blobs, tmp_path)
    assert results == {key: True for key in blobs}


def test_cloudpickled_closure_using_a_function_runs_in_a_fresh_process(tmp_path):
    cloudpickle = pytest.importorskip("cloudpickle")
    hypot = ex.hypot

    def scaled(x):
        return 2 * hypot(x, x)

    path = tmp_path / "closure.pkl"
    path.write_bytes(cloudpickle.dumps(scaled))
    code = ("import pickle, sys, numpy as np; f = pickle.load(open(sys.argv[1], 'rb'));"
            "print(repr(float(f(np.float64(3.0)))))")
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert float(proc.stdout) == 2 * float(np.hypot(3.0, 3.0))
