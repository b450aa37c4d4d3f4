#!/usr/bin/env bash
# Builds examples/downstream (fastgeo, a package shipping ufuncgen-generated functions in its
# own wheel) the way its users would, against this checkout's ufuncgen, and runs its tests.
# Any failure exits non-zero.  `.ci/run` calls it.
#
#   tools/downstream.sh                   # host-only builds (the quickest); ~1.5-3 minutes
#   UFUNCGEN_CUDA=ON tools/downstream.sh  # both wheels with nvcc kernels (much slower)
#   tools/downstream.sh -k cross          # pytest arguments are passed on
#
# 1. ufuncgen's wheel from this checkout: pip wheel --no-deps (build isolation; the CMake
#    build directory build/downstream/build-ufuncgen is kept, so a second run is quicker).
# 2. A fresh virtual environment, build/downstream/venv: only pip in it.
# 3. fastgeo's wheel, built by that venv's pip with build isolation: its build requirement
#    `ufuncgen` is found in build/downstream/wheels (PIP_FIND_LINKS), the rest on PyPI.
#    Its CMake build directory is a new temporary one each time, as for a user.
# 4. fastgeo's wheel installed into the venv (its runtime dependency ufuncgen again from the
#    local wheel, numpy and the others from PyPI), and examples/downstream/tests run there.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=${UFUNCGEN_DOWNSTREAM_DIR:-$root/build/downstream}
cuda=${UFUNCGEN_CUDA:-OFF}
python=${PYTHON:-python3}

start=$(date +%s)
step() { echo "== downstream.sh [$(( $(date +%s) - start ))s] $*"; }

rm -rf "$work/venv" "$work/wheels"
mkdir -p "$work/wheels"

step "fresh virtual environment $work/venv"
"$python" -m venv "$work/venv"
venv_python=$work/venv/bin/python
"$venv_python" -m pip install -q --upgrade pip       # -C needs pip >= 23.1

step "ufuncgen wheel from $root (UFUNCGEN_CUDA=$cuda)"
"$venv_python" -m pip wheel -q --no-deps -w "$work/wheels" \
    -C cmake.define.UFUNCGEN_CUDA="$cuda" -C build-dir="$work/build-ufuncgen/{wheel_tag}" "$root"

step "fastgeo wheel, built against it"
export PIP_FIND_LINKS=$work/wheels
"$venv_python" -m pip wheel -q --no-deps -w "$work/wheels" \
    -C cmake.define.UFUNCGEN_CUDA="$cuda" "$root/examples/downstream"
ls -l "$work/wheels"

step "installing fastgeo into the fresh venv"
"$venv_python" -m pip install -q "$work"/wheels/fastgeo-*.whl pytest
# The ufuncgen the venv got must be this checkout's wheel, not one from an index: the files
# its RECORD lists must be the wheel's (same hashes).
"$venv_python" - "$work"/wheels/ufuncgen-*.whl <<'PY'
import csv, io, sys, zipfile
from importlib.metadata import distribution
wheel = zipfile.ZipFile(sys.argv[1])
record = next(n for n in wheel.namelist() if n.endswith(".dist-info/RECORD"))
built = {row[0]: row[1] for row in csv.reader(io.TextIOWrapper(wheel.open(record))) if row[1]}
installed = {row[0]: row[1] for row in csv.reader(io.StringIO(distribution("ufuncgen").read_text("RECORD")))}
differ = [path for path, digest in built.items() if installed.get(path) != digest]
assert not differ, f"the installed ufuncgen is not {sys.argv[1]}: {differ[:5]}"
print(f"ufuncgen installed from {sys.argv[1]} ({len(built)} files match)")
PY

step "fastgeo's tests"
# From the example's folder (its pyproject.toml holds the pytest settings); fastgeo is
# imported from the venv's site-packages: the folder has src/fastgeo, not fastgeo.
cd "$root/examples/downstream"
"$venv_python" -m pytest -p no:cacheprovider "$@"
step "passed"
