"""sandbox.commands against a real agent: run, streaming, stdin, timeouts, background handles."""

import os
import time

import pytest

from cellvm import (
    CommandExitException,
    CommandHandle,
    CommandResult,
    InvalidArgumentException,
    NotFoundException,
    Sandbox,
    TimeoutException,
)


def test_run_returns_result(sbx, agent):
    r = sbx.commands.run("echo out; echo err >&2; pwd")
    assert isinstance(r, CommandResult)
    assert r.stdout == f"out\n{agent.workdir}\n"
    assert r.stderr == "err\n"
    assert r.exit_code == 0 and r.error is None


def test_login_bash(sbx):
    r = sbx.commands.run("shopt -q login_shell && echo login; echo $0")
    assert r.stdout == "login\n/bin/bash\n"


def test_nonzero_exit_raises(sbx):
    with pytest.raises(CommandExitException) as ei:
        sbx.commands.run("echo partial; echo bad >&2; exit 3")
    e = ei.value
    assert e.exit_code == 3 and e.stdout == "partial\n" and e.stderr == "bad\n"
    assert e.error == "exit status 3"
    assert str(e) == "Command exited with code 3 and error:\nbad\n"


def test_cwd_envs_user(sbx, agent):
    sub = os.path.join(agent.workdir, "cmd-cwd")
    os.makedirs(sub, exist_ok=True)
    assert sbx.commands.run("pwd", cwd=sub).stdout == sub + "\n"
    assert sbx.commands.run("pwd", cwd="cmd-cwd").stdout == sub + "\n"
    assert sbx.commands.run("echo $FOO-$BAR", envs={"FOO": "a b", "BAR": "2"}).stdout == "a b-2\n"
    with pytest.raises(NotFoundException, match="no user"):
        sbx.commands.run("true", user="no-such-user-xyz")
    # envd checks the cwd before the start: its invalid argument, not a failed exec.
    with pytest.raises(InvalidArgumentException, match="cwd '/no/such/dir' does not exist$"):
        sbx.commands.run("true", cwd="/no/such/dir")


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs a root agent")
def test_runs_as_the_requested_user(sbx):
    assert sbx.commands.run("id -u", user="nobody", cwd="/").stdout == "65534\n"
    assert sbx.commands.run("id -u", user="root").stdout == "0\n"


def test_output_streams_while_running(sbx):
    got = []
    t0 = time.monotonic()
    r = sbx.commands.run("echo first; sleep 0.5; echo second; echo e >&2",
                         on_stdout=lambda s: got.append((s, time.monotonic() - t0)),
                         on_stderr=lambda s: got.append(("ERR:" + s, time.monotonic() - t0)))
    assert r.stdout == "first\nsecond\n"
    assert got[0][0] == "first\n" and got[0][1] < 0.4, got
    assert ("ERR:e\n" in [g[0] for g in got])


def test_timeout_kills_and_reports(sbx):
    t0 = time.monotonic()
    with pytest.raises(TimeoutException, match="exceeding 'timeout'"):
        sbx.commands.run("sleep 30", timeout=0.3)
    assert time.monotonic() - t0 < 5
    assert all("sleep 30" not in p.args[-1] for p in sbx.commands.list())


def test_stdin_to_cat(sbx):
    h = sbx.commands.run("cat", background=True, stdin=True)
    assert isinstance(h, CommandHandle) and h.pid > 0
    h.send_stdin("hello ")
    sbx.commands.send_stdin(h.pid, b"world\n")
    h.close_stdin()
    r = h.wait()
    assert r.stdout == "hello world\n" and r.exit_code == 0


def test_list_shows_a_starts_own_envs_under_the_sandbox_environment(agent):
    """The sandbox's environment (E2B's defaults, the envs given to the
    Sandbox) reaches the process beneath a start's own envs, and
    commands.list() shows the start's own alone, as E2B's process list."""
    with Sandbox.connect(agent.addr, envs={"SBX_WIDE": "sandbox", "BOTH": "sandbox"}) as sbx:
        h = sbx.commands.run("env; sleep 30", background=True, envs={"BOTH": "call", "ONLY": "call"})
        try:
            procs = {p.pid: p for p in sbx.commands.list()}
            assert procs[h.pid].envs == {"BOTH": "call", "ONLY": "call"}
            for out, _, _ in h:
                if "ONLY=" in h.stdout:
                    break
            env = dict(line.split("=", 1) for line in h.stdout.splitlines() if "=" in line)
            assert (env["SBX_WIDE"], env["BOTH"], env["ONLY"], env["E2B_SANDBOX"]) == \
                ("sandbox", "call", "call", "true")
            assert env["E2B_SANDBOX_ID"] == sbx.sandbox_id
        finally:
            h.kill()


