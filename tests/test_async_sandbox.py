"""AsyncSandbox (E2B's async API) against a real agent: run_code with sync
and async callbacks, concurrency over one connection, cancellation reaching
the sandbox, contexts, files, commands, lifecycle, and an E2B async program
run unchanged through the compat modules.

Each test drives its own event loop with asyncio.run (no pytest plugin)."""

import asyncio
import contextvars
import os
import threading
import time

import pytest

from cellvm import (
    AsyncCommandHandle,
    AsyncSandbox,
    CommandExitException,
    CommandResult,
    Context,
    Execution,
    FilesystemEventType,
    InvalidArgumentException,
    NotFoundException,
    OutputMessage,
    Result,
    SandboxException,
    TimeoutException,
    WriteInfo,
)
from conftest import run_e2b_program

REQUEST_ID = contextvars.ContextVar("request_id")


def run(coro_fn, *args):
    return asyncio.run(coro_fn(*args))


async def connect(agent):
    return await AsyncSandbox.connect(agent.addr)


# --- run_code ----------------------------------------------------------------

def test_run_code_results_logs_errors(agent):
    async def main():
        async with await connect(agent) as sbx:
            ctx = await sbx.create_code_context()
            ex = await sbx.run_code("import sys\nprint('out')\nprint('err', file=sys.stderr)\n6 * 7",
                                    context=ctx)
            assert isinstance(ex, Execution)
            assert ex.text == "42" and ex.results[0].is_main_result
            assert "".join(ex.logs.stdout) == "out\n" and "".join(ex.logs.stderr) == "err\n"
            assert ex.error is None and ex.execution_count == 1

            ex = await sbx.run_code("print('before')\n1/0", context=ctx)
            assert ex.error.name == "ZeroDivisionError" and ex.error.value == "division by zero"
            assert "1/0" in ex.error.traceback and ex.logs.stdout == ["before\n"] and ex.text is None

            with pytest.raises(InvalidArgumentException):
                await sbx.run_code("1", language="python", context=ctx)
            with pytest.raises(TimeoutException) as ei:
                await sbx.run_code("import time\nprint('a', flush=True)\ntime.sleep(30)",
                                   context=ctx, timeout=1)
            assert ei.value.execution.logs.stdout == ["a\n"]
            await sbx.remove_code_context(ctx)
    run(main)


def test_async_and_sync_callbacks_run_in_order_on_the_loop(agent):
    """Coroutine callbacks are awaited one at a time, in output order, on the
    event loop's thread, mixed with plain ones, and see the caller's
    context variables."""
    async def main():
        loop_thread = threading.get_ident()
        REQUEST_ID.set("req-7")
        seen, threads = [], set()

        async def on_stdout(msg):
            threads.add(threading.get_ident())
            seen.append(("start", msg.line))
            await asyncio.sleep(0.05)  # a later message must wait for this one
            seen.append(("end", msg.line))

        def on_stderr(msg):
            threads.add(threading.get_ident())
            assert isinstance(msg, OutputMessage) and msg.error
            seen.append(("stderr", msg.line))

        async def on_result(result):
            threads.add(threading.get_ident())
            assert isinstance(result, Result)
            seen.append(("result", result.text, REQUEST_ID.get(None)))

        async with await connect(agent) as sbx:
            ctx = await sbx.create_code_context()
            code = ("import sys, time\n"
                    "for i in range(3):\n"
                    "    print(f'o{i}', flush=True); time.sleep(0.1)\n"
                    "print('e', file=sys.stderr, flush=True); time.sleep(0.1)\n"
                    "display(1)\n"
                    "2")
            ex = await sbx.run_code(code, context=ctx, on_stdout=on_stdout, on_stderr=on_stderr,
                                    on_result=on_result)
            assert seen == [("start", "o0\n"), ("end", "o0\n"), ("start", "o1\n"), ("end", "o1\n"),
                            ("start", "o2\n"), ("end", "o2\n"), ("stderr", "e\n"),
                            ("result", "1", "req-7"), ("result", "2", "req-7")], seen
            assert ex.text == "2"

            errors = []
            await sbx.run_code("raise ValueError('v')", context=ctx,
                               on_error=lambda e: errors.append((threading.get_ident(), e.name)))
            assert errors == [(loop_thread, "ValueError")]
            assert threads == {loop_thread}
            await sbx.remove_code_context(ctx)
    run(main)


