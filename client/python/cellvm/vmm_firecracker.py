"""Firecracker: its configuration file, and the host side of hybrid vsock.

    from cellvm.vmm_firecracker import firecracker_config, hybrid_vsock_connect

    cfg = firecracker_config("build/image", workdir, memory_mb=1024, vcpus=1)
    # write it, then, in workdir: firecracker --no-api --config-file firecracker.json
    sock = hybrid_vsock_connect(os.path.join(workdir, VSOCK_SOCKET), port=1024, timeout=30)
    conn = cellvm._wire.Connection(sock)   # then HELLO as usual

Hybrid vsock (Firecracker and Cloud Hypervisor): the guest's AF_VSOCK is
bridged to a Unix socket of the VMM (`uds_path`). A host client connects to
that socket, writes `CONNECT <port>\\n` and reads `OK <host-side port>\\n`;
after that the stream is the guest listener's. Until the guest listens on
the port the VMM closes the connection (Firecracker) or answers something
else, so hybrid_vsock_connect() retries until `timeout`.

Firecracker describes virtio-mmio devices to the guest through ACPI since
v1.8.0 (x86_64); earlier versions only through `virtio_mmio.device=` on the
command line, which Debian's cloud kernel cannot parse
(CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES is off). docs/VMM.md has the commands.
"""

import json
import os
import socket
import time

from . import bootfiles
from .vmm_qemu import load_manifest, kernel_cmdline

VSOCK_SOCKET = "vsock.sock"
"""The vsock device's `uds_path`: relative, so Firecracker binds it in its
working directory (the VM's temp dir, as the jailer's chroot does). A
snapshot keeps the path it was taken with; relative, each clone restored from
it binds its own socket. Firecracker < 1.16 has no `vsock_override` on
/snapshot/load and refuses the whole load for it (its body is
deny_unknown_fields): an absolute path would let one clone run at a time.
Cloud Hypervisor's socket has the same name, given absolute (its clones get
their own through the config.json rewritten for each restore)."""

AGENT_VSOCK_PORT = 1024
GUEST_CID = 3
# "OK 1073741824\n": the reply line is short; anything longer is not a VMM.
MAX_REPLY_LINE = 64


class HandshakeError(Exception):
    """The hybrid-vsock peer did not accept the connection in time."""


def _read_line(sock, deadline):
    """Read one '\\n'-terminated line byte by byte (nothing past it may be consumed:
    the protocol's first frame follows on the same stream)."""
    line = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("no handshake reply")
        sock.settimeout(remaining)
        b = sock.recv(1)
        if not b:
            raise ConnectionResetError("closed during the handshake")
        if b == b"\n":
            return line.decode("ascii", errors="replace")
        line += b
        if len(line) > MAX_REPLY_LINE:
            raise HandshakeError(f"handshake reply too long: {bytes(line[:MAX_REPLY_LINE])!r}")


def hybrid_vsock_try(uds_path, port, timeout):
    """One attempt: a connected socket past the handshake, or an exception."""
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(timeout)
        sock.connect(uds_path)
        sock.sendall(f"CONNECT {int(port)}\n".encode())
        reply = _read_line(sock, deadline)
        if not reply.startswith("OK "):
            raise HandshakeError(f"VMM answered {reply!r}")
        sock.settimeout(None)
        return sock
    except BaseException:
        sock.close()
        raise


def hybrid_vsock_connect(uds_path, port=AGENT_VSOCK_PORT, timeout=30.0, retry_interval=0.02,
                         check=None):
    """Connect to guest vsock `port` through the VMM's Unix socket `uds_path`.

    Retries (the socket may not exist yet, the VMM may refuse while the guest
    is not listening) until `timeout` seconds; returns a blocking socket whose
    stream is the guest's. Raises HandshakeError with the last failure.
    `check()`, called before each attempt, may raise to give up early (the
    VMM exited).
    """
    deadline = time.monotonic() + timeout
    last = None
    while True:
        if check is not None:
            check()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise HandshakeError(f"vsock port {port} via {uds_path}: not accepted within "
                                 f"{timeout} s (last: {last})")
        try:
            return hybrid_vsock_try(uds_path, port, min(remaining, 5.0))
        except (OSError, TimeoutError, HandshakeError) as e:
            # An attempt the deadline cut short says less than what the VMM
            # answered before: keep that answer for the error.
            if not (isinstance(e, TimeoutError) and isinstance(last, HandshakeError)):
                last = e
        time.sleep(min(retry_interval, max(0.0, deadline - time.monotonic())))


