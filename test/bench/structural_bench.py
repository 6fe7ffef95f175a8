#!/usr/bin/env python3
"""Programs of nested structural operators: the interpreter against the JIT, same run.

Writes a deterministic payload and a single expression of five nested structural operators
producing 64 MiB of 16-bit words,
  map xor 0x5555 (scan add 7 (concat(lit raw u16[...], repeat 4 (map gray (lit raw u16[...])))))
then times, interleaved over N rounds, `brevisc run PROGRAM -o /dev/null` with and without
--jit (after one untimed round each, so that the JIT's compiled code is in its cache, as it
is for a user decoding programs of a shape seen before), and checks both outputs are equal.
Reports the medians and their ratio.

Usage: structural_bench.py [--brevisc PATH] [--rounds N] [--workdir DIR]
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

WORDS = 1 << 25  # 64 MiB of u16 words


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brevisc", default=os.path.join(root, "build/tools/brevisc/brevisc"))
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--workdir", help="where the program and its outputs go (default: a temporary directory)")
    a = p.parse_args()
    work = a.workdir or tempfile.mkdtemp(prefix="brevis-structural-")
    os.makedirs(work, exist_ok=True)

    head = WORDS // 2 - 1        # the concat's first part; the scan adds one word
    period = WORDS // 8          # the repeat's body, 4 passes
    payload = os.path.join(work, "nest.bin")
    rng = random.Random(7)
    with open(payload, "wb") as f:
        f.write(rng.randbytes(2 * (head + period)))
    program = os.path.join(work, "nest.bdsl")
    with open(program, "w") as f:
        f.write(f"map xor 0x5555 (scan add 7 (concat(lit raw u16[{head}] @0+{2 * head}, "
                f"repeat 4 (map gray (lit raw u16[{period}] @{2 * head}+{2 * period})))))\n")

    tools = {
        "interpreter": [a.brevisc, "run", "--payload", payload, program, "-f", "-o"],
        "--jit": [a.brevisc, "run", "--jit", "--payload", payload, program, "-f", "-o"],
    }
    outputs = {t: os.path.join(work, t.strip("-") + ".out") for t in tools}
    for t, cmd in tools.items():  # untimed: checks the bytes, fills the JIT's cache
        subprocess.run(cmd + [outputs[t]], check=True)
    with open(outputs["interpreter"], "rb") as x, open(outputs["--jit"], "rb") as y:
        if x.read() != y.read():
            sys.exit("structural_bench: the JIT's bytes differ from the interpreter's")
    times = {t: [] for t in tools}
    for r in range(a.rounds):
        for t in (list(tools) if r % 2 == 0 else reversed(list(tools))):
            start = time.perf_counter()
            subprocess.run(tools[t] + ["/dev/null"], check=True)
            times[t].append(time.perf_counter() - start)
    for t, v in times.items():
        print(f"{t}: " + " ".join(f"{x:.3f}" for x in v), file=sys.stderr)
    med = {t: statistics.median(v) for t, v in times.items()}
    print(f"64 MiB, 5 nested structural operators: interpreter {med['interpreter']:.3f} s, "
          f"--jit {med['--jit']:.3f} s, --jit {med['interpreter'] / med['--jit']:.2f}x the interpreter")


if __name__ == "__main__":
    main()
