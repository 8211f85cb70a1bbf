"""The keeper of one sandbox: `python3 keeper.py REGISTRY_DIR KEY`.

Started by whatever started the VMM, in a session of its own and forked
away from it, so it outlives its creator (a crash, SIGKILL, the OOM killer).
It waits for the VMM named by the registry entry KEY (pidfd, so a reused pid
cannot fool it) and then removes the entry and the VMM's temp directory:
when the guest ends at its deadline (cellvm-init shuts it down, the VMM
exits) nothing is left behind even with no other cellvm process running.
It also kills the VMM at the entry's deadline plus the grace period, the
host side's own enforcement (re-reading the entry each second: set_timeout
moves it). It exits when the entry is gone (kill() by anyone) or names
another process. Standard library only; ~10 MB of memory per sandbox.
"""

import os
import select
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import registry as reg  # noqa: E402  (this directory, not the package: no heavy imports)

POLL_S = 1.0


def keep(path, key):
    if not os.path.isdir(path):
        return  # the registry is gone (its owner removed it): nothing to keep, nothing to make
    r = reg.Registry(path)
    try:
        e = r.read(key)
    except (reg.DamagedEntry, ValueError):
        return
    if e is None:
        return
    pid, start = e.pid, e.pid_start  # a VMM already gone is cleaned up below
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        pidfd = None
    while True:
        try:
            e = r.read(key)
        except (reg.DamagedEntry, ValueError):
            return  # the next sweep reports and removes it; its pid is not ours to trust
        if e is None or (e.pid, e.pid_start) != (pid, start):
            return
        if not e.vmm_alive():
            with r.lock():
                cur = r.read(key)
                if cur is not None and (cur.pid, cur.pid_start) == (pid, start):
                    r.remove(cur)
            return
        left = (e.deadline_ms + reg.grace_s() * 1000 - reg.now_ms()) / 1000.0
        if left <= 0:
            r.sweep()  # kills it (deadline + grace passed) and removes everything
            continue
        wait = min(POLL_S, left)
        if pidfd is not None:
            select.select([pidfd], [], [], wait)
        else:
            select.select([], [], [], wait)


def main():
    path, key = sys.argv[1], sys.argv[2]
    child = os.fork()
    if child:
        print(child, flush=True)
        os._exit(0)
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    keep(path, key)


if __name__ == "__main__":
    main()
