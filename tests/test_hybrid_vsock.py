"""The host side of hybrid vsock (Firecracker, Cloud Hypervisor).

Neither VMM can run on this machine, so FakeHybridVsock stands in for the
VMM's Unix socket: it speaks the handshake (`CONNECT <port>\\n` -> `OK <n>\\n`),
refuses connections while its "guest" is not listening (as the VMMs do: they
close the connection), and once it is, bridges the stream to a real
cellvm-agent on a Unix socket - the agent the guest would run. So what passes
here is the handshake code plus the real protocol behind it.
"""

import os
import sys
import tempfile
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import _wire  # noqa: E402
from cellvm.vmm_firecracker import HandshakeError, hybrid_vsock_connect  # noqa: E402
from fake_hybrid_vsock import FakeHybridVsock  # noqa: E402


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
            hybrid_vsock_connect(vmm.path, 1024, timeout=2)
    finally:
        vmm.close()


def test_an_endless_reply_line_is_cut(tmp):
    vmm = FakeHybridVsock(os.path.join(tmp, "v.sock"), 1024, reply=b"x" * 1000)
    try:
        with pytest.raises(HandshakeError, match="too long"):
            hybrid_vsock_connect(vmm.path, 1024, timeout=2)
    finally:
        vmm.close()