def test_a_raising_callback_cancels_the_cell(agent):
    async def main():
        async with await connect(agent) as sbx:
            ctx = await sbx.create_code_context()

            async def on_stdout(msg):
                raise RuntimeError("stop here")

            t0 = time.monotonic()
            with pytest.raises(RuntimeError, match="stop here"):
                await sbx.run_code("import time\nprint('x', flush=True)\ntime.sleep(30)\ndone = 1",
                                   context=ctx, on_stdout=on_stdout)
            ex = await sbx.run_code("'done' in globals()", context=ctx)
            assert ex.text == "False" and time.monotonic() - t0 < 10
            await sbx.remove_code_context(ctx)
    run(main)


def test_two_contexts_run_concurrently_with_gather(agent):
    """Two cells in two contexts overlap in the sandbox, and the loop stays
    free meanwhile."""
    async def main():
        async with await connect(agent) as sbx:
            a, b = await asyncio.gather(sbx.create_code_context(), sbx.create_code_context())
            code = "import time\nt0 = time.time()\ntime.sleep(1.0)\n(t0, time.time())"
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            tick = asyncio.ensure_future(ticker())
            t0 = time.monotonic()
            ex_a, ex_b = await asyncio.gather(sbx.run_code(code, context=a), sbx.run_code(code, context=b))
            wall = time.monotonic() - t0
            tick.cancel()
            (sa, ea), (sb, eb) = eval(ex_a.text), eval(ex_b.text)
            # Overlap: each started before the other ended (serial runs could not).
            assert max(sa, sb) < min(ea, eb), (sa, ea, sb, eb)
            assert wall < 1.9, wall
            assert ticks > 20, ticks
            await asyncio.gather(sbx.remove_code_context(a), sbx.remove_code_context(b))
    run(main)


def test_wait_for_timeout_cancels_the_cell_in_the_sandbox(agent):
    """asyncio.wait_for's cancellation interrupts the running cell: the
    cell sees KeyboardInterrupt, its context survives and is free at once."""
    async def main():
        async with await connect(agent) as sbx:
            ctx = await sbx.create_code_context()
            await sbx.run_code("x = 1", context=ctx)
            code = ("import time\n"
                    "try:\n"
                    "    print('sleeping', flush=True)\n"
                    "    time.sleep(30)\n"
                    "except KeyboardInterrupt:\n"
                    "    interrupted = True\n"
                    "    raise\n"
                    "finished = True")
            out = []
            t0 = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(sbx.run_code(code, context=ctx, on_stdout=out.append), 1.0)
            cancelled_after = time.monotonic() - t0
            assert [m.line for m in out] == ["sleeping\n"]
            assert cancelled_after < 5, cancelled_after
            # The context is free at once (the sleep is not still running) and
            # its namespace survived.
            t1 = time.monotonic()
            ex = await sbx.run_code("(x, globals().get('interrupted'), globals().get('finished'))",
                                    context=ctx)
            assert ex.text == "(1, True, None)", ex
            assert time.monotonic() - t1 < 5
            await sbx.remove_code_context(ctx)
    run(main)


# --- contexts ----------------------------------------------------------------

