"""The pod image (`make oci` -> build/oci, oci/build_oci.py; docs/KUBERNETES.md)
run as Kubernetes would run it, under Debian's podman: `cellvm serve --single`
in a container without capabilities, given no /dev/kvm (so TCG), its template
directory a volume (the SandboxTemplate's hostPath). E2B's unchanged npm SDK
(tests/serve_sdk/pod.mjs) then drives the one sandbox: create, runCode, a
matplotlib chart (PNG), a second create refused, kill; /health is 503 after.
A second container on the same volume restores the template the first built.

One container for the module: its first start builds the template (~40-60 s
under TCG). This machine needs runc, --cgroup-manager=cgroupfs (crun refuses
its hybrid cgroups) and ulimits no higher than its own.

Needs root, podman, buildah, skopeo and mmdebstrap (.ci/packages), Node with
the SDK of tests/serve_sdk, and build/image (conftest.build_image_or_skip);
with CELLVM_SKIP_IMAGE_BUILD=1 an existing build/oci is used as it is.
"""

import base64
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import IMAGE_BUILD, build_image_or_skip  # noqa: E402
from serve_process import free_port  # noqa: E402
from test_serve_sdk import SDK_DIR, node_or_skip  # noqa: E402

OCI = os.path.join(IMAGE_BUILD, "oci")
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"]
READY_TIMEOUT = 600  # the first start builds the template under TCG
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def podman(*args, timeout=600, check=True):
    r = subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        pytest.fail(f"podman {' '.join(args[:3])} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r


def health(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


class Pod:
    """One container of the pod image, as the SandboxTemplate runs it."""

    def __init__(self, image, templates):
        self.name = f"cellvm-test-oci-{uuid.uuid4().hex[:8]}"
        self.port = free_port()
        self.key = "e2b_" + uuid.uuid4().hex + uuid.uuid4().hex[:8]
        self.url = f"http://127.0.0.1:{self.port}"
        podman("run", "-d", "--name", self.name,
               "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
               "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
               "-e", f"CELLVM_API_KEY={self.key}",
               "-v", f"{templates}:/var/lib/cellvm/templates",
               "-p", f"127.0.0.1:{self.port}:3000", image, timeout=120)
        self.stopped = None

    def logs(self):
        r = podman("logs", self.name, check=False, timeout=60)
        return r.stdout + r.stderr

    def running(self):
        r = podman("inspect", "--format", "{{.State.Running}}", self.name, check=False, timeout=60)
        return r.stdout.strip() == "true"

    def wait(self, status):
        """Polls /health until it answers `status` (the container must live)."""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if health(self.port) == status:
                return
            if not self.running():
                pytest.fail(f"the container exited before /health said {status}:\n"
                            f"{self.logs()[-4000:]}")
            time.sleep(1)
        pytest.fail(f"/health never said {status}:\n{self.logs()[-4000:]}")

    def stop(self):
        """SIGTERM, as the kubelet ends a pod: the exit status and the log."""
        if self.stopped is None:
            podman("stop", "-t", "30", self.name, check=False, timeout=120)
            r = podman("inspect", "--format", "{{.State.ExitCode}}", self.name, check=False,
                       timeout=60)
            self.stopped = (r.stdout.strip(), self.logs())
            podman("rm", "-f", self.name, check=False, timeout=120)
        return self.stopped


@pytest.fixture(scope="module")
def image():
    missing = [t for t in ("podman", "buildah", "skopeo", "mmdebstrap") if not shutil.which(t)]
    if missing:
        pytest.skip(f"{', '.join(missing)} missing: the pod image is built with buildah and "
                    "skopeo and run under podman (.ci/packages)")
    if os.geteuid() != 0:
        pytest.skip("building and running the pod image needs root here (mmdebstrap, buildah)")
    node_or_skip()
    build_image_or_skip()
    if not (os.environ.get("CELLVM_SKIP_IMAGE_BUILD") == "1"
            and os.path.exists(os.path.join(OCI, "index.json"))):
        b = os.path.relpath(IMAGE_BUILD, ROOT)
        r = subprocess.run([sys.executable, os.path.join(ROOT, "oci", "build_oci.py"),
                            "--build", b], cwd=ROOT, capture_output=True, text=True,
                           timeout=1800)
        assert r.returncode == 0, f"oci/build_oci.py failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}"
    r = podman("pull", "-q", f"oci:{OCI}:cellvm", timeout=600)
    image_id = r.stdout.strip().splitlines()[-1]
    yield image_id
    podman("rmi", "-f", image_id, check=False, timeout=120)


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    d = tmp_path_factory.mktemp("oci-templates")
    os.chmod(d, 0o700)
    return str(d)


@pytest.fixture(scope="module")
def pod(image, templates):
    p = Pod(image, templates)
    try:
        p.wait(200)
        yield p
    finally:
        p.stop()


@pytest.fixture(scope="module")
def driven(pod):
    """pod.mjs's observations, once for the module."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
           "LANG": "C.UTF-8", "E2B_API_URL": pod.url, "E2B_SANDBOX_URL": pod.url,
           "E2B_API_KEY": pod.key}
    r = subprocess.run([shutil.which("node"), "pod.mjs"], cwd=SDK_DIR, env=env,
                       capture_output=True, text=True, timeout=600)
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pytest.fail(f"pod.mjs printed no JSON ({r.returncode}):\n{r.stdout[-2000:]}\n"
                    f"{r.stderr[-2000:]}\n-- the container:\n{pod.logs()[-3000:]}")
    assert "error" not in out, f"{out['error']}\n-- the container:\n{pod.logs()[-3000:]}"
    return out


def test_the_sdk_runs_code_in_the_pods_sandbox(driven):
    assert driven["sandboxId"]
    assert driven["runCode"] == {"text": "42", "stdout": ["1000\n"], "error": None}


def test_a_chart_comes_back_as_png(driven):
    assert driven["chart"]["error"] is None
    assert ["png"] in driven["chart"]["formats"]
    png = base64.b64decode(driven["chart"]["png"])
    assert png.startswith(PNG_MAGIC) and len(png) > 1000


def test_the_pod_serves_one_sandbox(driven, pod):
    # The second create is refused as E2B refuses one past a team's limit.
    assert "created" not in driven["second"], driven["second"]
    assert "429" in driven["second"]["message"] or "Rate limit" in driven["second"]["message"], \
        driven["second"]
    assert driven["listed"] == [driven["sandboxId"]]
    assert driven["runningAfterKill"] is False
    # Killed, the pod's sandbox is over: unready from now on.
    pod.wait(503)
    assert "the pod's sandbox ended" in pod.logs()


def test_sigterm_ends_the_pod_cleanly(driven, pod):
    code, logs = pod.stop()
    assert code == "0", logs[-3000:]
    assert "Terminated: killing the sandboxes" in logs


def test_a_second_pod_restores_the_volumes_template(driven, pod, image, templates):
    """The volume (the SandboxTemplate's hostPath) holds the template the
    first pod built: the next pod of the node restores it, builds nothing."""
    pod.stop()
    second = Pod(image, templates)
    try:
        second.wait(200)
        logs = second.logs()
        assert "building the template" not in logs, logs[-3000:]
        assert "ready (one sandbox, warm)" in logs
    finally:
        code, logs = second.stop()
    assert code == "0", logs[-3000:]
