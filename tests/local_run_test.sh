#!/usr/bin/env bash
# deploy/local/run.sh end to end against this build (--no-build, low population, its own
# data directory), one case per call:
#
#   run        a 10 s run: exit 0, the summary, summary.json and the run's TSV files,
#              the checker's counts all 0 (events against the producers' log too), the
#              event consumers' figures (leaderboard, dead letters, gaps, applied events;
#              analytics and crash counts equal to what the game emitted, per type, in
#              summary.json, the summary and the report's sections) and the report file
#              (when this build has them), files private to the user (the ports file
#              names the port of a server without authentication), and
#              no process left behind
#   interrupt  while a run goes, a second run.sh on the same data is refused at once
#              (exit 3, naming the first); then Ctrl-C (SIGINT to the run's process
#              group, as a terminal sends it): exit 130, no process left, the lock free,
#              and a short run on the same data directory works
#   kill       SIGKILL to a matcher replica mid-run (--replicas matcher=2): it is
#              restarted, the restart is printed and recorded in summary.json
#
# "No process left": every pid in the supervisor's journal (logs/supervisor.log) and the
# supervisor itself are gone once run.sh returns.
# Usage: tests/local_run_test.sh BUILD_DIR SOURCE_DIR CASE
set -euo pipefail
build="$1"
src="$2"
case_="$3"
work="$(mktemp -d /tmp/gamefn-localrun-XXXXXX)"
data="$work/data"
pids_seen="$work/pids"
: >"$pids_seen"
cleanup() {
  # Whatever a failed assertion left running: only the pids this test's runs started.
  for pid in $(cat "$pids_seen" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }; done
  # A sanitizer build's report goes to the child's log, which the cleanup removes.
  for f in "$data"/logs/*.log; do
    [ -f "$f" ] && grep -q "Sanitizer" "$f" && { echo "--- $f (sanitizer report)"; grep -A 60 -m 1 "Sanitizer" "$f"; }
  done
  exit 1
}

run_sh() { "$src/deploy/local/run.sh" --no-build --build-dir "$build" --data "$data" --population low "$@"; }

# Polls (0.2 s) until a command succeeds, for at most $1 seconds.
wait_for() {
  local secs="$1"; shift
  for _ in $(seq 1 $((secs * 5))); do "$@" && return 0; sleep 0.2; done
  return 1
}

# Remembers the supervisor's pid (run.pid) and every child's (the journal) while a run goes.
note_pids() {
  [ -f "$data/run.pid" ] && awk '{print $1}' "$data/run.pid" >>"$pids_seen"
  [ -f "$data/logs/supervisor.log" ] && awk '$2 == "start" {print $3}' "$data/logs/supervisor.log" >>"$pids_seen"
  sort -u -o "$pids_seen" "$pids_seen"
}

no_strays() {
  note_pids
  local left=""
  for pid in $(cat "$pids_seen"); do
    if kill -0 "$pid" 2>/dev/null; then left="$left $pid($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-60))"; fi
  done
  [ -z "$left" ] || fail "processes left behind:$left"
  [ -s "$pids_seen" ] || fail "no pid was recorded (journal missing?)"
}

latest() { readlink -f "$data/runs/latest"; }
tickets_rows() { local f; f="$(ls "$data"/runs/*/tickets.tsv 2>/dev/null | head -1)"; [ -n "$f" ] && [ "$(wc -l <"$f")" -gt "${1:-10}" ]; }

