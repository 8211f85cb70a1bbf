"""Boot the cellvm guest image in a QEMU micro-VM (`-M microvm`).

    from cellvm.vmm_qemu import QemuVM

    vm = QemuVM("build/image", memory_mb=1024, vcpus=1, network="none")
    vm.start()                  # returns once QEMU runs; the guest boots on
    vm.connect()                # a _wire.Connection once the agent answers HELLO
    vm.address                  # "vsock:CID:1024" or "unix:<tmp>/agent.sock": for Sandbox.connect
    vm.pid                      # QEMU's pid
    vm.accel                    # "kvm" or "tcg"
    vm.console()                # the guest console (kernel + cellvm-init log) so far
    vm.kill()                   # stop QEMU, remove every temp file; idempotent
    with QemuVM(...) as vm: ... # start() ... kill()

The host <-> agent channel is a virtio-serial port named `cellvm` whose host
end is a Unix socket QEMU listens on (`-chardev socket,server=on,wait=off`).
The agent opens its end (/dev/virtio-ports/cellvm) once it runs; bytes the
host sends before that wait in the socket, so a client may connect and send
HELLO right after start(): the reply comes when the agent is up. There is one
stream per VM: a new client connection is a new peer for the agent, which
takes a fresh HELLO (docs/PROTOCOL.md, section 3).

When /dev/vhost-vsock is usable (`vsock="auto"`; True/False force it) a
vhost-vsock device is added with a guest CID unique on this host
(cellvm.vsock.allocate_cid; `vm.vsock_cid`), and the channel is AF_VSOCK to
(CID, 1024): connect() retries until the agent listens there. The serial port
stays in the command line as the fallback: connect() uses it when vsock
cannot reach the guest (cellvm.vsock says when), and `vm.channel` says which
one is in use. A CID that another VM holds makes QEMU exit ("unable to set
guest cid: Address already in use"): start()/connect() then start QEMU again
with the next CID (at most MAX_CID_RETRIES times).

Acceleration: KVM when /dev/kvm can be opened, else TCG with `-cpu max` (the
default TCG CPU lacks instructions numpy's wheels use) and `tsc_early_khz=` set
to this host's TSC frequency on the command line (cellvm.host_tsc: TCG's TSC is
the host's, and the guest's clocks run at the rate this value gives them; the
kernel's own calibration stalls the boot). `accel="tcg"` forces TCG.

Network: "none" (no NIC; the guest has loopback only) or "user" (QEMU's
user-mode NAT: guest 10.0.2.15/24, gateway 10.0.2.2, DNS 10.0.2.3).

The kernel command line comes from the image's manifest.json (base + the
qemu entry), plus `extra_cmdline`. `kernel=`, `initramfs=` (None/False: boot
without one) and `rootfs=` replace the image's files (cellvm.bootfiles).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from . import bootfiles, host_tsc, vsock as _vsock
from .vmm_error import VMError  # noqa: F401 - exported: cellvm.vmm_qemu.VMError

QEMU = "qemu-system-x86_64"
AGENT_VSOCK_PORT = _vsock.AGENT_PORT
SERIAL_PORT_NAME = "cellvm"
USER_NET_CMDLINE = "cellvm.net=static cellvm.ip=10.0.2.15/24 cellvm.gateway=10.0.2.2 cellvm.dns=10.0.2.3"
MAX_CID_RETRIES = 8


class _Relaunched(Exception):
    """QEMU was started again with another guest CID: connect anew."""


def kvm_usable():
    """/dev/kvm opens and the CPU has hardware virtualisation (vmx/svm).

    The flag check matters: some cloud hosts expose a paravirtual KVM
    (kvm-pvm) whose /dev/kvm opens fine but runs only PVM-aware guest
    kernels; Debian's hangs right after the boot loader there.
    $CELLVM_ACCEL=kvm|tcg overrides the probe.
    """
    forced = os.environ.get("CELLVM_ACCEL")
    if forced in ("kvm", "tcg"):
        return forced == "kvm"
    if os.path.exists("/sys/module/kvm_pvm"):
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return False
    if "vmx" not in flags and "svm" not in flags:
        return False
    return _can_open("/dev/kvm")


def vhost_vsock_usable():
    return _can_open("/dev/vhost-vsock")


def _can_open(device):
    """This process may open `device` read-write (it exists and we have the rights)."""
    try:
        fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    return True


def load_manifest(image):
    path = os.path.join(image, "manifest.json")
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise VMError(f"{path} not found: build the image with `make image`") from None


def kernel_cmdline(manifest, vmm, tcg, extra="", files=None):
    """The command line for `vmm` ("qemu", "firecracker", "cloud-hypervisor");
    `files` (bootfiles.BootFiles) edits the base for another root or no initramfs.
    Without KVM (`tcg`) the image's TCG words come with tsc_early_khz= set to this
    host's TSC frequency and tsc=reliable (host_tsc.tcg_cmdline), so the guest's
    clocks keep the host's rate."""
    c = manifest["cmdline"]
    base = files.edit_cmdline(c["base"]) if files is not None else c["base"]
    parts = [base, c["vmm"].get(vmm, "")]
    if tcg:
        parts.append(host_tsc.tcg_cmdline(c["tcg"]))
    parts.append(extra)
    return " ".join(p for p in parts if p)


