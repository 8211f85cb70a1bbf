"""A local stand-in for the Kubernetes API paths `cellvm serve --backend
agent-sandbox` uses (client/c/serve_kube.c): agent-sandbox's SandboxClaims
(create, get, list by label, merge-patch, delete) and Sandboxes (get). It
stands in for a real API server and agent-sandbox's controller because
neither can run on this machine (no cluster, no kubelet).

What it does as the controller would: a claim on the warm pool is bound at
once to one of the pool's ready pods, which are *real* containers of the pod
image (tests/oci_pod.py, `cellvm serve --single` under podman), and the
claim's Sandbox reports that pod's address in status.podIPs; a claim
deleted (by a client, or at spec.lifecycle.shutdownTime with shutdownPolicy
Delete) deletes its Sandbox and its container. It speaks HTTPS with the
certificate of `tls` and takes a client either by a client certificate its
CA signed or by the bearer token; it checks what the schema requires of a
claim; it does not refill the pool.

`Router` stands in for agent-sandbox's router (its README: a request's
X-Sandbox-ID, X-Sandbox-Namespace and X-Sandbox-Port name the Sandbox it is
forwarded to, the response streamed back), with the pod's address in place
of the Sandbox's cluster DNS name.
"""

import http.client
import json
import ssl
import subprocess
import threading
import time
import urllib.parse
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CLAIMS = "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxclaims"
SANDBOXES = "/apis/agents.x-k8s.io/v1beta1/namespaces/{ns}/sandboxes"


def now_rfc3339():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


class StandIn:
    """The API server on 127.0.0.1:`port`, namespace `ns`, warm pool `pool`
    holding `pods` (objects with .url's host, .stop()); `token` the bearer
    token a client must send."""

    def __init__(self, ns, pool, pods, token, tls):
        self.ns, self.pool, self.token = ns, pool, token
        self.ready = list(pods)     # the pool's unbound pods
        self.claims = {}            # name -> object
        self.sandboxes = {}         # name -> object
        self.pods = {}              # sandbox name -> pod
        self.deleted = []           # (claim name, "client" | "shutdownTime")
        self.created = []           # each claim as created (a copy)
        self.requests = []          # (method, path, "cert" | "token")
        self.lock = threading.Lock()
        self.version = 1
        self.stopping = threading.Event()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                standin.handle(self, "GET")

            def do_POST(self):
                standin.handle(self, "POST")

            def do_PATCH(self):
                standin.handle(self, "PATCH")

            def do_DELETE(self):
                standin.handle(self, "DELETE")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tls.server_cert, tls.server_key)
        ctx.load_verify_locations(tls.ca_cert)
        ctx.verify_mode = ssl.CERT_OPTIONAL
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.url = f"https://127.0.0.1:{self.port}"
        self.threads = [threading.Thread(target=self.httpd.serve_forever, daemon=True),
                        threading.Thread(target=self.reap, daemon=True)]
        for t in self.threads:
            t.start()

    def close(self):
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        for t in self.threads:
            t.join()
        for pod in self.ready + list(self.pods.values()):
            pod.stop()

    # --- the controller's part ------------------------------------------------

    def bind(self, claim):
        """Binds a new claim to a ready pod of its warm pool (if any is left)."""
        if claim["spec"]["warmPoolRef"]["name"] != self.pool or not self.ready:
            return
        pod = self.ready.pop(0)
        name = f"{self.pool}-{len(self.pods) + len(self.deleted)}-{claim['metadata']['name'][-4:]}"
        self.pods[name] = pod
        self.sandboxes[name] = {
            "apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
            "metadata": {"name": name, "namespace": self.ns},
            "status": {"podIPs": [pod.host], "serviceFQDN": f"{name}.{self.ns}.svc.cluster.local",
                       "service": name, "replicas": 1,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "PodReady",
                                       "message": "", "lastTransitionTime": now_rfc3339()}]}}
        claim["status"] = {
            "sandbox": {"name": name},
            "conditions": [{"type": "Ready", "status": "True", "reason": "SandboxReady",
                            "message": "", "lastTransitionTime": now_rfc3339()}]}

    def delete(self, name, why):
        claim = self.claims.pop(name)
        self.deleted.append((name, why))
        sandbox = claim.get("status", {}).get("sandbox", {}).get("name")
        if sandbox in self.sandboxes:
            del self.sandboxes[sandbox]
            pod = self.pods.pop(sandbox)
            threading.Thread(target=pod.stop, daemon=True).start()

    def reap(self):
        """spec.lifecycle.shutdownTime with shutdownPolicy Delete."""
        while not self.stopping.wait(0.5):
            with self.lock:
                for name, c in list(self.claims.items()):
                    lc = c["spec"].get("lifecycle", {})
                    if (lc.get("shutdownPolicy") == "Delete" and lc.get("shutdownTime")
                            and parse_rfc3339(lc["shutdownTime"]) <= time.time()):
                        self.delete(name, "shutdownTime")

    # --- the API server's part --------------------------------------------------

    def handle(self, req, method):
        url = urllib.parse.urlsplit(req.path)
        n = int(req.headers.get("Content-Length") or 0)
        body = req.rfile.read(n) if n else b""
        by = ("cert" if req.connection.getpeercert() else
              "token" if req.headers.get("Authorization") == f"Bearer {self.token}" else None)
        self.requests.append((method, req.path, by))
        if not by:
            return self.reply(req, 401, self.status(401, "Unauthorized"))
        claims, sandboxes = CLAIMS.format(ns=self.ns), SANDBOXES.format(ns=self.ns)
        with self.lock:
            if url.path == claims and method == "POST":
                return self.create(req, body)
            if url.path == claims and method == "GET":
                return self.list(req, urllib.parse.parse_qs(url.query))
            if url.path.startswith(claims + "/"):
                name = url.path[len(claims) + 1:]
                if name not in self.claims:
                    return self.reply(req, 404, self.status(404, f'"{name}" not found'))
                if method == "GET":
                    return self.reply(req, 200, self.claims[name])
                if method == "DELETE":
                    uid = (json.loads(body or b"{}").get("preconditions") or {}).get("uid")
                    if uid and uid != self.claims[name]["metadata"].get("uid"):
                        return self.reply(req, 409, self.status(409, "uid precondition failed"))
                    self.delete(name, "client")
                    return self.reply(req, 200, self.status(200, "Success"))
                if method == "PATCH":
                    if req.headers.get("Content-Type") != "application/merge-patch+json":
                        return self.reply(req, 415, self.status(415, "merge-patch only"))
                    c = merge_patch(self.claims[name], json.loads(body))
                    self.version += 1
                    c["metadata"]["resourceVersion"] = str(self.version)
                    self.claims[name] = c
                    return self.reply(req, 200, c)
            if url.path.startswith(sandboxes + "/") and method == "GET":
                name = url.path[len(sandboxes) + 1:]
                if name in self.sandboxes:
                    return self.reply(req, 200, self.sandboxes[name])
                return self.reply(req, 404, self.status(404, f'"{name}" not found'))
        return self.reply(req, 404, self.status(404, "the server could not find the resource"))

    def create(self, req, body):
        c = json.loads(body)
        md, spec = c.get("metadata", {}), c.get("spec")
        if (c.get("apiVersion") != "extensions.agents.x-k8s.io/v1beta1"
                or c.get("kind") != "SandboxClaim" or not isinstance(spec, dict)
                or not isinstance(spec.get("warmPoolRef", {}).get("name"), str)
                or not md.get("name")):
            return self.reply(req, 422, self.status(422, "SandboxClaim is invalid"))
        lc = spec.get("lifecycle", {})
        if lc.get("shutdownPolicy", "Retain") not in ("Delete", "DeleteForeground", "Retain"):
            return self.reply(req, 422, self.status(422, "spec.lifecycle.shutdownPolicy"))
        if "shutdownTime" in lc:
            parse_rfc3339(lc["shutdownTime"])
        if md["name"] in self.claims:
            return self.reply(req, 409, self.status(409, "AlreadyExists"))
        self.version += 1
        md.update(namespace=self.ns, creationTimestamp=now_rfc3339(),
                  resourceVersion=str(self.version), uid=f"uid-{self.version}")
        self.claims[md["name"]] = c
        self.created.append(json.loads(json.dumps(c)))
        self.bind(c)
        return self.reply(req, 201, c)

    def list(self, req, query):
        want = {}
        for sel in query.get("labelSelector", [""])[0].split(","):
            if "=" in sel:
                k, v = sel.split("=", 1)
                want[k] = v
        items = [c for c in self.claims.values()
                 if all(c["metadata"].get("labels", {}).get(k) == v for k, v in want.items())]
        return self.reply(req, 200, {"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
                                     "kind": "SandboxClaimList",
                                     "metadata": {"resourceVersion": str(self.version)},
                                     "items": items})

    @staticmethod
    def status(code, message):
        return {"kind": "Status", "apiVersion": "v1", "status":
                "Success" if code < 300 else "Failure", "message": message, "code": code}

    @staticmethod
    def reply(req, code, obj):
        data = json.dumps(obj).encode()
        req.send_response(code)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(data)))
        req.end_headers()
        req.wfile.write(data)


