"""Framing and request multiplexing for the cellvm protocol (docs/PROTOCOL.md).

One Connection per socket; several requests (from several threads) can be in
flight at once on it. Whichever waiting thread reads the socket reassembles
frames into messages and hands each to the request it belongs to
(Connection's docstring says why there is no reader thread).
"""

import collections
import itertools
import _signal
import os
import select
import signal
import socket
import struct
import threading
import time

import cbor2

HEADER = struct.Struct(">IHHI")
HEADER_SIZE = HEADER.size
MAX_FRAME = 4 * 1024 * 1024
MAX_BODY = MAX_FRAME - HEADER.size
FLAG_MORE = 0x0001
DEFAULT_MAX_MESSAGE = 64 * 1024 * 1024
PROTOCOL_VERSION = 1
HELLO_RESEND_S = 0.5  # first re-send of an unanswered HELLO; doubles up to the max
HELLO_RESEND_MAX_S = 8.0


def _default_spin_s():
    """How long a thread waiting for its answer polls the socket without
    sleeping before it blocks: $CELLVM_SPIN_US microseconds (default 500),
    none on a host with one CPU, where spinning would keep the agent (dev
    mode) from running. Why: waking a thread that slept costs more than the
    agent's whole answer to a short request on a VM host (docs/BENCHMARKS.md)."""
    try:
        us = float(os.environ.get("CELLVM_SPIN_US", "500"))
    except ValueError:
        us = 500.0
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cpus < 2:
        return 0.0
    return max(0.0, min(us, 100_000.0)) / 1e6


SPIN_S = _default_spin_s()
_yield = getattr(os, "sched_yield", lambda: None)  # not on every OS the SDK runs on

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
SHUTDOWN = 0x0032
SET_DEADLINE = 0x0033
SNAPSHOT_PREPARE = 0x0034
NEW_GENERATION = 0x0035
SYS_STATS = 0x0036
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
    """'unix:PATH', 'tcp:HOST:PORT' or 'vsock:CID:PORT' -> (family, sockaddr)."""
    if addr.startswith("unix:"):
        return socket.AF_UNIX, addr[5:]
    if addr.startswith("tcp:"):
        host, _, port = addr[4:].rpartition(":")
        return socket.AF_INET, (host, int(port))
    if addr.startswith("vsock:"):
        cid, sep, port = addr[6:].partition(":")
        if sep and cid.isdigit() and port.isdigit() and int(cid) < 1 << 32 and int(port) < 1 << 32:
            return socket.AF_VSOCK, (int(cid), int(port))
        raise ValueError(f"bad vsock address {addr!r}: expected vsock:CID:PORT (decimal)")
    raise ValueError(f"unsupported address {addr!r}: expected unix:PATH, tcp:HOST:PORT or vsock:CID:PORT")


class Request:
    """Messages of one in-flight request, terminal last."""

    def __init__(self, conn, req_id):
        self.conn = conn
        self.id = req_id
        self._items = collections.deque()  # (type, body) or the exception that ended it
        self._discard = False  # drop non-terminal messages (a command nobody follows)

    def discard(self, on=True):
        """While on, messages other than the terminal one are dropped as they
        arrive, and those waiting are dropped now (the SDK stopped following
        a command's output: its memory must not grow)."""
        with self.conn._cv:
            self._discard = on
            if on:
                kept = [i for i in self._items if isinstance(i, BaseException) or i[0] in TERMINAL]
                self._items.clear()
                self._items.extend(kept)

    def drop_arrived(self):
        """Drops the non-terminal messages that have arrived so far, those
        still in the socket included (best effort: not when another thread
        is reading it); the request then delivers what comes next."""
        self.discard(True)
        try:
            while True:
                before = self.conn._bytes_in
                if self.conn._wait_for(self, 0) or self.conn._bytes_in == before:
                    return
        finally:
            self.discard(False)

    def __iter__(self):
        return self.messages()

    def messages(self, timeout=None):
        """Yield (type, body) until and including the terminal message.
        `timeout` bounds the wait for each message (TimeoutError)."""
        while True:
            if not self.conn._wait_for(self, timeout):
                raise TimeoutError(f"no message for request {self.id} within {timeout} s")
            item = self._items.popleft()
            if isinstance(item, BaseException):
                self._items.appendleft(item)  # it ended the request: every later call sees it too
                raise item
            if self.conn._backlog_limit:
                self.conn._taken()
            yield item
            if item[0] in TERMINAL:
                return

    def poll(self):
        """The next message if one has arrived (reading what the socket holds
        without waiting), else None. Raises what ended the connection."""
        if not self.conn._wait_for(self, 0):
            return None
        item = self._items.popleft()
        if isinstance(item, BaseException):
            self._items.appendleft(item)
            raise item
        return item

    def has_message(self):
        """True if a message (or the connection's end) is waiting; never blocks."""
        return self.conn._wait_for(self, 0)

    def cancel(self):
        return self.conn.call(CANCEL, {"id": self.id})


