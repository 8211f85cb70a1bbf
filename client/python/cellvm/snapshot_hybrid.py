"""Firecracker and Cloud Hypervisor snapshots, through their APIs
(the requests: vmm_firecracker.py, vmm_cloud_hypervisor.py; docs/VMM.md,
"Snapshots"). Same manifest as QEMU's (cellvm.snapshot): `arg` is the argv
that starts the VMM for a restore, `request` the API calls that follow,
with @DIR@ (the clone's temp dir) and @SNAPSHOT@ (the snapshot dir).

Neither VMM runs on the build machines (no KVM that runs a stock guest):
this code is exercised against tests/fake_vmm.py, a stand-in that accepts
these API calls as the two VMMs document them.
"""

import json
import os

from . import _http_unix as http
from . import bootfiles
from . import snapshot as snap
from .vmm_qemu import VMError, kernel_cmdline, load_manifest

vmm_version = snap.vmm_version


def _restore_calls(vmm):
    """(argv, [request lines]) of a restore, with placeholders."""
    d, s = snap.DIR_PLACEHOLDER, snap.SNAPSHOT_PLACEHOLDER
    if vmm == "firecracker":
        from . import vmm_firecracker as fc
        calls = [fc.snapshot_load_request(f"{s}/state", f"{s}/memory"),
                 fc.resume_request()]
        argv = fc.firecracker_api_argv(f"{d}/api.sock", firecracker="@VMM@")
    else:
        from . import vmm_cloud_hypervisor as ch
        calls = [ch.restore_request(f"{d}/restore"), ch.resume_request()]
        argv = ch.api_argv(f"{d}/api.sock", binary="@VMM@")
    return argv, [f"{m} {u} {json.dumps(b, sort_keys=True) if b is not None else ''}".rstrip()
                  for m, u, b in calls]


def template_manifest(vm):
    """The manifest a template of this launch (a HybridVsockVM, not started) has."""
    files = bootfiles.resolve(vm.image, vm.vmm, **vm.boot_files)
    cmdline = kernel_cmdline(load_manifest(vm.image), vm.vmm, False, vm.extra_cmdline, files)
    argv, requests = _restore_calls(vm.vmm)
    argv = [vm.binary if a == "@VMM@" else a for a in argv]
    idents = [f"kernel {snap.file_identity(files.kernel)}", f"rootfs {snap.file_identity(files.rootfs)}"]
    if files.initramfs is not None:
        idents.insert(1, f"initramfs {snap.file_identity(files.initramfs)}")
    state, memory = ("state", "memory") if vm.vmm == "firecracker" else ("state.json", "memory-ranges")
    return snap.Manifest(kind="template", vmm=vm.vmm, vmm_version=vmm_version(vm.binary),
                         vmm_binary=vm.binary, accel="kvm", memory_mb=vm.memory_mb,
                         vcpus=vm.vcpus, image=vm.image, cmdline=cmdline, file=idents, arg=argv,
                         request=requests, state=state, memory=memory)


def _api(vm, method, url, body, timeout=60.0):
    try:
        return http.call(vm.api_socket, method, url, body, timeout=timeout)
    except http.ApiError as e:
        raise VMError(f"{vm.vmm}: {e}") from None


def _save(vm, directory, m):
    """Pauses the VM and saves it into `directory` (its API); fills in the sizes."""
    if vm.vmm == "firecracker":
        from . import vmm_firecracker as fc
        _api(vm, *fc.pause_request())
        _api(vm, *fc.snapshot_create_request(os.path.join(directory, m.state),
                                             os.path.join(directory, m.memory)), timeout=600)
    else:
        from . import vmm_cloud_hypervisor as ch
        _api(vm, *ch.pause_request())
        _api(vm, *ch.snapshot_request(directory), timeout=600)
        if not os.path.isfile(os.path.join(directory, "config.json")):
            raise VMError(f"cloud-hypervisor wrote no config.json into {directory}")
    m.state_size = os.path.getsize(os.path.join(directory, m.state))
    m.memory_size = os.path.getsize(os.path.join(directory, m.memory))
    m.instance_dir = vm.dir


def save_template(vm, directory, m):
    _save(vm, directory, m)
