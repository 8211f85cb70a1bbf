"""The ports service (docs/PROTOCOL.md section 12) over raw frames: tunnels from
the client through a real agent to TCP servers on this machine's loopback."""

import os
import socket
import threading

import pytest

from test_agent_protocol import CANCEL, ERROR, OK, PING, conn, error_code  # noqa: F401 (conn: a fixture)

PORT_OPEN, PORT_DATA, PORT_OPENED, PORT_DATA_OUT = 0x0300, 0x0301, 0x8300, 0x8301
WINDOW = 256 * 1024


class Server:
    """A TCP server on loopback that hands each connection to `handler` in a thread."""

    def __init__(self, handler, family=socket.AF_INET, host="127.0.0.1"):
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.handler = handler
        self.results = []
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        conn, _ = self.sock.accept()
        with conn:
            self.results.append(self.handler(conn))
        self.done.set()

    def close(self):
        self.sock.close()


def echo(conn):
    n = 0
    while True:
        data = conn.recv(65536)
        if not data:
            conn.shutdown(socket.SHUT_WR)
            return n
        n += len(data)
        conn.sendall(data)


def count_then_answer(conn):
    """Reads until the client's half-close, then answers how much it got."""
    n = 0
    while True:
        data = conn.recv(65536)
        if not data:
            break
        n += len(data)
    conn.sendall(b"got %d bytes" % n)
    return n


def open_tunnel(c, rid, port):
    c.send(PORT_OPEN, rid, {"port": port})
    t, i, body = c.recv()
    assert i == rid and t == PORT_OPENED, (t, body)
    return body


class Tunnel:
    """The client's end of a tunnel, keeping both windows."""

    def __init__(self, c, rid):
        self.c, self.rid = c, rid
        self.unacked = 0  # our bytes the agent has not acknowledged
        self.received = bytearray()
        self.eof = False
        self.end = None  # the terminal message

    def pump(self, ack=True):
        """Handles one message of the tunnel."""
        t, i, body = self.c.recv()
        assert i == self.rid, (t, i, body)
        if t in (OK, ERROR):
            self.end = (t, i, body)
            return
        assert t == PORT_DATA_OUT, (t, body)
        self.unacked -= body.get("ack", 0)
        assert self.unacked >= 0
        if "data" in body:
            self.received += body["data"]
            if ack:
                self.c.send(PORT_DATA, self.rid, {"ack": len(body["data"])})
        if body.get("eof"):
            self.eof = True

    def send_all(self, data, chunk=64 * 1024):
        pos = 0
        while pos < len(data):
            if self.unacked + chunk > WINDOW:
                self.pump()
                continue
            piece = data[pos:pos + chunk]
            self.c.send(PORT_DATA, self.rid, {"data": piece})
            self.unacked += len(piece)
            pos += len(piece)

    def finish(self):
        while self.end is None:
            self.pump()
        return self.end


def test_bytes_both_ways_within_the_windows(conn):
    srv = Server(echo)
    try:
        body = open_tunnel(conn, 10, srv.port)
        assert body["address"] == "127.0.0.1"
        tun = Tunnel(conn, 10)
        data = os.urandom(3 * 1024 * 1024 + 17)
        tun.send_all(data)
        conn.send(PORT_DATA, 10, {"eof": True})
        t, _, end = tun.finish()
        assert t == OK and end == {}, end
        assert tun.eof and bytes(tun.received) == data
        assert srv.done.wait(10) and srv.results == [len(data)]
    finally:
        srv.close()


def test_half_close_reaches_the_guest_and_the_answer_comes_back(conn):
    srv = Server(count_then_answer)
    try:
        open_tunnel(conn, 11, srv.port)
        tun = Tunnel(conn, 11)
        conn.send(PORT_DATA, 11, {"data": b"x" * 1000, "eof": True})
        tun.unacked = 1000
        t, _, _ = tun.finish()
        assert t == OK
        assert bytes(tun.received) == b"got 1000 bytes" and tun.eof
    finally:
        srv.close()


def test_agent_sends_no_more_than_the_window_unacknowledged(conn):
    size = 4 * WINDOW

    def flood(c):
        c.sendall(b"y" * size)
        c.shutdown(socket.SHUT_WR)
        while c.recv(65536):
            pass

    srv = Server(flood)
    try:
        open_tunnel(conn, 12, srv.port)
        tun = Tunnel(conn, 12)
        # Without acks the agent stops at the window; a PING answered after
        # the flood started shows what it sent meanwhile.
        conn.send(PING, 13, {})
        while True:
            t, i, body = conn.recv()
            if i == 13:
                assert t == OK
                break
            assert i == 12 and t == PORT_DATA_OUT
            tun.received += body.get("data", b"")
        assert len(tun.received) <= WINDOW
        conn.send(PORT_DATA, 12, {"ack": len(tun.received)})
        while not tun.eof:
            tun.pump()
        assert len(tun.received) == size
        conn.send(PORT_DATA, 12, {"eof": True})
        assert tun.finish()[0] == OK
    finally:
        srv.close()


