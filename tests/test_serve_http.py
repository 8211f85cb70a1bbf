"""`cellvm serve` against hostile and malformed HTTP, spoken raw (http.client
and sockets, no SDK): every bad request gets a clear 4xx with a JSON body
(E2B's `{"code": <status>, "message"}`, Connect's `{"code": "<name>"}` on
envd's RPCs, an end-stream error on its streams) and never crashes or hangs
the server: after each test /health still answers 200 and the process runs.
Each refusal is paired with the same request made right, which must work, so
a server that refused everything would fail here.

One server for the module (build/cellvm serve on a free loopback port, a
fresh $CELLVM_API_KEY, a private registry and TMPDIR, the run's template root
for servers (tests/serve_process.py: the first server of the run builds the
template, ~20 s)) and two sandboxes (`pair`), killed at the end. Skipped without build/image, as the other VM tests are.
"""

import base64
import gzip
import hashlib
import http.client
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import serve_process  # noqa: E402
from conftest import build_image_or_skip  # noqa: E402

CLI = serve_process.CLI
ENVD, INTERP = 49983, 49999
JSON_MAX = 1 << 20       # HTTP_JSON_MAX: control-plane and Connect bodies
MHD_TIMEOUT = 30         # the server's --client-timeout (default 60)
tail = serve_process.tail


# --- the server -------------------------------------------------------------------

class Resp:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.status} {self.headers.get('content-type')} {self.body[:300]!r}>"


class Server(serve_process.Server):
    """The run's `cellvm serve` (tests/serve_process.py) with a shorter client
    timeout and room for the module's sandboxes, spoken to raw."""

    def __init__(self, tmp):
        super().__init__(tmp, ["--client-timeout", str(MHD_TIMEOUT)],
                         {"CELLVM_MAX_SANDBOXES": "40"})

    def request(self, method, path, headers=None, body=None, timeout=30, key=False):
        """One request on a connection of its own; `key` adds X-API-Key."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            hdrs = dict(headers or {})
            c.putrequest(method, path, skip_host="Host" in hdrs, skip_accept_encoding=True)
            if key:
                hdrs["X-API-Key"] = self.key
            if body is not None and not any(k.lower() in ("content-length", "transfer-encoding")
                                            for k in hdrs):
                hdrs["Content-Length"] = str(len(body))
            for k, v in hdrs.items():
                c.putheader(k, v)
            c.endheaders(body)
            r = c.getresponse()
            return Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            c.close()

    def api(self, method, path, obj=None, **kw):
        body = None if obj is None else (obj if isinstance(obj, bytes) else json.dumps(obj).encode())
        hdrs = {"Content-Type": "application/json"} if body is not None else {}
        hdrs.update(kw.pop("headers", {}))
        return self.request(method, path, hdrs, body, key=kw.pop("key", True), **kw)

    def health(self, timeout=5):
        return self.request("GET", "/health", timeout=timeout)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    build_image_or_skip()
    if not os.access(CLI, os.X_OK):
        pytest.fail(f"{CLI} is not built (make all)")
    yield from serve_process.serving(str(tmp_path_factory.mktemp("serve-http")), server_class=Server)


@pytest.fixture(autouse=True)
def still_serving(request):
    """After each test: the server runs and answers /health at once."""
    yield
    if "server" not in request.fixturenames:
        return
    s = request.getfixturevalue("server")
    assert s.proc.poll() is None, f"the server exited ({s.proc.returncode}):\n{tail(s.log_path)}"
    r = s.health(timeout=10)
    assert r.status == 200 and r.json() == {"status": "ok"}, r


class Sbx:
    def __init__(self, server, info):
        self.server, self.id, self.token = server, info["sandboxID"], info["envdAccessToken"]

    def headers(self, port=ENVD, token=True, **extra):
        h = {"E2b-Sandbox-Id": self.id, "E2b-Sandbox-Port": str(port)}
        if token is True:
            h["X-Access-Token"] = self.token
        elif token:
            h["X-Access-Token"] = token
        h.update(extra)
        return h

    def rpc(self, method, obj, token=True, headers=None):
        h = self.headers(token=token, **{"Content-Type": "application/json"})
        h.update(headers or {})
        body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        return self.server.request("POST", method, h, body)

    def stream(self, method, body, token=True, content_type="application/connect+json"):
        h = self.headers(token=token, **{"Content-Type": content_type})
        return self.server.request("POST", method, h, body)

    def upload(self, query, body, content_type, token=True, extra=None):
        h = self.headers(token=token, **{"Content-Type": content_type})
        h.update(extra or {})
        return self.server.request("POST", "/files" + query, h, body)

    def read(self, path, token=True):
        return self.server.request("GET", "/files?" + urllib.parse.urlencode({"path": path}),
                                   self.headers(token=token))


@pytest.fixture(scope="module")
def pair(server):
    """Two sandboxes, with metadata to filter on; killed (and checked gone) at the end."""
    tag = secrets.token_hex(4)
    made = []
    try:
        for n in ("1", "2"):
            meta = {"suite": f"http-{tag}", "n": n}
            if n == "1":
                meta["tricky"] = "a&b=c d%"
            r = server.api("POST", "/sandboxes", {"templateID": "base", "timeout": 600,
                                                  "metadata": meta})
            assert r.status == 201, r
            made.append(Sbx(server, r.json()))
        made[0].tag = made[1].tag = f"http-{tag}"
        yield made
    finally:
        for s in made:
            r = server.api("DELETE", f"/sandboxes/{s.id}")
            assert r.status == 204, r
            r = server.api("GET", f"/sandboxes/{s.id}")
            assert r.status == 404, r


def e2b_error(r, status):
    """`r` is E2B's error: `status` and a JSON body {"code": status, "message": text}."""
    assert r.status == status, r
    assert r.headers.get("content-type", "").startswith("application/json"), r
    body = r.json()
    assert body.get("code") == status and isinstance(body.get("message"), str) \
        and body["message"], r
    return body["message"]


def connect_error(r, status, code):
    assert r.status == status, r
    body = r.json()
    assert body.get("code") == code and isinstance(body.get("message"), str) and body["message"], r
    return body["message"]


def envelopes(body):
    """A Connect stream's envelopes: [(flags, JSON)], checked whole."""
    out, i = [], 0
    while i < len(body):
        assert len(body) - i >= 5, f"a cut envelope prefix at {i}: {body!r}"
        n = int.from_bytes(body[i + 1:i + 5], "big")
        assert len(body) - i - 5 >= n, f"a cut envelope at {i}: {body!r}"
        out.append((body[i], json.loads(body[i + 5:i + 5 + n])))
        i += 5 + n
    return out


def envelope(obj, flags=0):
    raw = json.dumps(obj).encode()
    return bytes([flags]) + len(raw).to_bytes(4, "big") + raw


def count_sandboxes(server):
    r = server.api("GET", "/sandboxes")
    assert r.status == 200, r
    return len(r.json())


