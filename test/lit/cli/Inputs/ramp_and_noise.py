"""Writes a safetensors file (argv[1]) of an int32 index ramp "ramp" [4096] (0, 1, ..., 4095) and
a tensor of random bytes "noise" u8 [1024]: a structural tensor beside one that is not."""
import json
import random
import struct
import sys

random.seed(7)
ramp = struct.pack('<4096i', *range(4096))
noise = bytes(random.randrange(256) for _ in range(1024))
header = json.dumps({'ramp': {'dtype': 'I32', 'shape': [4096], 'data_offsets': [0, len(ramp)]},
                     'noise': {'dtype': 'U8', 'shape': [1024], 'data_offsets': [len(ramp), len(ramp) + len(noise)]}},
                    separators=(',', ':')).encode()
header += b' ' * (-len(header) % 8)
with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<Q', len(header)) + header + ramp + noise)