def test_ipv6_loopback_when_ipv4_refuses(conn):
    try:
        srv = Server(count_then_answer, socket.AF_INET6, "::1")
    except OSError as e:
        pytest.skip(f"no IPv6 loopback here: {e}")
    try:
        # Nothing on 127.0.0.1 at that port (the kernel gave it for ::1).
        probe = socket.socket()
        if probe.connect_ex(("127.0.0.1", srv.port)) == 0:
            probe.close()
            pytest.skip("the port is taken on 127.0.0.1 too")
        probe.close()
        assert open_tunnel(conn, 14, srv.port)["address"] == "::1"
        tun = Tunnel(conn, 14)
        conn.send(PORT_DATA, 14, {"eof": True})
        assert tun.finish()[0] == OK
        assert bytes(tun.received) == b"got 0 bytes"
    finally:
        srv.close()


def test_refused_port_is_a_clear_error(conn):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # bound, never listening: refused on both loopbacks
    conn.send(PORT_OPEN, 15, {"port": port})
    msg = conn.recv()
    assert error_code(msg) == "connection_refused"
    assert f"port {port}" in msg[2]["message"]


def test_bad_requests(conn):
    for rid, body in ((16, {}), (17, {"port": 0}), (18, {"port": 70000}), (19, {"port": "80"})):
        conn.send(PORT_OPEN, rid, body)
        assert error_code(conn.recv()) == "bad_request"
    # PORT_DATA of a tunnel that ended (or never was) is dropped: it may have
    # been on its way when the tunnel ended. The connection goes on.
    conn.send(PORT_DATA, 20, {"data": b"x"})
    assert conn.call(PING, 21, {})[0] == OK


def test_port_data_of_any_shape_means_the_same(conn):
    """The agent reads the usual {data, ack, eof} in place (protocol/port_data.c)
    and any other map (here with a key of no meaning) the general way: both
    deliver, in order; a value of the wrong type is bad_request either way."""
    srv = Server(count_then_answer)
    try:
        open_tunnel(conn, 24, srv.port)
        tun = Tunnel(conn, 24)
        conn.send(PORT_DATA, 24, {"data": b"a" * 100})
        conn.send(PORT_DATA, 24, {"data": b"b" * 50, "note": "a key of no meaning"})
        conn.send(PORT_DATA, 24, {"data": b"", "eof": True, "note": 1})
        tun.unacked = 150
        t, _, _ = tun.finish()
        assert t == OK and bytes(tun.received) == b"got 150 bytes"
        assert srv.done.wait(10) and srv.results == [150]
    finally:
        srv.close()
    for rid, body, says in ((25, {"data": "text"}, "must be bytes"),
                            (26, {"ack": 5}, "ack of 5 bytes, 0 were sent"),
                            (27, {"eof": 1, "x": 0}, "must be bytes")):
        srv = Server(count_then_answer)
        try:
            open_tunnel(conn, rid, srv.port)
            conn.send(PORT_DATA, rid, body)
            msg = conn.recv()
            assert msg[1] == rid and error_code(msg) == "bad_request", msg
            assert says in msg[2]["message"]
            assert srv.done.wait(10)  # the agent closed its socket
        finally:
            srv.close()


def test_window_overrun_ends_the_tunnel(conn):
    srv = Server(count_then_answer)
    try:
        open_tunnel(conn, 21, srv.port)
        conn.send(PORT_DATA, 21, {"data": b"z" * (WINDOW + 1)})
        msg = conn.recv()
        assert msg[1] == 21 and error_code(msg) == "too_large"
        assert srv.done.wait(10)  # the agent closed its socket
    finally:
        srv.close()


def test_cancel_closes_the_connection_in_the_guest(conn):
    srv = Server(count_then_answer)
    try:
        open_tunnel(conn, 22, srv.port)
        conn.send(PORT_DATA, 22, {"data": b"abc"})
        conn.send(CANCEL, 23, {"id": 22})
        got = conn.until_terminal(22)
        assert error_code(got[-1]) == "cancelled"
        assert conn.until_terminal(23)[-1][0] == OK
        assert srv.done.wait(10)
        # The bytes sent before the CANCEL may or may not have been written.
        assert srv.results[0] in (0, 3)
    finally:
        srv.close()