# --- control plane: the key --------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "3601", "ten", ""])
def test_client_timeout_out_of_range_is_a_usage_error(value):
    r = subprocess.run([CLI, "serve", "--client-timeout", value, "--listen", "127.0.0.1:1"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--client-timeout takes 1 to 3600 seconds" in r.stderr, r


def test_health(server):
    r = server.health()
    assert r.status == 200 and r.json() == {"status": "ok"}, r


# --- slow clients: stalled connections opened first, checked last ------------------

SLOW = {}


def _watch(sock, out):
    """Records when the server closes `sock` (or answers on it)."""
    sock.settimeout(MHD_TIMEOUT + 30)
    try:
        out["data"] = sock.recv(4096)
    except socket.timeout:
        out["data"] = None
    except OSError:
        out["data"] = b""
    out["at"] = time.monotonic()


def stall(server):
    """Two connections that stop mid-request: in the headers, and in the body."""
    half_headers = socket.create_connection(("127.0.0.1", server.port))
    half_headers.sendall(b"GET /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Ke")
    half_body = socket.create_connection(("127.0.0.1", server.port))
    half_body.sendall(b"POST /sandboxes HTTP/1.1\r\nHost: x\r\nX-API-Key: " + server.key.encode()
                      + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n"
                      b'{"templateID": "ba')
    SLOW.update(t0=time.monotonic(), socks=[half_headers, half_body], seen=[{}, {}])
    SLOW["threads"] = [threading.Thread(target=_watch, args=(s, seen), daemon=True)
                       for s, seen in zip(SLOW["socks"], SLOW["seen"])]
    for t in SLOW["threads"]:
        t.start()


def test_slow_clients_do_not_block_others(server):
    stall(server)
    time.sleep(1)
    for _ in range(5):
        t = time.monotonic()
        r = server.health()
        assert r.status == 200 and time.monotonic() - t < 2, r
        r = server.api("GET", "/sandboxes")
        assert r.status == 200 and time.monotonic() - t < 4, r
    # and they are still open: waiting, not refused
    assert all(not seen for seen in SLOW["seen"]), SLOW["seen"]


def test_api_key_is_required(server):
    k = server.key
    wrong = k[:-1] + ("0" if k[-1] != "0" else "1")
    for hdrs in ({}, {"X-API-Key": wrong}, {"X-API-Key": k + "0"}, {"X-API-Key": k[:-1]},
                 {"X-API-Key": ""}, {"Authorization": f"Bearer {wrong}"},
                 {"Authorization": f"Basic {k}"}, {"Authorization": k},
                 {"Authorization": f"Bearer {k}", "X-API-Key": wrong}):
        r = server.request("GET", "/sandboxes", hdrs)
        assert r.status == 401, (hdrs, r)
        assert r.json()["code"] == 401 and r.json()["message"], (hdrs, r)
    # a create without the key makes nothing
    before = count_sandboxes(server)
    r = server.api("POST", "/sandboxes", {"templateID": "base"}, key=False)
    e2b_error(r, 401)
    assert count_sandboxes(server) == before
    # and the key itself works, either way
    for hdrs in ({"X-API-Key": k}, {"Authorization": f"Bearer {k}"},
                 {"Authorization": f"bearer {k}"}):
        r = server.request("GET", "/sandboxes", hdrs)
        assert r.status == 200 and isinstance(r.json(), list), (hdrs, r)


# --- control plane: bodies ---------------------------------------------------------

BAD_CREATES = [
    (b'{"templateID": "base",', 400),
    (b"", 400),
    (b"[]", 400),
    (b'["base"]', 400),
    (b'"base"', 400),
    (b"null", 400),
    (b'{"templateID": 5}', 400),
    (b'{"timeout": "300"}', 400),
    (b'{"timeout": -1}', 400),
    (b'{"timeout": 1e12}', 400),
    (b'{"timeout": NaN}', 400),
    (b'{"timeout": 10, "timeout": 20}', 400),
    (b'{"metadata": {"a": 1}}', 400),
    (b'{"metadata": ["a"]}', 400),
    (b'{"metadata": "a=b"}', 400),
    (b'{"envVars": []}', 400),
    (b'{"envVars": {"A": null}}', 400),
    (b'{"envVars": {"A": {"B": "c"}}}', 400),
    (b'{"network": {"allowOut": ["not a host!"]}}', 400),
    (b'{"network": {"denyOut": "8.8.8.8"}}', 400),
    (b'{"templateID": "\xff\xfe"}', 400),
    (b'{"templateID": "nope"}', 404),
    (b'{"templateID": "' + b"b" * 200 + b'"}', 404),
    (b'{"templateID": ""}', 404),
]


@pytest.mark.parametrize("body,status", BAD_CREATES, ids=[f"{i}" for i in range(len(BAD_CREATES))])
def test_create_refuses_bad_bodies(server, body, status):
    before = count_sandboxes(server)
    r = server.api("POST", "/sandboxes", body)
    e2b_error(r, status)
    r = server.api("POST", "/v2/sandboxes", body)
    e2b_error(r, status)
    assert count_sandboxes(server) == before


def test_create_body_over_the_limit(server):
    before = count_sandboxes(server)
    # exactly the limit is read (and refused for its timeout), one byte more is not
    head, tail_ = b'{"timeout": "x", "metadata": {"k": "', b'"}}'
    body = head + b"x" * (JSON_MAX - len(head) - len(tail_)) + tail_
    assert len(body) == JSON_MAX
    e2b_error(server.api("POST", "/sandboxes", body), 400)
    body = head + b"x" * (JSON_MAX + 1 - len(head) - len(tail_)) + tail_
    e2b_error(server.api("POST", "/sandboxes", body), 413)
    filler = b"x" * (JSON_MAX + 10)
    body = b'{"templateID": "base", "metadata": {"k": "' + filler + b'"}}'
    e2b_error(server.api("POST", "/sandboxes", body), 413)
    # chunked, as the JS SDK sends control-plane bodies
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 65536]), body[i:i + 65536])
                      for i in range(0, len(body), 65536)) + b"0\r\n\r\n"
    r = server.api("POST", "/sandboxes", chunks, headers={"Transfer-Encoding": "chunked"})
    e2b_error(r, 413)
    assert count_sandboxes(server) == before


def test_methods_and_routes(server):
    e2b_error(server.api("PUT", "/sandboxes", {}), 405)
    e2b_error(server.api("GET", "/nothing/here"), 404)
    e2b_error(server.api("GET", "/v2/sandboxes/"), 404)
    for q in ("limit=0", "limit=101", "limit=x", "limit=", "limit=-1"):
        e2b_error(server.api("GET", f"/v2/sandboxes?{q}"), 400)


# --- control plane: unknown sandboxes ------------------------------------------------

def test_unknown_sandbox_on_the_control_plane(server):
    for method, path, body in (("GET", "/sandboxes/nosuch", None),
                               ("GET", "/v2/sandboxes/nosuch", None),
                               ("DELETE", "/sandboxes/nosuch", None),
                               ("POST", "/sandboxes/nosuch/timeout", {"timeout": 30}),
                               ("POST", "/sandboxes/nosuch/connect", {"timeout": 30}),
                               ("POST", "/sandboxes/nosuch/refreshes", {"duration": 30}),
                               ("GET", "/sandboxes/" + "a" * 300, None)):
        r = server.api(method, path, body)
        e2b_error(r, 404)




@pytest.mark.parametrize("case", ["template cut at 64 bytes", "sandbox id %ff", "route %ff",
                                  "E2b-Sandbox-Id bytes", "envd Content-Type bytes"])
