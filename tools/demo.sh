#!/usr/bin/env bash
# The main job on the embedded sample: compress a real checkpoint, decompress it, check that
# every byte came back, and show the program Brevis wrote for it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/tools/build.sh" >/dev/null
build="${BREVIS_BUILD_DIR:-$root/build}"
brevisc="$build/tools/brevisc/brevisc"
sample="$root/test/data/stories260K.bf16.safetensors"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cp "$sample" "$work/model.safetensors"
echo "== compress and decompress $(basename "$sample")"
"$brevisc" compress "$work/model.safetensors" -o "$work/model.brv" 2>&1
"$brevisc" decompress "$work/model.brv" -o "$work/restored.safetensors" 2>&1
cmp "$work/model.safetensors" "$work/restored.safetensors"
echo "bit-exact: restored.safetensors is identical to the original"
"$brevisc" decompress --jit -q "$work/model.brv" -o "$work/restored-jit.safetensors"
cmp "$work/model.safetensors" "$work/restored-jit.safetensors"
echo "bit-exact: the JIT decoder's output is identical too"

"$brevisc" synth -q "$work/model.safetensors" -o "$work/model.bdsl"
echo
echo "The program for one tensor ($work/model.bdsl, first lines):"
grep -m1 -A5 '^tensor "layers.0.attention.wq.weight"' "$work/model.bdsl" || head -n 12 "$work/model.bdsl"
original=$(stat -c %s "$work/model.safetensors")
archive=$(stat -c %s "$work/model.brv")
echo
awk -v o="$original" -v a="$archive" 'BEGIN { printf "saved %d of %d bytes (%.2f%%); the archive is %.2f%% of the original\n", o - a, o, 100 * (o - a) / o, 100 * a / o }'
