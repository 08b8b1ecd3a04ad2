#!/usr/bin/env bash
# gamefn-report end to end on synthetic run directories (gamefn-report-synth): a healthy
# run has every section and its 9 plots; an unhealthy one says why in its header; the
# analytics and crashes sections hold summary.json's numbers; hostile
# strings are shown as text; missing files are "not measured"; malformed input is named
# in the report (exit 3) or stops it with a clear message (exit 1); gnuplot missing or
# failing is said plainly. Usage: tests/report_test.sh BUILD_DIR
set -euo pipefail
build="$1"
report="$build/tools/report/gamefn-report"
synth="$build/tools/report/gamefn-report-synth"
work="$(mktemp -d /tmp/gamefn-report-XXXXXX)"
trap 'rm -rf "$work"' EXIT
fails=0
passes=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
pass() { passes=$((passes + 1)); }
check() { # description, command...
  local what="$1"
  shift
  if "$@"; then pass; else fail "$what"; fi
}
count() { grep -o -- "$1" "$2" | wc -l; }

# run DIR [args...]: gamefn-report, stdout+stderr to DIR.out, exit status to $code
run() {
  local dir="$1"
  shift
  code=0
  "$report" "$dir" "$@" >"$dir.out" 2>&1 || code=$?
}

sections=(verdict quality invariants waits match-quality queues matches allocation fleet events
          leaderboard dlq analytics crashes restarts run problems)

# ---- a healthy run: every section, 9 plots, verdict healthy, exit 0 --------------------
"$synth" "$work/ok" --seconds 40
run "$work/ok"
html="$work/ok/report.html"
check "healthy run exits 0 (got $code)" test "$code" = 0
check "prints the report's path" grep -q "^report: $work/ok/report.html$" "$work/ok.out"
check "prints the verdict" grep -q "^verdict: healthy$" "$work/ok.out"
for s in "${sections[@]}"; do
  check "section $s" grep -q "id=\"$s\"" "$html"
done
check "9 inline <svg> (got $(count '<svg' "$html"))" test "$(count '<svg' "$html")" = 9
check "9 plot figures" test "$(count '<figure class="plot"' "$html")" = 9
check "no not-measured" test "$(count 'class="not-measured"' "$html")" = 0
check "verdict healthy in the header" grep -q 'data-verdict="healthy"' "$html"
check "meta says 9 plots" grep -q '<meta name="gamefn-plots" content="9">' "$html"
check "no XML prolog inlined" test "$(count '<?xml' "$html")" = 0
check "no external reference" bash -c "! grep -Eq '(src|href)=\"(https?:)?//' '$html'"
check "CSP forbids fetching" grep -q "default-src 'none'" "$html"
check "no script element" test "$(count '<script' "$html")" = 0
check "plot ids prefixed apart" bash -c "test \$(grep -o 'id=\"p[0-9]-gnuplot_canvas\"' '$html' | sort -u | wc -l) = 9"
check "leaderboard row" grep -q 'player-003' "$html"
check "invariant explained" grep -q 'compare-and-set' "$html"
check "quality wait p50 measured" grep -q 'Wait p50, hybrid 5v5</td><td>&lt; 2 s at mid population</td><td>[0-9.]* s (' "$html"
check "merge compared" grep -q 'sa: [0-9.]* s on' "$html"
check "report is readable by its owner" test -r "$html"
check "no temporary file left" bash -c "! ls '$work/ok' | grep -q tmp"

# --out elsewhere, and deterministic content but for the footer's time
run "$work/ok" --out "$work/other.html"
check "--out writes there" test -s "$work/other.html"
check "--out same report" bash -c "diff <(grep -v '^<footer>' '$html') <(grep -v '^<footer>' '$work/other.html') >/dev/null"

