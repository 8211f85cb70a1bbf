"""SIGINT to the executor raises KeyboardInterrupt in the running cell.

How quickly is a target, measured beside ipykernel's by
bench/executor_costs.py (docs/BENCHMARKS.md), not asserted here."""

import os
import signal
import time

import pytest

from test_executor_harness import ex, zygote  # noqa: F401


@pytest.mark.parametrize("code", ["import time\ntime.sleep(100)", "while True:\n    pass"])
def test_sigint_interrupts_the_running_cell(ex, code):
    rid = ex.start("print('started', flush=True)\n" + code)
    sent = {}

    def interrupt():
        time.sleep(0.2)
        sent["t"] = time.monotonic()
        os.kill(ex.pid, signal.SIGINT)

    import threading
    t = threading.Thread(target=interrupt)
    t.start()
    r = ex.collect(rid, timeout=20)
    elapsed = time.monotonic() - sent["t"]
    t.join()
    assert r.error["name"] == "KeyboardInterrupt"
    assert r.end["status"] == "error"
    assert elapsed < 10, elapsed  # the interrupt ended it, not its own 100 s
    assert ex.ok("1+1").text == "2"


def test_sigint_while_idle_does_not_break_next_cell(ex):
    ex.ok("x = 1")
    for _ in range(3):
        os.kill(ex.pid, signal.SIGINT)
    time.sleep(0.1)
    assert ex.alive()
    r = ex.ok("import time; time.sleep(0.05); x + 1")
    assert r.text == "2"
