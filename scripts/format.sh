#!/usr/bin/env bash
# Formats (or with --check, verifies) every tracked C file with the committed
# .clang-format. Exit 77 when clang-format is not installed (ctest: skipped).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
command -v clang-format >/dev/null || { echo "clang-format not installed" >&2; exit 77; }
mode="${1:-}"
bad=0
while IFS= read -r f; do
  if [ "$mode" = "--check" ]; then
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || { echo "not formatted: $f" >&2; bad=1; }
  else
    clang-format -i "$f"
  fi
done < <(git ls-files '*.c' '*.h')
exit $bad