# ---- unhealthy: reasons in the header, still exit 0 (the report was written) -----------
"$synth" "$work/bad" --seconds 30 --unhealthy
run "$work/bad"
html="$work/bad/report.html"
check "unhealthy exits 0" test "$code" = 0
check "unhealthy verdict printed" grep -q '^verdict: not healthy (' "$work/bad.out"
check "unhealthy header" grep -q 'data-verdict="unhealthy"' "$html"
check "invariant count in header" grep -q '<li class="fail">invariant double_claims = 2 (must be 0)</li>' "$html"
check "restart in header" grep -q '<li class="fail">1 unplanned restart (matcher-1)</li>' "$html"
check "missed goal in header" grep -q '<li class="fail">goal missed: Wait p99' "$html"
check "open gap in header" grep -q '<li class="fail">1 event gap still open' "$html"
check "violated invariant marked" grep -q 'VIOLATED' "$html"
check "lagging consumer noted" grep -q '<li class="note">consumer crashes ends [0-9]* messages behind (warning at 1,000)</li>' "$html"
check "lag warning line drawn" grep -q "warning 1,000" "$html"

# ---- hostile strings are text, never markup -----------------------------------------------
"$synth" "$work/evil" --seconds 10 --unhealthy --hostile
run "$work/evil"
html="$work/evil/report.html"
check "hostile exits 0" test "$code" = 0
check "no <script> from data" test "$(count '<script' "$html")" = 0
check "no <img> from data" test "$(count '<img' "$html")" = 0
check "no <b>bold from data" test "$(count '<b>bold' "$html")" = 0
check "player escaped" grep -q '&lt;img src=x onerror=alert(1)&gt;&amp;amp;&quot;&#39;' "$html"
check "title escaped" grep -q '<title>gamefn run &lt;/title&gt;&lt;script&gt;' "$html"
check "reason escaped" grep -q '&lt;script&gt;alert(&#39;restart&#39;)&lt;/script&gt;' "$html"
check "crash signature escaped" grep -q '&lt;script&gt;alert(&#39;crash&#39;)&lt;/script&gt;' "$html"

# ---- the event log's functions: events per minute by type, crash groups -------------------
# The synthetic run's analytics: minute i has kill 100+7i, score 90+5i, zone_change 40+i,
# crash 2+i%2; its crash reports are those crashes, in 3 groups (4, 2, 1 over 3 minutes).
"$synth" "$work/log" --seconds 150
run "$work/log"
html="$work/log/report.html"
check "event log run exits 0" test "$code" = 0
check "analytics: a row per minute (got $(count '<tr><td>12:0[0-9]</td>' "$html"))" test "$(count '<tr><td>12:0[0-9]</td>' "$html")" = 3
check "analytics: third minute's counts" grep -q '<tr><td>12:02</td><td class="num">114</td><td class="num">100</td><td class="num">42</td><td class="num">2</td><td class="num">258</td></tr>' "$html"
check "analytics: the run's kills" grep -q '<td class="num" data-type="0">321</td>' "$html"
check "analytics: the run's crashes" grep -q '<td class="num" data-type="3">7</td>' "$html"
check "analytics: the run's total" grep -q '<td class="num" data-total>736</td>' "$html"
check "crashes: reports = analytics' crashes" grep -q '<b data-crashes>7</b> crash reports' "$html"
check "crashes: groups" grep -q '<b data-groups>3</b> crash groups' "$html"
check "crashes: the largest group first" grep -q '<tr><td><code>a44a9e6c2475f636552ea437ca26cb09</code></td><td class="num">4</td><td>12:00:05</td><td>12:02:30</td>' "$html"
# Gaps the lag monitor could not count say why; malformed analytics are named (exit 3).
perl -0pi -e 's/"gaps": \{[^}]*\}/"gaps": {"not_counted": "the lag monitor does not run"}/; s/^    "total": \d+/    "total": "lots"/m' "$work/log/summary.json"
run "$work/log"
check "malformed analytics exits 3 (got $code)" test "$code" = 3
check "analytics problem named" grep -q 'summary.json: analytics must be' "$html"
check "analytics then not measured" grep -q "Not measured: summary.json&#39;s analytics are malformed" "$html"
check "crashes still shown" grep -q '<b data-crashes>7</b>' "$html"
check "gaps not counted, and why" grep -q 'Not measured: gaps not counted: the lag monitor does not run' "$html"
check "gaps not counted noted" grep -q '<li class="note">event gaps not counted: the lag monitor does not run</li>' "$html"

