#!/usr/bin/python3
"""Files and commands services against baselines, side by side, as ratios.

  upload/download: bytes through sandbox.files (Python SDK, Unix socket) vs the
    same bytes piped through socat over a Unix socket into/out of a file;
  `true` round trip: sandbox.commands.run("true") vs fork+exec of /bin/true
    (and of the `/bin/bash -l -c true` the agent runs, for reference).

Usage: /usr/bin/python3 bench/files_commands.py [--mib 512] [--runs 200]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from conftest import AgentProcess  # noqa: E402
from cellvm import Sandbox  # noqa: E402


def socat_copy(src, dst, sockdir):
    """src file -> socat (unix socket) -> dst file; returns seconds."""
    sock = os.path.join(sockdir, "socat.sock")
    if os.path.exists(sock):
        os.unlink(sock)
    srv = subprocess.Popen(["socat", "-u", f"UNIX-LISTEN:{sock}", f"CREATE:{dst}"])
    while not os.path.exists(sock):
        time.sleep(0.001)
    t = time.perf_counter()
    subprocess.run(["socat", "-u", f"OPEN:{src}", f"UNIX-CONNECT:{sock}"], check=True)
    srv.wait()
    return time.perf_counter() - t


def best(fn, n=3):
    return min(fn() for _ in range(n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--runs", type=int, default=200)
    args = ap.parse_args()
    size = args.mib << 20
    agent = AgentProcess(preload="")
    try:
        d = agent.workdir
        src = os.path.join(d, "src.bin")
        with open(src, "wb") as f:
            block = os.urandom(1 << 20)
            for _ in range(args.mib):
                f.write(block)
        with Sandbox.connect(agent.addr, request_timeout=300) as sbx:
            def up():
                t = time.perf_counter()
                with open(src, "rb") as f:
                    sbx.files.write(os.path.join(d, "up.bin"), f)
                return time.perf_counter() - t

            def down():
                t = time.perf_counter()
                with open(os.path.join(d, "down.bin"), "wb") as f:
                    for chunk in sbx.files.read(src, format="stream"):
                        f.write(chunk)
                return time.perf_counter() - t

            t_up, t_down = best(up), best(down)
            with tempfile.TemporaryDirectory() as sd:
                t_socat = best(lambda: socat_copy(src, os.path.join(d, "socat.bin"), sd))
            mb = size / 1e6
            print(f"{args.mib} MiB, best of 3")
            print(f"  socat unix socket     {mb / t_socat:8.0f} MB/s")
            print(f"  files.write (upload)  {mb / t_up:8.0f} MB/s   ratio {t_socat / t_up:5.2f} of socat")
            print(f"  files.read (download) {mb / t_down:8.0f} MB/s   ratio {t_socat / t_down:5.2f} of socat")

            sbx.commands.run("true")

            def per_call(fn):
                t = time.perf_counter()
                for _ in range(args.runs):
                    fn()
                return (time.perf_counter() - t) / args.runs

            env = dict(os.environ, HOME=d)
            t_cmd = per_call(lambda: sbx.commands.run("true"))
            t_true = per_call(lambda: subprocess.run(["/bin/true"]))
            t_bash = per_call(lambda: subprocess.run(["/bin/bash", "-l", "-c", "true"], env=env))
            print(f"`true`, mean of {args.runs}")
            print(f"  fork+exec /bin/true              {t_true * 1e3:7.2f} ms")
            print(f"  fork+exec /bin/bash -l -c true   {t_bash * 1e3:7.2f} ms")
            print(f"  commands.run('true')             {t_cmd * 1e3:7.2f} ms   "
                  f"{t_cmd / t_true:5.2f}x /bin/true, {t_cmd / t_bash:5.2f}x bash -l -c true")
    finally:
        agent.stop()


if __name__ == "__main__":
    main()
