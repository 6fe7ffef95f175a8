#!/usr/bin/env python3
"""End-to-end decompression benchmark: brevisc against zstd, file to file, page cache warm.

For each checkpoint: compress it with `brevisc compress` (default level) and with `zstd -3`,
then time, interleaved so that machine drift hits every tool alike, N rounds of
  zstd -d            (one thread; zstd's decoder has no threads)
  brevisc decompress -T1          (interpreter)
  brevisc decompress -T2          (interpreter, two threads)
  brevisc decompress -T1 --jit    (LLVM-compiled decoders)
  zstd -d and brevisc -T1 pinned to one CPU (taskset -c 0): one core for everything, the
  kernel's copy of the output into the page cache and brevisc's writer thread included
Each output is removed and the page cache's dirty pages are written back (sync) before each
timed run, so that no run pays for writing back the last one's output. Deleting a freshly
written gigabyte still leaves the file system work to do in the background (on a 2-core VM,
whichever run came next was up to 50% slower), so the order of the tools rotates from round
to round: no tool always follows the same one.
With --from-disk, each tool's archive is dropped from the page cache (written back, then
POSIX_FADV_DONTNEED) before the untimed warm-up round, which reads it from disk through the
tool's own way of reading: the page cache then holds it as that tool left it, as for an
archive downloaded or copied earlier and evicted since (a baseline reads its own copy). Without
it, the archives are in the cache as `brevisc compress` and `zstd` wrote them.
Reports the median wall time, GB/s of original bytes, and each speed as a ratio to zstd -d
(every sample goes to stderr).

Usage: decompress_bench.py [--brevisc PATH] [--baseline PATH] [--gen PATH] [--rounds N]
                           [--synthetic SIZE] [--small-tensors SIZE] [--workdir DIR] [--markdown]
                           [--from-disk]
                           [FILE ...]
With --synthetic SIZE (e.g. 1GiB), a deterministic checkpoint from brevis-gen is added; with
--small-tensors SIZE, one of many small tensors (brevis-gen --small-tensors). With several
files, a last row per tool gives the total: all original bytes over the sum of the medians.
With --baseline PATH, another brevisc build (before a change) decodes the same archive in the
same rounds ("baseline -T1" ...), so that a change's effect is measured in one run.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

from benchlib import add_common_arguments, run, synthetic_checkpoint, timed, timed_rounds


def drop_from_page_cache(path):
    """Writes the file's pages back and evicts them, so that its next reader reads it from disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def memory_file_system(directory):
    """The type of the file system that holds `directory` if it keeps files only in memory, where
    nothing can be evicted from the page cache (tmpfs, ramfs); else None."""
    kind = run(["stat", "-f", "-c", "%T", directory], capture=True).decode().strip()
    return kind if kind in ("tmpfs", "ramfs") else None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(p, "another brevisc binary to time on the same archives")
    p.add_argument("--synthetic", help="add a synthetic BF16 checkpoint of this size (e.g. 1GiB)")
    p.add_argument("--small-tensors", help="add a checkpoint of many small BF16 tensors of this size (e.g. 256MiB)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--no-jit", action="store_true", help="leave out the --jit rows")
    p.add_argument("--from-disk", action="store_true",
                   help="drop the archives from the page cache before the warm-up round, which reads them from disk")
    a = p.parse_args()
    if shutil.which("zstd") is None:
        sys.exit("decompress_bench: zstd is not installed (tools/setup.sh installs it)")
    work = a.workdir or tempfile.mkdtemp(prefix="brevis-bench-")
    os.makedirs(work, exist_ok=True)
    in_memory = a.from_disk and memory_file_system(work)
    if in_memory:
        sys.exit(f"decompress_bench: --from-disk needs a work directory on a disk: {work} is on "
                 f"{in_memory}, which cannot evict its files (give --workdir)")
    files = list(a.files)
    if a.synthetic:
        files.append(synthetic_checkpoint(a.gen, work, a.synthetic))
    if a.small_tensors:
        files.append(synthetic_checkpoint(a.gen, work, a.small_tensors, "--small-tensors"))
    if not files:
        sys.exit("decompress_bench: no input (give files, --synthetic SIZE or --small-tensors SIZE)")

    rows = []
    for f in files:
        name = os.path.basename(f)
        size = os.path.getsize(f)
        brv = os.path.join(work, name + ".brv")
        zst = os.path.join(work, name + ".zst")
        run([a.brevisc, "compress", "-q", "-f", f, "-o", brv])
        run(["zstd", "-3", "-T1", "-q", "-f", f, "-o", zst])
        out = os.path.join(work, name + ".out")
        variants = {"-T1": ["-T", "1"], "-T2": ["-T", "2"]}
        if not a.no_jit:
            variants["-T1 --jit"] = ["-T", "1", "--jit"]
        archives = [zst, brv]
        base_brv = brv
        if a.baseline and a.from_disk:  # its own copy: the first reader of a file sets how the cache holds it
            base_brv = os.path.join(work, name + ".baseline.brv")
            shutil.copyfile(brv, base_brv)
            archives.append(base_brv)
        tools = {"zstd -d": ["zstd", "-d", "-q", "-f", zst, "-o", out]}
        for t, options in variants.items():
            tools["brevisc " + t] = [a.brevisc, "decompress", "-q", "-f", *options, brv, "-o", out]
        if a.baseline:
            for t, options in variants.items():
                tools["baseline " + t] = [a.baseline, "decompress", "-q", "-f", *options, base_brv, "-o", out]
        if a.from_disk:
            for archive in archives:
                drop_from_page_cache(archive)
        if shutil.which("taskset"):
            tools["zstd -d, 1 CPU"] = ["taskset", "-c", "0"] + tools["zstd -d"]
            tools["brevisc -T1, 1 CPU"] = ["taskset", "-c", "0"] + tools["brevisc -T1"]
        for t, cmd in tools.items():  # one warm-up round, untimed
            timed(cmd, out)
        times = timed_rounds(tools, a.rounds, out)
        if os.path.exists(out):
            os.remove(out)
        if base_brv != brv:
            os.remove(base_brv)
        for t, v in times.items():  # every sample, for judging the noise
            print(f"{name} {t}: " + " ".join(f"{x:.3f}" for x in v), file=sys.stderr)
        med = {t: statistics.median(v) for t, v in times.items()}
        rows.append((name, size, os.path.getsize(brv), os.path.getsize(zst), med))

    if len(rows) > 1:
        total = {t: sum(r[4][t] for r in rows) for t in rows[0][4]}
        rows.append((f"total of {len(rows)} files", sum(r[1] for r in rows), sum(r[2] for r in rows),
                     sum(r[3] for r in rows), total))
    if a.markdown:
        print("| file | original | brevisc archive | zstd -3 | tool | median s | GB/s | × zstd -d |")
        print("|---|---:|---:|---:|---|---:|---:|---:|")
    for name, size, brv, zst, med in rows:
        base = med["zstd -d"]
        for t, s in med.items():
            gbps = size / s / 1e9
            if a.markdown:
                print(f"| {name} | {size/1e6:.1f} MB | {100*brv/size:.2f}% | {100*zst/size:.2f}% | {t} | "
                      f"{s:.3f} | {gbps:.2f} | {base/s:.2f} |")
            else:
                print(f"{name:40s} {t:20s} {s:8.3f} s {gbps:6.2f} GB/s {base/s:5.2f}x zstd -d")
    if not a.workdir:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
