"""A minimal QMP client (QEMU's JSON machine protocol over a Unix socket).

    q = Qmp.connect("/tmp/x/qmp.sock", timeout=5)   # greeting + qmp_capabilities
    q.execute("stop")
    q.execute("migrate", {"uri": "exec:cat > /tmp/x/state"})
    q.wait_migration(timeout=60)                      # "completed", or QmpError
    q.close()

One command at a time; asynchronous events that arrive meanwhile are kept
in `events` (the snapshot code waits on query-migrate, not on events, so
none is lost by design). Standard library only.
"""

import json
import socket
import time

MAX_LINE = 1 << 20  # QMP replies here are small; a longer line is not QEMU


class QmpError(Exception):
    """QMP said error, closed, or did not answer in time."""


class Qmp:
    def __init__(self, sock):
        self._sock = sock
        self._buf = b""
        self.events = []

    @classmethod
    def connect(cls, path, timeout=10.0, check=None):
        """Connect to QEMU's `-qmp unix:PATH,server=on,wait=off` socket,
        retrying while it does not exist yet (QEMU creates it early in its
        start), and negotiate capabilities. `check()` may raise to give up."""
        deadline = time.monotonic() + timeout
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            try:
                sock.settimeout(max(0.05, deadline - time.monotonic()))
                sock.connect(path)
                break
            except (FileNotFoundError, ConnectionRefusedError) as e:
                sock.close()
                if check is not None:
                    check()
                if time.monotonic() >= deadline:
                    raise QmpError(f"QMP socket {path}: {e}") from None
                time.sleep(0.002)
        q = cls(sock)
        try:
            greeting = q._read(deadline)
            if "QMP" not in greeting:
                raise QmpError(f"QMP socket {path}: no greeting ({greeting!r:.200})")
            q.execute("qmp_capabilities", timeout=max(0.05, deadline - time.monotonic()))
        except BaseException:
            q.close()
            raise
        return q

    def _read(self, deadline):
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise QmpError("QMP: no answer in time")
            self._sock.settimeout(left)
            try:
                data = self._sock.recv(65536)
            except socket.timeout:
                raise QmpError("QMP: no answer in time") from None
            except OSError as e:
                raise QmpError(f"QMP: {e}") from None
            if not data:
                raise QmpError("QMP: QEMU closed the connection")
            self._buf += data
            if len(self._buf) > MAX_LINE and b"\n" not in self._buf:
                raise QmpError("QMP: reply line too long")
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            raise QmpError(f"QMP: not JSON: {line[:200]!r}") from None

    def execute(self, command, arguments=None, timeout=10.0, fds=()):
        """Run `command`; its "return" value. QmpError with QEMU's
        description if it answers with an error. `fds` go with the command
        (SCM_RIGHTS), as `getfd` wants its fd."""
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        deadline = time.monotonic() + timeout
        data = json.dumps(msg).encode() + b"\n"
        try:
            if fds:
                socket.send_fds(self._sock, [data], list(fds))
            else:
                self._sock.sendall(data)
        except OSError as e:
            raise QmpError(f"QMP {command}: {e}") from None
        while True:
            reply = self._read(deadline)
            if "event" in reply:
                self.events.append(reply)
                continue
            if "error" in reply:
                err = reply["error"]
                raise QmpError(f"QMP {command}: {err.get('class', 'Error')}: {err.get('desc', err)}")
            if "return" in reply:
                return reply["return"]

    def wait_migration(self, timeout=60.0, poll_s=0.002):
        """Poll query-migrate until the migration (outgoing or incoming) is
        completed; QmpError with QEMU's error-desc if it failed."""
        deadline = time.monotonic() + timeout
        while True:
            info = self.execute("query-migrate", timeout=max(0.05, deadline - time.monotonic()))
            status = info.get("status")
            if status == "completed":
                return info
            if status in ("failed", "cancelled"):
                raise QmpError(f"migration {status}: {info.get('error-desc', 'no reason given')}")
            if time.monotonic() >= deadline:
                raise QmpError(f"migration not completed in {timeout} s (status {status})")
            time.sleep(poll_s)

    def close(self):
        try:
            self._sock.close()
        except OSError:
            pass
