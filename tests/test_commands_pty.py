"""Commands on a pseudo-terminal (docs/PROTOCOL.md section 10, CMD_START with
`pty`, CMD_RESIZE), over raw frames against a real agent: the command runs on
a real pty the agent opened, as the sandbox user, with the same confinement
as any other command."""

import os
import re

import pytest

from test_agent_protocol import ERROR, OK, Raw, error_code

CMD_START, CMD_KILL, CMD_STDIN, CMD_RESIZE = 0x0200, 0x0202, 0x0203, 0x0205
CMD_STARTED, CMD_OUTPUT = 0x8200, 0x8201


@pytest.fixture
def conn(agent):
    c = Raw(agent.addr)
    c.hello()
    yield c
    c.close()


class Pty:
    """One CMD_START with `pty` on `conn`, its output gathered as it comes."""

    def __init__(self, conn, req_id, cmd, cols=80, rows=24, **extra):
        self.conn, self.id, self.out = conn, req_id, bytearray()
        self.streams = set()
        body = dict(pty={"cols": cols, "rows": rows}, **extra)
        if cmd is not None:
            body["cmd"] = cmd
        conn.send(CMD_START, req_id, body)
        t, _, body = self._next()
        assert t == CMD_STARTED, body
        self.pid = body["pid"]
        self.end = None

    def _next(self):
        while True:
            msg = self.conn.recv()
            if msg[1] == self.id:
                return msg
            self.conn.stash.append(msg)

    def read_until(self, pattern):
        """Output until `pattern` (a regex on the text so far) matches; its match."""
        while True:
            m = re.search(pattern, self.out.decode(errors="replace"))
            if m:
                return m
            assert self.end is None, (pattern, bytes(self.out), self.end)
            self._one()

    def _one(self):
        t, _, body = self._next()
        if t == CMD_OUTPUT:
            self.streams.add(body["stream"])
            self.out += body["data"]
        else:
            assert t in (OK, ERROR), (t, body)
            self.end = (t, body)

    def wait(self):
        while self.end is None:
            self._one()
        return self.end

    def send(self, req_id, data):
        t, _, body = self.conn.call(CMD_STDIN, req_id, {"pid": self.pid, "data": data})
        assert t == OK, body

    def resize(self, req_id, cols, rows):
        return self.conn.call(CMD_RESIZE, req_id,
                              {"pid": self.pid, "pty": {"cols": cols, "rows": rows}})


def test_runs_on_its_own_terminal(conn, agent):
    p = Pty(conn, 10, "tty; echo TERM=$TERM; stty size; id -u; stat -c %u $(tty); "
            "ps -o sid=,tpgid= -p $$; echo pid=$$; exit 3")
    assert p.wait() == (OK, {"exit_code": 3, "error": "exit status 3"})
    text = p.out.decode()
    assert p.streams == {"pty"}  # one stream: the terminal's
    lines = text.split("\r\n")  # the terminal's ONLCR, as on any tty
    assert re.fullmatch(r"/dev/pts/\d+", lines[0]), text
    assert lines[1] == "TERM=xterm-256color"
    assert lines[2] == "24 80"
    uid = str(os.stat(agent.workdir).st_uid)  # the sandbox user's (uid 1000 under a root agent)
    assert lines[3] == uid and lines[4] == uid, text  # runs as the user, who owns its terminal
    sid, tpgid = lines[5].split()
    assert sid == tpgid == str(p.pid) == lines[6].removeprefix("pid="), text  # session leader


def test_input_echoes_and_reaches_the_command(conn):
    p = Pty(conn, 20, "read -r line; echo got:$line")
    p.send(21, b"hello pty\n")
    assert p.wait()[0] == OK
    # The terminal echoes the typed line, then the command's answer.
    assert p.out.decode() == "hello pty\r\ngot:hello pty\r\n"


def test_resize_reaches_the_foreground_job(conn):
    p = Pty(conn, 30, "trap 'echo winch; stty size' WINCH; echo ready; "
            "while :; do sleep 0.05; done", cols=80, rows=24)
    p.read_until("ready")
    t, _, body = p.resize(31, 132, 40)
    assert t == OK, body
    p.read_until(r"winch\r\n40 132\r\n")
    t, _, body = conn.call(CMD_KILL, 32, {"pid": p.pid})
    assert t == OK, body
    assert p.wait() == (OK, {"exit_code": -1, "error": "signal: killed"})


def test_interactive_shell_exits(conn):
    p = Pty(conn, 40, "exec /bin/bash -i", envs={"FOO": "bar", "TERM": "dumb"})
    p.send(41, b"echo $FOO-$TERM\nexit 5\n")
    assert p.wait() == (OK, {"exit_code": 5, "error": "exit status 5"})
    assert "bar-dumb" in p.out.decode()  # `envs` may set TERM