def test_contexts(agent, workdir):
    async def main():
        async with await connect(agent) as sbx:
            ctx = await sbx.create_code_context(cwd=workdir)
            assert isinstance(ctx, Context) and ctx.cwd == workdir and ctx.language == "python"
            assert ctx.id in {c.id for c in await sbx.list_code_contexts()}
            assert (await sbx.run_code("import os\nv = 5\nos.getcwd()", context=ctx)).text == workdir
            await sbx.restart_code_context(ctx)
            ex = await sbx.run_code("v", context=ctx.id)
            assert ex.error.name == "NameError"
            await sbx.remove_code_context(ctx.id)
            assert ctx.id not in {c.id for c in await sbx.list_code_contexts()}
            with pytest.raises(NotFoundException):
                await sbx.run_code("1", context=ctx)
            with pytest.raises(NotFoundException):
                await sbx.remove_code_context(ctx)
    run(main)


# --- files -------------------------------------------------------------------

def test_files_round_trip(agent, workdir):
    async def main():
        async with await connect(agent) as sbx:
            p = os.path.join(workdir, "a.txt")
            info = await sbx.files.write(p, "héllo\n")
            assert isinstance(info, WriteInfo) and info.path == p
            assert await sbx.files.read(p) == "héllo\n"
            assert await sbx.files.read(p, format="bytes") == "héllo\n".encode()

            big = os.urandom(3 * 1024 * 1024 + 5)
            await sbx.files.write(os.path.join(workdir, "big.bin"), big)
            stream = await sbx.files.read(os.path.join(workdir, "big.bin"), format="stream")
            chunks = [c async for c in stream]
            assert len(chunks) > 1 and b"".join(chunks) == big
            # E2B's AsyncFileStreamReader is an async context manager too.
            async with await sbx.files.read(os.path.join(workdir, "big.bin"), format="stream") as stream:
                assert b"".join([c async for c in stream]) == big

            assert await sbx.files.make_dir(os.path.join(workdir, "d/e")) is True
            assert await sbx.files.make_dir(os.path.join(workdir, "d/e")) is False
            names = sorted(e.name for e in await sbx.files.list(workdir))
            assert names == ["a.txt", "big.bin", "d"]
            assert (await sbx.files.get_info(p)).size == len("héllo\n".encode())
            moved = await sbx.files.rename(p, os.path.join(workdir, "b.txt"))
            assert moved.name == "b.txt"
            assert await sbx.files.exists(p) is False
            assert await sbx.files.exists(os.path.join(workdir, "b.txt")) is True
            await sbx.files.remove(os.path.join(workdir, "d"))
            assert await sbx.files.exists(os.path.join(workdir, "d")) is False
            with pytest.raises(NotFoundException):
                await sbx.files.read(p)
            # Several transfers at once over the one connection.
            paths = [os.path.join(workdir, f"p{i}") for i in range(4)]
            await asyncio.gather(*(sbx.files.write(q, q) for q in paths))
            assert await asyncio.gather(*(sbx.files.read(q) for q in paths)) == paths
    run(main)


def test_watch_dir_calls_on_event_until_stopped(agent, workdir):
    async def main():
        async with await connect(agent) as sbx:
            events = []
            arrived = asyncio.Event()

            async def on_event(ev):
                events.append((ev.name, ev.type))
                if ev.name == "w.txt":
                    arrived.set()

            h = await sbx.files.watch_dir(workdir, on_event=on_event)
            await sbx.files.write(os.path.join(workdir, "w.txt"), "1")
            await asyncio.wait_for(arrived.wait(), 10)
            assert ("w.txt", FilesystemEventType.CREATE) in events
            await h.stop()
            n = len(events)
            await sbx.files.write(os.path.join(workdir, "after.txt"), "2")
            await asyncio.sleep(0.3)
            assert len(events) == n

            # A watch with a timeout ends and tells on_exit.
            ended = asyncio.get_running_loop().create_future()
            await sbx.files.watch_dir(workdir, on_event=lambda e: None,
                                      on_exit=ended.set_result, timeout=0.3)
            exc = await asyncio.wait_for(ended, 10)
            assert isinstance(exc, TimeoutException)
    run(main)


