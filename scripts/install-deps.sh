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
  curl            # the local deploy and docs use the nats-server monitoring port
  openssl         # test_conn_auth makes its CA and certificates with the openssl tool
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
