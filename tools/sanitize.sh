#!/usr/bin/env bash
# Runs the core test suite with every extension built under AddressSanitizer (+ LeakSanitizer)
# and UndefinedBehaviorSanitizer; any report fails the run.  `.ci/run` calls it.
#
#   tools/sanitize.sh                    # build into build/sanitize, run the core tests
#   tools/sanitize.sh tests/device -k x  # other pytest arguments instead of the core tests
#
# The build: pip installs the project (with build isolation, like a user's install) into its
# own --target directory, build/sanitize/site, with -DUFUNCGEN_SANITIZE=ON -DUFUNCGEN_CUDA=OFF:
# _core, _device, ufuncgen.examples and every module the tests build with `ufuncgen build`
# (a sanitized install builds users' modules sanitized) carry -fsanitize=address,undefined
# -fno-sanitize-recover=undefined.  Set UFUNCGEN_SANITIZE_PIP_ARGS=--no-build-isolation to
# build offline against the build requirements already installed.
#
# The run: Python is not built with ASan, so libasan is preloaded; PYTHONMALLOC=malloc sends
# Python's small objects through malloc, where ASan sees overruns and LeakSanitizer can
# follow pointers (pymalloc's arenas would hide both).  UBSan halts at the first report.
# LeakSanitizer checks every Python process at exit; tools/lsan.supp suppresses only the
# interpreter's own allocations that it never frees at exit (each entry says why).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=${UFUNCGEN_SANITIZE_DIR:-$root/build/sanitize}
site=$work/site
cc=${CC:-gcc}

libasan=$("$cc" -print-file-name=libasan.so)
if [ ! -e "$libasan" ]; then
    echo "sanitize.sh: $cc has no libasan.so (install the compiler's ASan runtime)" >&2
    exit 2
fi

start=$(date +%s)
# shellcheck disable=SC2086
python3 -m pip install -q --no-deps --upgrade --target "$site" ${UFUNCGEN_SANITIZE_PIP_ARGS:-} \
    -C cmake.define.UFUNCGEN_SANITIZE=ON -C cmake.define.UFUNCGEN_CUDA=OFF \
    -C build-dir="$work/build" .
echo "sanitize.sh: built in $(( $(date +%s) - start )) s"

export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
# The modules under test must be the sanitized ones.
python3 - "$site" <<'PY'
import os, sys, ufuncgen
here = os.path.dirname(ufuncgen.__file__)
assert here.startswith(os.path.realpath(sys.argv[1])) or here.startswith(sys.argv[1]), here
assert os.path.exists(os.path.join(here, "cmake", "sanitize.cmake")), "not a sanitized build"
PY

export UFUNCGEN_DEVICE=sim
export PYTHONMALLOC=malloc
export LD_PRELOAD=$libasan
# allocator_may_return_null: tests that ask for impossible sizes expect MemoryError.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:detect_stack_use_after_return=0:strict_init_order=1:check_initialization_order=1
export LSAN_OPTIONS=suppressions=$root/tools/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if [ $# -eq 0 ]; then
    set -- tests/examples tests/device tests/runtime tests/gen tests/leaks
fi
start=$(date +%s)
status=0
python3 -m pytest -p no:cacheprovider -q "$@" || status=$?
unset LD_PRELOAD
echo "sanitize.sh: tests ran in $(( $(date +%s) - start )) s, exit $status"
exit $status
