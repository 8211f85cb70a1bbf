"""What a VM boots: kernel, initramfs and root image, and the kernel command
line edits they need.

The image's own files are the default: `vmlinuz` (QEMU; a bzImage) or
`vmlinux` (Firecracker, Cloud Hypervisor; ELF), `initramfs.cpio.gz` and
`rootfs.ext4`. Each can be replaced:

- `kernel=PATH`: another kernel, e.g. build/kernel/bzImage (QEMU) or
  build/kernel/vmlinux (Firecracker, Cloud Hypervisor) from `make kernel`.
- `initramfs=PATH`: another initramfs. `None` or `False`: none. The kernel
  then mounts the root itself (`root=/dev/vda ro`, already in the manifest's
  base line) and runs `init=/sbin/cellvm-init` from it. Only a kernel with
  virtio-blk, virtio-mmio/pci and the root's filesystem built in can do that
  (`make kernel`): Debian's cloud kernel has them as modules, which only the
  initramfs loads.
- `rootfs=PATH`: another root image. Its type, ext4 or erofs, is read from
  its superblock and replaces `rootfstype=` on the command line.
"""

import os
import struct
from collections import namedtuple

from .vmm_error import VMError

INIT = "/sbin/cellvm-init"  # where build_image.py puts cellvm-init in the rootfs
DEFAULT_KERNEL = {"qemu": "vmlinuz", "firecracker": "vmlinux", "cloud-hypervisor": "vmlinux"}
INITRAMFS = "initramfs.cpio.gz"
ROOTFS = "rootfs.ext4"
# Superblock magics: both superblocks start 1024 bytes into the device.
_SB_OFFSET = 1024
_EROFS_MAGIC = 0xE0F5E1E2  # le32 at the superblock's start
_EXT_MAGIC = 0xEF53  # le16 at offset 0x38 of the superblock (ext2/3/4)


class BootFiles(namedtuple("BootFiles", "kernel initramfs rootfs rootfstype")):
    """Absolute paths; `initramfs` None when booting without one."""

    def edit_cmdline(self, base):
        """`base` (the manifest's cmdline.base) with `rootfstype=` set to this
        root's type and, without an initramfs, `root=`, `ro` and `init=`."""
        fstype = f"rootfstype={self.rootfstype}"
        words = [fstype if w.startswith("rootfstype=") else w for w in base.split()]
        if fstype not in words:
            words.append(fstype)
        if self.initramfs is None:
            if not any(w.startswith("root=") for w in words):
                words.append("root=/dev/vda")
            if "ro" not in words:
                words.append("ro")
            if not any(w.startswith("init=") for w in words):
                words.append(f"init={INIT}")
        return " ".join(words)


def _error(msg):
    return VMError(msg)


def rootfs_type(path):
    """"erofs" or "ext4", from the image's superblock; VMError otherwise."""
    try:
        with open(path, "rb") as f:
            f.seek(_SB_OFFSET)
            sb = f.read(0x3A)
    except OSError as e:
        raise _error(f"root image {path}: {e.strerror}") from None
    if len(sb) >= 4 and struct.unpack_from("<I", sb)[0] == _EROFS_MAGIC:
        return "erofs"
    if len(sb) >= 0x3A and struct.unpack_from("<H", sb, 0x38)[0] == _EXT_MAGIC:
        return "ext4"
    raise _error(f"root image {path} is neither erofs nor ext4 (no superblock magic)")


def _existing(path, what):
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise _error(f"{what} {path} not found")
    return path


def resolve(image, vmm, kernel=None, initramfs=True, rootfs=None):
    """BootFiles for booting `image` under `vmm` with these overrides (see the
    module docstring). `initramfs=True` is the image's own."""
    kernel = _existing(kernel or os.path.join(image, DEFAULT_KERNEL[vmm]), "kernel")
    if initramfs is True:
        initramfs = os.path.join(image, INITRAMFS)
    initramfs = _existing(initramfs, "initramfs") if initramfs else None
    rootfs = _existing(rootfs or os.path.join(image, ROOTFS), "root image")
    return BootFiles(kernel, initramfs, rootfs, rootfs_type(rootfs))
