"""Firecracker and Cloud Hypervisor launch descriptions (neither VMM runs here):
what they are given must point at the image's real files, with the kernel
command line of the manifest, a read-only root disk and a hybrid vsock socket.
"""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm.vmm_cloud_hypervisor import cloud_hypervisor_argv  # noqa: E402
from cellvm.vmm_firecracker import firecracker_argv, write_firecracker_config  # noqa: E402
from cellvm.vmm_qemu import QemuVM, VMError, kernel_cmdline, load_manifest  # noqa: E402
from test_vm_qemu import IMAGE, build_image_or_skip  # noqa: E402


@pytest.fixture(scope="module")
def manifest():
    build_image_or_skip()
    return load_manifest(IMAGE)


def test_firecracker_config(manifest, tmp_path):
    path, cfg = write_firecracker_config(IMAGE, str(tmp_path), memory_mb=512, vcpus=2)
    with open(path) as f:
        assert json.load(f) == cfg
    boot = cfg["boot-source"]
    assert boot["kernel_image_path"] == os.path.join(IMAGE, "vmlinux")
    assert boot["initrd_path"] == os.path.join(IMAGE, "initramfs.cpio.gz")
    for p in (boot["kernel_image_path"], boot["initrd_path"], cfg["drives"][0]["path_on_host"]):
        assert os.path.isfile(p), p
    with open(boot["kernel_image_path"], "rb") as f:
        assert f.read(4) == b"\x7fELF"  # Firecracker loads ELF, not bzImage
    assert boot["boot_args"] == kernel_cmdline(manifest, "firecracker", False)
    assert "reboot=k" in boot["boot_args"] and "tsc_early_khz" not in boot["boot_args"]
    assert cfg["drives"][0]["is_read_only"] is True
    assert cfg["drives"][0]["is_root_device"] is False
    assert cfg["machine-config"] == {"vcpu_count": 2, "mem_size_mib": 512, "smt": False}
    assert cfg["vsock"] == {"guest_cid": 3, "uds_path": str(tmp_path / "vsock.sock")}
    assert firecracker_argv(path) == ["firecracker", "--no-api", "--config-file", path]


def test_firecracker_boot_timer_and_tap(manifest, tmp_path):
    _, cfg = write_firecracker_config(IMAGE, str(tmp_path), boot_timer=True, tap="tap0",
                                      extra_cmdline="cellvm.debug=1")
    assert cfg["boot-source"]["boot_args"].endswith("cellvm.boot_timer=1 cellvm.debug=1")
    assert cfg["network-interfaces"] == [{"iface_id": "eth0", "host_dev_name": "tap0"}]


def test_cloud_hypervisor_argv(manifest, tmp_path):
    argv = cloud_hypervisor_argv(IMAGE, str(tmp_path), memory_mb=768, vcpus=2)
    opts = dict(zip(argv[1::2], argv[2::2]))
    assert argv[0] == "cloud-hypervisor"
    assert opts["--kernel"] == os.path.join(IMAGE, "vmlinux")
    assert opts["--cmdline"] == kernel_cmdline(manifest, "cloud-hypervisor", False)
    assert opts["--disk"] == f"path={os.path.join(IMAGE, 'rootfs.ext4')},readonly=on"
    assert opts["--cpus"] == "boot=2" and opts["--memory"] == "size=768M"
    assert opts["--vsock"] == f"cid=3,socket={tmp_path / 'vsock.sock'}"
    # its devices are virtio-pci: the initramfs must load the PCI transport
    assert "virtio_pci" in manifest["modules"]["load"]


def test_qemu_argv_uses_microvm_and_the_serial_port(manifest):
    vm = QemuVM(IMAGE, memory_mb=256, vcpus=2, accel="tcg", network="user", vsock=False)
    vm.dir = "/nonexistent-dir"  # argv only: nothing is started
    argv = vm.argv()
    vm.dir = None
    joined = " ".join(argv)
    assert argv[argv.index("-M") + 1].startswith("microvm")
    assert argv[argv.index("-cpu") + 1] == "max"  # TCG: the default CPU lacks what numpy uses
    cmdline = argv[argv.index("-append") + 1]
    assert "tsc_early_khz=2000000" in cmdline and "cellvm.net=static" in cmdline
    assert "virtserialport,chardev=agent,name=cellvm" in joined
    assert "readonly=on" in joined and "virtio-net-device" in joined
    assert argv[argv.index("-m") + 1] == "256" and argv[argv.index("-smp") + 1] == "2"


def test_qemu_rejects_bad_options_and_missing_images(tmp_path):
    with pytest.raises(ValueError):
        QemuVM(IMAGE, network="bridge")
    with pytest.raises(VMError, match="make image"):
        QemuVM(str(tmp_path))
