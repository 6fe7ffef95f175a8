#!/usr/bin/env python3
"""Writes a deterministic safetensors file of many small tensors, shaped like a mixture-of-experts
checkpoint's tensor list: the test input for checkpoints with a large tensor count.

Usage: many_tensors.py --tensors N -o OUT.safetensors
       many_tensors.py --tensors N --roundtrip BREVISC
The second writes the file into a temporary directory, compresses it, decompresses the archive
and compares the result with the original (the ctest tools.many_tensors.roundtrip).
Tensors alternate between BF16 [4] and F32 [2, 2] (the first is "model.experts.0.w0"); their
bytes come from a fixed linear congruential generator, so the same N always gives the same file.
"""
import argparse
import filecmp
import json
import os
import struct
import subprocess
import sys
import tempfile
import time


def build(tensors):
    header = {"__metadata__": {"format": "pt"}}
    data = bytearray()
    state = 12345
    for i in range(tensors):
        bf16 = i % 2 == 0
        count = 4
        words = []
        for _ in range(count):
            state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            # A small float near 0: sign and a narrow exponent band, like trained weights.
            sign = (state >> 63) & 1
            exponent = 120 + ((state >> 40) & 7)
            mantissa = (state >> 16) & 0x7FFFFF
            words.append((sign << 31) | (exponent << 23) | mantissa)
        begin = len(data)
        if bf16:
            data += struct.pack("<4H", *(w >> 16 for w in words))
            entry = {"dtype": "BF16", "shape": [count]}
        else:
            data += struct.pack("<4I", *words)
            entry = {"dtype": "F32", "shape": [2, 2]}
        entry["data_offsets"] = [begin, len(data)]
        header["model.experts.{}.w{}".format(i // 8, i % 8)] = entry
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(data)


def roundtrip(brevisc, tensors):
    with tempfile.TemporaryDirectory() as work:
        original = os.path.join(work, "many.safetensors")
        archive = os.path.join(work, "many.brv")
        copy = os.path.join(work, "copy.safetensors")
        with open(original, "wb") as f:
            f.write(build(tensors))
        for cmd in ([brevisc, "compress", "-q", original, "-o", archive],
                    [brevisc, "decompress", "-q", archive, "-o", copy]):
            start = time.monotonic()
            subprocess.run(cmd, check=True)
            print("{}: {:.2f} s".format(cmd[1], time.monotonic() - start))
        if not filecmp.cmp(original, copy, shallow=False):
            sys.exit("the decompressed file differs from the original")
        print("{} tensors: {} -> {} bytes, round trip exact".format(
            tensors, os.path.getsize(original), os.path.getsize(archive)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tensors", type=int, required=True)
    p.add_argument("-o", "--output")
    p.add_argument("--roundtrip", metavar="BREVISC")
    a = p.parse_args()
    if a.roundtrip:
        roundtrip(a.roundtrip, a.tensors)
    elif a.output:
        with open(a.output, "wb") as f:
            f.write(build(a.tensors))
    else:
        p.error("give -o OUT or --roundtrip BREVISC")


if __name__ == "__main__":
    main()