def test_errors_naming_bytes_that_are_not_utf8(server, pair, case):
    if case == "template cut at 64 bytes":
        # 63 ASCII bytes and a 2-byte character: the 64-byte cut falls inside it
        e2b_error(server.api("POST", "/sandboxes", {"templateID": "a" * 63 + "\u00e9"}), 404)
    elif case == "sandbox id %ff":
        e2b_error(server.api("GET", "/sandboxes/%ff%fe"), 404)
    elif case == "route %ff":
        e2b_error(server.api("GET", "/%ff"), 404)
    elif case == "E2b-Sandbox-Id bytes":
        r = server.request("GET", "/files?path=/x", {"E2b-Sandbox-Id": b"\xff\xfe",
                                                      "E2b-Sandbox-Port": "49983"})
        e2b_error(r, 502)
    else:
        r = pair[0].rpc("/filesystem.Filesystem/Stat", {"path": "/"},
                        headers={"Content-Type": b"text/\xff"})
        connect_error(r, 400, "invalid_argument")


def test_unknown_sandbox_on_sandbox_routes_is_502(server):
    for port, method, path in ((ENVD, "POST", "/filesystem.Filesystem/Stat"),
                               (ENVD, "GET", "/files?path=/etc/hostname"),
                               (INTERP, "POST", "/execute"),
                               (INTERP, "GET", "/contexts")):
        for sid in ("nosuch", "../etc", "UPPER", "x" * 63):
            r = server.request(method, path, {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": str(port),
                                              "X-Access-Token": "0" * 32,
                                              "Content-Type": "application/json"}, b"{}")
            e2b_error(r, 502)
    # the port must be a port
    for port in ("", "abc", "0", "70000", "49983x"):
        r = server.request("GET", "/health", {"E2b-Sandbox-Id": "nosuch", "E2b-Sandbox-Port": port})
        e2b_error(r, 400)
    r = server.request("GET", "/health", {"E2b-Sandbox-Id": "x" * 100, "E2b-Sandbox-Port": "49983"})
    e2b_error(r, 400)


def test_sandbox_actions_refuse_bad_bodies(server, pair):
    sid = pair[1].id

    def end_at():
        r = server.api("GET", f"/sandboxes/{sid}")
        assert r.status == 200 and r.json()["sandboxID"] == sid, r
        return r.json()["endAt"]

    before = end_at()
    for action, body in (("timeout", b"{}"), ("timeout", b'{"timeout": "60"}'),
                         ("timeout", b'{"timeout": -5}'), ("timeout", b'{"timeout": 1e12}'),
                         ("timeout", b"[60]"), ("timeout", b'{"timeout": 60'),
                         ("connect", b'{"timeout": "60"}'), ("connect", b"[]"),
                         ("refreshes", b'{"duration": "60"}'), ("refreshes", b'{"duration": -1}'),
                         ("refreshes", b"null")):
        e2b_error(server.api("POST", f"/sandboxes/{sid}/{action}", body), 400)
        e2b_error(server.api("POST", f"/v2/sandboxes/{sid}/{action}", body), 400)
    assert end_at() == before
    e2b_error(server.api("POST", f"/sandboxes/{sid}/nosuchaction", b"{}"), 404)
    e2b_error(server.api("PATCH", f"/sandboxes/{sid}", b"{}"), 404)
    # the same, made right, moves the end
    r = server.api("POST", f"/sandboxes/{sid}/timeout", {"timeout": 900})
    assert r.status == 204, r
    assert end_at() > before


# --- control plane: listing ----------------------------------------------------------

def test_v2_list_pages(server, pair):
    meta = urllib.parse.quote(f"suite={pair[0].tag}")
    r = server.api("GET", f"/v2/sandboxes?limit=1&metadata={meta}")
    assert r.status == 200, r
    first = r.json()
    assert len(first) == 1, r
    token = r.headers.get("x-next-token")
    assert token, r
    r = server.api("GET", f"/v2/sandboxes?limit=1&metadata={meta}&nextToken={urllib.parse.quote(token)}")
    assert r.status == 200, r
    second = r.json()
    assert len(second) == 1 and "x-next-token" not in r.headers, r
    assert {first[0]["sandboxID"], second[0]["sandboxID"]} == {s.id for s in pair}
    # a page of both has no next
    r = server.api("GET", f"/v2/sandboxes?limit=2&metadata={meta}")
    assert len(r.json()) == 2 and "x-next-token" not in r.headers, r
    for item in first + second:
        assert item["state"] == "running" and item["metadata"]["suite"] == pair[0].tag, item
        assert "envdAccessToken" not in item, item  # a listing does not hand out tokens


def test_list_filters(server, pair):
    def ids(query, v2=True):
        r = server.api("GET", ("/v2/sandboxes?" if v2 else "/sandboxes?") + query)
        assert r.status == 200, r
        return {x["sandboxID"] for x in r.json()}

    both = {s.id for s in pair}
    suite = f"suite={pair[0].tag}"
    q = urllib.parse.quote
    assert ids("metadata=" + q(suite)) == both
    assert ids("metadata=" + q(suite), v2=False) == both
    assert ids("metadata=" + q(suite + "&n=1")) == {pair[0].id}
    assert ids("metadata=" + q(suite + "&n=2"), v2=False) == {pair[1].id}
    assert ids("metadata=" + q(suite + "&n=3")) == set()
    assert ids("metadata=" + q("n=1&nosuchkey=1")) == set()
    # E2B's SDKs encode each key and value, then the whole: '&', '=' and '%' in a value
    assert ids("metadata=" + q("tricky=" + q("a&b=c d%", safe=""))) == {pair[0].id}
    assert ids("metadata=" + q(suite) + "&state=running") == both
    assert ids("metadata=" + q(suite) + "&state=paused,running") == both
    assert ids("metadata=" + q(suite) + "&state=paused") == set()


# --- envd: tokens ---------------------------------------------------------------------

def test_envd_needs_the_sandboxs_own_token(server, pair):
    a, b = pair
    stat = {"path": "/"}
    r = a.rpc("/filesystem.Filesystem/Stat", stat)
    assert r.status == 200 and r.json()["entry"]["type"] == "FILE_TYPE_DIRECTORY", r
    for token in (None, b.token, a.token + "0", a.token[:-1], a.token.upper(), ""):
        r = a.rpc("/filesystem.Filesystem/Stat", stat, token=token)
        e2b_error(r, 401)
    # the code interpreter: the access token or the traffic token, its own sandbox's
    r = server.request("GET", "/contexts", a.headers(INTERP))
    assert r.status == 200 and isinstance(r.json(), list), r
    r = server.request("GET", "/contexts", a.headers(INTERP, token=False,
                                                     **{"E2B-Traffic-Access-Token": a.token}))
    assert r.status == 200, r
    for h in (a.headers(INTERP, token=b.token), a.headers(INTERP, token=False),
              a.headers(INTERP, token=False, **{"E2B-Traffic-Access-Token": b.token})):
        e2b_error(server.request("GET", "/contexts", h), 401)
    e2b_error(server.request("POST", "/execute", a.headers(INTERP, token=b.token,
                                                           **{"Content-Type": "application/json"}),
                             b'{"code": "1"}'), 401)
    # routed by Host as E2B's edge does, the same rules
    host = {"Host": f"{ENVD}-{a.id}.e2b.local", "Content-Type": "application/json"}
    e2b_error(server.request("POST", "/filesystem.Filesystem/Stat", dict(host, **{"X-Access-Token": b.token}),
                             b'{"path": "/"}'), 401)
    r = server.request("POST", "/filesystem.Filesystem/Stat", dict(host, **{"X-Access-Token": a.token}),
                       b'{"path": "/"}')
    assert r.status == 200, r


