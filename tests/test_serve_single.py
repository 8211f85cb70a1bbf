"""`cellvm serve --single` (client/c/serve_single.c; docs/SERVE.md "One sandbox
per server", docs/KUBERNETES.md) on this host, without a container: the
server of one sandbox, a Kubernetes pod's. tests/test_oci.py runs the same
server in the pod image under podman and drives it with E2B's npm SDK; this
one checks the protocol where podman is missing, with the real image.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import build_image_or_skip  # noqa: E402
from serve_process import Server, tail  # noqa: E402
from test_serve_lifetime import call, entries, execute  # noqa: E402


@pytest.fixture(autouse=True)
def image():
    build_image_or_skip()


def health(s):
    try:
        with urllib.request.urlopen(s.url + "/health", timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_one_warm_sandbox_handed_out_once_then_unready(tmp_path):
    s = Server(str(tmp_path), extra_args=["--single"])
    try:
        s.wait_healthy()
        # Ready means restored and warmed before any create.
        (warm,) = entries(s)
        assert "ready (one sandbox, warm)" in tail(s.log_path)
        st, body = call(s, "POST", "/sandboxes", {"templateID": "base", "metadata": {"k": "v"}})
        assert st == 201, (st, body, tail(s.log_path))
        sbx = json.loads(body)
        assert sbx["sandboxID"] == warm, "the create took the warm sandbox"
        lines = execute(s, sbx, "6 * 7")
        assert any(x.get("type") == "result" and x.get("text") == "42" for x in lines), lines
        # Any other create: E2B's rate-limit answer, and no second VM.
        for path in ("/sandboxes", "/v2/sandboxes"):
            st, body = call(s, "POST", path, {"templateID": "base"})
            assert st == 429, (path, st, body)
            err = json.loads(body)
            assert err["code"] == 429 and "one sandbox" in err["message"], err
        st, body = call(s, "POST", f"/sandboxes/{warm}/fork", {})  # no fork either
        assert st == 429 and "one sandbox" in json.loads(body)["message"], (st, body)
        assert list(entries(s)) == [warm]
        st, body = call(s, "GET", "/sandboxes")
        assert st == 200 and [x["sandboxID"] for x in json.loads(body)] == [warm]
        assert health(s) == 200
        st, _ = call(s, "DELETE", f"/sandboxes/{warm}")
        assert st == 204
        # The pod served its one: unready for good (polled: the watcher's period).
        deadline = time.monotonic() + 60
        while health(s) != 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert health(s) == 503, tail(s.log_path)
        assert "the pod's sandbox ended" in tail(s.log_path)
        st, _ = call(s, "POST", "/sandboxes", {"templateID": "base"})
        assert st == 429
        assert entries(s) == {}
    finally:
        problems = s.stop()
    assert not problems, "\n".join(problems)
