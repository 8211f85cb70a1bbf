"""The agent's seccomp allowlist and its spawner (issue 5: "the agent carries its
own seccomp allowlist"). The agent runs under a filter that forbids fork, exec
and sockets; the spawner, forked before that filter, starts the zygote and the
commands, which are still the agent's children (docs/SECURITY.md)."""

import os
import signal
import time

import pytest

import conftest
from cellvm import CommandExitException, InvalidArgumentException, Sandbox


def status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def children_of(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def read_proc(pid, name):
    """/proc/<pid>/<name>, or None if the process is already gone."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None


def spawners_of(pid):
    """Children named cellvm-spawner: the spawner, and a child it just made until that execs."""
    return [p for p in children_of(pid) if read_proc(p, "comm") == b"cellvm-spawner\n"]


def zygotes_of(pid):
    """The root zygote among the agent's children (executors are the zygote's forks)."""
    out = []
    for p in children_of(pid):
        cmd, st = read_proc(p, "cmdline"), read_proc(p, "status")
        if cmd and st and b"--zygote" in cmd.split(b"\0") and b"\nUid:\t0\t" in st:
            out.append(p)
    return out


def wait_for(pred, what, agent, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        assert time.monotonic() < deadline, f"{what}\n{agent.read_log()}"
        time.sleep(0.05)


def the_spawner(agent):
    def one():
        found = spawners_of(agent.proc.pid)
        return found[0] if len(found) == 1 else None
    return wait_for(one, "not exactly one spawner", agent)


def ready(agent):
    """Waits until the agent serves (its filter is loaded by then)."""
    with Sandbox.connect(agent.addr):
        pass


def test_agent_is_filtered_and_its_spawner_starts_its_children(fresh_agent):
    ready(fresh_agent)
    agent_pid = fresh_agent.proc.pid
    st = status(agent_pid)
    assert st["Seccomp"] == "2" and st["NoNewPrivs"] == "1", st
    spawner = the_spawner(fresh_agent)
    sp = status(spawner)
    # The spawner's own filter is the denylist its children inherit (not the allowlist).
    assert sp["Seccomp"] == "2" and sp["PPid"] == str(agent_pid)
    if os.geteuid() == 0:
        assert sp["NoNewPrivs"] == "0"  # commands may still exec setuid helpers
        assert int(sp["CapEff"], 16) == int(st["CapEff"], 16)  # forked after the drop
    zygote = wait_for(lambda: zygotes_of(agent_pid), "no zygote", fresh_agent)[0]
    assert status(zygote)["PPid"] == str(agent_pid)

    with Sandbox.connect(fresh_agent.addr) as sbx:
        assert sbx.commands.run("echo hi").stdout == "hi\n"
        # A command is the agent's child (CLONE_PARENT), not the spawner's.
        h = sbx.commands.run("read x; echo got $x; sleep 30", background=True, stdin=True)
        assert status(h.pid)["PPid"] == str(agent_pid)
        sbx.commands.send_stdin(h.pid, "abc\n")
        for _ in h:
            if "got abc" in h.stdout:
                break
        assert sbx.commands.kill(h.pid)
        with pytest.raises(CommandExitException):
            h.wait()
        assert h.stdout == "got abc\n"
        # Root without capabilities (user: "root") still cannot end the spawner.
        if os.geteuid() == 0:
            with pytest.raises(CommandExitException, match="not permitted"):
                sbx.commands.run(f"kill -9 {spawner}", user="root")
            assert status(spawner)["State"][0] in "SR"
        # A failed exec still reports the child's errno synchronously (a cwd
        # that is no directory: a missing one is refused before, as envd does).
        with pytest.raises(InvalidArgumentException, match="ENOTDIR"):
            sbx.commands.run("true", cwd="/etc/hostname")

        # The zygote restarts through the spawner after it is killed.
        os.kill(zygote, signal.SIGKILL)
        new = wait_for(lambda: [p for p in zygotes_of(agent_pid) if p != zygote], "no new zygote",
                       fresh_agent)[0]
        assert status(new)["PPid"] == str(agent_pid)
        ctx = sbx.create_code_context()
        assert sbx.run_code("6 * 7", context=ctx).text == "42"
    assert fresh_agent.proc.poll() is None


def test_agent_exits_when_its_spawner_dies(fresh_agent):
    """Filtered, the agent cannot fork a new spawner: it shuts down and init restarts it."""
    ready(fresh_agent)
    spawner = the_spawner(fresh_agent)
    os.kill(spawner, signal.SIGKILL)
    assert fresh_agent.proc.wait(timeout=20) == 1
    log = fresh_agent.read_log()
    assert f"spawner pid {spawner} killed by signal 9" in log, log
    assert "cannot start processes any more" in log


def test_without_agent_seccomp_flag():
    """--no-agent-seccomp (debugging) leaves the agent and the spawner unfiltered."""
    a = conftest.AgentProcess("--no-agent-seccomp", preload="")
    try:
        ready(a)
        assert status(a.proc.pid)["Seccomp"] == "0"
        assert status(the_spawner(a))["Seccomp"] == "0"
        with Sandbox.connect(a.addr) as sbx:
            assert sbx.commands.run("echo ok").stdout == "ok\n"
    finally:
        a.stop()
    assert a.sanitizer_report() is None, a.sanitizer_report()