# ---- a run without events, lag or checker: "not measured", incomplete -------------------
"$synth" "$work/noev" --seconds 20 --without events.tsv,lag.tsv,check.json
run "$work/noev"
html="$work/noev/report.html"
check "no-events exits 0" test "$code" = 0
check "7 plots without events and lag" test "$(count '<svg' "$html")" = 7
check "events not measured" grep -q '<p class="not-measured" data-plot="events">Not measured: the run has no events.tsv.</p>' "$html"
check "lag not measured" grep -q 'data-plot="lag">Not measured' "$html"
check "incomplete without checker" grep -q 'data-verdict="incomplete"' "$html"
check "says the checker did not run" grep -q 'invariants not checked: the run has no check.json' "$html"

# ---- only summary.json: a report of what is missing ----------------------------------------
mkdir "$work/bare"
cp "$work/ok/summary.json" "$work/bare/"
run "$work/bare"
check "bare run exits 0" test "$code" = 0
check "bare run: no plots" test "$(count '<svg' "$work/bare/report.html")" = 0
check "bare run: 9 not measured plots" test "$(count 'class="not-measured" data-plot=' "$work/bare/report.html")" = 9

# ---- a half-written last line (a writer killed mid-line) is left out, with a note --------
"$synth" "$work/part" --seconds 10 --partial
run "$work/part"
check "partial exits 0" test "$code" = 0
check "partial noted" grep -q 'tickets.tsv: an unfinished last line was left out' "$work/part/report.html"

# ---- malformed files: named with file:line, left out, exit 3 ------------------------------
"$synth" "$work/mal" --seconds 10
printf '5\tqueue-x\tlots\n' >>"$work/mal/queues.tsv"
printf '{"invariants": [{"name": "double_claims", "count": -1}]}\n' >"$work/mal/check.json"
printf 't\tproduced\n0\t10\n1\t5\n' >"$work/mal/events.tsv"
run "$work/mal"
html="$work/mal/report.html"
check "malformed exits 3 (got $code)" test "$code" = 3
check "malformed: report still written" test -s "$html"
check "queues problem with line" grep -q "queues.tsv:$(wc -l <"$work/mal/queues.tsv"): column &#39;waiting&#39;: &#39;lots&#39; is not a number" "$html"
check "queues problem on stderr" grep -q "input problem: queues.tsv:" "$work/mal.out"
check "check.json problem" grep -q 'check.json: invariants\[0\]' "$html"
check "counter going down" grep -q 'counter &#39;produced&#39; goes down at t=1' "$html"
check "malformed: incomplete" grep -q 'data-verdict="incomplete"' "$html"
check "queues plot not measured" grep -q 'data-plot="queues">Not measured: queues.tsv is malformed' "$html"

# ---- fatal: no report ------------------------------------------------------------------------
run "$work/nonesuch"
check "missing dir exits 1" test "$code" = 1
check "missing dir message" grep -q "gamefn-report: $work/nonesuch: not a directory" "$work/nonesuch.out"
mkdir "$work/empty"
run "$work/empty"
check "no summary exits 1" test "$code" = 1
check "no summary message" grep -q 'summary.json: no such file (is this a run directory?' "$work/empty.out"
mkdir "$work/badjson"
printf '{"run": {"id": "x",}\n' >"$work/badjson/summary.json"
run "$work/badjson"
check "bad summary exits 1" test "$code" = 1
check "bad summary says where" grep -q 'summary.json:1:[0-9]*: ' "$work/badjson.out"
check "no report written for bad summary" test ! -e "$work/badjson/report.html"
code=0
"$report" >/dev/null 2>&1 || code=$?
check "usage exits 2" test "$code" = 2
code=0
"$report" "$work/ok" --out "$work/nodir/x.html" >"$work/nodir.out" 2>&1 || code=$?
check "unwritable output exits 1" test "$code" = 1
check "unwritable output message" grep -q 'cannot write the report' "$work/nodir.out"

