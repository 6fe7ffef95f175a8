#!/usr/bin/env bash
# Regenerates the fuzz seed corpora (test/fuzz/corpus/) after a wire-format change:
#   test/fuzz/make_seeds.sh [BUILD_DIR]        (default: build)
# Literal seeds come from make_literal_seeds; archive seeds are brevisc archives of a tiny
# safetensors file, a byte blob, a checkpoint directory and a pruned tensor (a context literal); encoder, compress and JIT seeds are
# written by the script below.
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
# A pruned F16 tensor (zero runs, drifting exponents): its archive holds a context literal.
import random
rng = random.Random(3)
words, top, zeros = [], 0x38, True
for _ in range(4096):
    if rng.randrange(20) == 0: zeros = not zeros
    if zeros: words.append(0); continue
    top = 0x30 + (top - 0x30 + 16 + rng.randrange(3) - 1) % 16
    words.append(top << 8 | ((top * 37 + rng.randrange(16)) & 0xff))
raw = struct.pack('<%dH' % len(words), *words)
h = json.dumps({'w': {'dtype': 'F16', 'shape': [64, 64], 'data_offsets': [0, len(raw)]}}, separators=(',', ':')).encode()
h += b' ' * (-len(h) % 8)
open(os.path.join(out, 'sparse.safetensors'), 'wb').write(struct.pack('<Q', len(h)) + h + raw)
PY
# Encoder, compress-path and JIT-generator seeds: small, deterministic, written here.
python3 - "$corpus" <<'PY'
import json, math, os, random, struct, sys
corpus = sys.argv[1]
rng = random.Random(20240601)
def write(sub, name, blob):
    os.makedirs(os.path.join(corpus, sub), exist_ok=True)
    open(os.path.join(corpus, sub, name), 'wb').write(blob)

# encode: width byte (1 + b % 64), repeat byte (1 + b % 16), then little-endian words.
def skewed(n, spread):
    return bytes(min(255, int(rng.expovariate(1 / spread))) for _ in range(n))
write('encode', 'u8-order1-5000.bin', bytes([7, 0]) + skewed(5000, 6))      # the 32-way order-1 frame
write('encode', 'u8-repeated-400x16.bin', bytes([7, 15]) + skewed(400, 20))  # 6400 words from 400
write('encode', 'u3-tiny.bin', bytes([2, 0]) + bytes(rng.randrange(8) for _ in range(40)))
write('encode', 'u12-rans16.bin', bytes([11, 3]) + b''.join(struct.pack('<H', min(4095, int(rng.expovariate(1 / 50)))) for _ in range(1500)))
write('encode', 'u16-wide.bin', bytes([15, 0]) + bytes(rng.randrange(256) for _ in range(600)))
write('encode', 'u33-sparse.bin', bytes([32, 1]) + b''.join(struct.pack('<Q', rng.choice([0, 1 << 32, 12345])) for _ in range(200)))
write('encode', 'u64.bin', bytes([63, 0]) + bytes(rng.randrange(256) for _ in range(256)))
write('encode', 'empty.bin', bytes([7, 0]))

# compress: small safetensors files of every dtype, one with padding and trailing bytes, a blob.
dtypes = {'BOOL': 1, 'U8': 1, 'I8': 1, 'F8_E4M3': 1, 'F8_E5M2': 1, 'I16': 2, 'U16': 2, 'F16': 2, 'BF16': 2,
          'I32': 4, 'U32': 4, 'F32': 4, 'F64': 8, 'I64': 8, 'U64': 8}
def values(dtype, n):
    vals = [0.02 * math.sin(i * 0.7) * math.exp(-(i % 13) / 5) for i in range(n)]
    if dtype == 'F32': return b''.join(struct.pack('<f', v) for v in vals)
    if dtype == 'BF16': return b''.join(struct.pack('<f', v)[2:] for v in vals)
    if dtype == 'F16': return b''.join(struct.pack('<e', v) for v in vals)
    if dtype == 'F64': return b''.join(struct.pack('<d', v) for v in vals)
    if dtype == 'BOOL': return bytes(rng.randrange(2) for _ in range(n))
    return bytes(rng.randrange(256) if i % 3 else 0 for i in range(n * dtypes[dtype]))
def safetensors(tensors, pad=8, trailing=b''):
    header, data = {'__metadata__': {'format': 'pt'}}, b''
    for name, dtype, shape in tensors:
        n = math.prod(shape)
        raw = values(dtype, n)
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % pad)
    return struct.pack('<Q', len(h)) + h + data + trailing
for dtype in dtypes:
    write('compress', f'{dtype.lower()}.safetensors', safetensors([('w', dtype, [6, 7]), ('b', dtype, [5])]))
write('compress', 'mixed-trailing.safetensors',
      safetensors([('emb', 'BF16', [40, 32]), ('scale', 'F32', [32]), ('empty', 'F16', [0, 4])], pad=1, trailing=b'tail'))
write('compress', 'blob.bin', bytes((i * 37) % 251 for i in range(300)))

# jit: generator choices (FuzzJit.cpp reads them as it builds a program).
for k in range(24):
    write('jit', f'choices-{k:02}.bin', bytes(rng.randrange(256) for _ in range(48 + 8 * k)))
PY

brevisc="$build/tools/brevisc/brevisc"
"$brevisc" -q compress "$work/small.safetensors" -o "$corpus/archive/small.brv" -f
"$brevisc" -q compress "$work/blob.bin" -o "$corpus/archive/blob.brv" -f
"$brevisc" -q compress "$work/dir" -o "$corpus/archive/dir.brv" -f
"$brevisc" -q compress "$work/sparse.safetensors" -o "$corpus/archive/sparse.brv" -f
echo "seeds written under $corpus"
