"""The Python SDK on sandboxes that ended (timed out, killed) and on
sandboxes connected to again, as E2B's SDK behaves (e2b/envd/api.py,
e2b/envd/rpc.py, e2b/sandbox_sync/sandbox_api.py, e2b_code_interpreter
models.py). Three micro-VMs, each a clone of the session's template
(conftest's vm_template):

1. One created detached and closed, as another process's would be: any
   number of Sandbox.connect(id) share one channel; connect() only extends
   its life (default 300 s); a command past its timeout; a context whose
   process died; then its end (set_timeout) under a running cell, and every
   call after it.
2. One created here with a 5 s timeout: a command running across its end,
   every call after it (sync and async), connect() and kill() of it.
3. One killed by another thread under a command.
"""

import asyncio
import datetime as dt
import os
import sys
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cellvm import AsyncSandbox, Sandbox  # noqa: E402
from cellvm.exceptions import (  # noqa: E402
    SandboxException,
    SandboxNotFoundException,
    TimeoutException,
    format_long_request_timeout_error,
    format_sandbox_not_running_error,
)
from conftest import IMAGE, SNAPSHOT_MEMORY_MB  # noqa: E402

# e2b/exceptions.py format_sandbox_timeout_exception's tail
SANDBOX_TIMEOUT_TAIL = (": This error is likely due to sandbox timeout. You can modify the sandbox "
                        "timeout by passing 'timeout' when starting the sandbox or calling "
                        "'.set_timeout' on the sandbox with the desired timeout.")
# envd's calls pass E2B's edge's message; the code interpreter's its whole body.
ENVD_GONE = "The sandbox was not found" + SANDBOX_TIMEOUT_TAIL


def interp_gone(sid):
    return ('{"sandboxId":"%s","message":"The sandbox was not found","code":502}' % sid
            + SANDBOX_TIMEOUT_TAIL)


# e2b_code_interpreter's format_sandbox_killed_error (a cell in flight)
KILLED_IN_FLIGHT = (
    "The sandbox was killed while the request was in progress. This can happen when the sandbox "
    "times out or is killed manually. You can modify the sandbox timeout by passing 'timeout' "
    "when starting the sandbox or calling '.set_timeout' on the sandbox with the desired timeout")
# e2b/envd/rpc.py format_terminated_exception (a command in flight)
TERMINATED_IN_FLIGHT = ("connection to the sandbox closed: The sandbox was killed or reached "
                        "its end of life while the request was in flight.")
# e2b/envd/rpc.py DEADLINE_EXCEEDED, with connectrpc's client deadline message
COMMAND_TIMEOUT = (
    "Request timed out: This error is likely due to exceeding 'timeout' — the total time a long "
    "running request (like process or directory watch) can be active — or 'request_timeout'. "
    "You can modify these by passing 'timeout' or 'request_timeout' when making the request. "
    "Use '0' to disable the timeout.")


def test_messages_are_e2bs():
    assert str(format_sandbox_not_running_error("qemu-1a2b3c4d")) == ENVD_GONE
    assert str(format_sandbox_not_running_error("qemu-1a2b3c4d", True)) == interp_gone("qemu-1a2b3c4d")
    e = format_long_request_timeout_error()
    assert isinstance(e, TimeoutException) and str(e) == COMMAND_TIMEOUT


def test_an_envd_rpc_past_its_request_timeout_is_e2bs_deadline_exceeded(sbx):
    """E2B's Python SDK sends files.list (and stat, remove, rename, make_dir,
    commands.list, kill, send_stdin) as unary RPCs bounded by request_timeout:
    connectrpc's DEADLINE_EXCEEDED "Request timed out", e2b/envd/rpc.py's text."""
    e = raises(lambda: sbx.files.list("/usr", depth=8, request_timeout=0.001))
    assert str(e) == COMMAND_TIMEOUT
    assert [x.name for x in sbx.files.list("/", depth=1) if x.name == "usr"] == ["usr"]


def seconds_left(sid):
    return (Sandbox.get_info(sid).end_at - dt.datetime.now(dt.timezone.utc)).total_seconds()


def raises(call, cls=TimeoutException):
    """The exception `call()` raised, checked to be a `cls`."""
    with pytest.raises(cls) as e:
        call()
    return e.value


def create(timeout, **kw):
    """A clone of the session's template (create() restores it in well under a second)."""
    return Sandbox.create(IMAGE, timeout=timeout, memory_mb=SNAPSHOT_MEMORY_MB, snapshot=True,
                          **kw)


@pytest.fixture(scope="module")
def runtime(tmp_path_factory, vm_template):
    """A registry of the module's own (its sandboxes only)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CELLVM_RUNTIME_DIR", str(tmp_path_factory.mktemp("rt")))
        mp.delenv("CELLVM_ADDR", raising=False)
        mp.delenv("CELLVM_DETACH", raising=False)
        yield


@pytest.fixture(scope="module")
def detached(runtime):
    """A sandbox created detached whose creator closed its connection: to
    this process it is another process's (`cellvm ps`), reached by id."""
    s = create(60, detach=True)
    sid = s.sandbox_id
    s.close()
    try:
        yield sid
    finally:
        Sandbox.kill(sid)


def test_connects_share_the_channel_and_only_extend_the_life(detached):
    sid = detached
    assert 50 < seconds_left(sid) <= 60
    a = Sandbox.connect(sid)  # E2B: the default timeout, 300 s
    assert 290 < seconds_left(sid) <= 300
    t0 = time.monotonic()
    b = Sandbox.connect(sid, timeout=30)  # the same channel, not a second connection
    assert time.monotonic() - t0 < 10
    assert 290 < seconds_left(sid) <= 300  # not shortened
    c = Sandbox(sandbox_id=sid)  # E2B 1.x's form
    assert a.run_code("1 + 1").text == "2" and b.commands.run("echo hi").stdout == "hi\n"
    assert c.files.write("/tmp/x", "y").path == "/tmp/x" and a.files.read("/tmp/x") == "y"
    b.close()
    c.close()
    assert a.run_code("2 + 2").text == "4"
    d = Sandbox.connect(sid, timeout=600)
    assert 590 < seconds_left(sid) <= 600
    d.close()
    a.close()


