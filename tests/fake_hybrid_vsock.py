"""A stand-in for the hybrid-vsock Unix socket of Firecracker and Cloud
Hypervisor, neither of which can run on this machine (no KVM that runs a stock
guest; neither VMM is installable). It speaks the VMM's side of the handshake
(`CONNECT <port>\\n` -> `OK <n>\\n`), turns connections away while its "guest"
is not listening (as the VMMs do: they close the connection), and then
bridges each stream to a Unix socket: in the tests, a real cellvm-agent, the
process the guest would run. Used by the fake VMM executable tests/fake_vmm.py
(and its pump by tests/fake_qemu.py).
"""

import socket
import threading


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
        self.accepting = True  # False: the "VM" is paused, CONNECTs are turned away
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
        if (line != f"CONNECT {self.port}\n".encode() or self.attempts <= self.refuse_first
                or not self.accepting):
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
        threading.Thread(target=pump, args=(g, c), daemon=True).start()
        pump(c, g)

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


def pump(src, dst):
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
