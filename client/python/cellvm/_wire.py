"""Framing and request multiplexing for the cellvm protocol (docs/PROTOCOL.md).

One Connection per socket. A reader thread reassembles frames into messages
and hands each to the queue of the request it belongs to, so several requests
(from several threads) can be in flight at once on one connection.
"""

import itertools
import queue
import socket
import struct
import threading
import time

import cbor2

HEADER = struct.Struct(">IHHI")
MAX_FRAME = 4 * 1024 * 1024
MAX_BODY = MAX_FRAME - HEADER.size
FLAG_MORE = 0x0001
DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024
PROTOCOL_VERSION = 1
HELLO_RESEND_S = 0.5  # first re-send of an unanswered HELLO; doubles up to the max
HELLO_RESEND_MAX_S = 8.0

# Requests (client -> agent)
HELLO = 0x0001
PING = 0x0002
CANCEL = 0x0003
EXECUTE = 0x0010
INTERRUPT = 0x0011
CONTEXT_CREATE = 0x0020
CONTEXT_LIST = 0x0021
CONTEXT_RESTART = 0x0022
CONTEXT_REMOVE = 0x0023
SET_TIME = 0x0030
ADD_ENTROPY = 0x0031
# Agent -> client
OK = 0x8000
ERROR = 0x8001
EXEC_INPUT = 0x8010
STREAM = 0x8011
DISPLAY = 0x8012
RESULT = 0x8013
EXEC_ERROR = 0x8014

TERMINAL = (OK, ERROR)


class ProtocolError(Exception):
    """The guest sent something that does not follow the protocol."""


class ConnectionClosed(Exception):
    """The connection ended before the request's terminal message."""


def encode_frames(mtype, req_id, body):
    """Return the bytes of one message, chunked into frames under the cap."""
    payload = b"" if body is None else cbor2.dumps(body)
    out = []
    pos = 0
    while True:
        piece = payload[pos:pos + MAX_BODY]
        pos += len(piece)
        more = pos < len(payload)
        out.append(HEADER.pack(len(piece), mtype, FLAG_MORE if more else 0, req_id))
        out.append(piece)
        if not more:
            return b"".join(out)


def parse_address(addr):
    """'unix:PATH' or 'tcp:HOST:PORT' -> (family, sockaddr)."""
    if addr.startswith("unix:"):
        return socket.AF_UNIX, addr[5:]
    if addr.startswith("tcp:"):
        host, _, port = addr[4:].rpartition(":")
        return socket.AF_INET, (host, int(port))
    raise ValueError(f"unsupported address {addr!r}: expected unix:PATH or tcp:HOST:PORT")


class Request:
    """Messages of one in-flight request, terminal last."""

    def __init__(self, conn, req_id):
        self.conn = conn
        self.id = req_id
        self._q = queue.Queue()

    def __iter__(self):
        return self.messages()

    def messages(self, timeout=None):
        """Yield (type, body) until and including the terminal message."""
        while True:
            try:
                item = self._q.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"no message for request {self.id} within {timeout} s")
            if isinstance(item, BaseException):
                raise item
            yield item
            if item[0] in TERMINAL:
                return

    def cancel(self):
        return self.conn.call(CANCEL, {"id": self.id})


