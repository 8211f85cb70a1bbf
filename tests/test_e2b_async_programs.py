"""E2B programs written with AsyncSandbox, as E2B's docs and its async SDK
tests (code-interpreter python/tests/async/) write them.

Programs that only need the code interpreter (and files.write/make_dir) run
twice, as test_e2b_programs' programs do and through its run_program: on
cellvm, with `e2b_code_interpreter.AsyncSandbox` from client/python/compat
(create() connects to $CELLVM_ADDR), and on the ipykernel reference of
test_e2b_programs behind an async wrapper that does what E2B's async SDK
does with callbacks (each awaited on the event loop, in output order).
Both what the program prints and the Executions it gets must agree.
Programs that need commands, files beyond write, timeouts and kill() run
unchanged as E2B programs (conftest.run_e2b_program) and what they print
is checked against what E2B's async SDK and docs say they print.
"""

import asyncio
import inspect
import os
import sys
import threading

import pytest

pytest.importorskip("jupyter_client")

from conftest import ROOT  # noqa: E402
from test_e2b_compat import ANSI  # noqa: E402
from test_e2b_programs import assert_prints, assert_same_run, reference, run_program  # noqa: E402,F401

sys.path.insert(0, os.path.join(ROOT, "client", "python", "compat"))
from e2b_code_interpreter import AsyncSandbox  # noqa: E402

assert AsyncSandbox.__module__ == "cellvm.async_sandbox"


# --- the reference, async -------------------------------------------------------

class AsyncReference:
    """test_e2b_programs' ReferenceSandbox with E2B's async API: each call
    runs in a thread; callbacks are called on the event loop one at a time
    and awaited when they return an awaitable (E2B's async_parse_output).
    kill() leaves the module's kernel running (E2B: the sandbox ends; the
    next program's create() gets this same one back)."""

    def __init__(self, ref):
        self._ref = ref
        self.files = _AsyncLocalFiles(ref)

    @classmethod
    def factory(cls, ref):
        class Factory:
            @staticmethod
            async def create(*args, **kwargs):
                return cls(ref)
        return Factory

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.kill()

    async def kill(self):
        return True

    async def run_code(self, code, **kw):
        loop = asyncio.get_running_loop()
        for name in ("on_stdout", "on_stderr", "on_result", "on_error"):
            if kw.get(name) is not None:
                kw[name] = _on_loop(loop, kw[name])
        return await asyncio.to_thread(self._run_code_alone, code, **kw)

    # jupyter_client's blocking clients, run from several threads at once (an
    # asyncio.gather), now and then miss a reply and wait out their 120 s
    # timeout (seen under load): the reference's cells run one at a time.
    # Only cellvm's side is concurrent; the printed results do not depend on it.
    _lock = threading.Lock()

    def _run_code_alone(self, code, **kw):
        with self._lock:
            return self._ref.run_code(code, **kw)

    async def create_code_context(self, *args, **kwargs):
        return await asyncio.to_thread(self._ref.create_code_context, *args, **kwargs)

    async def list_code_contexts(self):
        return await asyncio.to_thread(self._ref.list_code_contexts)

    async def restart_code_context(self, context):
        await asyncio.to_thread(self._ref.restart_code_context, context)

    async def remove_code_context(self, context):
        await asyncio.to_thread(self._ref.remove_code_context, context)


def _on_loop(loop, handler):
    async def call(arg):
        r = handler(arg)
        if inspect.isawaitable(r):
            await r
    return lambda arg: asyncio.run_coroutine_threadsafe(call(arg), loop).result()


class _AsyncLocalFiles:
    def __init__(self, ref):
        self._ref = ref

    async def write(self, path, data):
        return await asyncio.to_thread(self._ref.files.write, path, data)

    async def make_dir(self, path):
        return await asyncio.to_thread(self._ref.files.make_dir, path)


# --- the programs ---------------------------------------------------------------
# Each is `async program(AsyncSandbox, print, home, local)`: AsyncSandbox is
# the class a program imports (create() gives cellvm's or the reference),
# the rest as in test_e2b_programs. Each returns the Executions it got.

def async_append_fn(items):
    # code-interpreter python/tests/async/test_async_callbacks.py
    async def async_append(item):
        items.append(item)
    return async_append


async def readme_async(AsyncSandbox, print, home, local):
    # code-interpreter README / python/async_example.py: create, run, kill.
    sandbox = await AsyncSandbox.create()
    execution = await sandbox.run_code("print('hello world')")
    print(execution.logs)
    print(execution)
    await sandbox.run_code("x = 1")
    ex2 = await sandbox.run_code("x+=1; x")
    print(ex2.text, ex2.results[0].is_main_result)
    await sandbox.kill()
    return [execution, ex2]


