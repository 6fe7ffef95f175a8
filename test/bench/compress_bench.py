#!/usr/bin/env python3
"""Compression benchmark: brevisc's levels against zstd -3, file to file, page cache warm.

For each checkpoint, time, interleaved so that machine drift hits every tool alike, N rounds of
  zstd -3 -T1                      (the reference every speed is a ratio to)
  brevisc compress -l L -T1        for each level L of --levels (default 1 and 5)
  brevisc compress -l L -T2        (with --threads2: two threads, reported as a ratio to -T1)
and, with --baseline PATH, the same commands of another brevisc build (before a change).
Each output is removed and dirty pages written back (sync) before each timed run; the order of
the tools rotates from round to round, so that no tool always follows the same one.
Reports the median wall time, GB/s of original bytes (per core at -T1), each speed as a ratio
to zstd -3, the archive's size, and brevisc's peak memory (its --json peak_memory_bytes, from
one extra run of each command). Every sample goes to stderr.

Usage: compress_bench.py [--brevisc PATH] [--baseline PATH] [--gen PATH] [--rounds N]
                         [--levels 1,5] [--threads2] [--synthetic SIZE] [--hidden N]
                         [--workdir DIR] [--markdown] [FILE ...]
With --synthetic SIZE (e.g. 128MiB), a deterministic checkpoint from brevis-gen is added
(--hidden N passes its layer width: 512 makes many layers instead of one large embedding).
With several files, a last row per tool gives the total: all original bytes over the sum of
the medians.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

from benchlib import add_common_arguments, run, synthetic_checkpoint, timed, timed_rounds


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(p, "another brevisc binary to time in the same rounds")
    p.add_argument("--levels", default="1,5", help="comma-separated brevisc levels")
    p.add_argument("--threads2", action="store_true", help="also time every level on two threads")
    p.add_argument("--synthetic", help="add a synthetic BF16 checkpoint of this size (e.g. 128MiB)")
    p.add_argument("--hidden", help="brevis-gen --hidden for --synthetic")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    a = p.parse_args()
    if shutil.which("zstd") is None:
        sys.exit("compress_bench: zstd is not installed (tools/setup.sh installs it)")
    levels = [int(x) for x in a.levels.split(",") if x]
    work = a.workdir or tempfile.mkdtemp(prefix="brevis-bench-")
    os.makedirs(work, exist_ok=True)
    files = list(a.files)
    if a.synthetic:
        files.append(synthetic_checkpoint(a.gen, work, a.synthetic, *(["--hidden", a.hidden] if a.hidden else [])))
    if not files:
        sys.exit("compress_bench: no input (give files or --synthetic SIZE)")

    rows = []
    for f in files:
        name = os.path.basename(f)
        size = os.path.getsize(f)
        out = os.path.join(work, name + ".out")
        tools = {"zstd -3": ["zstd", "-3", "-T1", "-q", "-f", f, "-o", out]}
        binaries = [("brevisc", a.brevisc)] + ([("baseline", a.baseline)] if a.baseline else [])
        for label, binary in binaries:
            for level in levels:
                for threads in [1, 2] if a.threads2 else [1]:
                    tools[f"{label} -l{level} -T{threads}"] = [binary, "compress", "-q", "-f", "-l", str(level),
                                                               "-T", str(threads), f, "-o", out]
        sizes, peaks = {}, {}
        for t, cmd in tools.items():  # one untimed run each: sizes, peak memory, a warm cache
            if cmd[0] == "zstd":
                timed(cmd, out)
            else:
                if os.path.exists(out):
                    os.remove(out)
                report = json.loads(run(cmd[:2] + ["--json"] + cmd[2:], capture=True))
                peaks[t] = report.get("peak_memory_bytes")
            sizes[t] = os.path.getsize(out)
        times = timed_rounds(tools, a.rounds, out)
        if os.path.exists(out):
            os.remove(out)
        for t, v in times.items():  # every sample, for judging the noise
            print(f"{name} {t}: " + " ".join(f"{x:.3f}" for x in v), file=sys.stderr)
        med = {t: statistics.median(v) for t, v in times.items()}
        rows.append((name, size, sizes, peaks, med))

    if len(rows) > 1:
        tools = rows[0][4]
        rows.append((f"total of {len(rows)} files", sum(r[1] for r in rows),
                     {t: sum(r[2][t] for r in rows) for t in tools}, {},
                     {t: sum(r[4][t] for r in rows) for t in tools}))
    if a.markdown:
        print("| file | original | tool | archive | median s | GB/s | × zstd -3 | × -T1 | peak memory |")
        print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, size, sizes, peaks, med in rows:
        base = med["zstd -3"]
        for t, s in med.items():
            gbps = size / s / 1e9
            one = med.get(t.replace("-T2", "-T1")) if t.endswith("-T2") else None
            scale = f"{one / s:.2f}" if one else ""
            peak = f"{peaks[t] / 1e6:.0f} MB" if peaks.get(t) else ""
            if a.markdown:
                print(f"| {name} | {size/1e6:.1f} MB | {t} | {100*sizes[t]/size:.2f}% | {s:.3f} | {gbps:.3f} | "
                      f"{base/s:.2f} | {scale} | {peak} |")
            else:
                print(f"{name:36s} {t:22s} {100*sizes[t]/size:6.2f}% {s:8.3f} s {gbps:6.3f} GB/s "
                      f"{base/s:5.2f}x zstd -3 {scale:>5s} {peak}")
    if not a.workdir:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
