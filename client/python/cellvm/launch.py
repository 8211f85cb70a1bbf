"""Boot a micro-VM from a cellvm image and hand back a connected Sandbox.

    from cellvm import Sandbox
    with Sandbox.create("build/image") as sbx:     # QEMU, TCG or KVM
        print(sbx.run_code("1 + 1").text, sbx.vmm_pid)
        print(sbx.boot_report)
    # the VM is gone: QEMU killed, its temp directory removed

Sandbox.create() calls create_sandbox() below, which runs `cellvm create
--json` (cellvm.host; issue 22: the C CLI owns the VM's lifecycle):

1. The CLI restores the sandbox from the template of its launch (image,
   boot files, memory, vCPUs, VMM, network, kernel command line), building
   it on first use, or boots it cold; QEMU (`-M microvm`, KVM when usable,
   else TCG; `network="user"`: QEMU's NAT), Firecracker or Cloud Hypervisor
   (on PATH, else a SandboxException naming the missing binary). It records
   the sandbox with its deadline and hands over its agent connection.
2. With `wait_ready=True` (the default) a cold boot is also waited for
   until the zygote has its preloads (numpy, pandas, matplotlib): E2B's
   create() returns a sandbox that runs code at once, and a first cell
   would wait for them anyway (~14 s under TCG, < 1 s with KVM); a clone
   has them. Readiness is the `executor_ready` stamp in the agent's HELLO
   reply; a repeated HELLO on the one stream (allowed, docs/PROTOCOL.md
   section 3) asks for it without running anything, so the user's first
   cell is still execution 1.

User code gets a memory limit: the CLI puts `cellvm.mem_limit=<memory_mb
minus max(128 MiB, 1/8)>` on the kernel command line (cvm_user_memory_mb,
docs/SECURITY.md), so cellvm-init creates
the user cgroup and the agent gives each context its own cgroup below it
(memory.max, pids.max). Without it the guest would fall back to rlimits.

`envs` are applied by the SDK to every execution and command of this
Sandbox (the protocol's per-request `envs`): they reach cells and commands,
not the agent or init. That needs no guest support and keeps values off the
kernel command line, which any process in the guest can read.

Every live VM is also killed at interpreter exit (atexit), so a script that
forgets kill() leaves no QEMU behind, unless it was created with
`detach=True`: then it lives until its timeout (cellvm.lifetime). Each VM is
recorded in the user's registry of live sandboxes (`cellvm ps`) with
its deadline, under the registry's lock, after the limits were checked.
"""

import atexit
import logging
import os
import threading
import time
import weakref

from . import _wire
from .vmm_error import VMError

VMMS = ("qemu", "firecracker", "cloud-hypervisor")
DEFAULT_IMAGE = "build/image"
IMAGE_ENV = "CELLVM_IMAGE"
DEFAULT_CREATE_TIMEOUT = 300.0
"""Seconds create() waits for the agent and the zygote (TCG boots take ~18 s)."""
_READY_POLL_S = 0.5
SNAPSHOT_ENV = "CELLVM_SNAPSHOT"
"""create(snapshot=None): from a template unless it says 0/off (the CLI reads it)."""
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

logger = logging.getLogger("cellvm")
_live = weakref.WeakSet()
_live_lock = threading.Lock()


def _kill_all_at_exit():
    with _live_lock:
        vms = list(_live)
    for vm in vms:
        if getattr(vm, "detached", False):
            continue  # lives until its timeout (cellvm.lifetime)
        try:
            vm.kill()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


atexit.register(_kill_all_at_exit)


def resolve_image(image):
    """The image directory: `image`, else $CELLVM_IMAGE, else build/image
    (relative to the current directory, then to the cellvm checkout)."""
    image = image or os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE
    if os.path.isabs(image) or os.path.exists(os.path.join(image, "manifest.json")):
        return os.path.abspath(image)
    in_checkout = os.path.join(_ROOT, image)
    if os.path.exists(os.path.join(in_checkout, "manifest.json")):
        return in_checkout
    return os.path.abspath(image)


