"""cellvm-agent against docs/PROTOCOL.md, over raw frames (no SDK in between).

Every test talks to a real agent process with the real executor; the frames are
built by hand here so that malformed input can be sent too.
"""

import os
import socket
import struct
import time

import cbor2
import pytest

HDR = struct.Struct(">IHHI")
MAX_FRAME = 4 * 1024 * 1024
MAX_BODY = MAX_FRAME - HDR.size
MORE = 1
MAX_MESSAGE = 64 * 1024 * 1024

HELLO, PING, CANCEL = 0x0001, 0x0002, 0x0003
EXECUTE, INTERRUPT = 0x0010, 0x0011
CONTEXT_CREATE, CONTEXT_LIST, CONTEXT_RESTART, CONTEXT_REMOVE = 0x0020, 0x0021, 0x0022, 0x0023
OK, ERROR = 0x8000, 0x8001
EXEC_INPUT, STREAM, DISPLAY, RESULT, EXEC_ERROR = 0x8010, 0x8011, 0x8012, 0x8013, 0x8014
X_EXECUTE = 0x4011


def frame(mtype, req_id, payload=b"", flags=0, length=None):
    return HDR.pack(len(payload) if length is None else length, mtype, flags, req_id) + payload


def message(mtype, req_id, body):
    """All frames of one message; `body` is a dict (CBOR-encoded) or raw bytes."""
    payload = body if isinstance(body, (bytes, bytearray)) else cbor2.dumps(body)
    out, pos = [], 0
    while True:
        piece = payload[pos:pos + MAX_BODY]
        pos += len(piece)
        out.append(frame(mtype, req_id, piece, MORE if pos < len(payload) else 0))
        if pos >= len(payload):
            return b"".join(out)


