#!/usr/bin/python3
"""cellvm serve (issue 21) against cellvm's own Python SDK, in one run.

    bench/serve.py [--image build/image] [--cells 200] [--firsts 8]
                   [--clients 50 --sandboxes 8 --seconds 60] [--density 50] [--json FILE]

E2B's unchanged npm SDK (@e2b/code-interpreter, installed in tests/serve_sdk)
drives `build/cellvm serve` through bench/serve_sdk.mjs; cellvm's Python SDK
drives its own sandboxes straight over the agent's CBOR protocol. Both
restore the same template. Parts:

1. per cell: `runCode('1+1')` through the server, and `run_code('1+1')`
   through the Python SDK, in alternating blocks so both see the same load
   (after each sandbox's first cell). Medians, and the difference. Beside
   them, in the same blocks, where the difference goes: the same `/execute`
   through the server from Python's http.client on one kept-alive connection
   (the server's and the agent's part, without an SDK), and the npm SDK's
   `runCode` against a Node server that answers at once with no sandbox
   behind it (bench/serve_sdk.mjs nullserver: the SDK's own part).
2. create + first `runCode('1+1')`: the server with `--pool 2`, the server
   without a pool, and the Python SDK's `Sandbox.create()` + first cell;
   each `--firsts` times, a few seconds apart (the pool refills meanwhile).
3. load: `--clients` concurrent clients over `--sandboxes` sandboxes for
   `--seconds`, each in turn runCode, commands.run and files write+read;
   counts and errors (there must be none).
4. density: `--density` sandboxes created through the server, then the
   server's own RSS (VmRSS, VmHWM) with them alive.

Nothing is left: the servers are stopped (SIGTERM kills their sandboxes).
"""

