"""The contract test of `cellvm serve --backend agent-sandbox`
(client/c/serve_kube.c, docs/KUBERNETES.md): E2B's unchanged npm SDK
(tests/serve_sdk/kube.mjs) drives the control plane, which makes every
sandbox a SandboxClaim on a warm pool and proxies its traffic to the claimed
pod. The Kubernetes API is a local stand-in (tests/kube_standin.py: no
cluster can run here); the pods are real containers of the pod image under
podman (tests/oci_pod.py), each `cellvm serve --single` with its own VM.

Proven here: create, runCode, a chart, a command, list (and its metadata
filter), setTimeout (the claim's shutdownTime follows the guest's deadline),
kill (the claim deleted, its container with it), all answered from the
cluster's objects only, authenticated by a kubeconfig with a bearer token.

Costs: two pod containers restored from the session's template (built by
the session's first pod container, shared with tests/test_oci.py).
"""

import base64
import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import http_direct  # noqa: E402
from kube_standin import CLAIMS, TLS, Router, StandIn, parse_rfc3339  # noqa: E402
from oci_pod import Pod, drive, pod_image, pod_templates  # noqa: E402
from serve_process import CLI, free_port  # noqa: E402

NS = "cellvm-test"
POOL = "cellvm"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# As kubectl writes them: the first with the CA and a client certificate
# inline (base64), the second with files (the CA's path relative to the
# kubeconfig) and a token file, and a context that is not the current one.
KUBECONFIG_CERT = """\
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: {server}
  name: standin
contexts:
- context:
    cluster: standin
    namespace: {ns}
    user: tester
  name: standin
current-context: standin
users:
- name: tester
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
"""
KUBECONFIG_TOKEN = """\
apiVersion: v1
kind: Config
clusters:
- name: elsewhere
  cluster: {{server: "https://192.0.2.1:6443"}}
- name: standin
  cluster:
    certificate-authority: tls/ca.crt
    server: "{server}"
contexts:
- name: other
  context: {{cluster: elsewhere, user: nobody}}
- name: standin
  context:
    cluster: standin
    namespace: {ns}
    user: tester
current-context: standin
users:
- name: tester
  user:
    tokenFile: {token_file}
"""


def b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


class ControlPlane:
    """`cellvm serve --backend agent-sandbox` with `kubeconfig`."""

    def __init__(self, tmp, name, kubeconfig, key, *args):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp / f"{name}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
        env.update(KUBECONFIG=str(kubeconfig), CELLVM_API_KEY=key)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [CLI, "serve", "--backend", "agent-sandbox", "--warm-pool", POOL,
                 "--listen", f"127.0.0.1:{self.port}", *args],
                env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        assert self.proc.poll() is None, self.log()

    def log(self):
        return self.log_path.read_text()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.wait(timeout=30)


def loopback_hosts(n):
    """`n` loopback addresses whose port 3000 is free: each pod is at
    <address>:3000, as pods of a cluster are at <pod IP>:3000."""
    import socket
    hosts = []
    while len(hosts) < n:
        h = f"127.{secrets.randbelow(200) + 50}.{secrets.randbelow(250) + 1}.{secrets.randbelow(250) + 1}"
        with socket.socket() as s:
            try:
                s.bind((h, 3000))
            except OSError:
                continue
        hosts.append(h)
    return hosts


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    image, templates = pod_image(), pod_templates()
    key = "e2b_" + secrets.token_hex(20)
    pods = []
    try:
        # Two for the SDK's script, one for the router's test.
        for host in loopback_hosts(3):
            pods.append(Pod(image, templates, key=key, host=host, port=3000))
        # The first builds the template when the session has none yet; the
        # others wait for it on the volume's lock, then restore.
        waits = [threading.Thread(target=p.wait, args=(200,)) for p in pods]
        for t in waits:
            t.start()
        for t in waits:
            t.join()
        for p in pods:
            assert p.running()
    except BaseException:
        for p in pods:
            p.stop()
        raise
    tmp = tmp_path_factory.mktemp("kube")
    (tmp / "tls").mkdir()
    tls = TLS(tmp / "tls")
    token = secrets.token_hex(16)
    (tmp / "token").write_text(token + "\n")
    standin = StandIn(NS, POOL, pods, token, tls)
    router = Router(standin)
    (tmp / "kubeconfig-cert").write_text(KUBECONFIG_CERT.format(
        ca=b64file(tls.ca_cert), server=standin.url, ns=NS, cert=b64file(tls.client_cert),
        key=b64file(tls.client_key)))
    (tmp / "kubeconfig-token").write_text(KUBECONFIG_TOKEN.format(
        server=standin.url, ns=NS, token_file=tmp / "token"))
    planes = []
    try:
        planes.append(ControlPlane(tmp, "direct", tmp / "kubeconfig-cert", key))
        planes.append(ControlPlane(tmp, "routed", tmp / "kubeconfig-token", key,
                                   "--router", router.url))
        yield {"url": planes[0].url, "key": key, "standin": standin, "router": router, "tls": tls,
               "direct": planes[0], "routed": planes[1]}
        # SIGTERM ends them cleanly (under SAN=1: without a report).
        for p in planes:
            assert p.stop() == 0 and "Sanitizer" not in p.log(), p.log()[-3000:]
    finally:
        for p in planes:
            p.stop()
        router.close()
        standin.close()


