#!/usr/bin/env bash
# The main job on one machine: install what is missing, build, start a local
# nats-server with JetStream, provision streams and buckets from config/, make the
# join-token key pair (once), start every function and the simulated game servers
# (gamefn-gamesim: two per datacenter, up to eight as the warm pool asks), and stop
# everything cleanly on Ctrl-C or after --seconds N.
#
# usage: deploy/local/run.sh [--seconds N] [--fresh] [--no-build] [--build-dir DIR] [--data DIR]
#   --seconds N      run for N seconds, then stop (default: until Ctrl-C)
#   --fresh          delete the local JetStream data first
#   --no-build       use what is built already (no package check, no build)
#   --build-dir DIR  where gamefn is built (default: build/)
#   --data DIR       JetStream data, ports file and logs (default: deploy/local/data/)
#
# The local server has NO authentication and no TLS: any process of any local user
# that reaches its loopback port can read and change everything in it. It is for one
# developer's machine. What this script writes (data, the ports file naming the port,
# logs) is made readable by the invoking user only (umask 077).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds=0
fresh=0
build_it=1
build="$root/build"
data="$root/deploy/local/data"
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="${2:?--seconds needs a number}"; shift 2 ;;
    --fresh) fresh=1; shift ;;
    --no-build) build_it=0; shift ;;
    --build-dir) build="${2:?--build-dir needs a directory}"; shift 2 ;;
    --data) data="${2:?--data needs a directory}"; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$seconds" in ''|*[!0-9]*) echo "run.sh: --seconds takes a whole number" >&2; exit 2 ;; esac

umask 077
if [ "$build_it" = 1 ]; then
  "$root/scripts/install-deps.sh"
  echo "== building" >&2
  "$root/scripts/build.sh" "$build" >/dev/null
fi

[ "$fresh" = 1 ] && rm -rf "$data"
mkdir -p "$data/logs"
# Files an earlier run (or an older version of this script) left readable to others.
chmod -R go-rwx "$data"
rm -f "$data"/*.ports
sed "s|@DATA@|$data|g" "$root/deploy/local/nats.conf.in" > "$data/nats.conf"

pids=()
names=()
nats_pid=""
stopping=0

stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  echo "== stopping" >&2
  for i in "${!pids[@]}"; do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for i in "${!pids[@]}"; do
    code=0
    wait "${pids[$i]}" || code=$?
    echo "   ${names[$i]} (pid ${pids[$i]}) exited with $code" >&2
  done
  if [ -n "$nats_pid" ]; then
    kill -TERM "$nats_pid" 2>/dev/null || true
    wait "$nats_pid" 2>/dev/null || true
    echo "   nats-server (pid $nats_pid) stopped" >&2
  fi
}
trap 'stop_all; exit 130' INT TERM
trap 'stop_all' EXIT

echo "== starting nats-server" >&2
nats_server="$(command -v nats-server || echo /usr/sbin/nats-server)"
"$nats_server" -c "$data/nats.conf" -l "$data/logs/nats-server.log" </dev/null >/dev/null 2>&1 &
nats_pid=$!
ports="$data/nats-server_${nats_pid}.ports"
for _ in $(seq 1 100); do [ -s "$ports" ] && break; sleep 0.1; done
[ -s "$ports" ] || { echo "nats-server did not start; see $data/logs/nats-server.log" >&2; exit 1; }
url="$(sed -E 's/.*"nats":\["([^"]+)".*/\1/' "$ports")"
monitor="$(sed -E 's/.*"monitoring":\["([^"]+)".*/\1/' "$ports")"
for _ in $(seq 1 100); do curl -sf "$monitor/healthz?js-enabled-only=true" >/dev/null && break; sleep 0.1; done
echo "   NATS at $url (monitoring $monitor); no authentication: local use only" >&2

export GAMEFN_NATS_URL="$url"
# config/gamefn.yaml names the join-token key files under deploy/local/data/keys; the
# functions read a copy naming the ones of this data directory (--data).
sed "s|deploy/local/data/keys/|$data/keys/|g" "$root/config/gamefn.yaml" > "$data/gamefn.yaml"
export GAMEFN_CONFIG="$data/gamefn.yaml"
echo "== provisioning JetStream from config/gamefn.yaml" >&2
"$build/tools/gamefn" provision

if [ ! -f "$data/keys/local.key" ]; then
  echo "== making the join-token key pair ($data/keys)" >&2
  mkdir -p "$data/keys"
  "$build/tools/gamefn" keygen --key-id local --dir "$data/keys" >/dev/null
fi

echo "== starting functions" >&2
for bin in "$build"/functions/*/gamefn-*; do
  [ -x "$bin" ] || continue
  name="$(basename "$bin")"
  "$bin" >"$data/logs/$name.log" 2>&1 &
  pids+=("$!")
  names+=("$name")
  echo "   $name (pid $!) logs: $data/logs/$name.log" >&2
done

# Simulated game servers and their orchestrator adapter, in every datacenter of
# functions.fleet (PROTOCOL.md §8; docs/OPERATIONS.md "Game servers and orchestrator
# adapters").
dcs="$(sed -n '/^  fleet:/,/^  [a-z]*:$/s/.*{name: \([A-Za-z0-9_-]*\),.*/\1/p' "$GAMEFN_CONFIG" | sed 's/$/=2:8/' | paste -sd, -)"
"$build/support/gamesim/gamefn-gamesim" --servers "$dcs" --play 20s \
  >"$data/logs/gamefn-gamesim.log" 2>&1 &
pids+=("$!")
names+=("gamefn-gamesim")
echo "   gamefn-gamesim (pid $!, servers $dcs) logs: $data/logs/gamefn-gamesim.log" >&2

if [ "$seconds" -gt 0 ]; then
  echo "== running for $seconds s" >&2
  for ((s = 1; s <= seconds; s++)); do
    sleep 1
    for i in "${!pids[@]}"; do
      kill -0 "${pids[$i]}" 2>/dev/null || { echo "${names[$i]} died; see its log" >&2; exit 1; }
    done
    printf '\r   %d/%d s' "$s" "$seconds" >&2
  done
  echo >&2
else
  echo "== running; Ctrl-C to stop" >&2
  while true; do sleep 1; done
fi

echo "== report" >&2
"$build/tools/gamefn" services