class Connection:
    def __init__(self, sock, max_message=DEFAULT_MAX_MESSAGE):
        self.sock = sock
        self.max_message = max_message
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._pending = {}
        self._closed = None
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        self.hello = None

    @classmethod
    def connect(cls, addr, timeout=10.0):
        family, sockaddr = parse_address(addr)
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(sockaddr)
        except BaseException:
            sock.close()
            raise
        sock.settimeout(None)
        conn = cls(sock)
        try:
            conn.handshake({"protocol": PROTOCOL_VERSION, "client": "cellvm-python"}, timeout)
        except BaseException:
            conn.close()
            raise
        return conn

    def handshake(self, hello, timeout, check=None):
        """Send HELLO and wait for its answer, re-sending it while unanswered.

        Over virtio-serial the guest drops bytes that arrive while the agent
        reopens its port after the previous client left, and nothing would
        tell us; a repeated HELLO is harmless (the agent answers each, and
        nothing else is in flight yet). Sets and returns self.hello. Raises
        TimeoutError after `timeout` s, AgentError if the agent refuses.
        `check()`, called between waits, may raise to give up early (the VMM
        died, say).
        """
        deadline = time.monotonic() + timeout
        reqs = [self.request(HELLO, hello)]
        interval = HELLO_RESEND_S
        resend_at = time.monotonic() + interval
        while True:
            for i, req in enumerate(reqs):
                wait = min(0.05, max(0.0, deadline - time.monotonic())) if i == len(reqs) - 1 else 0
                try:
                    t, body = next(req.messages(timeout=wait))
                except TimeoutError:
                    continue
                with self._lock:  # the other HELLOs' answers go nowhere
                    for other in reqs:
                        self._pending.pop(other.id, None)
                if t == OK:
                    self.hello = body
                    return body
                if t == ERROR:
                    raise AgentError(body.get("code", "internal"), body.get("message", ""))
                raise ProtocolError(f"HELLO answered with message type {t:#x}")
            if check is not None:
                check()
            now = time.monotonic()
            if now >= deadline:
                raise TimeoutError(f"no HELLO reply within {timeout} s")
            if now >= resend_at:
                reqs.append(self.request(HELLO, hello))
                interval = min(interval * 2, HELLO_RESEND_MAX_S)
                resend_at = now + interval

    def request(self, mtype, body=None):
        with self._lock:
            if self._closed is not None:
                raise ConnectionClosed(str(self._closed))
            req_id = next(self._ids)
            req = Request(self, req_id)
            self._pending[req_id] = req
        data = encode_frames(mtype, req_id, body or {})
        with self._send_lock:
            try:
                self.sock.sendall(data)
            except OSError as e:
                self._fail(ConnectionClosed(f"send failed: {e}"))
        return req

    def call(self, mtype, body=None, timeout=None):
        """Send a request and return the OK body; raise AgentError on ERROR."""
        for t, b in self.request(mtype, body).messages(timeout):
            if t == OK:
                return b
            if t == ERROR:
                raise AgentError(b.get("code", "internal"), b.get("message", ""))
        raise ProtocolError("request ended without a terminal message")

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self._reader.join(timeout=5)

    def _recv_exact(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                return None
            buf += chunk
        return bytes(buf)

    def _read_loop(self):
        partial = {}
        try:
            while True:
                hdr = self._recv_exact(HEADER.size)
                if hdr is None:
                    raise ConnectionClosed("agent closed the connection")
                length, mtype, flags, req_id = HEADER.unpack(hdr)
                if length > MAX_BODY or flags & ~FLAG_MORE:
                    raise ProtocolError(f"bad frame header: length {length}, flags {flags:#x}")
                body = self._recv_exact(length) if length else b""
                if body is None:
                    raise ConnectionClosed("agent closed the connection mid-frame")
                key = (mtype, req_id)
                if key in partial or flags & FLAG_MORE:
                    acc = partial.setdefault(key, bytearray())
                    acc += body
                    if len(acc) > self.max_message:
                        raise ProtocolError(f"message over {self.max_message} bytes")
                    if flags & FLAG_MORE:
                        continue
                    body = bytes(partial.pop(key))
                try:
                    msg = cbor2.loads(body) if body else {}
                except Exception as e:
                    raise ProtocolError(f"undecodable CBOR body in type {mtype:#x}: {e}")
                if not isinstance(msg, dict):
                    raise ProtocolError(f"body of type {mtype:#x} is not a map")
                self._deliver(req_id, mtype, msg)
        except BaseException as e:  # noqa: BLE001 - hand every failure to the waiters
            self._fail(e if isinstance(e, (ConnectionClosed, ProtocolError)) else ConnectionClosed(str(e)))

    def _deliver(self, req_id, mtype, msg):
        with self._lock:
            req = self._pending.get(req_id)
            if req is not None and mtype in TERMINAL:
                del self._pending[req_id]
        if req is not None:
            req._q.put((mtype, msg))
        elif req_id == 0 and mtype == ERROR:
            self._fail(AgentError(msg.get("code", "internal"), msg.get("message", "")))

    def _fail(self, exc):
        with self._lock:
            if self._closed is None:
                self._closed = exc
            pending, self._pending = self._pending, {}
        for req in pending.values():
            req._q.put(exc)


class AgentError(Exception):
    """The agent answered a request with ERROR{code, message}."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
