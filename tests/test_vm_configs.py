"""Helpers of the QEMU launch tests (the C CLI's command line, checked with
a stand-in QEMU in tests/test_vm_qemu_fake.py and booted for real in
tests/test_vm_qemu.py, test_cli_vm.py), and the SDK's parsing of agent
addresses. Firecracker's and Cloud Hypervisor's launch descriptions:
tests/test_c_hybrid_vmm.py.
"""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))


def opt(argv, flag):
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]


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


def test_vsock_addresses_parse():
    import socket
    from cellvm._wire import parse_address
    assert parse_address("vsock:1073741827:1024") == (socket.AF_VSOCK, (1073741827, 1024))
    assert parse_address("unix:/a/b") == (socket.AF_UNIX, "/a/b")
    for bad in ("vsock:3", "vsock:x:1024", "vsock:3:", "vsock:-1:5", f"vsock:{2**32}:1"):
        with pytest.raises(ValueError, match="vsock:CID:PORT"):
            parse_address(bad)