@pytest.fixture(scope="module")
def driven(cluster):
    """kube.mjs's observations, once for the module."""
    return drive("kube.mjs", cluster["url"], cluster["key"], cluster["direct"].log)


def test_create_makes_a_claim_and_runs_code_in_its_pod(driven, cluster):
    standin = cluster["standin"]
    assert driven["a"].startswith("cellvm-") and driven["b"].startswith("cellvm-")
    assert driven["runCode"] == {"text": "42", "stdout": ["1000\n"], "error": None}
    assert driven["bRunCode"] == "2"
    assert driven["command"]["exitCode"] == 0
    # E2B_SANDBOX_ID is the id the API gave (the claim's), not the pod's own
    assert driven["e2bSandboxId"] == driven["a"] + "\n"
    # Each claim was created on the warm pool, labelled as cellvm's, with
    # E2B's metadata in an annotation.
    posts = [p for m, p, _ in standin.requests if m == "POST"]
    assert posts[:2] == [CLAIMS.format(ns=NS)] * 2


def test_a_chart_comes_back_as_png(driven):
    assert driven["chart"]["error"] is None
    assert ["png"] in driven["chart"]["formats"]
    png = base64.b64decode(driven["chart"]["png"])
    assert png.startswith(PNG_MAGIC) and len(png) > 1000


def test_list_reads_the_claims(driven):
    assert driven["listed"] == sorted([driven["a"], driven["b"]])
    assert driven["listedN2"] == [driven["b"]]
    assert driven["listedAfterKill"] == [driven["b"]]
    assert driven["listedAtEnd"] == []


def test_set_timeout_moves_the_claims_shutdown_time(driven, cluster):
    # The SDK's endAt is the pod's guest deadline; the claim was patched to it.
    end = datetime.fromisoformat(driven["info"]["endAt"].replace("Z", "+00:00"))
    assert driven["info"]["id"] == driven["a"]
    remaining = end.timestamp() - datetime.now(timezone.utc).timestamp()
    assert 0 < remaining <= 200
    patches = [p for m, p, _ in cluster["standin"].requests
               if m == "PATCH" and p.endswith("/" + driven["a"])]
    assert len(patches) == 2  # the pod's sandbox id, then the deadline


def test_kill_deletes_the_claim_and_its_pod(driven, cluster):
    standin = cluster["standin"]
    assert driven["killedA"] is True and driven["killedB"] is True
    assert driven["aRunningAfterKill"] is False
    assert driven["bRunningAfterAKill"] is True
    assert "not found" in driven["connectKilled"]["message"].lower(), driven["connectKilled"]
    assert standin.deleted[:2] == [(driven["a"], "client"), (driven["b"], "client")]
    assert driven["a"] not in standin.claims and driven["b"] not in standin.claims


