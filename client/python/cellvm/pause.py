"""E2B's pause and resume (docs/SNAPSHOTS.md, "Pause and resume").

    sbx.pause()                      # True; False if it was paused already
    Sandbox.list()                   # ... SandboxInfo(state=SandboxState.PAUSED)
    sbx = Sandbox.connect(sbx_id)    # resumed: variables, files, background commands

Pausing and resuming are the C CLI's, for every VMM (`cellvm pause --json`,
`cellvm resume --json`: client/c/pause.c, pause_hybrid.c, cli_pause.c): pause
saves the whole guest into a record of the paused store ($XDG_STATE_HOME/
cellvm/paused: it survives a reboot of the host) and stops the VMM; resume
runs it again under the same id, its clock and entropy refreshed, with a
deadline of its own (E2B: `timeout`, default 300 s, counted from the
resume). While paused a sandbox counts against no limit and has no deadline
(E2B keeps paused sandboxes until they are killed).

This module keeps E2B's side of it: the Sandbox object that stands for a
paused sandbox, list, info, connect (its resume) and kill. A paused
sandbox is its entry in `cellvm ps --json` (state "paused": sandbox_id, key,
image, template, metadata, envs, vcpus, memory_mb, started_ms).
"""

import json
import time

PAUSE_WAIT_S = 130.0
"""How long a request waits for the keeper's pause of a sandbox past its
timeout (client/c: CREG_PAUSE_MARGIN_S, 120 s, and a little more)."""


def pause(sbx, keep_memory=True) -> bool:
    """Saves `sbx`'s VM into the paused store and stops it; False if it was
    paused. `keep_memory` False: its changed files only (`--files-only`)."""
    from .exceptions import SandboxException
    owner = sbx._root
    if getattr(owner, "_paused", None) is not None:
        return False
    vm, entry = owner._vm, owner._entry
    if vm is None or entry is None:
        raise SandboxException(f"pause is not supported for sandbox {sbx.sandbox_id}: it is no "
                               "VM this process started or reached through the registry (an "
                               "agent in dev mode, say, whose lifetime is its starter's)",
                               code="unsupported")
    if getattr(vm, "vmm", "qemu") != "qemu":
        if not keep_memory:
            raise SandboxException(f"pause(keep_memory=False): a {vm.vmm} sandbox's files are "
                                   "not archived (QEMU micro-VMs only)", code="unsupported")
        return _pause_hybrid(owner, vm, entry)
    return _pause_cli(owner, vm, entry, keep_memory)


def pause_entry(entry, keep_memory=True) -> bool:
    """Sandbox.pause(id) of another process's VM (its registry entry)."""
    from .exceptions import SandboxException
    if entry.vmm != "qemu":
        raise SandboxException(f"pause({entry.id}): a {entry.vmm} sandbox is paused by the "
                               "process that holds it", code="unsupported")
    from . import host
    files = [] if keep_memory else ["--files-only"]
    host.run(["pause", "--json", *files, entry.key], f"pause({entry.id})")  # `cellvm pause`
    return True


def _stopped(owner, rec):
    """The sandbox's VMM is gone: its entry and files too; the Sandbox (and
    its views) now stand for the paused sandbox `rec`."""
    from . import lifetime
    from ._live import live as _live
    owner._paused = rec
    owner._conn.close()
    owner._closed = True
    owner._vm.kill()
    lifetime.unwatch(owner)
    for view in _live(owner.sandbox_id):
        view._closed = True
        view._paused = owner._paused


def after_timeout(owner, wait_s=PAUSE_WAIT_S) -> bool:
    """A sandbox paused at its timeout (E2B's lifecycle on_timeout "pause":
    its keeper runs `cellvm pause` at the deadline) whose deadline passed:
    waits for that pause, then `owner` stands for the paused sandbox (True).
    False when it runs on (its deadline was moved meanwhile) or is gone."""
    from . import host, lifetime
    key = owner._entry.key
    end = time.monotonic() + wait_s
    while True:
        listed = [e for e in host.ps() if e["key"] == key]  # one listing: paused or running
        rec = next((e for e in listed if e.get("state") == "paused"), None)
        if rec is not None:
            if getattr(owner._vm, "cli", False):
                owner._vm._killed = True  # its VMM is gone; kill() must not drop the record
            _stopped(owner, rec)
            return True
        d = next((e for e in listed if e.get("state") == "running"), None)
        if d is None:
            return False
        owner._entry = lifetime.entry_from_info(d)
        if owner._entry.deadline_ms > time.time() * 1000 or time.monotonic() > end:
            return False
        time.sleep(0.1)


