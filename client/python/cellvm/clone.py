"""Templates in Python (docs/SNAPSHOTS.md, "Templates"): the launch of a
template and its manifest (Launch), building one (build: the image booted,
the zygote's preloads done, SNAPSHOT_PREPARE, saved), and the guest's side
of a restore (new_generation, refresh_clock_and_entropy: the tests drive
restores by hand with them).

Sandbox.create() restores through `cellvm create --json` (issue 22:
client/c/cli_snapshot.c and snapshot_qemu.c restore and build the same
templates, byte for byte the same manifest and name). What is left here:
the builder the tests' session template uses (tests/conftest.py, which
reads the guest's values before it is saved).
"""

import logging
import os
import secrets
import time

from . import _wire
from . import snapshot as snap
from .launch import SNAPSHOT_ENV, snapshot_mode as mode  # noqa: F401 - clone.mode, as before

logger = logging.getLogger("cellvm")

BUILD_TIMEOUT_S = 300.0
"""Booting a template and waiting for its preloads (~20 s under TCG)."""
RESTORE_TIMEOUT_S = 30.0
"""From spawning a clone to its NEW_GENERATION answer (~0.1 s under TCG here)."""
BUILD_DEADLINE_MS = 900_000
"""cellvm-init's deadline while a template boots (so a builder that dies
leaves no VM); cleared (SET_DEADLINE 0) right before SNAPSHOT_PREPARE."""
SETTLE_TIMEOUT_S = 30.0
"""Longest wait for a template's guest to settle before it is saved (~1 s
under TCG here: the next spare's warm-up)."""
SNAPSHOT_VMMS = ("qemu", "firecracker", "cloud-hypervisor")


# --- the guest's side of a snapshot (docs/PROTOCOL.md section 11) -------------

_warned = set()


def _warn_once(key, msg, *args):
    if key not in _warned:
        _warned.add(key)
        logger.warning(msg, *args)


def under_init(conn) -> bool:
    """The agent runs in a guest under cellvm-init (its HELLO carries init's
    boot stamps). Not so for a dev-mode agent behind a VMM stand-in
    (tests/fake_vmm.py): its clock and CRNG are the host's, never to be set."""
    boot = (conn.hello or {}).get("boot") or {}
    return "init_start" in boot or "kernel_to_init" in boot


def _no_guest(what):
    _warn_once(("no-guest", what), "cellvm: the agent is not under cellvm-init (a VMM stand-in "
               "or dev mode): no %s (its clock and entropy are this host's)", what)


def prepare(conn, timeout=30.0) -> int:
    """SNAPSHOT_PREPARE: the agent gets the guest ready to be saved and from
    then on serves no user code until NEW_GENERATION; the generation that ends."""
    if not under_init(conn):
        _no_guest("SNAPSHOT_PREPARE")
        return 0
    try:
        return int(conn.call(_wire.SNAPSHOT_PREPARE, {}, timeout=timeout).get("generation", 0))
    except _wire.AgentError as e:
        if e.code not in ("unknown_type", "unsupported"):
            raise
        _warn_once("prepare", "cellvm: the guest's agent has no SNAPSHOT_PREPARE (%s): its clones "
                   "will be refreshed with SET_TIME and ADD_ENTROPY only, and their Python "
                   "random generators will start alike", e)
        return 0


def new_generation(conn, timeout=30.0) -> int:
    """NEW_GENERATION with 64 bytes of this host's entropy, its clock (taken
    right before sending) and a generation of its own; the generation.
    An agent without it gets ADD_ENTROPY and SET_TIME (what it has)."""
    if not under_init(conn):
        _no_guest("NEW_GENERATION")
        return 0
    # Above the snapshot's (HELLO says it), and this copy's own: + 1 + 32 random
    # bits, so that it still grows when a copy is snapshotted again (PROTOCOL.md).
    gen = int((conn.hello or {}).get("generation") or 1) + 1 + secrets.randbits(32)
    body = {"generation": gen, "entropy": os.urandom(64), "realtime_ns": time.time_ns()}
    try:
        conn.call(_wire.NEW_GENERATION, body, timeout=timeout)
        return gen
    except _wire.AgentError as e:
        if e.code not in ("unknown_type", "unsupported"):
            raise
    refresh_clock_and_entropy(conn, timeout)
    return 0


