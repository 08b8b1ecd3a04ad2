#!/usr/bin/env bash
# The report in a real browser: Debian's chromium, headless, loads a synthetic run's
# report and the test asserts that it renders its plots with no errors.
#
#  1. --dump-dom of the report with a probe script added at the top of <head> (and the
#     Content-Security-Policy widened by exactly script-src 'unsafe-inline' for it): the
#     probe records every JS error, failed resource, console.error and CSP violation, and
#     after load writes into the DOM how many <svg> there are, how many rendered (a box of
#     at least 300x100 px and a drawn data series inside), and how many resources were
#     fetched (a self-contained report fetches none).
#  2. --screenshot of the report as it is, checked against a blank page's screenshot of the
#     same size: a page that drew nothing compresses to a few kB.
# Skips (exit 77) when chromium is not installed (scripts/install-deps.sh installs it where
# Debian's package can be had, and never fails for it), or cannot render even a blank page
# on this machine.
# Usage: tests/report_browser_test.sh BUILD_DIR
set -euo pipefail
build="$1"
chromium="${GAMEFN_CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "SKIP: report_browser: no chromium at $chromium (Debian's chromium package could not be" \
       "installed by scripts/install-deps.sh); the report's browser check did not run"
  exit 77
fi
want_plots=9
out="$build/tests/report_browser" # the screenshot and report stay here for a person to look at
mkdir -p "$out"
work="$(mktemp -d /tmp/gamefn-browser-XXXXXX)"
cpid=""
cleanup() {
  if [ -n "$cpid" ]; then kill -KILL -- "-$cpid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# browser OUTFILE ARGS...: one chromium, its own session (so every helper process it starts
# can be stopped by its group id), a fresh profile, at most 90 s.
browser() {
  local dest="$1"
  shift
  local profile
  profile="$(mktemp -d "$work/profile-XXXXXX")"
  local rc=0
  HOME="$work" setsid timeout -k 5 90 "$chromium" --headless --no-sandbox --disable-gpu \
    --disable-quic --no-first-run --disable-background-networking --disable-component-update \
    --disable-sync --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$profile" "$@" \
    >"$dest" 2>>"$work/chromium.log" &
  cpid=$!
  wait "$cpid" || rc=$?
  kill -KILL -- "-$cpid" 2>/dev/null || true
  cpid=""
  if [ "$rc" != 0 ]; then
    echo "report_browser: chromium exited with status $rc; the end of its log:"
    tail -20 "$work/chromium.log"
    return 1
  fi
}

must() { "$@" || { echo "FAIL: chromium did not load the page"; exit 1; }; }

# Can chromium run here at all? A blank page's screenshot (also the baseline of step 2).
# If not, that is this machine, not the report: skip, saying why.
printf '<!DOCTYPE html><html><head><meta charset="utf-8"></head><body></body></html>\n' \
  >"$work/blank.html"
if ! browser "$work/blank.out" --window-size=1280,2400 --screenshot="$work/blank.png" \
  "file://$work/blank.html" || [ ! -s "$work/blank.png" ]; then
  echo "SKIP: report_browser: chromium is installed but cannot render a blank page here" \
       "(log above); the report's browser check did not run"
  exit 77
fi

"$build/tools/report/gamefn-report-synth" "$work/run" --seconds 60 --hostile >/dev/null
"$build/tools/report/gamefn-report" "$work/run" >/dev/null
report="$work/run/report.html"
cp "$report" "$out/report.html"

probe='<script>(function () {
  var errs = [];
  window.addEventListener("error", function (e) {
    var t = e.target && e.target !== window ? " " + (e.target.outerHTML || "").slice(0, 80) : "";
    errs.push("error: " + (e.message || "resource") + t);
  }, true);
  window.addEventListener("unhandledrejection", function (e) { errs.push("rejection: " + e.reason); });
  document.addEventListener("securitypolicyviolation", function (e) {
    errs.push("csp: " + e.violatedDirective + " " + e.blockedURI);
  });
  var ce = console.error;
  console.error = function () {
    errs.push("console.error: " + Array.prototype.join.call(arguments, " "));
    return ce.apply(console, arguments);
  };
  window.addEventListener("load", function () {
    var svgs = document.querySelectorAll("svg"), ok = 0, bad = [];
    for (var i = 0; i < svgs.length; i++) {
      var r = svgs[i].getBoundingClientRect(), drawn = 0;
      var gs = svgs[i].querySelectorAll("g[id*=\"gnuplot_plot_\"]");
      for (var j = 0; j < gs.length; j++) {
        var b = gs[j].getBBox();
        if (b.width > 0 && b.height > 0) drawn++;
      }
      if (r.width >= 300 && r.height >= 100 && drawn > 0) ok++;
      else bad.push(i + ":" + Math.round(r.width) + "x" + Math.round(r.height) + ":" + drawn);
    }
    var p = document.createElement("pre");
    p.id = "gamefn-probe";
    p.textContent = "PROBE svgs=" + svgs.length + " rendered=" + ok + " resources=" +
      performance.getEntriesByType("resource").length + " errors=" + errs.length +
      " title=" + (document.title ? 1 : 0) + " bad=[" + bad.join(",") + "] " +
      JSON.stringify(errs) + " END";
    document.body.appendChild(p);
  });
})();</script>'
# the probe first in <head>; the CSP widened for inline scripts only
PROBE="$probe" awk '
  !done && (i = index($0, "<head>")) {
    $0 = substr($0, 1, i + 5) ENVIRON["PROBE"] substr($0, i + 6)
    done = 1
  }
  { sub(/style-src '\''unsafe-inline'\''"/, "style-src '\''unsafe-inline'\''; script-src '\''unsafe-inline'\''\"") }
  { print }' "$report" >"$work/probe.html"
