"""Writes a safetensors file (argv[1]) of one F16 tensor "w" [256, 256], four fifths zeros in
runs, the non-zero values' exponents drifting by at most one from value to value: a pruned
tensor, whose zero runs and exponents an adaptive context model learns. With argv[2] =
"scattered": seven tenths zeros scattered one by one, and uniformly random low bytes under the
drifting exponents (the zeros an escape word, the low bytes noise to store raw)."""
import json
import random
import struct
import sys

random.seed(3)
words, top, zeros = [], 0x38, True
scattered = len(sys.argv) > 2 and sys.argv[2] == 'scattered'
for _ in range(256 * 256):
    if scattered:
        if random.randrange(10) < 7:
            words.append(0)
            continue
        top = 0x30 + (top - 0x30 + 16 + random.randrange(3) - 1) % 16
        words.append(top << 8 | random.randrange(256))
        continue
    if random.randrange(20) == 0:
        zeros = not zeros if zeros or random.randrange(4) == 0 else zeros
    if zeros:
        words.append(0)
        continue
    top = 0x30 + (top - 0x30 + 16 + random.randrange(3) - 1) % 16
    words.append(top << 8 | ((top * 37 + random.randrange(16)) & 0xff))
data = struct.pack('<%dH' % len(words), *words)
header = json.dumps({'w': {'dtype': 'F16', 'shape': [256, 256], 'data_offsets': [0, len(data)]}}).encode()
header += b' ' * (-len(header) % 8)
with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<Q', len(header)) + header + data)
