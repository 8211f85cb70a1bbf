"""`cellvm mcp` (stdio) and `cellvm serve`'s /mcp (Streamable HTTP) driven by
the official MCP TypeScript SDK's client (npm @modelcontextprotocol/sdk) and
the MCP inspector's CLI, installed in tests/mcp_sdk by `npm ci` (docs/MCP.md).

tests/mcp_sdk/suite.mjs runs every scenario in one session (one sandbox) per
transport and prints what it saw; the tests here check it. Raw JSON-RPC and
HTTP requests check what the SDK never sends: malformed and oversized
messages, batches, wrong keys, unknown sessions. Every `cellvm mcp` and
server runs with a private registry and TMPDIR: nothing may be left in them
once its client is gone.
"""

import base64
import csv
import glob
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import FIXTURES, IMAGE, build_image_or_skip, processes_mentioning
from serve_process import (CLI, ROOT, Server, node_with_packages_or_skip, serving, tail,
                           template_root)

MCP_DIR = os.path.join(ROOT, "tests", "mcp_sdk")
CSV = os.path.join(FIXTURES, "vendas.csv")
SUITE_TIMEOUT = 600  # the template's build (first use), pandas' first import
MIN_NODE = (20, 0, 0)
LATEST = "2025-11-25"  # @modelcontextprotocol/sdk 1.32's LATEST_PROTOCOL_VERSION
PNG_MAGIC = b"\x89PNG\r\n\x1a\n".hex()


def node_or_skip():
    return node_with_packages_or_skip(MCP_DIR, os.path.join("@modelcontextprotocol", "sdk"), MIN_NODE,
                                      "the MCP SDK")


def ready_or_skip():
    node = node_or_skip()
    build_image_or_skip()
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"{CLI} is not built (make all)")
    return node


class Private:
    """A registry ($CELLVM_RUNTIME_DIR) and TMPDIR of our own, so what a
    `cellvm mcp` leaves behind can be seen (and told from other VMs)."""

    def __init__(self, tmp):
        self.run = os.path.join(tmp, "run")
        os.mkdir(self.run, 0o700)
        self.tmpdir = tempfile.mkdtemp(prefix="cellvm-m-", dir="/tmp")  # short: VM sockets

    def env(self):
        env = dict(os.environ, CELLVM_RUNTIME_DIR=self.run, TMPDIR=self.tmpdir,
                   CELLVM_TEMPLATE_DIR=template_root())
        for name in ("CELLVM_SNAPSHOT", "CELLVM_DEFAULT_TIMEOUT", "CELLVM_ADDR"):
            env.pop(name, None)
        return env

    def entries(self):
        return glob.glob(os.path.join(self.run, "*.sandbox"))

    def leftovers(self, wait=20):
        """What is still there `wait` s after the end (killed VMs take a moment)."""
        deadline = time.monotonic() + wait
        while True:
            procs = sorted(set(processes_mentioning(self.tmpdir)) | set(processes_mentioning(self.run)))
            left = (procs, self.entries(), glob.glob(os.path.join(self.tmpdir, "cellvm-*")))
            if not any(left) or time.monotonic() > deadline:
                return left
            time.sleep(0.5)

    def cleanup(self):
        procs, _, _ = self.leftovers(wait=0)
        for pid in procs:
            try:
                os.kill(pid, 9)  # ours: they name our private directories
            except OSError:
                pass
        shutil.rmtree(self.tmpdir, ignore_errors=True)


def run_suite(node, args, env):
    r = subprocess.run([node, "suite.mjs", *args], cwd=MCP_DIR, env=env, capture_output=True,
                       text=True, timeout=SUITE_TIMEOUT)
    assert r.returncode == 0, f"suite.mjs failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}"
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


# --- the two transports ---------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    ready_or_skip()
    yield from serving(str(tmp_path_factory.mktemp("mcp-serve")))


def call(server, method, path, body=None, headers=None, key=True, raw=None):
    h = {"Content-Type": "application/json"}
    if key:
        h["X-API-Key"] = server.key
    h.update(headers or {})
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(server.url + path, data=data, method=method, headers=h)
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with direct.open(req, timeout=300) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def mcp_sandboxes(server):
    st, _, body = call(server, "GET", "/v2/sandboxes")
    assert st == 200, body
    return [s for s in json.loads(body) if (s.get("metadata") or {}).get("cellvm") == "mcp"]


