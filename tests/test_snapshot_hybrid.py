"""Templates, clones and pause/resume for Firecracker and Cloud Hypervisor,
through their snapshot APIs (docs/SNAPSHOTS.md, docs/VMM.md "Snapshots").

Neither VMM can run on this machine, so tests/fake_vmm.py stands in for the
binary (first on PATH under the VMM's name): it checks the launch it is
given, answers the API calls as the VMMs document them (Firecracker: PATCH
/vm, PUT /snapshot/create and /snapshot/load; Cloud Hypervisor: vm.pause,
vm.snapshot, vm.restore, vm.resume), writes and reads snapshot files of its
own, serves the hybrid-vsock socket and bridges it to a real cellvm-agent in
dev mode. What is checked: the calls and their bodies, the files, the
per-clone sockets, cells through a restored "guest", the ids, and that
nothing is left. What is not: a real VMM saving and loading a real guest.
"""

import json
import os
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cellvm import Sandbox, SandboxException, SandboxState  # noqa: E402
import registry_view  # noqa: E402
import snapshot_format as snapshot  # noqa: E402
from cellvm.launch import SNAPSHOT_ENV  # noqa: E402
from conftest import IMAGE, build_image_or_skip, process_gone, processes_mentioning  # noqa: E402

FAKE_VMM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_vmm.py")


@pytest.fixture
def stand_ins(tmp_path, monkeypatch, agent):
    """The stand-in VMMs on PATH; temp files, templates, registry and paused
    store in private short directories (a Unix socket path has <= 107 bytes)."""
    build_image_or_skip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("firecracker", "cloud-hypervisor"):
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE_VMM} {name} "$@"\n')
        wrapper.chmod(0o755)
    tmp = tempfile.mkdtemp(prefix="cellvm-t-", dir="/tmp")
    state = tempfile.mkdtemp(prefix="cellvm-s-", dir="/tmp")
    log = tmp_path / "fake-vmm.json"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("CELLVM_FAKE_VMM_AGENT", agent.sock)
    monkeypatch.setenv("CELLVM_FAKE_VMM_LOG", str(log))
    monkeypatch.setenv(snapshot.TEMPLATE_DIR_ENV, os.path.join(state, "t"))
    monkeypatch.setenv(snapshot.PAUSED_DIR_ENV, os.path.join(state, "p"))
    monkeypatch.setenv(registry_view.RUNTIME_ENV, os.path.join(state, "r"))
    monkeypatch.setenv(SNAPSHOT_ENV, "1")  # conftest's default is cold boots
    monkeypatch.setattr(tempfile, "tempdir", tmp)
    yield tmp, str(log) + ".api"
    left = registry_view.killed_leftovers(os.path.join(state, "r"))
    import shutil
    shutil.rmtree(state)
    assert not left, left
    os.rmdir(tmp)  # fails if a VM left a temp dir


