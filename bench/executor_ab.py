#!/usr/bin/python3
"""Two cellvm-executor builds side by side (A/B): zygote start and per-cell cost.

Drives each build's executor directly, as the agent does (docs/PROTOCOL.md
section 8; tests/test_executor_harness.py), alternating A and B in ABBA order
so that load on a shared machine falls on both alike, and prints medians and
the median of the paired ratios B/A:

- zygote start: `cellvm-executor --zygote` started until its Z_READY, without
  preloads (Python and the kernel alone) and with the agent's default ones;
- per cell: blocks of `1+1` cells, each on a new executor of its build,
  alternated; the round trip as this driver sees it and the executor's own
  CPU time (/proc/PID/schedstat) per cell;
- with --callgrind, instructions under valgrind's callgrind (exact and
  repeatable whatever the load, PYTHONHASHSEED=0, the main thread's): the
  zygote until Z_READY without preloads, and per `1+1` cell (an executor's
  total for 220 cells minus that for 20, over 200);
- with --prints, 10,000 `print(i)` in one cell, timed inside the cell: in a
  context that never wrote fds 1/2 directly, and right after an
  `os.write(1, ...)`, when the executor looks at its fd 1 capture pipe
  before buffering each print's text (python-embed/stream_sink.h);
- with --ipython, the reference the notebook emulation is measured against:
  IPython's own InteractiveShell.run_cell("1+1") in this process (Debian's
  python3-ipython).

    /usr/bin/python3 bench/executor_ab.py [--a DIR] [--b DIR] [--rounds N] [--preload-rounds N]
                                          [--cells N] [--callgrind] [--prints] [--ipython]

DIR is a build directory holding cellvm-executor (e.g. a copy of build/ from
the commit before a change, and build/); both default to build/, an A/B of
one build against itself: the noise. Nothing is asserted.
"""

import argparse
import glob
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

import cbor2  # noqa: E402

from cellvm._wire import FLAG_MORE, HEADER, encode_frames  # noqa: E402

Z_READY, Z_SPAWN, Z_SPAWNED = 0x4001, 0x4002, 0x4003
RESULT = 0x8013
X_READY, X_EXECUTE, X_END = 0x4010, 0x4011, 0x4012
DEFAULT_PRELOAD = "numpy,pandas,matplotlib,matplotlib.pyplot"  # the agent's


def read_message(sock):
    acc = b""
    while True:
        hdr = _recv_exact(sock, HEADER.size)
        if hdr is None:
            return None
        length, mtype, flags, rid = HEADER.unpack(hdr)
        acc += _recv_exact(sock, length) if length else b""
        if not flags & FLAG_MORE:
            return mtype, rid, (cbor2.loads(acc) if acc else {})


def _recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


class Zygote:
    def __init__(self, build, preload, wrapper=(), env=None):
        self.sock, remote = socket.socketpair()
        args = list(wrapper) + [os.path.join(build, "cellvm-executor"), "--zygote",
                                "--fd", str(remote.fileno()), "--preload", preload]
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(args, pass_fds=[remote.fileno()], stderr=subprocess.DEVNULL, env=env)
        remote.close()
        msg = read_message(self.sock)
        self.ready_s = time.perf_counter() - self.started
        if msg is None or msg[0] != Z_READY:
            sys.exit(f"{build}: no Z_READY ({msg})")
        self.spawned = 0

    def spawn(self):
        self.spawned += 1
        ours, theirs = socket.socketpair()
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        data = encode_frames(Z_SPAWN, self.spawned, {"context": f"c{self.spawned}", "cwd": "/"})
        socket.send_fds(self.sock, [data], [theirs.fileno(), out_w, err_w])
        for fd in (theirs.detach(), out_w, err_w):
            os.close(fd)
        mtype, _, body = read_message(self.sock)
        msg = read_message(ours)
        if mtype != Z_SPAWNED or msg is None or msg[0] != X_READY:
            sys.exit(f"spawn failed: {body} {msg}")
        return Executor(body["pid"], ours, (out_r, err_r))  # `1+1` writes nothing to them

    def close(self):
        self.sock.close()
        self.proc.wait()


