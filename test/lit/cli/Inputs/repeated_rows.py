"""Writes a safetensors file (argv[1]) of one uint8 tensor "q" [256, 64] whose rows are each one
of 8 random rows: repeated strings, as quantized weights with repeated rows have."""
import json
import random
import struct
import sys

random.seed(5)
rows = [bytes(random.randrange(256) for _ in range(64)) for _ in range(8)]
data = b''.join(random.choice(rows) for _ in range(256))
header = json.dumps({'q': {'dtype': 'U8', 'shape': [256, 64], 'data_offsets': [0, len(data)]}}).encode()
header += b' ' * (-len(header) % 8)
with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<Q', len(header)) + header + data)
