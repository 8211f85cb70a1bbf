"""Egress by policy for the Python SDK's own sandboxes (docs/NETWORK.md), in a
real micro-VM restored from the session's template: `Sandbox.create(network=
{...})` runs `cellvm create --egress`, whose egress keeper carries the guest
proxy's streams over QEMU's second virtio-serial port and decides them as
`cellvm serve` does (test_egress.py has the rules' cases in full); the
loopback servers of test_egress.py answer under the names $CELLVM_HOSTS gives.
"""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conftest import IMAGE, SNAPSHOT_MEMORY_MB, processes_mentioning  # noqa: E402
from test_egress import RULES, origins  # noqa: E402,F401 (a fixture)
import registry_view  # noqa: E402
from cellvm import InvalidArgumentException, Sandbox  # noqa: E402

SDK_RULES = {"allow_out": RULES["allowOut"], "deny_out": RULES["denyOut"]}


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch, origins):  # noqa: F811
    monkeypatch.setenv("CELLVM_HOSTS", origins["hosts"])  # the egress keeper's names
    yield from registry_view.private_state(tmp_path, monkeypatch)


def curl(sbx, url):
    """(HTTP status, body) of `curl URL` run in the sandbox (its envs: the proxy's)."""
    r = sbx.commands.run(f"curl -sS -k -o /tmp/body -w '%{{http_code}}' {url}; echo; "
                         "cat /tmp/body", timeout=120)
    status, _, body = r.stdout.partition("\n")
    return int(status or 0), body


def egress_log(sbx):
    with open(os.path.join(sbx.vm.dir, "egress.log")) as f:
        return f.read()


def test_a_created_sandbox_reaches_what_its_rules_allow_and_keeps_them_across_a_pause(
        vm_template, origins):  # noqa: F811
    sbx = Sandbox.create(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB, network=SDK_RULES, timeout=300)
    try:
        assert sbx._envs["HTTP_PROXY"] == "http://127.0.0.1:3128"
        assert sbx.commands.run("echo $https_proxy $NO_PROXY").stdout.split() == [
            "http://127.0.0.1:3128", "localhost,127.0.0.1,::1"]
        http, https = origins["http"], origins["https"]
        assert curl(sbx, f"http://allowed.test:{http}/hello") == (
            200, f"hello from the origin, Host allowed.test:{http}")
        assert curl(sbx, f"https://allowed.test:{https}/hello")[0] == 200
        # Python's urllib in a cell takes the proxy from the sandbox's envs.
        cell = sbx.run_code("import urllib.request\n"
                            f"urllib.request.urlopen('http://allowed.test:{http}/hello')"
                            ".read().decode()")
        assert cell.error is None and "hello from the origin" in cell.text, cell
        status, body = curl(sbx, f"http://denied.test:{http}/hello")
        assert status == 403 and 'denyOut "denied.test"' in body, body
        assert curl(sbx, f"http://cidr.test:{http}/hello")[0] == 403  # 192.0.2.0/24
        assert "denied.test" in egress_log(sbx)
        # The guest resolves no names itself: no DNS outside.
        r = sbx.commands.run("getent hosts example.com || echo none", timeout=60)
        assert r.stdout.strip() == "none"
        # A live update: denied.test allowed from the next connection on
        # (what it omits is cleared, as in E2B: the CIDR rule is repeated).
        sbx.update_network({"allow_out": ["allowed.test", "denied.test"],
                            "deny_out": ["192.0.2.0/24"]})
        assert curl(sbx, f"http://denied.test:{http}/hello")[0] == 200
        with pytest.raises(InvalidArgumentException, match="network.allowOut: not a name! is no IP address"):
            sbx.update_network({"allow_out": ["not a name!"]})
        assert curl(sbx, f"http://denied.test:{http}/hello")[0] == 200  # the rules before stay
        # A pause keeps the rules with the record; the resume's keeper has them.
        sid = sbx.sandbox_id
        assert sbx.pause() is True
        sbx = Sandbox.connect(sid, timeout=120)
        assert sbx._envs["HTTP_PROXY"] == "http://127.0.0.1:3128"
        assert curl(sbx, f"http://denied.test:{http}/hello")[0] == 200
        assert curl(sbx, f"http://cidr.test:{http}/hello")[0] == 403
        rules = json.loads(sbx_cli("egress", sid))
        assert rules["network"]["allowOut"] == ["allowed.test", "denied.test"]
    finally:
        d = sbx.vm.dir if sbx.vm else None
        sbx.kill()
    if d:
        assert processes_mentioning(d) == []  # its egress keeper ended with the VM


def test_a_sandbox_created_without_rules_gets_its_egress_by_update_network(
        vm_template, origins):  # noqa: F811
    sbx = Sandbox.create(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB, timeout=300)
    try:
        assert "HTTP_PROXY" not in sbx._envs
        assert sbx.run_code("1 + 1").text == "2"  # the default context exists before
        Sandbox.update_network(sbx.sandbox_id, {"allow_out": ["allowed.test"],
                                                "allow_internet_access": False})
        sbx.update_network({"allow_out": ["allowed.test"], "allow_internet_access": False})
        assert curl(sbx, f"http://allowed.test:{origins['http']}/hello")[0] == 200
        # Its cells too, in the context that ran before the update.
        cell = sbx.run_code("import urllib.request\n"
                            f"urllib.request.urlopen('http://allowed.test:{origins['http']}"
                            "/hello').status")
        assert cell.error is None and cell.text == "200", cell
        status, body = curl(sbx, f"http://cidr.test:{origins['http']}/hello")
        assert status == 403 and "allow_internet_access=false" in body, body
    finally:
        sbx.kill()


def sbx_cli(*args):
    import subprocess
    r = subprocess.run([os.path.join(os.path.dirname(IMAGE), "cellvm"), *args],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout
