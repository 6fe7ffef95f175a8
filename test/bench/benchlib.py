"""What the end-to-end benchmarks share: running a command, timing it file to file, the options
every one takes, and the rounds that rotate the order of the tools."""
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, capture=False):
    r = subprocess.run(cmd, check=True, stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
    return r.stdout if capture else None


def timed(cmd, output):
    """Seconds `cmd` takes, `output` removed and dirty pages written back (sync) first, so that
    no run pays for writing back the one before."""
    if os.path.exists(output):
        os.remove(output)
    os.sync()
    start = time.perf_counter()
    run(cmd)
    return time.perf_counter() - start


def add_common_arguments(p, baseline_help):
    p.add_argument("files", nargs="*")
    p.add_argument("--brevisc", default=os.path.join(ROOT, "build/tools/brevisc/brevisc"))
    p.add_argument("--baseline", help=baseline_help)
    p.add_argument("--gen", default=os.path.join(ROOT, "build/tools/gen/brevis-gen"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--workdir", help="where inputs, archives and outputs go (default: a temporary directory)")


def timed_rounds(tools, rounds, output):
    """Every tool of `tools` (name -> command) timed `rounds` times, the order rotating from
    round to round so that no tool always follows the same one; name -> list of seconds."""
    times = {t: [] for t in tools}
    order = list(tools)
    for r in range(rounds):
        for t in order[r % len(order):] + order[:r % len(order)]:
            times[t].append(timed(tools[t], output))
    return times


def synthetic_checkpoint(gen, work, size, *options):
    """A deterministic checkpoint from brevis-gen of `size` (e.g. 128MiB) and its `options`, made
    once in `work`."""
    tag = "".join(o.strip("-") for o in options)
    path = os.path.join(work, f"synthetic-{size}{'-' + tag if tag else ''}.safetensors")
    if not os.path.exists(path):
        run([gen, "--size", size, "-o", path, *options])
    return path
