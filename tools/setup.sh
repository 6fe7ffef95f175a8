#!/usr/bin/env bash
# Installs the Debian 12 packages Brevis builds, tests and benchmarks with, and any packages
# named as arguments (the sanitizer and fuzzing scripts add clang-19 and its runtimes).
# Idempotent: quiet and fast when everything is already present.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build pkg-config python3
  llvm-19-dev llvm-19-tools
  antlr4 default-jre-headless libantlr4-runtime-dev uuid-dev
  libfmt-dev libgtest-dev libgmock-dev
  libzstd-dev zstd libxxhash-dev nlohmann-json3-dev libcli11-dev libhtscodecs-dev libbz2-dev
  zlib1g-dev liblzma-dev libbrotli-dev liblz4-dev libsnappy-dev
  python3-dev pybind11-dev python3-numpy python3-pytest
  "$@"
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

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "brevis setup: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
