"""The host side of hybrid vsock (Firecracker, Cloud Hypervisor).

Neither VMM can run on this machine, so FakeHybridVsock stands in for the
VMM's Unix socket: it speaks the handshake (`CONNECT <port>\\n` -> `OK <n>\\n`),
refuses connections while its "guest" is not listening (as the VMMs do: they
close the connection), and once it is, bridges the stream to a real
cellvm-agent on a Unix socket - the agent the guest would run. So what passes
here is the handshake code plus the real protocol behind it.
"""

import os
import socket
import sys
import tempfile
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import _wire  # noqa: E402
from cellvm.vmm_firecracker import HandshakeError, hybrid_vsock_connect  # noqa: E402


class FakeHybridVsock:
    """A VMM's hybrid-vsock Unix socket, with a guest listening on `port`
    after `refuse_first` connections were turned away."""

    def __init__(self, path, port, target=None, refuse_first=0, reply=None, extra_after_ok=b""):
        self.path = path
        self.port = port
        self.target = target  # unix socket path of the "guest" listener
        self.refuse_first = refuse_first
        self.reply = reply
        self.extra_after_ok = extra_after_ok
        self.attempts = 0
        self.requests = []
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self.srv.bind(path)
        self.srv.listen(8)
        self.threads = []
        self.closing = False
        t = threading.Thread(target=self._accept_loop, daemon=True)
        t.start()
        self.threads.append(t)

    def _accept_loop(self):
        while not self.closing:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, c):
        line = b""
        while not line.endswith(b"\n") and len(line) < 64:
            b = c.recv(1)
            if not b:
                c.close()
                return
            line += b
        self.attempts += 1
        self.requests.append(line)
        if line != f"CONNECT {self.port}\n".encode() or self.attempts <= self.refuse_first:
            c.close()  # nobody listens on that port (yet)
            return
        if self.reply is not None:
            c.sendall(self.reply)
            c.close()
            return
        c.sendall(b"OK 1073741824\n" + self.extra_after_ok)
        if self.target is None:
            self._echo(c)
            return
        g = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        g.connect(self.target)
        threading.Thread(target=_pump, args=(g, c), daemon=True).start()
        _pump(c, g)

    @staticmethod
    def _echo(c):
        while True:
            data = c.recv(4096)
            if not data:
                c.close()
                return
            c.sendall(data)

    def close(self):
        self.closing = True
        self.srv.close()


def _pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture
def tmp():
    d = tempfile.mkdtemp(prefix="cellvm-hv-")
    yield d
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)


def test_handshake_then_the_real_protocol(tmp, agent):
    vmm = FakeHybridVsock(os.path.join(tmp, "v.sock"), 1024, target=agent.sock)
    try:
        sock = hybrid_vsock_connect(vmm.path, 1024, timeout=10)
        conn = _wire.Connection(sock)
        hello = conn.call(_wire.HELLO, {"protocol": 1, "client": "hybrid-vsock-test"}, timeout=30)
        assert hello["protocol"] == 1 and "execute" in hello["capabilities"]
        pong = conn.call(_wire.PING, {"payload": "through the VMM"}, timeout=30)
        assert pong["payload"] == "through the VMM"
        conn.close()
        assert vmm.requests == [b"CONNECT 1024\n"]
    finally:
        vmm.close()


def test_retries_until_the_guest_listens(tmp):
    vmm = FakeHybridVsock(os.path.join(tmp, "v.sock"), 1024, refuse_first=5)
    try:
        sock = hybrid_vsock_connect(vmm.path, 1024, timeout=10, retry_interval=0.01)
        sock.sendall(b"ping")
        assert sock.recv(4) == b"ping"
        sock.close()
        assert vmm.attempts == 6
    finally:
        vmm.close()


def test_waits_for_the_vmm_socket_to_appear(tmp):
    path = os.path.join(tmp, "late.sock")
    holder = {}
    timer = threading.Timer(0.3, lambda: holder.setdefault("vmm", FakeHybridVsock(path, 1024)))
    timer.start()
    try:
        t0 = time.monotonic()
        sock = hybrid_vsock_connect(path, 1024, timeout=10)
        assert time.monotonic() - t0 >= 0.25
        sock.sendall(b"x")
        assert sock.recv(1) == b"x"
        sock.close()
    finally:
        timer.join()
        holder["vmm"].close()


def test_bytes_after_the_ok_line_belong_to_the_stream(tmp):
    # A VMM may deliver the guest's first bytes in the same segment as "OK".
    vmm = FakeHybridVsock(os.path.join(tmp, "v.sock"), 1024, extra_after_ok=b"FIRST")
    try:
        sock = hybrid_vsock_connect(vmm.path, 1024, timeout=5)
        got = b""
        while len(got) < 5:
            got += sock.recv(5 - len(got))
        assert got == b"FIRST"
        sock.close()
    finally:
        vmm.close()


def test_gives_up_after_timeout_when_nobody_listens(tmp):
    vmm = FakeHybridVsock(os.path.join(tmp, "v.sock"), 1024)
    try:
        t0 = time.monotonic()
        with pytest.raises(HandshakeError, match="not accepted within"):
            hybrid_vsock_connect(vmm.path, 2048, timeout=0.5)
        assert 0.45 <= time.monotonic() - t0 < 3
        assert vmm.attempts >= 2 and all(r == b"CONNECT 2048\n" for r in vmm.requests)
    finally:
        vmm.close()


def test_a_reply_other_than_ok_is_refused(tmp):
    vmm = FakeHybridVsock(os.path.join(tmp, "v.sock"), 1024, reply=b"ERR no such port\n")
    try:
        with pytest.raises(HandshakeError, match="ERR no such port"):
            hybrid_vsock_connect(vmm.path, 1024, timeout=0.3)
    finally:
        vmm.close()


def test_an_endless_reply_line_is_cut(tmp):
    vmm = FakeHybridVsock(os.path.join(tmp, "v.sock"), 1024, reply=b"x" * 1000)
    try:
        with pytest.raises(HandshakeError, match="too long"):
            hybrid_vsock_connect(vmm.path, 1024, timeout=0.3)
    finally:
        vmm.close()
