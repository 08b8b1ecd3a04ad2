#!/usr/bin/env bash
# Checks the runtime's naming convention on the built static libraries (libuv's):
# every exported symbol is either public, `gf_` and declared in a public header
# (runtime/include/gamefn/*.h, runtime/gameserver/include/gamefn/*.h), or internal
# and shared between runtime files, `gf__`. Anything else must be `static`.
# Usage: scripts/check-symbols.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build}"
libs=()
for l in runtime/libgamefn_core.a runtime/libgamefn_wire.a runtime/libgamefn_runtime.a \
         runtime/gameserver/libgamefn_gameserver.a; do
  [ -f "$dir/$l" ] && libs+=("$dir/$l")
done
[ ${#libs[@]} -gt 0 ] || { echo "check-symbols: no runtime library under $dir" >&2; exit 1; }
shopt -s nullglob
headers=("$root"/runtime/include/gamefn/*.h "$root"/runtime/gameserver/include/gamefn/*.h)
bad=0
for sym in $(nm -g --defined-only "${libs[@]}" | awk 'NF == 3 { print $3 }' | sort -u); do
  case "$sym" in
    __*) ;; # reserved for the implementation: sanitizer instrumentation (__odr_asan...)
    gf__*) ;;
    gf_*)
      grep -qw -- "$sym" "${headers[@]}" || { echo "exported but in no public header: $sym" >&2; bad=1; } ;;
    *) echo "exported without the gf_/gf__ prefix: $sym" >&2; bad=1 ;;
  esac
done
[ $bad -eq 0 ] && echo "check-symbols: ${#libs[@]} libraries, every exported symbol is gf_ (public) or gf__"
exit $bad
