"""QEMU snapshots: take a template, restore a clone, save a paused sandbox
(docs/SNAPSHOTS.md, "QEMU").

A template's guest RAM is a file (`-object memory-backend-file,...,share=on`
with `-machine memory-backend=ram0`) and the migration capability
`x-ignore-shared` keeps it out of the migration stream, so taking it costs
the device state (~70 KB, ~10 ms here) and a clone maps the same file
privately (`share=off`: copy-on-write, the file is never written). A clone
is QEMU started with the template's argv plus `-incoming defer`, then over
QMP: migrate-set-capabilities x-ignore-shared, migrate-incoming fd:N (the
state file, inherited), query-migrate until completed, cont.

The agent's channel (virtio-serial) is connected *before* the state is
loaded: the template was saved with its builder still connected, so the
restored port's "host connected" state does not change and the agent reads
the clone's first HELLO at once (a change would make it hang up and reopen
the port, ~100 ms; measured: HELLO 130 ms after cont otherwise, ~50 ms so).

A paused sandbox (pause()) is saved with its RAM in the stream (a clone's
RAM is a private mapping: it cannot be skipped), and resumed with an
anonymous `memory-backend-ram` of the same id, so it depends on no template.
"""

import os
import time

from . import snapshot as snap
from .qmp import Qmp, QmpError
from .vmm_qemu import QemuVM, VMError

QEMU_MAGIC = b"QEVM"  # QEMU_VM_FILE_MAGIC, then version 3 (be32)
QEMU_VERSION_3 = b"\x00\x00\x00\x03"
RAM_ID = "ram0"
MIGRATE_TIMEOUT_S = 120.0


def qemu_version(binary: str) -> str:
    """The first line of `<binary> --version` (cached per binary file)."""
    import shutil
    return snap.vmm_version(shutil.which(binary) or binary)


def _opt_path(path: str) -> str:
    """A path inside a QEMU option list: commas doubled."""
    return path.replace(",", ",,")


def memory_args(memory_mb: int, path: str, share: bool):
    """Guest RAM as a file of `path` (share=on: the file is the RAM; off: a
    private copy-on-write mapping of it)."""
    return ["-object", f"memory-backend-file,id={RAM_ID},size={int(memory_mb)}M,"
                       f"mem-path={_opt_path(path)},share={'on' if share else 'off'}",
            "-machine", f"memory-backend={RAM_ID}"]


def anonymous_memory_args(memory_mb: int):
    return ["-object", f"memory-backend-ram,id={RAM_ID},size={int(memory_mb)}M",
            "-machine", f"memory-backend={RAM_ID}"]


def snapshot_vm(image, memory_mb, vcpus, network, extra_cmdline, kernel=None, initramfs=True,
                rootfs=None, qemu=None):
    """A QemuVM that can be snapshotted: a QMP socket, the serial channel
    (a vhost-vsock device's guest CID is per VM; its migration is not
    covered here: docs/SNAPSHOTS.md)."""
    kw = {"qemu": qemu} if qemu else {}
    return QemuVM(image, memory_mb=memory_mb, vcpus=vcpus, network=network,
                  extra_cmdline=extra_cmdline, vsock=False, kernel=kernel,
                  initramfs=initramfs, rootfs=rootfs, qmp=True, **kw)


def render_args(vm: QemuVM):
    """vm.argv() with its temp dir as DIR_PLACEHOLDER (before or after start)."""
    real = vm.dir
    vm.dir = snap.DIR_PLACEHOLDER
    try:
        return vm.argv()
    finally:
        vm.dir = real


def normalize_args(args, instance_dir, snapdir=None):
    """Real paths back to placeholders (a running VM's argv)."""
    out = []
    for a in args:
        a = a.replace(_opt_path(instance_dir), snap.DIR_PLACEHOLDER)
        if snapdir:
            a = a.replace(_opt_path(snapdir), snap.SNAPSHOT_PLACEHOLDER)
        out.append(a)
    return out


def substitute(args, instance_dir, snapdir):
    return [a.replace(snap.DIR_PLACEHOLDER, _opt_path(instance_dir))
             .replace(snap.SNAPSHOT_PLACEHOLDER, _opt_path(snapdir)) for a in args]


def template_manifest(vm: QemuVM, image: str) -> "snap.Manifest":
    """The manifest a template of this launch has (before its sizes are known):
    what a stored one must equal to be used."""
    vm.extra_args = memory_args(vm.memory_mb, os.path.join(snap.SNAPSHOT_PLACEHOLDER, "memory"),
                                share=False)
    args = render_args(vm)
    f = vm.files
    files = [f"kernel {snap.file_identity(f.kernel)}", f"rootfs {snap.file_identity(f.rootfs)}"]
    if f.initramfs is not None:
        files.insert(1, f"initramfs {snap.file_identity(f.initramfs)}")
    return snap.Manifest(kind="template", vmm="qemu", vmm_version=qemu_version(vm.qemu),
                         vmm_binary=vm.qemu, accel=vm.accel, memory_mb=vm.memory_mb,
                         vcpus=vm.vcpus, image=image, cmdline=vm.cmdline(), file=files,
                         arg=args, state="state", memory="memory",
                         memory_size=vm.memory_mb << 20)


