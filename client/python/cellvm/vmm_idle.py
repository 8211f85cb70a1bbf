"""Waiting for a VMM's guest to settle before its template is saved.

What the guest is still doing when it is paused, every clone restored from
it does again, in a QEMU whose TCG translation cache is empty: after the
template's default context starts, the zygote forks the next spare
executor, whose warm-up (numpy's reseed, fonts) was under way at the
snapshot and cost each clone's first cell ~0.25 s under TCG here
(docs/BENCHMARKS.md). The guest has no single "done" to ask for (spares,
the Node.js spare, the kernel's deferred work), so the host watches the
VMM's CPU time (under KVM too: a vCPU's guest time is its thread's)."""

import os
import time

IDLE_SHARE = 0.15
"""A settled guest's VMM: a few % of a CPU under TCG here (timer ticks)."""
WINDOW_S = 0.5
WINDOWS = 2
"""Consecutive windows below IDLE_SHARE that count as settled."""


def cpu_ns(pid: int) -> int:
    """Nanoseconds on a CPU of all threads of `pid` (/proc/PID/task/*/schedstat).
    OSError when the process is gone."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:  # a thread that just ended
            continue
    return total


def wait_settled(pid: int, timeout: float, share: float = IDLE_SHARE, window: float = WINDOW_S,
                 windows: int = WINDOWS) -> bool:
    """Waits until `pid` used under `share` of one CPU in `windows`
    consecutive windows of `window` seconds: True, or False at `timeout`
    (the caller goes on, saying so). OSError when the process is gone."""
    end = time.monotonic() + timeout
    quiet = 0
    prev, t = cpu_ns(pid), time.monotonic()
    while True:
        time.sleep(window)
        now_cpu, now = cpu_ns(pid), time.monotonic()
        quiet = quiet + 1 if now_cpu - prev < share * (now - t) * 1e9 else 0
        if quiet >= windows:
            return True
        if now >= end:
            return False
        prev, t = now_cpu, now
