"""cellvm-agent transports: unix, loopback tcp, vsock and a (emulated) virtio-serial port."""

import errno
import os
import pty
import select
import signal
import socket
import subprocess
import time
import tty

import pytest

import conftest
from test_agent_protocol import (EXEC_INPUT, EXECUTE, HELLO, OK, PING, STREAM, Raw, error_code,
                                 execute, result_text)


def free_tcp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def logs_within(agent, line, seconds=10):
    """The agent binds its listeners in turn and the fixture returns once the
    first (its Unix socket) exists: a later one is logged a moment after."""
    deadline = time.monotonic() + seconds
    while line not in agent.read_log() and time.monotonic() < deadline:
        time.sleep(0.01)
    return line in agent.read_log()


def run_agent_expecting_failure(*listen):
    args = [conftest.AGENT, "--workdir", "/tmp", "--preload", ""]
    for addr in listen:
        args += ["--listen", addr]
    return subprocess.run(args, capture_output=True, text=True, timeout=30)


def test_help_tells_the_truth():
    out = subprocess.run([conftest.AGENT, "--help"], capture_output=True, text=True, timeout=10)
    assert out.returncode == 0
    for word in ["--listen", "unix:PATH", "vsock:PORT", "tcp:127.0.0.1:PORT", "serial:",
                 "--workdir", "--executor", "--preload", "--log-level"]:
        assert word in out.stdout
    bad = subprocess.run([conftest.AGENT, "--no-such-option"], capture_output=True, text=True,
                         timeout=10)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_unix(fresh_agent):
    c = Raw(fresh_agent.addr)
    c.hello()
    assert result_text(execute(c, 2, "'unix'")) == ["'unix'"]
    c.close()


def test_sigterm_cleans_up(fresh_agent):
    c = Raw(fresh_agent.addr)
    c.hello()
    msgs = execute(c, 2, "import os; os.getpid()")
    executor_pid = int(result_text(msgs)[0])
    # A running execution and a child process of the cell must not survive the agent.
    c.send(EXECUTE, 3, {"code": "import subprocess; p = subprocess.Popen(['sleep', '60']); "
                                "print(p.pid, flush=True); p.wait()"})
    out = ""
    while not out.endswith("\n"):
        t, _, body = c.recv()
        if t == STREAM:
            out += body["text"]
    sleep_pid = int(out)
    assert fresh_agent.stop() == 0
    assert not os.path.exists(fresh_agent.sock)
    deadline = time.monotonic() + 5
    for pid in (executor_pid, sleep_pid):
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split()[2] == "Z":  # a zombie of someone else's; dead enough
                    break
            time.sleep(0.05)
        else:
            pytest.fail(f"pid {pid} outlived the agent")
    assert "stopped" in fresh_agent.read_log()
    c.close()


def test_tcp_loopback():
    port = free_tcp_port()
    a = conftest.AgentProcess("--listen", f"tcp:127.0.0.1:{port}", preload="")
    try:
        assert logs_within(a, f"listening on tcp:127.0.0.1:{port}"), a.read_log()
        c = Raw(None, family=socket.AF_INET, sockaddr=("127.0.0.1", port))
        c.hello()
        assert result_text(execute(c, 2, "'tcp'")) == ["'tcp'"]
        c.close()
    finally:
        a.stop()


@pytest.mark.parametrize("addr", ["tcp:0.0.0.0:{port}", "tcp:10.1.2.3:{port}", "tcp:[::]:{port}",
                                  "tcp:192.168.0.1:{port}"])
def test_tcp_refuses_non_loopback(addr):
    out = run_agent_expecting_failure(addr.format(port=free_tcp_port()))
    assert out.returncode == 1
    assert "loopback" in out.stderr


@pytest.mark.parametrize("addr", ["bogus:1", "tcp:127.0.0.1", "tcp:127.0.0.1:99999", "vsock:x",
                                  "unix:"])
def test_bad_addresses_are_refused(addr):
    out = run_agent_expecting_failure(addr)
    assert out.returncode == 1 and "--listen" in out.stderr


def vsock_port():
    return 20000 + os.getpid() % 20000


def test_vsock():
    if not hasattr(socket, "AF_VSOCK"):
        pytest.skip("Python has no AF_VSOCK")
    subprocess.run(["modprobe", "vsock_loopback"], capture_output=True)
    try:
        probe = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    except OSError as e:
        pytest.skip(f"AF_VSOCK sockets unavailable here: {e}")
    probe.close()
    port = vsock_port()
    try:
        a = conftest.AgentProcess("--listen", f"vsock:{port}", "--allow-local-vsock", preload="")
    except RuntimeError as e:
        pytest.skip(f"the agent could not bind AF_VSOCK here: {e}")
    try:
        assert logs_within(a, f"listening on vsock:{port}"), a.read_log()
        c = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
        c.settimeout(3)
        try:
            c.connect((socket.VMADDR_CID_LOCAL if hasattr(socket, "VMADDR_CID_LOCAL") else 1,
                       port))
        except OSError as e:
            c.close()
            pytest.skip("AF_VSOCK binds here but there is no local transport to connect through "
                        f"(vsock_loopback not loadable): {e}; the bind itself was checked")
        c.settimeout(30)
        conn = Raw.over(c)
        conn.hello()
        assert result_text(execute(conn, 2, "'vsock'")) == ["'vsock'"]
        conn.close()
    finally:
        a.stop()


