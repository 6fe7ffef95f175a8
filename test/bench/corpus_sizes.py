#!/usr/bin/env python3
"""Archive sizes on a corpus against the peers' sizes in PEERS.csv.

For every file listed in PEERS.csv (or given), compresses it with `brevisc compress` at each
requested level and prints the archive size as % of the original beside the best peer's
(measured elsewhere, from PEERS.csv) and zstd -19's, and the gap in percentage points.

Usage: corpus_sizes.py [--brevisc PATH] [--corpus DIR] [--levels 5,9] [--markdown] [FILE ...]
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="*")
    p.add_argument("--brevisc", default=os.path.join(root, "build/tools/brevisc/brevisc"))
    p.add_argument("--corpus", default=os.path.join(root, "../shared/corpus"))
    p.add_argument("--levels", default="5,9")
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    levels = [int(x) for x in a.levels.split(",")]
    peers = {}
    peers_csv = os.path.join(a.corpus, "PEERS.csv")
    if os.path.exists(peers_csv):
        with open(peers_csv, newline="") as f:
            for row in csv.DictReader(f):
                peers[row["file"]] = row
    files = a.files or [os.path.join(a.corpus, name) for name in sorted(peers)]
    if not files:
        sys.exit("corpus_sizes: no input")
    cols = [f"level {l}" for l in levels]
    if a.markdown:
        print("| file | bytes | " + " | ".join(cols) + " | best peer | zstd -19 | gap (level %d) |" % levels[0])
        print("|---|---:|" + "---:|" * len(cols) + "---|---:|---:|")
    wins = 0
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "x.brv")
        for path in files:
            name = os.path.basename(path)
            size = os.path.getsize(path)
            pct = []
            for level in levels:
                subprocess.run([a.brevisc, "compress", "-q", "-f", "-l", str(level), path, "-o", out], check=True)
                pct.append(100.0 * os.path.getsize(out) / size)
            peer = peers.get(name)
            best = float(peer["best_peer_pct"]) if peer else None
            gap = pct[0] - best if best is not None else None
            wins += gap is not None and gap < 0
            best_s = f"{best:.2f}% ({peer['best_peer'].strip()})" if peer else "-"
            zstd_s = f"{float(peer['zstd-19_pct']):.2f}%" if peer and peer["zstd-19_pct"] else "-"
            gap_s = f"{gap:+.2f}" if gap is not None else "-"
            if a.markdown:
                print(f"| {name} | {size} | " + " | ".join(f"{x:.2f}%" for x in pct) + f" | {best_s} | {zstd_s} | {gap_s} |")
            else:
                print(f"{name:48s} " + " ".join(f"{x:7.2f}%" for x in pct) + f"  best {best_s:24s} gap {gap_s}")
    print(f"\nsmaller than the best peer on {wins} of {len(files)} files at level {levels[0]}")


if __name__ == "__main__":
    main()
