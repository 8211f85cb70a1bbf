"""cellvm serve's other ports (E2B's getHost(port)): HTTP relayed through the
agent's tunnels to servers started inside real sandboxes (QEMU, the real image).
Routing by E2B's headers and by Host `{port}-{id}.{domain}`, bodies both ways
(by length, chunked, to the end of the stream), a closed port's error as E2B's
edge gives it, and private sandboxes' traffic tokens."""

import base64
import concurrent.futures
import hashlib
import http.client
import json
import os
import socket
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conftest import build_image_or_skip  # noqa: E402
from serve_process import CLI, serving  # noqa: E402

ENVD = 49983
WEB, ECHO, CLOSED, WS = 8000, 8001, 8002, 8003
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

# A guest server showing what it got: the raw request target, selected headers
# and the body (read by length or chunked), answered by length; GET /chunked and
# GET /eof answer chunked and close-delimited.
ECHO_PY = r'''
import http.server, json, sys

class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", 0)))

    def answer(self):
        body = self.body()
        info = {"method": self.command, "path": self.path,
                "host": self.headers.get("Host"),
                "x_test": self.headers.get("X-Test"),
                "token": self.headers.get("E2B-Traffic-Access-Token"),
                "sandbox_id": self.headers.get("E2b-Sandbox-Id"),
                "connection": self.headers.get("Connection"),
                "length": len(body)}
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("X-Info", json.dumps(info))
            self.end_headers()
            for piece in (b"first,", b"x" * 70000, b",last"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\nX-Trailer: t\r\n\r\n")
            return
        if self.path.startswith("/big/"):
            n = int(self.path[5:])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            block = b"b" * 65536
            while n > 0:
                self.wfile.write(block[:n])
                n -= min(n, len(block))
            return
        if self.path == "/eof":
            self.wfile.write(b"HTTP/1.0 201 Made\r\nX-Info: eof\r\n\r\nuntil the end")
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_response(200)
        self.send_header("X-Info", json.dumps(info))
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = answer

    def log_message(self, *a):
        pass

# socketserver's backlog of 5 is too short for the 16 connections the agent
# opens at once: under TCG the accept queue fills, the kernel answers with SYN
# cookies, drops the handshake's last ACK on the full queue and resets the
# connection at its second data segment (ECONNRESET to the agent's write).
http.server.ThreadingHTTPServer.request_queue_size = 64
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


# A WebSocket echo server (RFC 6455, stdlib only): text and binary messages
# come back upper-cased; a close is answered with a close.
WS_PY = r'''
import base64, hashlib, socketserver, sys
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

class H(socketserver.StreamRequestHandler):
    def handle(self):
        lines = []
        while True:
            line = self.rfile.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            lines.append(line.decode().strip())
        hdr = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        if hdr.get("upgrade", "").lower() != "websocket":
            self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 3\r\n\r\nno\n")
            return
        accept = base64.b64encode(hashlib.sha1(hdr["sec-websocket-key"].encode() + GUID).digest())
        self.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                         b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
        self.wfile.flush()
        while True:
            h = self.rfile.read(2)
            if len(h) < 2:
                return
            op, n = h[0] & 15, h[1] & 127
            if n == 126:
                n = int.from_bytes(self.rfile.read(2), "big")
            elif n == 127:
                n = int.from_bytes(self.rfile.read(8), "big")
            mask = self.rfile.read(4)
            raw = self.rfile.read(n)
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(raw))
            if op == 8:
                self.wfile.write(b"\x88\x00")
                self.wfile.flush()
                return
            out = data.upper()
            size = (bytes([len(out)]) if len(out) < 126 else
                    b"\x7e" + len(out).to_bytes(2, "big"))
            self.wfile.write(bytes([0x80 | op]) + size + out)
            self.wfile.flush()

socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