@pytest.fixture(scope="module")
def http_run(server):
    node = node_or_skip()
    before = mcp_sandboxes(server)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")}
    out, log = run_suite(node, ["http", server.url, server.key, CSV], env)
    out["_after"] = mcp_sandboxes(server)
    out["_before"] = before
    return out


@pytest.fixture(scope="module")
def stdio_run(tmp_path_factory):
    node = ready_or_skip()
    p = Private(str(tmp_path_factory.mktemp("mcp-stdio")))
    try:
        out, log = run_suite(node, ["stdio", CLI, IMAGE, CSV], p.env())
        out["_leftovers"] = p.leftovers()
        out["_log"] = log
        yield out
    finally:
        p.cleanup()


@pytest.fixture(params=["stdio", "http"])
def run(request):
    return request.getfixturevalue(f"{request.param}_run")


def ok(r):
    assert r.get("isError") is False, r
    return "\n".join(r["texts"])


def err(r):
    assert r.get("isError") is True, r
    return "\n".join(r["texts"])


# --- what the SDK client saw ------------------------------------------------------

def test_initialize(run):
    i = run["initialize"]
    assert "thrown" not in i, i
    assert i["server"]["name"] == "cellvm" and i["server"]["version"]
    assert i["capabilities"] == {"tools": {"listChanged": False}}
    assert "sandbox" in i["instructions"]
    assert i["latest"] == LATEST, "the installed SDK's latest version: update mcp_rpc.c's list"
    if i["sessionId"] is not None:  # HTTP: the negotiated version and a session
        assert i["negotiated"] == LATEST
        assert re.fullmatch(r"[0-9a-f]{32}", i["sessionId"])


def test_tools_list_with_valid_schemas(run):
    tools = {t["name"]: t for t in run["tools_list"]}
    assert set(tools) == {"run_code", "write_file", "read_file", "list_files", "run_command"}
    for t in tools.values():
        assert t["schemaError"] is None, t  # Ajv compiles it
        assert t["type"] == "object" and len(t["description"]) > 60, t
    assert tools["run_code"]["required"] == ["code"]
    assert set(tools["run_code"]["properties"]) == {"code", "language", "timeout"}
    assert set(tools["write_file"]["properties"]) == {"path", "content", "content_base64"}
    assert tools["run_command"]["required"] == ["command"]
    assert tools["list_files"]["validEmpty"] is True and tools["run_code"]["validEmpty"] is False


