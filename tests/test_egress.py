"""Egress by policy through `cellvm serve` (docs/NETWORK.md), in a real micro-VM:
a sandbox created with E2B's `network` rules reaches, through the guest's
proxy and the host's decision, the loopback servers this module starts and
names in $CELLVM_HOSTS, and nothing else.

One server (with a pool of one, so creates take warmed clones) and one
sandbox serve the cases of rules, which are allowOut ["allowed.test"],
denyOut ["denied.test", "192.0.2.0/24"]; a second sandbox, created without
rules, those of a sandbox that has none yet.
"""

import base64
import hashlib
import http.server
import io
import json
import os
import ssl
import subprocess
import sys
import threading
import urllib.request
import zipfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import http_direct  # noqa: E402
import serve_process  # noqa: E402
from conftest import build_image_or_skip  # noqa: E402

ENVD = 49983
SDK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "serve_sdk")
RULES = {"allowOut": ["allowed.test"], "denyOut": ["denied.test", "192.0.2.0/24"]}
HOSTS = ("127.0.0.1 allowed.test denied.test internal.test\n"
         "192.0.2.10 cidr.test\n")
PKG = "egressprobe"


def make_wheel():
    """A pure-Python wheel of PKG 1.0: (file name, bytes)."""
    name = f"{PKG}-1.0-py3-none-any.whl"
    files = {
        f"{PKG}/__init__.py": b"VALUE = 'installed through the egress proxy'\n",
        f"{PKG}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {PKG}\nVersion: 1.0\n".encode(),
        f"{PKG}-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{PKG}-1.0.dist-info/RECORD,,")
    files[f"{PKG}-1.0.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return name, out.getvalue()


class Origin(http.server.BaseHTTPRequestHandler):
    """The allowed host: /hello, and a PEP 503 index with one wheel."""
    wheel_name, wheel = make_wheel()
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        kind = "text/plain"
        if self.path == "/hello":
            body = f"hello from the origin, Host {self.headers.get('Host')}".encode()
        elif self.path.rstrip("/") == f"/simple/{PKG}":
            body = f'<a href="/wheels/{self.wheel_name}">{self.wheel_name}</a>'.encode()
            kind = "text/html"
        elif self.path == f"/wheels/{self.wheel_name}":
            body, kind = self.wheel, "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def start(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(scope="module")
def origins(tmp_path_factory):
    d = tmp_path_factory.mktemp("egress-origin")
    plain = start(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin))
    key, cert = str(d / "key.pem"), str(d / "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=allowed.test",
                    "-addext", "subjectAltName=DNS:allowed.test"],
                   check=True, capture_output=True)
    tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Origin)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
    start(tls)
    hosts = d / "hosts"
    hosts.write_text(HOSTS)
    yield {"http": plain.server_address[1], "https": tls.server_address[1], "hosts": str(hosts)}
    plain.shutdown()
    tls.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory, origins):
    build_image_or_skip()
    yield from serve_process.serving(str(tmp_path_factory.mktemp("serve-egress")),
                                     extra_args=["--pool", "1"],
                                     env_extra={"CELLVM_HOSTS": origins["hosts"]})


def api(server, method, path, body=None):
    return http_direct.request(server.url + path, method=method,
                               data=None if body is None else json.dumps(body).encode(),
                               headers={"X-API-Key": server.key,
                                        "Content-Type": "application/json"})


def envelope(obj):
    raw = json.dumps(obj).encode()
    return b"\0" + len(raw).to_bytes(4, "big") + raw


def created(server, **create):
    """For a fixture: a sandbox made with `create` in its body, killed after."""
    status, body = api(server, "POST", "/sandboxes", {"templateID": "base", "timeout": 600, **create})
    assert status == 201, body
    info = json.loads(body)
    yield info
    status, body = api(server, "DELETE", f"/sandboxes/{info['sandboxID']}")
    assert status == 204, body


@pytest.fixture(scope="module")
def sbx(server):
    yield from created(server, network=RULES)


@pytest.fixture(scope="module")
def bare(server):
    """A sandbox created without rules (E2B's Python SDK always sends allow_internet_access)."""
    yield from created(server, allow_internet_access=True)


def run(server, sbx, cmd, timeout=120):
    """A shell command in the sandbox (envd's process.Start): (exit code, stdout, stderr)."""
    req = urllib.request.Request(
        server.url + "/process.Process/Start", method="POST",
        data=envelope({"process": {"cmd": "/bin/bash", "args": ["-c", cmd]}}),
        headers={"E2b-Sandbox-Id": sbx["sandboxID"], "E2b-Sandbox-Port": str(ENVD),
                 "X-Access-Token": sbx["envdAccessToken"],
                 "Content-Type": "application/connect+json"})
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with direct.open(req, timeout=timeout) as r:
        raw = r.read()
    out, err, code, i = b"", b"", None, 0
    while i + 5 <= len(raw):
        n = int.from_bytes(raw[i + 1:i + 5], "big")
        msg = json.loads(raw[i + 5:i + 5 + n])
        i += 5 + n
        data = msg.get("event", {}).get("data", {})
        out += base64.b64decode(data.get("stdout", ""))
        err += base64.b64decode(data.get("stderr", ""))
        end = msg.get("event", {}).get("end")
        if end is not None:
            code = end.get("exitCode", 0)
    return code, out.decode(errors="replace"), err.decode(errors="replace")