def test_background_list_kill(sbx):
    h = sbx.commands.run("echo started; sleep 30", background=True, envs={"TAGX": "1"})
    procs = {p.pid: p for p in sbx.commands.list()}
    # E2B's shape: the shell and its arguments.
    assert h.pid in procs and procs[h.pid].cmd == "/bin/bash"
    assert procs[h.pid].args == ["-l", "-c", "echo started; sleep 30"]
    assert procs[h.pid].envs == {"TAGX": "1"}
    for out, err, _ in h:  # output streams to the handle while it runs
        if out:
            break
    assert h.stdout == "started\n"
    assert h.kill() is True
    with pytest.raises(CommandExitException) as ei:
        h.wait()
    assert ei.value.exit_code == -1 and ei.value.error == "signal: killed"
    assert ei.value.stdout == "started\n"
    assert sbx.commands.kill(h.pid) is False
    assert h.pid not in {p.pid for p in sbx.commands.list()}


def test_background_survives_disconnect(agent):
    with Sandbox.connect(agent.addr) as a:
        h = a.commands.run("sleep 30", background=True)
        fg = None
    with Sandbox.connect(agent.addr) as b:
        assert h.pid in {p.pid for p in b.commands.list()}
        assert b.commands.kill(h.pid) is True  # answered at the reap
        assert h.pid not in {p.pid for p in b.commands.list()}
    assert fg is None


def test_kill_answers_at_the_reap_and_other_signals_at_once(sbx, agent):
    """CMD_KILL with SIGKILL is answered once the agent reaped the command
    (a connection that disconnects meanwhile leaves the agent well); another
    signal is answered at once, the command running on if it survives it."""
    from cellvm.commands import CMD_KILL
    h = sbx.commands.run("trap 'echo term' TERM; while :; do sleep 0.05; done", background=True)
    time.sleep(0.3)  # its trap is set
    sbx._call(CMD_KILL, {"pid": h.pid, "signal": 15})
    assert h.pid in {p.pid for p in sbx.commands.list()}  # it lives on
    sbx._call(CMD_KILL, {"pid": h.pid})
    assert h.pid not in {p.pid for p in sbx.commands.list()}
    # A kill whose client leaves before the reap: the agent goes on.
    for _ in range(5):
        with Sandbox.connect(agent.addr) as other:
            k = other.commands.run("sleep 30", background=True)
            other._request(CMD_KILL, {"pid": k.pid})
        assert sbx.commands.run("echo alive").stdout == "alive\n"


def test_foreground_killed_on_disconnect(agent):
    import threading
    s = Sandbox.connect(agent.addr)
    threading.Thread(target=lambda: _swallow(s), daemon=True).start()
    deadline = time.monotonic() + 5
    with Sandbox.connect(agent.addr) as b:
        while not any(p.args[-1] == "sleep 31" for p in b.commands.list()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert any(p.args[-1] == "sleep 31" for p in b.commands.list())
        s.close()
        while any(p.args[-1] == "sleep 31" for p in b.commands.list()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not any(p.args[-1] == "sleep 31" for p in b.commands.list())


def _swallow(s):
    try:
        s.commands.run("sleep 31")
    except Exception:
        pass


def test_large_output_and_binary(sbx):
    r = sbx.commands.run("head -c 5000000 /dev/zero | tr '\\0' 'a'")
    assert r.stdout == "a" * 5000000
    r = sbx.commands.run("printf '\\xff\\xfeok'")
    assert r.stdout.endswith("ok")


def test_exit_by_signal(sbx):
    with pytest.raises(CommandExitException) as ei:
        sbx.commands.run("kill -TERM $$")
    assert ei.value.exit_code == -1 and ei.value.error == "signal: terminated"
