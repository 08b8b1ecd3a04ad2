#!/usr/bin/env bash
# Installs the Debian 12 packages gamefn needs, only those that are missing.
# Does nothing (and needs no network) when everything is already installed.
set -euo pipefail

PACKAGES=(
  nats-server libnats-dev
  libprotobuf-c-dev protobuf-c-compiler
  libyaml-dev libsodium-dev libcmocka-dev
  libjansson-dev  # JSON for $SRV discovery, advisories and the monitoring API
  cmake pkg-config make
  gcc libc6-dev    # libc6-dev: crt files and libc headers (a Recommends of gcc, so
                   # --no-install-recommends alone leaves the compiler unable to link)
  g++             # examples/producer is C++ (the producer header used from C++), built
                  # with everything: without it cmake stops at configure
  curl            # the local deploy and docs use the nats-server monitoring port
  openssl         # test_conn_auth makes its CA and certificates with the openssl tool
  gnuplot-nox     # gamefn-report draws the run report's plots with it (SVG terminal)
  libfaketime     # test_mm_skew runs one replica with its wall clock shifted (LD_PRELOAD):
                  # Debian's maintained library fakes every clock call of the unmodified
                  # binaries, nats.c's included, which a hand-written hook could not
)
# Wanted but not required: the report's browser test (tests/report_browser_test.sh) opens
# the report in Debian's chromium, and is skipped, not failed, where it cannot be installed.
# GAMEFN_NO_OPTIONAL=1 does not try (e.g. offline, where each try would wait on apt).
OPTIONAL=(chromium)
if [ "${GAMEFN_NO_OPTIONAL:-}" = 1 ]; then
  OPTIONAL=()
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
optional=()
for p in "${OPTIONAL[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    optional+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "install-deps: done" >&2
fi
for p in "${optional[@]}"; do
  echo "install-deps: installing $p (optional)" >&2
  if ! { [ ${#missing[@]} -gt 0 ] || $SUDO apt-get update -qq; } ||
     ! $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null; then
    echo "install-deps: could not install $p; what needs it will be skipped" >&2
  fi
done
