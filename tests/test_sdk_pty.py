"""sandbox.pty of cellvm's Python SDK (E2B's Pty API) against a real agent:
the terminal is a real pty in which `/bin/bash -i -l` runs as the sandbox
user; E2B's own pty tests (tests/sync/sandbox_sync/pty) in the same shape."""

import re

import pytest

from cellvm import CommandExitException, CommandHandle, PtySize, Sandbox


def test_create_and_exit(sbx):
    t = sbx.pty.create(PtySize(rows=24, cols=80), envs={"ABC": "123"}, cwd="/")
    assert isinstance(t, CommandHandle) and t.pid > 0
    sbx.pty.send_stdin(t.pid, b"echo $ABC-$TERM-$(pwd)-$(stty size); shopt -q login_shell && echo login\n"
                              b"exit\n")
    out = []
    r = t.wait(on_pty=out.append)
    assert r.exit_code == 0
    assert all(isinstance(x, bytes) for x in out)
    text = b"".join(out).decode()
    assert "123-xterm-256color-/-24 80\r\n" in text and "login\r\n" in text, text


def test_kill(sbx):
    t = sbx.pty.create(PtySize(24, 80))
    assert sbx.pty.kill(t.pid) is True
    with pytest.raises(CommandExitException) as ei:
        t.wait()
    assert ei.value.exit_code == -1 and ei.value.error == "signal: killed"
    with pytest.raises(CommandExitException):
        sbx.commands.run(f"kill -0 {t.pid}")
    assert sbx.pty.kill(999999999) is False


def test_resize(sbx):
    t = sbx.pty.create(PtySize(cols=80, rows=24))
    sbx.pty.resize(t.pid, PtySize(cols=100, rows=30))
    sbx.pty.send_stdin(t.pid, "tput cols; stty size\nexit\n")
    out = []
    assert t.wait(on_pty=out.append).exit_code == 0
    assert re.search(r"[\r\n]100\r\n30 100\r\n", b"".join(out).decode()), out


def test_iterating_and_ctrl_c(sbx):
    t = sbx.pty.create(PtySize(cols=80, rows=24), timeout=30)
    seen, step = b"", 0
    for out, err, pty in t:
        assert out is None and err is None and isinstance(pty, bytes)
        seen += pty
        if step == 0 and seen.endswith(b"$ "):
            step = 1  # the shell's first prompt: it handles ^C from now on
            sbx.pty.send_stdin(t.pid, "sh -c 'echo run''ning; exec sleep 30'\n")
        elif step == 1 and re.search(rb"[\r\n]running\r\n", seen):
            step = 2  # the job runs in the foreground: ^C interrupts it, not the shell
            sbx.pty.send_stdin(t.pid, b"\x03")
        elif step == 2 and b"^C" in seen:
            step = 3
            sbx.pty.send_stdin(t.pid, b"echo status-$?\n")
        elif step == 3 and b"status-130\r\n" in seen and seen.endswith(b"$ "):
            step = 4  # ^D at the prompt (typed ahead, the line discipline would eat it): exits
            sbx.pty.send_stdin(t.pid, b"\x04")
    assert step == 4 and t.exit_code == 0, seen


def test_connect_again(agent):
    with Sandbox.connect(agent.addr) as a:
        t = a.pty.create(PtySize(80, 24), envs={"FOO": "bar"})
        a.pty.send_stdin(t.pid, b"echo $FOO\n")
        t.disconnect()
        again = a.pty.connect(t.pid)
        a.pty.send_stdin(t.pid, b"echo again-$FOO\nexit\n")
        out = []
        assert again.wait(on_pty=out.append).exit_code == 0
        assert again.pid == t.pid and "again-bar" in b"".join(out).decode()
    # a terminal outlives its client, as in E2B: another one follows it
    with Sandbox.connect(agent.addr) as b:
        t = b.pty.create(PtySize(80, 24))
        pid = t.pid
    with Sandbox.connect(agent.addr) as c:
        later = c.pty.connect(pid)
        c.pty.send_stdin(pid, b"exit 0\n")
        assert later.wait().exit_code == 0