def test_sandbox_ports_other_than_envd_and_interpreter(server, pair):
    # Relayed to the guest (tests/test_serve_ports.py); nothing listens on 8080.
    msg = e2b_error(server.request("GET", "/", pair[0].headers(port=8080)), 502)
    assert msg == "The sandbox is running but port is not open"


# --- envd: Connect ----------------------------------------------------------------------

def stream_error(r):
    """A Connect stream that ended at once with an error: its code."""
    assert r.status == 200 and r.headers.get("content-type") == "application/connect+json", r
    env = envelopes(r.body)
    assert len(env) == 1 and env[0][0] == 0x02, env
    err = env[0][1].get("error")
    assert err and err.get("message"), env
    return err["code"]


def test_connect_stream_with_a_bad_envelope(server, pair):
    a = pair[0]
    start = {"process": {"cmd": "/bin/echo", "args": ["hello", "envelope"]}}
    good = envelope(start)
    r = a.stream("/process.Process/Start", good)
    env = envelopes(r.body)
    assert r.status == 200 and env[-1][0] == 0x02 and "error" not in env[-1][1], env
    out = b"".join(base64.b64decode(e["event"]["data"]["stdout"]) for f, e in env
                   if f == 0 and "data" in e.get("event", {}) and "stdout" in e["event"]["data"])
    assert out == b"hello envelope\n", env
    n = len(good) - 5
    bad = {
        "empty": b"",
        "short prefix": b"\x00\x00\x00",
        "length one more": good[:1] + (n + 1).to_bytes(4, "big") + good[5:],
        "length one less": good[:1] + (n - 1).to_bytes(4, "big") + good[5:],
        "length huge": good[:1] + b"\xff\xff\xff\xff" + good[5:],
        "compressed flag": b"\x01" + good[1:],
        "end-stream flag": b"\x02" + good[1:],
        "two envelopes": good + good,
        "not JSON": b"\x00\x00\x00\x00\x03abc",
        "a JSON array": envelope([start]),
        "bare JSON": json.dumps(start).encode(),
    }
    for name, body in bad.items():
        r = a.stream("/process.Process/Start", body)
        assert stream_error(r) == "invalid_argument", (name, r)
    # a stream that is not connect+json is refused before it starts
    r = a.stream("/process.Process/Start", good, content_type="application/json")
    connect_error(r, 400, "invalid_argument")


def test_pty_shapes(server, pair):
    """Start's `pty` and Update's, malformed and well formed, on the wire."""
    a = pair[0]

    def start(pty):
        proc = {"cmd": "/bin/bash", "args": ["-c", "stty size; tty"]}
        return a.stream("/process.Process/Start", envelope({"process": proc, "pty": pty}))

    for bad in ({"size": {"cols": -1, "rows": 2}}, {"size": {"cols": 5000, "rows": 24}},
                {"size": "80x24"}, "pty", [1]):
        assert stream_error(start(bad)) == "invalid_argument", bad
    env = envelopes(start({}).body)  # no size: envd's 80 x 24
    events = [e["event"] for f, e in env if f == 0]
    assert events[0]["start"]["pid"] > 0, env
    out = b"".join(base64.b64decode(e["data"]["pty"]) for e in events if "data" in e)
    assert re.fullmatch(rb"24 80\r\n/dev/pts/\d+\r\n", out), env
    assert all(set(e["data"]) == {"pty"} for e in events if "data" in e), env
    assert events[-1]["end"]["exited"] is True and events[-1]["end"].get("exitCode", 0) == 0, env
    assert env[-1][0] == 0x02 and "error" not in env[-1][1], env
    size = {"size": {"cols": 10, "rows": 10}}
    r = a.rpc("/process.Process/Update", {"process": {"pid": 999999}, "pty": size})
    connect_error(r, 404, "not_found")
    for bad in ({"size": {"cols": "x", "rows": 1}}, {"size": [10, 10]}, 5):
        r = a.rpc("/process.Process/Update", {"process": {"pid": 999999}, "pty": bad})
        connect_error(r, 400, "invalid_argument")
    r = a.rpc("/process.Process/SendInput", {"process": {"pid": 999999}, "input": {"pty": "!!"}})
    connect_error(r, 400, "invalid_argument")


def test_connect_unary_with_bad_json(server, pair):
    a = pair[0]
    for body in (b'{"path":', b"[1]", b'"/"', b"\xff", b'{"path": "/", "path": "/tmp"}', b"{}}"):
        r = a.rpc("/filesystem.Filesystem/Stat", body)
        connect_error(r, 400, "invalid_argument")
    connect_error(a.rpc("/filesystem.Filesystem/Stat", {"path": 5}), 400, "invalid_argument")
    connect_error(a.rpc("/filesystem.Filesystem/ListDir", {"path": "/", "depth": "x"}), 400,
                  "invalid_argument")
    r = a.rpc("/filesystem.Filesystem/Stat", {"path": "/"}, headers={"Content-Type": "text/plain"})
    connect_error(r, 400, "invalid_argument")
    connect_error(a.rpc("/filesystem.Filesystem/Nope", {}), 501, "unimplemented")
    e2b_error(server.request("GET", "/filesystem.Filesystem/Stat", a.headers()), 405)
    # envd's user: Basic base64("<user>:"), else refused
    for auth in ("Basic !!!", "Basic " + base64.b64encode(b"ro ot:").decode(),
                 "Basic " + base64.b64encode(b"a" * 40 + b":").decode(), "Bearer x"):
        r = a.rpc("/filesystem.Filesystem/Stat", {"path": "/"}, headers={"Authorization": auth})
        connect_error(r, 401, "unauthenticated")
    r = a.rpc("/filesystem.Filesystem/Stat", {"path": "/"},
              headers={"Authorization": "Basic " + base64.b64encode(b"root:").decode()})
    assert r.status == 200, r
    # over the JSON limit
    e2b_error(a.rpc("/filesystem.Filesystem/Stat", b'{"path": "' + b"a" * JSON_MAX + b'"}'), 413)


# --- /files -------------------------------------------------------------------------------

def multipart(boundary, parts, close=True):
    out = b""
    for headers, data in parts:
        out += b"--" + boundary + b"\r\n" + b"".join(h + b"\r\n" for h in headers) + b"\r\n" + data + b"\r\n"
    return out + (b"--" + boundary + b"--\r\n" if close else b"")


def disposition(filename, name=b"file"):
    return b'Content-Disposition: form-data; name="' + name + b'"; filename="' + filename + b'"'


