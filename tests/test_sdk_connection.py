"""One Sandbox connection shared by threads, big transfers both ways at once,
and Ctrl-C while the caller's thread is the one reading the socket (the SDK
has no reader thread: a waiting caller reads for everyone). Real agent."""

import hashlib
import os
import random
import signal
import threading
import time

import pytest


def test_threads_share_one_connection_under_mixed_load(sbx, agent):
    """Cells, uploads, downloads and commands from four threads at once on one
    connection: every answer reaches its own caller, complete."""
    errors = []
    data = os.urandom(8 << 20)
    digest = hashlib.sha256(data).hexdigest()

    def guard(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
        return run

    def cells():
        ctx = sbx.create_code_context()
        try:
            for i in range(40):
                ex = sbx.run_code(f"print('x' * {i * 100}); {i} * 2", context=ctx)
                assert ex.error is None and ex.text == str(i * 2)
                assert "".join(ex.logs.stdout) == "x" * (i * 100) + "\n"
        finally:
            sbx.remove_code_context(ctx)

    def files():
        for i in range(3):
            path = os.path.join(agent.workdir, f"shared-conn-{i}.bin")
            sbx.files.write(path, data)
            back = sbx.files.read(path, format="bytes")
            assert hashlib.sha256(back).hexdigest() == digest

    def commands():
        for _ in range(5):
            r = sbx.commands.run("seq 1 200000")
            assert r.stdout.count("\n") == 200000 and r.stdout.endswith("200000\n")

    def pings():
        for _ in range(200):
            sbx.ping()

    threads = [threading.Thread(target=guard(f)) for f in (cells, files, commands, pings)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert not any(t.is_alive() for t in threads), "a thread is stuck"
    assert not errors, errors


def test_an_upload_goes_through_while_output_nobody_reads_piles_up(sbx, agent):
    """A background command floods output that no thread reads while the same
    thread uploads 32 MiB: the agent stops reading a client whose replies pile
    up, so the uploading thread must read while the socket is full, or both
    sides wait for ever."""
    h = sbx.commands.run("head -c 40000000 /dev/zero | tr '\\0' x", background=True, timeout=120)
    time.sleep(0.5)  # the agent's output to us is over its high water by now
    data = os.urandom(32 << 20)
    path = os.path.join(agent.workdir, "while-flooded.bin")
    upload = threading.Thread(target=sbx.files.write, args=(path, data), daemon=True)
    upload.start()
    upload.join(120)
    assert not upload.is_alive(), "the upload is stuck behind output nobody reads"
    with open(path, "rb") as f:
        assert hashlib.sha256(f.read()).digest() == hashlib.sha256(data).digest()
    r = h.wait()
    assert r.exit_code == 0 and len(r.stdout) == 40000000


def test_ctrl_c_while_reading_never_loses_the_stream(sbx, ctx):
    """SIGINT lands at random points while the main thread reads a cell's
    flood of output; after each KeyboardInterrupt the connection is still in
    step (a lost byte would make every later message undecodable)."""
    main = threading.main_thread().ident
    assert threading.get_ident() == main
    rnd = random.Random(7)
    interrupted = 0
    for _ in range(12):
        timer = threading.Timer(rnd.uniform(0.05, 0.4),
                                lambda: signal.pthread_kill(main, signal.SIGINT))
        timer.start()
        try:
            # a flood that lasts past 0.4 s however fast print() is
            sbx.run_code("import time\nfor i in range(300000):\n    print(i)\n"
                         "    if i % 10000 == 0: time.sleep(0.015)", context=ctx)
        except KeyboardInterrupt:
            interrupted += 1
        finally:
            timer.cancel()
        assert sbx.run_code("40 + 2", context=ctx).text == "42"
    assert interrupted >= 6  # the interrupts did land mid-cell


def test_set_time_outside_cellvm_init_is_refused_and_the_hosts_clock_kept(sbx, agent):
    """A dev-mode agent runs on the host (here as root): its clock is the host's,
    which SET_TIME must not step."""
    from cellvm import SandboxException
    before = time.time_ns()
    with pytest.raises(SandboxException) as e:
        sbx.set_time(before - 3600 * 10**9)
    assert e.value.code == "unsupported" and "cellvm-init" in str(e.value)
    assert abs(time.time_ns() - before) < 60 * 10**9  # not an hour back


def test_shutdown_outside_cellvm_init_is_refused_and_the_agent_serves_on(sbx, agent):
    from cellvm import SandboxException
    with pytest.raises(SandboxException) as e:
        sbx.shutdown()
    assert e.value.code == "unsupported" and "cellvm-init" in str(e.value)
    assert agent.proc.poll() is None
    from cellvm import Sandbox
    with Sandbox.connect(agent.addr) as again:
        assert again.run_code("6 * 7").text == "42"


def _spin_default(env, cpus=None):
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [sys.executable, "-c", "from cellvm import _wire; print(_wire.SPIN_S)"]
    if cpus:
        cmd = ["taskset", "-c", cpus] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.path.join(root, "client", "python"), **env))
    return float(out.stdout)


def test_spin_before_blocking_is_configurable_and_off_on_one_cpu():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs to see the default")
    assert _spin_default({}) == 500e-6
    assert _spin_default({"CELLVM_SPIN_US": "120"}) == 120e-6
    assert _spin_default({"CELLVM_SPIN_US": "0"}) == 0.0
    assert _spin_default({"CELLVM_SPIN_US": "junk"}) == 500e-6
    assert _spin_default({"CELLVM_SPIN_US": "1e9"}) == 0.1  # capped
    # one CPU: spinning would keep a dev-mode agent from answering
    assert _spin_default({"CELLVM_SPIN_US": "500"}, cpus="0") == 0.0


def test_a_waiting_caller_spins_only_briefly_then_sleeps(sbx):
    """A long cell costs the waiting client next to no CPU: the spin is
    bounded, then the caller blocks in poll()."""
    sbx._conn.spin_s = 0.005
    try:
        assert sbx.run_code("1+1").text == "2"
        cpu = time.process_time()
        wall = time.monotonic()
        assert sbx.run_code("import time; time.sleep(0.6); 6 * 7").text == "42"
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    finally:
        sbx._conn.spin_s = __import__("cellvm")._wire.SPIN_S
    assert wall >= 0.6 and cpu < 0.2, (wall, cpu)
