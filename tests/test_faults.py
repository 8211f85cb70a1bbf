"""Faults of user code that must be contained (issue 5): each runs the attack as a
cell against a real agent, then checks that the sandbox still answers.

Here the agent runs as root without cgroup v2 controllers, so limits are the
rlimit fallback (RLIMIT_DATA, RLIMIT_NPROC, RLIMIT_FSIZE) and the executor runs
as uid 1000; with cgroups (in the VM) a memory hog is OOM-killed instead, which
the tests accept as well.
"""

import os
import shutil
import subprocess
import time

import pytest

import conftest
from test_isolation_common import Box, agent_rss_kib, processes_in_group, wait_for
from cellvm import _wire


# ASan builds cannot bound memory with RLIMIT_DATA (its shadow is terabytes).
SAN_BUILD = os.path.basename(conftest.BUILD.rstrip("/")) == "san"
needs_memory_limit = pytest.mark.skipif(
    SAN_BUILD, reason="no memory limit without cgroups in an ASan build")


@pytest.fixture
def box():
    b = Box("--memory-max", "512M", "--pids-max", "64", "--file-size-max", "1M",
            "--output-max", "4M")
    yield b
    b.close()


def assert_restarted_then_works(box, out):
    assert out.restarted, out
    assert out.terminal[0] == _wire.OK and out.terminal[1]["status"] == "error", out
    # The namespace is gone and the next cell runs normally.
    after = box.run("print('next'); 'x' in dir()")
    assert after.ok and after.stdout == "next\n" and after.results == ["False"], after
    assert box.answers()


@pytest.mark.parametrize("code", [
    "import ctypes\nx = 1\nctypes.string_at(0)",
    "import os\nx = 1\nos.abort()",
    "import os\nx = 1\nos._exit(3)",
    "import os, signal\nx = 1\nos.kill(os.getpid(), signal.SIGKILL)",
], ids=["segfault", "abort", "os._exit", "self-SIGKILL"])
def test_crash_restarts_the_context(box, code):
    assert_restarted_then_works(box, box.run(code))


def test_closing_fds_0_to_2_keeps_the_context_as_in_ipykernel(box):
    # fds 1 and 2 are the executor's capture pipes (python-embed/fd_capture.h),
    # as in ipykernel, where closing them leaves sys.stdout working.
    out = box.run("import os\nx = 1\nos.close(0); os.close(1); os.close(2)\nprint('still here')")
    assert out.ok and out.stdout == "still here\n", out
    after = box.run("print(x)\nimport os\nos.write(1, b'gone')")
    assert after.stdout == "1\n" and after.errors[0]["name"] == "OSError", after
    assert box.answers()


def test_closing_the_agents_pipes_restarts_the_context(box):
    # Where the executor moved them (fds above its control socket, 3): the
    # agent sees them close and starts the context anew.
    out = box.run("import os\nx = 1\nos.closerange(4, 64)")
    assert "stdout or stderr" in out.errors[0]["value"], out
    assert_restarted_then_works(box, out)


