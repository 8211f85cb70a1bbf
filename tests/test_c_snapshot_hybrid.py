"""Firecracker and Cloud Hypervisor templates in C (client/c/snapshot_hybrid.c):
`cellvm snapshot create|check|manifest --vmm ...` and `cellvm run --vmm ...`
restoring a clone through the VMM's API: the manifest and name say the
launch (docs/SNAPSHOTS.md), and a template built by the CLI is restored by
Sandbox.create().

The VMMs are a stand-in: neither can run here (no KVM that runs a stock
guest, no vhost-vsock), so tests/fake_vmm.py is first on PATH under each
name. It answers the API calls as the VMMs document them (Firecracker: PATCH
/vm, PUT /snapshot/create and /snapshot/load, refusing unknown load fields as
1.15 does; Cloud Hypervisor: vm.pause, vm.snapshot, vm.restore, vm.resume),
writes and reads snapshot files of its own, and bridges its hybrid vsock to a
real cellvm-agent in dev mode. What is checked: the calls and their bodies,
the files, the per-clone sockets, cells through the restored "guest", that
nothing is left. What is not: a real VMM saving and loading a real guest.
"""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from test_c_hybrid_vmm import VMMS, Env  # noqa: E402
from conftest import IMAGE, build_image_or_skip, process_gone  # noqa: E402


@pytest.fixture
def env(tmp_path, fresh_agent):
    build_image_or_skip()
    e = Env(tmp_path, fresh_agent.sock)
    e.env.update(CELLVM_SNAPSHOT="1", CELLVM_TEMPLATE_DIR=str(tmp_path / "templates"))
    yield e
    import shutil
    leftovers = os.listdir(e.tmp)
    shutil.rmtree(e.tmp, ignore_errors=True)
    assert leftovers == [], f"left in TMPDIR: {leftovers}"


def api_calls(env):
    try:
        with open(str(env.log) + ".api") as f:
            return [json.loads(line) for line in f]
    except FileNotFoundError:
        return []


@pytest.mark.parametrize("vmm", VMMS)
def test_manifest_and_name_say_the_launch(env, vmm):
    import snapshot_format as snap
    r = env.cli("snapshot", "manifest", "--vmm", vmm, "--memory", "512")
    assert r.returncode == 0, r.stderr
    head, _, text = r.stdout.partition("\n")
    m = snap.Manifest.from_text(text, "stdout")
    assert m.to_text() == text  # every line a field of the format, in its order
    assert (m.kind, m.vmm, m.image, m.memory_mb, m.vcpus) == ("template", vmm, IMAGE, 512, 1)
    assert f"vmm_binary={env.bin}/{vmm}" in text.splitlines()
    words = m.cmdline.split()
    assert "cellvm.mem_limit=384M" in words and "root=/dev/vda" in words
    assert {f.split(" ", 1)[0] for f in m.file} >= {"kernel", "rootfs"}
    # The name: FNV-1a of the arguments, request, command line, size and files (docs/SNAPSHOTS.md).
    words = m.arg + m.request + [m.cmdline, str(m.memory_mb), str(m.vcpus)]
    name = snap.template_name(vmm, words + [f.split(" ", 3)[3] for f in m.file])
    assert head == "# " + os.path.join(env.env["CELLVM_TEMPLATE_DIR"], name)


@pytest.mark.parametrize("vmm", VMMS)
def test_create_then_run_restores_through_the_api(env, vmm):
    r = env.cli("snapshot", "create", "--vmm", vmm, "--memory", "512")
    assert r.returncode == 0 and "built in" in r.stdout, r.stderr
    snapdir = r.stdout.split(":")[0]
    build = api_calls(env)
    builder = build[0]["pid"]
    assert process_gone(builder)
    if vmm == "firecracker":
        assert [(c["method"], c["url"]) for c in build] == [("PATCH", "/vm"), ("PUT", "/snapshot/create")]
        assert build[0]["body"] == {"state": "Paused"}
        assert build[1]["body"] == {"snapshot_type": "Full", "snapshot_path": build[1]["body"]["snapshot_path"],
                                    "mem_file_path": build[1]["body"]["mem_file_path"]}
        files = {"state", "memory", "manifest"}
    else:
        assert [c["url"] for c in build] == ["/api/v1/vm.pause", "/api/v1/vm.snapshot"]
        files = {"config.json", "state.json", "memory-ranges", "manifest"}
    assert set(os.listdir(snapdir)) == files
    r = env.cli("snapshot", "check", "--vmm", vmm, "--memory", "512")
    assert r.returncode == 0 and "fits this launch" in r.stdout, r.stdout

    # Two runs restore it, each in a temp dir of its own (its own vsock socket).
    for n in (1, 2):
        r = env.cli("run", "--vmm", vmm, "--memory", "512", "-v", "--", f"print({n} * 21)")
        assert r.returncode == 0 and r.stdout == f"{n * 21}\n", r.stderr
        assert f"VM restored in" in r.stderr and f"from {snapdir}" in r.stderr
        assert "building the template" not in r.stderr
    calls = api_calls(env)[len(build):]
    clones = sorted({c["pid"] for c in calls})
    assert len(clones) == 2 and builder not in clones
    for pid in clones:
        mine = [c for c in calls if c["pid"] == pid]
        assert all(c["status"] == 204 for c in mine)
        if vmm == "firecracker":
            assert [(c["method"], c["url"]) for c in mine] == [("PUT", "/snapshot/load"), ("PATCH", "/vm")]
            assert mine[0]["body"] == {"snapshot_path": f"{snapdir}/state", "resume_vm": False,
                                       "mem_backend": {"backend_type": "File",
                                                       "backend_path": f"{snapdir}/memory"}}
            assert mine[1]["body"] == {"state": "Resumed"}
        else:
            assert [c["url"] for c in mine] == ["/api/v1/vm.restore", "/api/v1/vm.resume"]
            source = mine[0]["body"]["source_url"]
            assert source.startswith(f"file://{env.tmp}/cellvm-cloud-hypervisor-")
            assert source.endswith("/restore")
        assert process_gone(pid)
    assert env.ps() == []


