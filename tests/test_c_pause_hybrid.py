"""Pause and resume of Firecracker and Cloud Hypervisor sandboxes in C
(client/c/pause_hybrid.c, cli_pause.c, snapshot_hybrid.c): `cellvm create
--vmm ...` restores a template, `cellvm pause` saves it through the VMM's
API into the paused store the Python SDK reads, `cellvm ps` lists it as
paused, `cellvm resume` brings it back under the same id with a deadline of
its own, and the error cases.

The VMMs are a stand-in: neither can run here (no KVM that runs a stock
guest, no vhost-vsock), so tests/fake_vmm.py is first on PATH under each
name (see test_c_snapshot_hybrid.py). It answers the API calls as the two
VMMs document them, writes and reads snapshot files of its own, and bridges
its hybrid vsock to one real cellvm-agent in dev mode. So what is checked is
the host's side: the API calls and their bodies, the record's files and
manifest, the registry, ps, the ids, the deadline, the resumed VMM in a temp
dir of its own reached over its hybrid vsock, the agent answering through
it. What is not: a real VMM saving and loading a real guest's memory (the
"guest" here is the same agent process throughout, so a variable surviving
the pause proves the connection, not the snapshot), nor ADD_ENTROPY and
SET_TIME, which a dev-mode agent is not sent (it would set the host's clock).
"""

import json
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_c_hybrid_vmm import CLI, VMMS, Env  # noqa: E402
from test_c_snapshot_hybrid import api_calls  # noqa: E402
from conftest import AgentProcess, build_image_or_skip, process_gone  # noqa: E402

TIMEOUT_S = 45


@pytest.fixture(scope="module")
def agent():
    a = AgentProcess(preload="")
    yield a
    a.stop()
    assert a.sanitizer_report() is None, a.sanitizer_report()


@pytest.fixture(scope="module")
def env(tmp_path_factory, agent):
    """One stand-in environment and one template per VMM for the module."""
    build_image_or_skip()
    base = tmp_path_factory.mktemp("hybridpause")
    e = Env(base, agent.sock)
    e.env.update(CELLVM_SNAPSHOT="1", CELLVM_TEMPLATE_DIR=str(base / "templates"))
    for vmm in VMMS:
        r = e.cli("snapshot", "create", "--vmm", vmm, "--memory", "512")
        assert r.returncode == 0, r.stderr
    yield e
    leftovers = os.listdir(e.tmp)
    shutil.rmtree(e.tmp, ignore_errors=True)
    assert leftovers == [], f"left in TMPDIR: {leftovers}"


@pytest.fixture
def sdk_env(env, monkeypatch):
    """The Python SDK's host.py running the CLI in the stand-in environment."""
    for k, v in env.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("CELLVM_BIN", CLI)
    from cellvm import host
    return host


def run(conn, code):
    """A cell over the agent connection: its stdout."""
    from cellvm import _wire
    out = []
    for t, body in conn.request(_wire.EXECUTE, {"code": code}).messages(timeout=60):
        if t == _wire.STREAM:
            out.append(body.get("text", ""))
        elif t in (_wire.ERROR, _wire.EXEC_ERROR):
            raise AssertionError(f"cell failed: {body}")
        elif t == _wire.OK:
            break
    return "".join(out)