async def async_callbacks(AsyncSandbox, print, home, local):
    # python/tests/async/test_async_callbacks.py: coroutine callbacks get
    # each Result, ExecutionError and OutputMessage, and are awaited.
    async with await AsyncSandbox.create() as async_sandbox:
        results, errors, stdout, stderr = [], [], [], []
        ex1 = await async_sandbox.run_code("x = 1;x", on_result=async_append_fn(results))
        ex2 = await async_sandbox.run_code("xyz", on_error=async_append_fn(errors))
        ex3 = await async_sandbox.run_code("print('Hello from e2b')", on_stdout=async_append_fn(stdout))
        ex4 = await async_sandbox.run_code('import sys;print("This is an error message", file=sys.stderr)',
                                           on_stderr=async_append_fn(stderr))
        print(len(results), type(results[0]).__name__, results[0].text, ex1.results[0].text)
        print(len(errors), type(errors[0]).__name__, errors[0].name, errors[0] is ex2.error)
        print(len(stdout), type(stdout[0]).__name__, repr(stdout[0].line), stdout[0].error, ex3.logs.stdout)
        print(len(stderr), repr(stderr[0].line), stderr[0].error, ex4.logs.stderr)
        # The sync variants (test_results_sync_callback).
        sync_results = []
        ex5 = await async_sandbox.run_code("x = 1;x", on_result=lambda result: sync_results.append(result))
        print(len(sync_results), sync_results[0].text)
    return [ex1, ex2, ex3, ex4, ex5]


async def streaming_async(AsyncSandbox, print, home, local):
    # E2B docs "Streaming" with AsyncSandbox: async and sync callbacks
    # mixed; a slow async callback holds back the next output.
    sandbox = await AsyncSandbox.create()
    order = []

    async def on_stdout(data):
        order.append(("stdout start", data.line))
        await asyncio.sleep(0.1)
        order.append(("stdout end", data.line))
        print("stdout:", data)

    def on_stderr(data):
        order.append(("stderr", data.line))
        print("stderr:", data)

    async def on_result(result):
        await asyncio.sleep(0)
        print("result:", type(result).__name__, result, result.is_main_result)

    async def on_error(error):
        print("error:", error.name, error.value)

    code_to_run = """
  import time
  import sys
  print("This goes first to stdout", flush=True)
  time.sleep(0.3)
  print("And this second", flush=True)
  time.sleep(0.3)
  print("This goes later to stderr", file=sys.stderr)
  time.sleep(0.3)
  display({"text/markdown": "**shown**"}, raw=True)
  print("This goes last")
  42
"""
    ex1 = await sandbox.run_code(code_to_run, on_stdout=on_stdout, on_stderr=on_stderr,
                                 on_result=on_result, on_error=on_error)
    print(order)
    ex2 = await sandbox.run_code("print('about to fail')\nraise ValueError('bad input')",
                                 on_stdout=on_stdout, on_error=on_error)
    print(ex2.error.name, ex2.logs.stdout)
    await sandbox.kill()
    return [ex1, ex2]


async def contexts_async(AsyncSandbox, print, home, local):
    # python/tests/async/test_async_contexts.py and test_async_cwd.py.
    async with await AsyncSandbox.create() as sandbox:
        await sandbox.files.make_dir("work")
        context = await sandbox.create_code_context()
        other = await sandbox.create_code_context(cwd=f"{home}/work")
        print(type(context).__name__, context.language, other.cwd)
        executions = [await sandbox.run_code("x = 'in context'", context=context),
                      await sandbox.run_code("x = 'in other'", context=other)]
        for c in (context, other):
            executions.append(await sandbox.run_code("x", context=c))
            print(executions[-1].text)
        executions.append(await sandbox.run_code("import os; os.getcwd()", context=other))
        print(executions[-1].text)
        ids = [c.id for c in await sandbox.list_code_contexts()]
        print(context.id in ids, other.id in ids)
        await sandbox.restart_code_context(context)
        executions.append(await sandbox.run_code("x", context=context))
        print(executions[-1].error.name, executions[-1].error.value)
        executions.append(await sandbox.run_code("x", context=other))
        print(executions[-1].text)
        await sandbox.remove_code_context(context)
        await sandbox.remove_code_context(other.id)
        ids = [c.id for c in await sandbox.list_code_contexts()]
        print(context.id in ids, other.id in ids)
    return executions


