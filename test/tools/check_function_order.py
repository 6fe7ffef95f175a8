#!/usr/bin/env python3
"""Checks that brevisc was laid out by tools/brevisc/function-order.txt: of the listed functions
that brevisc defines, most follow the one before them in memory (a layout that ignored the list
puts about half there). Usage: check_function_order.py BREVISC LIST [MIN_SHARE]"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "brevisc"))
from order_functions import function_addresses  # noqa: E402

brevisc, order = sys.argv[1], sys.argv[2]
minimum = float(sys.argv[3]) if len(sys.argv) > 3 else 0.7
address = function_addresses(brevisc)
listed = [line[len(".text."):] for line in open(order).read().split() if not line.startswith(".text.startup.")]
placed = [address[name] for name in listed if name in address]
if len(placed) < 100:
    sys.exit(f"check_function_order: only {len(placed)} of the {len(listed)} listed functions are in {brevisc}")
share = sum(b > a for a, b in zip(placed, placed[1:])) / (len(placed) - 1)
print(f"check_function_order: {len(placed)} functions, {share:.0%} after the one listed before them")
if share < minimum:
    sys.exit(f"check_function_order: {brevisc} does not follow {order} (fewer than {minimum:.0%} in order)")
