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
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from datetime import datetime, timezone

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kube_standin import CLAIMS, StandIn, parse_rfc3339  # noqa: E402
from oci_pod import Pod, pod_image, pod_templates  # noqa: E402
from serve_process import CLI, free_port  # noqa: E402
from test_serve_sdk import SDK_DIR  # noqa: E402

NS = "cellvm-test"
POOL = "cellvm"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- cluster:
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
    token: {token}
"""


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
        for host in loopback_hosts(2):
            pods.append(Pod(image, templates, key=key, host=host, port=3000))
        # The first builds the template when the session has none yet; the
        # second waits for it on the volume's lock, then restores.
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
    token = secrets.token_hex(16)
    standin = StandIn(NS, POOL, pods, token)
    tmp = tmp_path_factory.mktemp("kube")
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG.format(server=standin.url, ns=NS, token=token))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    env.update(KUBECONFIG=str(kubeconfig), CELLVM_API_KEY=key)
    log = open(tmp / "serve.log", "wb")
    server = subprocess.Popen([CLI, "serve", "--backend", "agent-sandbox", "--warm-pool", POOL,
                               "--listen", f"127.0.0.1:{port}"], env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and server.poll() is None:
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.1)
        assert server.poll() is None, (tmp / "serve.log").read_text()
        yield {"url": url, "key": key, "standin": standin, "log": tmp / "serve.log",
               "server": server}
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
        standin.close()


@pytest.fixture(scope="module")
def driven(cluster):
    """kube.mjs's observations, once for the module."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
           "LANG": "C.UTF-8", "E2B_API_URL": cluster["url"], "E2B_SANDBOX_URL": cluster["url"],
           "E2B_API_KEY": cluster["key"]}
    r = subprocess.run([shutil.which("node"), "kube.mjs"], cwd=SDK_DIR, env=env,
                       capture_output=True, text=True, timeout=600)
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pytest.fail(f"kube.mjs printed no JSON ({r.returncode}):\n{r.stdout[-2000:]}\n"
                    f"{r.stderr[-2000:]}\n-- serve:\n{cluster['log'].read_text()[-3000:]}")
    assert "error" not in out, f"{out['error']}\n-- serve:\n{cluster['log'].read_text()[-3000:]}"
    return out


def test_create_makes_a_claim_and_runs_code_in_its_pod(driven, cluster):
    standin = cluster["standin"]
    assert driven["a"].startswith("cellvm-") and driven["b"].startswith("cellvm-")
    assert driven["runCode"] == {"text": "42", "stdout": ["1000\n"], "error": None}
    assert driven["bRunCode"] == "2"
    assert driven["command"]["exitCode"] == 0
    # Each claim was created on the warm pool, labelled as cellvm's, with
    # E2B's metadata in an annotation.
    posts = [p for m, p in standin.requests if m == "POST"]
    assert posts == [CLAIMS.format(ns=NS)] * 2


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
    patches = [p for m, p in cluster["standin"].requests
               if m == "PATCH" and p.endswith("/" + driven["a"])]
    assert len(patches) == 2  # the pod's sandbox id, then the deadline


def test_kill_deletes_the_claim_and_its_pod(driven, cluster):
    standin = cluster["standin"]
    assert driven["killedA"] is True and driven["killedB"] is True
    assert driven["aRunningAfterKill"] is False
    assert driven["bRunningAfterAKill"] is True
    assert "not found" in driven["connectKilled"]["message"].lower(), driven["connectKilled"]
    assert sorted(standin.deleted) == sorted([(driven["a"], "client"), (driven["b"], "client")])
    assert standin.claims == {} and standin.sandboxes == {}


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


def test_each_claim_says_its_pool_owner_metadata_and_deadline(driven, cluster):
    """What create wrote into the cluster: the warm pool, cellvm's label,
    E2B's metadata, and the deadline at which agent-sandbox deletes the claim
    (the guest's own deadline holds in its pod as well)."""
    created = cluster["standin"].created
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
