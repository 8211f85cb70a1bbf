"""SNAPSHOT_PREPARE and NEW_GENERATION (docs/PROTOCOL.md section 11) against a
real dev-mode agent: what is refused until a new generation, what is served,
bad bodies, and the generation that must grow."""

import os
import shutil
import subprocess
import tempfile
import time

import pytest

import conftest
from test_agent_protocol import (CANCEL, CONTEXT_CREATE, CONTEXT_LIST, CONTEXT_REMOVE,
                                 CONTEXT_RESTART, ERROR, EXEC_INPUT, EXECUTE, HELLO, INTERRUPT,
                                 OK, PING, Raw, error_code, execute, result_text)

SET_TIME, ADD_ENTROPY = 0x0030, 0x0031
SNAPSHOT_PREPARE, NEW_GENERATION = 0x0034, 0x0035
FILE_WRITE, FILE_READ, FILE_LIST, FILE_STAT, FILE_MKDIR = 0x0100, 0x0102, 0x0103, 0x0104, 0x0107
CMD_START, CMD_LIST = 0x0200, 0x0201


def new_generation(conn, req_id, generation, entropy=None, realtime_ns=None):
    body = {"generation": generation,
            "entropy": os.urandom(32) if entropy is None else entropy,
            "realtime_ns": time.time_ns() if realtime_ns is None else realtime_ns}
    return conn.call(NEW_GENERATION, req_id, body)


@pytest.fixture
def conn(fresh_agent):
    c = Raw(fresh_agent.addr)
    c.hello()
    yield c
    c.close()


def test_a_booted_guest_is_generation_1_and_not_awaiting(fresh_agent):
    c = Raw(fresh_agent.addr)
    body = c.hello()
    assert (body["generation"], body["awaiting_generation"]) == (1, False)
    c.close()


# Every request that runs user code or touches files or commands, with a valid body.
GATED = [
    (EXECUTE, {"code": "1+1"}),
    (INTERRUPT, {}),
    (CONTEXT_CREATE, {}),
    (CONTEXT_LIST, {}),
    (CONTEXT_RESTART, {"context": "x"}),
    (CONTEXT_REMOVE, {"context": "x"}),
    (FILE_WRITE, {"path": "a.txt"}),
    (FILE_READ, {"path": "a.txt"}),
    (FILE_LIST, {"path": "."}),
    (FILE_STAT, {"path": "."}),
    (FILE_MKDIR, {"path": "d"}),
    (CMD_START, {"cmd": "echo hi"}),
    (CMD_LIST, {}),
]


def test_prepare_refuses_user_work_until_new_generation(fresh_agent, conn):
    assert result_text(execute(conn, 2, "6*7")) == ["42"]
    t, _, body = conn.call(SNAPSHOT_PREPARE, 3, {})
    assert (t, body) == (OK, {"generation": 1})
    other = Raw(fresh_agent.addr)  # every connection, not only the one that prepared
    hello = other.hello()
    assert (hello["generation"], hello["awaiting_generation"]) == (1, True)
    for c in (conn, other):
        for i, (mtype, body) in enumerate(GATED):
            msg = c.call(mtype, 100 + i, body)
            assert error_code(msg) == "no_generation", (hex(mtype), msg)
            assert "NEW_GENERATION" in msg[2]["message"], msg
    # Served meanwhile: HELLO (above), PING, CANCEL, the system requests, a second prepare.
    assert conn.call(PING, 4, {"payload": "x"})[2]["payload"] == "x"
    assert error_code(conn.call(CANCEL, 5, {"id": 77})) == "not_found"
    assert conn.call(SNAPSHOT_PREPARE, 6, {}) == (OK, 6, {"generation": 1})
    t, _, body = new_generation(conn, 7, 2)
    assert t == OK and body["generation"] == 2, body
    assert body["clock_set"] is False  # dev mode: the host's clock is left alone
    hello = other.hello()
    assert (hello["generation"], hello["awaiting_generation"]) == (2, False)
    assert result_text(execute(other, 8, "6*7")) == ["42"]
    t, _, lst = other.call(CONTEXT_LIST, 9, {})
    assert t == OK and lst["contexts"]
    other.close()


def test_a_queued_cell_waits_for_the_generation(fresh_agent, conn):
    """Cells running at the prepare go on; the ones queued behind do not start
    before NEW_GENERATION (in a copy they would run with the shared state)."""
    t, _, ctx = conn.call(CONTEXT_CREATE, 2, {})
    assert t == OK
    ctx = ctx["id"]
    assert result_text(execute(conn, 3, "1", context=ctx)) == ["1"]  # the executor is up
    conn.send(EXECUTE, 4, {"code": "import time; time.sleep(1); 'first'", "context": ctx})
    conn.send(EXECUTE, 5, {"code": "'second'", "context": ctx})
    assert conn.recv()[:2] == (EXEC_INPUT, 4)
    host = Raw(fresh_agent.addr)
    host.hello()
    assert host.call(SNAPSHOT_PREPARE, 2, {})[0] == OK
    first = conn.until_terminal(4)
    assert result_text(first) == ["'first'"] and first[-1][0] == OK
    conn.sock.settimeout(1.5)
    with pytest.raises(TimeoutError):
        conn.recv()  # the second cell has not started
    conn.sock.settimeout(30)
    assert new_generation(host, 3, 10)[0] == OK
    second = conn.until_terminal(5)
    assert result_text(second) == ["'second'"], second
    host.close()


