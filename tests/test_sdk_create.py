"""Sandbox.create()'s failure paths, none of which costs a full boot. What a
successful create() gives (boot report, preloads done, memory, kill and
shutdown leaving nothing) is tested on the session's VM: test_vm_qemu's
test_create_waits_for_the_preloads_and_reports_every_boot_stage and
test_vm_e2e's test_kill_then_a_fresh_sandbox_works_and_shuts_down_cleanly."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cellvm import Sandbox, SandboxException, TimeoutException  # noqa: E402
from conftest import IMAGE, build_image_or_skip, processes_mentioning  # noqa: E402


def test_missing_vmm_binary_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    for vmm, binary in (("firecracker", "firecracker"), ("cloud-hypervisor", "cloud-hypervisor"),
                        ("qemu", "qemu-system-x86_64")):
        with pytest.raises(SandboxException) as e:
            Sandbox.create(IMAGE, vmm=vmm)
        assert f"`{binary}` binary was not found" in str(e.value)


def test_bad_arguments():
    with pytest.raises(ValueError):
        Sandbox.create(IMAGE, vmm="bochs")
    with pytest.raises(SandboxException) as e:
        Sandbox.create(os.path.join(ROOT, "build", "no-such-image"))
    assert "make image" in str(e.value)


def test_boot_timeout_raises_and_leaves_nothing(tmp_path, monkeypatch):
    build_image_or_skip()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    with pytest.raises(TimeoutException):
        Sandbox.create(IMAGE, boot_timeout=0.5)
    assert os.listdir(tmp_path) == []
    assert processes_mentioning(str(tmp_path)) == []