mkdir -p "$data/logs"
case "$case_" in
run)
  # An earlier run (or an older script) may have left files open to others.
  chmod 755 "$work" "$data" "$data/logs"
  touch "$data/logs/old.log"
  chmod 644 "$data/logs/old.log"
  umask 022 # a typical login umask: run.sh must not depend on the caller's
  run_sh --seconds 10 >"$work/run.out" 2>&1 &
  pid=$!
  wait_for 60 test -s "$data/run.pid" || fail "the run never started"
  ports="$(ls "$data"/*.ports 2>/dev/null | head -1 || true)"
  wait_for 30 sh -c "ls '$data'/*.ports >/dev/null 2>&1" && ports="$(ls "$data"/*.ports | head -1)"
  [ -n "$ports" ] || fail "no ports file appeared"
  ports_mode="$(stat -c %a "$ports")"
  while kill -0 "$pid" 2>/dev/null; do note_pids; sleep 1; done
  code=0
  wait "$pid" || code=$?
  cat "$work/run.out"
  [ "$code" = 0 ] || fail "run.sh exited with $code"
  [ "$ports_mode" = 600 ] || fail "ports file mode $ports_mode, want 600"
  open="$(find "$data" ! -type l -perm /077 -print)"
  [ -z "$open" ] || fail "readable by other users: $open"
  grep -q "no authentication" "$work/run.out" || fail "run.sh does not say it has no auth"
  grep -q "^== summary: run .*, completed" "$work/run.out" || fail "no summary"
  # A clean stop of nats-server reads as one (SIGINT: 2.9.10 exits 1 on SIGTERM).
  grep -Eq '^[0-9]+ exit [0-9]+ nats-server exited with status 0$' "$data/logs/supervisor.log" ||
    fail "nats-server did not exit 0: $(grep ' nats-server' "$data/logs/supervisor.log" | tail -1)"
  grep -q "wait, hybrid 5v5" "$work/run.out" || fail "no wait figures in the summary"
  run="$(latest)"
  for f in summary.json tickets.tsv matches.tsv queues.tsv fleet.tsv events.tsv lag.tsv events.log; do
    [ -s "$run/$f" ] || fail "$run/$f missing or empty"
  done
  grep -q '"status": "completed"' "$run/summary.json" || fail "summary.json: status not completed"
  [ "$(awk -F'\t' 'NR > 1 && $5 == "assigned"' "$run/tickets.tsv" | wc -l)" -gt 0 ] ||
    fail "no ticket was assigned"
  if [ -x "$build/tools/gamefn" ] && "$build/tools/gamefn" check --help >/dev/null 2>&1; then
    [ -s "$run/check.json" ] || fail "no check.json"
    grep -q "BROKEN" "$work/run.out" && fail "an invariant count is not 0"
    grep -q "invariants (independent checker" "$work/run.out" || fail "no checker counts printed"
    # The game servers' events are checked against their producers' log.
    grep -Eq "events_lost +0  ok" "$work/run.out" || fail "events_lost was not checked"
  else
    echo "(no gamefn check in this build: the invariants are not checked)"
  fi
  if [ -x "$build/functions/leaderboard/gamefn-leaderboard" ]; then
    # The event consumers ran: their figures reach summary.json (and so the report).
    for key in leaderboard dlq gaps; do
      grep -q "\"$key\": {" "$run/summary.json" || fail "summary.json has no $key"
    done
    grep -q "leaderboard global: " "$work/run.out" || fail "no leaderboard line in the summary"
    grep -Eq "gaps \(lag monitor\): 0 open" "$work/run.out" || fail "gaps not counted, or open"
    awk -F'\t' 'NR > 1 && $4 != "-" {f = 1} END {exit !f}' "$run/events.tsv" ||
      fail "events.tsv: no applied count"
    # The analytics and crashes functions' figures match what the game emitted (a fresh
    # data directory: only this run's events), and some crashes were emitted.
    for key in analytics crashes; do
      grep -q "\"$key\": {" "$run/summary.json" || fail "summary.json has no $key"
    done
    stored="$(sed -n 's/.*events: [0-9]* produced .*, \([0-9]*\) acknowledged by EVENTS.*/\1/p' "$work/run.out")"
    counted="$(sed -n "s/.*analytics, the run's minutes: \([0-9]*\) events.*/\1/p" "$work/run.out")"
    [ -n "$stored" ] && [ "$stored" = "$counted" ] ||
      fail "analytics counted '${counted}' events, EVENTS acknowledged '${stored}'"
    emitted_crash="$(sed -n 's/.*emitted by type:.* crash \([0-9]*\).*/\1/p' "$work/run.out")"
    counted_crash="$(sed -n "s/.*analytics, the run's minutes: .*crash \([0-9]*\).*/\1/p" "$work/run.out")"
    reported="$(sed -n 's/.*crash reports: \([0-9]*\) crashes in \([0-9]*\) crash groups.*/\1 \2/p' "$work/run.out")"
    [ "${emitted_crash:-0}" -gt 0 ] || fail "the game emitted no crash"
    [ "$counted_crash" = "$emitted_crash" ] || fail "analytics counted '$counted_crash' crashes of $emitted_crash"
    [ "${reported% *}" = "$emitted_crash" ] && [ "${reported#* }" -gt 0 ] ||
      fail "the crashes function has '$reported' (crashes groups), emitted $emitted_crash"
    for t in kill score zone_change; do
      e="$(sed -n "s/.*emitted by type:.* $t \([0-9]*\).*/\1/p" "$work/run.out")"
      c="$(sed -n "s/.*analytics, the run's minutes: .*[(,] $t \([0-9]*\).*/\1/p;s/.*analytics, the run's minutes: [0-9]* events ($t \([0-9]*\).*/\1/p" "$work/run.out" | head -1)"
      [ -n "$e" ] && [ "$e" = "$c" ] || fail "$t: emitted '$e', analytics counted '$c'"
    done
    if [ -x "$build/tools/report/gamefn-report" ]; then
      grep -q "<td class=\"num\" data-total>$stored</td>" "$run/report.html" ||
        fail "report.html: analytics total is not $stored"
      grep -q "<b data-crashes>$emitted_crash</b>" "$run/report.html" ||
        fail "report.html: crashes section does not hold $emitted_crash"
    fi
  fi
  if [ -x "$build/tools/report/gamefn-report" ]; then
    [ -s "$run/report.html" ] || fail "no report.html"
    grep -q "report: $run/report.html" "$work/run.out" || fail "the report's path is not printed"
  else
    echo "(no gamefn-report in this build: no report)"
  fi
  no_strays
  ;;
interrupt)
  setsid "$src/deploy/local/run.sh" --no-build --build-dir "$build" --data "$data" \
    --population low --seconds 60 >"$work/first.out" 2>&1 &
  first=$!
  wait_for 90 tickets_rows 20 || fail "the first run never got going"
  note_pids
  # A second invocation while the first runs: refused at once, naming the first.
  t0=$(date +%s)
  code=0
  run_sh --seconds 5 >"$work/second.out" 2>&1 || code=$?
  [ "$code" = 3 ] || fail "second run.sh exited with $code, want 3"
  [ $(($(date +%s) - t0)) -le 10 ] || fail "the second run.sh took too long to refuse"
  grep -q "another run is using $data" "$work/second.out" || fail "the refusal does not say why"
  grep -q "supervisor pid $(awk '{print $1}' "$data/run.pid")" "$work/second.out" ||
    fail "the refusal does not name the first run"
  # Ctrl-C: SIGINT to the foreground process group, as a terminal does.
  kill -INT -- "-$first"
  t0=$(date +%s)
  code=0
  wait "$first" || code=$?
  cat "$work/first.out"
  [ "$code" = 130 ] || fail "interrupted run.sh exited with $code, want 130"
  [ $(($(date +%s) - t0)) -le 40 ] || fail "stopping after Ctrl-C took more than 40 s"
  grep -q "interrupted" "$work/first.out" || fail "the run does not say it was interrupted"
  no_strays
  grep -q '"status": "interrupted"' "$(latest)/summary.json" || fail "summary.json: not interrupted"
  flock -n "$data/run.lock" true || fail "the lock is still held"
  # The data directory is usable: a short run on it completes.
  run_sh --seconds 3 >"$work/after.out" 2>&1 || fail "a run after the interrupt failed"
  grep -q "completed" "$work/after.out" || fail "the run after the interrupt did not complete"
  no_strays
  ;;
