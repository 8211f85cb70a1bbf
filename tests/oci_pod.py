"""The pod image (`make oci`, oci/build_oci.py) run under podman as a
SandboxTemplate runs it: shared by tests/test_oci.py and
tests/test_kube_backend.py. The image is built and pulled once per pytest
session, and the template directory (the SandboxTemplate's hostPath volume)
is one per session too, so only the first container of the session builds
the template (~40-60 s under TCG); every later one restores it.

This machine needs runc, --cgroup-manager=cgroupfs (crun refuses its hybrid
cgroups) and ulimits no higher than its own.
"""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
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

_session = {}


def podman(*args, timeout=600, check=True):
    r = subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        pytest.fail(f"podman {' '.join(args[:3])} failed ({r.returncode}):\n{r.stderr[-3000:]}")
    return r


def health(url):
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


class Pod:
    """One container of the pod image, as the SandboxTemplate runs it: its
    port 3000 published on `host` (a loopback address) at `port` (default:
    a free one)."""

    def __init__(self, image, templates, key=None, host="127.0.0.1", port=None):
        self.name = f"cellvm-test-oci-{uuid.uuid4().hex[:8]}"
        self.host = host
        self.port = port or free_port()
        self.key = key or "e2b_" + uuid.uuid4().hex + uuid.uuid4().hex[:8]
        self.url = f"http://{host}:{self.port}"
        podman("run", "-d", "--name", self.name,
               "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096",
               "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
               "-e", f"CELLVM_API_KEY={self.key}",
               "-v", f"{templates}:/var/lib/cellvm/templates",
               "-p", f"{host}:{self.port}:3000", image, timeout=120)
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
            if health(self.url) == status:
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


def pod_image():
    """The pod image's id in podman's storage: built and pulled once per
    session (removed at its end)."""
    if "image" in _session:
        return _session["image"]
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
    _session["image"] = r.stdout.strip().splitlines()[-1]
    atexit.register(subprocess.run, [*PODMAN, "rmi", "-f", _session["image"]],
                    capture_output=True, timeout=120)
    return _session["image"]


def pod_templates():
    """The session's template volume (0700, removed at the end)."""
    if "templates" not in _session:
        d = tempfile.mkdtemp(prefix="cellvm-oci-tpl-", dir="/tmp")
        atexit.register(shutil.rmtree, d, True)
        _session["templates"] = d
    return _session["templates"]


def drive(script, url, key, logs):
    """Runs tests/serve_sdk/`script` (E2B's npm SDK) against `url` with `key`:
    the one JSON object it printed. `logs()` is the server side's log, shown
    when it failed."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root"),
           "LANG": "C.UTF-8", "E2B_API_URL": url, "E2B_SANDBOX_URL": url, "E2B_API_KEY": key}
    r = subprocess.run([shutil.which("node"), script], cwd=SDK_DIR, env=env,
                       capture_output=True, text=True, timeout=600)
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pytest.fail(f"{script} printed no JSON ({r.returncode}):\n{r.stdout[-2000:]}\n"
                    f"{r.stderr[-2000:]}\n-- the server:\n{logs()[-3000:]}")
    assert "error" not in out, f"{out['error']}\n-- the server:\n{logs()[-3000:]}"
    return out
