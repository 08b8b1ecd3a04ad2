#!/usr/bin/env bash
# Checks that the runtime's folders stay layered: a file in runtime/src/<folder>/ (and
# a public header, by the folder that implements it) includes only its own folder and
# the folders below it. The layers, lowest first, and what each may use:
#
#   core       err, log, clock + RFC 3339, names, utf8, backoff, test_pause; wire constants
#   config     YAML configuration                 uses core
#   wire       error replies, partition hash      uses core
#   nats       connection, errors, nkeys, KV      uses core, config
#   provision  streams, consumers, buckets        uses core, config, nats
#   discovery  $SRV                               uses core, nats
#   endpoints  the kinds of endpoint              uses core, config, wire, nats, provision, discovery
#   function   the lifecycle                      uses everything
#
# Usage: scripts/check-layers.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root/runtime"

declare -A uses=(
  [core]="core"
  [config]="core config"
  [wire]="core wire"
  [nats]="core config nats"
  [provision]="core config nats provision"
  [discovery]="core nats discovery"
  [endpoints]="core config wire nats provision discovery endpoints"
  [function]="core config wire nats provision discovery endpoints function"
)
# Public headers, by the folder that implements them.
declare -A owner=(
  [err.h]=core [log.h]=core [clock.h]=core [names.h]=core [utf8.h]=core [backoff.h]=core [test_pause.h]=core
  [limits.h]=core [subjects.h]=core # constants only, shared by every layer
  [config.h]=config
  [wire_error.h]=wire [partition.h]=wire
  [conn.h]=nats [kv.h]=nats [kv_watch.h]=nats [lease.h]=nats [publish.h]=nats
  [provision.h]=provision
  [srv.h]=discovery
  [endpoint.h]=endpoints [fetch.h]=endpoints
  [function.h]=function
)

bad=0
check() { # file folder
  local file="$1" folder="$2" inc dep
  while read -r inc; do
    case "$inc" in
      gamefn/*/*) continue ;; # generated schemas (gamefn/v1/...) and other libraries
      gamefn/*)
        dep="${owner[${inc#gamefn/}]:-}"
        if [ -z "$dep" ]; then
          echo "$file: $inc is a public header with no layer in scripts/check-layers.sh" >&2
          bad=1
          continue
        fi ;;
      */*) dep="${inc%%/*}" ;;
      *) continue ;; # same folder
    esac
    case " ${uses[$folder]} " in
      *" $dep "*) ;;
      *) echo "$file: includes $inc ($dep), above $folder" >&2; bad=1 ;;
    esac
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
}

for dir in src/*/; do
  folder="$(basename "$dir")"
  [ -n "${uses[$folder]:-}" ] || { echo "runtime/$dir: a folder with no layer in scripts/check-layers.sh" >&2; bad=1; continue; }
  for f in "$dir"*.[ch]; do check "$f" "$folder"; done
done
for f in include/gamefn/*.h; do
  h="$(basename "$f")"
  folder="${owner[$h]:-}"
  [ -n "$folder" ] || { echo "runtime/$f: a public header with no layer in scripts/check-layers.sh" >&2; bad=1; continue; }
  check "$f" "$folder"
done
[ $bad -eq 0 ] && echo "check-layers: every include in runtime/ goes to the same layer or a lower one"
exit $bad
