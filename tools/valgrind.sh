#!/usr/bin/env bash
# valgrind memcheck over a short run of the host path (tools/valgrind_host.py: every seed
# function, each dtype, strided/broadcast/empty inputs, out=, where=, reductions, the thread
# pool, a few simulator calls), against the ufuncgen that python3 imports (an ordinary,
# unsanitized build: set PYTHONPATH to choose one).  Any memcheck error fails the run.
#
#   tools/valgrind.sh
#
# Python's own allocator (pymalloc) stays on: with PYTHONMALLOC=malloc, CPython 3.11's
# PyLong_FromString/maybe_small_long reads a digit memcheck considers uninitialised, and the
# taint then spreads to every use of the small int it returns (35 contexts, none ours).
# Memory that matters here (NumPy's data buffers, the simulator's device memory, DLPack
# exports, ufuncgen's malloc'd tables) comes from malloc and is checked either way.
# Leaks are LeakSanitizer's job (tools/sanitize.sh), so --leak-check=no here.
# tools/valgrind.supp holds the suppressions (each entry says why); --gen-suppressions=all
# prints an entry for any new report.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind > /dev/null || { echo "valgrind.sh: valgrind is not installed" >&2; exit 2; }
py=$(python3 -c 'import sys; print(sys.executable)')
start=$(date +%s)
UFUNCGEN_DEVICE=sim valgrind --tool=memcheck --error-exitcode=99 \
    --leak-check=no --track-origins=yes --num-callers=30 --gen-suppressions=all \
    --suppressions=tools/valgrind.supp \
    "$py" tools/valgrind_host.py
echo "valgrind.sh: no memcheck errors ($(( $(date +%s) - start )) s)"
