"""An INTERRUPT sent right behind its EXECUTE, before the cell has started,
must still stop the cell with KeyboardInterrupt (not a kill after the grace
period that would lose the namespace)."""

from cellvm import _wire as w

LONG_CELL = "import time\n" + "x_pad = 1\n" * 2000 + "time.sleep(30)\n"


def run_interrupted(conn, ctx):
    req = conn.request(w.EXECUTE, {"code": LONG_CELL, "context": ctx})
    conn.call(w.INTERRUPT, {"context": ctx})  # no wait for EXEC_INPUT
    msgs = list(req.messages(timeout=20))
    return msgs


def test_interrupt_before_the_cell_starts_raises_keyboardinterrupt(fresh_agent):
    conn = w.Connection.connect(fresh_agent.addr)
    try:
        ctx = conn.call(w.CONTEXT_CREATE, {})["id"]
        conn.call(w.EXECUTE, {"code": "kept = 'still here'", "context": ctx})
        for _ in range(10):
            msgs = run_interrupted(conn, ctx)
            errors = [b for t, b in msgs if t == w.EXEC_ERROR]
            assert [e["name"] for e in errors] == ["KeyboardInterrupt"], msgs
            assert msgs[-1][0] == w.OK and msgs[-1][1]["status"] == "error"
        done = list(conn.request(w.EXECUTE, {"code": "kept", "context": ctx}).messages(timeout=20))
        results = [b for t, b in done if t == w.RESULT]
        assert results and results[0]["data"]["text/plain"] == "'still here'"
    finally:
        conn.close()
