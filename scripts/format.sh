#!/usr/bin/env bash
# Formats (or with --check, verifies) every tracked C file with the committed
# .clang-format. Exit 77 when clang-format is not installed (ctest: skipped).
# Files go to clang-format a hundred at a time: each clang-format process
# spends most of a second loading LLVM, so one process per file took over two
# minutes on a loaded CI machine (and timed out) where batches take seconds.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
command -v clang-format >/dev/null || { echo "clang-format not installed" >&2; exit 77; }
if [ "${1:-}" != "--check" ]; then
  git ls-files -z '*.c' '*.h' | xargs -0 -n 100 clang-format -i
  exit 0
fi
report="$(mktemp)"
trap 'rm -f "$report"' EXIT
if git ls-files -z '*.c' '*.h' | xargs -0 -n 100 clang-format --dry-run --Werror 2>"$report"; then
  exit 0
fi
# clang-format names each offending file as "path:line:col: error: ...".
grep -o '^[^:]*:[0-9]*:[0-9]*: error' "$report" | cut -d: -f1 | sort -u |
  sed 's/^/not formatted: /' >&2
grep -q ': error' "$report" || cat "$report" >&2
exit 1