def request(server, method, path, headers, body=None, chunked=False, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    try:
        c.putrequest(method, path, skip_host="Host" in headers, skip_accept_encoding=True)
        for k, v in headers.items():
            c.putheader(k, v)
        if chunked:
            c.putheader("Transfer-Encoding", "chunked")
        elif body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders()
        if chunked:
            for i in range(0, len(body), 100000):
                piece = body[i:i + 100000]
                c.send(b"%x\r\n%s\r\n" % (len(piece), piece))
            c.send(b"0\r\n\r\n")
        elif body:
            c.send(body)
        r = c.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        c.close()


def api(server, method, path, obj=None):
    body = None if obj is None else json.dumps(obj).encode()
    hdrs = {"X-API-Key": server.key}
    if body is not None:
        hdrs["Content-Type"] = "application/json"
    return request(server, method, path, hdrs, body)


def envelope(obj):
    raw = json.dumps(obj).encode()
    return b"\0" + len(raw).to_bytes(4, "big") + raw


class Sbx:
    def __init__(self, server, info):
        self.server, self.id, self.token = server, info["sandboxID"], info["envdAccessToken"]

    def headers(self, port, **extra):
        h = {"E2b-Sandbox-Id": self.id, "E2b-Sandbox-Port": str(port)}
        h.update(extra)
        return h

    def envd(self, path, body, content_type):
        return request(self.server, "POST", path,
                       self.headers(ENVD, **{"X-Access-Token": self.token,
                                             "Content-Type": content_type}), body)

    def write(self, path, data):
        status, _, body = self.envd(f"/files?path={path}", data, "application/octet-stream")
        assert status == 200, body

    def start(self, cmd):
        """Runs `cmd` under bash in the background of the sandbox (it outlives the call)."""
        start = {"process": {"cmd": "/bin/bash",
                             "args": ["-c", f"setsid nohup {cmd} >/tmp/srv.log 2>&1 &"]}}
        status, _, body = self.envd("/process.Process/Start", envelope(start),
                                    "application/connect+json")
        assert status == 200, body

    def get(self, port, path="/", **headers):
        return request(self.server, "GET", path, self.headers(port, **headers))

    def wait_listening(self, port):
        """Until something answers on `port` (the server starts in the background)."""
        for _ in range(240):
            status, _, body = self.get(port)
            if status != 502:
                return
            time.sleep(0.25)
        pytest.fail(f"nothing listened on port {port} of {self.id}: {body[:300]!r}")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    build_image_or_skip()
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"{CLI} is not built (make all)")
    yield from serving(str(tmp_path_factory.mktemp("serve-ports")), ["--domain", "cellvm.test"],
                       env_extra={"CELLVM_MAX_SANDBOXES": "40"})


def create(server, **extra):
    status, _, body = api(server, "POST", "/sandboxes",
                          dict({"templateID": "base", "timeout": 600}, **extra))
    assert status == 201, body
    return Sbx(server, json.loads(body))


@pytest.fixture(scope="module")
def sbx(server):
    s = create(server)
    s.write("/tmp/www/index.html", b"<h1>hello from the sandbox</h1>\n")
    s.write("/tmp/echo.py", ECHO_PY.encode())
    s.write("/tmp/ws.py", WS_PY.encode())
    s.start(f"python3 -m http.server {WEB} --bind 127.0.0.1 --directory /tmp/www")
    s.start(f"python3 /tmp/echo.py {ECHO}")
    s.start(f"python3 /tmp/ws.py {WS}")
    s.wait_listening(WEB)
    s.wait_listening(ECHO)
    s.wait_listening(WS)
    yield s
    api(server, "DELETE", f"/sandboxes/{s.id}")


def test_get_by_headers(sbx):
    status, headers, body = sbx.get(WEB, "/index.html")
    assert status == 200, body
    assert body == b"<h1>hello from the sandbox</h1>\n"
    assert headers["content-type"].startswith("text/html")
    assert headers["content-length"] == str(len(body))


def test_head_keeps_the_length(sbx, server):
    status, headers, body = request(server, "HEAD", "/index.html", sbx.headers(WEB))
    assert status == 200 and body == b""
    assert headers["content-length"] == str(len(b"<h1>hello from the sandbox</h1>\n"))


def test_get_by_host_name(sbx, server):
    host = f"{WEB}-{sbx.id}.cellvm.test"
    status, _, body = request(server, "GET", "/", {"Host": host})
    assert status == 200 and body == b"<h1>hello from the sandbox</h1>\n", body
    # The guest sees the Host as the client sent it, and nothing of the routing.
    status, headers, _ = request(server, "GET", "/q?a=%2F&b=1",
                                 {"Host": f"{ECHO}-{sbx.id}.cellvm.test", "X-Test": "yes"})
    assert status == 200
    info = json.loads(headers["x-info"])
    assert info["path"] == "/q?a=%2F&b=1"
    assert info["host"] == f"{ECHO}-{sbx.id}.cellvm.test"
    assert info["x_test"] == "yes" and info["connection"] == "close"


