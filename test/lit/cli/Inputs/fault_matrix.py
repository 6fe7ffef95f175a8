#!/usr/bin/env python3
"""Faults around brevisc: killed runs, a file-size limit, a missing output directory, an input
changing during compression, two decompressions racing to one output, a FIFO, many tensors.

Usage: fault_matrix.py WORKDIR DATA   (brevisc on PATH; DATA is test/data). Prints one line per case; exits 1 on the
first broken promise.
"""
import hashlib, json, os, random, resource, signal, struct, subprocess, sys, threading, time

work, data = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
rng = random.Random(12)


def path(name):
    return os.path.join(work, name)


def check(ok, what):
    if not ok:
        print("BROKEN:", what)
        sys.exit(1)


def safetensors(tensors):
    """tensors: list of (name, dtype, shape, bytes); written contiguously in order."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def bf16_weights(n):
    # Bell-shaped exponents and noisy mantissas, as trained weights have.
    out = bytearray()
    for _ in range(n):
        out += struct.pack("<H", (rng.getrandbits(1) << 15) | (rng.choice(range(115, 125)) << 7) | rng.getrandbits(7))
    return bytes(out)


def digest(p):
    return hashlib.sha256(open(p, "rb").read()).hexdigest()


def leftovers(d):
    return [n for n in os.listdir(d) if ".brevisc-tmp-" in n]


# Every wait is bounded, so that a run that never ends fails the test instead of hanging it.
LIMIT = 300


def run(*args, **kw):
    return subprocess.run(["brevisc", *args], capture_output=True, text=True, timeout=LIMIT, **kw)


def finish(p, what):
    """p's exit status; a process still running after LIMIT seconds is killed and fails `what`."""
    try:
        return p.wait(timeout=LIMIT)
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, f"{what}: still running after {LIMIT} s")


# A checkpoint of a few MB: big enough that a run takes a noticeable time.
model = path("model.safetensors")
with open(model, "wb") as f:
    f.write(safetensors([(f"layers.{i}.w", "BF16", [512, 256], bf16_weights(512 * 256)) for i in range(12)]))
original = digest(model)
archive = path("model.brv")
check(run("compress", "-q", "-T", "2", model, "-o", archive).returncode == 0, "compress")
packed = digest(archive)

# 1. Killed at random points: never a file under the final name unless complete and correct;
#    the input intact.
for cmd, out in (("compress", path("killed.brv")), ("decompress", path("killed.safetensors"))):
    for attempt in range(4):
        if os.path.exists(out):
            os.remove(out)
        src = model if cmd == "compress" else archive
        p = subprocess.Popen(["brevisc", cmd, "-q", "-T", "2", src, "-o", out])
        time.sleep(rng.uniform(0.0, 0.4))
        p.send_signal(signal.SIGKILL)
        finish(p, f"{cmd} killed")
        if os.path.exists(out):
            check(digest(out) == (packed if cmd == "compress" else original), f"{cmd} killed: a wrong {out}")
        check(digest(model) == original and digest(archive) == packed, f"{cmd} killed: its input changed")
    # What the kills left behind is removed by the next run writing that target.
    check(run(cmd, "-q", "-f", src, "-o", out).returncode == 0, f"{cmd} after kills")
    check(leftovers(work) == [], f"{cmd}: temporaries of killed runs left behind: {leftovers(work)}")
print("killed runs: no partial output, inputs intact, temporaries cleaned")

# 2. A file-size limit (a full disk without root): a clean error, nothing left behind.
limit = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
r = subprocess.run(["brevisc", "decompress", "-T", "2", archive, "-o", path("full.safetensors")],
                   capture_output=True, text=True, preexec_fn=limit, timeout=LIMIT)
check(r.returncode == 1 and "brevisc: error:" in r.stderr, f"file-size limit: {r.returncode} {r.stderr!r}")
check(not os.path.exists(path("full.safetensors")) and leftovers(work) == [], "file-size limit left files")
r = subprocess.run(["brevisc", "compress", model, "-o", path("full.brv")], capture_output=True, text=True,
                   preexec_fn=limit, timeout=LIMIT)
