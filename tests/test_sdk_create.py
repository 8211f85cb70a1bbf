"""Sandbox.create()'s failure paths, none of which costs a full boot. What a
successful create() gives (boot report, preloads done, memory, kill and
shutdown leaving nothing) is tested on the session's VM: test_vm_qemu's
test_create_waits_for_the_preloads_and_reports_every_boot_stage and
test_vm_e2e's test_kill_then_a_fresh_sandbox_works_and_shuts_down_cleanly."""

import os
import sys
import time

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


def test_connect_retries_while_the_vmm_has_bound_its_socket_but_not_yet_listens(tmp_path):
    """QEMU creates its chardev socket file (bind) a moment before listen():
    a connect in between is refused, and start() returns as soon as the file
    exists. A stand-in process does the same slowly (bind, 0.3 s, listen),
    since QEMU's window is too short to hit on purpose; the connect must wait
    for it instead of failing with ECONNREFUSED (seen in CI)."""
    import subprocess
    from cellvm.vmm_qemu import QemuVM
    build_image_or_skip()
    vm = QemuVM(IMAGE)
    vm.dir = str(tmp_path)
    stand_in = ("import socket, time, sys\n"
                "s = socket.socket(socket.AF_UNIX)\n"
                "s.bind(sys.argv[1]); time.sleep(0.3); s.listen(1)\n"
                "c, _ = s.accept(); c.recv(1)\n")
    vm.proc = subprocess.Popen([sys.executable, "-c", stand_in, vm.serial_socket])
    try:
        while not os.path.exists(vm.serial_socket):
            time.sleep(0.001)
        t0 = time.monotonic()
        sock = vm._connect_socket(time.monotonic() + 10)
        assert time.monotonic() - t0 > 0.1  # it was refused at first, and waited
        sock.close()
        assert vm.proc.wait(timeout=10) == 0
    finally:
        vm.proc.kill()
        vm.proc.wait()
