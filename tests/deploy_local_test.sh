#!/usr/bin/env bash
# deploy/local/run.sh end to end against this build (--no-build, 2 seconds, its own
# data directory), and what it leaves on disk: the ports file (it names the port of a
# server without authentication) and the logs are for the invoking user only, even
# when the data directory was left open by an earlier run or a loose umask.
# Usage: tests/deploy_local_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build="$1"
src="$2"
work="$(mktemp -d /tmp/gamefn-local-XXXXXX)"
data="$work/data"
trap 'rm -rf "$work"' EXIT
mkdir -p "$data/logs"
chmod 755 "$work" "$data" "$data/logs"
touch "$data/logs/old.log"
chmod 644 "$data/logs/old.log"

umask 022 # a typical login umask: run.sh must not depend on the caller's
"$src/deploy/local/run.sh" --no-build --build-dir "$build" --data "$data" --seconds 2 \
  >"$work/run.out" 2>&1 &
pid=$!
ports=""
for _ in $(seq 1 100); do
  ports="$(ls "$data"/*.ports 2>/dev/null | head -1 || true)"
  [ -n "$ports" ] && break
  sleep 0.1
done
[ -n "$ports" ] || { cat "$work/run.out"; echo "FAIL: no ports file appeared"; exit 1; }
ports_mode="$(stat -c %a "$ports")"
code=0
wait "$pid" || code=$?
cat "$work/run.out"
[ "$code" = 0 ] || { echo "FAIL: run.sh exited with $code"; exit 1; }
[ "$ports_mode" = 600 ] || { echo "FAIL: ports file mode $ports_mode, want 600"; exit 1; }
open="$(find "$data" -perm /077 -print)"
[ -z "$open" ] || { echo "FAIL: readable by other users:"; ls -ld $open; exit 1; }
grep -q "no authentication" "$work/run.out" || { echo "FAIL: run.sh does not say it has no auth"; exit 1; }
echo "deploy_local: ok (ports file 600, nothing under data/ open to other users)"
