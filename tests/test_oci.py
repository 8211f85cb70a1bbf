"""The pod image (`make oci` -> build/oci, oci/build_oci.py; docs/KUBERNETES.md)
run as Kubernetes would run it, under Debian's podman: `cellvm serve --single`
in a container without capabilities, given no /dev/kvm (so TCG), its template
directory a volume (the SandboxTemplate's hostPath). E2B's unchanged npm SDK
(tests/serve_sdk/pod.mjs) then drives the one sandbox: create, runCode, a
matplotlib chart (PNG), a second create refused, kill; /health is 503 after.
A second container on the same volume restores the template the first built.

One container for the module; the session's first container builds the template (~40-60 s
under TCG). This machine needs runc, --cgroup-manager=cgroupfs (crun refuses
its hybrid cgroups) and ulimits no higher than its own.

Needs root, podman, buildah, skopeo and mmdebstrap (.ci/packages), Node with
the SDK of tests/serve_sdk, and build/image (conftest.build_image_or_skip);
with CELLVM_SKIP_IMAGE_BUILD=1 an existing build/oci is used as it is.
"""

import base64
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from oci_pod import Pod, drive, pod_image, pod_templates  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def image():
    return pod_image()


@pytest.fixture(scope="module")
def templates():
    return pod_templates()


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
    return drive("pod.mjs", pod.url, pod.key, pod.logs)


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