class Raw:
    """A hand-driven protocol connection."""

    def __init__(self, addr, timeout=30.0, family=None, sockaddr=None):
        if family is None:
            assert addr.startswith("unix:")
            family, sockaddr = socket.AF_UNIX, addr[5:]
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(sockaddr)
        self.buf = bytearray()
        self.stash = []  # messages read while waiting for another id

    @classmethod
    def over(cls, sock):
        self = cls.__new__(cls)
        self.sock, self.buf, self.stash = sock, bytearray(), []
        return self

    def close(self):
        self.sock.close()

    def send(self, mtype, req_id, body=None):
        self.sock.sendall(message(mtype, req_id, {} if body is None else body))

    def send_raw(self, data):
        self.sock.sendall(data)

    def _fill(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise EOFError("agent closed the connection")
            self.buf += chunk

    def read_frame(self):
        self._fill(HDR.size)
        length, mtype, flags, req_id = HDR.unpack(self.buf[:HDR.size])
        assert length <= MAX_BODY and flags & ~MORE == 0, (length, flags)
        self._fill(HDR.size + length)
        body = bytes(self.buf[HDR.size:HDR.size + length])
        del self.buf[:HDR.size + length]
        return mtype, flags, req_id, body

    def recv(self):
        """The next whole message: (type, id, decoded body)."""
        if self.stash:
            return self.stash.pop(0)
        mtype, flags, req_id, body = self.read_frame()
        while flags & MORE:
            t2, flags, id2, more = self.read_frame()
            assert (t2, id2) == (mtype, req_id), "frames of another message inside a chunked one"
            body += more
        decoded = cbor2.loads(body) if body else {}
        assert isinstance(decoded, dict)
        return mtype, req_id, decoded

    def until_terminal(self, req_id):
        """Messages of request `req_id`, terminal last; other ids are kept for later."""
        got, keep = [], []
        while True:
            if self.stash and any(m[1] == req_id for m in self.stash):
                i = next(i for i, m in enumerate(self.stash) if m[1] == req_id)
                msg = self.stash.pop(i)
            else:
                saved, self.stash = self.stash, []
                msg = self.recv()
                self.stash = saved
            if msg[1] != req_id:
                keep.append(msg)
                continue
            got.append(msg)
            if msg[0] in (OK, ERROR):
                self.stash.extend(keep)
                return got

    def call(self, mtype, req_id, body=None):
        self.send(mtype, req_id, body)
        msgs = self.until_terminal(req_id)
        assert len(msgs) == 1, msgs
        return msgs[0]

    def hello(self):
        t, _, body = self.call(HELLO, 1, {"protocol": 1, "client": "test"})
        assert t == OK, body
        return body

    def expect_closed(self, timeout=10):
        """Reads until the agent closes; returns the messages read meanwhile."""
        self.sock.settimeout(timeout)
        msgs = []
        try:
            while True:
                msgs.append(self.recv())
        except (EOFError, ConnectionResetError):
            return msgs


def error_code(msg):
    t, _, body = msg
    assert t == ERROR, msg
    return body["code"]


def execute(conn, req_id, code, **extra):
    conn.send(EXECUTE, req_id, dict(code=code, **extra))
    return conn.until_terminal(req_id)


def result_text(msgs):
    return [b["data"]["text/plain"] for t, _, b in msgs if t == RESULT]


def stdout_text(msgs, name="stdout"):
    return "".join(b["text"] for t, _, b in msgs if t == STREAM and b["name"] == name)


@pytest.fixture
def conn(agent):
    c = Raw(agent.addr)
    c.hello()
    yield c
    c.close()


@pytest.fixture
def ctx(conn):
    """A private context of the session agent, removed afterwards."""
    t, _, body = conn.call(CONTEXT_CREATE, 900, {})
    assert t == OK
    yield body["id"]
    conn.call(CONTEXT_REMOVE, 901, {"context": body["id"]})


def agent_alive(agent):
    c = Raw(agent.addr)
    try:
        c.hello()
        t, _, body = c.call(PING, 2, {"payload": "alive"})
        return t == OK and body["payload"] == "alive"
    finally:
        c.close()


# --- handshake ---------------------------------------------------------------

def test_hello_fields(agent):
    c = Raw(agent.addr)
    body = c.hello()
    assert body["protocol"] == 1
    assert isinstance(body["agent_version"], str) and body["agent_version"]
    assert {"execute", "contexts", "interrupt", "cancel", "chunking"} <= set(body["capabilities"])
    assert body["max_message"] == MAX_MESSAGE
    assert body["pid"] == agent.proc.pid
    ctx = body["default_context"]
    assert len(ctx) == 36 and ctx[14] == "4", ctx  # UUID4 text
    boot = body["boot"]
    assert 0 < boot["agent_start"] <= boot["agent_ready"]
    assert boot["agent_ready"] <= time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    # The default context is listed and usable.
    t, _, lst = c.call(CONTEXT_LIST, 2)
    assert ctx in [x["id"] for x in lst["contexts"]]
    assert result_text(execute(c, 3, "6*7")) == ["42"]
    # Once an execution ran, the zygote was up: its stamp is there and in order.
    boot = c.hello()["boot"]
    assert boot["agent_start"] <= boot["executor_ready"]
    c.close()


def test_boot_stamps_from_init_environment(monkeypatch):
    import conftest
    monkeypatch.setenv("CELLVM_STAMP_KERNEL_TO_INIT", "123456789")
    monkeypatch.setenv("CELLVM_STAMP_Init_Done", "987654321")
    monkeypatch.setenv("CELLVM_STAMP_BAD", "12x")
    a = conftest.AgentProcess(preload="")
    try:
        c = Raw(a.addr)
        boot = c.hello()["boot"]
        assert boot["kernel_to_init"] == 123456789
        assert boot["init_done"] == 987654321
        assert "bad" not in boot
        c.close()
    finally:
        a.stop()


def test_requests_before_hello(agent):
    c = Raw(agent.addr)
    assert error_code(c.call(PING, 5, {})) == "handshake_required"
    assert error_code(c.call(EXECUTE, 6, {"code": "1"})) == "handshake_required"
    assert error_code(c.call(0x0777, 7, {})) == "handshake_required"
    c.hello()
    t, _, body = c.call(PING, 8, {})
    assert t == OK
    c.close()


def test_unsupported_version(agent):
    c = Raw(agent.addr)
    assert error_code(c.call(HELLO, 1, {"protocol": 2})) == "unsupported_version"
    assert error_code(c.call(HELLO, 2, {"protocol": "1"})) == "bad_request"
    assert error_code(c.call(HELLO, 3, {})) == "bad_request"
    # Still not handshaken; a correct HELLO then works.
    assert error_code(c.call(PING, 4, {})) == "handshake_required"
    c.hello()
    assert c.call(PING, 5, {})[0] == OK
    c.close()


# --- simple requests -------------------------------------------------------------

def test_ping_echoes_payload(conn):
    payload = {"n": [1, -2, 2**40, 1.5, None, True], "b": b"\x00\xff", "s": "h\u00e9"}
    before = time.time_ns()
    t, req_id, body = conn.call(PING, 77, {"payload": payload})
    after = time.time_ns()
    assert (t, req_id) == (OK, 77)
    assert body["payload"] == payload
    assert before - 10**9 <= body["time_ns"] <= after + 10**9
    t, _, body = conn.call(PING, 78, {})
    assert t == OK and "payload" not in body and body["time_ns"] > 0
    # An empty body (length 0) is the empty map.
    conn.send_raw(frame(PING, 79))
    t, _, body = conn.until_terminal(79)[0]
    assert t == OK and "time_ns" in body


def test_unknown_type_keeps_connection(conn):
    for n, mtype in enumerate([0x0777, 0x01FF, 0x02FF, X_EXECUTE, OK, 0x7fff]):
        assert error_code(conn.call(mtype, 10 + n, {})) == "unknown_type"
    assert conn.call(PING, 30, {})[0] == OK


def test_bad_bodies_keep_connection(conn):
    cases = [
        frame(PING, 11, cbor2.dumps(1)),             # CBOR but not a map
        frame(PING, 12, cbor2.dumps([1, 2])),
        frame(PING, 13, b"\xff\xff"),                # not CBOR
        frame(PING, 14, b"\xa1\x61"),                # truncated CBOR
        frame(PING, 15, cbor2.dumps({}) + b"\x00"),  # trailing bytes
        frame(PING, 16, b"\xa1\x61x" + b"\x81" * 10000 + b"\x00"),  # nested too deep
        frame(EXECUTE, 17, cbor2.dumps({})),         # missing code
        frame(EXECUTE, 18, cbor2.dumps({"code": 5})),  # wrong type
        frame(EXECUTE, 19, cbor2.dumps({"code": b"1"})),
        frame(EXECUTE, 20, cbor2.dumps({"code": "1", "timeout_ms": -1})),
        frame(EXECUTE, 21, cbor2.dumps({"code": "1", "envs": {"A": 1}})),
        frame(EXECUTE, 22, cbor2.dumps({"code": "1", "context": 7})),
        frame(CANCEL, 23, cbor2.dumps({"id": "x"})),
        frame(CONTEXT_REMOVE, 24, cbor2.dumps({})),
        frame(CONTEXT_CREATE, 25, cbor2.dumps({"language": "r"})),
        frame(CONTEXT_CREATE, 26, cbor2.dumps({"cwd": "/nonexistent/dir", "language": "bash"})),
        frame(EXECUTE, 27, cbor2.dumps({"code": "1", "sandbox_envs": ["A"]})),
        frame(EXECUTE, 28, cbor2.dumps({"code": "1", "sandbox_envs": {"A": b"x"}})),
    ]
    for n, data in enumerate(cases):
        conn.send_raw(data)
        msgs = conn.until_terminal(11 + n)
        assert len(msgs) == 1 and error_code(msgs[0]) == "bad_request", (n, msgs)
        assert msgs[0][2]["message"]
    assert conn.call(PING, 40, {})[0] == OK
    # Unknown keys are ignored.
    assert conn.call(PING, 41, {"future": [1, 2]})[0] == OK


def test_not_found(conn):
    assert error_code(conn.call(EXECUTE, 2, {"code": "1", "context": "nope"})) == "not_found"
    assert error_code(conn.call(INTERRUPT, 3, {"context": "nope"})) == "not_found"
    assert error_code(conn.call(CONTEXT_RESTART, 4, {"context": "nope"})) == "not_found"
    assert error_code(conn.call(CONTEXT_REMOVE, 5, {"context": "nope"})) == "not_found"
    assert error_code(conn.call(CANCEL, 6, {"id": 12345})) == "not_found"


# --- frame errors ------------------------------------------------------------------

def test_oversize_length_closes_only_that_connection(agent):
    other = Raw(agent.addr)
    other.hello()
    bad = Raw(agent.addr)
    bad.hello()
    bad.send_raw(frame(PING, 5, length=MAX_BODY + 1))
    msgs = bad.expect_closed()
    assert len(msgs) == 1, msgs
    t, req_id, body = msgs[0]
    assert (t, req_id, body["code"]) == (ERROR, 0, "bad_frame")
    # The other connection did not notice.
    assert other.call(PING, 2, {"payload": 1})[2]["payload"] == 1
    assert result_text(execute(other, 3, "1+1")) == ["2"]
    other.close()
    bad.close()


def test_unknown_flags_close(agent):
    bad = Raw(agent.addr)
    bad.hello()
    bad.send_raw(frame(PING, 5, cbor2.dumps({}), flags=0x0004))
    msgs = bad.expect_closed()
    assert [(t, i, b["code"]) for t, i, b in msgs] == [(ERROR, 0, "bad_frame")]
    assert agent_alive(agent)


def test_truncated_frame_then_close(agent):
    c = Raw(agent.addr)
    c.hello()
    data = message(PING, 9, {"payload": "x" * 100})
    c.send_raw(data[:HDR.size + 20])
    c.sock.shutdown(socket.SHUT_WR)
    # No reply for the partial request, just the end of the connection.
    assert c.expect_closed() == []
    c.close()
    # Half a header is truncated too.
    c = Raw(agent.addr)
    c.send_raw(b"\x00\x00\x00")
    c.sock.shutdown(socket.SHUT_WR)
    assert c.expect_closed() == []
    c.close()
    assert agent_alive(agent)


def test_garbage_bytes(agent):
    c = Raw(agent.addr)
    c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n" + bytes(range(256)) * 4)
    msgs = c.expect_closed()
    assert [(t, i, b["code"]) for t, i, b in msgs] == [(ERROR, 0, "bad_frame")]
    c.close()
    assert agent_alive(agent)


def test_interleaved_chunk_is_bad_frame(agent):
    c = Raw(agent.addr)
    c.hello()
    c.send_raw(frame(EXECUTE, 5, b"\xa1", flags=MORE) + frame(PING, 6, b""))
    msgs = c.expect_closed()
    assert [(t, i, b["code"]) for t, i, b in msgs] == [(ERROR, 0, "bad_frame")]
    assert agent_alive(agent)


def test_message_over_max_message_is_too_large(agent):
    c = Raw(agent.addr)
    c.hello()
    piece = b"\x00" * MAX_BODY
    frames_needed = MAX_MESSAGE // MAX_BODY + 1  # the last header pushes it over
    for _ in range(frames_needed):
        try:
            c.send_raw(frame(EXECUTE, 5, piece, flags=MORE))
        except (BrokenPipeError, ConnectionResetError):
            break
    msgs = c.expect_closed()
    assert [(t, b["code"]) for t, _, b in msgs] == [(ERROR, "too_large")]
    c.close()
    assert agent_alive(agent)


def test_chunked_request_reassembly(conn, ctx):
    n = 5 * 1024 * 1024
    code = "s = '" + "a" * n + "'\nlen(s)"
    data = message(EXECUTE, 7, {"code": code, "context": ctx})
    assert data.count(struct.pack(">HH", EXECUTE, MORE)) >= 1  # really chunked
    conn.send_raw(data)
    msgs = conn.until_terminal(7)
    assert result_text(msgs) == [str(n)]
    assert msgs[-1][0] == OK and msgs[-1][2]["status"] == "ok"
    # A chunked reply: the agent splits a > 4 MiB RESULT into frames with MORE.
    conn.send(EXECUTE, 8, {"code": "s * 2", "context": ctx})
    frames, body = [], b""
    while True:
        t, flags, req_id, piece = conn.read_frame()
        if req_id != 8:
            continue
        frames.append((t, flags))
        if t == RESULT:
            body += piece
        if t in (OK, ERROR):
            break
    result = [f for f in frames if f[0] == RESULT]
    assert len(result) >= 2 and all(f[1] == MORE for f in result[:-1]) and result[-1][1] == 0
    assert cbor2.loads(body)["data"]["text/plain"] == repr("a" * 2 * n)


# --- executions ----------------------------------------------------------------------

def test_execute_message_order(conn, ctx):
    msgs = execute(conn, 3, "print('hi')\nimport sys; print('oops', file=sys.stderr)\n21*2",
                   context=ctx)
    assert msgs[0][0] == EXEC_INPUT and msgs[0][2]["execution_count"] == 1
    assert stdout_text(msgs) == "hi\n"
    assert stdout_text(msgs, "stderr") == "oops\n"
    assert result_text(msgs) == ["42"]
    assert msgs[-1] == (OK, 3, {"status": "ok", "execution_count": 1})
    msgs = execute(conn, 4, "1/0", context=ctx)
    errs = [b for t, _, b in msgs if t == EXEC_ERROR]
    assert len(errs) == 1 and errs[0]["name"] == "ZeroDivisionError"
    assert msgs[-1] == (OK, 4, {"status": "error", "execution_count": 2})


def test_envs_are_per_execution(conn, ctx):
    msgs = execute(conn, 3, "import os; os.environ.get('CV_T')", context=ctx, envs={"CV_T": "v1"})
    assert result_text(msgs) == ["'v1'"]
    msgs = execute(conn, 4, "repr(os.environ.get('CV_T'))", context=ctx)
    assert result_text(msgs) == ["'None'"]


def test_stream_text_is_valid_utf8(conn, ctx):
    code = ("import os, sys, time\n"
            "os.write(1, b'\\xe2\\x82')\n"   # euro sign cut in two writes
            "time.sleep(0.2)\n"
            "os.write(1, b'\\xac|\\xff|\\xc3(|ok\\n')\n"
            "os.write(2, b'\\xf0\\x9f')\n")  # cut at the end of the execution
    msgs = execute(conn, 3, code, context=ctx)
    assert stdout_text(msgs) == "\u20ac|\ufffd|\ufffd(|ok\n"
    assert stdout_text(msgs, "stderr") == "\ufffd"


def test_duplicate_id(conn, ctx):
    conn.send(EXECUTE, 5, {"code": "import time; time.sleep(1); 'done'", "context": ctx})
    # Started (its EXEC_INPUT read), so the next message of id 5 is the refusal.
    assert conn.recv()[:2] == (EXEC_INPUT, 5)
    assert error_code(conn.call(PING, 5, {})) == "duplicate_id"
    assert error_code(conn.call(EXECUTE, 5, {"code": "1"})) == "duplicate_id"
    msgs = conn.until_terminal(5)
    assert result_text(msgs) == ["'done'"] and msgs[-1][0] == OK
    # Once finished, the id can be used again.
    assert conn.call(PING, 5, {})[0] == OK


def test_cancel_queued_and_running(conn, ctx):
    execute(conn, 2, "x = 41", context=ctx)
    conn.send(EXECUTE, 10, {"code": "import time\nfor i in range(300): time.sleep(0.1)",
                            "context": ctx})
    conn.send(EXECUTE, 11, {"code": "print('never')", "context": ctx})
    # Queued: ends with cancelled and never runs.
    t, req_id, _ = conn.call(CANCEL, 12, {"id": 11})
    assert (t, req_id) == (OK, 12)
    assert [error_code(m) for m in conn.until_terminal(11)] == ["cancelled"]
    # Running: interrupted, ends with cancelled; the context survives.
    time.sleep(0.3)
    start = time.monotonic()
    assert conn.call(CANCEL, 13, {"id": 10})[0] == OK
    msgs = conn.until_terminal(10)
    assert error_code(msgs[-1]) == "cancelled"
    assert time.monotonic() - start < 1.5  # the interrupt worked, no kill needed
    assert [b["name"] for t, _, b in msgs if t == EXEC_ERROR] == ["KeyboardInterrupt"]
    assert result_text(execute(conn, 14, "x + 1", context=ctx)) == ["42"]
    # Not in flight any more.
    assert error_code(conn.call(CANCEL, 15, {"id": 10})) == "not_found"


def test_interrupt(conn, ctx):
    execute(conn, 2, "y = 'kept'", context=ctx)
    conn.send(EXECUTE, 3, {"code": "import time; time.sleep(30)", "context": ctx})
    time.sleep(0.3)
    assert conn.call(INTERRUPT, 4, {"context": ctx})[0] == OK
    msgs = conn.until_terminal(3)
    assert [b["name"] for t, _, b in msgs if t == EXEC_ERROR] == ["KeyboardInterrupt"]
    assert msgs[-1][0] == OK and msgs[-1][2]["status"] == "error"
    assert result_text(execute(conn, 5, "y", context=ctx)) == ["'kept'"]
    # Interrupting an idle context is fine.
    assert conn.call(INTERRUPT, 6, {"context": ctx})[0] == OK


def test_ignored_interrupt_kills_and_restarts(conn, ctx):
    execute(conn, 2, "z = 1", context=ctx)
    code = "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(30)"
    conn.send(EXECUTE, 3, {"code": code, "context": ctx})
    time.sleep(0.5)
    start = time.monotonic()
    assert conn.call(INTERRUPT, 4, {"context": ctx})[0] == OK
    msgs = conn.until_terminal(3)
    took = time.monotonic() - start
    assert 1.5 < took < 6, took
    errs = [b for t, _, b in msgs if t == EXEC_ERROR]
    assert [e["name"] for e in errs] == ["ContextRestarted"] and errs[0]["traceback"] == []
    assert msgs[-1][0] == OK and msgs[-1][2]["status"] == "error"
    # A fresh namespace in the same context.
    msgs = execute(conn, 5, "'z' in dir()", context=ctx)
    assert result_text(msgs) == ["False"]


def test_executor_death_restarts_context(conn, ctx):
    execute(conn, 2, "w = 1", context=ctx)
    msgs = execute(conn, 3, "print('bye', flush=True)\nimport os; os._exit(7)", context=ctx)
    assert stdout_text(msgs) == "bye\n"
    errs = [b for t, _, b in msgs if t == EXEC_ERROR]
    assert errs and errs[0]["name"] == "ContextRestarted" and "7" in errs[0]["value"]
    assert msgs[-1][0] == OK and msgs[-1][2]["status"] == "error"
    assert result_text(execute(conn, 4, "'w' in dir()", context=ctx)) == ["False"]


def test_timeout(conn, ctx):
    start = time.monotonic()
    msgs = execute(conn, 3, "print('started', flush=True)\nimport time; time.sleep(30)",
                   context=ctx, timeout_ms=500)
    assert 0.4 < time.monotonic() - start < 5
    assert stdout_text(msgs) == "started\n"
    assert error_code(msgs[-1]) == "timeout"
    assert result_text(execute(conn, 4, "1", context=ctx, timeout_ms=10000)) == ["1"]


def test_context_lifecycle(agent, conn):
    t, _, created = conn.call(CONTEXT_CREATE, 2, {"language": "python", "cwd": "/tmp"})
    assert t == OK and created["language"] == "python" and created["cwd"] == "/tmp"
    cid = created["id"]
    t, _, lst = conn.call(CONTEXT_LIST, 3)
    assert created in lst["contexts"]
    assert result_text(execute(conn, 4, "import os; v = 5; os.getcwd()", context=cid)) == ["'/tmp'"]
    # Another connection sees the same context (contexts are global).
    other = Raw(agent.addr)
    other.hello()
    assert result_text(execute(other, 2, "v", context=cid)) == ["5"]
    other.close()
    assert conn.call(CONTEXT_RESTART, 5, {"context": cid})[0] == OK
    assert result_text(execute(conn, 6, "'v' in dir()", context=cid)) == ["False"]
    assert conn.call(CONTEXT_REMOVE, 7, {"context": cid})[0] == OK
    assert error_code(conn.call(EXECUTE, 8, {"code": "1", "context": cid})) == "not_found"
    t, _, lst = conn.call(CONTEXT_LIST, 9)
    assert cid not in [c["id"] for c in lst["contexts"]]


def test_restart_ends_running_and_queued(conn):
    _, _, created = conn.call(CONTEXT_CREATE, 2, {})
    cid = created["id"]
    conn.send(EXECUTE, 3, {"code": "import time; time.sleep(30)", "context": cid})
    conn.send(EXECUTE, 4, {"code": "1", "context": cid})
    time.sleep(0.3)
    assert conn.call(CONTEXT_RESTART, 5, {"context": cid})[0] == OK
    assert [error_code(m) for m in conn.until_terminal(4)] == ["cancelled"]
    msgs = conn.until_terminal(3)
    assert [b["name"] for t, _, b in msgs if t == EXEC_ERROR] == ["ContextRestarted"]
    assert msgs[-1][0] == OK and msgs[-1][2]["status"] == "error"
    assert result_text(execute(conn, 6, "2", context=cid)) == ["2"]
    # Removing a busy context ends its execution the same way.
    conn.send(EXECUTE, 7, {"code": "import time; time.sleep(30)", "context": cid})
    time.sleep(0.3)
    assert conn.call(CONTEXT_REMOVE, 8, {"context": cid})[0] == OK
    msgs = conn.until_terminal(7)
    assert [b["name"] for t, _, b in msgs if t == EXEC_ERROR] == ["ContextRestarted"]


def test_executions_of_a_context_run_in_order(conn, ctx):
    for i in range(10):
        conn.send(EXECUTE, 100 + i, {"code": f"import time; time.sleep(0.01); seq = globals().get('seq', []) + [{i}]; seq",
                                      "context": ctx})
    for i in range(10):
        msgs = conn.until_terminal(100 + i)
        assert result_text(msgs) == [repr(list(range(i + 1)))]


def test_many_connections(agent):
    conns = [Raw(agent.addr) for _ in range(64)]
    for c in conns:
        c.send(HELLO, 1, {"protocol": 1})
    for c in conns:
        assert c.until_terminal(1)[0][0] == OK
    for i, c in enumerate(conns):
        c.send(PING, 2, {"payload": i})
        c.send(EXECUTE, 3, {"code": f"{i} * 2"})
    for i, c in enumerate(conns):
        assert c.until_terminal(2)[0][2]["payload"] == i
        assert result_text(c.until_terminal(3)) == [str(i * 2)]
    for c in conns:
        c.close()
    assert agent_alive(agent)


def test_disconnect_mid_execution(agent, conn, ctx):
    execute(conn, 2, "kept = 'yes'", context=ctx)
    leaver = Raw(agent.addr)
    leaver.hello()
    leaver.send(EXECUTE, 2, {"code": "import time\nfor i in range(300):\n print(i)\n time.sleep(0.1)",
                             "context": ctx})
    leaver.send(EXECUTE, 3, {"code": "leaked = 1", "context": ctx})  # queued: dropped
    assert leaver.recv()[0] == EXEC_INPUT
    assert leaver.recv()[0] == STREAM  # the cell runs; now vanish
    leaver.close()
    start = time.monotonic()
    msgs = execute(conn, 3, "kept, 'leaked' in dir()", context=ctx)
    assert result_text(msgs) == ["('yes', False)"]
    assert time.monotonic() - start < 2  # interrupted, not waited for
    assert agent_alive(agent)


def test_slow_reader_backpressure(fresh_agent):
    """A client that does not read must not make the agent buffer the cell's whole output."""
    c = Raw(fresh_agent.addr)
    c.hello()
    total = 48 * 1024 * 1024
    c.send(EXECUTE, 2, {"code": "import sys\nline = 'x' * 1023 + '\\n'\n"
                                f"for i in range({total // 1024}): sys.stdout.write(line)\n"
                                "sys.stdout.flush()\n'end'"})
    time.sleep(3)  # the cell writes as fast as it can; we don't read

    def rss_kib(pid):
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])

    assert rss_kib(fresh_agent.proc.pid) < 40 * 1024
    # Other clients are still served meanwhile.
    other = Raw(fresh_agent.addr)
    other.hello()
    assert other.call(PING, 2, {})[0] == OK
    other.close()
    msgs = c.until_terminal(2)
    out = stdout_text(msgs)
    assert len(out) == total and out == ("x" * 1023 + "\n") * (total // 1024)
    assert result_text(msgs) == ["'end'"]
    c.close()


def test_context_limit_is_busy(fresh_agent):
    """Past its context limit the agent answers busy instead of failing."""
    conn = Raw(fresh_agent.addr)
    conn.hello()
    made, codes = [], set()
    for i in range(70):
        t, _, body = conn.call(CONTEXT_CREATE, 1000 + i, {})
        if t == OK:
            made.append(body["id"])
        else:
            codes.add(body["code"])
            break
    assert codes == {"busy"}
    for i, cid in enumerate(made):
        assert conn.call(CONTEXT_REMOVE, 2000 + i, {"context": cid})[0] == OK
    assert conn.call(PING, 3000, {})[0] == OK



def children_of(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def cmdline(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().split(b"\0")


def test_zygote_stdout_is_no_regular_file(agent):
    # The dev-mode agent logs to a file; libgfortran (numpy's OpenBLAS, loaded
    # at preload) would block-buffer Fortran's unit 6 on it for good, and a
    # SciPy fit's log would come out cells later. The zygote gets /dev/null.
    deadline = time.monotonic() + 10
    while not (zygotes := [p for p in children_of(agent.proc.pid) if b"--zygote" in cmdline(p)]):
        assert time.monotonic() < deadline, agent.read_log()
        time.sleep(0.02)
    assert os.readlink(f"/proc/{agent.proc.pid}/fd/1") == agent.log_path
    assert os.readlink(f"/proc/{zygotes[0]}/fd/1") == "/dev/null"


def test_fortran_output_comes_with_its_cell(agent):
    pytest.importorskip("scipy")
    c = Raw(agent.addr)
    c.hello()
    code = ("import numpy as np, scipy.optimize as so\n"
            "so.minimize(lambda x: ((x - 3) ** 2).sum(), np.zeros(2), method='L-BFGS-B',"
            " options={'disp': True}).success\n")
    msgs = execute(c, 2, code)
    out = stdout_text(msgs)
    assert "RUNNING THE L-BFGS-B CODE" in out and "CONVERGENCE" in out, msgs
    c.close()


def test_executor_killed_from_outside(fresh_agent):
    c = Raw(fresh_agent.addr)
    c.hello()
    pid = int(result_text(execute(c, 2, "import os; os.getpid()"))[0])
    # The executor is the agent's child (subreaper), not the zygote's.
    assert pid in children_of(fresh_agent.proc.pid)
    c.send(EXECUTE, 3, {"code": "import time; time.sleep(30)"})
    assert c.recv()[0] == EXEC_INPUT
    os.kill(pid, 9)
    msgs = c.until_terminal(3)
    errs = [b for t, _, b in msgs if t == EXEC_ERROR]
    assert errs[0]["name"] == "ContextRestarted" and "signal 9" in errs[0]["value"]
    new_pid = int(result_text(execute(c, 4, "os.getpid() if 'os' in dir() else -1"))[0])
    assert new_pid == -1
    c.close()


def test_zygote_restarts_after_death(fresh_agent):
    # The agent listens before it starts the zygote: it may not be there yet.
    deadline = time.monotonic() + 10
    while True:
        zygotes = [p for p in children_of(fresh_agent.proc.pid) if b"--zygote" in cmdline(p)]
        if zygotes:
            break
        assert time.monotonic() < deadline, fresh_agent.read_log()
        time.sleep(0.02)
    assert len(zygotes) == 1
    os.kill(zygotes[0], 9)
    deadline = time.monotonic() + 10
    while True:
        now = [p for p in children_of(fresh_agent.proc.pid)
               if p != zygotes[0] and b"--zygote" in cmdline(p)]
        if now:
            break
        assert time.monotonic() < deadline, fresh_agent.read_log()
        time.sleep(0.05)
    c = Raw(fresh_agent.addr)
    c.hello()
    # The existing context survived; new contexts come from the new zygote.
    assert result_text(execute(c, 2, "1 + 1")) == ["2"]
    _, _, created = c.call(CONTEXT_CREATE, 3, {})
    assert result_text(execute(c, 4, "'new'", context=created["id"])) == ["'new'"]
    c.close()
    assert "zygote pid" in fresh_agent.read_log()


def test_half_closed_client_gets_its_replies(agent):
    c = Raw(agent.addr)
    c.send_raw(message(HELLO, 1, {"protocol": 1}) + message(PING, 2, {"payload": "last"}))
    c.sock.shutdown(socket.SHUT_WR)
    msgs = c.expect_closed()
    assert [(t, i) for t, i, _ in msgs] == [(OK, 1), (OK, 2)]
    assert msgs[1][2]["payload"] == "last"
    c.close()


def test_output_and_display_keep_their_order(conn, ctx):
    """Spec section 8: the executor waits for the pipes to be read before each
    message, and the agent relays a message before reading the pipes again."""
    code = "\n".join(f"print('out{i}')\ndisplay('disp{i}')" for i in range(5)) + "\nprint('end')"
    for rep in range(3):
        msgs = execute(conn, 10 + rep, code, context=ctx)
        seq, text = [], ""
        for t, _, b in msgs:
            if t == STREAM:
                text += b["text"]
            elif t == DISPLAY:
                seq.append(text)
                seq.append(b["data"]["text/plain"])
                text = ""
        seq.append(text)
        want = []
        for i in range(5):
            want += [f"out{i}\n", repr(f"disp{i}")]
        assert seq == want + ["end\n"]


SYS_STATS = 0x0036


def test_sys_stats_reads_this_machine(conn):
    """SYS_STATS: the counters of the machine the agent runs on (here the host, dev mode)."""
    t, _, a = conn.call(SYS_STATS, 90, {})
    assert t == OK, a
    assert a["cpu_count"] == len(os.sched_getaffinity(0)) or a["cpu_count"] == os.cpu_count()
    meminfo = dict(line.split(":", 1) for line in open("/proc/meminfo"))
    assert a["mem_total"] == int(meminfo["MemTotal"].split()[0]) * 1024
    assert 0 < a["mem_available"] <= a["mem_total"]
    assert a["mem_cache"] <= a["mem_total"]
    fs = os.statvfs("/")
    assert a["disk_total"] == fs.f_blocks * fs.f_frsize
    assert 0 < a["disk_used"] <= a["disk_total"]
    assert 0 < a["cpu_busy_ticks"] < a["cpu_total_ticks"]
    time.sleep(0.05)
    t, _, b = conn.call(SYS_STATS, 91, {})
    assert t == OK
    # Cumulative counters only grow.
    assert b["cpu_total_ticks"] >= a["cpu_total_ticks"] and b["cpu_busy_ticks"] >= a["cpu_busy_ticks"]


def test_what_a_dying_executor_wrote_last_reaches_the_client(conn, ctx):
    # fds 1 and 2 are pipes the executor reads itself (python-embed/fd_capture.h):
    # os._exit and a crash first hand over what they hold, printed text too.
    msgs = execute(conn, 2, "import os\nprint('text'); os.write(1, b'raw\\n'); os._exit(3)", context=ctx)
    assert stdout_text(msgs) == "text\nraw\n"
    errs = [b for t, _, b in msgs if t == EXEC_ERROR]
    assert errs and errs[0]["name"] == "ContextRestarted" and "3" in errs[0]["value"]
    msgs = execute(conn, 3, "import ctypes, os, sys\n"
                   "print('text'); os.write(1, b'raw\\n'); print('err', file=sys.stderr)\n"
                   "ctypes.string_at(0)", context=ctx)
    assert stdout_text(msgs) == "text\nraw\n" and stdout_text(msgs, "stderr") == "err\n"
    errs = [b for t, _, b in msgs if t == EXEC_ERROR]
    assert errs and errs[0]["name"] == "ContextRestarted", errs
    # faulthandler's dump to fd 2 goes out before the process dies (its default,
    # sys.stderr.fileno(), is the kernel's own stderr, as in ipykernel: not shown).
    msgs = execute(conn, 4, "import ctypes, faulthandler\nfaulthandler.enable(2)\nctypes.string_at(0)",
                   context=ctx)
    err = stdout_text(msgs, "stderr")
    assert err.startswith("Fatal Python error: Segmentation fault") and "string_at" in err, err