def curl(server, sbx, url, extra=""):
    """curl through the sandbox's proxy variables: (HTTP status, body)."""
    code, out, err = run(server, sbx, f"curl -sS -k {extra} -o /tmp/body -w '%{{http_code}}' "
                                      f"'{url}'; echo; cat /tmp/body")
    status, _, body = out.partition("\n")
    return status, body


def test_user_processes_get_the_proxy_variables(server, sbx):
    code, out, _ = run(server, sbx, "echo $HTTP_PROXY $https_proxy $NO_PROXY")
    assert out.split() == ["http://127.0.0.1:3128", "http://127.0.0.1:3128",
                           "localhost,127.0.0.1,::1"]


def test_an_allowed_host_answers_curl_over_http_and_https(server, sbx, origins):
    status, body = curl(server, sbx, f"http://allowed.test:{origins['http']}/hello")
    assert status == "200" and body == f"hello from the origin, Host allowed.test:{origins['http']}"
    status, body = curl(server, sbx, f"https://allowed.test:{origins['https']}/hello")
    assert status == "200" and body.startswith("hello from the origin"), body


def test_an_allowed_host_answers_pythons_urllib(server, sbx, origins):
    code, out, err = run(server, sbx, "python3 -c \"import urllib.request; print(urllib.request."
                                      f"urlopen('http://allowed.test:{origins['http']}/hello')"
                                      ".read().decode())\"")
    assert code == 0 and out.startswith("hello from the origin"), err


def test_pip_installs_from_an_allowed_index(server, sbx, origins):
    code, out, err = run(server, sbx,
                         f"pip install --disable-pip-version-check --no-cache-dir --user "
                         f"--index-url http://allowed.test:{origins['http']}/simple "
                         f"--trusted-host allowed.test {PKG} && "
                         f"python3 -c 'import {PKG}; print({PKG}.VALUE)'", timeout=300)
    assert code == 0 and "installed through the egress proxy" in out, out + err


def test_a_denied_host_gets_a_403_naming_the_rule(server, sbx, origins):
    status, body = curl(server, sbx, f"http://denied.test:{origins['http']}/hello")
    assert status == "403" and 'denyOut "denied.test"' in body, body
    # CONNECT is refused before any TLS: curl sees the proxy's 403.
    code, out, err = run(server, sbx, f"curl -sS -k https://denied.test:{origins['https']}/hello")
    assert code != 0 and "403" in err, (out, err)
    assert 'denied.test' in serve_process.tail(server.log_path, 20000)


def test_connect_to_an_allowed_name_with_a_denied_sni_is_refused(server, sbx, origins):
    script = f"""
import socket, ssl
def fetch(sni):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"CONNECT allowed.test:{origins['https']} HTTP/1.1\\r\\nHost: allowed.test\\r\\n\\r\\n")
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 200"), head
    ctx = ssl._create_unverified_context()
    t = ctx.wrap_socket(s, server_hostname=sni)
    t.sendall(b"GET /hello HTTP/1.1\\r\\nHost: allowed.test\\r\\nConnection: close\\r\\n\\r\\n")
    return t.recv(100).split(b"\\r\\n")[0].decode()
print("matching:", fetch("allowed.test"))
try:
    print("denied:", fetch("denied.test"))
except (OSError, ssl.SSLError) as e:
    print("denied: refused", type(e).__name__)
"""
    code, out, err = run(server, sbx, f"python3 - <<'EOF'\n{script}\nEOF")
    assert "matching: HTTP/1.0 200 OK" in out or "matching: HTTP/1.1 200 OK" in out, out + err
    assert "denied: refused" in out, out + err
    assert "names denied.test (SNI)" in serve_process.tail(server.log_path, 20000)


def test_a_name_resolving_to_a_denied_cidr_is_refused(server, sbx, origins):
    status, body = curl(server, sbx, f"http://cidr.test:{origins['http']}/hello")
    assert status == "403" and 'denyOut "192.0.2.0/24" (address 192.0.2.10)' in body, body
    # A name no rule names, resolving to loopback: internal addresses need a rule.
    status, body = curl(server, sbx, f"http://internal.test:{origins['http']}/hello")
    assert status == "403" and "internal address" in body, body
    # An IP literal is checked the same way.
    status, body = curl(server, sbx, f"http://127.0.0.1:{origins['http']}/hello",
                        extra="--noproxy ''")
    assert status == "403" and "internal address" in body, body


def test_no_rule_reaches_the_server_itself(server, sbx):
    # allowed.test is loopback and allowed by name, but not on the server's port.
    status, body = curl(server, sbx, f"http://allowed.test:{server.port}/health")
    assert status == "403" and f"this server's own address (port {server.port})" in body, body


