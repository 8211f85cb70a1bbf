"""cellvm.vmm_idle on real processes: a process that works for a while and
then sleeps (a template's guest finishing a spare's warm-up) is settled only
once it stopped working; one that never stops is reported at the timeout;
one that is gone raises. The VM side: test_snapshot_vm's
test_a_clone_is_idle_right_after_create."""

import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import vmm_idle  # noqa: E402

SPIN = "import time, sys\nend = time.monotonic() + float(sys.argv[1])\n" \
       "while sys.argv[1] == '-1' or time.monotonic() < end: pass\ntime.sleep(600)\n"


def spinner(seconds):
    return subprocess.Popen([sys.executable, "-c", SPIN, str(seconds)])


def test_settled_only_after_the_work_ends():
    p = spinner(1.5)
    try:
        time.sleep(0.1)  # the interpreter started
        t0 = time.monotonic()
        assert vmm_idle.wait_settled(p.pid, 20.0, window=0.25)
        assert time.monotonic() - t0 >= 1.3
    finally:
        p.kill()
        p.wait()


def test_a_process_that_stays_busy_is_reported_at_the_timeout():
    p = spinner(-1)
    try:
        t0 = time.monotonic()
        assert vmm_idle.wait_settled(p.pid, 1.0, window=0.25) is False
        assert time.monotonic() - t0 >= 1.0
    finally:
        p.kill()
        p.wait()


def test_a_process_that_is_gone_raises():
    p = subprocess.Popen(["true"])
    p.wait()
    with pytest.raises(OSError):
        vmm_idle.wait_settled(p.pid, 1.0, window=0.1)


def test_cpu_ns_counts_every_thread():
    """QEMU's work is on its vCPU threads: a thread's CPU counts while it lives."""
    import threading
    done, stop = threading.Event(), threading.Event()

    def spin():
        # 0.3 s of this thread's own CPU, however busy the machine is
        while time.thread_time() < 0.3:
            pass
        done.set()
        stop.wait()

    a = vmm_idle.cpu_ns(os.getpid())
    t = threading.Thread(target=spin)
    t.start()
    done.wait()  # this thread slept meanwhile
    try:
        assert vmm_idle.cpu_ns(os.getpid()) - a >= 0.2e9
    finally:
        stop.set()
        t.join()
