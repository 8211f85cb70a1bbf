"""Sandbox lifetime as E2B has it: a timeout that holds whether or not the
creating program still runs (docs/SDK.md, "Lifetime").

A booted sandbox lives `timeout` seconds (default $CELLVM_DEFAULT_TIMEOUT,
else 300, E2B's) from the moment create() returns it; set_timeout(n) moves
the end to n seconds from now. The host side is the C CLI's: `cellvm create`
records the sandbox in the registry with its deadline (client/c/registry.c),
its keeper and every cellvm process kill a VMM past deadline + grace, and it
sends the guest its deadline (SET_DEADLINE), which cellvm-init enforces too.

What is the SDK's own: the sandboxes of `cellvm ps --json` as Entry views;
the holder of a sandbox's channel (a serial channel serves one client at a
time: `cellvm hold` refuses a second process's connect with a clear error);
set_timeout over the connection this process holds; and the deadline relay:
a process holding a VM's channel sends it the deadlines other processes
record with `cellvm set-timeout`, since their own connection would wait
behind ours. The CLI says what to send the guest (`guest_timeout_ms`: the
timeout itself when the guest's clock is exact, else with TCG's slack).

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
from dataclasses import dataclass, field
from typing import Dict

from . import _wire

logger = logging.getLogger(__name__)

DETACH_ENV = "CELLVM_DETACH"
RELAY_POLL_S = 1.0


def detach_default() -> bool:
    return os.environ.get(DETACH_ENV, "") in ("1", "yes", "true", "on")


@dataclass
class Entry:
    """A live sandbox as `cellvm ps --json` (or create/resume --json) prints it."""
    key: str
    id: str
    vmm: str
    pid: int
    started_ms: int
    deadline_ms: int
    address: str = ""
    dir: str = ""
    memory_mb: int = 0
    vcpus: int = 0
    accel: str = ""
    image: str = ""
    template: str = ""
    holder_pid: int = 0
    held: bool = False
    path: str = ""  # its registry file: rewritten when another process moves the deadline
    metadata: Dict[str, str] = field(default_factory=dict)
    on_timeout: str = "kill"  # E2B's lifecycle: "pause", its keeper pauses it at its deadline


def entry_from_info(d) -> Entry:
    return Entry(key=d["key"], id=d["sandbox_id"], vmm=d["vmm"], pid=int(d["pid"]),
                 started_ms=int(d["started_ms"]), deadline_ms=int(d["deadline_ms"]),
                 address=d.get("address", ""), dir=d.get("dir", ""),
                 memory_mb=int(d.get("memory_mb", 0)), vcpus=int(d.get("vcpus", 0)),
                 accel=d.get("accel", ""), image=d.get("image", ""),
                 template=d.get("template", ""), holder_pid=int(d.get("holder_pid", 0)),
                 held=bool(d.get("held", False)), path=d.get("entry", ""),
                 metadata={str(k): str(v) for k, v in (d.get("metadata") or {}).items()},
                 on_timeout=d.get("on_timeout", "kill"))


def live_entries(listed=None):
    """Every live sandbox of this user, of `listed` (`cellvm ps --json`'s
    entries; None: run it, which sweeps)."""
    from . import host
    return [entry_from_info(d) for d in (host.ps() if listed is None else listed)
            if d.get("state") == "running"]


def find(ident):
    """The live sandbox with that id, key or address (`cellvm ps --json`), or None."""
    from . import host
    d = host.find(ident)
    return entry_from_info(d) if d is not None else None


def kill_entry(entry) -> bool:
    """`cellvm kill`: True if it was live."""
    from . import host
    return host.kill(entry.key)


_warned = set()


def warn_dev_mode(sandbox_id, call):
    """Dev mode: the agent's lifetime belongs to whoever started it."""
    if (sandbox_id, call) not in _warned:
        _warned.add((sandbox_id, call))
        logger.warning("%s(%s): the agent runs in dev mode (not in a VM cellvm started): its "
                       "lifetime belongs to whoever started it, there is no timeout to set",
                       call, sandbox_id)


def send_deadline(conn, guest_timeout_ms: int, request_timeout: float = 30.0) -> None:
    """SET_DEADLINE: the guest's init ends the machine `guest_timeout_ms` from
    now by its clock (the CLI's figure: `cellvm set-timeout --json`, `ps --json`)."""
    conn.call(_wire.SET_DEADLINE, {"timeout_ms": max(1, int(guest_timeout_ms))},
              timeout=request_timeout)


def set_timeout_of(sbx, entry, timeout):
    """set_timeout() for a sandbox in the registry (`cellvm set-timeout`):
    recorded, then sent to the guest over `sbx`'s connection, or by the CLI
    over a connection of its own when no process holds the VM's channel; a
    live holder relays it (relay thread below)."""
    from . import host
    from .exceptions import SandboxException
    owner = None
    if sbx is not None:
        owner = sbx._root
        if owner._closed:
            owner = None
    out = host.set_timeout(entry.key, timeout, registry_only=owner is not None)
    if owner is None:
        return
    owner._entry.deadline_ms = int(out["deadline_ms"])
    try:
        send_deadline(owner._conn, out["guest_timeout_ms"])
        owner._sent_deadline_ms = owner._entry.deadline_ms
    except (_wire.AgentError, _wire.ConnectionClosed, _wire.ProtocolError, TimeoutError) as err:
        raise SandboxException(f"set_timeout: the guest did not take its deadline: {err}",
                               code=getattr(err, "code", None)) from None