def _pause_cli(owner, vm, entry, keep_memory=True):
    """pause() of a QEMU sandbox: `cellvm pause --json` (client/c/pause.c) saves
    it over its QMP socket, stops its VMM and removes its entry. Without
    memory (`--files-only`, client/c/pause_fs.c) the CLI archives the guest's
    files through its agent, whose serial channel takes one client: this
    connection closes first, and opens again if the pause fails."""
    from . import host
    args = ["pause", "--json", "--envs", json.dumps(owner._envs)]
    if not keep_memory:
        owner.close()
        args.append("--files-only")
    try:
        # It prints the paused entry as `cellvm ps --json` lists it.
        rec = json.loads(host.run(args + [entry.key], f"pause({owner.sandbox_id})"))
    except BaseException:
        if not keep_memory:
            owner.connect()  # it runs on
        raise
    if getattr(vm, "cli", False):
        vm._killed = True  # its VMM is gone; kill() must not drop the record
    _stopped(owner, rec)
    return True


def _pause_hybrid(owner, vm, entry):
    """pause() of a Firecracker or Cloud Hypervisor sandbox: `cellvm pause
    --json` (client/c/pause_hybrid.c) saves it through its API, as QEMU's."""
    from .exceptions import SandboxException
    if not getattr(vm, "api_socket", True) or not vm.alive():
        raise SandboxException(f"pause(): sandbox {owner.sandbox_id} has no API socket (a cold "
                               f"boot runs {vm.vmm} without one: create it from a template) or "
                               "its VMM is gone", code="unsupported")
    return _pause_cli(owner, vm, entry)


def resume(cls, rec, timeout=None, request_timeout=None, envs=None, into=None):
    """The paused sandbox `rec` running again (`cellvm resume --json` under
    its key, so with the id it had): a new Sandbox (`cls`), or `into` (the
    paused Sandbox object) brought back. SandboxException if it cannot be."""
    from . import host, lifetime
    from .launch import adopt_cli, cli_vm
    info, conn = host.resume(rec["key"], timeout)
    vm = cli_vm(info, lifetime.detach_default())
    sbx = adopt_cli(cls, vm, info, conn, rec.get("envs", {}) if envs is None else envs,
                    request_timeout)
    sbx._metadata = dict(rec.get("metadata", {}))
    sbx._template = rec.get("template") or None
    if into is not None:
        _adopt_into(into, sbx)
        return into
    return sbx


def _adopt_into(old, new):
    """`old` (the Sandbox that was paused) takes over `new`'s VM and connection."""
    from . import lifetime
    from ._live import forget, register
    forget(new)
    lifetime.unwatch(new)
    for name in ("_id", "_addr", "_conn", "_vm", "_entry", "_restore_stages", "_started_at",
                 "_sent_deadline_ms", "_entry_state"):
        if hasattr(new, name):
            setattr(old, name, getattr(new, name))
    old._closed = False
    old._killed = False
    old._paused = None
    register(old)
    lifetime.watch(old)  # its holder: this process (cellvm resume --holder)


def info(rec):
    """E2B's SandboxInfo of the paused sandbox `rec`."""
    from .lifetime import ms_to_datetime
    from .models import SandboxInfo, SandboxState
    return SandboxInfo(sandbox_id=rec["sandbox_id"], sandbox_domain=None,
                       template_id=rec["image"] or None, name=rec["template"] or None,
                       metadata=dict(rec["metadata"]),
                       started_at=ms_to_datetime(rec["started_ms"]), end_at=None,
                       state=SandboxState.PAUSED, cpu_count=rec["vcpus"],
                       memory_mb=rec["memory_mb"],
                       lifecycle={"on_timeout": rec.get("on_timeout") or "kill",
                                  "auto_resume": False})


def records(listed=None):
    """The paused sandboxes of `listed` (`cellvm ps --json`'s entries; None: run it)."""
    from . import host
    return [e for e in (host.ps() if listed is None else listed) if e.get("state") == "paused"]


def find(ident):
    """The paused sandbox `ident` (its id or registry key), or None."""
    if not isinstance(ident, str):
        return None
    return next((r for r in records() if ident in (r["sandbox_id"], r["key"])), None)


def kill(rec) -> bool:
    """`cellvm kill` of a paused sandbox (E2B's kill: its saved state removed);
    False if it is gone."""
    from . import host
    return host.kill(rec["key"])
