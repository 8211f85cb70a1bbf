"""Sandbox lifetime as E2B has it: a timeout that holds whether or not the
creating program still runs (docs/SDK.md, "Lifetime").

A booted sandbox lives `timeout` seconds (default 300, E2B's) from the
moment create() returns it; set_timeout(n) moves the end to n seconds from
now. Both sides enforce it:

- the guest: the kernel command line carries a provisional deadline
  (`cellvm.deadline_ms`: the boot budget plus the timeout, so a boot that
  hangs ends too) and, once the sandbox is ready, SET_DEADLINE sets the real
  one; cellvm-init shuts the machine down when it passes and the VMM exits
  (docs/INIT.md). A snapshot-restored guest gets its SET_DEADLINE the same
  way, so it never inherits its template's deadline.
- the host: the registry (registry.py) records the deadline with the VMM's
  pid and start time; the keeper (`cellvm keep`, client/c/keeper.c) and every cellvm process that
  sweeps the registry kill a VMM past deadline + grace.

A `with` block, kill() and the interpreter's exit (atexit) still end what
this process created, unless create() was given `detach=True` (or
$CELLVM_DETACH=1): then it lives until its timeout, as every E2B sandbox does.
"""

import datetime as _dt
import logging
import os
import threading
import time
import weakref

from . import _wire
from . import registry as _reg

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_ENV = "CELLVM_DEFAULT_TIMEOUT"
DEFAULT_SANDBOX_TIMEOUT = 300
"""Seconds a sandbox lives when create() gets no timeout (E2B's default)."""
DETACH_ENV = "CELLVM_DETACH"


TCG_CLOCK_SLACK = 0.3
"""Under TCG a guest told a TSC frequency that is not the host's (the image's
fixed tsc_early_khz, used only where this host's cannot be measured:
host_tsc) keeps time 20-30% fast or slow (8 s of host time read as 6.9 to
10.5 s in the guest in our measurements), so the deadline the guest enforces
on its own is then timeout * 1.3 + 2 s; the host's record stays exact and the
host enforces it (deadline + grace). With the host's TSC frequency (TCG, the
usual case) or KVM (kvm-clock) the guest's clock advances at the host's rate
(tests/test_vm_clock.py) and its deadline is the timeout itself."""


def guest_timeout_s(timeout_s: float, accel: str) -> float:
    """The guest's own deadline for a sandbox that ends in `timeout_s`."""
    from . import host_tsc
    if accel == "kvm" or host_tsc.khz() is not None:
        return timeout_s
    return timeout_s * (1 + TCG_CLOCK_SLACK) + 2.0


def default_timeout() -> float:
    return _reg._env_number(DEFAULT_TIMEOUT_ENV, DEFAULT_SANDBOX_TIMEOUT)


def detach_default() -> bool:
    return os.environ.get(DETACH_ENV, "") in ("1", "yes", "true", "on")


def resolve_timeout(timeout) -> float:
    """The sandbox's lifetime in seconds: `timeout`, else the default; raises
    the E2B-style error for one over the maximum (registry.check_timeout)."""
    t = default_timeout() if timeout is None else float(timeout)
    _reg.check_timeout(t)
    return t


def limit_error(e: "_reg.LimitExceeded"):
    """The SDK exception for a refused limit: E2B raises RateLimitException
    (HTTP 429) for too many sandboxes, a 400 for a timeout over its maximum."""
    from .exceptions import InvalidArgumentException, RateLimitException
    if e.kind == "sandboxes":
        return RateLimitException(str(e), code="rate_limit")
    return InvalidArgumentException(str(e), code="bad_request")


def _paused_key(key) -> bool:
    """A paused sandbox keeps its key (its id) for its resume: not a new VM's."""
    from . import pause
    return pause.find(key) is not None