grep -q 'id = "gamefn-probe"' "$work/probe.html" || { echo "FAIL: could not add the probe"; exit 1; }

must browser "$work/dom.html" --virtual-time-budget=10000 --dump-dom "file://$work/probe.html"
line="$(grep -o 'PROBE .* END' "$work/dom.html" || true)"
if [ -z "$line" ]; then
  echo "FAIL: the page did not finish loading (no probe line in the DOM); chromium's log:"
  tail -20 "$work/chromium.log"
  exit 1
fi
echo "report_browser: $line"
fails=0
expect() { # line name want
  local got
  got="$(sed -n "s/.* $2=\([0-9]*\) .*/\1/p" <<<"$1")"
  if [ "$got" != "$3" ]; then
    echo "FAIL: $2 = $got, want $3"
    fails=$((fails + 1))
  fi
}
expect "$line" svgs "$want_plots"
expect "$line" rendered "$want_plots"
expect "$line" resources 0
expect "$line" errors 0
expect "$line" title 1

# the probe itself: a copy with a script error, a fetch the CSP must block and an empty
# plot must be caught, or the counts above prove nothing
sed 's|</main>|<script>no_such_function();</script><img src="http://127.0.0.1:9/x.png"><svg width="0" height="0"></svg></main>|' \
  "$work/probe.html" >"$work/canary.html"
must browser "$work/canary-dom.html" --virtual-time-budget=10000 --dump-dom \
  "file://$work/canary.html"
canary="$(grep -o 'PROBE .* END' "$work/canary-dom.html" || true)"
echo "report_browser: canary $canary"
expect "$canary" svgs $((want_plots + 1))
expect "$canary" rendered "$want_plots"
for want in 'Uncaught ReferenceError' 'csp: img-src'; do
  grep -q "$want" <<<"$canary" || { echo "FAIL: the probe missed: $want"; fails=$((fails + 1)); }
done

# as it is: it renders, and draws something
must browser "$work/shot.out" --window-size=1280,2400 --screenshot="$work/shot.png" \
  "file://$report"
for f in shot blank; do
  if [ "$(head -c 8 "$work/$f.png" | od -An -tx1 | tr -d ' \n')" != 89504e470d0a1a0a ]; then
    echo "FAIL: $f.png is not a PNG"
    exit 1
  fi
done
cp "$work/shot.png" "$out/report.png"
shot=$(stat -c %s "$work/shot.png")
blank=$(stat -c %s "$work/blank.png")
if [ "$shot" -lt $((blank * 4)) ]; then
  echo "FAIL: the screenshot ($shot bytes) is hardly larger than a blank page's ($blank bytes)"
  fails=$((fails + 1))
fi
echo "report_browser: screenshot $shot bytes (blank page $blank bytes): $out/report.png"
[ "$fails" = 0 ] || exit 1
echo "report_browser: ok: $want_plots plots rendered, no errors, nothing fetched"