async def gather_on_contexts(AsyncSandbox, print, home, local):
    # An agent fanning work out: one context per task, asyncio.gather of
    # run_code calls, each with its own async on_stdout.
    async with await AsyncSandbox.create() as sandbox:
        contexts = [await sandbox.create_code_context() for _ in range(3)]
        streams = [[] for _ in contexts]
        tasks = [
            "import time\nfor i in range(3):\n    print('a', i, flush=True); time.sleep(0.2)\nsum(range(10))",
            "import time\nprint('b start', flush=True)\ntime.sleep(0.5)\nraise KeyError('b')",
            "import time, math\ntime.sleep(0.3)\nprint('c', flush=True)\nmath.factorial(10)",
        ]
        executions = await asyncio.gather(*(
            sandbox.run_code(code, context=ctx, on_stdout=async_append_fn(out))
            for code, ctx, out in zip(tasks, contexts, streams)))
        for ex, out in zip(executions, streams):
            # Joined: where ipykernel cuts a stream into messages depends on timing
            # (a `print('a', i)` is four writes), so only the text is compared.
            print(ex.text, ex.error and ex.error.name, repr("".join(m.line for m in out)),
                  repr("".join(ex.logs.stdout)))
        # Each context kept its own state.
        follow = await asyncio.gather(*(sandbox.run_code("'i' in dir()", context=c) for c in contexts))
        print([ex.text for ex in follow])
        await asyncio.gather(*(sandbox.remove_code_context(c) for c in contexts))
    return list(executions) + list(follow)


async def upload_and_analyse(AsyncSandbox, print, home, local):
    # E2B docs "Upload data" / "Analyze data with AI", async: the dataset
    # written with files.write (a relative path), then read by the code.
    sandbox = await AsyncSandbox.create()
    csv = "city,temp\nOslo,4\nLima,19\nCairo,25\nOslo,6\n"
    info = await sandbox.files.write("async-data/temps.csv", csv)
    print(info.name, info.path.replace(home, "~"), info.type)
    with open(os.path.join(local, "more.csv"), "wb") as f:
        f.write(b"city,temp\nQuito,14\n")
    with open(os.path.join(local, "more.csv"), "rb") as f:
        more = await sandbox.files.write("async-data/more.csv", f)
    execution = await sandbox.run_code(f"""
import pandas as pd
df = pd.concat([pd.read_csv("{info.path}"), pd.read_csv("{more.path}")], ignore_index=True)
print(df.shape)
df.groupby("city")["temp"].mean()
""")
    if execution.error:
        raise RuntimeError(execution.error)
    print(execution.logs.stdout, execution.text)
    summary = await sandbox.run_code("df.describe().loc[['mean', 'max']]")
    print(summary.results[0].formats(), summary.results[0].data)
    await sandbox.kill()
    return [execution, summary]


async def error_feedback_loop(AsyncSandbox, print, home, local):
    # An async agent loop (e2b-cookbook style): the model's code fails, the
    # error goes back as "name: value" with the traceback's last line, the
    # corrected code runs.
    attempts = ["import statistics\nvalues = [3, 1, 4, 1, 5]\nstatistics.meen(values)",
                "statistics.mean(values",
                "statistics.mean(values)"]
    executions = []
    async with await AsyncSandbox.create() as sandbox:
        for code in attempts:
            errors = []
            execution = await sandbox.run_code(code, on_error=async_append_fn(errors))
            executions.append(execution)
            if errors:
                tb = ANSI.sub("", errors[0].traceback).strip().splitlines()
                print(f"ERROR: {errors[0].name}: {errors[0].value}\n{tb[-1]}")
                continue
            print("answer:", execution.text)
            break
    return executions


COMPARED = [readme_async, async_callbacks, streaming_async, contexts_async, gather_on_contexts,
            upload_and_analyse, error_feedback_loop]


def sync(program):
    """The async program as test_e2b_programs.run_program calls programs."""
    def run(sandbox_cls, print, home, local):
        return asyncio.run(program(sandbox_cls, print, home, local))
    return run


@pytest.mark.parametrize("program", COMPARED, ids=[p.__name__ for p in COMPARED])
def test_async_program_same_as_ipykernel(program, agent, reference, tmp_path, monkeypatch):
    want = run_program(sync(program), AsyncReference.factory(reference), reference.home,
                       str(tmp_path / "ref"), True)
    monkeypatch.setenv("CELLVM_ADDR", agent.addr)  # AsyncSandbox.create() connects to it
    got = run_program(sync(program), AsyncSandbox, agent.workdir, str(tmp_path / "cellvm"), False)
    assert_same_run(got, want)