def test_routing_headers_are_not_passed_on(sbx):
    status, headers, _ = sbx.get(ECHO, "/x", **{"E2B-Traffic-Access-Token": sbx.token})
    assert status == 200
    info = json.loads(headers["x-info"])
    assert info["sandbox_id"] is None and info["token"] is None


def test_post_of_one_megabyte_is_echoed(sbx, server):
    data = os.urandom(1 << 20)
    status, headers, body = request(server, "POST", "/echo", sbx.headers(ECHO), data)
    assert status == 200
    assert json.loads(headers["x-info"])["length"] == len(data)
    assert hashlib.sha256(body).hexdigest() == hashlib.sha256(data).hexdigest()


def test_chunked_upload_is_relayed(sbx, server):
    data = os.urandom(300000)
    status, headers, body = request(server, "PUT", "/up", sbx.headers(ECHO), data, chunked=True)
    assert status == 200
    assert json.loads(headers["x-info"])["length"] == len(data) and body == data


def test_chunked_and_close_delimited_responses(sbx):
    status, headers, body = sbx.get(ECHO, "/chunked")
    assert status == 200
    assert body == b"first," + b"x" * 70000 + b",last"
    status, headers, body = sbx.get(ECHO, "/eof")
    assert status == 201 and headers["x-info"] == "eof" and body == b"until the end"


def test_many_requests_in_a_row_keep_working(sbx):
    for i in range(20):
        status, _, body = sbx.get(WEB, "/index.html")
        assert status == 200 and body.startswith(b"<h1>"), (i, body)


def test_parallel_requests_share_the_sandbox_connection(sbx, server):
    bodies = [os.urandom(100000 + i) for i in range(16)]

    def post(b):
        return request(server, "POST", "/p", sbx.headers(ECHO), b)

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        got = list(pool.map(post, bodies))
    for b, (status, _, body) in zip(bodies, got):
        assert status == 200 and body == b, (status, body[:400])


def test_a_client_that_stops_reading_holds_back_only_its_own_request(sbx, server):
    size = 32 << 20
    c = socket.create_connection(("127.0.0.1", server.port), timeout=60)
    try:
        c.sendall(b"GET /big/%d HTTP/1.1\r\nHost: %d-%s.cellvm.test\r\n\r\n"
                  % (size, ECHO, sbx.id.encode()))
        assert c.recv(12).startswith(b"HTTP/1.1 200")
        # That response is not read on: the windows hold it back. Everything
        # else of the sandbox still flows.
        for _ in range(3):
            status, _, body = sbx.get(WEB, "/index.html")
            assert status == 200 and body.startswith(b"<h1>")
        status, _, body = request(server, "POST", "/x", sbx.headers(ECHO), b"z" * 500000)
        assert status == 200 and body == b"z" * 500000
        # and the held-back response still arrives whole
        got = 0
        c.settimeout(120)
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += c.recv(65536)
        got = len(buf.split(b"\r\n\r\n", 1)[1])
        while got < size:
            chunk = c.recv(1 << 20)
            assert chunk, f"cut at {got}"
            got += len(chunk)
        assert got == size
    finally:
        c.close()


def test_closed_port_is_e2b_s_502(sbx):
    status, headers, body = sbx.get(CLOSED)
    assert status == 502
    assert headers["content-type"].startswith("application/json")
    assert json.loads(body) == {"message": "The sandbox is running but port is not open",
                                "sandboxId": sbx.id, "port": CLOSED, "code": 502}


def test_private_sandbox_needs_its_own_traffic_token(server, sbx):
    priv = create(server, network={"allowPublicTraffic": False})
    try:
        priv.write("/tmp/www/index.html", b"private\n")
        priv.start(f"python3 -m http.server {WEB} --bind 127.0.0.1 --directory /tmp/www")
        tok = {"E2B-Traffic-Access-Token": priv.token}
        for _ in range(240):
            status, _, body = priv.get(WEB, "/index.html", **tok)
            if status != 502:
                break
            time.sleep(0.25)
        assert status == 200 and body == b"private\n", body
        status, _, body = priv.get(WEB, "/index.html")
        assert status == 403, body
        assert priv.id in json.loads(body)["message"]
        status, _, _ = priv.get(WEB, "/index.html", **{"E2B-Traffic-Access-Token": sbx.token})
        assert status == 403
        # The public sandbox needs none (E2B's default).
        assert sbx.get(WEB, "/index.html")[0] == 200
    finally:
        api(server, "DELETE", f"/sandboxes/{priv.id}")