# --- commands ----------------------------------------------------------------

def test_commands_foreground(agent):
    async def main():
        async with await connect(agent) as sbx:
            out = []

            async def on_stdout(s):
                await asyncio.sleep(0)
                out.append(s)

            r = await sbx.commands.run("echo one; sleep 0.2; echo two; echo e >&2", on_stdout=on_stdout)
            assert isinstance(r, CommandResult)
            assert r.stdout == "one\ntwo\n" and r.stderr == "e\n" and r.exit_code == 0
            assert "".join(out) == "one\ntwo\n"
            with pytest.raises(CommandExitException) as ei:
                await sbx.commands.run("echo bad >&2; exit 3")
            assert ei.value.exit_code == 3 and ei.value.stderr == "bad\n"

            # A cancelled await kills the command.
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(sbx.commands.run("echo tag-async-fg; sleep 30"), 1.0)
            assert not [p for p in await sbx.commands.list() if "tag-async-fg" in p.args[-1]]
    run(main)


def test_commands_background(agent):
    async def main():
        async with await connect(agent) as sbx:
            h = await sbx.commands.run("read line; echo got $line", background=True, stdin=True)
            assert isinstance(h, AsyncCommandHandle) and h.pid > 0 and h.exit_code is None
            await h.send_stdin("x\n")
            r = await h.wait()
            assert r.stdout == "got x\n" and h.exit_code == 0

            seen = []
            got_started = asyncio.Event()

            async def on_stdout(s):
                seen.append(s)
                got_started.set()

            h = await sbx.commands.run("echo started; sleep 30", background=True, on_stdout=on_stdout)
            await asyncio.wait_for(got_started.wait(), 10)
            assert seen == ["started\n"] and h.stdout == "started\n"
            assert h.pid in {p.pid for p in await sbx.commands.list()}
            # A cancelled wait leaves the command running.
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(h.wait(), 0.3)
            assert h.pid in {p.pid for p in await sbx.commands.list()}
            assert await h.kill() is True
            with pytest.raises(CommandExitException) as ei:
                await h.wait()
            assert ei.value.exit_code == -1 and ei.value.error == "signal: killed"
            assert await sbx.commands.kill(h.pid) is False

            # disconnect() stops following; the command keeps running.
            h = await sbx.commands.run("sleep 30", background=True)
            await h.disconnect()
            with pytest.raises(CommandExitException) as ei:
                await asyncio.wait_for(h.wait(), 5)
            assert ei.value.error == "disconnected"
            assert h.pid in {p.pid for p in await sbx.commands.list()}
            assert await sbx.commands.kill(h.pid) is True
    run(main)


# --- lifecycle ---------------------------------------------------------------

def test_kill_async_with_and_info(agent):
    async def main():
        sbx = await connect(agent)
        assert sbx.sandbox_id == agent.addr
        assert await sbx.is_running() is True
        await sbx.set_timeout(60)
        assert (await sbx.get_info()).sandbox_id == agent.addr
        assert (await sbx.ping("p"))["payload"] == "p"
        assert await sbx.kill() is True
        assert await sbx.kill() is False
        assert await sbx.is_running() is False
        with pytest.raises(SandboxException):
            await sbx.run_code("1")

        async with await connect(agent) as s2:
            assert (await s2.run_code("1 + 1")).text == "2"
        assert await s2.is_running() is False
    run(main)


def test_create_uses_cellvm_addr(agent, monkeypatch):
    monkeypatch.setenv("CELLVM_ADDR", agent.addr)

    async def main():
        async with await AsyncSandbox.create(envs={"ASYNC_ENV": "v"}) as sbx:
            assert sbx.sandbox_id == agent.addr
            ctx = await sbx.create_code_context()
            assert (await sbx.run_code("import os; os.environ['ASYNC_ENV']", context=ctx)).text == "v"
            await sbx.remove_code_context(ctx)
    run(main)