class TLS:
    """A CA, the API server's certificate (127.0.0.1) and a client's, made
    with openssl in `d`."""

    def __init__(self, d):
        def run(*args):
            subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True, timeout=60)
        run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=standin-ca")
        for name, ext in (("server", "subjectAltName=IP:127.0.0.1"),
                          ("client", "extendedKeyUsage=clientAuth")):
            run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
            subprocess.run(["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt",
                            "-CAkey", "ca.key", "-CAcreateserial", "-out", f"{name}.crt",
                            "-days", "2", "-extfile", "/dev/stdin"],
                           input=ext, text=True, cwd=d, check=True, capture_output=True,
                           timeout=60)
        self.dir = str(d)
        self.ca_cert = f"{d}/ca.crt"
        self.server_cert, self.server_key = f"{d}/server.crt", f"{d}/server.key"
        self.client_cert, self.client_key = f"{d}/client.crt", f"{d}/client.key"


class Router:
    """agent-sandbox's router, as its README describes it (see above)."""

    def __init__(self, standin):
        self.seen = []  # (X-Sandbox-ID, X-Sandbox-Namespace, X-Sandbox-Port, path)
        router = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def forward(self):
                sid = self.headers.get("X-Sandbox-ID")
                ns = self.headers.get("X-Sandbox-Namespace")
                port = self.headers.get("X-Sandbox-Port")
                router.seen.append((sid, ns, port, self.path))
                pod = standin.pods.get(sid) if ns == standin.ns else None
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                if not pod or not (port or "").isdigit():
                    self.send_response(502)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                conn = http.client.HTTPConnection(pod.host, int(port), timeout=300)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in ("host", "connection", "content-length")}
                conn.request(self.command, self.path, body=body, headers=headers)
                r = conn.getresponse()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(k, v)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while chunk := r.read1(65536):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                conn.close()

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = forward

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()
