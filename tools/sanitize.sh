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

# The interpreter itself, not a wrapper script (pyenv's shims are bash scripts, which would
# run under ASan too).
py=$(python3 -c 'import sys; print(sys.executable)')

start=$(date +%s)
# shellcheck disable=SC2086
"$py" -m pip install -q --no-deps --upgrade --target "$site" ${UFUNCGEN_SANITIZE_PIP_ARGS:-} \
    -C cmake.define.UFUNCGEN_SANITIZE=ON -C cmake.define.UFUNCGEN_CUDA=OFF \
    -C build-dir="$work/build" -C install.strip=false .
echo "sanitize.sh: built in $(( $(date +%s) - start )) s"

export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
export PATH=$site/bin:$PATH      # its `ufuncgen` command, run by the tests' module builds
# The modules under test must be the sanitized ones.
"$py" - "$site" <<'PY'
import os, sys, ufuncgen
here = os.path.dirname(ufuncgen.__file__)
assert here.startswith(os.path.realpath(sys.argv[1])) or here.startswith(sys.argv[1]), here
assert os.path.exists(os.path.join(here, "cmake", "sanitize.cmake")), "not a sanitized build"
PY

export UFUNCGEN_DEVICE=sim
export PYTHONMALLOC=malloc
# allocator_may_return_null: tests that ask for impossible sizes expect MemoryError.
# intercept_tls_get_addr=0: GCC 12's runtime (and any before GCC 14 / LLVM 17) takes a
# dynamic-TLS block whose address is 16 mod 4096 for a glibc < 2.25 block with a header and
# reads a range from the two words before it; Python dlopens many modules with TLS, so now and
# then LeakSanitizer's tracer faults on that range at exit ("Tracer caught signal 11", no leak
# found).  Dynamic TLS blocks are heap blocks reached from the thread's DTV, so leak checking
# still follows pointers stored in them.
# Reports go to files (one per process, named by pid): pytest captures stderr, and a process
# that the sanitizer stops would take its report with it; subprocesses report there too.
reports=$work/reports
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:intercept_tls_get_addr=0:strict_init_order=1:check_initialization_order=1:log_path=$reports/asan
export LSAN_OPTIONS=suppressions=$root/tools/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan
if [ $# -eq 0 ]; then
    # Not the generator fuzzing: pure Python (hypothesis may load libcst, whose native
    # module leaks at exit), and the C it compiles is never loaded.
    set -- tests/examples tests/device tests/runtime tests/gen tests/leaks \
        --ignore=tests/gen/test_fuzz.py
fi
# Its own pytest folder and load() cache: .ci/run runs this beside the plain test run, and
# the two must not clean up or share each other's folders.
export UFUNCGEN_CACHE_DIR=$work/cache
start=$(date +%s)
status=0
# libasan for the Python processes only (not for `date` or the shell, whose own leaks
# LeakSanitizer would report); `ufuncgen build` drops it again for CMake and the compiler.
LD_PRELOAD=$libasan "$py" -m pytest -p no:cacheprovider -q --basetemp "$work/pytest" "$@" \
    || status=$?
echo "sanitize.sh: tests ran in $(( $(date +%s) - start )) s, exit $status"
if compgen -G "$reports/*" > /dev/null; then
    for report in "$reports"/*; do
        echo "=== $report"
        cat "$report"
    done
    echo "sanitize.sh: $(ls "$reports" | wc -l) sanitizer report(s), above" >&2
    exit 1
fi
echo "sanitize.sh: no sanitizer reports"
exit $status