# --- programs that need E2B's sandbox services, run unchanged -----------------

ASYNC_COMMANDS = '''
import asyncio
from e2b_code_interpreter import AsyncSandbox
from e2b import CommandExitException, CommandResult, TimeoutException
from e2b.sandbox_async.commands.command_handle import AsyncCommandHandle
from e2b.sandbox_async.utils import OutputHandler

async def main():
    sandbox = await AsyncSandbox.create()
    # E2B docs "Streaming command output", async: callbacks get str.
    seen = []
    async def on_stdout(data):
        await asyncio.sleep(0)
        seen.append(("out", type(data).__name__, data))
    result = await sandbox.commands.run("echo hello; sleep 0.2; echo world >&2; echo done",
                                        on_stdout=on_stdout,
                                        on_stderr=lambda data: seen.append(("err", type(data).__name__, data)))
    print(sorted(seen))
    print(type(result).__name__, repr(result.stdout), repr(result.stderr), result.exit_code)
    try:
        await sandbox.commands.run("echo partial; exit 2")
    except CommandExitException as e:
        print(type(e).__name__, isinstance(e, CommandResult), e.exit_code, repr(e.stdout))

    # E2B docs "Running commands in background", async: the handle's wait()
    # takes no callbacks; run()'s get the output.
    ticks = []
    handle = await sandbox.commands.run("for i in 1 2 3; do echo tick $i; sleep 0.1; done",
                                        background=True, on_stdout=async_append(ticks))
    print(type(handle).__name__, isinstance(handle, AsyncCommandHandle), isinstance(handle.pid, int),
          handle.exit_code)
    done = await handle.wait()
    print(done.exit_code, [t.strip() for t in ticks], handle.exit_code)
    sleeper = await sandbox.commands.run("sleep 30", background=True)
    print(sleeper.pid in [p.pid for p in await sandbox.commands.list()])
    print(await sleeper.kill())
    try:
        await sleeper.wait()
    except CommandExitException as e:
        print("killed:", e.exit_code, e.error)
    print(await sandbox.commands.kill(sleeper.pid))
    # Two background commands waited on together.
    a, b = [await sandbox.commands.run(f"sleep 0.3; echo {n}", background=True) for n in ("a", "b")]
    print([r.stdout for r in await asyncio.gather(a.wait(), b.wait())])
    try:
        await sandbox.commands.run("sleep 5", timeout=1)
    except TimeoutException as e:
        print("command:", type(e).__name__)
    await sandbox.kill()

def async_append(items) -> OutputHandler[str]:
    async def append(item):
        items.append(item)
    return append

asyncio.run(main())
'''


ASYNC_FILES_TIMEOUTS_KILL = '''
import asyncio, os
from e2b_code_interpreter import FileType
from e2b_code_interpreter.code_interpreter_async import AsyncSandbox
from e2b import TimeoutException, NotFoundException

work = os.environ["E2B_PROGRAM_DIR"]

async def main():
    async with await AsyncSandbox.create() as sandbox:
        # E2B docs "Read & write files", async.
        info = await sandbox.files.write(work + "/data/notes.txt", "first line\\nsecond line\\n")
        print(info.name, info.type, info.path == work + "/data/notes.txt")
        await sandbox.files.write(work + "/data/raw.bin", bytes(range(5)))
        print((await sandbox.files.read(work + "/data/notes.txt")).splitlines())
        raw = await sandbox.files.read(work + "/data/raw.bin", format="bytes")
        print(type(raw).__name__, list(raw))
        chunks = [c async for c in await sandbox.files.read(work + "/data/raw.bin", format="stream")]
        print(b"".join(chunks) == bytes(range(5)))
        for entry in sorted(await sandbox.files.list(work + "/data"), key=lambda e: e.name):
            print(entry.name, entry.type, entry.type == FileType.FILE, entry.size)
        print(await sandbox.files.exists(work + "/data/notes.txt"), await sandbox.files.exists(work + "/nope"))
        try:
            await sandbox.files.read(work + "/nope")
        except NotFoundException as e:
            print("read:", isinstance(e, NotFoundException))
        # The code writes a file, the program reads it while other code runs.
        ctx = await sandbox.create_code_context()
        await sandbox.run_code(f"open('{work}/out.txt', 'w').write('from code')", context=ctx)
        text, ex = await asyncio.gather(sandbox.files.read(work + "/out.txt"),
                                        sandbox.run_code("6 * 7", context=ctx))
        print(text, ex.text)
        # python/tests/async/test_async_timeout.py-like: a timed-out run_code
        # raises TimeoutException; the context stays usable.
        try:
            await sandbox.run_code("import time; time.sleep(5)", context=ctx, timeout=1)
        except TimeoutException as e:
            print(type(e).__name__, e)
        print((await sandbox.run_code("y = 2; y", context=ctx, timeout=15)).text)
        # asyncio's own timeout around run_code ends the cell in the sandbox.
        try:
            await asyncio.wait_for(sandbox.run_code("import time; time.sleep(5); finished = 1", context=ctx), 1)
        except asyncio.TimeoutError:
            print("wait_for: timed out")
        print((await sandbox.run_code("'finished' in globals()", context=ctx)).text)
        await sandbox.remove_code_context(ctx)
        print(await sandbox.is_running())
    # `async with` killed it.
    print(await sandbox.is_running())

asyncio.run(main())
'''