import argparse
import http.client
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
SDK_DIR = os.path.join(ROOT, "tests", "serve_sdk")
NODE_SCRIPT = os.path.join(ROOT, "bench", "serve_sdk.mjs")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, image, pool=0, max_sandboxes=80):
        self.port = free_port()
        self.key = "e2b_" + secrets.token_hex(20)
        env = dict(os.environ, CELLVM_API_KEY=self.key, CELLVM_MAX_SANDBOXES=str(max_sandboxes))
        self.log = tempfile.NamedTemporaryFile(prefix="cellvm-serve-", suffix=".log", delete=False)
        argv = [os.path.join(ROOT, "build", "cellvm"), "serve", "--listen",
                f"127.0.0.1:{self.port}", "--image", image]
        if pool:
            argv += ["--pool", str(pool)]
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"cellvm serve exited: see {self.log.name}")
            try:
                if self.request("GET", "/health")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        if pool:  # the pool fills in the background
            time.sleep(2.0 * pool + 2)

    def env(self):
        url = f"http://127.0.0.1:{self.port}"
        return dict(os.environ, E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY=self.key,
                    E2B_SDK_DIR=SDK_DIR)

    def request(self, method, path, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        headers = {"X-API-Key": self.key, "Content-Type": "application/json"}
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers=headers)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def rss_kib(self):
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
        return out

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def node(server, *args):
    r = subprocess.run(["node", NODE_SCRIPT, *map(str, args)], env=server.env(),
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise SystemExit(f"bench/serve_sdk.mjs {' '.join(map(str, args))} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def med(xs):
    return round(statistics.median(xs), 2) if xs else None


def python_cells(image, n):
    from cellvm import Sandbox
    with Sandbox.create(image=image) as sbx:
        sbx.run_code("1+1")
        ms = []
        for _ in range(n):
            t = time.perf_counter()
            ex = sbx.run_code("1+1")
            ms.append((time.perf_counter() - t) * 1000)
            assert ex.text == "2", ex.text
    return ms


class RawCells:
    """`/execute` of 1+1 through the server with http.client on one connection."""

    def __init__(self, server):
        st, data = server.request("POST", "/sandboxes", {"templateID": "base", "timeout": 3600})
        assert st == 201, (st, data)
        info = json.loads(data)
        self.server, self.id = server, info["sandboxID"]
        self.headers = {"E2b-Sandbox-Id": self.id, "E2b-Sandbox-Port": "49999",
                        "X-Access-Token": info["envdAccessToken"],
                        "Content-Type": "application/json"}
        self.c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        self.cell()

    def cell(self):
        self.c.request("POST", "/execute", b'{"code": "1+1"}', self.headers)
        r = self.c.getresponse()
        body = r.read()
        assert r.status == 200 and b'"text": "2"' in body.replace(b'":"', b'": "'), body

    def cells(self, n):
        ms = []
        for _ in range(n):
            t = time.perf_counter()
            self.cell()
            ms.append((time.perf_counter() - t) * 1000)
        return ms

    def close(self):
        self.c.close()
        self.server.request("DELETE", f"/sandboxes/{self.id}")


class NullServer:
    """bench/serve_sdk.mjs nullserver: answers the npm SDK at once, no sandbox."""

    def __init__(self):
        self.port = free_port()
        self.proc = subprocess.Popen(["node", NODE_SCRIPT, "nullserver", str(self.port)],
                                     stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, E2B_SDK_DIR=SDK_DIR))
        assert self.proc.stdout.readline().strip() == "listening"
        self.key = "e2b_" + "0" * 40

    def env(self):
        url = f"http://127.0.0.1:{self.port}"
        return dict(os.environ, E2B_API_URL=url, E2B_SANDBOX_URL=url, E2B_API_KEY=self.key,
                    E2B_SDK_DIR=SDK_DIR)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def python_firsts(image, n, gap_s):
    from cellvm import Sandbox
    create, cell, total = [], [], []
    for _ in range(n):
        t0 = time.perf_counter()
        sbx = Sandbox.create(image=image)
        t1 = time.perf_counter()
        ex = sbx.run_code("1+1")
        t2 = time.perf_counter()
        assert ex.text == "2", ex.text
        sbx.kill()
        create.append((t1 - t0) * 1000)
        cell.append((t2 - t1) * 1000)
        total.append((t2 - t0) * 1000)
        time.sleep(gap_s)
    return {"create": create, "cell": cell, "total": total}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "image"))
    ap.add_argument("--cells", type=int, default=200)
    ap.add_argument("--firsts", type=int, default=8)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--sandboxes", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--density", type=int, default=50)
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: cells,first,load,density")
    ap.add_argument("--json")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    if not os.path.isdir(os.path.join(SDK_DIR, "node_modules")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=SDK_DIR, check=True)
    report = {"when": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
              "load_before": os.getloadavg()}
    gap = 3.0
    os.environ["BENCH_GAP_MS"] = str(int(gap * 1000))

    plain = Server(args.image)
    try:
        if "cells" not in skip:
            js, py, raw, floor = [], [], [], []
            blocks = 4
            rawc, null = RawCells(plain), NullServer()
            try:
                for _ in range(blocks):
                    js += node(plain, "cells", args.cells // blocks)["ms"]
                    py += python_cells(args.image, args.cells // blocks)
                    raw += rawc.cells(args.cells // blocks)
                    floor += node(null, "cells", args.cells // blocks)["ms"]
            finally:
                rawc.close()
                null.stop()
            report["cells"] = {"npm_via_serve_median_ms": med(js), "python_sdk_median_ms": med(py),
                               "difference_ms": round(med(js) - med(py), 2), "n": len(js),
                               "http_client_via_serve_median_ms": med(raw),
                               "npm_sdk_against_null_server_median_ms": med(floor)}
            print("per cell:", report["cells"], flush=True)
        if "first" not in skip:
            js = node(plain, "first", args.firsts)
            py = python_firsts(args.image, args.firsts, gap)
            report["first_no_pool"] = {k: med(v) for k, v in js.items()}
            report["first_python_sdk"] = {k: med(v) for k, v in py.items()}
            print("create + first cell, no pool:", report["first_no_pool"],
                  "python SDK:", report["first_python_sdk"], flush=True)
        if "load" not in skip:
            r = node(plain, "load", args.clients, args.sandboxes, args.seconds)
            report["load"] = {"clients": args.clients, "sandboxes": args.sandboxes,
                              "seconds": args.seconds, "counts": r["counts"],
                              "errors": len(r["errors"]), "first_errors": r["errors"][:5],
                              "latency_median_ms": med(r["latency_ms"]),
                              "latency_p99_ms": round(sorted(r["latency_ms"])[int(0.99 * len(r["latency_ms"])) - 1], 1) if r["latency_ms"] else None}
            print("load:", report["load"], flush=True)
        if "density" not in skip:
            before = plain.rss_kib()
            ids = []
            for _ in range(args.density):
                st, data = plain.request("POST", "/v2/sandboxes", {"templateID": "base", "timeout": 600})
                if st != 201:
                    raise SystemExit(f"create {len(ids) + 1}: {st} {data[:300]}")
                ids.append(json.loads(data)["sandboxID"])
            time.sleep(5)
            with_them = plain.rss_kib()
            for i in ids:
                plain.request("DELETE", f"/sandboxes/{i}")
            report["density"] = {"sandboxes": len(ids), "server_rss_kib_idle": before["VmRSS"],
                                 "server_rss_kib_with_them": with_them["VmRSS"],
                                 "server_hwm_kib": with_them["VmHWM"]}
            print("density:", report["density"], flush=True)
    finally:
        plain.stop()

    if "first" not in skip:
        pooled = Server(args.image, pool=2)
        try:
            js = node(pooled, "first", args.firsts)
            report["first_pool_2"] = {k: med(v) for k, v in js.items()}
            print("create + first cell, --pool 2:", report["first_pool_2"], flush=True)
        finally:
            pooled.stop()
    report["load_after"] = os.getloadavg()
    print(json.dumps(report, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