class Executor:
    def __init__(self, pid, ctrl, pipes):
        self.pid = pid
        self.ctrl = ctrl
        self.pipes = pipes
        self.rid = 0

    def run(self, code):
        """Runs `code`; the text of its RESULT, if any."""
        self.rid += 1
        self.ctrl.sendall(encode_frames(X_EXECUTE, self.rid, {"code": code}))
        result = None
        while True:
            msg = read_message(self.ctrl)
            if msg is None:
                sys.exit("executor closed its socket")
            if msg[0] == RESULT:
                result = msg[2]["data"]["text/plain"]
            if msg[0] == X_END:
                if msg[2]["status"] != "ok":
                    sys.exit(f"cell failed: {code!r}")
                return result

    def drain_in_background(self):
        """Reads its stdout and stderr as the agent would (cells that print)."""
        def drain(fd):
            try:
                while os.read(fd, 65536):
                    pass
            except OSError:  # closed by close()
                pass
        for fd in self.pipes:
            threading.Thread(target=drain, args=(fd,), daemon=True).start()

    def cpu_ns(self):
        with open(f"/proc/{self.pid}/schedstat") as f:
            return int(f.read().split()[0])

    def close(self):
        self.ctrl.close()
        for fd in self.pipes:
            os.close(fd)


def abba(rounds):
    """0/1 (A/B) in ABBA order, `rounds` of each."""
    order = []
    while len(order) < 2 * rounds:
        order += [0, 1, 1, 0]
    return order[:2 * rounds]


def summary(name, unit, a, b, scale=1.0):
    pairs = [y / x for x, y in zip(a, b) if x > 0]
    ma, mb = statistics.median(a) * scale, statistics.median(b) * scale
    print(f"{name:<40} A {ma:10.3f} {unit}   B {mb:10.3f} {unit}   "
          f"B/A {statistics.median(pairs):.3f} (paired, n={len(pairs)})")


def zygote_start(builds, preload, rounds):
    times = ([], [])
    for i in abba(rounds):
        z = Zygote(builds[i], preload)
        times[i].append(z.ready_s)
        z.close()
    return times


def per_cell(builds, rounds, cells):
    """Each block on a new executor (one process's luck, its memory and CPU,
    otherwise weighs on every block of its build), warmed up first."""
    zs = [Zygote(b, "") for b in builds]
    wall, cpu = ([], []), ([], [])
    for i in abba(rounds):
        ex = zs[i].spawn()
        for _ in range(cells):
            ex.run("1+1")
        c0, t0 = ex.cpu_ns(), time.perf_counter()
        for _ in range(cells):
            ex.run("1+1")
        wall[i].append((time.perf_counter() - t0) / cells)
        cpu[i].append((ex.cpu_ns() - c0) / 1e9 / cells)
        ex.close()
    for z in zs:
        z.close()
    return wall, cpu


PRINTS = ("t = time.perf_counter()\nfor i in range(10000):\n    print(i)\n"
          "time.perf_counter() - t")


def prints(builds, rounds, after_fd_write):
    """Seconds per cell of 10,000 prints, timed inside the executor."""
    zs = [Zygote(b, "") for b in builds]
    exs = []
    for z in zs:
        ex = z.spawn()
        ex.drain_in_background()
        ex.run("import os, time")
        exs.append(ex)
    code = ("os.write(1, b'fd\\n')\n" if after_fd_write else "") + PRINTS
    times = ([], [])
    for i in abba(rounds):
        times[i].append(float(exs[i].run(code)))
    for ex, z in zip(exs, zs):
        ex.close()
        z.close()
    return times


def callgrind_total(path):
    with open(path) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no totals in {path}")