E2B_ASYNC_PROGRAM = '''
import asyncio, os
from e2b_code_interpreter import AsyncSandbox
from e2b import AsyncSandbox as BaseAsyncSandbox, CommandExitException

work = os.environ["E2B_PROGRAM_DIR"]

async def main():
    assert AsyncSandbox is BaseAsyncSandbox
    sandbox = await AsyncSandbox.create()
    lines = []
    async def on_stdout(msg):
        lines.append(msg.line)
    await sandbox.run_code("x = 1")
    execution = await sandbox.run_code("print('hi'); x += 1; x", on_stdout=on_stdout)
    print(execution.text, lines)
    await sandbox.files.write(work + "/hello.txt", "hello from e2b")
    print(await sandbox.files.read(work + "/hello.txt"))
    print((await sandbox.commands.run("echo from bash")).stdout, end="")
    try:
        await sandbox.commands.run("exit 3")
    except CommandExitException as e:
        print("exit", e.exit_code)
    print(await sandbox.is_running())
    await sandbox.kill()

asyncio.run(main())
'''


def test_an_e2b_async_program_runs_unchanged_with_the_compat_path(agent, tmp_path):
    r = run_e2b_program(agent, tmp_path, E2B_ASYNC_PROGRAM, "e2b-async-program")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["2 ['hi\\n']", "hello from e2b", "from bash", "exit 3", "True"]


def test_what_a_cancelled_create_makes_later_is_released():
    """AsyncSandbox.create()/connect() and commands.run() make their sandbox
    or command in a worker: when the awaiting task was cancelled meanwhile
    (wait_for around a 20 s boot), what arrives later is released there,
    even after asyncio.run() has closed the loop."""
    from cellvm import _async_bridge as bridge
    released = threading.Event()
    made = object()

    def make():
        time.sleep(0.3)
        return made

    def release(what):
        assert what is made
        released.set()

    async def main():
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(bridge.acquire(make, release), 0.05)
        # Not cancelled: handed over, nothing released.
        kept = threading.Event()
        assert await bridge.acquire(lambda: made, lambda _: kept.set()) is made
        assert not kept.is_set()
    run(main)
    assert released.wait(5)


def test_over_the_micro_vms_channel(vm_sandbox):
    """The session's QEMU micro-VM (conftest.vm_sandbox; virtio-serial, one
    stream, where the host has no vhost-vsock): two cells at once, a
    streamed download sharing the connection while a cell runs, and a
    cancelled cell, all from one event loop. The VM is the session's: not
    killed here."""
    async def main():
        sbx = AsyncSandbox(vm_sandbox)
        a, b = await asyncio.gather(sbx.create_code_context(), sbx.create_code_context())
        code = "import time\nt0 = time.time()\ntime.sleep(1.0)\n(t0, time.time())"
        ex_a, ex_b = await asyncio.gather(sbx.run_code(code, context=a), sbx.run_code(code, context=b))
        (sa, ea), (sb, eb) = eval(ex_a.text), eval(ex_b.text)
        assert max(sa, sb) < min(ea, eb), (sa, ea, sb, eb)

        blob = os.urandom(2 * 1024 * 1024 + 3)
        await sbx.files.write("async-blob.bin", blob)

        async def download():
            return b"".join([c async for c in await sbx.files.read("async-blob.bin", format="stream")])
        got, ex = await asyncio.gather(download(), sbx.run_code("sum(range(10))", context=a))
        assert got == blob and ex.text == "45"

        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(sbx.run_code("import time\ntime.sleep(60)\nfinished = 1", context=b), 2.0)
        t0 = time.monotonic()
        assert (await sbx.run_code("'finished' in globals()", context=b)).text == "False"
        assert time.monotonic() - t0 < 20
        await asyncio.gather(sbx.remove_code_context(a), sbx.remove_code_context(b))
        await sbx.files.remove("async-blob.bin")
    run(main)