check(r.returncode == 1 and "brevisc: error:" in r.stderr, f"file-size limit on compress: {r.stderr!r}")
check(not os.path.exists(path("full.brv")) and leftovers(work) == [], "file-size limit left an archive")
print("file-size limit: one error line, nothing written")

# 3. An output directory that does not exist.
r = run("decompress", archive, "-o", path("gone/out.safetensors"))
check(r.returncode == 1 and "cannot create" in r.stderr, f"missing directory: {r.stderr!r}")
print("missing output directory: one error line")

# 4. An input that changes during compression: detected, nothing written.
big = path("big.safetensors")
with open(big, "wb") as f:
    f.write(safetensors([(f"w{i}", "BF16", [1024, 512], bf16_weights(1024 * 512)) for i in range(40)]))
p = subprocess.Popen(["brevisc", "compress", "-T", "1", big, "-o", path("big.brv")], stderr=subprocess.PIPE, text=True)
time.sleep(0.3)  # past start-up (the file is open and mapped), well before the end
fd = os.open(big, os.O_WRONLY)
os.pwrite(fd, b"\x7f\x7f", os.path.getsize(big) - 2)
os.close(fd)
err = p.communicate(timeout=LIMIT)[1]
if p.returncode == 0:
    print("input changed after compression ended (machine too fast); case skipped")
else:
    check("changed while it was being read" in err, f"changed input: {err!r}")
    check(not os.path.exists(path("big.brv")) and leftovers(work) == [], "changed input: something written")
    print("input changed during compression: refused, nothing written")

# 4b. Interrupted (SIGINT, SIGTERM, SIGHUP) while decoding a directory archive, into a new
#     directory and into an existing one with -f: nothing of ours is left, nothing else touched.
#     The signal is sent as soon as the outputs' temporaries exist (all are made before decoding).
tree = path("tree")
os.makedirs(os.path.join(tree, "sub"))
os.rename(big, os.path.join(tree, "sub", "big.safetensors"))
open(os.path.join(tree, "model.safetensors"), "wb").write(open(model, "rb").read())
check(run("compress", "-q", tree, "-o", path("tree.brv")).returncode == 0, "compress a tree")


def interrupt(target, sig, extra=()):
    p = subprocess.Popen(["brevisc", "decompress", "-q", "-T", "1", *extra, path("tree.brv"), "-o", target])
    deadline = time.time() + 20
    while p.poll() is None and time.time() < deadline:
        here = [os.path.join(d, n) for d, _, names in os.walk(work) for n in names + _ if ".brevisc-tmp-" in n]
        if here:
            p.send_signal(sig)
            break
        time.sleep(0.001)
    return finish(p, f"decompression interrupted by {sig!r}")


interrupted = 0
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    if interrupt(path("fresh"), sig) != 0:
        interrupted += 1
        check(not os.path.exists(path("fresh")) and leftovers(work) == [], f"{sig!r}: new directory left {leftovers(work)}")
    else:
        subprocess.run(["rm", "-rf", path("fresh")])
    existing = path("existing")
    os.makedirs(existing, exist_ok=True)
    open(os.path.join(existing, "mine.txt"), "w").write("mine")
    if interrupt(existing, sig, ["-f"]) != 0:
        interrupted += 1
        left = sorted(os.listdir(existing))
        check(left == ["mine.txt"], f"{sig!r}: existing directory holds {left}")
    subprocess.run(["rm", "-rf", existing])