def refresh_clock_and_entropy(conn, timeout=30.0):
    """ADD_ENTROPY and SET_TIME (a resumed sandbox: the same guest again,
    its own random generators untouched). An agent that may not (dev mode,
    a stand-in's) is reported once, not fatal."""
    if not under_init(conn):
        _no_guest("SET_TIME/ADD_ENTROPY")
        return
    for mtype, body in ((_wire.ADD_ENTROPY, {"seed": os.urandom(64)}),
                        (_wire.SET_TIME, {"realtime_ns": time.time_ns()})):
        try:
            conn.call(mtype, body, timeout=timeout)
        except _wire.AgentError as e:
            if e.code not in ("unknown_type", "unsupported", "permission_denied"):
                raise
            _warn_once(("refresh", mtype), "cellvm: the guest did not take %s (%s)",
                       "ADD_ENTROPY" if mtype == _wire.ADD_ENTROPY else "SET_TIME", e)


def warm_default_context(conn, timeout=120.0):
    """An empty cell in the default context: its executor is spawned now, in
    the template, instead of in every clone's first cell (a third of that
    cell under TCG here). An empty cell is not counted (IPython's rule): a
    clone's first cell is still execution 1."""
    req = conn.request(_wire.EXECUTE, {"code": ""})
    for t, body in req.messages(timeout=timeout):
        if t == _wire.ERROR:
            raise snap.SnapshotError(f"the template's default context did not start: "
                                     f"{body.get('code')}: {body.get('message')}")
        if t == _wire.OK:
            return


def settle(vm, timeout=SETTLE_TIMEOUT_S):
    """Waits for the guest's background work (the next spare executor's
    warm-up, above all) to end before it is saved: what is still running
    then runs again in every clone (cellvm.vmm_idle). A guest that stays busy
    is saved anyway, with a warning."""
    from . import vmm_idle
    t0 = time.monotonic()
    if not vmm_idle.wait_settled(vm.pid, timeout):
        logger.warning("cellvm: the template's guest was still busy after %.0f s; saving it "
                       "anyway: its clones will finish that work in their first cell", timeout)
    else:
        logger.debug("cellvm: the template's guest settled in %.1f s", time.monotonic() - t0)


def clear_deadline(conn, timeout=30.0):
    """SET_DEADLINE 0: a template carries no deadline (each clone gets its own)."""
    try:
        conn.call(_wire.SET_DEADLINE, {"timeout_ms": 0}, timeout=timeout)
    except _wire.AgentError as e:
        if e.code != "unsupported":
            raise


# --- which template ----------------------------------------------------------


class Launch:
    """What create() would boot, as a template sees it: the VM object (not
    started) and the manifest a template of it has."""

    def __init__(self, image, vmm="qemu", memory_mb=1024, vcpus=1, network="none",
                 extra_cmdline="", kernel=None, initramfs=True, rootfs=None):
        from .launch import limits_cmdline, resolve_image
        self.image = resolve_image(image)
        self.vmm = vmm
        if "cellvm.mem_limit=" not in extra_cmdline:
            extra_cmdline = f"{limits_cmdline(memory_mb)} {extra_cmdline}".strip()
        self.extra_cmdline = f"{extra_cmdline} cellvm.deadline_ms={BUILD_DEADLINE_MS}".strip()
        self.kw = dict(memory_mb=memory_mb, vcpus=vcpus, network=network,
                       kernel=kernel, initramfs=initramfs, rootfs=rootfs)
        self.want = self.manifest()
        w = self.want
        self.name = snap.template_name(vmm, w.arg + w.request + [w.cmdline, str(w.memory_mb), str(w.vcpus)]
                                       + [f.split(" ", 3)[3] for f in w.file])

    def new_vm(self):
        if self.vmm == "qemu":
            from .snapshot_qemu import snapshot_vm
            return snapshot_vm(self.image, extra_cmdline=self.extra_cmdline, **self.kw)
        from .launch import HybridVsockVM
        return HybridVsockVM(self.vmm, self.image, extra_cmdline=self.extra_cmdline,
                             api=True, **self.kw)

    def manifest(self):
        vm = self.new_vm()
        if self.vmm == "qemu":
            from .snapshot_qemu import template_manifest
            return template_manifest(vm, self.image)
        from . import snapshot_hybrid
        return snapshot_hybrid.template_manifest(vm)