def callgrind(build, cells, outdir):
    """(zygote Ir until Z_READY and exit, executor Ir for `cells` cells of 1+1)."""
    for old in glob.glob(os.path.join(outdir, "cg.*")):
        os.unlink(old)
    # The main thread's count alone (thread 1): the output flusher thread
    # wakes every 30 ms of wall time, which valgrind stretches by the load.
    wrapper = ["valgrind", "--tool=callgrind", "--quiet", "--separate-threads=yes",
               f"--callgrind-out-file={outdir}/cg.%p"]
    # A fixed hash seed: the same dict and set layouts in every run, so the
    # same instructions.
    z = Zygote(build, "", wrapper, env=dict(os.environ, PYTHONHASHSEED="0"))
    ex = z.spawn()
    for _ in range(cells):
        ex.run("1+1")
    ex.close()
    z.close()
    zygote_file = os.path.join(outdir, f"cg.{z.proc.pid}-01")
    executor_file = os.path.join(outdir, f"cg.{ex.pid}-01")
    for _ in range(600):  # the executor writes its profile as it exits
        if os.path.exists(executor_file) and os.path.getsize(executor_file) > 0:
            try:
                return callgrind_total(zygote_file), callgrind_total(executor_file)
            except RuntimeError:
                pass
        time.sleep(0.1)
    raise RuntimeError(f"no callgrind output for executor {ex.pid}")


def ipython_run_cell(n):
    """Seconds per InteractiveShell.run_cell('1+1'), median of blocks of n."""
    import io
    from contextlib import redirect_stdout

    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    blocks = []
    with redirect_stdout(io.StringIO()):  # its displayhook prints Out[n]
        for _ in range(50):
            shell.run_cell("1+1", store_history=True)
        for _ in range(15):
            t0 = time.perf_counter()
            for _ in range(n):
                shell.run_cell("1+1", store_history=True)
            blocks.append((time.perf_counter() - t0) / n)
    return statistics.median(blocks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    build = os.path.join(ROOT, "build")
    ap.add_argument("--a", default=build, help="build directory of A (e.g. the old build)")
    ap.add_argument("--b", default=build, help="build directory of B")
    ap.add_argument("--rounds", type=int, default=15, help="runs of each build per measurement")
    ap.add_argument("--preload-rounds", type=int, help="runs of each with the default preloads "
                    "(default: a third of --rounds)")
    ap.add_argument("--cells", type=int, default=300, help="cells per block (per-cell cost)")
    ap.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind)")
    ap.add_argument("--prints", action="store_true", help="also time 10,000 prints in a cell")
    ap.add_argument("--ipython", action="store_true", help="also time IPython's own run_cell")
    args = ap.parse_args()
    builds = (os.path.abspath(args.a), os.path.abspath(args.b))
    for b in builds:
        if not os.access(os.path.join(b, "cellvm-executor"), os.X_OK):
            sys.exit(f"{b}/cellvm-executor not found")
    print(f"A = {builds[0]}\nB = {builds[1]}\nload average before: {os.getloadavg()}")

    a, b = zygote_start(builds, "", args.rounds)
    summary("zygote start to Z_READY, no preloads", "ms", a, b, 1e3)
    a, b = zygote_start(builds, DEFAULT_PRELOAD, args.preload_rounds or max(3, args.rounds // 3))
    summary("zygote start to Z_READY, default preloads", "ms", a, b, 1e3)
    wall, cpu = per_cell(builds, args.rounds, args.cells)
    summary("`1+1` round trip", "us", *wall, 1e6)
    summary("`1+1` executor CPU", "us", *cpu, 1e6)
    if args.callgrind:
        with tempfile.TemporaryDirectory() as tmp:
            n1, n2 = 20, 220
            res = []
            for build in builds:
                z1, e1 = callgrind(build, n1, tmp)
                _, e2 = callgrind(build, n2, tmp)
                res.append((z1, (e2 - e1) / (n2 - n1)))
        (za, ca), (zb, cb) = res
        print(f"{'callgrind: zygote to Z_READY, no preloads':<40} A {za:12,} Ir   B {zb:12,} Ir   B/A {zb / za:.4f}")
        print(f"{'callgrind: per `1+1` cell (executor)':<40} A {ca:12,.0f} Ir   B {cb:12,.0f} Ir   B/A {cb / ca:.4f}")
    if args.prints:
        summary("10,000 prints in a cell", "ms", *prints(builds, args.rounds, False), 1e3)
        summary("10,000 prints after os.write(1, ...)", "ms", *prints(builds, args.rounds, True), 1e3)
    if args.ipython:
        print(f"IPython {__import__('IPython').__version__} InteractiveShell.run_cell('1+1'): "
              f"{ipython_run_cell(200) * 1e6:.0f} us (in process, median of 15 blocks of 200)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