def ps(env):
    """{id: row} of `cellvm ps --json`."""
    r = env.cli("ps", "--json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    return {row["sandbox_id"]: row for row in rows}


@pytest.mark.parametrize("vmm", VMMS)
def test_pause_ps_resume_keeps_the_id(env, sdk_env, vmm):
    host = sdk_env
    info, conn = host._with_connection(["create", "--json", "--vmm", vmm, "--memory", "512",
                                        "--timeout", "60"], "create", 120)
    sid, pid = info["sandbox_id"], info["pid"]
    try:
        assert run(conn, "x = 6 * 7\nprint('set')") == "set\n"
    finally:
        conn.close()
    calls = len(api_calls(env))

    r = env.cli("pause", "--json", "--envs", '{"GREETING": "hi"}', sid)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    record = out["record"]
    assert out["sandbox_id"] == sid and os.path.dirname(record) == env.env["CELLVM_PAUSED_DIR"]
    assert process_gone(pid)
    mine = [c for c in api_calls(env)[calls:] if c["pid"] == pid]
    files = ({"state", "memory", "manifest"} if vmm == "firecracker"
             else {"config.json", "state.json", "memory-ranges", "manifest"})
    assert set(os.listdir(record)) == files
    if vmm == "firecracker":
        assert [(c["method"], c["url"], c["body"]) for c in mine] == [
            ("PATCH", "/vm", {"state": "Paused"}),
            ("PUT", "/snapshot/create", {"snapshot_type": "Full",
                                         "snapshot_path": f"{record}.tmp/state",
                                         "mem_file_path": f"{record}.tmp/memory"})]
    else:
        assert [(c["url"], c["body"]) for c in mine] == [
            ("/api/v1/vm.pause", {}),
            ("/api/v1/vm.snapshot", {"destination_url": f"file://{record}.tmp"})]
    assert out["state_bytes"] >= 512 << 20  # its memory file is the VM's size

    # The record is the SDK's: its paused store lists it, with what it was given.
    import snapshot_format as snap
    [(d, m)] = snap.PausedStore().records()
    assert (d, m.kind, m.vmm, m.sandbox_id, m.registry_key) == (record, "paused", vmm, sid, sid)
    assert m.envs == {"GREETING": "hi"} and m.generation == 0 and m.memory_size == 512 << 20
    assert m.instance_dir == info["dir"] and m.template == "" and m.started_ms == info["started_ms"]
    rows = ps(env)
    assert rows[sid]["state"] == "paused" and rows[sid]["vmm"] == vmm

    r = env.cli("pause", sid)
    assert r.returncode == 1 and "paused already" in r.stderr

    calls = len(api_calls(env))
    info2, conn = host.resume(sid, TIMEOUT_S)
    try:
        assert info2["sandbox_id"] == sid and info2["pid"] != pid
        assert info2["deadline_ms"] - info2["started_ms"] == TIMEOUT_S * 1000
        assert run(conn, "print(x)") == "42\n"
    finally:
        conn.close()
    assert not os.path.exists(record)
    resumed = [c for c in api_calls(env)[calls:] if c["pid"] == info2["pid"]]
    if vmm == "firecracker":
        assert [(c["method"], c["url"]) for c in resumed] == [("PUT", "/snapshot/load"),
                                                              ("PATCH", "/vm")]
        assert resumed[0]["body"]["snapshot_path"] == f"{record}/state"
        assert resumed[0]["body"]["mem_backend"]["backend_path"] == f"{record}/memory"
    else:
        assert [c["url"] for c in resumed] == ["/api/v1/vm.restore", "/api/v1/vm.resume"]
        assert resumed[0]["body"]["source_url"].startswith(f"file://{env.tmp}/cellvm-cloud-")
    rows = ps(env)
    assert rows[sid]["state"] == "running" and rows[sid]["pid"] == info2["pid"]

    # Paused again (its manifest now the record's), then dropped while paused.
    r = env.cli("pause", sid)
    assert r.returncode == 0, r.stderr
    assert process_gone(info2["pid"])
    r = env.cli("kill", sid)
    assert r.returncode == 0, r.stderr
    assert sid not in ps(env) and not os.path.exists(record)


@pytest.mark.parametrize("vmm", VMMS)
def test_the_sdk_pauses_and_resumes_through_the_cli(env, sdk_env, vmm, monkeypatch):
    """sbx.pause() and Sandbox.connect(id) of a Firecracker or Cloud
    Hypervisor sandbox run `cellvm pause --json` and `cellvm resume --json`
    (pause.py's hybrid branches): the resumed sandbox is the CLI's (a CliVM)."""
    import tempfile
    from cellvm import Sandbox, SandboxState
    import snapshot_format as snap
    monkeypatch.setattr(tempfile, "tempdir", env.tmp)
    sbx = Sandbox.create(vmm=vmm, memory_mb=512)
    sid, pid = sbx.sandbox_id, sbx.vmm_pid
    assert sbx.run_code("y = 5").error is None
    assert sbx.pause() is True and process_gone(pid)
    [(d, m)] = snap.PausedStore().records()
    assert (m.kind, m.vmm, m.sandbox_id, m.memory_size) == ("paused", vmm, sid, 512 << 20)
    assert [(i.sandbox_id, i.state) for i in Sandbox.list().next_items()] == \
        [(sid, SandboxState.PAUSED)]
    back = Sandbox.connect(sid, timeout=TIMEOUT_S)
    try:
        assert type(back.vm).__name__ == "CliVM" and back.sandbox_id == sid
        assert back.run_code("y * 2").text == "10"
    finally:
        back.kill()
    assert sid not in ps(env) and snap.PausedStore().records() == []


def pause_is_refused(env, sid, why):
    """`cellvm pause` exits 3 saying `why`; the sandbox runs on, no record is left."""
    r = env.cli("pause", sid)
    assert r.returncode == 3 and why in r.stderr, r.stderr
    assert ps(env)[sid]["state"] == "running"
    assert [n for n in os.listdir(env.env["CELLVM_PAUSED_DIR"]) if n != "lock"] == []


def test_a_clone_without_its_manifest_is_refused(env):
    """Every clone csh_spawn restores keeps the manifest it was restored
    from in its temp dir; one without it (a hand-removed runtime file) is
    refused rather than described from guesses, and runs on as it was."""
    r = env.cli("create", "--json", "--vmm", "cloud-hypervisor", "--memory", "512",
                "--timeout", "60")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    sid = info["sandbox_id"]
    try:
        os.unlink(os.path.join(info["dir"], "manifest"))
        pause_is_refused(env, sid, "keeps no manifest")
    finally:
        assert env.cli("kill", sid).returncode == 0


def test_pause_of_a_cold_boot_is_refused(env):
    """A sandbox booted without a template runs its VMM without an API socket."""
    r = env.cli("create", "--json", "--vmm", "firecracker", "--memory", "512", "--timeout", "60",
                CELLVM_SNAPSHOT="0")
    assert r.returncode == 0, r.stderr
    sid = json.loads(r.stdout)["sandbox_id"]
    try:
        pause_is_refused(env, sid, "no API socket")
    finally:
        assert env.cli("kill", sid).returncode == 0


def test_resume_of_an_unknown_id(env):
    r = env.cli("resume", "--json", "firecracker-0badcafe")
    assert r.returncode == 1 and "no paused sandbox has that id" in r.stderr and r.stdout == ""
    r = env.cli("pause", "firecracker-0badcafe")
    assert r.returncode == 1 and "no live sandbox" in r.stderr