def test_ended_sandbox_is_a_502(server):
    gone = create(server)
    api(server, "DELETE", f"/sandboxes/{gone.id}")
    status, headers, body = gone.get(WEB)
    # E2B's edge's words (its host.test.ts checks them)
    assert status == 502 and headers["content-type"].startswith("application/json")
    assert json.loads(body) == {"message": "The sandbox was not found", "sandboxId": gone.id,
                                "code": 502}
    status, _, body = request(server, "POST", "/", {"Host": f"{WEB}-{gone.id}.cellvm.test"},
                              b"x" * 100000)
    assert status == 502 and json.loads(body)["sandboxId"] == gone.id


def ws_frame(op, data):
    """A client's frame: masked, as RFC 6455 requires."""
    mask = os.urandom(4)
    size = bytes([0x80 | len(data)]) if len(data) < 126 else (
        b"\xfe" + len(data).to_bytes(2, "big"))
    return bytes([0x80 | op]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def ws_read(f):
    h = f.read(2)
    assert len(h) == 2, h
    n = h[1] & 127
    if n == 126:
        n = int.from_bytes(f.read(2), "big")
    return h[0] & 15, f.read(n)


def test_websocket_through_the_host_name(server, sbx):
    key = base64.b64encode(os.urandom(16))
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as c:
        c.sendall(b"GET /chat HTTP/1.1\r\nHost: %d-%s.cellvm.test\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                  b"Sec-WebSocket-Version: 13\r\n\r\n" % (WS, sbx.id.encode(), key))
        f = c.makefile("rb")
        status = f.readline()
        assert status.startswith(b"HTTP/1.1 101"), status
        headers = {}
        while (line := f.readline()) not in (b"\r\n", b""):
            k, _, v = line.decode().partition(":")
            headers[k.strip().lower()] = v.strip()
        assert headers["upgrade"].lower() == "websocket"
        assert "upgrade" in headers["connection"].lower()
        expect = base64.b64encode(hashlib.sha1(key + WS_GUID).digest()).decode()
        assert headers["sec-websocket-accept"] == expect
        c.sendall(ws_frame(1, b"hello"))
        assert ws_read(f) == (1, b"HELLO")
        big = bytes(range(97, 123)) * 2000  # 52 KB, several of the tunnel's messages
        c.sendall(ws_frame(2, big))
        assert ws_read(f) == (2, big.upper())
        c.sendall(ws_frame(8, b""))
        assert ws_read(f) == (8, b"")
        assert f.read(1) == b""  # the guest closed: so did the server


def test_upgrade_not_taken_by_the_guest_is_plain_http(sbx):
    # echo.py ignores Upgrade: its ordinary answer comes back as it is.
    status, headers, body = sbx.get(ECHO, "/u", Upgrade="websocket", Connection="Upgrade")
    assert status == 200 and body == b""
    info = json.loads(headers["x-info"])
    assert info["path"] == "/u" and info["connection"] == "Upgrade"


def test_private_ports_stay_private_across_a_pause(server):
    priv = create(server, network={"allowPublicTraffic": False})
    try:
        priv.write("/tmp/www/index.html", b"still private\n")
        priv.start(f"python3 -m http.server {WEB} --bind 127.0.0.1 --directory /tmp/www")
        tok = {"E2B-Traffic-Access-Token": priv.token}
        for _ in range(240):
            status, _, body = priv.get(WEB, "/index.html", **tok)
            if status != 502:
                break
            time.sleep(0.25)
        assert status == 200, body
        assert api(server, "POST", f"/sandboxes/{priv.id}/pause")[0] == 204
        status, _, body = api(server, "POST", f"/sandboxes/{priv.id}/connect", {"timeout": 120})
        assert status == 201, body
        # resumed with its server running, and its ports still need the token
        status, _, body = priv.get(WEB, "/index.html", **tok)
        assert status == 200 and body == b"still private\n", body
        assert priv.get(WEB, "/index.html")[0] == 403
    finally:
        api(server, "DELETE", f"/sandboxes/{priv.id}")