def firecracker_config(image, workdir, memory_mb=1024, vcpus=1, kvm=True, extra_cmdline="",
                       guest_cid=GUEST_CID, tap=None, boot_timer=False,
                       kernel=None, initramfs=True, rootfs=None):
    """The --config-file dict for booting `image`; sockets/logs go in `workdir`.

    `tap`: host tap device name for a NIC (static address via the kernel
    command line is then up to the caller's extra_cmdline). `kernel`,
    `initramfs` (None/False: none) and `rootfs` replace the image's files
    (cellvm.bootfiles).
    """
    image = os.path.abspath(image)
    manifest = load_manifest(image)
    files = bootfiles.resolve(image, "firecracker", kernel, initramfs, rootfs)
    extra = extra_cmdline
    if boot_timer:
        extra = f"cellvm.boot_timer=1 {extra}"
    boot = {"kernel_image_path": files.kernel}
    if files.initramfs is not None:
        boot["initrd_path"] = files.initramfs
    boot["boot_args"] = kernel_cmdline(manifest, "firecracker", not kvm, extra.strip(), files)
    cfg = {
        "boot-source": boot,
        "drives": [{
            "drive_id": "root",
            "path_on_host": files.rootfs,
            "is_root_device": False,  # the initramfs mounts it (root=/dev/vda)
            "is_read_only": True,
        }],
        "machine-config": {"vcpu_count": int(vcpus), "mem_size_mib": int(memory_mb), "smt": False},
        "vsock": {"guest_cid": guest_cid, "uds_path": VSOCK_SOCKET},  # in `workdir`, its cwd
        "entropy": {},
    }
    if tap:
        cfg["network-interfaces"] = [{"iface_id": "eth0", "host_dev_name": tap}]
    return cfg


def write_firecracker_config(image, workdir, **kw):
    """Write workdir/firecracker.json; return (path, config dict)."""
    cfg = firecracker_config(image, workdir, **kw)
    path = os.path.join(workdir, "firecracker.json")
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)
    return path, cfg


def firecracker_argv(config_path, firecracker="firecracker"):
    return [firecracker, "--no-api", "--config-file", config_path]


# --- snapshots through the API (docs/VMM.md, "Snapshots") ---------------------
# A template: booted with `--api-sock` next to `--config-file`, then
# PATCH /vm Paused, PUT /snapshot/create (Full). A clone: `firecracker
# --api-sock S` alone, PUT /snapshot/load with a File memory backend (the
# memory file mapped MAP_PRIVATE: clones share its pages), then PATCH /vm
# Resumed. Each runs in its own temp dir, where the snapshot's relative
# uds_path puts its vsock socket (VSOCK_SOCKET). Firecracker resets the
# guest's vsock connections when it snapshots, so the host reconnects
# (CONNECT 1024) after a restore.

def firecracker_api_argv(api_sock, config_path=None, firecracker="firecracker"):
    argv = [firecracker, "--api-sock", api_sock]
    if config_path:
        argv += ["--config-file", config_path]
    return argv


def pause_request():
    return "PATCH", "/vm", {"state": "Paused"}


def resume_request():
    return "PATCH", "/vm", {"state": "Resumed"}


def snapshot_create_request(state_path, mem_path):
    return "PUT", "/snapshot/create", {"snapshot_type": "Full", "snapshot_path": state_path,
                                       "mem_file_path": mem_path}


def snapshot_load_request(state_path, mem_path):
    """Only fields every release with a File memory backend takes (1.16's
    vsock_override is not needed: VSOCK_SOCKET)."""
    return "PUT", "/snapshot/load", {"snapshot_path": state_path,
                                     "mem_backend": {"backend_type": "File",
                                                     "backend_path": mem_path},
                                     "resume_vm": False}