def test_prepare_ends_the_connections_own_requests(fresh_agent, conn):
    """As a disconnect would: the running cell of that connection is
    interrupted, no reply comes for it, and the context lives on."""
    t, _, ctx = conn.call(CONTEXT_CREATE, 2, {})
    ctx = ctx["id"]
    conn.send(EXECUTE, 3, {"code": "import time; time.sleep(60)", "context": ctx})
    assert conn.recv()[:2] == (EXEC_INPUT, 3)
    t0 = time.monotonic()
    assert conn.call(SNAPSHOT_PREPARE, 4, {}) == (OK, 4, {"generation": 1})
    assert new_generation(conn, 5, 2)[0] == OK
    # The context is free again well before the minute is over, and nothing more for id 3.
    assert result_text(execute(conn, 6, "'after'", context=ctx)) == ["'after'"]
    assert time.monotonic() - t0 < 30
    assert not [m for m in conn.stash if m[1] == 3]


@pytest.mark.parametrize("body, what", [
    ({}, "generation"),
    ({"entropy": bytes(32), "realtime_ns": 1}, "generation"),
    ({"generation": 2, "entropy": bytes(32)}, "realtime_ns"),
    ({"generation": 2, "realtime_ns": 1}, "entropy"),
    ({"generation": "2", "entropy": bytes(32), "realtime_ns": 1}, "generation"),
    ({"generation": -2, "entropy": bytes(32), "realtime_ns": 1}, "generation"),
    ({"generation": 2, "entropy": "x" * 32, "realtime_ns": 1}, "entropy"),
    ({"generation": 2, "entropy": bytes(31), "realtime_ns": 1}, "32 to 512"),
    ({"generation": 2, "entropy": bytes(513), "realtime_ns": 1}, "32 to 512"),
    ({"generation": 2, "entropy": bytes(32), "realtime_ns": 1.5}, "realtime_ns"),
])
def test_new_generation_bad_bodies(conn, body, what):
    msg = conn.call(NEW_GENERATION, 2, body)
    assert error_code(msg) == "bad_request" and what in msg[2]["message"], msg
    assert conn.hello()["generation"] == 1  # nothing changed


def test_new_generation_body_not_a_map(conn):
    conn.send(NEW_GENERATION, 2, b"\x83\x01\x02\x03")  # an array
    assert error_code(conn.until_terminal(2)[0]) == "bad_request"


def test_the_generation_must_grow(conn):
    assert error_code(new_generation(conn, 2, 1)) == "bad_request"  # the boot's is 1
    assert error_code(new_generation(conn, 3, 0)) == "bad_request"
    assert new_generation(conn, 4, 7)[2]["generation"] == 7  # without a prepare: a refresh
    for gen in (7, 6):
        msg = new_generation(conn, 5, gen)
        assert error_code(msg) == "bad_request" and "not greater" in msg[2]["message"], msg
    big = 2**63 + 5
    assert new_generation(conn, 6, big)[2]["generation"] == big
    assert conn.hello()["generation"] == big


def test_a_refused_generation_keeps_the_guest_awaiting(conn):
    assert conn.call(SNAPSHOT_PREPARE, 2, {})[0] == OK
    assert error_code(new_generation(conn, 3, 2, entropy=b"short")) == "bad_request"
    assert error_code(conn.call(EXECUTE, 4, {"code": "1"})) == "no_generation"
    assert conn.hello()["awaiting_generation"] is True
    assert new_generation(conn, 5, 2)[0] == OK
    assert result_text(execute(conn, 6, "1")) == ["1"]


def test_a_root_agent_credits_the_entropy(conn):
    if os.geteuid() != 0:
        pytest.skip("crediting entropy needs CAP_SYS_ADMIN")
    body = new_generation(conn, 2, 2, entropy=os.urandom(64))[2]
    assert body["credited_bits"] == 512, body


def test_without_privileges_the_entropy_is_mixed_and_cells_still_reseed(tmp_path):
    """An agent of an ordinary user (dev mode) cannot credit entropy
    (RNDADDENTROPY needs CAP_SYS_ADMIN, ADD_ENTROPY says permission_denied): its
    NEW_GENERATION writes the bytes into the pool instead and goes on."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("runs the agent as uid 1000 through setpriv, as root")
    d = tempfile.mkdtemp(prefix="cellvm-test-user-")
    os.chmod(d, 0o755)
    work = os.path.join(d, "work")
    os.mkdir(work)
    os.chown(d, 1000, 1000)
    os.chown(work, 1000, 1000)
    sock = os.path.join(d, "agent.sock")
    log = open(os.path.join(d, "agent.log"), "wb")
    proc = subprocess.Popen(["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups",
                             conftest.AGENT, "--listen", "unix:" + sock, "--workdir", work,
                             "--preload", ""], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock):
            assert proc.poll() is None and time.monotonic() < deadline, open(log.name).read()
            time.sleep(0.02)
        c = Raw("unix:" + sock)
        c.hello()
        assert error_code(c.call(ADD_ENTROPY, 2, {"seed": os.urandom(32)})) == "permission_denied"
        assert c.call(SNAPSHOT_PREPARE, 3, {})[0] == OK
        t, _, body = new_generation(c, 4, 2)
        assert t == OK and body == {"generation": 2, "credited_bits": 0, "clock_set": False}, body
        assert result_text(execute(c, 5, "6*7")) == ["42"]
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()
        shutil.rmtree(d, ignore_errors=True)