def test_sales_flow(run):
    with open(CSV, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    by_product = {}
    for r in rows:
        by_product[r["produto"]] = by_product.get(r["produto"], 0.0) + float(r["valor"])
    s = run["sales"]
    assert "thrown" not in s, s
    size = os.path.getsize(CSV)
    assert ok(s["write"]) == f"wrote {size} bytes to /home/user/vendas.csv"
    text = ok(s["totals"])
    got = json.loads(text.split("stdout:\n", 1)[1].split("\n", 1)[0])
    assert set(got) == set(by_product)
    for k, v in by_product.items():
        assert abs(got[k] - v) < 0.01, (k, got[k], v)
    assert text.endswith(f"result:\n{len(rows)}")
    chart = s["chart"]
    assert chart["isError"] is False and chart["texts"] == [], chart  # the figure, not its repr
    # As in E2B: savefig's image (E2B's PIL hook shows an image saved to a
    # path), then the figure that plt.show() shows.
    assert len(chart["images"]) == 2, chart
    for img in chart["images"]:
        assert img["mimeType"] == "image/png" and img["magicHex"] == PNG_MAGIC and img["bytes"] > 5000


def test_error_with_traceback_then_fixed(run):
    e = run["error_traceback"]
    text = err(e["error"])
    assert text.startswith("error:\nValueError: bad input 7\n\nTraceback:\n"), text
    assert "raise ValueError(f'bad input {x}')" in text and "f(7)" in text
    assert "\x1b[" not in text  # no terminal colours for the model
    assert ok(e["fixed"]) == "result:\n10"  # the session goes on


def test_stderr(run):
    assert run["stderr"]["texts"] == ["stdout:\nto out\n", "stderr:\nto err\n"]
    assert run["stderr"]["isError"] is False


def test_files(run):
    f = run["files"]
    assert "thrown" not in f, f
    assert ok(f["writeB64"]) == "wrote 9 bytes to /home/user/data/bin.dat"
    assert "9\n   0   1   2 250 251 252 253 254 255" in ok(f["size"])
    assert ok(f["readText"]) == "línea uno\nline two\n"
    b = ok(f["readBinary"])
    assert b.startswith("binary file (not UTF-8 text), 9 bytes; base64:\n")
    assert base64.b64decode(b.split("\n", 1)[1]) == bytes([0, 1, 2, 250, 251, 252, 253, 254, 255])
    img = f["readImage"]
    assert img["isError"] is False and img["texts"] == []
    assert img["images"][0]["mimeType"] == "image/png" and img["images"][0]["magicHex"] == PNG_MAGIC
    lines = ok(f["list"]).splitlines()
    assert [ln.split() for ln in lines] == [["file", "9", "bin.dat"], ["file", "20", "notes.txt"]]
    home = ok(f["listHome"])
    assert re.search(r"^dir +\d+  data/$", home, re.M) and "vendas.csv" in home
    assert "No such file or directory" in err(f["missing"])


def test_commands_with_exit_codes(run):
    c = run["commands"]
    assert c["ok"]["texts"] == ["stdout:\nhello\n/home/user\nuser\n", "stderr:\nwarn\n", "exit code: 0"]
    assert c["ok"]["isError"] is False
    assert err(c["failing"]) == "stdout:\npartial\n\nstderr:\nbroken\n\nexit code: 7"
    assert ok(c["bash"]) == "stdout:\nfrom-bash-kernel\n"


def test_runaway_cell_stopped_by_its_timeout(run):
    t = run["timeout"]
    text = err(t["runaway"])
    assert "TimeoutError: the cell ran past its timeout of 3 s" in text, text
    assert ok(t["after"]) == "result:\n6"  # the kernel and its state survive
    assert "ran past 2 s and was killed" in err(t["cmd"])


def test_bad_calls_refused_while_serving(run):
    b = run["bad_calls"]
    assert b["unknownTool"]["code"] == -32602 and "Unknown tool: no_such_tool" in b["unknownTool"]["thrown"]
    assert "`code` (a string) is required" in err(b["missing"])
    assert "`code` must be a string" in err(b["mistyped"])
    assert "`timeout` must be a number" in err(b["badTimeout"])
    assert "unknown argument `mode`" in err(b["extra"])
    assert "exactly one of `content` and `content_base64`" in err(b["both"])
    assert "not valid base64" in err(b["badBase64"])
    assert "cobol" in err(b["badLanguage"]) and "python" in err(b["badLanguage"])
    assert ok(b["stillServing"]) == "result:\n5"


def test_cancelled_request_stops_its_cell(run):
    c = run["cancel"]
    assert c["thrown"] and c["thrown"]["code"] == -32001, c  # the SDK's RequestTimeout
    # Had the cancellation not reached the cell, this call would have waited
    # for its sleep (600 s) past the suite's own limits.
    assert c["after"]["isError"] is False and c["after"]["texts"] == ["result:\n'started'"], c


def test_output_truncated_with_marker(run):
    t = run["truncation"]
    text = ok(t["ascii"])
    assert text.startswith("stdout:\n" + "x" * 1000)
    assert text.endswith("[cellvm: output truncated: 134465 more bytes not shown, only the first "
                         "65536 are kept]"), text[-300:]
    # A character the bound cuts goes with the cut part (no '?' in its place).
    text = ok(t["multibyte"])
    kept, marker = text.split("\n[cellvm: output truncated: ")
    assert kept == "stdout:\na" + "é" * 32767, kept[-20:]
    assert marker.startswith("134467 more bytes not shown"), marker  # 200002 - 65535
    # read_file of 10 MB of text: text (not "binary"), cut at 256 KiB.
    text = ok(t["bigText"])
    kept, marker = text.split("\n[cellvm: output truncated: ")
    assert kept == "ü" * (131072), (len(kept), kept[-10:])
    assert "more bytes not shown" in marker


def test_no_sandbox_left_after_close_stdio(stdio_run):
    procs, entries, temps = stdio_run["_leftovers"]
    assert not procs and not entries and not temps, (procs, entries, temps, stdio_run["_log"][-3000:])


def test_wrong_key_refused_over_http(http_run):
    w = http_run["wrong_key"]
    assert w["connected"] is False and "401" in w["message"] and "Invalid API key" in w["message"], w


def test_no_sandbox_left_after_close_http(http_run):
    assert http_run["close"]["sessionId"]
    ids = lambda xs: {x["sandboxID"] for x in xs}  # noqa: E731
    assert ids(http_run["_after"]) <= ids(http_run["_before"]), http_run["_after"]


# --- raw JSON-RPC over stdio ----------------------------------------------------------

def test_cli_usage():
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"{CLI} is not built (make all)")
    r = subprocess.run([CLI, "mcp", "--help"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.startswith("usage: cellvm mcp") and "docs/MCP.md" in r.stdout
    r = subprocess.run([CLI, "--help"], capture_output=True, text=True, timeout=30)
    assert "  mcp [--image DIR]" in r.stdout
    for bad in (["--memory", "5"], ["--vcpus", "0"], ["extra"], ["--nope"]):
        r = subprocess.run([CLI, "mcp", *bad], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2 and r.stdout == "" and "cellvm mcp" in r.stderr, (bad, r)


def test_stdio_bad_messages_and_version_negotiation(tmp_path):
    build_image_or_skip()
    p = Private(str(tmp_path))
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
        b'"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}',
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        b"{not json",
        b'[{"jsonrpc":"2.0","id":2,"method":"ping"}]',
        b'{"jsonrpc":"1.0","id":3,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}',
        b'{"jsonrpc":"2.0","id":4,"method":"resources/list"}',
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":"run_code"}',
        b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments":{}}}',
        b'{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}',
        b'"just a string"',
        b"\xff\xfe not utf-8",
        b'{"jsonrpc":"2.0","id":8,"method":"ping"}',
        b"x" * (17 << 20),  # over the 16 MiB bound
        b'{"jsonrpc":"2.0","id":9,"method":"ping"}',
    ]
    proc = subprocess.run([CLI, "mcp", "--image", IMAGE], input=b"\n".join(lines) + b"\n",
                          capture_output=True, env=p.env(), timeout=120)
    try:
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = [json.loads(ln) for ln in proc.stdout.decode().splitlines()]
        by_id = {json.dumps(o.get("id")): o for o in out if o.get("id") is not None}
        nulls = [o["error"] for o in out if o.get("id") is None]
        assert by_id["1"]["result"]["protocolVersion"] == "2025-06-18"  # the client's, supported
        assert by_id["7"]["result"]["protocolVersion"] == LATEST  # unknown: our latest
        assert by_id["4"]["error"]["code"] == -32601 and "resources/list" in by_id["4"]["error"]["message"]
        assert by_id["5"]["error"]["code"] == -32602
        assert by_id["6"]["error"]["code"] == -32602 and "params.name" in by_id["6"]["error"]["message"]
        assert by_id["3"]["error"]["code"] == -32600 and "2.0" in by_id["3"]["error"]["message"]
        assert by_id["8"] == {"jsonrpc": "2.0", "id": 8, "result": {}}
        assert by_id["9"] == {"jsonrpc": "2.0", "id": 9, "result": {}}  # still serving
        # not JSON, an object as id, a string, not UTF-8, oversized, in order;
        # the batch is refused (2025-06-18 has none) where requests run, in turn.
        batch = [e for e in nulls if "batch" in e["message"]]
        assert [e["code"] for e in nulls if e not in batch] == [-32700, -32600, -32700, -32700, -32600], nulls
        assert "over 16777216 bytes" in nulls[-1]["message"]
        assert len(batch) == 1 and batch[0]["code"] == -32600, nulls
        assert "batches are not supported under MCP 2025-06-18" in batch[0]["message"]
        assert len(out) == 14  # the notification got no answer
        assert not p.entries()  # no tool call, no sandbox
    finally:
        p.cleanup()


def test_stdio_batches_under_2025_03_26(tmp_path):
    """MCP 2025-03-26 has servers take JSON-RPC batches (2025-06-18 removed
    them): one line, its messages run in order, one array of responses."""
    build_image_or_skip()
    p = Private(str(tmp_path))
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}
    lines = [json.dumps(init).encode(), json.dumps(BATCH).encode(),
             b'[{"jsonrpc":"2.0","method":"notifications/initialized"}]', b"[]",
             b'{"jsonrpc":"2.0","id":9,"method":"ping"}']
    proc = subprocess.run([CLI, "mcp", "--image", IMAGE], input=b"\n".join(lines) + b"\n",
                          capture_output=True, env=p.env(), timeout=300)
    try:
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = [json.loads(ln) for ln in proc.stdout.decode().splitlines()]
        # Requests and batches run in turn; the invalid empty batch and the
        # ping are answered as they are read.
        batches = [o for o in out if isinstance(o, list)]
        by_id = {json.dumps(o.get("id")): o for o in out if isinstance(o, dict)}
        assert len(out) == 4 and len(batches) == 1, out  # nothing for the notifications-only batch
        assert by_id["1"]["result"]["protocolVersion"] == "2025-03-26"
        check_batch_replies(batches[0])
        assert by_id["null"]["error"]["code"] == -32600 and "empty batch" in by_id["null"]["error"]["message"]
        assert by_id["9"] == {"jsonrpc": "2.0", "id": 9, "result": {}}
    finally:
        p.cleanup()


def test_stdio_dead_peer_ends_the_sandbox(tmp_path):
    build_image_or_skip()
    p = Private(str(tmp_path))
    proc = subprocess.Popen([CLI, "mcp", "--image", IMAGE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=p.env())
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":'
                         b'"run_command","arguments":{"command":"echo up"}}}\n')
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        assert reply["result"]["content"][0]["text"] == "stdout:\nup\n", reply
        assert len(p.entries()) == 1  # the session's sandbox
        proc.stdin.close()  # the client is gone
        assert proc.wait(timeout=60) == 0
        procs, entries, temps = p.leftovers()
        assert not procs and not entries and not temps, (procs, entries, temps)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        p.cleanup()


def test_stdio_vanished_client_ends_a_running_call(tmp_path):
    """A client that dies mid-call (both pipes closed) takes the sandbox with
    it at once, not when the cell's timeout would have stopped it."""
    build_image_or_skip()
    p = Private(str(tmp_path))
    proc = subprocess.Popen([CLI, "mcp", "--image", IMAGE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=p.env())
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":'
                         b'"run_command","arguments":{"command":"echo up"}}}\n')
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["result"]["isError"] is False
        proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":'
                         b'"run_code","arguments":{"code":"import time\\ntime.sleep(3000)",'
                         b'"timeout":3600}}}\n')
        proc.stdin.flush()
        time.sleep(2)  # the cell is running (not a timing assertion: any moment works)
        assert len(p.entries()) == 1
        proc.stdin.close()
        proc.stdout.close()  # the client is gone
        # Without the abort, this would wait for the cell's 3600 s timeout.
        assert proc.wait(timeout=120) == 0, proc.stderr.read()[-2000:]
        procs, entries, temps = p.leftovers()
        assert not procs and not entries and not temps, (procs, entries, temps)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        p.cleanup()


