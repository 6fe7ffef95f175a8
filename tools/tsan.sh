#!/usr/bin/env bash
# Builds Brevis with ThreadSanitizer in build-tsan/ (clang-19; without multiversioned loops,
# whose ifunc resolvers would run before the TSan runtime: BREVIS_MULTIVERSION) and runs what
# uses threads: the threaded round-trip tests, and compress / decompress / verify with -T 2,
# interpreted and JIT-compiled, on the sample checkpoints and on a synthetic one large enough to
# be cut into several pieces. Any race report fails the script.  Usage: tools/tsan.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/tools/setup.sh" clang-19 libclang-rt-19-dev
build="${BREVIS_TSAN_BUILD_DIR:-$root/build-tsan}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBREVIS_SANITIZE=thread \
    -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
fi
cmake --build "$build" --target brevisc brevis-gen RoundTripTest ApiTest -- -j"$(nproc)"
export TSAN_OPTIONS="halt_on_error=1:abort_on_error=1:second_deadlock_stack=1:suppressions=$root/test/tsan.supp:${TSAN_OPTIONS:-}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== threaded round-trip tests"
"$build/test/unit/RoundTripTest" --gtest_brief=1
"$build/test/unit/ApiTest" --gtest_brief=1

brevisc="$build/tools/brevisc/brevisc"
"$build/tools/gen/brevis-gen" --size 40MiB -o "$work/synthetic.safetensors" >/dev/null
mkdir "$work/dir"
cp "$root/test/data/stories260K.safetensors" "$work/dir/model.safetensors"
echo '{"dim": 64}' >"$work/dir/config.json"
for input in "$root/test/data/stories260K.bf16.safetensors" "$root/test/data/stories260K.safetensors" \
             "$work/synthetic.safetensors" "$work/dir"; do
  name="$(basename "$input")"
  echo "== -T 2 round trips of $name"
  "$brevisc" -q compress -T 2 "$input" -o "$work/$name.brv"
  "$brevisc" -q verify -T 2 "$work/$name.brv"
  # --jit twice: the first compiles the shapes the cache lacks (the JIT module), the second
  # runs them from the cache without it (CachedCodeDecoder).
  for mode in "" --jit --jit; do
    rm -rf "$work/out"
    "$brevisc" -q decompress -T 2 $mode "$work/$name.brv" -o "$work/out"
    if [ -d "$input" ]; then diff -r "$input" "$work/out"; else cmp "$input" "$work/out"; fi
  done
done
echo "tsan: no races"