def test_multipart_uploads_that_work(server, pair):
    """What the refusals below are measured against: E2B's SDKs' uploads."""
    a = pair[0]
    d = f"/home/user/http-{secrets.token_hex(3)}"
    bnd = b"----formdata-undici-0" + secrets.token_hex(6).encode()
    # one file, full path in the filename, ?path given (JS/Python write())
    r = a.upload(f"?path={d}/one.txt&username=user", multipart(
        bnd, [([disposition(f"{d}/one.txt".encode()), b"Content-Type: application/octet-stream"],
               b"one\r\n--not-the-boundary\r\n")]), f"multipart/form-data; boundary={bnd.decode()}")
    assert r.status == 200 and r.json()[0]["path"] == f"{d}/one.txt", r
    assert a.read(f"{d}/one.txt").body == b"one\r\n--not-the-boundary\r\n"
    # several files, no ?path: each part's raw filename, directories and all
    r = a.upload("", multipart(bnd, [([disposition(f"{d}/sub/two.txt".encode())], b"two"),
                                     ([b'Content-Disposition: form-data; name="other"'], b"ignored"),
                                     ([disposition(f"{d}/three.bin".encode())], bytes(range(256)))]),
                 f'multipart/form-data; boundary="{bnd.decode()}"')
    assert r.status == 200 and [e["path"] for e in r.json()] == [f"{d}/sub/two.txt", f"{d}/three.bin"], r
    assert a.read(f"{d}/sub/two.txt").body == b"two"
    assert a.read(f"{d}/three.bin").body == bytes(range(256))
    # a quoted filename with an escaped quote (Go's and httpx's escaping)
    r = a.upload("", multipart(bnd, [([b'Content-Disposition: form-data; name="file"; filename="'
                                        + f"{d}/q\\\"x.txt".encode() + b'"'], b"quoted")]),
                 f"multipart/form-data; boundary={bnd.decode()}")
    assert r.status == 200 and r.json()[0]["path"] == f'{d}/q"x.txt', r
    assert a.read(f'{d}/q"x.txt').body == b"quoted"


def test_multipart_uploads_refused(server, pair):
    a = pair[0]
    d = f"/home/user/http-bad-{secrets.token_hex(3)}"
    bnd = b"b0undary"
    ct = "multipart/form-data; boundary=b0undary"
    ok = multipart(bnd, [([disposition(f"{d}/f".encode())], b"data")])
    cases = {
        "no boundary": (ok, "multipart/form-data"),
        "empty boundary": (ok, 'multipart/form-data; boundary=""'),
        "boundary over 70": (multipart(b"b" * 71, [([disposition(b"/tmp/x")], b"x")]),
                             "multipart/form-data; boundary=" + "b" * 71),
        "truncated": (ok[:-12], ct),
        "no closing delimiter": (multipart(bnd, [([disposition(f"{d}/f".encode())], b"data")], close=False), ct),
        "another boundary": (ok, "multipart/form-data; boundary=other"),
        "headers over 8 KiB": (multipart(bnd, [([disposition(f"{d}/f".encode()),
                                                 b"X-Pad: " + b"p" * 8300], b"data")]), ct),
        "no Content-Disposition": (multipart(bnd, [([b"Content-Type: text/plain"], b"data")]), ct),
        "not form-data": (multipart(bnd, [([b'Content-Disposition: attachment; filename="/tmp/x"'], b"x")]), ct),
        "unterminated quote": (multipart(bnd, [([b'Content-Disposition: form-data; name="file"; filename="/tmp/x'],
                                                 b"x")]), ct),
        "no file part": (multipart(bnd, [([b'Content-Disposition: form-data; name="other"'], b"x")]), ct),
        "file without a filename": (multipart(bnd, [([b'Content-Disposition: form-data; name="file"'], b"x")]), ct),
        "only a closing delimiter": (b"--b0undary--\r\n", ct),
        "empty body": (b"", ct),
        "1001 parts": (multipart(bnd, [([b'Content-Disposition: form-data; name="f"'], b"")] * 1001), ct),
        "no CRLF after a delimiter": (b"--b0undaryXX" + ok[10:], ct),
    }
    for name, (body, ctype) in cases.items():
        r = a.upload("", body, ctype)
        e2b_error(r, 400)
    # none of them wrote the file
    r = a.read(f"{d}/f")
    e2b_error(r, 404)


def test_octet_stream_and_gzip_uploads(server, pair):
    a = pair[0]
    p = f"/home/user/http-raw-{secrets.token_hex(3)}"
    oct_ = "application/octet-stream"
    e2b_error(a.upload("", b"data", oct_), 400)
    e2b_error(a.upload("?path=", b"data", oct_), 400)
    e2b_error(a.upload("", b"", oct_), 400)
    r = a.upload(f"?path={p}.txt", b"plain", oct_)
    assert r.status == 200 and a.read(f"{p}.txt").body == b"plain", r
    gz = {"Content-Encoding": "gzip"}
    r = a.upload(f"?path={p}.gz.txt", gzip.compress(b"zipped " * 1000), oct_, extra=gz)
    assert r.status == 200 and a.read(f"{p}.gz.txt").body == b"zipped " * 1000, r
    e2b_error(a.upload(f"?path={p}.bad", b"this is not gzip at all", oct_, extra=gz), 400)
    corrupt = bytearray(gzip.compress(os.urandom(4096)))
    corrupt[20:40] = b"\xff" * 20
    e2b_error(a.upload(f"?path={p}.bad", bytes(corrupt), oct_, extra=gz), 400)
    bnd = "zz"
    r = a.upload("", gzip.compress(multipart(bnd.encode(), [([disposition(f"{p}.mp".encode())], b"m")])),
                 f"multipart/form-data; boundary={bnd}", extra=gz)
    assert r.status == 200 and a.read(f"{p}.mp").body == b"m", r
    e2b_error(a.upload("", b"garbage", f"multipart/form-data; boundary={bnd}", extra=gz), 400)
    r = a.upload(f"?path={p}.br", b"x", oct_, extra={"Content-Encoding": "br"})
    e2b_error(r, 415)
    r = a.read(f"{p}.bad")
    e2b_error(r, 404)


def run_in(sbx, cmd):
    """A shell command as the sandbox user through envd's process.Start: its stdout."""
    r = sbx.stream("/process.Process/Start",
                   envelope({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}))
    assert r.status == 200, r
    return b"".join(base64.b64decode(e["event"]["data"]["stdout"]) for f, e in envelopes(r.body)
                    if f == 0 and "stdout" in e.get("event", {}).get("data", {})).decode()


def test_upload_makes_missing_parents_for_the_user_as_envd(server, pair):
    """E2B's files.write('/0/f') as the user: envd makes the missing /0 (root's /)
    and gives it to the user; a symlink the user planted never leads that root
    mkdir elsewhere."""
    a = pair[0]
    top = f"/envd-parents-{secrets.token_hex(3)}"
    r = a.upload(f"?path={top}/a/b/f.txt", b"deep", "application/octet-stream")
    assert r.status == 200, r
    assert a.read(f"{top}/a/b/f.txt").body == b"deep"
    owners = run_in(a, f"stat -c '%U %a' {top} {top}/a {top}/a/b {top}/a/b/f.txt")
    assert owners.split("\n")[:4] == ["user 755"] * 3 + ["user 644"], owners
    r = a.rpc("/filesystem.Filesystem/MakeDir", {"path": f"{top}-dir/x"})
    assert r.status == 200, r
    assert run_in(a, f"stat -c %U {top}-dir {top}-dir/x").split() == ["user", "user"]
    # The user's link to /etc: writing through it is the user's own EACCES, nothing in /etc.
    name = f"planted-{secrets.token_hex(3)}"
    run_in(a, f"ln -s /etc /home/user/{name}")
    r = a.upload(f"?path=/home/user/{name}/{name}/f", b"x", "application/octet-stream")
    assert r.status in (400, 403), r
    assert run_in(a, f"ls -d /etc/{name} 2>&1 || echo absent").strip().endswith("absent")
    # Where the user may write already, nothing changes: their own directories.
    r = a.upload(f"?path=/home/user/{name}-own/f", b"y", "application/octet-stream")
    assert r.status == 200, r


