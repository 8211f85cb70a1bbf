"""The Python QEMU launch's argv (cellvm.vmm_qemu, which tests that boot a VM by
hand use): the image's real files, the kernel command line of the manifest,
the boot files and vsock. Firecracker's and Cloud Hypervisor's launch
descriptions are the C CLI's (tests/test_c_hybrid_vmm.py).
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import host_tsc  # noqa: E402
from cellvm.vmm_qemu import QemuVM, VMError, kernel_cmdline, load_manifest  # noqa: E402
from conftest import IMAGE, build_image_or_skip  # noqa: E402


@pytest.fixture(scope="module")
def manifest():
    build_image_or_skip()
    return load_manifest(IMAGE)


def test_qemu_argv_uses_microvm_and_the_serial_port(manifest):
    vm = QemuVM(IMAGE, memory_mb=256, vcpus=2, accel="tcg", network="user", vsock=False)
    vm.dir = "/nonexistent-dir"  # argv only: nothing is started
    argv = vm.argv()
    vm.dir = None
    joined = " ".join(argv)
    assert argv[argv.index("-M") + 1].startswith("microvm")
    assert argv[argv.index("-cpu") + 1] == "max"  # TCG: the default CPU lacks what numpy uses
    cmdline = argv[argv.index("-append") + 1]
    # TCG: the host's TSC frequency, not the image's fallback (docs/VMM.md)
    assert f"tsc_early_khz={host_tsc.khz()}" in cmdline.split() and "cellvm.net=static" in cmdline
    assert cmdline.count("tsc_early_khz=") == 1
    assert "virtserialport,chardev=agent,name=cellvm" in joined
    assert "readonly=on" in joined and "virtio-net-device" in joined
    assert argv[argv.index("-m") + 1] == "256" and argv[argv.index("-smp") + 1] == "2"


def test_qemu_rejects_bad_options_and_missing_images(tmp_path):
    with pytest.raises(ValueError):
        QemuVM(IMAGE, network="bridge")
    with pytest.raises(VMError, match="make image"):
        QemuVM(str(tmp_path))


# --- QemuVM's argv: acceleration, vsock, boot files --------------------------
# These build the command line only (nothing is started): KVM cannot run a
# stock guest on this machine and there is no /dev/vhost-vsock, so those
# branches can only be checked here. TCG boots are in tests/test_vm_qemu.py.


def qemu_argv(**kw):
    vm = QemuVM(IMAGE, **kw)
    vm.dir = "/nonexistent-dir"  # argv only: nothing is started
    try:
        return vm, vm.argv()
    finally:
        vm.dir = None


def opt(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


def test_qemu_argv_kvm_and_tcg(manifest):
    _, kvm = qemu_argv(accel="kvm", vsock=False)
    assert opt(kvm, "-accel") == ["kvm"] and opt(kvm, "-cpu") == ["host"]
    assert "tsc_early_khz" not in opt(kvm, "-append")[0]
    assert opt(kvm, "-append")[0] == kernel_cmdline(manifest, "qemu", False, "")
    _, tcg = qemu_argv(accel="tcg", vsock=False)
    assert opt(tcg, "-accel") == ["tcg"] and opt(tcg, "-cpu") == ["max"]
    assert opt(tcg, "-append")[0].split()[-2:] == [f"tsc_early_khz={host_tsc.khz()}", "tsc=reliable"]
    # The image's value is only the fallback for hosts where the TSC cannot be read.
    assert manifest["cmdline"]["tcg"] == "tsc_early_khz=2000000"


def test_qemu_argv_with_and_without_vsock(manifest):
    vm, argv = qemu_argv(accel="tcg", vsock=True)
    devices = opt(argv, "-device")
    assert f"vhost-vsock-device,guest-cid={vm.vsock_cid}" in devices
    # The serial port stays: it is the fallback channel.
    assert "virtserialport,chardev=agent,name=cellvm" in devices
    assert vm.channel == "vsock"
    vm.dir = "/some/dir"
    assert vm.address == f"vsock:{vm.vsock_cid}:1024"
    assert vm.serial_address == "unix:/some/dir/agent.sock"
    vm.dir = None
    assert vm.address is None  # not started

    vm, argv = qemu_argv(accel="tcg", vsock=False)
    assert not any(d.startswith("vhost-vsock") for d in opt(argv, "-device"))
    assert vm.vsock_cid is None and vm.channel == "serial"
    vm.dir = "/some/dir"
    assert vm.address == "unix:/some/dir/agent.sock"
    vm.dir = None


def test_guest_cids_differ_between_vms_and_processes(manifest):
    import subprocess
    from cellvm import vsock
    a, _ = qemu_argv(vsock=True)
    b, _ = qemu_argv(vsock=True)
    assert a.vsock_cid != b.vsock_cid
    for cid in (a.vsock_cid, b.vsock_cid):
        assert 2 < cid < 2**31 and (cid - 2**30) >> 8 == os.getpid()
    # Another process with the same counter state gets another CID.
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from cellvm import vsock; "
            "print(vsock.allocate_cid())")
    other = [int(subprocess.check_output([sys.executable, "-c", code,
                                          os.path.join(ROOT, "client", "python")]))
             for _ in range(2)]
    assert len(set(other) | {vsock.allocate_cid()}) == 3


def test_vsock_connect_errors_are_classified():
    import errno
    from cellvm.vsock import classify
    # The agent is not up yet: retried until the deadline.
    for e in (errno.ETIMEDOUT, errno.ECONNRESET, errno.ECONNREFUSED, None):
        assert classify(e) == "retry"
    # No VM holds the CID: retried for a grace period (QEMU sets its devices up).
    assert classify(errno.ENODEV) == "no-route"
    # vsock cannot work: the serial port is used instead.
    assert classify(errno.EACCES) == "unavailable"


def test_vsock_addresses_parse():
    import socket
    from cellvm._wire import parse_address
    assert parse_address("vsock:1073741827:1024") == (socket.AF_VSOCK, (1073741827, 1024))
    assert parse_address("unix:/a/b") == (socket.AF_UNIX, "/a/b")
    for bad in ("vsock:3", "vsock:x:1024", "vsock:3:", "vsock:-1:5", f"vsock:{2**32}:1"):
        with pytest.raises(ValueError, match="vsock:CID:PORT"):
            parse_address(bad)


def test_qemu_argv_boot_files(manifest, tmp_path):
    # Another kernel (make kernel's bzImage would be one), no initramfs.
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"kernel")
    _, argv = qemu_argv(accel="kvm", vsock=False, kernel=str(kernel), initramfs=None)
    assert opt(argv, "-kernel") == [str(kernel)] and "-initrd" not in argv
    words = opt(argv, "-append")[0].split()
    assert {"root=/dev/vda", "ro", "rootfstype=ext4", "init=/sbin/cellvm-init"} <= set(words)
    _, argv = qemu_argv(accel="kvm", vsock=False, initramfs=False)
    assert "-initrd" not in argv and "init=/sbin/cellvm-init" in opt(argv, "-append")[0]
    # The image's initramfs by default, or another one.
    _, argv = qemu_argv(accel="kvm", vsock=False)
    assert opt(argv, "-initrd") == [os.path.join(IMAGE, "initramfs.cpio.gz")]
    assert "init=" not in opt(argv, "-append")[0]
    other = tmp_path / "initrd.gz"
    other.write_bytes(b"\x1f\x8b")
    _, argv = qemu_argv(accel="kvm", vsock=False, initramfs=str(other))
    assert opt(argv, "-initrd") == [str(other)]
    # Missing files are named.
    with pytest.raises(VMError, match="kernel .*nope not found"):
        qemu_argv(kernel=str(tmp_path / "nope"))


def make_erofs(tmp_path):
    """A real erofs image when mkfs.erofs exists (erofs-utils), else an empty
    one with only the superblock magic (all that is read of it here)."""
    import shutil
    import subprocess
    path = tmp_path / "rootfs.erofs"
    if shutil.which("mkfs.erofs"):
        src = tmp_path / "src"
        (src / "sbin").mkdir(parents=True)
        (src / "sbin" / "cellvm-init").write_bytes(b"init")
        subprocess.run(["mkfs.erofs", "--quiet", str(path), str(src)], check=True)
    else:
        path.write_bytes(b"\0" * 1024 + (0xE0F5E1E2).to_bytes(4, "little") + b"\0" * 3068)
    return path


def test_qemu_argv_erofs_root(manifest, tmp_path):
    erofs = make_erofs(tmp_path)
    _, argv = qemu_argv(accel="tcg", vsock=False, rootfs=str(erofs))
    assert f"id=root,file={erofs},format=raw,if=none,readonly=on" in opt(argv, "-drive")
    words = opt(argv, "-append")[0].split()
    assert "rootfstype=erofs" in words and "rootfstype=ext4" not in words
    # in place of the base's rootfstype=ext4: the rest of the line is unchanged
    assert " ".join(words) == kernel_cmdline(manifest, "qemu", True).replace(
        "rootfstype=ext4", "rootfstype=erofs")
    not_fs = tmp_path / "junk.img"
    not_fs.write_bytes(b"\0" * 8192)
    with pytest.raises(VMError, match="neither erofs nor ext4"):
        qemu_argv(rootfs=str(not_fs))