def test_stdio_ping_answered_and_queued_call_cancelled_while_a_call_runs(tmp_path):
    """Over stdio a ping is answered at once while a call runs, and a request
    cancelled while it waits its turn never runs nor is answered."""
    build_image_or_skip()
    p = Private(str(tmp_path))
    proc = subprocess.Popen([CLI, "mcp", "--image", IMAGE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=p.env())

    def send(msg):
        proc.stdin.write(json.dumps(msg).encode() + b"\n")
        proc.stdin.flush()

    def tool(i, code):
        return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "run_code", "arguments": {"code": code, "timeout": 120}}}

    try:
        send(tool(1, "'up'"))
        assert json.loads(proc.stdout.readline())["result"]["isError"] is False
        send(tool(2, "import time\ntime.sleep(8)\n'slept'"))
        send(tool(3, "queued_ran = True"))
        send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
        send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        send(tool(5, "'queued_ran' in globals()"))
        # The ping's answer comes first, not after the 8 s cell.
        assert json.loads(proc.stdout.readline()) == {"jsonrpc": "2.0", "id": 4, "result": {}}
        slept = json.loads(proc.stdout.readline())
        assert slept["id"] == 2 and slept["result"]["content"][0]["text"] == "result:\n'slept'", slept
        after = json.loads(proc.stdout.readline())
        assert after["id"] == 5 and after["result"]["content"][0]["text"] == "result:\nFalse", after
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
        assert proc.stdout.read() == b""  # nothing for the cancelled request
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        p.cleanup()


