#!/usr/bin/env bash
# Configures and builds gamefn into a build directory (default: build/).
# Usage: scripts/build.sh [build-dir] [extra cmake -D options...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build}"
shift || true
cmake -S "$root" -B "$dir" "$@" >/dev/null
cmake --build "$dir" -j "$(nproc)"
