"""Shared helpers of the isolation, fault and reliability tests (no tests here).

`Box` is a real cellvm-agent (conftest.AgentProcess) whose workdir the sandbox
user can write: the agent runs as root here, so its executors drop to uid 1000.
"""

import os
import time

import conftest  # noqa: F401  (puts client/python on sys.path)
from cellvm import _wire

SANDBOX_UID = 1000


class Outcome:
    def __init__(self, messages):
        self.messages = messages
        self.stdout = "".join(b["text"] for t, b in messages
                              if t == _wire.STREAM and b["name"] == "stdout")
        self.stderr = "".join(b["text"] for t, b in messages
                              if t == _wire.STREAM and b["name"] == "stderr")
        self.errors = [b for t, b in messages if t == _wire.EXEC_ERROR]
        self.results = [b["data"].get("text/plain") for t, b in messages if t == _wire.RESULT]
        self.terminal = messages[-1] if messages else (None, None)

    @property
    def ok(self):
        t, b = self.terminal
        return t == _wire.OK and b.get("status") == "ok"

    @property
    def restarted(self):
        return any(e["name"] == "ContextRestarted" for e in self.errors)

    def __repr__(self):
        return (f"Outcome(terminal={self.terminal!r}, errors={self.errors!r}, "
                f"stdout={self.stdout[-500:]!r}, stderr={self.stderr[-500:]!r})")


class Box:
    """A private agent plus one connection to it."""

    def __init__(self, *args, preload="", launcher=None):
        self.agent = conftest.AgentProcess(*args, preload=preload, launcher=launcher)
        # The sandbox user needs its cwd writable, and a way through the 0700 temp dir.
        os.chmod(self.agent.dir, 0o711)
        os.chmod(self.agent.workdir, 0o777)
        self.conn = _wire.Connection.connect(self.agent.addr)

    @property
    def pid(self):
        return self.agent.proc.pid

    def run(self, code, context=None, timeout=60, timeout_ms=None):
        body = {"code": code}
        if context:
            body["context"] = context
        if timeout_ms:
            body["timeout_ms"] = timeout_ms
        return Outcome(list(self.conn.request(_wire.EXECUTE, body).messages(timeout)))

    def value(self, code, **kw):
        out = self.run(code, **kw)
        assert out.ok and out.results, out
        return out.results[0]

    def answers(self):
        """The agent still serves: a PING and a cell on a brand-new connection."""
        conn = _wire.Connection.connect(self.agent.addr)
        try:
            conn.call(_wire.PING, {"payload": 7}, timeout=10)
            msgs = list(conn.request(_wire.EXECUTE, {"code": "6 * 7"}).messages(60))
            return msgs[-1][0] == _wire.OK and any(
                t == _wire.RESULT and b["data"]["text/plain"] == "42" for t, b in msgs)
        finally:
            conn.close()

    def close(self):
        try:
            self.conn.close()
        finally:
            rc = self.agent.stop()
        assert self.agent.proc.returncode is not None
        return rc


def wait_for(pred, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def processes_in_group(pgid):
    """Live (non-zombie) processes whose process group is `pgid`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            found.append(int(name))
    return found


def agent_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def agent_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")