def test_truncated_gzip_upload(server, pair):
    a = pair[0]
    p = f"/home/user/http-cut-{secrets.token_hex(3)}"
    data = os.urandom(20000)
    r = a.upload(f"?path={p}", gzip.compress(data)[:10000], "application/octet-stream",
                 extra={"Content-Encoding": "gzip"})
    e2b_error(r, 400)


def test_files_get_needs_a_path(server, pair):
    a = pair[0]
    e2b_error(server.request("GET", "/files", a.headers()), 400)
    e2b_error(server.request("GET", "/files?path=", a.headers()), 400)
    e2b_error(server.request("PUT", "/files?path=/tmp/x", a.headers(), b"x"), 405)
    e2b_error(a.read("/home/user/no/such/file"), 404)
    e2b_error(a.read("/etc/hostname", token=None), 401)


def test_tilde_paths_and_a_missing_cwd_as_envd(server, pair):
    """envd expands "~" and "~/x" to the user's home and refuses "~name"
    (internal/permissions/path.go); a missing cwd is its invalid argument
    "cwd '<path>' does not exist" (process/handler/handler.go), not a failed start."""
    a = pair[0]
    n = secrets.token_hex(3)
    home = "/home/user"
    r = a.upload(f"?path=~/http-tilde-{n}.txt", b"t", "application/octet-stream")
    assert r.status == 200 and r.json()[0]["path"] == f"{home}/http-tilde-{n}.txt", r
    assert a.read(f"~/http-tilde-{n}.txt").body == b"t"
    r = a.rpc("/filesystem.Filesystem/Stat", {"path": f"~/http-tilde-{n}.txt"})
    assert r.status == 200 and r.json()["entry"]["path"] == f"{home}/http-tilde-{n}.txt", r
    r = a.rpc("/filesystem.Filesystem/ListDir", {"path": "~"})
    assert r.status == 200 and f"{home}/http-tilde-{n}.txt" in [e["path"] for e in r.json()["entries"]], r
    r = a.rpc("/filesystem.Filesystem/MakeDir", {"path": f"~/http-made-{n}"})
    assert r.status == 200 and r.json()["entry"]["path"] == f"{home}/http-made-{n}", r
    r = a.rpc("/filesystem.Filesystem/MakeDir", {"path": f"~/http-made-{n}"})
    assert connect_error(r, 409, "already_exists") == f"directory already exists: {home}/http-made-{n}"
    r = a.rpc("/filesystem.Filesystem/Move", {"source": f"~/http-tilde-{n}.txt",
                                               "destination": f"~/http-made-{n}/moved.txt"})
    assert r.status == 200 and r.json()["entry"]["path"] == f"{home}/http-made-{n}/moved.txt", r
    assert run_in(a, f"ls {home}/http-made-{n}; test -e '{home}/~' || echo no-tilde-dir") \
        == "moved.txt\nno-tilde-dir\n"
    # An upload onto a directory: envd's 400 and words (api/upload.go processFile).
    r = a.upload(f"?path=~/http-made-{n}", b"t", "application/octet-stream")
    assert e2b_error(r, 400) == f"path is a directory: {home}/http-made-{n}"
    r = a.rpc("/filesystem.Filesystem/Remove", {"path": f"~/http-made-{n}"})
    assert r.status == 200, r
    refused = "failed to expand path '~other/x' for user 'user': cannot expand user-specific home dir"
    assert connect_error(a.rpc("/filesystem.Filesystem/Stat", {"path": "~other/x"}), 400,
                         "invalid_argument") == refused
    assert e2b_error(a.read("~other/x"), 400).endswith(refused)

    def start(cwd):
        return a.stream("/process.Process/Start",
                        envelope({"process": {"cmd": "/bin/bash", "args": ["-c", "pwd"], "cwd": cwd}}))

    out = [e for f, e in envelopes(start("~").body) if f == 0 and "stdout" in e["event"].get("data", {})]
    assert base64.b64decode(out[0]["event"]["data"]["stdout"]) == f"{home}\n".encode(), out
    for cwd, msg in (("/no/such/dir", "cwd '/no/such/dir' does not exist"),
                     (f"~/nope-{n}", f"cwd '{home}/nope-{n}' does not exist"),
                     ("~root", "failed to expand path '~root' for user 'user': "
                               "cannot expand user-specific home dir")):
        r = start(cwd)
        assert stream_error(r) == "invalid_argument", (cwd, r)
        assert envelopes(r.body)[0][1]["error"]["message"] == msg, (cwd, r)


# --- signed URLs ---------------------------------------------------------------------------

def sign(path, op, user, token, expiration=None):
    raw = f"{path}:{op}:{user}:{token}" + (f":{expiration}" if expiration is not None else "")
    return "v1_" + base64.b64encode(hashlib.sha256(raw.encode()).digest()).decode().rstrip("=")


def test_signed_urls(server, pair):
    a, b = pair
    path = f"/home/user/signed-{secrets.token_hex(3)}.txt"
    r = a.upload(f"?path={urllib.parse.quote(path)}", b"signed content", "application/octet-stream")
    assert r.status == 200, r

    def get(query, with_id=True):
        return server.request("GET", "/files?" + urllib.parse.urlencode(query),
                              a.headers(token=False) if with_id else {})

    exp = int(time.time()) + 600
    good = {"path": path, "username": "user", "signature": sign(path, "read", "user", a.token, exp),
            "signature_expiration": exp}
    for with_id in (True, False):
        r = get(good, with_id)
        assert r.status == 200 and r.body == b"signed content", (with_id, r)
    r = get({"path": path, "username": "user", "signature": sign(path, "read", "user", a.token)})
    assert r.status == 200 and r.body == b"signed content", r

    sig = good["signature"]
    tampered = sig[:-1] + ("A" if sig[-1] != "A" else "B")
    past = int(time.time()) - 10
    refused = {
        "tampered": dict(good, signature=tampered),
        "tampered, no id": (dict(good, signature=tampered), False),
        "another path": dict(good, path=path + "x"),
        "another user": dict(good, username="root"),
        "no user": {k: v for k, v in good.items() if k != "username"},
        "expiration moved": dict(good, signature_expiration=exp + 1),
        "expired": dict(good, signature_expiration=past,
                        signature=sign(path, "read", "user", a.token, past)),
        "expired, no id": (dict(good, signature_expiration=past,
                                signature=sign(path, "read", "user", a.token, past)), False),
        "expiration not a number": dict(good, signature_expiration="soon",
                                        signature=sign(path, "read", "user", a.token, "soon")),
        "the other sandbox's token": dict(good, signature=sign(path, "read", "user", b.token, exp)),
        "a write signature": dict(good, signature=sign(path, "write", "user", a.token, exp)),
        "no signature": {"path": path},
        "padded": dict(good, signature=sig + "="),
        "v2": dict(good, signature="v2_" + sig[3:]),
    }
    for name, q in refused.items():
        q, with_id = q if isinstance(q, tuple) else (q, True)
        r = get(q, with_id)
        assert r.status == 401, (name, r)
        e2b_error(r, 401)
    # the other sandbox's id with a's signature
    r = server.request("GET", "/files?" + urllib.parse.urlencode(good), b.headers(token=False))
    e2b_error(r, 401)

    # a signed upload: write, not read
    wpath = path + ".up"
    wsig = sign(wpath, "write", "user", a.token, exp)
    q = urllib.parse.urlencode({"path": wpath, "username": "user", "signature": wsig,
                                "signature_expiration": exp})
    r = server.request("POST", "/files?" + q, {"Content-Type": "application/octet-stream"}, b"up")
    assert r.status == 200, r
    assert a.read(wpath).body == b"up"
    rq = urllib.parse.urlencode({"path": wpath, "username": "user",
                                 "signature": sign(wpath, "read", "user", a.token, exp),
                                 "signature_expiration": exp})
    e2b_error(server.request("POST", "/files?" + rq, {"Content-Type": "application/octet-stream"},
                             b"nope"), 401)
    assert a.read(wpath).body == b"up"