# ---- gnuplot missing, or failing --------------------------------------------------------------
code=0
GAMEFN_GNUPLOT="$work/no-gnuplot" "$report" "$work/ok" >"$work/nognu.out" 2>&1 || code=$?
check "no gnuplot exits 1" test "$code" = 1
check "no gnuplot says so" grep -q 'gnuplot is required to draw the plots (Debian: gnuplot-nox' "$work/nognu.out"
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "fake 1.0"; exit 0; }\necho "line 3: all wrong" >&2\nexit 1\n' >"$work/badgnu"
chmod +x "$work/badgnu"
code=0
GAMEFN_GNUPLOT="$work/badgnu" "$report" "$work/ok" --out "$work/badgnu.html" >"$work/badgnu.out" 2>&1 || code=$?
check "failing gnuplot exits 3" test "$code" = 3
check "failing gnuplot: plots not drawn" test "$(count 'Could not be drawn: ' "$work/badgnu.html")" = 9
check "failing gnuplot: says what it said" grep -q 'exited with status 1: line 3: all wrong' "$work/badgnu.html"

# ---- many queues: the 10 highest are drawn, and the caption says how many are not ---------
"$synth" "$work/many" --seconds 5
{
  printf 't\tqueue\twaiting\n'
  for t in 0 1 2; do for q in $(seq 1 15); do printf '%s\tq%s\t%s\n' "$t" "$q" "$q"; done; done
} >"$work/many/queues.tsv"
run "$work/many"
check "many queues: 10 drawn" test "$(grep -o ">q[0-9]*<" "$work/many/report.html" | sort -u | wc -l)" = 10
check "many queues: lowest left out" bash -c "! grep -q '>q5<' '$work/many/report.html'"
check "many queues: caption" grep -q 'are drawn; 5 more are not.' "$work/many/report.html"

# ---- a long run: bucketed time series (2 h in 8 s buckets) ---------------------------------
"$synth" "$work/long" --seconds 7200
run "$work/long"
check "long run exits 0" test "$code" = 0
check "long run 9 plots" test "$(count '<svg' "$work/long/report.html")" = 9

# ---- damaged runs never crash it: each file cut short at several places, or with a line
# of junk; every outcome is a report (0, 3) or a clear refusal (1), never a signal ---------
"$synth" "$work/src" --seconds 5 --unhealthy
n=0
for f in summary.json check.json tickets.tsv matches.tsv queues.tsv fleet.tsv events.tsv lag.tsv; do
  size=$(stat -c %s "$work/src/$f")
  for cut in 1 7 $((size / 3)) $((size / 2 + 1)) $((size - 2)) junk; do
    n=$((n + 1))
    rm -rf "$work/dmg"
    cp -r "$work/src" "$work/dmg"
    if [ "$cut" = junk ]; then
      printf '\x01\t\xff\x80{"\t-\t1e999\t\n\t\t\t\n' >>"$work/dmg/$f"
    else
      head -c "$cut" "$work/src/$f" >"$work/dmg/$f"
    fi
    run "$work/dmg"
    case "$code" in
      0 | 1 | 3) pass ;;
      *) fail "$f cut at $cut: exit $code"; cat "$work/dmg.out" ;;
    esac
    if [ "$code" != 1 ] && ! grep -q '</html>' "$work/dmg/report.html"; then
      fail "$f cut at $cut: exit $code without a whole report"
    fi
  done
done
check "damaged runs tried" test "$n" = 48

echo "report_test: $passes passed, $fails failed"
[ "$fails" = 0 ]