def wait_executor_ready(vm, conn, deadline):
    """Re-send HELLO until its boot stamps include executor_ready (the zygote
    finished its preloads); conn.hello is updated to the latest reply."""
    while "executor_ready" not in (conn.hello.get("boot") or {}):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise VMError("the agent answered but its executor (zygote preloads) was not ready in time; "
                          f"console:\n{vm.console()[-3000:]}")
        if not vm.alive():
            raise VMError(f"the VMM exited while the executor started; console:\n{vm.console()[-3000:]}")
        time.sleep(min(_READY_POLL_S, remaining))
        try:
            conn.hello = conn.call(_wire.HELLO, {"protocol": _wire.PROTOCOL_VERSION,
                                                 "client": "cellvm-python"},
                                   timeout=max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            continue


def create_sandbox(cls, image=None, vmm="qemu", memory_mb=1024, vcpus=1, network="none",
                   envs=None, timeout=None, request_timeout=None, wait_ready=True, extra_cmdline="",
                   kernel=None, initramfs=True, rootfs=None, boot_timeout=None, detach=None,
                   metadata=None, template=None, snapshot=None, egress=None, on_timeout=None):
    """Boot a VM and return `cls` (a Sandbox) connected to its agent; see Sandbox.create.
    `on_timeout`: "pause" to be paused at its timeout (E2B's lifecycle), else None.
    `egress`: rules for the host to enforce (cellvm.network.egress_rules), or None.
    `timeout`: the sandbox's lifetime (cellvm.lifetime); `boot_timeout`: how
    long to wait for the agent (and the zygote). `snapshot`: restore from a
    template (None: $CELLVM_SNAPSHOT, default on; False: boot cold; a
    directory: that template; docs/SNAPSHOTS.md)."""
    if vmm not in VMMS:
        raise ValueError(f"vmm must be one of {', '.join(VMMS)}, not {vmm!r}")
    if network not in ("none", "user"):
        raise ValueError(f"network must be 'none' or 'user', not {network!r}")
    if network != "none" and vmm != "qemu":
        raise ValueError(f"network={network!r} with {vmm} needs a tap device: only 'none' is supported")
    return _from_cli(cls, image=image, vmm=vmm, memory_mb=memory_mb, vcpus=vcpus, network=network,
                     extra_cmdline=extra_cmdline, kernel=kernel, initramfs=initramfs,
                     rootfs=rootfs, snapshot=snapshot, envs=envs, timeout=timeout,
                     request_timeout=request_timeout, wait_ready=wait_ready,
                     boot_timeout=boot_timeout, detach=detach, metadata=metadata, egress=egress,
                     template=template, on_timeout=on_timeout)


class CliVM:
    """A VM that `cellvm create` started (cellvm.host): what Sandbox needs of
    it. kill() is `cellvm kill`; it outlives this process to its deadline
    unless it is killed at exit (not `detached`)."""

    cli = True

    def __init__(self, info, detached):
        self.info = info
        self.vmm = info.get("vmm", "qemu")
        self.network = info.get("network", "none")
        self.registry_key = info["sandbox_id"]
        self.pid = int(info["pid"])
        self.address = info["address"]
        self.dir = info["dir"]
        self.image = info["image"]
        self.memory_mb, self.vcpus, self.accel = info["memory_mb"], info["vcpus"], info["accel"]
        self.detached = detached
        self._pid_start = _proc_start(self.pid)
        self._killed = False
        self.exited_by_itself = False

    def alive(self):
        return not self._killed and self._pid_start is not None \
            and _proc_start(self.pid) == self._pid_start

    @property
    def api_socket(self):
        """Firecracker / Cloud Hypervisor: the VMM's API socket, which a clone
        restored from a template has (pause() saves it through it), else None."""
        path = os.path.join(self.dir, "api.sock")
        return path if self.vmm != "qemu" and os.path.exists(path) else None

    def console(self):
        try:
            with open(os.path.join(self.dir, "console.log"), "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def kill(self):
        if not self._killed:
            # QEMU had exited (a guest's poweroff) before this kill: shutdown()'s proof
            self.exited_by_itself = not self.alive()
            self._killed = True
            from . import host
            host.kill(self.registry_key)


class _Stages:
    """A restore's stamps (ns after the VMM's spawn) as Sandbox.restore_report reads them."""

    def __init__(self, stamps):
        self.stamps = {str(k): int(v) for k, v in stamps.items()}

    def report(self):
        from .boot import BootReport
        return BootReport(self.stamps)


def cli_vm(info, detached):
    """The CliVM of the CLI's sandbox `info`, killed at exit unless `detached`."""
    vm = CliVM(info, detached)
    with _live_lock:
        _live.add(vm)
    return vm


def _proc_start(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _from_cli(cls, image, vmm, memory_mb, vcpus, network, extra_cmdline, kernel, initramfs,
              rootfs, snapshot, envs, timeout, request_timeout, wait_ready, boot_timeout, detach,
              metadata, template, egress=None, on_timeout=None):
    """create() through `cellvm create --json` (cellvm.host): the C side
    restores the clone from the shared template (or boots cold), records it
    and sets its deadline; this process gets its agent connection."""
    from . import host, lifetime
    from .exceptions import SandboxException, TimeoutException
    boot_s = float(boot_timeout) if boot_timeout else DEFAULT_CREATE_TIMEOUT
    opts = host.vm_args(resolve_image(image), vmm, memory_mb, vcpus, kernel, initramfs, rootfs,
                        snapshot, boot_s, network, extra_cmdline)
    info, conn = host.create(opts, timeout=timeout, metadata=metadata, template=template,
                             egress=egress, on_timeout=on_timeout)
    detached = lifetime.detach_default() if detach is None else bool(detach)
    vm = cli_vm(info, detached)
    try:
        if wait_ready:  # a cold boot: the zygote's preloads (a clone has them)
            wait_executor_ready(vm, conn, time.monotonic() + boot_s)
    except VMError as e:
        conn.close()
        vm.kill()
        exc = TimeoutException if "in time" in str(e) else SandboxException
        raise exc(str(e)) from None
    except BaseException:
        conn.close()
        vm.kill()
        raise
    return adopt_cli(cls, vm, info, conn, envs, request_timeout)


def adopt_cli(cls, vm, info, conn, envs, request_timeout):
    """The Sandbox (`cls`) over `conn` of the CLI's sandbox `info` (create or
    resume --json): its registry entry, this process holding its channel
    (the CLI recorded it: --holder)."""
    from . import lifetime
    # A sandbox with egress rules: its user processes get the proxy's variables.
    envs = {**info.get("egress_envs", {}), **(envs or {})}
    sbx = cls._from_vm(vm, conn, envs=envs, request_timeout=request_timeout)
    sbx._entry = lifetime.entry_from_info(info)
    if info.get("restore"):  # the CLI's stages of the restore (Sandbox.restore_report)
        sbx._restore_stages = _Stages(info["restore"])
    if info.get("snapshot_dir"):
        sbx._snapshot_dir = info["snapshot_dir"]
    lifetime.watch(sbx)
    return sbx