# --- raw HTTP ---------------------------------------------------------------------------

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}}


# A batch of a ping, a notification, a tool call, a message that is not one,
# and an initialize (never part of a batch).
BATCH = [{"jsonrpc": "2.0", "id": 2, "method": "ping"},
         {"jsonrpc": "2.0", "method": "notifications/initialized"},
         {"jsonrpc": "2.0", "id": "c", "method": "tools/call",
          "params": {"name": "run_code", "arguments": {"code": "6*7"}}},
         {"jsonrpc": "1.0", "id": 3, "method": "ping"},
         {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}}]


def check_batch_replies(replies):
    """The responses to BATCH: one per request, in its order."""
    assert [r["id"] for r in replies] == [2, "c", 3, 4], replies
    assert replies[0] == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert replies[1]["result"]["content"] == [{"type": "text", "text": "result:\n42"}], replies[1]
    assert replies[2]["error"]["code"] == -32600 and "2.0" in replies[2]["error"]["message"]
    assert replies[3]["error"]["code"] == -32600 and "batch" in replies[3]["error"]["message"]


def test_http_transport_rules(server):
    st, _, body = call(server, "POST", "/mcp", INIT, key=False, headers={"X-API-Key": "wrong"})
    assert st == 401, body
    st, _, body = call(server, "POST", "/mcp", INIT, key=False)
    assert st == 401, body
    st, h, body = call(server, "POST", "/mcp", INIT, key=False,
                       headers={"Authorization": "Bearer " + server.key})
    assert st == 200, body
    sid = h.get("Mcp-Session-Id")
    assert re.fullmatch(r"[0-9a-f]{32}", sid or ""), h
    assert json.loads(body)["result"]["protocolVersion"] == "2025-03-26"
    s = {"Mcp-Session-Id": sid}
    st, _, body = call(server, "POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                       headers=s)
    assert st == 202 and body == b""
    st, _, body = call(server, "POST", "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=s)
    assert st == 200 and json.loads(body) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    st, h, body = call(server, "GET", "/mcp", headers=s)
    assert st == 405 and "POST" in h.get("Allow", ""), (st, h)
    st, _, body = call(server, "POST", "/mcp", raw=b"{oops", headers=s)
    assert st == 400 and json.loads(body)["error"]["code"] == -32700
    st, _, body = call(server, "POST", "/mcp", {"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert st == 400 and "Mcp-Session-Id is required" in json.loads(body)["error"]["message"]
    st, _, body = call(server, "POST", "/mcp", {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                       headers={"Mcp-Session-Id": "0" * 32})
    assert st == 404
    st, _, body = call(server, "POST", "/mcp", {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                       headers={**s, "MCP-Protocol-Version": "1999-01-01"})
    assert st == 400 and "MCP-Protocol-Version" in json.loads(body)["error"]["message"]
    st, _, body = call(server, "POST", "/mcp", {"jsonrpc": "2.0", "id": 3, "method": "ping"},
                       headers={**s, "Origin": "http://evil.example"})
    assert st == 403
    st, _, body = call(server, "POST", "/mcp", raw=b"[" + b" " * (17 << 20) + b"]", headers=s)
    assert st == 413, body[:200]
    # A tool call makes the session's sandbox; DELETE ends both.
    before = {x["sandboxID"] for x in mcp_sandboxes(server)}
    st, _, body = call(server, "POST", "/mcp", {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                                                "params": {"name": "run_code",
                                                           "arguments": {"code": "6*7"}}}, headers=s)
    assert st == 200 and json.loads(body)["result"]["content"] == [{"type": "text", "text": "result:\n42"}]
    made = {x["sandboxID"] for x in mcp_sandboxes(server)} - before
    assert len(made) == 1
    # Batches, which this session's 2025-03-26 has (their call in the same sandbox).
    st, _, body = call(server, "POST", "/mcp", BATCH, headers=s)
    assert st == 200, body
    check_batch_replies(json.loads(body))
    st, _, body = call(server, "POST", "/mcp", [{"jsonrpc": "2.0", "method": "notifications/initialized"}],
                       headers=s)
    assert st == 202 and body == b""
    st, _, body = call(server, "POST", "/mcp", [], headers=s)
    assert st == 400 and "empty batch" in json.loads(body)["error"]["message"]
    st, _, _ = call(server, "DELETE", "/mcp", headers=s)
    assert st == 200
    assert not made & {x["sandboxID"] for x in mcp_sandboxes(server)}
    st, _, _ = call(server, "POST", "/mcp", {"jsonrpc": "2.0", "id": 5, "method": "ping"}, headers=s)
    assert st == 404  # the session is gone
    # A session on 2025-06-18, which removed batches, refuses them.
    st, h, body = call(server, "POST", "/mcp", {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-06-18"}})
    assert st == 200 and json.loads(body)["result"]["protocolVersion"] == "2025-06-18", body
    s = {"Mcp-Session-Id": h["Mcp-Session-Id"]}
    st, _, body = call(server, "POST", "/mcp", [{"jsonrpc": "2.0", "id": 6, "method": "ping"}], headers=s)
    assert st == 400 and "not supported under MCP 2025-06-18" in json.loads(body)["error"]["message"], body
    assert call(server, "DELETE", "/mcp", headers=s)[0] == 200


def test_http_session_table_full_answers_in_json(server):
    # Past SESSIONS_MAX (256) an initialize gets a JSON-RPC error naming its
    # id (the id outlives the request it came in: it was read after its free).
    made = []
    try:
        for i in range(300):
            st, h, body = call(server, "POST", "/mcp", {**INIT, "id": 1000 + i})
            if st != 200:
                break
            made.append(h["Mcp-Session-Id"])
        assert st == 503, (st, body)
        reply = json.loads(body)
        assert reply["id"] == 1000 + i and reply["error"]["code"] == -32603, reply
        assert "too many MCP sessions (256)" in reply["error"]["message"], reply
    finally:
        for sid in made:
            call(server, "DELETE", "/mcp", headers={"Mcp-Session-Id": sid})


def test_http_delete_ends_a_running_call_and_its_sandbox(server):
    st, h, _ = call(server, "POST", "/mcp", INIT)
    assert st == 200
    s = {"Mcp-Session-Id": h["Mcp-Session-Id"]}
    before = {x["sandboxID"] for x in mcp_sandboxes(server)}
    got = {}

    def long_call():
        got["reply"] = call(server, "POST", "/mcp", {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "run_code", "arguments": {"code": "import time\ntime.sleep(300)\n'done'",
                                                         "timeout": 600}}}, headers=s)

    t = threading.Thread(target=long_call, daemon=True)
    t.start()
    deadline = time.monotonic() + 120  # a bound, not a measurement
    while not ({x["sandboxID"] for x in mcp_sandboxes(server)} - before) and time.monotonic() < deadline:
        time.sleep(0.5)
    made = {x["sandboxID"] for x in mcp_sandboxes(server)} - before
    assert len(made) == 1
    time.sleep(2)  # the cell is running
    st, _, _ = call(server, "DELETE", "/mcp", headers=s)
    assert st == 200
    t.join(60)  # the call ends with its sandbox, not after its 300 s sleep
    assert not t.is_alive()
    st, _, body = got["reply"]
    assert st == 200 and json.loads(body)["result"]["isError"] is True, body
    assert not made & {x["sandboxID"] for x in mcp_sandboxes(server)}


def test_http_timeout_that_restarts_the_context_says_so(server):
    # A cell that swallows the interrupt is killed with its context: the
    # timeout's note must not say that what it defined stays.
    st, h, _ = call(server, "POST", "/mcp", INIT)
    assert st == 200
    s = {"Mcp-Session-Id": h["Mcp-Session-Id"]}
    try:
        st, _, body = call(server, "POST", "/mcp", {
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "run_code", "arguments": {
                "code": "import time\nwhile True:\n    try:\n        time.sleep(0.5)\n"
                        "    except BaseException:\n        pass\n", "timeout": 3}}}, headers=s)
        assert st == 200, body
        text = "".join(c.get("text", "") for c in json.loads(body)["result"]["content"])
        assert "ContextRestarted" in text and "what it defined before is gone" in text, text
        assert "stays" not in text, text
    finally:
        call(server, "DELETE", "/mcp", headers=s)


def test_http_abandoned_session_sandbox_ends_at_its_deadline(tmp_path):
    """A client that never comes back: its sandbox ends mcp_idle_s() after
    the last call (CELLVM_MCP_IDLE_S=10 here); a later call on the session
    gets a new sandbox, without the old one's state."""
    ready_or_skip()
    s = Server(str(tmp_path), env_extra={"CELLVM_MCP_IDLE_S": "10"})
    try:
        s.wait_healthy()
        st, h, _ = call(s, "POST", "/mcp", INIT)
        assert st == 200
        sid = {"Mcp-Session-Id": h["Mcp-Session-Id"]}

        def run_code(i, code):
            st, _, body = call(s, "POST", "/mcp", {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                                   "params": {"name": "run_code",
                                                              "arguments": {"code": code}}}, headers=sid)
            assert st == 200, body
            return json.loads(body)["result"]

        # A call longer than the idle lifetime keeps its sandbox (and the state).
        assert run_code(0, "kept = 41\nimport time\ntime.sleep(15)\n'slept'")["content"][0]["text"] == \
            "result:\n'slept'"
        assert run_code(1, "kept + 1")["content"][0]["text"] == "result:\n42"
        first = [x["sandboxID"] for x in mcp_sandboxes(s)]
        assert len(first) == 1
        deadline = time.monotonic() + 120  # a bound, not a measurement
        while mcp_sandboxes(s) and time.monotonic() < deadline:
            time.sleep(1)
        assert mcp_sandboxes(s) == [], "the abandoned session's sandbox outlived its deadline"
        again = run_code(2, "kept")
        assert again["isError"] is True and "NameError" in again["content"][0]["text"], again
        second = [x["sandboxID"] for x in mcp_sandboxes(s)]
        assert len(second) == 1 and second != first
    finally:
        problems = s.stop()
    assert not problems, "\n".join(problems) + tail(s.log_path)


# --- the MCP inspector's CLI ---------------------------------------------------------------

def inspector(args, env):
    r = subprocess.run([os.path.join(MCP_DIR, "node_modules", ".bin", "mcp-inspector"), "--cli", *args],
                       cwd=MCP_DIR, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
    return json.loads(r.stdout[r.stdout.index("{"):])


def test_inspector_cli_stdio(tmp_path):
    ready_or_skip()
    p = Private(str(tmp_path))
    try:
        target = [CLI, "mcp", "--image", IMAGE]
        tools = inspector([*target, "--method", "tools/list"], p.env())
        assert [t["name"] for t in tools["tools"]] == ["run_code", "write_file", "read_file",
                                                       "list_files", "run_command"]
        res = inspector([*target, "--method", "tools/call", "--tool-name", "run_code",
                         "--tool-arg", "code=print(6*7)"], p.env())
        assert res == {"content": [{"type": "text", "text": "stdout:\n42\n"}], "isError": False}
        procs, entries, temps = p.leftovers()
        assert not procs and not entries and not temps
    finally:
        p.cleanup()


def test_inspector_cli_http(server):
    node_or_skip()
    target = [f"{server.url}/mcp", "--transport", "http", "--header", f"X-API-Key: {server.key}"]
    tools = inspector([*target, "--method", "tools/list"], dict(os.environ))
    assert len(tools["tools"]) == 5
    res = inspector([*target, "--method", "tools/call", "--tool-name", "run_code",
                     "--tool-arg", "code=sum(range(10))"], dict(os.environ))
    assert res == {"content": [{"type": "text", "text": "result:\n45"}], "isError": False}