def test_command_past_its_timeout_says_what_e2bs_python_sdk_says(detached):
    s = Sandbox.connect(detached)
    try:
        assert str(raises(lambda: s.commands.run("sleep 10", timeout=1))) == COMMAND_TIMEOUT
        h = s.commands.run("sleep 10", timeout=1, background=True)
        assert str(raises(lambda: list(h))) == COMMAND_TIMEOUT
    finally:
        s.close()


def test_a_context_whose_process_died_is_e2bs_context_restarting(detached):
    s = Sandbox.connect(detached)
    try:
        seen = []
        ex = s.run_code("x = 1\nimport os\nos._exit(1)", on_error=seen.append)
        assert (ex.error.name, ex.error.value, ex.error.traceback) == (
            "ContextRestarting", "Context was restarted", "")
        assert seen == [ex.error]
        assert s.run_code("x").error.name == "NameError"  # a fresh namespace that works
        assert s.run_code("1 + 1").text == "2"
    finally:
        s.close()


def test_its_end_under_a_cell_and_every_call_after_it(detached):
    sid = detached
    a = Sandbox.connect(sid)
    b = Sandbox.connect(sid)
    a.set_timeout(3)
    t0 = time.monotonic()
    assert str(raises(lambda: a.run_code("import time; time.sleep(60)"))) == KILLED_IN_FLIGHT
    assert time.monotonic() - t0 < 30
    for s in (a, b):
        for call, text in ((lambda: s.run_code("1"), interp_gone(sid)),
                           (lambda: s.create_code_context(), interp_gone(sid)),
                           (lambda: s.commands.run("echo hi"), ENVD_GONE),
                           (lambda: s.files.read("/etc/hostname"), ENVD_GONE),
                           (lambda: s.files.list("/"), ENVD_GONE)):
            assert str(raises(call)) == text
        assert s.is_running() is False
    assert str(raises(lambda: Sandbox.connect(sid), SandboxNotFoundException)) == \
        f"Paused sandbox {sid} not found"
    assert Sandbox.kill(sid) is False
    assert a.kill() is False and b.kill() is False


def test_a_sandbox_of_this_process_that_timed_out(runtime):
    s = create(5)
    sid = s.sandbox_id
    try:
        assert s.run_code("1 + 1").text == "2"
        h = s.commands.run("sleep 60", background=True)
        t0 = time.monotonic()
        assert str(raises(h.wait)) == TERMINATED_IN_FLIGHT
        assert time.monotonic() - t0 < 30
        calls = ((lambda: s.run_code("1"), interp_gone(sid)),
                 (lambda: s.list_code_contexts(), interp_gone(sid)),
                 (lambda: s.commands.run("echo hi"), ENVD_GONE),
                 (lambda: s.commands.list(), ENVD_GONE),
                 (lambda: s.files.write("/tmp/a", "x"), ENVD_GONE),
                 (lambda: s.files.read("/etc/hostname"), ENVD_GONE),
                 (lambda: s.files.read("/etc/hostname", format="bytes"), ENVD_GONE),
                 (lambda: s.files.read("/etc/hostname", format="stream"), ENVD_GONE),
                 (lambda: s.files.list("/"), ENVD_GONE),
                 (lambda: s.files.exists("/etc"), ENVD_GONE))
        for call, text in calls:
            e = raises(call)
            assert str(e) == text
        a = AsyncSandbox(s)

        async def async_calls():
            for call, text in ((a.run_code("1"), interp_gone(sid)),
                               (a.commands.run("echo hi"), ENVD_GONE),
                               (a.files.write("/tmp/a", "x"), ENVD_GONE),
                               (a.files.read("/etc/hostname"), ENVD_GONE)):
                with pytest.raises(TimeoutException) as e:
                    await call
                assert str(e.value) == text
            assert await a.is_running() is False
        asyncio.run(async_calls())
        assert s.is_running() is False
        # The control plane's calls: E2B's API answers 404.
        for call in (lambda: s.set_timeout(30), lambda: Sandbox.set_timeout(sid, 30),
                     s.get_info, lambda: Sandbox.get_info(sid), s.get_metrics, s.pause):
            assert str(raises(call, SandboxNotFoundException)) == f"Sandbox {sid} not found"
        for connect in (lambda: Sandbox.connect(sid), s.connect):
            assert str(raises(connect, SandboxNotFoundException)) == f"Paused sandbox {sid} not found"
        assert Sandbox.kill(sid) is False  # E2B: False for a sandbox that is not running
        assert s.kill() is False
        # Killed (here): the same errors, never the connection's.
        assert str(raises(lambda: s.files.read("/etc/hostname"))) == ENVD_GONE
        assert str(raises(lambda: s.run_code("1"))) == interp_gone(sid)
    finally:
        s.kill()


def test_kill_from_another_thread_under_a_command(runtime):
    s = create(60)
    try:
        h = s.commands.run("sleep 60", background=True)
        threading.Timer(0.5, s.kill).start()
        assert str(raises(h.wait)) == TERMINATED_IN_FLIGHT
        assert str(raises(lambda: s.commands.run("echo hi"))) == ENVD_GONE
        assert s.kill() is False
    finally:
        s.kill()
    with pytest.raises(SandboxException):
        s.ping()
