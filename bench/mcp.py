#!/usr/bin/python3
"""cellvm mcp (issue 24) against cellvm's own Python SDK, in one run.

    bench/mcp.py [--image build/image] [--cells 200] [--block 20] [--json FILE] [--no-ts]

A `run_code` of `1+1` through `build/cellvm mcp` over stdio (JSON-RPC lines
written and read here, so the client's own cost is a json.dumps and a
json.loads), against `run_code('1+1')` through the Python SDK straight over
the agent's CBOR protocol, in alternating blocks of --block cells so both see
the same load, after each sandbox's first cell. Both restore the same
template. Every result is checked. Medians, and the difference: MCP's
overhead per call (JSON-RPC, the session's sandbox, the tool's content).
Then as many calls through the official TypeScript SDK's client
(bench/mcp_sdk.mjs, with tests/mcp_sdk's install), which spawns a
`cellvm mcp` of its own: what a real MCP client adds on its side.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))


class McpStdio:
    def __init__(self, image):
        self.proc = subprocess.Popen([os.path.join(ROOT, "build", "cellvm"), "mcp", "--image", image],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.next_id = 0
        init = self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "bench", "version": "0"}})
        assert init["result"]["serverInfo"]["name"] == "cellvm", init
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.out = self.proc.stdout

    def request(self, method, params):
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        reply = json.loads(self.proc.stdout.readline())
        assert reply.get("id") == self.next_id, reply
        return reply

    def run_code(self, code):
        return self.request("tools/call", {"name": "run_code", "arguments": {"code": code}})

    def close(self):
        self.proc.stdin.close()  # the sandbox ends with stdin
        self.proc.wait(60)


def med(xs):
    return round(statistics.median(xs), 3) if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", default=os.path.join(ROOT, "build", "image"))
    ap.add_argument("--cells", type=int, default=200)
    ap.add_argument("--block", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--no-ts", action="store_true", help="skip the TypeScript SDK's column")
    a = ap.parse_args()
    from cellvm import Sandbox

    mcp = McpStdio(a.image)
    sbx = Sandbox.create(image=a.image)
    try:
        first = mcp.run_code("1+1")["result"]
        assert first["content"] == [{"type": "text", "text": "result:\n2"}], first
        assert sbx.run_code("1+1").text == "2"
        via_mcp, via_sdk = [], []
        while len(via_mcp) < a.cells:
            for _ in range(a.block):
                t = time.perf_counter()
                r = mcp.run_code("1+1")
                via_mcp.append((time.perf_counter() - t) * 1000)
                assert r["result"]["content"][0]["text"] == "result:\n2", r
            for _ in range(a.block):
                t = time.perf_counter()
                ex = sbx.run_code("1+1")
                via_sdk.append((time.perf_counter() - t) * 1000)
                assert ex.text == "2", ex.text
    finally:
        mcp.close()
        sbx.kill()
    # The same call as the official TypeScript SDK's client makes it (its own
    # JSON-RPC layer and zod validation included), right after, same load.
    via_ts = []
    if not a.no_ts:
        r = subprocess.run(["node", os.path.join(ROOT, "bench", "mcp_sdk.mjs"),
                            os.path.join(ROOT, "build", "cellvm"), a.image, str(a.cells)],
                           capture_output=True, text=True, timeout=3600)
        if r.returncode != 0:
            raise SystemExit(f"bench/mcp_sdk.mjs failed (npm ci in tests/mcp_sdk?):\n{r.stderr[-3000:]}")
        via_ts = json.loads(r.stdout.strip().splitlines()[-1])["ms"]
    out = {"cells": len(via_mcp), "mcp_stdio_ms": med(via_mcp), "python_sdk_ms": med(via_sdk),
           "mcp_ts_sdk_ms": med(via_ts),
           "overhead_ms": round(med(via_mcp) - med(via_sdk), 3),
           "mcp_p90_ms": round(statistics.quantiles(via_mcp, n=10)[-1], 3),
           "sdk_p90_ms": round(statistics.quantiles(via_sdk, n=10)[-1], 3),
           "loadavg": os.getloadavg()}
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"mcp_ms": via_mcp, "sdk_ms": via_sdk, "ts_ms": via_ts, **out}, f)


if __name__ == "__main__":
    main()