def record(registry, vm, boot_budget_s, timeout_s, image=None, template=None, metadata=None,
           keeper=True, key=None):
    """Writes the registry entry of a just-started VM (call with the lock
    held) and starts its keeper (`keeper=False`: the caller does, with
    start_keeper_of); returns the Entry. Its key, a new one or `key` (a
    resumed sandbox's own), is the sandbox's id (`id` field, `sandbox_id`)."""
    start = _reg.proc_start_time(vm.pid)
    if start is None:
        raise OSError(f"the VMM (pid {vm.pid}) exited right after its start")
    if key is None:
        key = registry.new_key(getattr(vm, "vmm", "qemu"), taken=_paused_key)
    elif registry.read(key) is not None:  # a sweep under this lock left only live ones
        from .exceptions import SandboxException
        raise SandboxException(f"sandbox {key} is running already (cellvm ps)")
    now = _reg.now_ms()
    e = _reg.Entry(
        key=key, id=key, vmm=getattr(vm, "vmm", "qemu"),
        pid=vm.pid, pid_start=start, started_ms=now,
        deadline_ms=now + int((boot_budget_s + timeout_s) * 1000),
        dir=getattr(vm, "dir", "") or "", memory_mb=int(getattr(vm, "memory_mb", 0) or 0),
        vcpus=int(getattr(vm, "vcpus", 0) or 0), accel=str(getattr(vm, "accel", "") or ""),
        image=str(image or getattr(vm, "image", "")),
        template=str(template or ""), creator_pid=os.getpid(),
        creator_start=_reg.proc_start_time(os.getpid()) or 0,
        metadata={str(k): str(v) for k, v in (metadata or {}).items()})
    e.address = vm.address or ""
    registry.write(e)
    if keeper:
        try:
            e.keeper_pid = _reg.start_keeper(registry, e.key)
            registry.write(e)
        except Exception as err:  # noqa: BLE001 - the sweeps still enforce; say so
            logger.warning("cellvm: no keeper for %s (%s): its files are "
                                                "removed by the next cellvm process", e.key, err)
    return e


def send_deadline(conn, timeout_s: float, accel: str = "", request_timeout: float = 30.0) -> None:
    """SET_DEADLINE: the guest's init ends the machine `timeout_s` from now
    (by its clock: guest_timeout_s)."""
    ms = max(1, int(guest_timeout_s(timeout_s, accel) * 1000))
    conn.call(_wire.SET_DEADLINE, {"timeout_ms": ms}, timeout=request_timeout)


RELAY_POLL_S = 1.0


def registry_or_none():
    try:
        return _reg.Registry()
    except OSError as e:
        logger.warning("cellvm registry unavailable: %s", e)
        return None


def entry_from_info(d) -> "_reg.Entry":
    """A registry Entry of a live sandbox as `cellvm ps --json` prints it."""
    return _reg.Entry(key=d["key"], id=d["sandbox_id"], vmm=d["vmm"], pid=int(d["pid"]),
                      pid_start=_reg.proc_start_time(int(d["pid"])) or 0,
                      started_ms=int(d["started_ms"]), deadline_ms=int(d["deadline_ms"]),
                      address=d.get("address", ""), dir=d.get("dir", ""),
                      memory_mb=int(d.get("memory_mb", 0)), vcpus=int(d.get("vcpus", 0)),
                      accel=d.get("accel", ""), image=d.get("image", ""),
                      template=d.get("template", ""), holder_pid=int(d.get("holder_pid", 0)),
                      holder_start=int(d.get("holder_start", 0)),
                      metadata={str(k): str(v) for k, v in (d.get("metadata") or {}).items()})


def live_entries():
    """Every live sandbox of this user (`cellvm ps --json`, which sweeps; the
    registry read here when there is no cellvm binary: a dev-mode program)."""
    from . import host
    if not host.available():
        r = registry_or_none()
        return r.sweep() if r is not None else []
    return [entry_from_info(d) for d in host.ps() if d.get("state") == "running"]


def find(ident):
    """The live sandbox with that id, key or address (`cellvm ps --json`), or None."""
    from . import host
    if not host.available():
        r = registry_or_none()
        return r.find(ident) if r is not None and isinstance(ident, str) else None
    d = host.find(ident)
    return entry_from_info(d) if d is not None else None


def kill_entry(entry) -> bool:
    """`cellvm kill`: True if it was live."""
    from . import host
    return host.kill(entry.key)


def forget(entry) -> None:
    """Removes the entry of a VM its owner has stopped."""
    r = registry_or_none()
    if r is not None:
        r.forget(entry.key)


_warned = set()


def warn_dev_mode(sandbox_id, call):
    """Dev mode: the agent's lifetime belongs to whoever started it."""
    if (sandbox_id, call) not in _warned:
        _warned.add((sandbox_id, call))
        logger.warning("%s(%s): the agent runs in dev mode (not in a VM cellvm started): its "
                       "lifetime belongs to whoever started it, there is no timeout to set",
                       call, sandbox_id)


def set_timeout_of(sbx, entry, timeout):
    """set_timeout() for a sandbox with a registry entry (`cellvm
    set-timeout`): recorded, then sent to the guest over `sbx`'s connection,
    or by the CLI over a connection of its own when no process holds the
    VM's channel; a live holder relays it (relay thread below)."""
    from . import host
    from .exceptions import SandboxException
    try:
        _reg.check_timeout(float(timeout))
    except _reg.LimitExceeded as err:
        raise limit_error(err) from None
    owner = None
    if sbx is not None:
        owner = sbx._owner if sbx._owner is not None else sbx
        if owner._closed:
            owner = None
    host.set_timeout(entry.key, timeout, registry_only=owner is not None)
    if owner is None:
        return
    e = owner._entry
    e.deadline_ms = _reg.now_ms() + int(float(timeout) * 1000)
    try:
        send_deadline(owner._conn, float(timeout), e.accel)
        owner._sent_deadline_ms = e.deadline_ms
    except (_wire.AgentError, _wire.ConnectionClosed, _wire.ProtocolError, TimeoutError) as err:
        raise SandboxException(f"set_timeout: the guest did not take its deadline: {err}") from None


