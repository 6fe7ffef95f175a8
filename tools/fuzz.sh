#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-19, ASan + UBSan) and runs each for a while, starting from
# its committed seeds and from what earlier runs found.
#
#   tools/fuzz.sh [--merge] [SECONDS_PER_TARGET] [TARGET...]     (default 60 s, every target)
#
# Build directory: build-fuzz/, or $BREVIS_FUZZ_BUILD_DIR (.ci/run uses tools/sanitize.sh's
# build-asan/, which is built the same way). The evolved corpus of each target is kept in
# <build>/fuzz-corpus/<target>/ between runs; crashing inputs go to <build>/fuzz-artifacts/.
# --merge adds the inputs that reach new coverage to the committed seeds (test/fuzz/corpus/,
# libFuzzer's -merge=1: only those that add coverage, so the seeds stay small); commit them
# with the fix they found. Seeds: test/fuzz/corpus/ (test/fuzz/make_seeds.sh rewrites them
# after a wire-format change) and, for the program target, test/lit.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
merge=0
if [ "${1:-}" = "--merge" ]; then
  merge=1
  shift
fi
seconds="${1:-60}"
shift || true
all=(literal archive program encode compress jit object)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
bash "$root/tools/setup.sh" clang-19 libclang-rt-19-dev
build="${BREVIS_FUZZ_BUILD_DIR:-$root/build-fuzz}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBREVIS_FUZZ=ON \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
fi
cmake --build "$build" --target "${targets[@]/#/fuzz_}" -- -j"$(nproc)"
corpus="$root/test/fuzz/corpus"
declare -A seeds=([literal]="$corpus/literal" [archive]="$corpus/archive" [program]="$root/test/lit"
                  [encode]="$corpus/encode" [compress]="$corpus/compress" [jit]="$corpus/jit"
                  [object]="$corpus/object")
mkdir -p "$build/fuzz-artifacts"
for target in "${targets[@]}"; do
  work="$build/fuzz-corpus/$target"
  mkdir -p "$work"
  echo "== fuzz_$target for ${seconds}s ($(find "$work" -type f | wc -l) inputs kept from earlier runs)"
  # The committed seeds are read in place (libFuzzer writes new inputs only to the first directory).
  "$build/test/fuzz/fuzz_$target" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -timeout=60 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$target-" "$work" "${seeds[$target]}"
  if [ "$merge" = 1 ] && [ "$target" != program ]; then
    before=$(find "${seeds[$target]}" -type f | wc -l)
    "$build/test/fuzz/fuzz_$target" -merge=1 -max_len=65536 -rss_limit_mb=2048 "${seeds[$target]}" "$work" 2>/dev/null
    echo "== $target: $(($(find "${seeds[$target]}" -type f | wc -l) - before)) inputs merged into ${seeds[$target]}"
  fi
done