def test_dns_from_the_guest_finds_nothing(server, sbx):
    code, out, err = run(server, sbx, "python3 -c \"import socket\n"
                                      "for n in ('allowed.test', 'example.com'):\n"
                                      "    try: print(n, socket.getaddrinfo(n, 80))\n"
                                      "    except OSError as e: print(n, 'unresolved')\"")
    assert out.split("\n")[:2] == ["allowed.test unresolved", "example.com unresolved"], out + err


def test_a_live_update_flips_a_host_from_denied_to_allowed(server, sbx, origins):
    url = f"http://denied.test:{origins['http']}/hello"
    assert curl(server, sbx, url)[0] == "403"
    flipped = {"allowOut": ["allowed.test", "denied.test"], "denyOut": RULES["denyOut"]}
    status, body = api(server, "PUT", f"/sandboxes/{sbx['sandboxID']}/network", flipped)
    assert status == 204, body
    try:
        status, body = curl(server, sbx, url)
        assert status == "200" and body.startswith("hello from the origin"), body
    finally:
        status, body = api(server, "PUT", f"/sandboxes/{sbx['sandboxID']}/network", RULES)
        assert status == 204, body
    assert curl(server, sbx, url)[0] == "403"


def test_the_npm_sdks_network_options(server, origins):
    node = serve_process.node_with_packages_or_skip(
        SDK_DIR, os.path.join("@e2b", "code-interpreter"), (20, 18, 1), "E2B's npm SDK")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
           "E2B_API_URL": server.url, "E2B_SANDBOX_URL": server.url, "E2B_API_KEY": server.key}
    r = subprocess.run([node, "i_network.mjs", str(origins["http"])], cwd=SDK_DIR, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:] + serve_process.tail(server.log_path)
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["allowed"]["status"] == "200", out
    assert out["denied"] == {"status": "403", "body": f'cellvm: egress to denied.test:{origins["http"]} '
                                                      'refused by denyOut "0.0.0.0/0"\n'}, out
    assert out["deniedAfterUpdate"]["status"] == "200", out


def test_the_rules_come_back_with_a_paused_sandbox(server, sbx, origins):
    flipped = {"allowOut": ["allowed.test", "denied.test"], "denyOut": RULES["denyOut"]}
    status, body = api(server, "PUT", f"/sandboxes/{sbx['sandboxID']}/network", flipped)
    assert status == 204, body
    status, body = api(server, "POST", f"/sandboxes/{sbx['sandboxID']}/pause")
    assert status == 204, body
    status, body = api(server, "POST", f"/sandboxes/{sbx['sandboxID']}/connect", {"timeout": 600})
    assert status in (200, 201), body
    try:
        status, body = curl(server, sbx, f"http://denied.test:{origins['http']}/hello")
        assert status == "200" and body.startswith("hello from the origin"), body
        status, body = curl(server, sbx, f"http://cidr.test:{origins['http']}/hello")
        assert status == "403" and 'denyOut "192.0.2.0/24"' in body, body
    finally:
        status, body = api(server, "PUT", f"/sandboxes/{sbx['sandboxID']}/network", RULES)
        assert status == 204, body


def test_a_sandbox_created_without_rules_refuses_until_a_put_gives_it_some(server, bare, origins):
    sid = bare["sandboxID"]
    code, out, _ = run(server, bare, "echo $HTTP_PROXY $https_proxy $NO_PROXY")
    assert out.split() == ["http://127.0.0.1:3128", "http://127.0.0.1:3128",
                           "localhost,127.0.0.1,::1"]
    url = f"http://allowed.test:{origins['http']}/hello"
    why = (f"the sandbox was created without network rules "
           f"(PUT /sandboxes/{sid}/network gives it some)")
    refused = f"cellvm: egress to allowed.test:{origins['http']} refused: {why}\n"
    assert curl(server, bare, url) == ("403", refused)
    assert (f"sandbox {sid}: egress to allowed.test:{origins['http']} refused: {why}"
            in serve_process.tail(server.log_path, 20000))
    # It has still none after a pause: the record keeps no rules, and the resume starts its egress.
    status, body = api(server, "POST", f"/sandboxes/{sid}/pause")
    assert status == 204, body
    status, body = api(server, "POST", f"/sandboxes/{sid}/connect", {"timeout": 600})
    assert status in (200, 201), body
    assert curl(server, bare, url) == ("403", refused)
    # `cellvm egress` (the Python SDK's update) leaves serve's sandboxes to serve.
    r = subprocess.run([os.path.join(serve_process.BUILD, "cellvm"), "egress", sid,
                        '{"allowOut": ["allowed.test"]}'], capture_output=True, text=True,
                       timeout=60, env=dict(os.environ, CELLVM_RUNTIME_DIR=server.run))
    assert r.returncode == 3 and "not a sandbox of cellvm create" in r.stderr, r.stderr
    status, body = api(server, "PUT", f"/sandboxes/{sid}/network", {"allowOut": ["allowed.test"]})
    assert status == 204, body
    status, body = curl(server, bare, url)
    assert status == "200" and body.startswith("hello from the origin"), body