@pytest.mark.parametrize("vmm", VMMS)
def test_the_python_sdk_restores_the_cli_template(env, vmm, monkeypatch):
    r = env.cli("snapshot", "create", "--vmm", vmm, "--memory", "512")
    assert r.returncode == 0, r.stderr
    built = api_calls(env)
    for k in ("PATH", "CELLVM_TEMPLATE_DIR", "CELLVM_FAKE_VMM_AGENT", "CELLVM_FAKE_VMM_LOG"):
        monkeypatch.setenv(k, env.env[k])
    import tempfile
    from cellvm import Sandbox
    monkeypatch.setenv("CELLVM_RUNTIME_DIR", env.env["CELLVM_RUNTIME_DIR"])
    monkeypatch.setenv("CELLVM_SNAPSHOT", "1")
    monkeypatch.setattr(tempfile, "tempdir", env.tmp)
    sbx = Sandbox.create(IMAGE, vmm=vmm, memory_mb=512)
    try:
        assert sbx.restore_report is not None
        assert sbx.run_code("6 * 7").text == "42"
    finally:
        sbx.kill()
    saves = ("/snapshot/create", "/api/v1/vm.snapshot")  # the CLI's template, not a new one
    assert not [c for c in api_calls(env)[len(built):] if c["url"] in saves]


def test_a_snapshot_the_vmm_refuses_falls_back_to_a_cold_boot(env):
    """A state file that is not the VMM's: Firecracker refuses the load; the
    template is removed and the run boots cold."""
    r = env.cli("snapshot", "create", "--vmm", "firecracker", "--memory", "512")
    assert r.returncode == 0, r.stderr
    snapdir = r.stdout.split(":")[0]
    state = os.path.join(snapdir, "state")
    size = os.path.getsize(state)
    with open(state, "r+b") as f:
        f.write(b"x" * size)  # same size: the manifest's check passes, the VMM's does not
    r = env.cli("run", "--vmm", "firecracker", "--memory", "512", "--", "print('cold')")
    assert r.returncode == 0 and r.stdout == "cold\n", r.stderr
    assert "did not restore" in r.stderr and "could not restore it" in r.stderr
    assert not os.path.exists(snapdir)


@pytest.mark.parametrize("vmm", VMMS)
def test_the_cli_restores_the_python_sdk_template(env, vmm, monkeypatch):
    for k in ("PATH", "CELLVM_TEMPLATE_DIR", "CELLVM_FAKE_VMM_AGENT", "CELLVM_FAKE_VMM_LOG"):
        monkeypatch.setenv(k, env.env[k])
    import tempfile
    from cellvm import Sandbox
    monkeypatch.setenv("CELLVM_RUNTIME_DIR", env.env["CELLVM_RUNTIME_DIR"])
    monkeypatch.setenv("CELLVM_SNAPSHOT", "1")
    monkeypatch.setattr(tempfile, "tempdir", env.tmp)
    sbx = Sandbox.create(IMAGE, vmm=vmm, memory_mb=512)  # builds the template, restores it
    sbx.kill()
    sdk_calls = len(api_calls(env))
    r = env.cli("run", "--vmm", vmm, "--memory", "512", "-v", "--", "print('from the sdk')")
    assert r.returncode == 0 and r.stdout == "from the sdk\n", r.stderr
    assert "VM restored in" in r.stderr and "building the template" not in r.stderr
    assert len({c["pid"] for c in api_calls(env)[sdk_calls:]}) == 1