def test_ignoring_sigint_and_sigterm(box):
    code = ("import signal, time\nx = 1\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "while True: time.sleep(0.1)")
    started = time.monotonic()
    out = box.run(code, timeout_ms=1000)
    assert time.monotonic() - started < 10
    assert out.terminal == (_wire.ERROR, out.terminal[1]) and out.terminal[1]["code"] == "timeout"
    assert out.restarted, out
    assert box.run("'x' in dir()").results == ["False"]
    assert box.answers()


@needs_memory_limit
def test_memory_hog_one_huge_allocation(box):
    out = box.run("b = bytearray(10**13)")
    assert out.restarted or [e["name"] for e in out.errors] == ["MemoryError"], out
    assert box.answers()


@needs_memory_limit
def test_memory_hog_growing_loop(box):
    out = box.run("chunks = []\nwhile True: chunks.append(bytearray(32 << 20))", timeout=120)
    assert out.restarted or [e["name"] for e in out.errors] == ["MemoryError"], out
    # Memory is given back: the context can allocate again.
    assert box.run("del chunks\nlen(bytearray(64 << 20))").results in (["67108864"], []), out
    assert box.answers()


BOMB = """
import os, time
print(os.getpid(), flush=True)
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.005)
"""


def test_fork_bomb(box):
    ctx = box.conn.call(_wire.CONTEXT_CREATE, {})["id"]
    req = box.conn.request(_wire.EXECUTE, {"code": BOMB, "context": ctx})
    msgs = req.messages(60)
    pgid = None
    for t, b in msgs:
        if t == _wire.STREAM:
            pgid = int(b["text"].split()[0])
            break
    assert pgid
    time.sleep(1.0)  # the bomb is at its limit by now
    assert len(processes_in_group(pgid)) > 1
    # The agent and the other contexts answer while the bomb runs.
    assert box.answers()
    box.conn.call(_wire.CONTEXT_RESTART, {"context": ctx}, timeout=30)
    rest = list(msgs)
    assert rest[-1][0] in (_wire.OK, _wire.ERROR)
    assert wait_for(lambda: processes_in_group(pgid) == [], timeout=15), processes_in_group(pgid)
    out = box.run("import os; len(os.listdir('.')) >= 0", context=ctx)
    assert out.ok and out.results == ["True"], out
    assert box.answers()


def test_file_size_limit(box):
    out = box.run("open('big', 'wb').write(b'x' * (2 << 20))")
    assert [e["value"] for e in out.errors] == ["[Errno 27] File too large"], out
    assert box.run("import os; os.remove('big'); open('small', 'w').write('ok')").ok
    assert box.answers()


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="needs root and unshare(1) for a private tmpfs")
def test_disk_fill_gets_enospc():
    """The cell fills a 4 MiB tmpfs mounted (in a private mount namespace) over the
    workdir: the writer gets ENOSPC; the agent, whose socket and log live elsewhere,
    keeps serving and the space can be freed and reused."""
    b = Box("--file-size-max", "1G")
    b.close()  # only for its directories: start our own agent inside the namespace
    os.makedirs(b.agent.workdir, exist_ok=True)
    sock = os.path.join(b.agent.dir, "ns.sock")
    log = open(os.path.join(b.agent.dir, "ns.log"), "wb")
    script = ('mount -t tmpfs -o size=4m,mode=1777 tmpfs "$1" && shift && exec "$@"')
    proc = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
         b.agent.workdir, conftest.AGENT, "--listen", "unix:" + sock, "--workdir",
         b.agent.workdir, "--preload", ""], stdout=log, stderr=subprocess.STDOUT)
    try:
        assert wait_for(lambda: os.path.exists(sock) or proc.poll() is not None, 30)
        assert proc.poll() is None
        conn = _wire.Connection.connect("unix:" + sock)
        code = ("import errno\nf = open('fill', 'wb')\ntry:\n"
                "    while True: f.write(b'x' * 65536); f.flush()\n"
                "except OSError as e:\n    print(errno.errorcode[e.errno])\n")
        msgs = list(conn.request(_wire.EXECUTE, {"code": code}).messages(60))
        text = "".join(m["text"] for t, m in msgs if t == _wire.STREAM)
        assert "ENOSPC" in text, msgs
        conn.call(_wire.PING, {}, timeout=10)
        msgs = list(conn.request(_wire.EXECUTE, {
            "code": "import os\ntry: f.close()\nexcept OSError: pass\nos.remove('fill')\n"
                    "open('again', 'w').write('ok')"}).messages(60))
        assert msgs[-1] == (_wire.OK, {"status": "ok", "execution_count": 2}), msgs
        conn.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def test_output_flood_is_capped(box):
    rss_before = agent_rss_kib(box.pid)
    code = "s = 'y' * 65535\nfor i in range(4000): print(s)\n'done'"  # 256 MiB
    out = box.run(code, timeout=120)
    assert out.ok and out.results == ["'done'"], out
    assert len(out.stdout) == 4 << 20
    assert "[cellvm: output truncated" in out.stderr
    assert agent_rss_kib(box.pid) - rss_before < 64 * 1024
    # The cap is per execution: the next one prints normally.
    assert box.run("print('fine')").stdout == "fine\n"
    assert box.answers()
