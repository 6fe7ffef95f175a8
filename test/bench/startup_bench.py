#!/usr/bin/env python3
"""Start-up benchmark: how long a command without --jit takes on a small file, against zstd.

Writes a small deterministic safetensors file (test/tools/many_tensors.py, --tensors of 16
bytes each), compresses it with brevisc and zstd, then times N interleaved rounds of
  zstd -d                        of the zstd file
  brevisc info ARCHIVE           for each brevisc given
  brevisc decompress ARCHIVE     for each brevisc given
and prints the median wall time and CPU time of each, in milliseconds (every sample goes to
stderr with -v).
With --baseline, the same commands of a second brevisc (an earlier build) run in the same rounds.

Usage: startup_bench.py [--brevisc PATH] [--baseline PATH] [--rounds N] [--tensors N] [-v]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def timed(cmd):
    """Wall time and CPU time (user + system) of one run: on a loaded machine the CPU time says
    more about what start-up costs, the wall time about what a user waits."""
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise subprocess.CalledProcessError(child.returncode, cmd)
    return wall, usage.ru_utime + usage.ru_stime


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--brevisc", default=os.path.join(root, "build/tools/brevisc/brevisc"))
    p.add_argument("--baseline", help="a second brevisc to time in the same rounds")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--tensors", type=int, default=64)
    p.add_argument("-v", action="store_true", help="print every sample to stderr")
    a = p.parse_args()
    if shutil.which("zstd") is None:
        sys.exit("startup_bench: zstd is not installed (tools/setup.sh installs it)")
    work = tempfile.mkdtemp(prefix="brevis-startup-")
    try:
        src = os.path.join(work, "small.safetensors")
        run([sys.executable, os.path.join(root, "test/tools/many_tensors.py"), "--tensors", str(a.tensors), "-o", src])
        brv = src + ".brv"
        zst = src + ".zst"
        out = os.path.join(work, "out.safetensors")
        run([a.brevisc, "compress", "-q", "-f", src, "-o", brv])
        run(["zstd", "-3", "-q", "-f", src, "-o", zst])
        tools = {"zstd -d": ["zstd", "-d", "-q", "-f", zst, "-o", out]}
        builds = [("", a.brevisc)] + ([("baseline ", a.baseline)] if a.baseline else [])
        for label, exe in builds:
            tools[f"{label}brevisc info"] = [exe, "info", brv]
            tools[f"{label}brevisc decompress"] = [exe, "decompress", "-q", "-f", brv, "-o", out]
        times = {t: [] for t in tools}
        for cmd in tools.values():  # one warm-up round, untimed
            run(cmd)
        order = list(tools)
        for r in range(a.rounds):
            for t in order[r % len(order):] + order[:r % len(order)]:
                times[t].append(timed(tools[t]))
        if a.v:
            for t, v in times.items():
                print(f"{t}: " + " ".join(f"{1000 * w:.2f}/{1000 * c:.2f}" for w, c in v), file=sys.stderr)
        print(f"{os.path.getsize(src)} bytes of safetensors, {a.tensors} tensors; archive {os.path.getsize(brv)} "
              f"bytes, zstd {os.path.getsize(zst)} bytes; median of {a.rounds} interleaved runs")
        print("| command | wall ms | × zstd -d | CPU ms | × zstd -d |")
        print("|---|---:|---:|---:|---:|")
        base = [statistics.median(x[i] for x in times["zstd -d"]) for i in (0, 1)]
        for t, v in times.items():
            wall, cpu = (statistics.median(x[i] for x in v) for i in (0, 1))
            print(f"| {t} | {1000 * wall:.2f} | {wall / base[0]:.2f} | {1000 * cpu:.2f} | {cpu / base[1]:.2f} |")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
