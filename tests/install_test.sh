#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then what docs/OPERATIONS.md ("Deploying to
# production") has an operator rely on: exactly the expected files (every function binary
# found in functions/*/CMakeLists.txt, the CLI, the example config, the accounts file, one
# unit per function); each installed function's --version and --check-config, on the
# example config (whose relative key paths resolve to nothing there: the allocator and
# the fleet refuse it) and on one whose key paths are rewritten to absolute paths of keys
# made by the installed `gamefn keygen`; each unit's ExecStart, user, config and stop/restart
# settings; and `systemd-analyze verify` of every unit where that command exists.
# Touches nothing outside its temporary directory; starts no server.
# Usage: tests/install_test.sh CMAKE BUILD_DIR SOURCE_DIR PREFIX BINDIR SYSCONFDIR DATADIR
#   PREFIX: CMAKE_INSTALL_PREFIX at configure time (the units name binaries under it);
#   BINDIR, SYSCONFDIR, DATADIR: GNUInstallDirs' relative CMAKE_INSTALL_* names.
set -euo pipefail
cmake="$1" build="$2" src="$3" prefix="$4" bindir="$5" sysconfdir="$6" datadir="$7"
work="$(mktemp -d /tmp/gamefn-install-XXXXXX)"
trap 'rm -rf "$work"' EXIT
root="$work/prefix"
fail() { echo "FAIL: $*" >&2; exit 1; }

env -u DESTDIR "$cmake" --install "$build" --prefix "$root" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "cmake --install $build --prefix $root"; }

# Every function binary the source tree builds, whether or not an install rule names it.
fns="$(sed -n 's/^add_executable(gamefn-\([a-z]*\) .*/\1/p' "$src"/functions/*/CMakeLists.txt |
  sort)"
[ -n "$fns" ] || fail "no add_executable(gamefn-...) in $src/functions/*/CMakeLists.txt"

conf="$root/$sysconfdir/gamefn/gamefn.yaml.example"
units="$root/$datadir/gamefn/systemd"
{
  echo "$root/$bindir/gamefn"
  echo "$conf"
  echo "$root/$datadir/gamefn/nats/accounts.conf"
  for fn in $fns; do
    echo "$root/$bindir/gamefn-$fn"
    echo "$units/gamefn-$fn@.service"
  done
} | sort >"$work/expected"
find "$root" -type f -o -type l | sort >"$work/installed"
diff -u "$work/expected" "$work/installed" >&2 ||
  fail "installed files differ from the expected ones (- missing, + not expected)"
cmp -s "$conf" "$src/config/gamefn.yaml" || fail "$conf is not config/gamefn.yaml"

# The operator's steps: keys by the installed CLI, absolute key paths in the config.
keys="$work/keys"
mkdir "$keys"
"$root/$bindir/gamefn" keygen --key-id k1 --dir "$keys" >/dev/null || fail "gamefn keygen"
[ "$(stat -c %a "$keys/k1.key")" = 600 ] || fail "gamefn keygen: $keys/k1.key is not mode 0600"
prod="$work/gamefn.yaml"
sed -E -e "s|(public_key: )[^}]*\.pub|\1$keys/k1.pub|" \
  -e "s|(signing_key: )[^ ]*\.key|\1$keys/k1.key|" -e "s|key_id: local|key_id: k1|" \
  "$conf" >"$prod"
grep -q "signing_key: $keys/k1.key" "$prod" && grep -q "public_key: $keys/k1.pub" "$prod" ||
  fail "the key paths of $conf were not rewritten (did their form change?)"

# From a directory where the example's relative key paths resolve to nothing.
cd "$work"
for fn in $fns; do
  bin="$root/$bindir/gamefn-$fn"
  out="$("$bin" --version)" || fail "gamefn-$fn --version exits $?"
  [[ "$out" =~ ^$fn\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "gamefn-$fn --version printed '$out'"
  out="$("$bin" --config "$prod" --check-config 2>&1)" ||
    fail "gamefn-$fn --config $prod --check-config: $out"
  [ "$out" = "$fn: $prod: ok" ] || fail "gamefn-$fn --check-config printed '$out'"
  # The example's relative key paths name no file from here: the two functions that
  # read key files must say so (exit 2), the others do not read them.
  rc=0
  out="$("$bin" --config "$conf" --check-config 2>&1)" || rc=$?
  case "$fn" in
    allocator | fleet)
      [ "$rc" = 2 ] && [[ "$out" == *"key not loaded"* ]] ||
        fail "gamefn-$fn --check-config on unreadable keys: exit $rc, '$out'" ;;
    *) [ "$rc" = 0 ] && [ "$out" = "$fn: $conf: ok" ] ||
        fail "gamefn-$fn --check-config $conf: exit $rc, '$out'" ;;
  esac
done
for c in "$conf" "$prod"; do
  "$root/$bindir/gamefn" --config "$c" check-config >/dev/null || fail "gamefn check-config $c"
done
out="$("$root/$bindir/gamefn" --version)" || fail "gamefn --version exits $?"
[[ "$out" =~ ^gamefn\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "gamefn --version printed '$out'"

# The units: each runs its own installed binary as gamefn on /etc/gamefn/gamefn.yaml.
mkdir "$work/verify"
for fn in $fns; do
  u="$units/gamefn-$fn@.service"
  ! grep -n '@[A-Za-z_]*@' "$u" >&2 || fail "$u: a @VARIABLE@ was not substituted"
  exec_line="$(grep '^ExecStart=' "$u")" || fail "$u: no ExecStart="
  [ "$exec_line" = "ExecStart=$prefix/$bindir/gamefn-$fn --instance %l-%i" ] ||
    fail "$u: $exec_line (want $prefix/$bindir/gamefn-$fn --instance %l-%i)"
  [ -x "$root/$bindir/gamefn-$fn" ] || fail "$u: $root/$bindir/gamefn-$fn is not executable"
  for want in User=gamefn Environment=GAMEFN_CONFIG=/etc/gamefn/gamefn.yaml \
    EnvironmentFile=-/etc/gamefn/gamefn.env EnvironmentFile=-/etc/gamefn/gamefn-$fn.env \
    KillSignal=SIGTERM Restart=on-failure; do
    grep -qx "$want" "$u" || fail "$u: no line $want"
  done
  # systemd-analyze checks the binary exists: point the copy at the installed one.
  sed "s|^ExecStart=$prefix/$bindir/|ExecStart=$root/$bindir/|" "$u" \
    >"$work/verify/gamefn-$fn@1.service"
done

if command -v systemd-analyze >/dev/null; then
  out="$(systemd-analyze verify "$work"/verify/*.service 2>&1)" ||
    { echo "$out" >&2; fail "systemd-analyze verify"; }
  # Unknown keys are warnings (exit 0): any line about our units fails the test.
  ! grep gamefn- <<<"$out" >&2 || fail "systemd-analyze verify warns about the units"
  echo "install_tree: systemd-analyze verify: $(wc -w <<<"$fns") units ok"
else
  echo "install_tree: systemd-analyze not found (Debian package systemd): units not verified"
fi
echo "install_tree: $(wc -w <<<"$fns") functions and the CLI installed into a temporary prefix, all checked"
