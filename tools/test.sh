#!/usr/bin/env bash
# Installs what Brevis needs, builds it, and runs the whole test suite (unit + lit) via ctest.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/tools/build.sh"
build="${BREVIS_BUILD_DIR:-$root/build}"
ctest --test-dir "$build" --output-on-failure --timeout 900 -j"$(nproc)"