def test_kill_and_ctrl_c(conn):
    # ^C once the job runs and waits (cat has answered a line: the terminal's
    # echo, then cat's own copy): sent earlier, it could reach bash between
    # the start of the login shell and the job, and bash decides what a
    # SIGINT means there, not the terminal.
    p = Pty(conn, 50, "exec cat")
    p.send(54, b"ping\n")
    p.read_until(r"ping\r\nping\r\n")
    p.send(51, b"\x03")  # ^C: the terminal's SIGINT to its foreground job
    t, body = p.wait()
    assert t == OK and body["exit_code"] == -1 and body["error"] == "signal: interrupt", body
    q = Pty(conn, 52, "sleep 30")
    t, _, body = conn.call(CMD_KILL, 53, {"pid": q.pid})
    assert t == OK, body
    assert q.wait() == (OK, {"exit_code": -1, "error": "signal: killed"})


def test_bad_requests(conn):
    for i, pty in enumerate([{"cols": 0, "rows": 24}, {"cols": 80}, {"cols": 80, "rows": 70000},
                             "80x24"]):
        msg = conn.call(CMD_START, 60 + i, {"cmd": "true", "pty": pty})
        assert error_code(msg) == "bad_request", msg
    conn.send(CMD_START, 70, {"cmd": "sleep 30", "stdin": True})
    t, _, body = conn.recv()
    assert t == CMD_STARTED
    plain = body["pid"]
    msg = conn.call(CMD_RESIZE, 71, {"pid": plain, "pty": {"cols": 10, "rows": 10}})
    assert error_code(msg) == "invalid_argument", msg
    assert error_code(conn.call(CMD_RESIZE, 72, {"pid": 999999999,
                                                 "pty": {"cols": 10, "rows": 10}})) == "not_found"
    assert conn.call(CMD_KILL, 73, {"pid": plain})[0] == OK
    conn.until_terminal(70)
    p = Pty(conn, 80, "cat")
    msg = conn.call(CMD_STDIN, 81, {"pid": p.pid, "eof": True})
    assert error_code(msg) == "invalid_argument", msg  # a pty ends its input with ^D
    p.send(82, b"\x04")
    assert p.wait() == (OK, {"exit_code": 0})


def test_argv_runs_without_a_shell(conn):
    # `argv` execs the program as it is: no login shell, no word splitting or expansion.
    conn.send(CMD_START, 90, {"argv": ["/bin/echo", "a  b", "$HOME"]})
    msgs = conn.until_terminal(90)
    assert msgs[0][0] == CMD_STARTED and msgs[-1] == (OK, 90, {"exit_code": 0}), msgs
    assert b"".join(b["data"] for t, _, b in msgs if t == CMD_OUTPUT) == b"a  b $HOME\n"
    # a login shell on a terminal, as E2B's sandbox.pty starts it
    p = Pty(conn, 91, None, argv=["/bin/bash", "-i", "-l"])
    p.send(92, b"shopt -q login_shell && echo login-$-\nexit\n")
    assert p.wait() == (OK, {"exit_code": 0})
    assert re.search(r"login-\w*i", p.out.decode()), p.out  # interactive login shell
    for i, body in enumerate([{"argv": []}, {"argv": ["echo", "x"]}, {"argv": ["/bin/echo", 1]},
                              {"argv": ["/bin/echo"], "cmd": "echo"}, {},
                              {"cmd": "true", "sandbox_envs": {"A=B": "x"}},
                              {"cmd": "true", "sandbox_envs": ["A"]},
                              {"cmd": "true", "envs": {"A": 1}}]):
        assert error_code(conn.call(CMD_START, 130 + i, body)) == "bad_request", body
    assert error_code(conn.call(CMD_START, 99, {"argv": ["/no/such/program"]})) == "not_found"


def test_system_runs_the_agents_tool_and_nothing_else(conn):
    # `system` (the host's filesystem-only pause, docs/PROTOCOL.md): unconfined root for
    # /usr/lib/cellvm/fs-snapshot only; any other program, user or a pty is refused.
    tool = ["/usr/bin/python3", "-I", "/usr/lib/cellvm/fs-snapshot", "pack", "/x"]
    for i, body in enumerate([
            {"argv": ["/bin/sh", "-c", "id"], "system": True},
            {"argv": ["/usr/bin/python3", "-I", "/tmp/fs-snapshot"], "system": True},
            {"argv": ["/usr/bin/python3", "/usr/lib/cellvm/fs-snapshot"], "system": True},
            {"cmd": "/usr/lib/cellvm/fs-snapshot pack /x", "system": True},
            {"argv": tool, "system": True, "user": "user"},
            {"argv": tool, "system": True, "pty": {"cols": 80, "rows": 24}},
            {"argv": tool, "system": "yes"}]):
        assert error_code(conn.call(CMD_START, 110 + i, body)) == "bad_request", body