def api_calls(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("vmm", ["firecracker", "cloud-hypervisor"])
def test_create_builds_a_template_then_restores_clones_through_the_api(stand_ins, vmm):
    tmp, api_log = stand_ins
    a = Sandbox.create(IMAGE, vmm=vmm, memory_mb=512)  # builds the template, then restores it
    b = Sandbox.create(IMAGE, vmm=vmm, memory_mb=512)  # restores it
    try:
        assert a.run_code("6 * 7").text == "42" and b.run_code("1 + 1").text == "2"
        assert a.restore_report is not None and b.restore_report is not None
        assert a.sandbox_id != b.sandbox_id and a.vm.dir != b.vm.dir
        calls = api_calls(api_log)
        builder = calls[0]["pid"]
        built = [(c["method"], c["url"]) for c in calls if c["pid"] == builder]
        (tdir, snapdir, m), = [(td, cur, m) for td, cur, m in snapshot.list_templates()]
        assert m.kind == "template" and m.vmm == vmm and m.memory_mb == 512
        if vmm == "firecracker":
            assert built == [("PATCH", "/vm"), ("PUT", "/snapshot/create")]
            create = calls[1]["body"]
            assert create["snapshot_type"] == "Full"
            assert os.path.dirname(create["snapshot_path"]).endswith(".tmp")  # built aside
            assert os.path.isfile(os.path.join(snapdir, "state"))
            assert os.path.getsize(os.path.join(snapdir, "memory")) == 512 << 20
            for sbx in (a, b):
                mine = [c for c in calls if c["pid"] == sbx.vmm_pid]
                assert [(c["method"], c["url"]) for c in mine] == [("PUT", "/snapshot/load"),
                                                                  ("PATCH", "/vm")]
                load = mine[0]["body"]
                assert load["snapshot_path"] == os.path.join(snapdir, "state")
                assert load["mem_backend"] == {"backend_type": "File",
                                               "backend_path": os.path.join(snapdir, "memory")}
                # No vsock_override (Firecracker < 1.16 refuses the load for it):
                # the snapshot's relative uds_path is bound in each clone's own dir.
                assert "vsock_override" not in load
                assert os.path.exists(os.path.join(sbx.vm.dir, "vsock.sock"))
                assert mine[1]["body"] == {"state": "Resumed"}
        else:
            assert built == [("PUT", "/api/v1/vm.pause"), ("PUT", "/api/v1/vm.snapshot")]
            for name in ("config.json", "state.json", "memory-ranges"):
                assert os.path.isfile(os.path.join(snapdir, name))
            for sbx in (a, b):
                mine = [c for c in calls if c["pid"] == sbx.vmm_pid]
                assert [c["url"] for c in mine] == ["/api/v1/vm.restore", "/api/v1/vm.resume"]
                src = os.path.join(sbx.vm.dir, "restore")
                assert mine[0]["body"] == {"source_url": f"file://{src}"}
                with open(os.path.join(src, "config.json")) as f:
                    config = f.read()
                assert os.path.join(sbx.vm.dir, "vsock.sock") in config
                assert m.instance_dir not in config  # the template VM's paths are gone
        gone = [(s.vmm_pid, s.vm.dir) for s in (a, b)]
    finally:
        a.kill()
        b.kill()
    for pid, d in gone:
        assert process_gone(pid) and not os.path.exists(d)
    assert os.listdir(tmp) == [] and processes_mentioning(tmp) == []


@pytest.mark.parametrize("vmm", ["firecracker", "cloud-hypervisor"])
def test_pause_and_resume_through_the_api_keep_the_id(stand_ins, vmm):
    tmp, api_log = stand_ins
    sbx = Sandbox.create(IMAGE, vmm=vmm, memory_mb=512)
    sid, old_pid = sbx.sandbox_id, sbx.vmm_pid
    assert sbx.pause() is True and process_gone(old_pid)
    assert [(i.sandbox_id, i.state) for i in Sandbox.list().next_items()] == \
        [(sid, SandboxState.PAUSED)]
    saved = [c for c in api_calls(api_log) if c["pid"] == old_pid][-1]
    if vmm == "firecracker":
        assert saved["url"] == "/snapshot/create"
        assert saved["body"]["snapshot_path"].startswith(snapshot.paused_root())
    else:
        assert saved["url"] == "/api/v1/vm.snapshot"
    back = Sandbox.connect(sid)
    try:
        assert back.sandbox_id == sid and back.vmm_pid != old_pid
        assert back._entry.key == sid  # resumed under its own registry key
        assert back.run_code("2 + 3").text == "5"
        assert os.listdir(snapshot.paused_root()) == ["lock"]
        pid, d = back.vmm_pid, back.vm.dir
    finally:
        back.kill()
    assert process_gone(pid) and not os.path.exists(d)


def test_a_foreign_snapshot_fails_in_the_vmm_with_its_words_and_leaves_no_process(stand_ins):
    tmp, api_log = stand_ins
    a = Sandbox.create(IMAGE, vmm="firecracker", memory_mb=512)
    a.kill()
    (td, snapdir, m), = snapshot.list_templates()
    with open(os.path.join(snapdir, "state"), "r+") as f:  # same size, not Firecracker's
        size = os.path.getsize(f.name)
        f.write("x" * size)
    with pytest.raises(SandboxException) as e:
        Sandbox.create(IMAGE, vmm="firecracker", memory_mb=512, snapshot=td.path)
    msg = str(e.value)
    assert os.path.join(snapdir, "state") in msg and "Load snapshot error" in msg, msg
    load = api_calls(api_log)[-1]
    assert load["url"] == "/snapshot/load" and load["status"] == 400
    assert process_gone(load["pid"])  # Firecracker ends itself after a failed load
    assert processes_mentioning(tmp) == []


def test_a_missing_memory_file_is_named_before_any_vmm_starts(stand_ins):
    tmp, api_log = stand_ins
    Sandbox.create(IMAGE, vmm="cloud-hypervisor", memory_mb=512).kill()
    (td, snapdir, m), = snapshot.list_templates()
    n = len(api_calls(api_log))
    os.unlink(os.path.join(snapdir, "memory-ranges"))
    with pytest.raises(SandboxException) as e:
        Sandbox.create(IMAGE, vmm="cloud-hypervisor", memory_mb=512, snapshot=td.path)
    assert "memory-ranges" in str(e.value) and "missing" in str(e.value)
    assert len(api_calls(api_log)) == n
    # The default mode rebuilds it instead (it no longer fits).
    sbx = Sandbox.create(IMAGE, vmm="cloud-hypervisor", memory_mb=512)
    try:
        assert sbx.run_code("1").text == "1"
    finally:
        sbx.kill()