# --- the interpreter's bodies ------------------------------------------------------------

def test_execute_refuses_bad_bodies(server, pair):
    a = pair[0]
    h = a.headers(INTERP, **{"Content-Type": "application/json"})
    for body in (b"{", b"[]", b"{}", b'{"code": 1}', b'{"code": null}',
                 b'{"code": "1", "context_id": "x", "language": "python"}',
                 b'{"code": "1", "env_vars": []}', b'{"code": "1", "env_vars": {"A": 1}}',
                 b'{"code": "1", "context_id": 7}'):
        e2b_error(server.request("POST", "/execute", h, body), 400)
    e2b_error(server.request("GET", "/execute", h), 405)
    e2b_error(server.request("POST", "/contexts", h, b'{"language": 5}'), 400)
    e2b_error(server.request("POST", "/contexts", h, b"[1]"), 400)
    r = server.request("POST", "/execute", h, b'{"code": "6 * 7"}')
    assert r.status == 200, r
    lines = [json.loads(x) for x in r.body.splitlines() if x.strip()]
    assert any(x.get("type") == "result" and x.get("text") == "42" for x in lines), lines
    assert lines[-1] == {"type": "end_of_execution"}, lines


def test_execute_sends_integers_of_any_size_as_json_numbers(server, pair):
    """The executor sends ints beyond 64 bits as CBOR bignums; /execute writes
    them as JSON numbers: exact within 64 bits, else the nearest double (what
    E2B's JavaScript SDK makes of any long integer). (A _repr_json_'s: E2B's
    orjson refuses them in a plain dict, which then has no JSON.)"""
    a = pair[0]
    h = a.headers(INTERP, **{"Content-Type": "application/json"})
    code = ("class J:\n    def _repr_json_(self):\n"
            "        return {'max': 2**63 - 1, 'min': -2**63, 'u64': 2**64 - 1, 'big': 2**70, 'neg': -2**70, 'n': 30}\n"
            "    def __repr__(self):\n        return repr(self._repr_json_())\nJ()")
    r = server.request("POST", "/execute", h, json.dumps({"code": code}).encode(), timeout=120)
    assert r.status == 200, r
    lines = [json.loads(x) for x in r.body.splitlines() if x.strip()]
    result = next(x for x in lines if x.get("type") == "result")
    assert result["json"] == {"max": 2**63 - 1, "min": -2**63, "u64": float(2**64 - 1),
                              "big": float(2**70), "neg": float(-2**70), "n": 30}, result
    assert "2**70" not in result["text"] and "1180591620717411303424" in result["text"], result


# --- metrics ------------------------------------------------------------------------------

def metrics(server, sbx, query=""):
    r = server.api("GET", f"/sandboxes/{sbx.id}/metrics{query}")
    assert r.status == 200, r
    return r.json()


def wait_metrics(server, sbx, after_s, timeout=60):
    """The samples taken at or after `after_s` (unix seconds), once there is one."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = metrics(server, sbx, f"?start={after_s}")
        if got:
            return got
        time.sleep(0.5)
    pytest.fail(f"no metrics sample of {sbx.id} after {after_s} within {timeout} s")


def test_metrics_follow_the_guest(server, pair):
    """GET /sandboxes/{id}/metrics: E2B's SandboxMetric samples, read in the guest
    (SYS_STATS): memory, page cache, disk and CPU move when a cell uses them."""
    a = pair[0]
    first = wait_metrics(server, a, 0)[-1]
    for key, kind in (("timestamp", str), ("timestampUnix", int), ("cpuCount", int),
                      ("cpuUsedPct", (int, float)), ("memUsed", int), ("memTotal", int),
                      ("memCache", int), ("diskUsed", int), ("diskTotal", int)):
        assert isinstance(first[key], kind), (key, first)
    assert first["cpuCount"] >= 1 and 0 <= first["cpuUsedPct"] <= 100, first
    assert 0 < first["memUsed"] < first["memTotal"] and 0 < first["diskUsed"] < first["diskTotal"]
    # 128 MiB held in the cell's namespace, 64 MiB written under / (the overlay's upper
    # layer: what `df /` counts in the guest), 4 s of a busy CPU.
    code = ("import os, time\nheld = bytearray(128 << 20)\nfor i in range(0, len(held), 4096): held[i] = 1\n"
            "with open('/home/user/m.bin', 'wb') as f:\n    f.write(os.urandom(64 << 20)); f.flush(); os.fsync(f.fileno())\n"
            "t = time.time()\nwhile time.time() - t < 4: pass\n")
    h = a.headers(INTERP, **{"Content-Type": "application/json"})
    before = int(time.time())
    r = server.request("POST", "/execute", h, json.dumps({"code": code}).encode(), timeout=120)
    assert r.status == 200 and b'"error"' not in r.body, r
    # The last sample must come from after the cell: one taken during its
    # write (slow under load) would see part of the file.
    last = wait_metrics(server, a, int(time.time()) + 1)[-1]
    after = wait_metrics(server, a, before)
    busy = max(m["cpuUsedPct"] for m in after)
    assert last["memUsed"] - first["memUsed"] > 100 << 20, (first, last)
    assert last["diskUsed"] - first["diskUsed"] > 48 << 20, (first, last)
    assert busy > 20, after
    assert all(m["timestampUnix"] >= before for m in after)
    # A window before the sandbox existed has none; bad bounds are a 400.
    assert metrics(server, a, f"?start=1000&end={before - 3600}") == []
    e2b_error(server.api("GET", f"/sandboxes/{a.id}/metrics?start=x"), 400)
    e2b_error(server.api("GET", f"/sandboxes/{a.id}/metrics?end=-5"), 400)
    server.request("POST", "/execute", h, b'{"code": "del held; os.remove(\'/home/user/m.bin\')"}')


# --- HTTP itself -----------------------------------------------------------------------------

def raw(server, data, timeout=20):
    """Sends `data` on a connection of its own; the status of what comes back
    (None when the connection closed without an answer)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as s:
        try:
            s.sendall(data)
        except OSError:
            pass  # the server may close before reading it all
        got = b""
        try:
            while b"\r\n" not in got:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except ConnectionResetError:
            pass
    if not got.startswith(b"HTTP/1."):
        return None
    return int(got.split(b" ", 2)[1])


