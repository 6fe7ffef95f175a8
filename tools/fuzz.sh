#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-19, ASan + UBSan) in build-fuzz/ and runs each for a
# while, starting from its seed corpus. Usage: tools/fuzz.sh [SECONDS_PER_TARGET] (default 60).
# Seed corpora: test/fuzz/corpus/ (test/fuzz/make_seeds.sh rewrites them after a wire-format change).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-60}"
bash "$root/tools/setup.sh"
for p in clang-19 libclang-rt-19-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
done
build="$root/build-fuzz"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBREVIS_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
fi
cmake --build "$build" --target fuzz_literal fuzz_archive fuzz_program -- -j"$(nproc)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
declare -A seeds=([literal]="$root/test/fuzz/corpus/literal" [archive]="$root/test/fuzz/corpus/archive" [program]="$root/test/lit")
for target in literal archive program; do
  mkdir -p "$work/$target"
  find "${seeds[$target]}" -type f \( -name '*.bin' -o -name '*.brv' -o -name '*.bdsl' \) -exec cp {} "$work/$target/" \;
  echo "== fuzz_$target for ${seconds}s"
  "$build/test/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 "$work/$target"
done