class SerialPort:
    """A virtio-serial port stand-in: a pty whose slave is reached through a fixed path.

    The agent opens PATH (a symlink to the pty slave), as it would open
    /dev/virtio-ports/NAME. The host end is the pty master. A host that goes away
    is emulated by closing the master (the agent sees a hang-up: EIO/EPOLLHUP on
    the slave, as on a disconnected port) and a host that comes back by a new pty
    behind the same path, which is what a reopened virtio-serial port looks like
    to the guest.
    """

    def __init__(self, path):
        self.path = path
        self.master = None
        self.plug()

    def plug(self):
        master, slave = pty.openpty()
        tty.setraw(slave)  # no line discipline between the two ends
        name = os.ttyname(slave)
        os.close(slave)
        tmp = self.path + ".new"
        os.symlink(name, tmp)
        os.replace(tmp, self.path)
        self.master = master
        sock_like = MasterSocket(master)
        self.conn = Raw.over(sock_like)

    def unplug(self):
        os.close(self.master)
        self.master = None


class MasterSocket:
    """Enough of the socket API over a pty master fd for Raw."""

    def __init__(self, fd):
        self.fd = fd
        self.timeout = 30

    def settimeout(self, t):
        self.timeout = t

    def sendall(self, data):
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view[:4096])
            view = view[n:]

    def recv(self, n):
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            r, _, _ = select.select([self.fd], [], [], max(left, 0))
            if not r:
                raise TimeoutError("no data from the agent on the serial port")
            try:
                return os.read(self.fd, n)
            except OSError as e:
                # EIO: no one has the slave open (yet): the agent is between two opens.
                if e.errno != errno.EIO or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def close(self):
        pass


@pytest.fixture
def serial_agent(tmp_path):
    port = SerialPort(str(tmp_path / "vport0p1"))
    a = conftest.AgentProcess("--listen", f"serial:{port.path}", preload="")
    yield a, port
    a.stop()
    if port.master is not None:
        port.unplug()


def test_serial(serial_agent):
    a, port = serial_agent
    c = port.conn
    c.hello()
    assert c.call(PING, 2, {"payload": b"\x00\x0a\x0d\x03\x04\x11\x13\xff"})[2]["payload"] == \
        b"\x00\x0a\x0d\x03\x04\x11\x13\xff"  # raw bytes: no tty translation
    msgs = execute(c, 3, "print('serial')\n'x' * 100000")
    assert result_text(msgs) == [repr("x" * 100000)]


def test_serial_second_hello_resets(serial_agent):
    a, port = serial_agent
    c = port.conn
    c.hello()
    execute(c, 2, "kept = 1")
    c.send(EXECUTE, 3, {"code": "import time\nfor i in range(300):\n print(i)\n time.sleep(0.1)"})
    c.send(EXECUTE, 4, {"code": "dropped = 1"})
    assert c.recv()[0] == EXEC_INPUT
    assert c.recv()[0] == STREAM
    # A new peer on the same stream says HELLO: the old requests are cancelled silently.
    c.send(HELLO, 1, {"protocol": 1})
    body = None
    while body is None:
        t, req_id, b = c.recv()
        if req_id == 1 and t == OK:
            body = b
        else:
            assert req_id == 3 and t == STREAM, (t, req_id, b)  # old output already queued
    start = time.monotonic()
    msgs = execute(c, 5, "kept, 'dropped' in dir()")
    assert result_text(msgs) == ["(1, False)"]
    assert time.monotonic() - start < 2
    # The old ids are free again.
    assert c.call(PING, 3, {})[0] == OK


def test_serial_reopens_after_hangup(serial_agent):
    a, port = serial_agent
    port.conn.hello()
    execute(port.conn, 2, "state = 'survives'")
    port.conn.send(EXECUTE, 3, {"code": "import time; time.sleep(30)"})
    assert port.conn.recv()[0] == EXEC_INPUT
    time.sleep(0.2)
    port.unplug()  # the host went away
    deadline = time.monotonic() + 10
    while "closed (" not in a.read_log():
        assert time.monotonic() < deadline, a.read_log()
        time.sleep(0.05)
    port.plug()  # ... and came back on the same path
    c = port.conn
    c.sock.settimeout(10)
    c.hello()
    # Contexts outlive connections; the abandoned execution was interrupted.
    start = time.monotonic()
    assert result_text(execute(c, 2, "state")) == ["'survives'"]
    assert time.monotonic() - start < 2
    assert a.proc.poll() is None


def test_serial_requests_before_hello(serial_agent):
    a, port = serial_agent
    assert error_code(port.conn.call(PING, 9, {})) == "handshake_required"


def test_several_listeners_share_contexts():
    port = free_tcp_port()
    a = conftest.AgentProcess("--listen", f"tcp:127.0.0.1:{port}", preload="")
    try:
        u = Raw(a.addr)
        u.hello()
        execute(u, 2, "shared = 'across transports'")
        t = Raw(None, family=socket.AF_INET, sockaddr=("127.0.0.1", port))
        t.hello()
        assert result_text(execute(t, 2, "shared")) == ["'across transports'"]
        u.close()
        t.close()
    finally:
        a.stop()


def test_agent_exits_on_sigint(fresh_agent):
    fresh_agent.proc.send_signal(signal.SIGINT)
    assert fresh_agent.proc.wait(timeout=10) == 0
    assert not os.path.exists(fresh_agent.sock)
