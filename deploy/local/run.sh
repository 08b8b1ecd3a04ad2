#!/usr/bin/env bash
# The main job on one machine: install what is missing, build what a run needs, start a
# local nats-server with JetStream, provision every stream, consumer and bucket of
# config/gamefn.yaml, start every function (N replicas each) under a small supervisor
# that restarts a crashed one with backoff, drive it all with a simulated game for N
# seconds (live progress on a terminal), then stop, check the invariants, write the
# run's data and its HTML report, print a summary and the report's path.
#
# usage: deploy/local/run.sh [options]
#   --seconds N          simulated game length (default 60): one compressed day
#   --replicas LIST      replicas per function, e.g. matcher=3,allocator=2 (default 1 each)
#   --seed S             the simulated players' seed (default 1): same seed, same players
#   --population LEVEL   low, mid (default) or high arrival rate
#   --keep               leave the stack running after the run (prints how to use it)
#   --stop               stop a stack left running with --keep (same --data)
#   --fresh              delete the local JetStream data and keys first
#   --no-build           use what is built already (no package check, no build)
#   --build-dir DIR      where gamefn is built (default: build/)
#   --data DIR           JetStream data, keys, logs (default: deploy/local/data/)
#   --report-dir DIR     where run data and reports go (default: DATA/runs/)
#   -h, --help           this text
#
# Exit status: 0 the run completed and every invariant count is 0; 1 it failed or a
# count is not 0; 2 bad usage; 3 another run is using the data directory; 130
# interrupted (Ctrl-C: everything it started is stopped).
#
# The local server has NO authentication and no TLS: any process of any local user that
# reaches its loopback port can read and change everything in it. It is for one
# developer's machine. What this script writes (data, the ports file naming the port,
# logs) is readable by the invoking user only (umask 077).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
seconds=60
replicas=""
seed=1
population=mid
keep=0
stop=0
fresh=0
build_it=1
build="$root/build"
data="$root/deploy/local/data"
report_dir=""
usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; }
need() { [ $# -ge 2 ] && [ -n "$2" ] || { echo "run.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) need "$@"; seconds="$2"; shift 2 ;;
    --replicas) need "$@"; replicas="$2"; shift 2 ;;
    --seed) need "$@"; seed="$2"; shift 2 ;;
    --population) need "$@"; population="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    --stop) stop=1; shift ;;
    --fresh) fresh=1; shift ;;
    --no-build) build_it=0; shift ;;
    --build-dir) need "$@"; build="$2"; shift 2 ;;
    --data) need "$@"; data="$2"; shift 2 ;;
    --report-dir) need "$@"; report_dir="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$seconds" in ''|*[!0-9]*|0) echo "run.sh: --seconds takes a whole number >= 1" >&2; exit 2 ;; esac
case "$seed" in ''|*[!0-9]*) echo "run.sh: --seed takes a whole number" >&2; exit 2 ;; esac
case "$population" in low|mid|high) ;; *) echo "run.sh: --population is low, mid or high" >&2; exit 2 ;; esac

umask 077
mkdir -p "$data"
data="$(cd "$data" && pwd)"

if [ "$stop" = 1 ]; then
  [ -x "$build/tools/local/gamefn-local" ] || { echo "run.sh: nothing built in $build" >&2; exit 1; }
  exec "$build/tools/local/gamefn-local" stop --data "$data"
fi

# One run per data directory: the lock is held from here until everything this run
# starts has stopped (gamefn-local takes it over, and keeps it while a --keep stack runs).
exec 9>>"$data/run.lock"
if ! flock -n 9; then
  pid="" kept="" started=""
  read -r pid kept started <"$data/run.pid" 2>/dev/null || true
  note=""
  [ "$kept" = 1 ] && note=", kept running with --keep"
  echo "run.sh: another run is using $data (supervisor pid ${pid:-?}, started ${started:-?}$note)." >&2
  echo "Stop it with: deploy/local/run.sh --stop --data $data   (or wait for it to end)" >&2
  exit 3
fi
# Files an earlier run (or an older version of this script) left readable to others.
chmod -R go-rwx "$data"
if [ "$fresh" = 1 ]; then
  echo "== --fresh: deleting the JetStream data, keys, logs and runs in $data" >&2
  find "$data" -mindepth 1 -maxdepth 1 ! -name run.lock -exec rm -rf {} +
fi

if [ "$build_it" = 1 ]; then
  # Only what a run needs: the optional packages (chromium, for the report's browser
  # test) are the test suite's (tests/run.sh installs them).
  GAMEFN_NO_OPTIONAL=1 "$root/scripts/install-deps.sh"
  echo "== building what a local run needs ($build; the tests build with tests/run.sh)" >&2
  cmake -S "$root" -B "$build" >/dev/null
  cmake --build "$build" --target local-run -j "$(nproc)" >"$data/build.log" 2>&1 ||
    { tail -n 40 "$data/build.log" >&2; echo "run.sh: build failed; see $data/build.log" >&2; exit 1; }
fi
[ -x "$build/tools/local/gamefn-local" ] ||
  { echo "run.sh: $build has no gamefn-local; build it (drop --no-build)" >&2; exit 1; }

args=(run --source "$root" --build "$build" --data "$data" --seconds "$seconds" --seed "$seed"
      --population "$population" --lock-fd 9)
[ -n "$replicas" ] && args+=(--replicas "$replicas")
[ -n "$report_dir" ] && { mkdir -p "$report_dir"; args+=(--report-dir "$report_dir"); }
[ "$keep" = 1 ] && args+=(--keep)
exec "$build/tools/local/gamefn-local" "${args[@]}"