def set_ignore_shared(q: Qmp, on: bool):
    q.execute("migrate-set-capabilities",
              {"capabilities": [{"capability": "x-ignore-shared", "state": bool(on)}]})


def save_state(q: Qmp, path: str, ignore_shared: bool, timeout=MIGRATE_TIMEOUT_S) -> int:
    """With the VM stopped: the migration stream into `path` (fsynced); its size."""
    set_ignore_shared(q, ignore_shared)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        q.execute("getfd", {"fdname": "cellvm-state"}, fds=(fd,))
        q.execute("migrate", {"uri": "fd:cellvm-state"})
        q.wait_migration(timeout=timeout)
        os.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def quit_qemu(vm: QemuVM, q: Qmp, timeout=10.0):
    """QMP quit and wait for the process (then kill() cleans the rest)."""
    try:
        q.execute("quit", timeout=timeout)
    except QmpError:
        pass  # it closes the socket as it goes
    q.close()
    try:
        vm.proc.wait(timeout)
    except Exception:  # noqa: BLE001 - kill() follows either way
        pass


def check_stream(path: str):
    """The file starts as a QEMU migration stream: SnapshotError otherwise."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise snap.SnapshotError(f"{path}: {e.strerror}", path) from None
    if head[:4] != QEMU_MAGIC or head[4:8] != QEMU_VERSION_3:
        raise snap.SnapshotError(f"{path} is not a QEMU migration stream (no QEVM v3 header: "
                                 f"starts with {head!r}): a foreign or damaged snapshot", path)


class RestoreQemuVM(QemuVM):
    """A QemuVM started from a snapshot: the manifest's argv (placeholders
    substituted) plus `-incoming defer`; the state comes over QMP."""

    def __init__(self, image, manifest, snapdir, instance_dir=None, qemu=None):
        super().__init__(image, memory_mb=manifest.memory_mb, vcpus=manifest.vcpus,
                         accel=manifest.accel or "auto", vsock=False, qmp=True,
                         **({"qemu": qemu} if qemu else {}))
        self.manifest = manifest
        self.snapdir = snapdir
        self.instance_dir = instance_dir
        self.network = "user" if any(a.startswith("user,") for a in manifest.arg) else "none"
        self.state_fd = None

    def argv(self):
        return substitute(self.manifest.arg, self.dir, self.snapdir) + ["-incoming", "defer"]

    def cmdline(self):
        return self.manifest.cmdline

    def kill(self):
        if self.state_fd is not None:  # spawned, never loaded
            os.close(self.state_fd)
            self.state_fd = None
        super().kill()


def _qemu_says(vm):
    err = vm._qemu_err().strip()
    return err.splitlines()[-1] if err else "(no message)"


def check_restorable(m, snapdir):
    """The snapshot's files are whole and its state is QEMU's: SnapshotError naming the file."""
    snap.check_files(m, snapdir)
    check_stream(os.path.join(snapdir, m.state))


def spawn(vm: RestoreQemuVM, stamp):
    """Starts QEMU waiting for its state (the state file's fd inherited)."""
    state = os.path.join(vm.snapdir, vm.manifest.state)
    fd = os.open(state, os.O_RDONLY | os.O_CLOEXEC)
    vm.state_fd = fd
    vm.pass_fds = (fd,)
    stamp("vmm_spawn")
    try:
        vm.start()
    except BaseException:
        os.close(fd)
        vm.state_fd = None
        raise


def load(vm: RestoreQemuVM, deadline: float, stamp):
    """Connects the agent's channel, loads the state over QMP, runs the
    guest; the connected (not yet HELLOed) _wire.Connection. SnapshotError
    (QEMU's own words, the file named) when the state does not load."""
    from . import _wire
    state = os.path.join(vm.snapdir, vm.manifest.state)
    fd, vm.state_fd = vm.state_fd, None
    try:
        conn = _wire.Connection(vm._connect_socket(deadline))
        try:
            q = Qmp.connect(vm.qmp_socket, timeout=max(0.1, deadline - time.monotonic()),
                            check=lambda: vm.alive() or _raise_exited(vm))
            try:
                set_ignore_shared(q, bool(vm.manifest.memory))
                q.execute("migrate-incoming", {"uri": f"fd:{fd}"})
                q.wait_migration(timeout=max(0.1, deadline - time.monotonic()))
                stamp("state_loaded")
                q.execute("cont")
                stamp("running")
            finally:
                q.close()
        except (QmpError, VMError) as e:
            conn.close()
            _wait_exit(vm, 1.0)  # QEMU says why as it exits
            raise snap.SnapshotError(f"{state}: QEMU could not restore it: {_qemu_says(vm)} "
                                     f"({e})", state) from None
        except BaseException:
            conn.close()
            raise
    finally:
        os.close(fd)
    return conn


def _wait_exit(vm, timeout):
    try:
        vm.proc.wait(timeout)
    except Exception:  # noqa: BLE001 - still running: kill() follows
        pass


def _raise_exited(vm):
    raise VMError(f"qemu exited with {vm.proc.returncode}: {_qemu_says(vm)}")
