"""`cellvm serve` owns its sandboxes' lifetimes (docs/SERVE.md, "Lifetimes"
and "The warm pool"), checked on real micro-VMs restored from the template:

- SIGTERM kills every sandbox the server made, and leaves nothing behind;
- a SIGKILLed server leaves its sandboxes to their deadlines: `cellvm ps`
  lists them meanwhile under the server's ids, the guest of a short one ends
  itself, `cellvm kill` ends a long one;
- `--pool`: a create takes a warmed clone, and nothing of the warm-up is in
  the user's contexts (execution count 1, no extra context).
"""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import http_direct  # noqa: E402
from conftest import build_image_or_skip  # noqa: E402
from serve_process import CLI, Server, tail  # noqa: E402


@pytest.fixture(autouse=True)
def image():
    build_image_or_skip()


def call(s, method, path, body=None, headers=None, timeout=120):
    h = {"X-API-Key": s.key, "Content-Type": "application/json", **(headers or {})}
    data = json.dumps(body).encode() if body is not None else None
    return http_direct.request(s.url + path, data=data, method=method, headers=h, timeout=timeout)


def create(s, timeout=300):
    st, body = call(s, "POST", "/v2/sandboxes", {"templateID": "base", "timeout": timeout})
    assert st == 201, (st, body, tail(s.log_path))
    return json.loads(body)


def execute(s, sbx, code, **extra):
    st, body = call(s, "POST", "/execute", {"code": code, **extra},
                    {"E2b-Sandbox-Id": sbx["sandboxID"], "E2b-Sandbox-Port": "49999",
                     "X-Access-Token": sbx["envdAccessToken"]})
    assert st == 200, (st, body)
    return [json.loads(x) for x in body.decode().splitlines()]


def entries(s):
    """The server's registry: {key: pid}."""
    out = {}
    for path in glob.glob(os.path.join(s.run, "*.sandbox")):
        fields = dict(line.split("=", 1) for line in open(path).read().splitlines() if "=" in line)
        out[fields["key"]] = int(fields["pid"])
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def ps(s):
    r = subprocess.run([CLI, "ps"], env=dict(os.environ, CELLVM_RUNTIME_DIR=s.run),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_sigterm_kills_every_sandbox(tmp_path):
    s = Server(str(tmp_path))
    s.wait_healthy()
    made = [create(s)["sandboxID"] for _ in range(2)]
    pids = entries(s)
    assert sorted(pids) == sorted(made), "a sandbox's id is its registry key"
    listing = ps(s)
    assert all(i in listing for i in made), listing
    problems = s.stop()  # SIGTERM; then nothing of the server's may be left
    assert not problems, "\n".join(problems) + tail(s.log_path)
    assert not any(alive(p) for p in pids.values())
    assert "killing the sandboxes" in tail(s.log_path)


def test_a_sigkilled_server_leaves_its_sandboxes_to_their_deadlines(tmp_path):
    s = Server(str(tmp_path), env_extra={"CELLVM_DEADLINE_GRACE": "1"})
    try:
        s.wait_healthy()
        short = create(s, timeout=6)["sandboxID"]
        long = create(s, timeout=600)["sandboxID"]
        pids = entries(s)
        s.proc.send_signal(signal.SIGKILL)
        s.proc.wait(30)
        # Alive without their server, and listed under the server's ids.
        listing = ps(s)
        assert short in listing and long in listing, listing
        assert alive(pids[short]) and alive(pids[long])
        # The short one ends at its deadline (its guest powers off; a sweep
        # would kill it past deadline + grace too).
        deadline = time.monotonic() + 60
        while alive(pids[short]) and time.monotonic() < deadline:
            ps(s)  # every cellvm process sweeps the registry
            time.sleep(1)
        assert not alive(pids[short]), f"{short} outlived its deadline by 50 s"
        assert alive(pids[long])
        assert short not in ps(s)
        r = subprocess.run([CLI, "kill", long], env=dict(os.environ, CELLVM_RUNTIME_DIR=s.run),
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        deadline = time.monotonic() + 20
        while alive(pids[long]) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(pids[long])
    finally:
        for pid in entries(s).values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        s.stop()  # the server is gone already: this only cleans up


def test_the_pool_hands_out_warm_clones_without_a_trace_of_the_warm_up(tmp_path):
    s = Server(str(tmp_path), extra_args=["--pool", "1"])
    try:
        s.wait_healthy()
        deadline = time.monotonic() + 120
        while not entries(s) and time.monotonic() < deadline:
            time.sleep(0.5)
        pooled = set(entries(s))
        assert len(pooled) == 1, "the pool restores one clone ahead of create"
        time.sleep(3)  # its warm-up cell
        sbx = create(s)
        assert sbx["sandboxID"] in pooled, "the create took the pooled clone"
        lines = execute(s, sbx, "1 + 1")
        assert {"type": "number_of_executions", "execution_count": 1} in lines, lines
        assert any(x.get("type") == "result" and x.get("text") == "2" for x in lines), lines
        st, body = call(s, "GET", "/contexts", headers={
            "E2b-Sandbox-Id": sbx["sandboxID"], "E2b-Sandbox-Port": "49999",
            "E2B-Traffic-Access-Token": sbx["trafficAccessToken"]})
        langs = sorted(c["language"] for c in json.loads(body))
        assert langs == ["javascript", "python"], langs  # the defaults, no warm-up context
        # The pool refills: another clone waits, and it is not the one handed out.
        deadline = time.monotonic() + 120
        while len(entries(s)) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert len(entries(s)) == 2
    finally:
        problems = s.stop()
    assert not problems, "\n".join(problems)