def test_the_server_keeps_no_state(driven, cluster):
    """The control plane answers from the cluster alone: a claim another
    replica made is listed as it says."""
    standin = cluster["standin"]
    with standin.lock:
        standin.claims["cellvm-byhand"] = {
            "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
            "metadata": {"name": "cellvm-byhand", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"app.kubernetes.io/managed-by": "cellvm-serve"},
                         "annotations": {"cellvm.dev/pod-sandbox-id": "x",
                                         "cellvm.dev/metadata": '{"by":"hand"}'}},
            "spec": {"warmPoolRef": {"name": POOL},
                     "lifecycle": {"shutdownTime": "2099-01-01T00:00:00Z",
                                   "shutdownPolicy": "Delete"}}}
    try:
        req = urllib.request.Request(cluster["url"] + "/sandboxes",
                                     headers={"X-API-Key": cluster["key"]})
        with urllib.request.urlopen(req, timeout=30) as r:
            listed = json.loads(r.read())
        assert [(s["sandboxID"], s["metadata"]) for s in listed] == \
            [("cellvm-byhand", {"by": "hand"})]
        assert parse_rfc3339("2099-01-01T00:00:00Z") > time.time()
        assert listed[0]["endAt"].startswith("2099-01-01T00:00:00")
    finally:
        with standin.lock:
            standin.claims.pop("cellvm-byhand", None)


def hand_claim(name, created):
    return {"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
            "metadata": {"name": name, "creationTimestamp": created,
                         "labels": {"app.kubernetes.io/managed-by": "cellvm-serve"},
                         "annotations": {"cellvm.dev/pod-sandbox-id": "x"}},
            "spec": {"warmPoolRef": {"name": POOL},
                     "lifecycle": {"shutdownTime": "2099-01-01T00:00:00Z",
                                   "shutdownPolicy": "Delete"}}}


def test_v2_list_pages_with_next_token(driven, cluster):
    """E2B's v2 list in pages: x-next-token leads to the rest, newest first,
    none twice and none lost (ties in startedAt ordered by name)."""
    standin = cluster["standin"]
    made = {"cellvm-page1": "2026-01-01T00:00:01Z", "cellvm-page2": "2026-01-01T00:00:03Z",
            "cellvm-page3": "2026-01-01T00:00:02Z", "cellvm-page4": "2026-01-01T00:00:02Z"}
    with standin.lock:
        for name, created in made.items():
            standin.claims[name] = hand_claim(name, created)
    try:
        pages, token = [], None
        while len(pages) < 5:
            url = cluster["url"] + "/v2/sandboxes?limit=3" + (f"&nextToken={token}" if token else "")
            req = urllib.request.Request(url, headers={"X-API-Key": cluster["key"]})
            with urllib.request.urlopen(req, timeout=30) as r:
                pages.append([s["sandboxID"] for s in json.loads(r.read())])
                token = r.headers.get("x-next-token")
            if not token:
                break
        assert pages == [["cellvm-page2", "cellvm-page3", "cellvm-page4"], ["cellvm-page1"]]
    finally:
        with standin.lock:
            for name in made:
                standin.claims.pop(name, None)


