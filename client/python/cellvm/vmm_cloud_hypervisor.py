"""Cloud Hypervisor: its command line, and the agent connection over hybrid vsock.

    from cellvm.vmm_cloud_hypervisor import cloud_hypervisor_argv
    from cellvm.vmm_firecracker import hybrid_vsock_connect

    argv = cloud_hypervisor_argv("build/image", workdir, memory_mb=1024, vcpus=1)
    # spawn argv; then
    sock = hybrid_vsock_connect(workdir + "/vsock.sock", port=1024)

Cloud Hypervisor's devices are virtio-pci (the image's initramfs loads
virtio_pci); it describes them and the CPUs through ACPI, and boots the ELF
`vmlinux` directly (PVH entry). Its `--vsock cid=N,socket=PATH` is the same
hybrid vsock as Firecracker's (`CONNECT <port>\\n` -> `OK <n>\\n`).
"""

import os

from . import bootfiles
from .vmm_firecracker import VSOCK_SOCKET
from .vmm_qemu import kernel_cmdline, load_manifest

GUEST_CID = 3


def cloud_hypervisor_argv(image, workdir, memory_mb=1024, vcpus=1, extra_cmdline="",
                          guest_cid=GUEST_CID, tap=None, binary="cloud-hypervisor",
                          kernel=None, initramfs=True, rootfs=None):
    """argv booting `image`; the vsock socket and console log go in `workdir`.
    `kernel`, `initramfs` (None/False: none) and `rootfs` replace the image's
    files (cellvm.bootfiles)."""
    image = os.path.abspath(image)
    manifest = load_manifest(image)
    files = bootfiles.resolve(image, "cloud-hypervisor", kernel, initramfs, rootfs)
    # Cloud Hypervisor needs KVM (or MSHV): no TCG variant of the command line.
    cmdline = kernel_cmdline(manifest, "cloud-hypervisor", False, extra_cmdline, files)
    argv = [binary, "--kernel", files.kernel]
    if files.initramfs is not None:
        argv += ["--initramfs", files.initramfs]
    argv += ["--cmdline", cmdline,
             "--disk", f"path={files.rootfs},readonly=on",
             "--cpus", f"boot={int(vcpus)}",
             "--memory", f"size={int(memory_mb)}M",
             "--rng", "src=/dev/urandom",
             "--vsock", f"cid={guest_cid},socket={os.path.join(workdir, VSOCK_SOCKET)}",
             "--serial", f"file={os.path.join(workdir, 'console.log')}",
             "--console", "off"]
    if tap:
        argv += ["--net", f"tap={tap}"]
    return argv


# --- snapshots through the API (docs/VMM.md, "Snapshots") ---------------------
# A template: booted with `--api-socket`, then PUT /api/v1/vm.pause and
# PUT /api/v1/vm.snapshot {destination_url: file://DIR}: DIR gets config.json
# (the VM's configuration, naming its vsock socket and serial file), state.json
# and memory-ranges. A clone: `cloud-hypervisor --api-socket S` alone, a
# directory of its own holding config.json with the template VM's temp dir
# replaced by its own (so its sockets are its own) and links to state.json and
# memory-ranges, PUT /api/v1/vm.restore {source_url: file://that dir}, then
# PUT /api/v1/vm.resume. Cloud Hypervisor copies memory-ranges into the
# clone's RAM (its default restore mode): clones share no pages.

API_PREFIX = "/api/v1"
SNAPSHOT_FILES = ("config.json", "state.json", "memory-ranges")


def api_argv(api_sock, binary="cloud-hypervisor"):
    return [binary, "--api-socket", api_sock]


def pause_request():
    return "PUT", f"{API_PREFIX}/vm.pause", None


def resume_request():
    return "PUT", f"{API_PREFIX}/vm.resume", None


def snapshot_request(directory):
    return "PUT", f"{API_PREFIX}/vm.snapshot", {"destination_url": f"file://{directory}"}


def restore_request(directory):
    return "PUT", f"{API_PREFIX}/vm.restore", {"source_url": f"file://{directory}"}