check(interrupted >= 3, f"only {interrupted} of 6 runs were interrupted")
# A signal the caller ignores (nohup, trap '' INT) stays ignored.
p = subprocess.Popen(["brevisc", "decompress", "-q", "-T", "1", path("tree.brv"), "-o", path("ignored")],
                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
time.sleep(0.05)
p.send_signal(signal.SIGINT)
check(finish(p, "an ignored SIGINT") == 0 and os.path.isdir(path("ignored")), "an ignored SIGINT stopped decompression")
subprocess.run(["rm", "-rf", path("ignored")])
print("interrupted directory decompression: nothing left, nothing else touched; ignored signals stay ignored")

# 5. Two decompressions racing to one output without -f: one wins, the other leaves it alone.
race = path("race.safetensors")
procs = [subprocess.Popen(["brevisc", "decompress", "-q", "-T", "1", archive, "-o", race], stderr=subprocess.PIPE,
                          text=True) for _ in range(2)]
results = [(finish(p, "race"), p.stderr.read()) for p in procs]
check(sorted(code for code, _ in results) == [0, 1], f"race: {results}")
check(digest(race) == original and leftovers(work) == [], "race: wrong output or leftovers")
print("two decompressions racing: one wins, the other refuses")

# 6. A FIFO as input, whichever end opens it first: the reader's open waits for its writer, as
#    cat's does (a reader that found no writer yet and read nothing failed at random).
fifo = path("archive.fifo")
os.mkfifo(fifo)


def feed():
    with open(fifo, "wb") as f:
        f.write(open(archive, "rb").read())


for reader_first in (True, False):
    out = path("fifo.safetensors")
    if os.path.exists(out):
        os.remove(out)
    writer = threading.Thread(target=feed, daemon=True)
    if not reader_first:
        writer.start()
        time.sleep(0.2)
    p = subprocess.Popen(["brevisc", "decompress", "-q", fifo, "-o", out], stderr=subprocess.PIPE, text=True)
    if reader_first:
        time.sleep(0.2)
        writer.start()
    try:
        err = p.communicate(timeout=LIMIT)[1]
    except subprocess.TimeoutExpired:
        p.kill()
        check(False, f"fifo, reader first {reader_first}: still running after {LIMIT} s")
    writer.join(timeout=10)  # the reader has ended: the writer is done, or waits for no one
    check(not writer.is_alive(), f"fifo, reader first {reader_first}: the writer was never read ({err!r})")
    check(p.returncode == 0 and digest(out) == original, f"fifo, reader first {reader_first}: {err!r}")
print("archive from a FIFO: decoded, reader or writer first")

# 7. 10,000 tensors.
many = path("many.safetensors")
with open(many, "wb") as f:
    f.write(safetensors([(f"blocks.{i}.bias", "F32", [4], struct.pack("<4f", i, -i, 0.5, 1e-3)) for i in range(10000)]))
start = time.time()
check(run("compress", "-q", many, "-o", path("many.brv")).returncode == 0, "10,000 tensors: compress")
r = run("decompress", "-q", path("many.brv"), "-o", path("many.back"))
check(r.returncode == 0 and digest(path("many.back")) == digest(many), f"10,000 tensors: {r.stderr!r}")
r = run("run", path("many.brv"), "--tensor", "blocks.9999.bias", "-o", path("one.bin"))
check(r.returncode == 0 and open(path("one.bin"), "rb").read() == struct.pack("<4f", 9999, -9999, 0.5, 1e-3),
      "10,000 tensors: one tensor")
print(f"10,000 tensors: round trip in {time.time() - start:.1f} s")

# 8. A tensor of 2^31 + 8 elements (decoded from a committed 431-byte archive of a sparse file):
#    every byte decoded and checked against its digests, without writing it anywhere.
big = os.path.join(data, "zeros-2g.u8.safetensors.brv")
r = run("verify", big)
check(r.returncode == 0 and "2.15 GB decoded" in r.stdout, f"2^31+ elements: {r.stdout!r} {r.stderr!r}")
r = run("run", big, "--tensor", "big", "-o", "/dev/null")
check(r.returncode == 0, f"2^31+ elements, one tensor: {r.stderr!r}")
print("a tensor of 2^31 + 8 elements: decoded and verified")
