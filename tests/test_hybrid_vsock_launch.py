"""Sandbox.create(vmm="firecracker" / "cloud-hypervisor"): `cellvm create
--json --vmm ...` (client/c/vmm_hybrid.c), the hybrid vsock handshake, a real
agent behind it, and kill().

Neither VMM can run on this machine, so tests/fake_vmm.py stands in for the
binary (first on PATH under the VMM's name): it checks the configuration the
launcher wrote, serves the hybrid-vsock socket, turns the first connections
away (the guest is "booting") and bridges the stream to a real cellvm-agent
in dev mode. What is not exercised: the VMM itself booting the image.
"""

import json
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cellvm import Sandbox, SandboxException  # noqa: E402
from conftest import IMAGE, build_image_or_skip, process_gone, processes_mentioning  # noqa: E402

FAKE_VMM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_vmm.py")


@pytest.fixture
def fake_vmms(tmp_path, monkeypatch, agent):
    """`firecracker` and `cloud-hypervisor` on PATH are the fake; temp files
    go to a private directory, so "nothing left behind" can be checked
    exactly. It is a short path: a Unix socket path has at most 107 bytes."""
    build_image_or_skip()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("firecracker", "cloud-hypervisor"):
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE_VMM} {name} "$@"\n')
        wrapper.chmod(0o755)
    import tempfile
    tmp = tempfile.mkdtemp(prefix="cellvm-t-", dir="/tmp")
    log = tmp_path / "fake-vmm.json"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("CELLVM_FAKE_VMM_AGENT", agent.sock)
    monkeypatch.setenv("CELLVM_FAKE_VMM_LOG", str(log))
    monkeypatch.setenv("TMPDIR", tmp)  # the VM's directory: `cellvm create` makes it there
    monkeypatch.setattr(tempfile, "tempdir", tmp)
    yield tmp, log
    os.rmdir(tmp)  # fails if a test left something in it


@pytest.mark.parametrize("vmm", ["firecracker", "cloud-hypervisor"])
def test_create_runs_a_cell_and_kill_leaves_nothing(fake_vmms, vmm):
    tmp, log = fake_vmms
    sbx = Sandbox.create(IMAGE, vmm=vmm, memory_mb=512, vcpus=2, boot_timeout=120,
                         envs={"GREETING": "hello"})
    try:
        vm_dir = sbx.vm.dir
        assert os.path.dirname(vm_dir) == tmp
        with open(log) as f:
            launched = json.load(f)
        assert sbx.vmm_pid == launched["pid"] and not process_gone(sbx.vmm_pid)
        # What the VMM was told: the image's ELF kernel, the vsock socket in
        # the VM's temp dir, the size asked for, the user-code memory limit.
        vsock_socket = os.path.join(vm_dir, "vsock.sock")
        if vmm == "firecracker":
            cfg = launched["config"]
            assert cfg["boot-source"]["kernel_image_path"] == os.path.join(IMAGE, "vmlinux")
            assert cfg["vsock"]["uds_path"] == "vsock.sock" and launched["cwd"] == vm_dir
            assert cfg["machine-config"]["mem_size_mib"] == 512
            assert cfg["machine-config"]["vcpu_count"] == 2
            assert "cellvm.mem_limit=384M" in cfg["boot-source"]["boot_args"]
        else:
            opts = launched["config"]
            assert opts["--kernel"] == os.path.join(IMAGE, "vmlinux")
            assert opts["--vsock"] == f"cid=3,socket={vsock_socket}"
            assert opts["--memory"] == "size=512M" and opts["--cpus"] == "boot=2"
            assert "cellvm.mem_limit=384M" in opts["--cmdline"]
            assert sbx.vm.console() == "fake guest console\n"
        # A cell through the handshake and the bridge, in the real agent.
        ex = sbx.run_code("import os\nprint(os.environ['GREETING'])\n6 * 7")
        assert ex.text == "42" and ex.logs.stdout == ["hello\n"]
        # create() waited for the zygote: the boot report ends at executor_ready.
        stages = [b for _, b, _ in sbx.boot_report.stages]
        assert stages and stages[-1] == "executor_ready"
        # Its id is its registry key ("firecracker-1a2b3c4d"): a DNS label, as E2B's.
        assert re.fullmatch(r"[a-z0-9-]{1,63}", sbx.sandbox_id)
        assert sbx.sandbox_id == sbx._entry.key and sbx.sandbox_id.startswith(vmm.replace("-", ""))
    finally:
        pid = sbx.vmm_pid
        sbx.kill()
    assert process_gone(pid)
    assert not os.path.exists(vm_dir) and os.listdir(tmp) == []
    assert processes_mentioning(str(tmp)) == []


def test_a_vmm_that_exits_at_once_fails_fast_with_its_output(fake_vmms, monkeypatch):
    tmp, _ = fake_vmms
    monkeypatch.setenv("CELLVM_FAKE_VMM_FAIL", "Error booting VM: KVM not available")
    with pytest.raises(SandboxException) as e:
        Sandbox.create(IMAGE, vmm="firecracker", boot_timeout=60)
    assert "firecracker output" in str(e.value)  # `cellvm create` says what the VMM printed
    assert "KVM not available" in str(e.value)
    assert os.listdir(tmp) == []


def test_boot_files_reach_the_vmm(fake_vmms, tmp_path):
    """kernel= / initramfs=False / rootfs= go into the configuration."""
    from test_vm_configs import make_erofs
    _, log = fake_vmms
    kernel = tmp_path / "vmlinux"  # stands for make kernel's: an ELF kernel elsewhere
    kernel.symlink_to(os.path.join(IMAGE, "vmlinux"))
    erofs = make_erofs(tmp_path)
    with Sandbox.create(IMAGE, vmm="cloud-hypervisor", kernel=str(kernel), initramfs=False,
                        rootfs=str(erofs), wait_ready=False, timeout=60) as sbx:
        assert sbx.ping() is not None
    with open(log) as f:
        opts = json.load(f)["config"]
    assert opts["--kernel"] == str(kernel) and "--initramfs" not in opts
    assert opts["--disk"] == f"path={erofs},readonly=on"
    words = opts["--cmdline"].split()
    assert {"init=/sbin/cellvm-init", "rootfstype=erofs", "root=/dev/vda", "ro"} <= set(words)