def _usable(td, want):
    """((dir, manifest), None) if td's current snapshot fits `want`, else (None, why)."""
    cur = td.current()
    if cur is None:
        return None, None
    try:
        m = snap.read_manifest(cur)
        snap.check_files(m, cur)
    except snap.SnapshotError as e:
        return None, str(e)
    diffs = snap.differences(m, want)
    if diffs:
        return None, "; ".join(diffs)
    return (cur, m), None


def build(launch: Launch, td: "snap.TemplateDir", before_prepare=None):
    """Boots the launch, waits for its preloads, prepares and saves it into a
    new snapshot dir of `td`, publishes it; (dir, manifest). Call with
    td.build_lock() held. `before_prepare(conn)`, if given, runs right
    before SNAPSHOT_PREPARE (the tests read the template's own state)."""
    from .launch import _live, _live_lock, wait_executor_ready
    t0 = time.monotonic()
    logger.warning("cellvm: building the template %s (%s, %d MiB): booting the image and "
                   "waiting for its preloads, ~20 s under TCG; later creates restore it in "
                   "well under a second", td.path, launch.vmm, launch.want.memory_mb)
    tmp = td.new_snapshot_dir()
    m = launch.want
    vm = launch.new_vm()
    try:
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        if launch.vmm == "qemu":
            from . import snapshot_qemu as sq
            vm.extra_args = sq.memory_args(vm.memory_mb, os.path.join(tmp, "memory"), share=True)
        with _live_lock:
            _live.add(vm)
        vm.start()
        conn = vm.connect(timeout=BUILD_TIMEOUT_S)
        try:
            wait_executor_ready(vm, conn, deadline)
            logger.warning("cellvm: template %s: the guest is ready after %.1f s; saving it",
                           td.path, time.monotonic() - t0)
            clear_deadline(conn)
            warm_default_context(conn)
            if before_prepare is not None:
                before_prepare(conn)
            settle(vm)
            m.generation = prepare(conn)
            # The channel stays connected while the state is saved: see snapshot_qemu.
            if launch.vmm == "qemu":
                m.state_size = _save_qemu(vm, tmp)
            else:
                from . import snapshot_hybrid
                snapshot_hybrid.save_template(vm, tmp, m)
        finally:
            conn.close()
    except BaseException:
        vm.kill()
        snap.remove_unused(tmp)
        raise
    vm.kill()
    try:
        if m.memory:  # on disk before the manifest says the template is whole
            _fsync(os.path.join(tmp, m.memory))
        m.created_ms = time.time_ns() // 1_000_000
        m.build_ms = int((time.monotonic() - t0) * 1000)
        snap.check_files(m, tmp)
        snap.write_atomic(os.path.join(tmp, snap.MANIFEST), m.to_text().encode())
        final = td.publish(tmp)
    except BaseException:
        snap.remove_unused(tmp)
        raise
    used = 0
    if m.memory:
        used = os.stat(os.path.join(final, m.memory)).st_blocks * 512
    logger.warning("cellvm: template %s ready in %.1f s: device state %d KiB, memory %d MiB "
                   "allocated of %d MiB", final, time.monotonic() - t0, m.state_size >> 10,
                   used >> 20, m.memory_size >> 20)
    return final, m


def _fsync(path):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _save_qemu(vm, tmp) -> int:
    from . import snapshot_qemu as sq
    q = sq.Qmp.connect(vm.qmp_socket)
    try:
        q.execute("stop")
        size = sq.save_state(q, os.path.join(tmp, "state"), ignore_shared=True)
    except BaseException:
        q.close()
        raise
    sq.quit_qemu(vm, q)
    return size
