"""E2B's fork (docs/SNAPSHOTS.md, "Fork"):

    forks = sbx.fork(count=2)                  # [Sandbox, Sandbox] (or an exception each)
    forks = Sandbox.fork(sandbox_id)           # another process's sandbox too

The C CLI does it (`cellvm fork --json --paused`, client/c/cli_fork.c): the
sandbox is saved once with its guest running on, and each fork is a record
of the paused store that resumes as a copy of its own (a NEW_GENERATION:
fresh entropy, this host's clock, random generators reseeded). This module
resumes each record as connect() resumes a paused sandbox (pause.resume),
and sets the source's clock again over its connection when this process
holds it (the save stopped the guest's clock).
"""

import json
import time

from . import _wire

FORK_MAX = 100


def fork(cls, source, timeout=None, count=None, envs=None):
    """Forks of `source` (a Sandbox, or a sandbox id): a list with one
    Sandbox (`cls`) or exception per fork, as E2B's fork() returns."""
    from . import host, pause
    from .exceptions import InvalidArgumentException
    count = 1 if count is None else count
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise InvalidArgumentException("count must be at least 1")
    if count > FORK_MAX:
        raise InvalidArgumentException(f"count must be at most {FORK_MAX}")
    owner, key = saved_source(source, "fork")
    if envs is None:
        envs = owner._envs if owner is not None else {}
    args = ["fork", "--json", "--paused", "--count", str(count), "--envs", json.dumps(envs), key]
    recs, failure = host.fork(args, f"fork({key})")
    set_time_after_save(owner, f"fork({key})")
    out = []
    for rec in recs:
        try:
            out.append(pause.resume(cls, rec, timeout=timeout, envs=envs))
        except Exception as err:  # noqa: BLE001 - each fork fails on its own (E2B)
            out.append(err)
            host.kill(rec["key"])  # its record: a fork that did not start leaves none
    out += [failure] * (count - len(recs))
    return out


def saved_source(source, verb):
    """(the Sandbox of this process that holds it or None, its registry key) of
    `source` (a Sandbox, or a sandbox id: this process's, or another's in the
    registry), which a save that lets it run on (a fork, a kept snapshot:
    `verb`) is about to copy. E2B's exceptions for a paused, gone or
    dev-mode sandbox."""
    from . import lifetime
    from ._live import live
    from .exceptions import SandboxException, SandboxNotFoundException
    if isinstance(source, str):  # one of this process's Sandboxes, if it is
        known = live(source)
        source = known[0] if known else source
    if isinstance(source, str):  # another process's (the registry)
        entry = lifetime.find(source)
        if entry is None:
            raise SandboxNotFoundException(f"Sandbox {source} not found")
        return None, entry.key
    owner = source._root
    if owner._was_killed() or getattr(owner, "_paused", None) is not None:
        raise SandboxNotFoundException(f"Sandbox {source.sandbox_id} not found (a paused "
                                       f"sandbox is resumed by connect() before a {verb})")
    if getattr(owner, "_entry", None) is None:
        raise SandboxException(f"{verb} is not supported for sandbox {source.sandbox_id}: it "
                               "is no micro-VM (an agent in dev mode)", code="unsupported")
    return owner, owner._entry.key


def set_time_after_save(owner, what):
    """The guest clock of `owner` (None: another process holds its channel and
    the CLI set it), which stood still during a save, set again."""
    if owner is None or owner._closed:
        return
    from . import lifetime
    try:
        owner._conn.call(_wire.SET_TIME, {"realtime_ns": time.time_ns()}, timeout=10)
    except Exception as err:  # noqa: BLE001 - the save stands; the clock is behind
        lifetime.logger.warning("%s: its guest's clock was not set again: %s", what, err)
