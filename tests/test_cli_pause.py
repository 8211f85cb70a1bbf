"""`cellvm pause ID` and `cellvm resume ID` (client/c/cli_pause.c, pause.c)
with real QEMU booting the real image, and the paused store shared with the
Python SDK both ways: a sandbox paused by the CLI resumes in the SDK and one
paused by the SDK resumes in the CLI (docs/SNAPSHOTS.md, "Pause and resume").

The registry and the paused store are private to each test, as in
tests/test_snapshot_vm.py.
"""

import json
import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cellvm import Sandbox, SandboxException, SandboxState  # noqa: E402
import registry_view  # noqa: E402
import snapshot_format as snapshot  # noqa: E402
from conftest import IMAGE, SNAPSHOT_MEMORY_MB  # noqa: E402

CLI = os.path.abspath(os.path.join(os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build")),
                                   "cellvm"))


@pytest.fixture(autouse=True)
def private_state(tmp_path, monkeypatch):
    yield from registry_view.private_state(tmp_path, monkeypatch)


def cli(*args, rc=0):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == rc, (args, r.returncode, r.stdout, r.stderr)
    return r


def ps_state(sid):
    rows = [ln.split() for ln in cli("ps").stdout.splitlines()[1:]]
    return {row[-1]: row[-2] for row in rows}.get(sid)


def test_cli_pause_and_resume_keep_a_variable_and_a_file_both_ways_with_the_sdk(vm_template):
    sbx = Sandbox.create(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB, metadata={"who": "cli-test"})
    sid = sbx.sandbox_id
    try:
        sbx.run_code("x = 41")
        sbx.files.write("/tmp/kept.txt", "kept across pause")
        sbx.close()

        # The CLI pauses it: the record is the SDK's, the SDK sees it paused.
        out = json.loads(cli("pause", "--json", sid).stdout)
        assert out["sandbox_id"] == sid and out["state_bytes"] > 0, out
        assert os.path.dirname(out["record"]) == snapshot.paused_root()
        assert ps_state(sid) == "paused"
        info = Sandbox.get_info(sid)
        assert info.state == SandboxState.PAUSED and info.metadata == {"who": "cli-test"}
        assert "paused already" in cli("pause", sid, rc=1).stderr
        assert registry_view.find(sid) is None  # its VMM and entry are gone

        # The CLI resumes it under the same key, with a deadline of its own.
        out = json.loads(cli("resume", "--json", "--timeout", "120", sid).stdout)
        assert out["sandbox_id"] == sid, out
        assert ps_state(sid) == "running"
        assert os.listdir(snapshot.paused_root()) == ["lock"]  # the record is consumed
        entry = registry_view.find(sid)
        assert entry["key"] == sid and entry["pid"] == out["pid"]
        assert 100_000 < out["deadline_ms"] - entry["started_ms"] <= 120_000
        assert "no paused sandbox" in cli("resume", sid, rc=1).stderr
        s = Sandbox.connect(sid)
        assert s.run_code("x + 1").text == "42"
        assert s.files.read("/tmp/kept.txt") == "kept across pause"
        s.run_code("x = 50")
        s.close()

        # Paused by the CLI, resumed by the SDK.
        cli("pause", sid)
        s = Sandbox.connect(sid)
        assert s.run_code("x + 1").text == "51"
        # Paused by the SDK, resumed by the CLI.
        assert s.pause() is True
        assert ps_state(sid) == "paused"
        assert "resumed " + sid in cli("resume", sid).stdout
        s = Sandbox.connect(sid)
        assert s.run_code("x").text == "50"
        assert s.files.read("/tmp/kept.txt") == "kept across pause"
        s.close()
        cli("kill", sid)
        assert ps_state(sid) is None
    finally:
        Sandbox.kill(sid)


def test_cli_pause_refuses_what_it_cannot_pause(vm_template):
    assert "no live sandbox" in cli("pause", "qemu-00000000", rc=1).stderr
    assert "no paused sandbox" in cli("resume", "qemu-00000000", rc=1).stderr
    assert cli("pause", rc=2).returncode == 2
    assert "--timeout" in cli("resume", "--help").stdout


