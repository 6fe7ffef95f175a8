#!/usr/bin/env bash
# Regenerates the fuzz seed corpora (test/fuzz/corpus/) after a wire-format change:
#   test/fuzz/make_seeds.sh [BUILD_DIR]        (default: build)
# Literal seeds come from make_literal_seeds; archive seeds are brevisc archives of a tiny
# safetensors file, a byte blob and a checkpoint directory.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
corpus="$root/test/fuzz/corpus"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

find "$corpus/literal" -name '*.bin' ! -name 'raw-u24-high-byte.bin' -delete # that one is a regression input
"$build/test/fuzz/make_literal_seeds" "$corpus/literal"

python3 - "$work" <<'PY'
import json, struct, sys, os, math
out = sys.argv[1]
def tensor_bytes(n, scale, fmt):
    vals = [scale * math.sin(i * 0.7) * math.exp(-(i % 13) / 5) for i in range(n)]
    if fmt == 'F32':
        return b''.join(struct.pack('<f', v) for v in vals)
    return b''.join(struct.pack('<f', v)[2:] for v in vals)  # BF16: high half of F32
tensors = {'layer.weight': ('BF16', [8, 16], tensor_bytes(128, 0.02, 'BF16')),
           'layer.bias': ('F32', [16], tensor_bytes(16, 0.1, 'F32'))}
header, data = {}, b''
for name, (dtype, shape, raw) in tensors.items():
    header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
    data += raw
h = json.dumps(header, separators=(',', ':')).encode()
h += b' ' * (-len(h) % 8)
blob = struct.pack('<Q', len(h)) + h + data
open(os.path.join(out, 'small.safetensors'), 'wb').write(blob)
os.makedirs(os.path.join(out, 'dir'))
open(os.path.join(out, 'dir', 'model.safetensors'), 'wb').write(blob)
open(os.path.join(out, 'dir', 'config.json'), 'w').write('{"hidden_size": 16}\n')
open(os.path.join(out, 'blob.bin'), 'wb').write(bytes((i * 37) % 251 for i in range(300)))
PY
brevisc="$build/tools/brevisc/brevisc"
"$brevisc" -q compress "$work/small.safetensors" -o "$corpus/archive/small.brv" -f
"$brevisc" -q compress "$work/blob.bin" -o "$corpus/archive/blob.brv" -f
"$brevisc" -q compress "$work/dir" -o "$corpus/archive/dir.brv" -f
echo "seeds written under $corpus"