def connect_entry(cls, entry, timeout, request_timeout, envs):
    """Sandbox.connect() of another process's VM (its registry entry)."""
    from .exceptions import SandboxException
    if entry.held_by_other() and entry.address.startswith("unix:"):
        raise SandboxException(
            f"sandbox {entry.id} is in use by process {entry.holder_pid}: "
            "its channel (QEMU's virtio-serial socket) serves one client at a time; list, "
            "get_info, set_timeout and kill work meanwhile (vhost-vsock has no such limit)")
    sbx = cls(addr=entry.address, request_timeout=request_timeout, envs=envs)
    sbx._id = entry.id  # the sandbox's id (its key), not the channel's address
    sbx._entry = entry
    sbx._metadata = dict(entry.metadata)
    sbx._template = entry.template or None
    sbx._started_at = ms_to_datetime(entry.started_ms)
    hold(sbx)
    if timeout is not None:
        sbx.set_timeout(timeout)
    watch(sbx)
    return sbx


def hold(sbx):
    """This process holds the sandbox's channel now (a serial channel takes
    one client: others are refused with a clear error, and set_timeout from
    them is relayed by us)."""
    r = registry_or_none()
    if r is not None and getattr(sbx, "_entry", None) is not None:
        r.set_holder(sbx._entry.key, os.getpid())


def release(sbx):
    """sbx closed its connection: the channel is free for another process."""
    r = registry_or_none()
    if r is not None and getattr(sbx, "_entry", None) is not None:
        r.set_holder(sbx._entry.key, 0)


def info_of(owner, hello):
    """get_info() of a Sandbox with a registry entry: the entry as it is now
    (another process may have moved the deadline)."""
    from .exceptions import SandboxNotFoundException
    e = find(owner._entry.key)
    if e is None:
        raise SandboxNotFoundException(f"Sandbox {owner._entry.id} not found")
    owner._entry = e
    info = info_from_entry(e)
    info.envd_version = str(hello.get("agent_version", ""))
    vm = owner._vm
    if vm is not None:
        info.allow_internet_access = getattr(vm, "network", "none") == "user"
    return info


# The relay: a process holding a VM's channel sends it the deadlines other
# processes record (their own connection would wait behind ours).
_watched = weakref.WeakSet()
_watch_lock = threading.Lock()
_relay = None


def watch(sbx):
    global _relay
    e = getattr(sbx, "_entry", None)
    if e is None:
        return
    sbx._sent_deadline_ms = e.deadline_ms
    with _watch_lock:
        _watched.add(sbx)
        if _relay is None:
            _relay = threading.Thread(target=_relay_loop, name="cellvm-deadline-relay", daemon=True)
            _relay.start()


def unwatch(sbx):
    with _watch_lock:
        _watched.discard(sbx)


def _relay_loop():
    while True:
        time.sleep(RELAY_POLL_S)
        with _watch_lock:
            sandboxes = list(_watched)
        r = registry_or_none() if sandboxes else None
        for sbx in sandboxes:
            if sbx._killed or sbx._closed or r is None:
                continue
            try:
                e = r.read(sbx._entry.key)
            except (_reg.DamagedEntry, ValueError):
                continue
            if e is None or e.deadline_ms == getattr(sbx, "_sent_deadline_ms", None):
                continue
            sbx._entry = e
            try:
                send_deadline(sbx._conn, max(0.001, e.time_left_s()), e.accel)
                sbx._sent_deadline_ms = e.deadline_ms
            except Exception as err:  # noqa: BLE001 - the host side still enforces
                logger.debug("deadline relay for %s: %s", e.id, err)


def ms_to_datetime(ms: int) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(ms / 1000.0, _dt.timezone.utc)


def info_from_entry(e):
    """E2B's SandboxInfo of a registry entry (no connection needed)."""
    from .models import SandboxInfo, SandboxState
    return SandboxInfo(
        sandbox_id=e.id, sandbox_domain=None, template_id=e.image or None,
        name=e.template or None, metadata=dict(e.metadata),
        started_at=ms_to_datetime(e.started_ms), end_at=ms_to_datetime(e.deadline_ms),
        state=SandboxState.RUNNING, cpu_count=e.vcpus, memory_mb=e.memory_mb)