def stop_vmm(proc, tmpdir):
    """SIGKILLs a VMM started in its own session (its process group), reaps it
    and removes its temporary directory. Either may be None."""
    if proc is not None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait()
    if tmpdir is not None:
        shutil.rmtree(tmpdir, ignore_errors=True)


class QemuVM:
    def __init__(self, image="build/image", memory_mb=1024, vcpus=1, network="none",
                 accel="auto", extra_cmdline="", qemu=QEMU, vsock="auto",
                 kernel=None, initramfs=True, rootfs=None, qmp=False):
        if network not in ("none", "user"):
            raise ValueError(f"network must be 'none' or 'user', not {network!r}")
        if accel not in ("auto", "kvm", "tcg"):
            raise ValueError(f"accel must be 'auto', 'kvm' or 'tcg', not {accel!r}")
        self.image = os.path.abspath(image)
        self.manifest = load_manifest(self.image)
        self.memory_mb = int(memory_mb)
        self.vcpus = int(vcpus)
        self.network = network
        self.accel = ("kvm" if kvm_usable() else "tcg") if accel == "auto" else accel
        self.extra_cmdline = extra_cmdline
        self.qemu = qemu
        self.files = bootfiles.resolve(self.image, "qemu", kernel, initramfs, rootfs)
        use_vsock = vhost_vsock_usable() if vsock == "auto" else bool(vsock)
        self.vsock_cid = _vsock.allocate_cid() if use_vsock else None
        self.cids_in_use = []  # CIDs QEMU found taken, in order
        self.channel = "vsock" if use_vsock else "serial"
        self.vsock_error = None  # why the channel fell back to serial, if it did
        self.dir = None
        self.proc = None
        self.started_at = None  # time.monotonic() just before QEMU was spawned
        # Snapshots (tests that save or restore by hand): a QMP socket in the temp dir,
        # arguments appended to the argv, fds QEMU inherits, and the temp
        # dir's path when it must be a given one (a resumed sandbox's).
        self.qmp = bool(qmp)
        self.extra_args = []
        self.pass_fds = ()
        self.instance_dir = None

    # --- the API ---------------------------------------------------------

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    @property
    def serial_socket(self):
        return os.path.join(self.dir, "agent.sock") if self.dir else None

    @property
    def serial_address(self):
        return "unix:" + self.serial_socket if self.dir else None

    @property
    def vsock_address(self):
        return f"vsock:{self.vsock_cid}:{AGENT_VSOCK_PORT}" if self.vsock_cid is not None else None

    @property
    def address(self):
        """The agent's address on the current channel, for cellvm's clients
        (Sandbox.connect, _wire); None before start()."""
        if not self.dir:
            return None
        return self.vsock_address if self.channel == "vsock" else self.serial_address

    @property
    def qmp_socket(self):
        return os.path.join(self.dir, "qmp.sock") if self.dir and self.qmp else None

    @property
    def console_path(self):
        return os.path.join(self.dir, "console.log") if self.dir else None

    def cmdline(self):
        extra = self.extra_cmdline
        if self.network == "user":
            extra = f"{USER_NET_CMDLINE} {extra}"
        return kernel_cmdline(self.manifest, "qemu", self.accel == "tcg", extra.strip(), self.files)

    def argv(self):
        f = self.files
        args = [self.qemu, "-M", "microvm,x-option-roms=off,acpi=on",
                "-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
                "-m", str(self.memory_mb), "-smp", str(self.vcpus)]
        if self.accel == "kvm":
            args += ["-accel", "kvm", "-cpu", "host"]
        else:
            args += ["-accel", "tcg", "-cpu", "max"]
        args += ["-kernel", f.kernel]
        if f.initramfs is not None:
            args += ["-initrd", f.initramfs]
        args += ["-append", self.cmdline(),
                 "-chardev", f"file,id=console,path={self.console_path}",
                 "-serial", "chardev:console",
                 "-drive", f"id=root,file={f.rootfs},format=raw,if=none,readonly=on",
                 "-device", "virtio-blk-device,drive=root",
                 "-device", "virtio-rng-device",
                 "-device", "virtio-serial-device",
                 "-chardev", f"socket,id=agent,path={self.serial_socket},server=on,wait=off",
                 "-device", f"virtserialport,chardev=agent,name={SERIAL_PORT_NAME}"]
        if self.network == "user":
            args += ["-netdev", "user,id=net0", "-device", "virtio-net-device,netdev=net0"]
        if self.vsock_cid is not None:
            args += ["-device", f"vhost-vsock-device,guest-cid={self.vsock_cid}"]
        if self.qmp:
            args += ["-qmp", f"unix:{self.qmp_socket},server=on,wait=off"]
        return args + list(self.extra_args)

    def start(self, timeout=10.0):
        """Spawn QEMU; return once its serial socket exists (the guest boots on)."""
        if self.proc is not None:
            raise VMError("already started")
        if self.instance_dir:
            os.mkdir(self.instance_dir, 0o700)  # FileExistsError: in use
            self.dir = self.instance_dir
        else:
            self.dir = tempfile.mkdtemp(prefix="cellvm-qemu-")
        try:
            self._spawn()
            deadline = time.monotonic() + timeout
            while not os.path.exists(self.serial_socket):
                if self.proc.poll() is not None and not self._respawn_if_cid_in_use():
                    raise VMError(f"qemu exited with {self.proc.returncode}: {self._qemu_err()}")
                if time.monotonic() > deadline:
                    raise VMError(f"qemu did not create {self.serial_socket} within {timeout} s")
                time.sleep(0.005)
        except BaseException:
            self.kill()
            raise
        return self

    def _spawn(self):
        """Start QEMU with the current argv (a leftover serial socket of an
        earlier attempt is removed first: its existence means "QEMU is up")."""
        try:
            os.unlink(self.serial_socket)
        except FileNotFoundError:
            pass
        self.started_at = time.monotonic()
        with open(os.path.join(self.dir, "qemu.err"), "wb") as err:
            self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err,
                                         start_new_session=True, pass_fds=self.pass_fds)

    def _respawn_if_cid_in_use(self):
        """QEMU exited: if because another VM holds our guest CID, start it
        again with the next CID and return True."""
        if (self.vsock_cid is None or len(self.cids_in_use) >= MAX_CID_RETRIES
                or _vsock.CID_IN_USE not in self._qemu_err()):
            return False
        self.proc.wait()
        self.cids_in_use.append(self.vsock_cid)
        self.vsock_cid = _vsock.allocate_cid()
        self._spawn()
        return True

    def _check_qemu(self):
        """Raises if QEMU is gone: _Relaunched when it was restarted with
        another CID, VMError (with the console's tail) otherwise."""
        if self.alive():
            return
        if self._respawn_if_cid_in_use():
            raise _Relaunched()
        raise VMError(f"qemu exited with {self.proc.returncode} during boot:\n"
                      f"{self.console()[-3000:]}{self._qemu_err()}")

    def connect(self, timeout=120.0):
        """Connect to the agent and complete HELLO: a cellvm._wire.Connection.

        Waits for the guest to boot (up to `timeout` s), over vsock when that
        is the channel (falling back to the serial port if vsock cannot reach
        the guest), else over the serial port. Raises VMError with the
        console's tail if QEMU dies or the agent does not answer.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self._connect_once(deadline, timeout)
            except _Relaunched:
                continue  # QEMU runs again with a free CID: wait for that one

    def _connect_once(self, deadline, timeout):
        from . import _wire

        sock = None
        if self.channel == "vsock":
            try:
                sock = _vsock.connect(self.vsock_cid, AGENT_VSOCK_PORT, deadline, check=self._check_qemu)
            except _vsock.VsockUnavailable as e:
                self.channel, self.vsock_error = "serial", str(e)
            except TimeoutError as e:
                raise VMError(f"no agent on {self.vsock_address} within {timeout} s ({e}); "
                              f"console:\n{self.console()[-3000:]}") from None
        if sock is None:
            sock = self._connect_socket(deadline)
        conn = _wire.Connection(sock)
        try:
            conn.handshake({"protocol": _wire.PROTOCOL_VERSION, "client": "cellvm-vmm"},
                           max(0.1, deadline - time.monotonic()), check=self._check_qemu)
        except TimeoutError:
            conn.close()
            raise VMError(f"no HELLO reply within {timeout} s; console:\n{self.console()[-3000:]}") from None
        except (_wire.ConnectionClosed, _wire.ProtocolError) as e:
            conn.close()
            self._check_qemu()  # QEMU's exit closed it: say so (or relaunch)
            raise VMError(f"connection to the agent lost during HELLO: {e}") from None
        except _wire.AgentError as e:
            conn.close()
            raise VMError(f"HELLO failed: {e}") from None
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect_socket(self, deadline):
        """A socket connected to QEMU's end of the serial port. QEMU creates
        the socket file (bind) a moment before it listens: until then a
        connect is refused, so refusals are retried while QEMU runs."""
        while True:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            try:
                sock.settimeout(max(0.1, deadline - time.monotonic()))
                sock.connect(self.serial_socket)
                sock.settimeout(None)
                return sock
            except (ConnectionRefusedError, FileNotFoundError) as e:
                sock.close()
                self._check_qemu()
                if time.monotonic() >= deadline:
                    raise VMError(f"cannot connect to {self.serial_socket}: {e}; qemu runs:\n"
                                  f"{self.console()[-3000:]}{self._qemu_err()}") from None
                time.sleep(0.01)
            except OSError as e:
                sock.close()
                raise VMError(f"cannot connect to {self.serial_socket}: {e}") from None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def console(self):
        """The guest's console output so far ("" before start / after kill)."""
        try:
            with open(self.console_path, "rb") as f:
                return f.read().decode(errors="replace")
        except (OSError, TypeError):
            return ""

    def wait(self, timeout=None):
        """Wait for QEMU to exit (a guest power-off or reboot); its status."""
        return self.proc.wait(timeout)

    def kill(self):
        """Stop QEMU (SIGKILL: the root is read-only, nothing to flush) and remove
        the temp directory. Safe to call more than once."""
        stop_vmm(self.proc, self.dir)
        self.dir = None

    def __enter__(self):
        if self.proc is None:
            self.start()
        return self

    def __exit__(self, *exc):
        self.kill()

    def __del__(self):
        if getattr(self, "detached", False):
            return  # create(detach=True): it outlives this process (cellvm.lifetime)
        if getattr(self, "proc", None) is not None and self.proc.poll() is None:
            self.kill()

    def _qemu_err(self):
        try:
            with open(os.path.join(self.dir, "qemu.err"), "rb") as f:
                return f.read().decode(errors="replace")[-2000:]
        except (OSError, TypeError):
            return ""
