#!/usr/bin/python3
"""Egress throughput (docs/NETWORK.md): an allowed HTTP download through the
guest's proxy and `cellvm serve`, and through the proxy of a Python SDK
sandbox (its egress keeper, QEMU's second serial port), against the same
download over QEMU's NAT (`network="user"`), in one run.

    bench/egress.py [--image build/image] [--mb 100] [--runs 3] [--json FILE]

A host server on 127.0.0.1 serves `--mb` MB. Proxy: a serve sandbox created
with allowOut ["bench.test"] ($CELLVM_HOSTS points bench.test at 127.0.0.1)
runs `curl http://bench.test:PORT/blob` (through HTTP_PROXY). NAT: a sandbox
of cellvm's Python SDK booted with network="user" runs `curl
http://10.0.2.2:PORT/blob` (QEMU's slirp maps 10.0.2.2 to the host's
loopback). The two alternate, `--runs` times each; curl's own
speed_download is recorded, and the medians compared. SDK: a sandbox of the
Python SDK created with network={"allow_out": ["bench.test"]} runs the
proxy's curl too, in the same rounds.

`--counters`: one more proxy download (not in the medians), run as root,
with the guest's counters around it: its CPU ticks (/proc/stat, 100 a
second), the agent's own user and system ticks (/proc/PID/stat) and the
guest's device interrupts (/proc/interrupts).
"""

import argparse
import base64
import http.server
import json
import os
import statistics
import sys
import tempfile
import threading
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from serve import Server  # noqa: E402  (bench/serve.py: `cellvm serve` for a bench)

CURL = "curl -sS -o /dev/null -w '%{size_download} %{speed_download}' "


def blob_server(size):
    chunk = os.urandom(1 << 20)

    class Blob(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            left = size
            while left:
                n = min(left, len(chunk))
                self.wfile.write(chunk[:n])
                left -= n

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Blob)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def envelope(obj):
    raw = json.dumps(obj).encode()
    return b"\0" + len(raw).to_bytes(4, "big") + raw


def serve_run(server, sbx, cmd, user="user"):
    """stdout of a shell command through envd's process.Start."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{server.port}/process.Process/Start", method="POST",
        data=envelope({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}),
        headers={"E2b-Sandbox-Id": sbx["sandboxID"], "E2b-Sandbox-Port": "49983",
                 "X-Access-Token": sbx["envdAccessToken"],
                 "Authorization": "Basic " + base64.b64encode(f"{user}:".encode()).decode(),
                 "Content-Type": "application/connect+json"})
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with direct.open(req, timeout=600) as r:
        raw = r.read()
    out, i = b"", 0
    while i + 5 <= len(raw):
        n = int.from_bytes(raw[i + 1:i + 5], "big")
        msg = json.loads(raw[i + 5:i + 5 + n])
        i += 5 + n
        out += base64.b64decode(msg.get("event", {}).get("data", {}).get("stdout", ""))
    return out.decode()


def parse(out, size):
    got, speed = out.split()
    if int(got) != size:
        raise SystemExit(f"downloaded {got} bytes of {size}")
    return float(speed) / 1e6  # MB/s


# The guest's counters around the download (as root): /proc/stat read last before it and
# first after it, so that these commands' own processes stay outside.
AGENT = "echo agent $(cut -d' ' -f14,15 /proc/$(pgrep -o cellvm-agent)/stat)"
IRQ = "echo irq $(awk '/IO-APIC/ {n += $2} END {print n}' /proc/interrupts)"


def counters(server, sbx, port, size):
    """One proxy download with the guest's counters around it."""
    cmd = (f"{AGENT}; {IRQ}; head -1 /proc/stat; {CURL}http://bench.test:{port}/blob; echo; "
           f"head -1 /proc/stat; {AGENT}; {IRQ}")
    out = serve_run(server, sbx, cmd, user="root").split("\n")
    cpu = [[int(x) for x in line.split()[1:]] for line in out if line.startswith("cpu ")]
    agent = [[int(x) for x in line.split()[1:]] for line in out if line.startswith("agent ")]
    irq = [int(line.split()[1]) for line in out if line.startswith("irq ")]
    speed = parse(next(line for line in out if line and line[0].isdigit()), size)
    d = [b - a for a, b in zip(cpu[0], cpu[1])]
    res = {"mb_s": round(speed, 1),
           "guest_ticks": {"user": d[0], "nice": d[1], "system": d[2], "idle": d[3],
                           "iowait": d[4], "irq": d[5], "softirq": d[6]},
           "agent_ticks": {"user": agent[1][0] - agent[0][0], "system": agent[1][1] - agent[0][1]},
           "interrupts": irq[1] - irq[0]}
    print("counters:", json.dumps(res), flush=True)
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "image"))
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json")
    ap.add_argument("--counters", action="store_true")
    a = ap.parse_args()
    size = a.mb * 1000 * 1000
    srv = blob_server(size)
    port = srv.server_address[1]
    hosts = tempfile.NamedTemporaryFile("w", prefix="cellvm-bench-hosts-", delete=False)
    hosts.write("127.0.0.1 bench.test\n")
    hosts.close()
    os.environ["CELLVM_HOSTS"] = hosts.name
    from cellvm import Sandbox

    server = Server(a.image)
    nat = sdk = None
    proxy_mbs, nat_mbs, sdk_mbs = [], [], []
    try:
        st, body = server.request("POST", "/sandboxes", {"templateID": "base", "timeout": 1800,
                                                         "network": {"allowOut": ["bench.test"]}})
        if st != 201:
            raise SystemExit(f"create through serve: {st} {body[:300]!r}")
        sbx = json.loads(body)
        nat = Sandbox.create(image=a.image, network="user", snapshot=False, timeout=1800)
        sdk = Sandbox.create(image=a.image, network={"allow_out": ["bench.test"]}, timeout=1800)
        for _ in range(a.runs):
            proxy_mbs.append(parse(serve_run(server, sbx, CURL + f"http://bench.test:{port}/blob"),
                                   size))
            r = sdk.commands.run(CURL + f"http://bench.test:{port}/blob", timeout=600)
            sdk_mbs.append(parse(r.stdout, size))
            r = nat.commands.run(CURL + f"http://10.0.2.2:{port}/blob", timeout=600)
            nat_mbs.append(parse(r.stdout, size))
            print(f"proxy {proxy_mbs[-1]:.1f} MB/s, SDK proxy {sdk_mbs[-1]:.1f} MB/s, "
                  f"NAT {nat_mbs[-1]:.1f} MB/s", flush=True)
        stats = counters(server, sbx, port, size) if a.counters else None
    finally:
        for sb in (nat, sdk):
            if sb:
                sb.kill()
        server.stop()
        srv.shutdown()
        os.unlink(hosts.name)
    res = {"mb": a.mb, "runs": a.runs, "proxy_mb_s": proxy_mbs, "nat_mb_s": nat_mbs,
           "proxy_median": round(statistics.median(proxy_mbs), 1),
           "nat_median": round(statistics.median(nat_mbs), 1)}
    res["proxy_over_nat"] = round(res["proxy_median"] / res["nat_median"], 2)
    res["sdk_mb_s"] = sdk_mbs
    res["sdk_median"] = round(statistics.median(sdk_mbs), 1)
    res["sdk_over_nat"] = round(res["sdk_median"] / res["nat_median"], 2)
    if stats:
        res["counters"] = stats
    print(json.dumps(res, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
