"""Writes a safetensors file (argv[1]) of BF16 tensors "a", "b" (a's bytes again), "c" (a's bytes
but one) and a U8 tensor "d" of a's bytes: only "b" repeats a tensor of its dtype."""
import json
import random
import struct
import sys

random.seed(7)
a = bytes(random.choice((0, 0x3c, 0xbc, random.randrange(256))) for _ in range(8192))
c = bytearray(a)
c[101] ^= 1
tensors = [('a', 'BF16', [4096], a), ('b', 'BF16', [64, 64], a), ('c', 'BF16', [4096], bytes(c)),
           ('d', 'U8', [8192], a)]
meta, offset = {}, 0
for name, dtype, shape, data in tensors:
    meta[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [offset, offset + len(data)]}
    offset += len(data)
header = json.dumps(meta).encode()
header += b' ' * (-len(header) % 8)
with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<Q', len(header)) + header + b''.join(t[3] for t in tensors))