def test_headers_over_the_connection_memory(server):
    big = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 100000 + b"\r\n\r\n"
    status = raw(server, big)
    assert status is not None and 400 <= status < 600, status
    many = b"GET /sandboxes HTTP/1.1\r\nHost: x\r\n" + b"".join(
        b"X-H%d: %s\r\n" % (i, b"v" * 40) for i in range(3000)) + b"\r\n"
    status = raw(server, many)
    assert status is not None and 400 <= status < 600, status
    url = b"GET /sandboxes/" + b"u" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    status = raw(server, url)
    assert status is not None and 400 <= status < 600, status


def test_garbage_request_lines(server):
    """libmicrohttpd answers these itself (HTML bodies), or closes."""
    for data in (b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                 b"POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
                 b"POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
                 b"POST /sandboxes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"):
        status = raw(server, data)
        assert status is None or 400 <= status < 600, (data, status)
    # a request line with NUL bytes is neither answered nor closed (libmicrohttpd
    # waits for more until its timeout): the server goes on meanwhile
    with socket.create_connection(("127.0.0.1", server.port), timeout=3) as s:
        s.sendall(b"\x00\x01\x02\r\n\r\n")
        assert server.health().status == 200


def test_slow_clients_are_dropped(server):
    """Last in the module: the connections stalled at its start were closed
    by the server after its --client-timeout, whatever ran between."""
    if not SLOW:
        stall(server)
    t0 = SLOW["t0"]
    for t in SLOW["threads"]:
        t.join(max(0.1, t0 + MHD_TIMEOUT + 10 - time.monotonic()))
    for s in SLOW["socks"]:
        s.close()
    for seen in SLOW["seen"]:
        assert "at" in seen and seen["data"] is not None, \
            f"a stalled connection was still open {time.monotonic() - t0:.0f} s later"
        # closed, or answered with an error (408) before closing
        assert seen["data"] == b"" or seen["data"].startswith(b"HTTP/1.1 4"), seen
        after = seen["at"] - t0
        assert MHD_TIMEOUT - 5 <= after <= MHD_TIMEOUT + 10, f"dropped after {after:.0f} s"


# --- control plane: template aliases and a sandbox's network (E2B's SDKs, frameworks) -

def test_template_aliases(server, pair):
    """GET /templates/aliases/{alias}, as E2B's Template.exists asks it (404:
    false, 200 and 403: true). The image's names are E2B's public templates,
    owned by E2B's team: 403, as E2B answers its `base`; a snapshot this
    server keeps is the caller's own: 200 with TemplateAliasResponse."""
    for alias in ("base", "code-interpreter-v1", "base:default"):
        msg = e2b_error(server.api("GET", f"/templates/aliases/{alias}"), 403)
        assert msg == "You don't have access to this template alias", msg
    for alias in ("nosuch-" + secrets.token_hex(4), "nosuch:default", "a%2Fb"):
        msg = e2b_error(server.api("GET", f"/templates/aliases/{alias}"), 404)
        assert "not found" in msg, msg
    e2b_error(server.api("GET", "/templates/aliases/base", key=False), 401)
    e2b_error(server.api("POST", "/templates/aliases/base", {}), 405)
    # a kept snapshot's name is an alias of the caller's own, until it is deleted
    name = "alias-" + secrets.token_hex(4)
    r = server.api("POST", f"/sandboxes/{pair[0].id}/snapshots", {"name": name}, timeout=120)
    assert r.status == 201, r
    try:
        for alias in (name, f"{name}:default"):
            r = server.api("GET", f"/templates/aliases/{alias}")
            assert r.status == 200, r
            body = r.json()
            assert set(body) == {"templateID", "public"} and body["public"] is False, body
            assert isinstance(body["templateID"], str) and body["templateID"], body
        e2b_error(server.api("GET", f"/templates/aliases/{name}:v2"), 404)
    finally:
        r = server.api("DELETE", f"/templates/{name}")
        assert r.status == 204, r
    e2b_error(server.api("GET", f"/templates/aliases/{name}"), 404)


def test_sandbox_detail_shows_its_network(server, pair):
    """E2B's SandboxDetail `network` (and `allowInternetAccess`) as the create
    gave them, the egress proxy's password left out, the egress fields
    replaced by a PUT .../network, kept across a pause; absent when the
    create gave none, and never in the list (ListedSandbox has no network). A
    long maskRequestHost makes the paused record's serve.json (the rules and
    what GET shows, each with it) larger than 256 KiB: the resume keeps it
    whole, the access token too."""
    for path in (f"/sandboxes/{pair[0].id}", f"/v2/sandboxes/{pair[0].id}"):
        r = server.api("GET", path)
        assert r.status == 200, r
        assert "network" not in r.json() and "allowInternetAccess" not in r.json(), r
    mask = "m" * 300_000 + ".localhost:${PORT}"
    network = {"allowOut": ["example.com", "8.8.8.8/32"], "denyOut": ["0.0.0.0/0"],
               "rules": {}, "allowPublicTraffic": True, "maskRequestHost": mask,
               "egressProxy": {"address": "proxy.example.com:1080", "username": "u",
                               "password": "secret"}}
    r = server.api("POST", "/sandboxes", {"templateID": "base", "timeout": 300,
                                          "network": network, "allow_internet_access": True})
    assert r.status == 201, r
    sid, token = r.json()["sandboxID"], r.json()["envdAccessToken"]
    shown = dict(network, egressProxy={"address": "proxy.example.com:1080", "username": "u"})
    try:
        for path in (f"/sandboxes/{sid}", f"/v2/sandboxes/{sid}"):
            r = server.api("GET", path)
            assert r.status == 200, r
            assert r.json()["network"] == shown and r.json()["allowInternetAccess"] is True, r
        r = server.api("GET", "/sandboxes")
        assert r.status == 200, r
        mine = [x for x in r.json() if x["sandboxID"] == sid]
        assert len(mine) == 1 and "network" not in mine[0], mine
        # an update replaces the egress fields and keeps the ingress ones
        r = server.api("PUT", f"/sandboxes/{sid}/network", {"allowOut": ["1.1.1.1"]})
        assert r.status == 204, r
        shown = {"allowOut": ["1.1.1.1"], "allowPublicTraffic": True, "maskRequestHost": mask}
        r = server.api("GET", f"/sandboxes/{sid}")
        assert r.json()["network"] == shown and r.json()["allowInternetAccess"] is True, r
        # kept across a pause: the paused one shows it, and the resumed one
        r = server.api("POST", f"/sandboxes/{sid}/pause", timeout=120)
        assert r.status == 204, r
        r = server.api("GET", f"/sandboxes/{sid}")
        assert r.status == 200 and r.json()["state"] == "paused", r
        assert r.json()["network"] == shown and r.json()["allowInternetAccess"] is True, r
        r = server.api("POST", f"/sandboxes/{sid}/connect", {"timeout": 300}, timeout=120)
        assert r.status == 201, r
        r = server.api("GET", f"/sandboxes/{sid}")
        assert r.status == 200 and r.json()["state"] == "running", r
        assert r.json()["network"] == shown and r.json()["allowInternetAccess"] is True, r
        assert r.json()["envdAccessToken"] == token, r
    finally:
        r = server.api("DELETE", f"/sandboxes/{sid}")
        assert r.status == 204, r
