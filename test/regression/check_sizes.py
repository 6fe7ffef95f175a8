#!/usr/bin/env python3
"""Compares the exact archive sizes of a fixed set of small inputs with sizes.csv.

Any change to compressed sizes shows up here: if it is deliberate, rerun with --update and
commit the new sizes.csv with the change that caused it (reviewers see both).

Usage: check_sizes.py --brevisc PATH --gen PATH [--update]
Inputs are the committed checkpoints under test/data and synthetic checkpoints made by
brevis-gen with fixed options (the "input" column says which).
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CSV = os.path.join(HERE, "sizes.csv")

# input name -> how to make it (None: a committed file under test/data)
SYNTHETIC = {
    "gen-bf16-2MiB-seed7": ["--size", "2MiB", "--hidden", "256", "--seed", "7", "--dtype", "bf16"],
    "gen-f16-1MiB-seed8": ["--size", "1MiB", "--hidden", "128", "--seed", "8", "--dtype", "f16"],
    "gen-f32-1MiB-seed9": ["--size", "1MiB", "--hidden", "128", "--seed", "9", "--dtype", "f32"],
}
COMMITTED = ["stories260K.bf16.safetensors", "stories260K.safetensors"]
# not safetensors: kept as one byte stream
BLOB = ("blob-5000", bytes((i * i + 7 * i) % 251 for i in range(5000)))
LEVELS = [1, 5, 9]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--brevisc", required=True)
    p.add_argument("--gen", required=True)
    p.add_argument("--update", action="store_true")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        inputs = {name: os.path.join(ROOT, "test", "data", name) for name in COMMITTED}
        for name, args in SYNTHETIC.items():
            path = os.path.join(work, name + ".safetensors")
            subprocess.run([a.gen, "-o", path] + args, check=True, stderr=subprocess.DEVNULL)
            inputs[name] = path
        inputs[BLOB[0]] = os.path.join(work, BLOB[0])
        with open(inputs[BLOB[0]], "wb") as f:
            f.write(BLOB[1])
        measured = {}
        for name, path in inputs.items():
            for level in LEVELS:
                out = os.path.join(work, "x.brv")
                subprocess.run([a.brevisc, "compress", "-q", "-f", "-l", str(level), path, "-o", out], check=True)
                measured[(name, str(level))] = (os.path.getsize(path), os.path.getsize(out))
    if a.update:
        with open(CSV, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["input", "level", "input_bytes", "archive_bytes"])
            for (name, level), (isize, asize) in sorted(measured.items()):
                w.writerow([name, level, isize, asize])
        print(f"wrote {CSV}")
        return 0
    expected = {}
    with open(CSV, newline="") as f:
        for row in csv.DictReader(f):
            expected[(row["input"], row["level"])] = (int(row["input_bytes"]), int(row["archive_bytes"]))
    failures = []
    for key in sorted(set(expected) | set(measured)):
        if key not in expected:
            failures.append(f"{key[0]} level {key[1]}: not in sizes.csv (measured {measured[key][1]} bytes)")
        elif key not in measured:
            failures.append(f"{key[0]} level {key[1]}: in sizes.csv but no longer measured")
        elif expected[key] != measured[key]:
            (ei, ea), (mi, ma) = expected[key], measured[key]
            what = f"input {ei} -> {mi} bytes" if ei != mi else f"archive {ea} -> {ma} bytes ({ma - ea:+d})"
            failures.append(f"{key[0]} level {key[1]}: {what}")
    if failures:
        print("archive sizes changed (if deliberate: test/regression/check_sizes.py --update, and commit sizes.csv):")
        for f in failures:
            print("  " + f)
        return 1
    print(f"{len(measured)} archive sizes as recorded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