kill)
  run_sh --seconds 12 --replicas matcher=2 >"$work/run.out" 2>&1 &
  pid=$!
  wait_for 90 tickets_rows 10 || fail "the run never got going"
  victim="$(awk '$2 == "matcher-1" {print $1}' "$data/run.pids")"
  [ -n "$victim" ] || fail "no matcher-1 in run.pids"
  note_pids
  kill -KILL "$victim"
  wait_for 20 sh -c "awk '\$2 == \"matcher-1\" && \$1 != $victim {f=1} END {exit !f}' '$data/run.pids'" ||
    fail "matcher-1 was not restarted"
  while kill -0 "$pid" 2>/dev/null; do note_pids; sleep 1; done
  code=0
  wait "$pid" || code=$?
  cat "$work/run.out"
  [ "$code" = 0 ] || fail "run.sh exited with $code"
  grep -q "matcher-1 killed by signal 9.*restarted after" "$work/run.out" ||
    fail "the restart is not in the summary"
  grep -q '"instance": "matcher-1"' "$(latest)/summary.json" || fail "summary.json has no restart"
  grep -q '"reason": "killed by signal 9' "$(latest)/summary.json" || fail "summary.json: no reason"
  no_strays
  ;;
*)
  echo "usage: $0 BUILD_DIR SOURCE_DIR run|interrupt|kill" >&2
  exit 2
  ;;
esac
echo "local_run $case_: ok"
