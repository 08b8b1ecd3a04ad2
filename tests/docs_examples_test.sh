#!/usr/bin/env bash
# Compiles (syntax and types only) every ```c block of docs/FUNCTIONS.md whose first
# line is a `/* path/to/file.c */` comment: complete examples must build against the
# public headers as they are today.
# Usage: tests/docs_examples_test.sh SOURCE_DIR
set -euo pipefail
src="$1"
work="$(mktemp -d /tmp/gamefn-docs-XXXXXX)"
trap 'rm -rf "$work"' EXIT
awk -v dir="$work" '
  /^```c$/ { inblock = 1; n++; file = sprintf("%s/example%02d.c", dir, n); first = 1; next }
  /^```$/  { inblock = 0; next }
  inblock  { if (first && $0 !~ /^\/\* [^ ]+\.c \*\/$/) { inblock = 0; system("rm -f " file); next }
             first = 0; print > file }
' "$src/docs/FUNCTIONS.md"
count=0
for f in "$work"/example*.c; do
  [ -e "$f" ] || continue
  name="$(head -1 "$f")"
  path="$(sed -E 's|^/\* ([^ ]+) \*/$|\1|' <<<"$name")"
  gcc -std=c11 -Wall -Wextra -Werror -fsyntax-only -I"$src/runtime/include" \
    -I"$src/$(dirname "$path")" "$f" ||
    { echo "FAIL: docs/FUNCTIONS.md example $name does not compile" >&2; exit 1; }
  count=$((count + 1))
done
[ "$count" -gt 0 ] || { echo "FAIL: no complete example found in docs/FUNCTIONS.md" >&2; exit 1; }
echo "docs_examples: $count complete example(s) compile"
