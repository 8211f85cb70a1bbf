"""E2B's get_host(port) for a micro-VM: a listener on this host's loopback
whose connections are tunnelled through the sandbox's agent connection to
that port on the guest's loopback (the ports service, docs/PROTOCOL.md
section 12), as `cellvm serve` relays a port for E2B's npm SDK. The guest
needs no network; the listener lives until the sandbox is closed or killed."""

import socket
import threading

from . import _wire

PORT_OPEN = 0x0300
PORT_DATA = 0x0301
PORT_DATA_REPLY = 0x8301
WINDOW = 256 * 1024  # CV_PORT_WINDOW: bytes a side may send unacknowledged
CHUNK = 64 * 1024


class Forward:
    """127.0.0.1:<a free port> → guest port `port`, over `conn_of()` (the
    sandbox's connection at the time each client connects)."""

    def __init__(self, conn_of, port):
        self._conn_of = conn_of
        self.port = port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.host = f"127.0.0.1:{self._server.getsockname()[1]}"
        self._closed = False
        threading.Thread(target=self._accept, name=f"cellvm-port-{port}", daemon=True).start()

    def close(self):
        if not self._closed:
            self._closed = True
            try:
                self._server.shutdown(socket.SHUT_RDWR)  # wakes accept()
            except OSError:
                pass
            self._server.close()

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._tunnel, args=(client,), daemon=True,
                             name=f"cellvm-port-{self.port}-tunnel").start()

    def _tunnel(self, client):
        """One client connection relayed both ways: the guest's bytes here,
        acknowledged once written; the client's bytes in a thread of its own,
        within the window the agent acknowledges."""
        with client:
            try:
                conn = self._conn_of()
                req = conn.request(PORT_OPEN, {"port": self.port})
            except (_wire.ConnectionClosed, OSError):
                return
            window = _Window()
            up = threading.Thread(target=self._upstream, args=(client, conn, req, window),
                                  daemon=True, name=f"cellvm-port-{self.port}-up")
            up.start()
            try:
                for t, body in req.messages():
                    if t == PORT_DATA_REPLY:
                        data, ack = body.get("data"), body.get("ack", 0)
                        # The guest's bytes, checked as anything from it is.
                        if not isinstance(data, (bytes, type(None))) or \
                                not isinstance(ack, int) or isinstance(ack, bool) or ack < 0:
                            raise _wire.ProtocolError(f"PORT_DATA of tunnel {req.id}: bad fields")
                        window.acked(ack)
                        if data:
                            client.sendall(data)
                            _send(conn, req.id, {"ack": len(data)})
                        if body.get("eof"):
                            client.shutdown(socket.SHUT_WR)
                    elif t in (_wire.OK, _wire.ERROR):
                        break  # (PORT_OPENED, 0x8300, needs nothing: bytes may precede it)
            except (OSError, _wire.ConnectionClosed, _wire.ProtocolError):
                _cancel(req)
            finally:
                window.end()
                try:
                    client.shutdown(socket.SHUT_RDWR)  # wakes the upstream's recv()
                except OSError:
                    pass
                up.join()

    @staticmethod
    def _upstream(client, conn, req, window):
        sent = 0
        try:
            while True:
                data = client.recv(CHUNK)
                if not data:
                    _send(conn, req.id, {"eof": True})
                    return
                if not window.wait_room(sent, len(data)):
                    return  # the tunnel ended
                _send(conn, req.id, {"data": data})
                sent += len(data)
        except (OSError, _wire.ConnectionClosed):
            _cancel(req)  # the client went away: the guest's socket goes too


class _Window:
    """The bytes the agent acknowledged of those sent (each ack counts the
    bytes since the one before)."""

    def __init__(self):
        self._cv = threading.Condition()
        self._acked = 0
        self._ended = False

    def acked(self, n):
        with self._cv:
            self._acked += n
            self._cv.notify_all()

    def end(self):
        with self._cv:
            self._ended = True
            self._cv.notify_all()

    def wait_room(self, sent, n):
        """Until `n` more bytes fit the window (True) or the tunnel ended."""
        with self._cv:
            while not self._ended and sent + n - self._acked > WINDOW:
                self._cv.wait()
            return not self._ended


def _send(conn, req_id, body):
    """A PORT_DATA of tunnel `req_id` (a continuation under its id)."""
    try:
        conn.send(_wire.encode_frames(PORT_DATA, req_id, body))
    except OSError as e:
        raise _wire.ConnectionClosed(str(e)) from e


def _cancel(req):
    try:
        req.discard()
        req.cancel()
    except Exception:  # noqa: BLE001 - the connection may be gone; nothing to tell
        pass
