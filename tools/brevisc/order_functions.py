#!/usr/bin/env python3
"""Writes tools/brevisc/function-order.txt: the code sections of the functions that decoding runs,
in the order the linker lays brevisc out (CMakeLists.txt, brevis_function_order).

A command touches a few hundred of brevisc's functions, spread over 6 MB of code: each new
4 KiB page of it is a page fault, which on the virtual machines of docs/benchmarks.md costs more
than most small files take to decode. Laid out one after another, they share their pages.

The functions are those valgrind's callgrind sees run, in the order it lists them, while the
given brevisc (built with -ffunction-sections, as Release builds are) starts and decodes the
given archives. Any brevisc, archives and order give a correct program; a stale list only lays
out fewer of the functions together.

Usage: order_functions.py BREVISC ARCHIVE... [-o FILE]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile


def executed_functions(brevisc, archives):
    """Names of the functions callgrind sees run, demangled or not, first seen first."""
    names, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [["--version"]] + [["decompress", "-q", "-f", "-T", "1", a, "-o", os.path.join(tmp, "out")]
                                  for a in archives]
        for i, args in enumerate(runs):
            out = os.path.join(tmp, f"callgrind.{i}")
            subprocess.run(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
                            brevisc] + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for line in open(out, encoding="utf-8", errors="replace"):
                m = re.match(r"^c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
                if m:
                    name = re.sub(r"'\d+$", "", m.group(1))  # callgrind's mark of a recursive call
                    if name not in seen:
                        seen.add(name)
                        names.append(name)
    return names


def function_addresses(brevisc):
    """Mangled name -> address of each function brevisc defines (also test/tools/check_function_order.py)."""
    nm = subprocess.run(["nm", "--defined-only", brevisc], check=True, capture_output=True, text=True).stdout
    addresses = {}
    for fields in (line.split() for line in nm.splitlines()):
        if len(fields) == 3 and fields[1] in "tTwW":
            addresses.setdefault(fields[2], int(fields[0], 16))
    return addresses


def mangled_names(brevisc):
    """Demangled name -> mangled names of the functions defined in brevisc."""
    mangled = sorted(function_addresses(brevisc))
    demangled = subprocess.run(["c++filt"], input="\n".join(mangled), check=True, capture_output=True,
                               text=True).stdout.splitlines()
    table = {}
    for m, d in zip(mangled, demangled):
        table.setdefault(d, []).append(m)
        table.setdefault(m, []).append(m)
    return table


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("brevisc")
    ap.add_argument("archives", nargs="+")
    ap.add_argument("-o", "--output", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                          "function-order.txt"))
    a = ap.parse_args()
    table = mangled_names(a.brevisc)
    sections, done = [], set()
    for name in executed_functions(a.brevisc, a.archives):
        for m in table.get(name, []):  # functions of libc and the loader are not brevisc's
            if m not in done:
                done.add(m)
                # A function's section, or a static initializer's (GCC's .text.startup).
                sections += [f".text.{m}", f".text.startup.{m}"]
    with open(a.output, "w") as f:
        f.write("\n".join(sections) + "\n")
    print(f"order_functions: {len(done)} functions, {a.output}", file=sys.stderr)


if __name__ == "__main__":
    main()