ASYNC_SDK_TESTS = '''
import asyncio
from e2b import TimeoutException
from e2b_code_interpreter.code_interpreter_async import AsyncSandbox
from e2b_code_interpreter.models import OutputHandlerWithAsync, OutputMessage

async def main():
    async_sandbox = await AsyncSandbox.create()
    # python/tests/async/test_async_interrupt.py: after a client-side
    # timeout the next execution is not stuck behind the old one.
    try:
        await async_sandbox.run_code("import time; time.sleep(30)", timeout=3)
    except TimeoutException:
        print("timed out")
    result = await async_sandbox.run_code("1 + 1", timeout=10)
    print(result.text)
    # test_async_callbacks.py with a typed handler.
    stdout = []
    async def on_stdout(msg: OutputMessage) -> None:
        stdout.append(msg)
    handler: OutputHandlerWithAsync[OutputMessage] = on_stdout
    execution = await async_sandbox.run_code("print('Hello from e2b')", on_stdout=handler)
    print(len(stdout), execution.logs.stdout)
    # python/tests/async/test_async_killed.py: killing the sandbox while
    # run_code is in flight makes run_code raise TimeoutException.
    execution = asyncio.create_task(async_sandbox.run_code("import time; time.sleep(60)"))
    await asyncio.sleep(2)
    await async_sandbox.kill()
    try:
        await execution
    except TimeoutException as e:
        print(type(e).__name__, "sandbox was killed while the request was in progress" in str(e))
    print(await async_sandbox.is_running())

asyncio.run(main())

# The sync SDK's python/tests/sync/test_killed.py: kill() from a timer thread.
import threading
from e2b_code_interpreter import Sandbox
sandbox = Sandbox.create()
timer = threading.Timer(2.0, sandbox.kill)
timer.start()
try:
    sandbox.run_code("import time; time.sleep(300)", timeout=300)
except TimeoutException as e:
    print("sync:", "sandbox was killed while the request was in progress" in str(e))
finally:
    timer.cancel()
'''


UNCHANGED = {
    "async_commands": (ASYNC_COMMANDS, [
        "[('err', 'str', 'world\\n'), ('out', 'str', 'done\\n'), ('out', 'str', 'hello\\n')]",
        "CommandResult 'hello\\ndone\\n' 'world\\n' 0",
        "CommandExitException True 2 'partial\\n'",
        "AsyncCommandHandle True True None",
        "0 ['tick 1', 'tick 2', 'tick 3'] 0",
        "True", "True", "killed: -1 signal: killed", "False",
        "['a\\n', 'b\\n']",
        "command: TimeoutException"]),
    "async_files_timeouts_kill": (ASYNC_FILES_TIMEOUTS_KILL, [
        "notes.txt FileType.FILE True", "['first line', 'second line']", "bytearray [0, 1, 2, 3, 4]",
        "True", "notes.txt FileType.FILE True 23", "raw.bin FileType.FILE True 5", "True False",
        "read: True", "from code 42",
        "TimeoutException Execution timed out — the 'timeout' option can be used to increase this timeout",
        "2", "wait_for: timed out", "False", "True", "False"]),
    "async_sdk_tests": (ASYNC_SDK_TESTS, [
        "timed out", "2", "1 ['Hello from e2b\\n']", "TimeoutException True", "False", "sync: True"]),
}


@pytest.mark.parametrize("name", sorted(UNCHANGED))
def test_e2b_async_program_unchanged(name, agent, tmp_path):
    assert_prints(agent, tmp_path, name, UNCHANGED[name])