def test_each_claim_says_its_pool_owner_metadata_and_deadline(driven, cluster):
    """What create wrote into the cluster: the warm pool, cellvm's label,
    E2B's metadata, and the deadline at which agent-sandbox deletes the claim
    (the guest's own deadline holds in its pod as well)."""
    created = cluster["standin"].created[:2]
    assert [c["metadata"]["name"] for c in created] == [driven["a"], driven["b"]]
    for c, n in zip(created, ("1", "2")):
        assert c["spec"]["warmPoolRef"] == {"name": POOL}
        assert c["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "cellvm-serve"}
        assert json.loads(c["metadata"]["annotations"]["cellvm.dev/metadata"]) == \
            {"suite": "kube", "n": n}
        assert c["spec"]["lifecycle"]["shutdownPolicy"] == "Delete"
    # a: timeoutMs 120 000; b: E2B's default, 300 s.
    made = [parse_rfc3339(c["metadata"]["creationTimestamp"]) for c in created]
    ends = [parse_rfc3339(c["spec"]["lifecycle"]["shutdownTime"]) for c in created]
    assert 119 <= ends[0] - made[0] <= 122
    assert 299 <= ends[1] - made[1] <= 302


def test_the_kubeconfigs_credentials_reach_the_api_server(driven, cluster):
    """TLS checked against the kubeconfig's CA; the SDK's control plane
    authenticated by its client certificate, the routed one by its token file."""
    by = {b for _, _, b in cluster["standin"].requests}
    assert "cert" in by and None not in by


def test_in_a_pod_the_service_accounts_credentials_reach_the_api_server(cluster, tmp_path):
    """No kubeconfig in a pod: the control plane, run in a container of the
    pod image, takes the API server from KUBERNETES_SERVICE_HOST/PORT and the
    token, CA and namespace from where Kubernetes mounts a service account."""
    import shutil
    from oci_pod import podman
    standin = cluster["standin"]
    sa = tmp_path / "serviceaccount"
    sa.mkdir()
    (sa / "token").write_text(standin.token)
    shutil.copy(cluster["tls"].ca_cert, sa / "ca.crt")
    (sa / "namespace").write_text(NS + "\n")
    port, name = free_port(), f"cellvm-test-plane-{secrets.token_hex(4)}"
    api_port = standin.url.rsplit(":", 1)[1].rstrip("/")
    podman("run", "-d", "--name", name, "--network", "host",
           "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
           "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
           "-e", "KUBERNETES_SERVICE_HOST=127.0.0.1", "-e", f"KUBERNETES_SERVICE_PORT={api_port}",
           "-e", f"CELLVM_API_KEY={cluster['key']}",
           "-v", f"{sa}:/var/run/secrets/kubernetes.io/serviceaccount:ro",
           "--entrypoint", "/usr/local/bin/cellvm", pod_image(),
           "serve", "--backend", "agent-sandbox", "--warm-pool", POOL,
           "--listen", f"127.0.0.1:{port}", timeout=120)
    try:
        before = len(standin.requests)
        plane = type("Plane", (), {"url": f"http://127.0.0.1:{port}"})
        deadline = time.monotonic() + 60
        while True:
            try:
                status, body = api_call(plane, "GET", "/sandboxes",
                                        headers={"X-API-Key": cluster["key"]})
                break
            except OSError:
                assert time.monotonic() < deadline, podman("logs", name, check=False).stderr
                time.sleep(0.2)
        assert status == 200 and isinstance(json.loads(body), list), body
        # Its list went to the service account's namespace, with its token.
        seen = standin.requests[before:]
        assert any(m == "GET" and p.split("?")[0] == CLAIMS.format(ns=NS) and by == "token"
                   for m, p, by in seen), seen
    finally:
        podman("rm", "-f", name, check=False, timeout=120)


def api_call(plane, method, path, body=None, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    return http_direct.request(plane.url + path, data=data, method=method,
                               headers={"Content-Type": "application/json", **(headers or {})})


def test_through_the_router(driven, cluster):
    """--router: the sandbox's traffic goes to agent-sandbox's router, which
    finds the pod by X-Sandbox-ID, X-Sandbox-Namespace and X-Sandbox-Port."""
    plane, key, standin = cluster["routed"], cluster["key"], cluster["standin"]
    status, body = api_call(plane, "POST", "/sandboxes", {"templateID": "base", "timeout": 60},
                            {"X-API-Key": key})
    assert status == 201, (body, plane.log()[-2000:])
    made = json.loads(body)
    sid = made["sandboxID"]
    try:
        sandbox = standin.claims[sid]["status"]["sandbox"]["name"]
        status, out = api_call(plane, "POST", "/execute", {"code": "print(6 * 7)"},
                               {"E2b-Sandbox-Id": sid, "E2b-Sandbox-Port": "49999",
                                "X-Access-Token": made["envdAccessToken"]})
        assert status == 200, out
        lines = [json.loads(x) for x in out.decode().splitlines()]
        assert {"type": "stdout", "text": "42\n"} in [
            {k: v for k, v in x.items() if k != "timestamp"} for x in lines]
        # getHost(port)'s Host routing, as E2B's edge reads it: envd's /health.
        status, _ = api_call(plane, "GET", "/health",
                             headers={"Host": f"49983-{sid}.localhost:{plane.port}"})
        assert status == 204
        assert (sandbox, NS, "3000", "/health") in cluster["router"].seen
        assert (sandbox, NS, "3000", "/sandboxes") in cluster["router"].seen
        assert (sandbox, NS, "3000", "/execute") in cluster["router"].seen
        assert all(s == sandbox for s, _, _, _ in cluster["router"].seen)
        # A pod serves one sandbox: no fork (nor pause) through this backend.
        status, body = api_call(plane, "POST", f"/sandboxes/{sid}/fork", {}, {"X-API-Key": key})
        assert status == 400 and b"fork is not supported" in body, body
    finally:
        status, _ = api_call(plane, "DELETE", f"/sandboxes/{sid}", headers={"X-API-Key": key})
    assert status == 204
    assert {b for m, p, b in standin.requests if p.endswith("/" + sid)} == {"token"}


def test_create_refuses_before_claiming(cluster):
    """A create the pod would refuse takes no pod from the pool."""
    plane, key, standin = cluster["direct"], cluster["key"], cluster["standin"]
    before = len(standin.created)
    for body, code in (({"templateID": "nonesuch"}, 404), ({"timeout": -1}, 400),
                       ({"metadata": {"a": 1}}, 400), (["not", "an", "object"], 400)):
        status, answer = api_call(plane, "POST", "/sandboxes", body, {"X-API-Key": key})
        assert status == code, (body, answer)
        assert json.loads(answer)["code"] == code
    assert len(standin.created) == before
    status, _ = api_call(plane, "POST", "/sandboxes", {}, {"X-API-Key": "e2b_" + "0" * 40})
    assert status == 401


def test_a_sandbox_that_is_no_claim_is_not_found(cluster):
    """Nor is a claim another manager made in the namespace: it is neither
    described, reached nor deleted."""
    plane, key, standin = cluster["direct"], cluster["key"], cluster["standin"]
    foreign = {"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxClaim",
               "metadata": {"name": "someone-elses", "uid": "u-1",
                            "labels": {"app.kubernetes.io/managed-by": "someone-else"},
                            "annotations": {"cellvm.dev/pod-sandbox-id": "x"}},
               "spec": {"warmPoolRef": {"name": POOL}}}
    with standin.lock:
        standin.claims["someone-elses"] = foreign
    try:
        for method in ("GET", "DELETE"):
            status, _ = api_call(plane, method, "/sandboxes/someone-elses",
                                 headers={"X-API-Key": key})
            assert status == 404
        assert "someone-elses" in standin.claims
    finally:
        with standin.lock:
            standin.claims.pop("someone-elses", None)
    status, _ = api_call(plane, "GET", "/sandboxes/cellvm-000000000000", headers={"X-API-Key": key})
    assert status == 404
    status, _ = api_call(plane, "DELETE", "/sandboxes/cellvm-000000000000",
                         headers={"X-API-Key": key})
    assert status == 404
    status, body = api_call(plane, "GET", "/health", headers={
        "E2b-Sandbox-Id": "cellvm-000000000000", "E2b-Sandbox-Port": "49983"})
    assert status == 502 and b"was not found" in body


def test_a_kubeconfig_with_a_plugin_is_refused(tmp_path):
    """Cloud kubeconfigs authenticate by exec plugins, which cellvm does not run:
    the server says so and exits."""
    cfg = tmp_path / "config"
    cfg.write_text("apiVersion: v1\nclusters:\n- name: c\n  cluster: {server: 'https://x'}\n"
                   "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                   "current-context: x\nusers:\n- name: u\n  user:\n    exec:\n"
                   "      command: gke-gcloud-auth-plugin\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.update(KUBECONFIG=str(cfg), CELLVM_API_KEY="e2b_" + "1" * 40)
    r = subprocess.run([CLI, "serve", "--backend", "agent-sandbox", "--listen",
                        f"127.0.0.1:{free_port()}"], env=env, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 1
    assert "plugin" in r.stderr and "exec" in r.stderr, r.stderr
