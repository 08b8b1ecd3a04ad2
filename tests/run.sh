#!/usr/bin/env bash
# The whole test suite: install what is missing, build, run every test (unit + integration).
# Usage: tests/run.sh [--sanitize address|thread] [ctest args...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"

sanitize=""
if [ "${1:-}" = "--sanitize" ]; then
  sanitize="$2"
  shift 2
fi
dir="$root/build"
if [ -n "$sanitize" ]; then
  dir="$root/build-$sanitize"
fi
"$root/scripts/build.sh" "$dir" -DGAMEFN_SANITIZE="$sanitize"

# tests/asan.supp: one read inside nats.c 3.4.1 (docs/NATS-FACTS.md §8).
# allow_user_segv_handler=0: ASan keeps SIGSEGV/SIGBUS. cmocka's handler would take them,
# and for a crash on a thread not running a test (a nats.c thread) it exits with status
# 255 and prints nothing (docs/NATS-FACTS.md §4).
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allow_user_segv_handler=0:suppressions=$root/tests/asan.supp}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
cd "$dir"
ctest --output-on-failure -j 2 "$@"
