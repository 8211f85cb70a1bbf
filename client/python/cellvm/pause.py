"""E2B's pause and resume (docs/SNAPSHOTS.md, "Pause and resume").

    sbx.pause()                      # True; False if it was paused already
    Sandbox.list()                   # ... SandboxInfo(state=SandboxState.PAUSED)
    sbx = Sandbox.connect(sbx_id)    # resumed: variables, files, background commands

pause() saves the whole guest (device state and RAM, in one QEMU migration
stream: a clone's RAM is a private mapping of its template's file, which
cannot be left out of the stream) into a record of the paused store
(cellvm.snapshot.PausedStore, $XDG_STATE_HOME/cellvm/paused: it survives a
reboot of the host), then stops the VMM and removes its registry entry. The
record, a directory named by the sandbox's registry key, names the sandbox
(its id: that key), metadata, template name and envs, and the VMM's argv
with the RAM as an anonymous memory-backend-ram, so a resume needs no
template. No new sandbox gets a key a paused one has (lifetime.record).

connect(id) resumes it: the same argv in a new temp directory (as a clone),
under the same registry key, so the sandbox keeps its id (as E2B's resume
does; a record paused when ids were addresses gets its key as its id then),
the state loaded, the guest running, HELLO, then its clock and the kernel's
entropy refreshed (ADD_ENTROPY, SET_TIME: the same guest again, its Python
random generators are left as they were, as E2B's resume leaves them), a
deadline of its own (E2B: `timeout`, default 300 s, counted from the
resume), and the record is removed. While paused a sandbox counts against
no limit and has no deadline (E2B keeps paused sandboxes until they are
killed).

Pausing and resuming a QEMU sandbox is the C CLI's (`cellvm pause --json`,
`cellvm resume --json`: client/c/pause.c, cli_pause.c); this module keeps
E2B's side of it (the Sandbox object that stands for a paused record, list,
kill) and Firecracker's and Cloud Hypervisor's records (snapshot_hybrid).
"""

import logging
import os

from . import snapshot as snap

logger = logging.getLogger("cellvm")


def _new_record(key):
    """(store, final dir, its .tmp dir, created) of a paused record being written."""
    store = snap.PausedStore()
    with store.lock():
        final = store.dir_of(key)
        tmp = final + ".tmp"
        snap.remove_unused(tmp)  # a crashed pause's leftover
        os.mkdir(tmp, 0o700)
    return store, final, tmp


def pause(sbx) -> bool:
    """Saves `sbx`'s VM into the paused store and stops it; False if it was paused."""
    from .exceptions import SandboxException
    owner = sbx._owner if sbx._owner is not None else sbx
    if getattr(owner, "_paused", None) is not None:
        return False
    vm, entry = owner._vm, owner._entry
    if vm is None or entry is None:
        raise SandboxException(f"pause is not supported for sandbox {sbx.sandbox_id}: it is no "
                               "VM this process started or reached through the registry (an "
                               "agent in dev mode, say, whose lifetime is its starter's)",
                               code="unsupported")
    if getattr(vm, "vmm", "qemu") != "qemu":
        return _pause_hybrid(owner, vm, entry)
    return _pause_cli(owner, vm, entry)


def pause_entry(entry) -> bool:
    """Sandbox.pause(id) of another process's VM (its registry entry)."""
    from .exceptions import SandboxException
    if entry.vmm != "qemu":
        raise SandboxException(f"pause({entry.id}): a {entry.vmm} sandbox is paused by the "
                               "process that holds it", code="unsupported")
    from . import host
    host.run(["pause", "--json", entry.key], f"pause({entry.id})")  # `cellvm pause`
    return True


def _stopped(owner, d, m):
    """The sandbox's VMM is gone: its entry and files too; the Sandbox (and
    its views) now stand for the paused record."""
    from . import lifetime
    from ._live import live as _live
    owner._paused = (d, m)
    owner._conn.close()
    owner._closed = True
    owner._vm.kill()
    lifetime.unwatch(owner)
    for view in _live(owner.sandbox_id):
        view._closed = True
        view._paused = owner._paused


def _pause_cli(owner, vm, entry):
    """pause() of a QEMU sandbox: `cellvm pause --json` (client/c/pause.c) saves
    it over its QMP socket, stops its VMM and removes its entry."""
    import json
    from . import host
    out = json.loads(host.run(["pause", "--json", "--envs", json.dumps(owner._envs), entry.key],
                              f"pause({owner.sandbox_id})"))
    d = out["record"]
    if getattr(vm, "cli", False):
        vm._killed = True  # its VMM is gone; kill() must not drop the record
    _stopped(owner, d, snap.read_manifest(d))
    return True


def _resume_cli(cls, d, m, timeout, request_timeout, envs):
    """resume() of a QEMU record: `cellvm resume --json` under its key."""
    from . import host, lifetime
    from .launch import adopt_cli, cli_vm
    info, conn = host.resume(os.path.basename(d), timeout)
    vm = cli_vm(info, lifetime.detach_default())
    envs = m.envs if envs is None else envs
    return adopt_cli(cls, vm, info, conn, envs, request_timeout)


def _pause_hybrid(owner, vm, entry):
    """pause() of a Firecracker or Cloud Hypervisor sandbox: `cellvm pause
    --json` (client/c/pause_hybrid.c) saves it through its API, as QEMU's."""
    from .exceptions import SandboxException
    if not getattr(vm, "api_socket", True) or not vm.alive():
        raise SandboxException(f"pause(): sandbox {owner.sandbox_id} has no API socket (a cold "
                               f"boot runs {vm.vmm} without one: create it from a template) or "
                               "its VMM is gone", code="unsupported")
    return _pause_cli(owner, vm, entry)


def resume(cls, d, m, timeout=None, request_timeout=None, envs=None, into=None):
    """The paused sandbox of record `d` running again: a new Sandbox (`cls`),
    or `into` (the paused Sandbox object) brought back, with the registry key
    and so the id it had. The record is removed once the guest answered;
    SnapshotError/SandboxException if it cannot be."""
    sbx = _resume_cli(cls, d, m, timeout, request_timeout, envs)
    sbx._metadata = dict(m.metadata)
    sbx._template = m.template or None
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


def info(d, m):
    """E2B's SandboxInfo of a paused record (its id: the record's, as `cellvm
    ps` shows it; its registry key, the record's name, for one that names none)."""
    from .lifetime import ms_to_datetime
    from .models import SandboxInfo, SandboxState
    return SandboxInfo(sandbox_id=m.sandbox_id or m.registry_key or os.path.basename(d),
                       sandbox_domain=None,
                       template_id=m.image or None, name=m.template or None,
                       metadata=dict(m.metadata),
                       started_at=ms_to_datetime(m.started_ms or m.created_ms),
                       end_at=None, state=SandboxState.PAUSED, cpu_count=m.vcpus,
                       memory_mb=m.memory_mb)


def find(ident):
    """(dir, Manifest) of the paused sandbox `ident` (its id or registry key,
    which are one for a record paused since ids are keys), or None."""
    if not isinstance(ident, str):
        return None
    try:
        return snap.PausedStore().find(ident)
    except OSError:
        return None


def records():
    try:
        return snap.PausedStore().records()
    except OSError:
        return []


def kill(d) -> bool:
    """Removes a paused record (E2B's kill of a paused sandbox); False if it is gone."""
    store = snap.PausedStore()
    with store.lock():
        if not os.path.isdir(d):
            return False
        store.remove(d)
    return True
