"""Drives a real cellvm-executor directly, the way the agent does (PROTOCOL.md section 8).

Zygote(preload) starts `cellvm-executor --zygote --fd N --preload ...` and reads
Z_READY; zygote.spawn() sends Z_SPAWN with the three fds (SCM_RIGHTS) and
returns an Executor after X_READY. Executor.run(code) sends X_EXECUTE and
collects everything until X_END, reading the stdout/stderr pipes as they fill
(the executor waits for them to be read before each message), so the recorded
order is the real one.
"""

import fcntl
import os
import selectors
import signal
import socket
import subprocess
import sys
import time

import cbor2
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
from cellvm._wire import HEADER, encode_frames, FLAG_MORE  # noqa: E402

BUILD = os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build"))
EXECUTOR = os.path.join(BUILD, "cellvm-executor")
DEFAULT_PRELOAD = "numpy,pandas,matplotlib,matplotlib.pyplot"

Z_READY, Z_SPAWN, Z_SPAWNED = 0x4001, 0x4002, 0x4003
X_READY, X_EXECUTE, X_END = 0x4010, 0x4011, 0x4012
EXEC_INPUT, STREAM, DISPLAY, RESULT, EXEC_ERROR = 0x8010, 0x8011, 0x8012, 0x8013, 0x8014


def read_message(sock, timeout=30):
    """One reassembled message (type, id, body) or None at EOF."""
    sock.settimeout(timeout)
    acc = b""
    while True:
        hdr = _recv_exact(sock, HEADER.size)
        if hdr is None:
            return None
        length, mtype, flags, rid = HEADER.unpack(hdr)
        body = _recv_exact(sock, length) if length else b""
        acc += body
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


class Run:
    """What one X_EXECUTE produced, in order: events are (type, body), STREAM included."""

    def __init__(self):
        self.events = []
        self.end = None

    def of(self, mtype):
        return [b for t, b in self.events if t == mtype]

    def stream(self, name):
        return "".join(b["text"] for b in self.of(STREAM) if b["name"] == name)

    @property
    def stdout(self):
        return self.stream("stdout")

    @property
    def stderr(self):
        return self.stream("stderr")

    @property
    def result(self):
        r = self.of(RESULT)
        assert len(r) <= 1
        return r[0] if r else None

    @property
    def text(self):
        r = self.result
        return r["data"]["text/plain"] if r else None

    @property
    def displays(self):
        return self.of(DISPLAY)

    @property
    def error(self):
        e = self.of(EXEC_ERROR)
        assert len(e) <= 1
        return e[0] if e else None


class Executor:
    def __init__(self, pid, ctrl, out_r, err_r, context):
        self.pid = pid
        self.ctrl = ctrl
        self.pipes = {out_r: "stdout", err_r: "stderr"}
        for fd in self.pipes:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        self.context = context
        self.next_id = 100
        self.dead = False

    def drain(self, run, once=False):
        """Reads the pipes until empty; once=True: one read each, as an event loop
        does before looking at the control socket again (reading on until empty
        could take output the executor wrote after its next message)."""
        for fd, name in self.pipes.items():
            while True:
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    break
                if not data:
                    break
                if run is not None:
                    run.events.append((STREAM, {"name": name, "text": data.decode(errors="replace")}))
                if once:
                    break

    def start(self, code, envs=None, sandbox_envs=None):
        self.next_id += 1
        body = {"code": code}
        if envs is not None:
            body["envs"] = envs
        if sandbox_envs is not None:
            body["sandbox_envs"] = sandbox_envs
        self.ctrl.sendall(encode_frames(X_EXECUTE, self.next_id, body))
        return self.next_id

    def collect(self, rid, timeout=60, on_input=None):
        """Reads pipes and control messages as they come (like the agent's epoll loop)."""
        run = Run()
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.ctrl, selectors.EVENT_READ)
        for fd in self.pipes:
            sel.register(fd, selectors.EVENT_READ)
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no X_END within {timeout} s; got {run.events}")
                ready = [k.fileobj for k, _ in sel.select(left)]
                if self.ctrl not in ready:
                    self.drain(run, once=True)
                    continue
                # The executor sends a message only once the pipes were read empty
                # (or 50 ms passed), so pipe bytes seen now were written after it.
                msg = read_message(self.ctrl, timeout=left)
                if msg is None:
                    self.drain(run)
                    self.dead = True
                    return run
                mtype, mid, body = msg
                assert mid == rid, (hex(mtype), mid, rid)
                if mtype == X_END:
                    self.drain(run)
                    run.end = body
                    return run
                run.events.append((mtype, body))
                if mtype == EXEC_INPUT and on_input is not None:
                    on_input()
        finally:
            sel.close()

    def run(self, code, envs=None, timeout=60, sandbox_envs=None):
        return self.collect(self.start(code, envs, sandbox_envs), timeout)

    def ok(self, code, **kw):
        r = self.run(code, **kw)
        assert r.error is None, r.error
        assert r.end["status"] == "ok"
        return r

    def alive(self):
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        try:
            with open(f"/proc/{self.pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    def close(self):
        if self.ctrl is None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.ctrl.close()
        self.ctrl = None
        for fd in self.pipes:
            os.close(fd)


class Zygote:
    def __init__(self, preload=DEFAULT_PRELOAD, env=None):
        self.sock, remote = socket.socketpair()
        args = [EXECUTOR, "--zygote", "--fd", str(remote.fileno())]
        if preload is not None:
            args += ["--preload", preload]
        self.proc = subprocess.Popen(args, pass_fds=[remote.fileno()], env=env)
        remote.close()
        msg = read_message(self.sock, timeout=60)
        assert msg is not None and msg[0] == Z_READY, msg
        self.ready = msg[2]
        self.executors = []
        self.count = 0

    def spawn(self, cwd="/"):
        self.count += 1
        ctx = f"ctx{self.count}"
        ours, theirs = socket.socketpair()
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        data = encode_frames(Z_SPAWN, self.count, {"context": ctx, "cwd": cwd})
        socket.send_fds(self.sock, [data], [theirs.fileno(), out_w, err_w])
        theirs.close()
        os.close(out_w)
        os.close(err_w)
        mtype, rid, body = read_message(self.sock)
        assert (mtype, rid, body["context"]) == (Z_SPAWNED, self.count, ctx), body
        assert body["pid"] > 0, body
        msg = read_message(ours)
        assert msg is not None and msg[0] == X_READY, msg
        assert msg[2]["pid"] == body["pid"]
        ex = Executor(body["pid"], ours, out_r, err_r, ctx)
        self.executors.append(ex)
        return ex

    def close(self):
        for ex in self.executors:
            ex.close()
        self.sock.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="module")
def zygote():
    z = Zygote()
    yield z
    z.close()


@pytest.fixture
def ex(zygote):
    e = zygote.spawn()
    yield e
    e.close()


def test_zygote_ready_lists_preloads(zygote):
    assert zygote.ready["preloaded"] == DEFAULT_PRELOAD.split(",")
    assert "errors" not in zygote.ready
    assert zygote.ready["pid"] == zygote.proc.pid