def test_files_only_pause_by_the_sdk_and_the_cli_is_a_new_boot_with_the_files(vm_template):
    """E2B's pause(keep_memory=False): the SDK (through `cellvm pause
    --files-only`) and the CLI keep the files the sandbox changed and no
    memory; a resume by either is a fresh clone of the template with them
    (a new boot id, no variables). While the SDK holds the channel the CLI's
    --files-only is refused (the guest's agent takes one client there)."""
    sbx = Sandbox.create(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB, metadata={"who": "fs-only"})
    sid = sbx.sandbox_id
    boot = "open('/proc/sys/kernel/random/boot_id').read().strip()"
    try:
        sbx.run_code("x = 41")
        sbx.files.write("/home/user/kept.txt", "kept without memory")
        sbx.commands.run("rm /home/user/.profile && ln -s kept.txt /home/user/link")
        boot0 = sbx.run_code(boot).text
        err = cli("pause", "--files-only", sid, rc=3).stderr
        assert f"process {os.getpid()} holds its agent channel" in err, err
        assert ps_state(sid) == "running"

        assert sbx.pause(keep_memory=False) is True
        assert ps_state(sid) == "paused"
        m = snapshot.read_manifest(os.path.join(snapshot.paused_root(), sid))
        assert m.filesystem == "fs.tar" and m.metadata == {"who": "fs-only"}, m.to_text()
        assert sbx.connect() is sbx  # resumed by `cellvm resume`: a new boot
        boot1 = sbx.run_code(boot).text
        assert boot1 != boot0
        assert sbx.run_code("'x' in dir()").text == "False"
        assert sbx.files.read("/home/user/kept.txt") == "kept without memory"
        r = sbx.commands.run("readlink /home/user/link; test -e /home/user/.profile || echo gone; "
                             "stat -c %U /home/user/kept.txt")
        assert r.stdout.split() == ["kept.txt", "gone", "user"], r.stdout
        assert Sandbox.get_info(sid).metadata == {"who": "fs-only"}
        sbx.close()

        # The CLI's --files-only, and its resume.
        out = json.loads(cli("pause", "--json", "--files-only", sid).stdout)
        assert out["state"] == "paused" and 0 < out["state_bytes"] < 64 << 20, out
        out = json.loads(cli("resume", "--json", sid).stdout)
        assert out["sandbox_id"] == sid and out["template"] == m.template, out
        assert os.listdir(snapshot.paused_root()) == ["lock"]
        s = Sandbox.connect(sid)
        assert s.run_code(boot).text not in (boot0, boot1)
        assert s.files.read("/home/user/kept.txt") == "kept without memory"
        s.close()
    finally:
        Sandbox.kill(sid)


def _wait_state(sid, state, within=90):
    deadline = time.monotonic() + within
    while ps_state(sid) != state and time.monotonic() < deadline:
        time.sleep(0.5)
    assert ps_state(sid) == state, (sid, state)


def test_lifecycle_pause_at_the_timeout_then_connect_or_a_request_resumes(vm_template):
    """E2B's lifecycle {"on_timeout": "pause"} (`cellvm create --on-timeout
    pause`): at its timeout its keeper pauses the sandbox (`cellvm pause`) and
    a request says it is paused until connect() resumes it, which pauses
    again at its next timeout; with "auto_resume" a request resumes it."""
    sbx = Sandbox.create(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB, timeout=5,
                         lifecycle={"on_timeout": "pause"})
    sid = sbx.sandbox_id
    auto = None
    try:
        assert sbx.get_info().lifecycle == {"on_timeout": "pause", "auto_resume": False}
        sbx.run_code("x = 41")
        _wait_state(sid, "paused")
        with pytest.raises(SandboxException, match="is paused"):
            sbx.run_code("x")
        info = sbx.get_info()
        assert info.state == SandboxState.PAUSED and info.lifecycle["on_timeout"] == "pause"
        assert sbx.connect(timeout=5) is sbx  # resumed, as E2B's connect does
        assert sbx.run_code("x + 1").text == "42"
        _wait_state(sid, "paused")  # again at its next timeout

        auto = Sandbox.create(IMAGE, memory_mb=SNAPSHOT_MEMORY_MB, timeout=5,
                              lifecycle={"on_timeout": {"action": "pause"}, "auto_resume": True})
        auto.run_code("y = 1")
        _wait_state(auto.sandbox_id, "paused")
        assert auto.run_code("y + 1").text == "2"  # the request resumed it
        info = auto.get_info()
        assert info.state == SandboxState.RUNNING, info
        assert info.lifecycle == {"on_timeout": "pause", "auto_resume": True}
    finally:
        Sandbox.kill(sid)
        if auto is not None:
            auto.kill()
    assert os.listdir(snapshot.paused_root()) == ["lock"]  # kill drops the records