def connect_entry(cls, entry, timeout, request_timeout, envs, extend=True):
    """Sandbox.connect() of another process's VM (its entry): this process
    holds its channel first (`cellvm hold`, which refuses a serial channel
    another live process holds). `extend`: connect()'s lifetime rule (it
    lives at least `timeout`, default 300 s, from now); False for a
    connection that is no connect() (get_metrics)."""
    from . import host
    host.hold(entry.key, os.getpid())
    try:
        sbx = cls(addr=entry.address, request_timeout=request_timeout, envs=envs)
    except BaseException:
        host.hold(entry.key, os.getpid(), release=True)
        raise
    sbx._id = entry.id  # the sandbox's id (its key), not the channel's address
    sbx._entry = entry
    sbx._metadata = dict(entry.metadata)
    sbx._template = entry.template or None
    sbx._started_at = ms_to_datetime(entry.started_ms)
    try:
        if extend:
            sbx._extend_timeout(timeout)  # E2B's connect: only extends its life
    except BaseException:
        sbx.close()
        raise
    watch(sbx)
    return sbx


def hold(sbx):
    """This process holds the sandbox's channel again (a reconnect after
    close()): SandboxException if another process took it meanwhile."""
    from . import host
    if getattr(sbx, "_entry", None) is not None:
        host.hold(sbx._entry.key, os.getpid())


def release(sbx):
    """sbx closed its connection: the channel is free for another process."""
    from . import host
    from .exceptions import SandboxException
    if getattr(sbx, "_entry", None) is not None:
        try:
            host.hold(sbx._entry.key, os.getpid(), release=True)
        except SandboxException as err:  # ended meanwhile: nothing to release
            logger.debug("release of %s: %s", sbx._entry.id, err)


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
    info.lifecycle["auto_resume"] = bool(getattr(owner, "_auto_resume", False))
    return info


# The relay: a process holding a VM's channel sends it the deadlines other
# processes record (their own connection would wait behind ours). It looks
# at each watched entry's file (a stat per second); only when one changed
# does it ask the CLI (`cellvm ps --json`) for the deadline and what to send.
_watched = weakref.WeakSet()
_watch_lock = threading.Lock()
_relay = None


def _file_state(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def watch(sbx):
    global _relay
    e = getattr(sbx, "_entry", None)
    if e is None:
        return
    sbx._sent_deadline_ms = e.deadline_ms
    sbx._entry_state = _file_state(e.path)
    with _watch_lock:
        _watched.add(sbx)
        if _relay is None:
            _relay = threading.Thread(target=_relay_loop, name="cellvm-deadline-relay", daemon=True)
            _relay.start()


def unwatch(sbx):
    with _watch_lock:
        _watched.discard(sbx)


def _relay_loop():
    global _relay
    while True:
        time.sleep(RELAY_POLL_S)
        with _watch_lock:
            sandboxes = list(_watched)
            if not sandboxes:  # nothing left to relay: the next watch() starts another
                _relay = None
                return
        changed = []
        for sbx in sandboxes:
            if sbx._killed or sbx._closed:
                continue
            state = _file_state(sbx._entry.path)
            if state is not None and state != getattr(sbx, "_entry_state", None):
                sbx._entry_state = state  # before the read: a later write is seen next time
                changed.append(sbx)
        if changed:
            _relay_deadlines(changed)


def _relay_deadlines(sandboxes):
    from . import host
    try:
        now = {d["key"]: d for d in host.ps() if d.get("state") == "running"}
    except Exception as err:  # noqa: BLE001 - the host side still enforces
        logger.debug("deadline relay: cellvm ps: %s", err)
        return
    for sbx in sandboxes:
        d = now.get(sbx._entry.key)
        if d is None or int(d["deadline_ms"]) == getattr(sbx, "_sent_deadline_ms", None):
            continue
        sbx._entry = entry_from_info(d)
        try:
            send_deadline(sbx._conn, d["guest_timeout_ms"])
            sbx._sent_deadline_ms = sbx._entry.deadline_ms
        except Exception as err:  # noqa: BLE001 - the host side still enforces
            logger.debug("deadline relay for %s: %s", sbx._entry.id, err)


def ms_to_datetime(ms: int) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(ms / 1000.0, _dt.timezone.utc)


def info_from_entry(e):
    """E2B's SandboxInfo of a registry entry (no connection needed)."""
    from .models import SandboxInfo, SandboxState
    return SandboxInfo(
        sandbox_id=e.id, sandbox_domain=None, template_id=e.image or None,
        name=e.template or None, metadata=dict(e.metadata),
        started_at=ms_to_datetime(e.started_ms), end_at=ms_to_datetime(e.deadline_ms),
        state=SandboxState.RUNNING, cpu_count=e.vcpus, memory_mb=e.memory_mb,
        lifecycle={"on_timeout": e.on_timeout, "auto_resume": False})