class Connection:
    """One socket to an agent, shared by any number of threads.

    There is no reader thread: a thread waiting for a message of its request
    reads the socket itself if no other thread does (it is then the reader
    for everyone, handing other requests' messages to them) and otherwise
    waits to be handed its messages or to take over reading. The common case,
    one thread sending a request and reading its answer, so costs no thread
    switch per message (a reader thread cost ~60 us per message here).
    Senders that find the socket full read meanwhile, so neither side can
    block the other (the agent stops reading a client whose replies pile up).
    """

    READ_SIZE = 1024 * 1024

    def __init__(self, sock, max_message=DEFAULT_MAX_MESSAGE):
        self.sock = sock
        self.max_message = max_message
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._send_lock = threading.Lock()
        self._pending = {}
        self._closed = None
        self._reading = False  # a thread is reading the socket
        self._rbuf = bytearray()
        self._partial = {}  # (type, id) -> bytes of a message chunked with FLAG_MORE
        self._poll_in = None  # select.poll() for readability, made by the first reader
        self._backlog_limit = 0  # with start_reader(): messages a request may hold unread
        self._waiters = 0  # threads in _wait(): notify only when there are some
        self.spin_s = SPIN_S  # busy-poll before blocking, for a request's own reader
        self._bytes_in = 0  # bytes read from the socket so far
        self.hello = None

    @classmethod
    def connect(cls, addr, timeout=10.0):
        family, sockaddr = parse_address(addr)
        sock = socket.socket(family, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
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
        try:
            self.send(encode_frames(mtype, req_id, body or {}))
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
        self._fail(ConnectionClosed("connection closed by the client"))
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes a thread reading it
        except OSError:
            pass
        with self._cv:  # let a thread reading it see the end before the fd goes
            if self._reading:
                self._wait(1)
        self.sock.close()

    def start_reader(self, backlog=8):
        """From now on a thread of its own reads the socket, so that reading
        overlaps the callers' work (a streamed download writing a file): it
        stops while a request holds `backlog` messages its caller has not
        taken, and the socket then pushes back to the agent."""
        with self._cv:
            self._backlog_limit = backlog
        threading.Thread(target=self._reader_loop, name="cellvm-reader", daemon=True).start()

    def _backlogged(self):
        return any(len(r._items) >= self._backlog_limit for r in self._pending.values())

    def _wait(self, timeout=None):
        """cv.wait(timeout), counted (lock held): _wake() skips notify_all()
        when nobody waits, the common case of one thread per connection."""
        self._waiters += 1
        try:
            self._cv.wait(timeout)
        finally:
            self._waiters -= 1

    def _wake(self):
        """Lock held: wakes every waiting thread, if any."""
        if self._waiters:
            self._cv.notify_all()

    def _taken(self):
        with self._cv:
            self._wake()  # the reader may be waiting for room

    def _reader_loop(self):
        while True:
            with self._cv:
                while self._closed is None and (self._reading or self._backlogged()):
                    self._wait()
                if self._closed is not None:
                    return
                self._reading = True
            try:
                self._read_some(None)
            finally:
                with self._cv:
                    self._reading = False
                    self._wake()

    # --- sending ---------------------------------------------------------

    def send(self, *parts):
        """Send the bytes of `parts` as one unit (no other sender's bytes in
        between). While the socket takes nothing, reads what the agent sends,
        if no other thread does. Raises OSError if the socket fails."""
        with self._send_lock:
            for part in parts:
                view = memoryview(part).cast("B")
                while view:
                    try:
                        n = self.sock.send(view, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        self._wait_writable()
                        continue
                    view = view[n:]

    def _wait_writable(self):
        with self._cv:
            lead = not self._reading and self._closed is None
            if lead:
                self._reading = True
        p = select.poll()
        p.register(self.sock.fileno(), select.POLLOUT | (select.POLLIN if lead else 0))
        try:
            events = p.poll(None if lead else 50)
            if lead and any(ev & (select.POLLIN | select.POLLHUP | select.POLLERR) for _, ev in events):
                self._read_some(0)
        finally:
            if lead:
                with self._cv:
                    self._reading = False
                    self._wake()

    # --- receiving -------------------------------------------------------

    def _wait_for(self, req, timeout):
        """Until `req` has a message (True) or `timeout` s passed (False;
        None waits for ever). Reads the socket while no other thread does."""
        items = req._items
        if items:  # deque appends happen under the lock; reading its length needs none
            return True
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while True:
                if items:
                    return True
                if self._closed is not None:
                    items.append(self._closed)
                    return True
                if not self._reading:
                    self._reading = True
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._wait(left)
        try:
            while True:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                self._read_some(left, spin=True)
                if items:
                    return True
                if self._closed is not None:
                    with self._cv:
                        if not items:
                            items.append(self._closed)
                    return True
                if left == 0 or (deadline is not None and time.monotonic() >= deadline):
                    return False
        finally:
            with self._cv:
                self._reading = False
                self._wake()

    def _read_some(self, timeout, spin=False):
        """As the reading thread: wait up to `timeout` s for bytes, read what
        is there and hand every complete message to its request. With `spin`,
        poll without sleeping for up to spin_s first."""
        try:
            if self._rbuf and self._parse():
                return  # complete messages left by a reader that was interrupted
            if self._poll_in is None:
                self._poll_in = select.poll()
                self._poll_in.register(self.sock.fileno(), select.POLLIN)
            ready = spin and self.spin_s and timeout != 0 and self._spin(timeout)
            if not ready and not self._poll_in.poll(None if timeout is None else int(timeout * 1000 + 0.999)):
                return
            # Ctrl-C between recv() returning and the bytes landing in the
            # buffer would lose them and the stream with them: hold SIGINT
            # for these two steps (it is taken right after).
            masked = _mask_sigint()
            try:
                data = self.sock.recv(self.READ_SIZE)
                self._rbuf += data
                self._bytes_in += len(data)
            finally:
                if masked:
                    _unmask_sigint()
            if not data:
                raise ConnectionClosed("agent closed the connection"
                                       + (" mid-frame" if self._rbuf or self._partial else ""))
            self._parse()
        except (ConnectionClosed, ProtocolError) as e:
            self._fail(e)
        except (OSError, ValueError) as e:  # ValueError: the socket was closed meanwhile
            self._fail(ConnectionClosed(str(e)))

    def _spin(self, timeout):
        """Polls without sleeping for up to spin_s (or `timeout` s); True once readable."""
        poll = self._poll_in.poll
        clock = time.perf_counter
        end = clock() + (self.spin_s if timeout is None else min(self.spin_s, timeout))
        while not poll(0):
            if clock() >= end:
                return False
            # Gives the CPU to the agent or executor if they wait for this
            # one (a busy host): spinning alone made them wait for the spin.
            _yield()
        return True

    def _parse(self):
        """Hands the complete messages in the buffer to their requests; how many."""
        buf = self._rbuf
        end = len(buf)
        if end < HEADER_SIZE:
            return 0
        view = memoryview(buf)  # slices of it copy once, not twice
        unpack = HEADER.unpack_from
        partial = self._partial
        pos = 0
        delivered = []
        try:
            while end - pos >= HEADER_SIZE:
                length, mtype, flags, req_id = unpack(buf, pos)
                if length > MAX_BODY or flags & ~FLAG_MORE:
                    raise ProtocolError(f"bad frame header: length {length}, flags {flags:#x}")
                stop = pos + HEADER_SIZE + length
                if stop > end:
                    break
                body = bytes(view[pos + HEADER_SIZE:stop])
                pos = stop
                if flags or partial:  # chunked messages (FLAG_MORE): the uncommon path
                    key = (mtype, req_id)
                    if key in partial or flags:
                        acc = partial.setdefault(key, bytearray())
                        acc += body
                        if len(acc) > self.max_message:
                            raise ProtocolError(f"message over {self.max_message} bytes")
                        if flags:
                            continue
                        body = bytes(partial.pop(key))
                        length = len(body)
                try:
                    msg = cbor2.loads(body) if length else {}
                except Exception as e:
                    raise ProtocolError(f"undecodable CBOR body in type {mtype:#x}: {e}")
                if type(msg) is not dict and not isinstance(msg, dict):
                    raise ProtocolError(f"body of type {mtype:#x} is not a map")
                delivered.append((req_id, mtype, msg))
        finally:
            view.release()
            del buf[:pos]
            if delivered:
                self._deliver(delivered)
        return len(delivered)

    def _deliver(self, messages):
        failure = None
        pending = self._pending
        with self._cv:
            for req_id, mtype, msg in messages:
                req = pending.get(req_id)
                if req is not None:
                    if mtype == OK or mtype == ERROR:
                        del pending[req_id]
                    elif req._discard:
                        continue
                    req._items.append((mtype, msg))
                elif req_id == 0 and mtype == ERROR:
                    failure = AgentError(msg.get("code", "internal"), msg.get("message", ""))
            self._wake()
        if failure is not None:
            self._fail(failure)

    def _fail(self, exc):
        with self._cv:
            if self._closed is None:
                self._closed = exc
            pending, self._pending = self._pending, {}
            for req in pending.values():
                req._items.append(exc)
            self._wake()


_MAIN_THREAD = threading.main_thread().ident
# _signal's own functions: signal.pthread_sigmask turns the old mask into a set
# of enum members, several microseconds per call on this hot path.
_SIGINT_ONLY = (int(signal.SIGINT),)


def _mask_sigint():
    """Blocks SIGINT for this thread if it is the main one (where Python runs
    signal handlers); True if it did."""
    if threading.get_ident() != _MAIN_THREAD:
        return False
    _signal.pthread_sigmask(_signal.SIG_BLOCK, _SIGINT_ONLY)
    return True


def _unmask_sigint():
    _signal.pthread_sigmask(_signal.SIG_UNBLOCK, _SIGINT_ONLY)


class AgentError(Exception):
    """The agent answered a request with ERROR{code, message}."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
