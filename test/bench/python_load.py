#!/usr/bin/env python3
"""Loading archives from Python against `brevisc decompress -o /dev/null`, in one run.

For each checkpoint: compresses it (level 1 unless --level), then times, best of --runs run
alternately, `brevisc decompress -T N ARCHIVE -o /dev/null` and
`brevis.numpy.load_file(ARCHIVE, threads=N)` for each N of --threads (and the median ratio of
the pairs), and `safe_open(...).get_tensor(name)` for the largest, a middle and the
smallest tensor (each against its size: random access decodes that tensor alone), and
get_slice of ten rows of the largest (the pieces holding them alone).

Usage: python_load.py [--brevisc PATH] [--threads 1,2] [--runs 5] [--level 1] CHECKPOINT...
(run with the interpreter and PYTHONPATH the package was built for: /usr/bin/python3 and
build/tools/python)."""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import brevis
import brevis.numpy


def best(runs, f):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def paired(runs, a, b):
    """Best times of `a` and `b` run alternately (a shared machine's load then falls on both),
    and the median of the runs' ratios b/a."""
    ta, tb, ratios = [], [], []
    for _ in range(runs):
        ta.append(best(1, a))
        tb.append(best(1, b))
        ratios.append(tb[-1] / ta[-1])
    return min(ta), min(tb), sorted(ratios)[len(ratios) // 2]


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkpoints", nargs="+")
    p.add_argument("--brevisc", default=os.path.join(root, "build/tools/brevisc/brevisc"))
    p.add_argument("--threads", default="1,2")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--level", type=int, default=1)
    a = p.parse_args()
    print("| checkpoint | threads | decompress -o /dev/null | load_file | load / decompress |")
    print("|---|---|---|---|---|")
    access = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in a.checkpoints:
            archive = os.path.join(tmp, os.path.basename(path) + ".brv")
            brevis.compress(path, archive, level=a.level, overwrite=True)
            size = os.path.getsize(path)
            for n in [int(t) for t in a.threads.split(",")]:
                cli, py, ratio = paired(
                    a.runs,
                    lambda: subprocess.run([a.brevisc, "decompress", "-q", "-f", "-T", str(n), archive, "-o", "/dev/null"],
                                           check=True),
                    lambda: brevis.numpy.load_file(archive, threads=n))
                print(f"| {os.path.basename(path)} ({size / 2**20:.0f} MiB) | {n} | {cli * 1000:.0f} ms "
                      f"({size / cli / 1e9:.2f} GB/s) | {py * 1000:.0f} ms ({size / py / 1e9:.2f} GB/s) | "
                      f"{py / cli:.2f} (median of pairs {ratio:.2f}) |")
            with brevis.safe_open(archive) as f:
                infos = f._archive.tensors
                by_bytes = sorted(f.keys(), key=lambda k: infos[k].nbytes)
                for name in (by_bytes[-1], by_bytes[len(by_bytes) // 2], by_bytes[0]):
                    t = best(a.runs, lambda: f.get_tensor(name))
                    access.append((os.path.basename(path), name, infos[name].nbytes, t))
                # Ten rows from the middle of the largest tensor: the pieces holding them alone.
                large = by_bytes[-1]
                rows = infos[large].shape[0] if infos[large].shape else 0
                if rows >= 10:
                    s = f.get_slice(large)
                    t = best(a.runs, lambda: s[rows // 2:rows // 2 + 10])
                    nbytes = infos[large].nbytes // rows * 10
                    access.append((os.path.basename(path), f"{large}[{rows // 2}:{rows // 2 + 10}] (get_slice)",
                                   nbytes, t))
    print()
    print("| checkpoint | tensor | bytes | get_tensor | µs per KiB |")
    print("|---|---|---|---|---|")
    for ckpt, name, nbytes, t in access:
        print(f"| {ckpt} | {name} | {nbytes} | {t * 1e3:.2f} ms | {t * 1e6 / max(nbytes / 1024, 1):.2f} |")


if __name__ == "__main__":
    sys.exit(main())
