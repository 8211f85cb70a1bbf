"""E2B 0.x's API, the legacy name (cellvm.legacy's CodeInterpreter), against a
real dev-mode agent: `with CodeInterpreter() as sandbox:`, notebook.exec_cell
with its callbacks, errors and timeouts, kernels, filesystem and process,
list/reconnect/keep_alive/close, and old tutorials run unchanged through
client/python/compat (CrewAI's tool, Mistral's cookbook, E2B 0.x's docs).
"""

import datetime as dt
import os
import time
import types

import pytest

from cellvm import CodeInterpreter, Execution, NotFoundException, OutputMessage, Result, TimeoutException
from conftest import run_e2b_program


@pytest.fixture
def dev_agent(agent, monkeypatch):
    """CodeInterpreter() uses the session's agent, as an unchanged E2B
    program does with $CELLVM_ADDR set."""
    monkeypatch.setenv("CELLVM_ADDR", agent.addr)
    return agent


def record_calls(sandbox, monkeypatch, names=("kill", "close")):
    """The names of `sandbox`'s methods called from now on, in order (each still runs)."""
    calls = []
    for name in names:
        method = getattr(sandbox, name)

        def spy(*args, _method=method, _name=name, **kwargs):
            calls.append(_name)
            return _method(*args, **kwargs)
        monkeypatch.setattr(sandbox, name, spy)
    return calls


# --- notebook ------------------------------------------------------------------

def test_with_block_runs_cells_that_share_state_then_closes(dev_agent):
    with CodeInterpreter() as sandbox:
        assert sandbox.id == sandbox.sandbox_id == dev_agent.addr
        assert sandbox.notebook.exec_cell("legacy_x = 1").error is None
        execution = sandbox.notebook.exec_cell("legacy_x += 1; legacy_x")
        assert isinstance(execution, Execution)
        assert execution.text == "2" and execution.error is None
        assert [r.text for r in execution.results] == ["2"]
        inner = sandbox.sandbox
        assert inner.is_running()
    assert inner.is_running() is False  # closed (dev mode: the agent and its kernels stay)
    with CodeInterpreter() as again:
        assert again.notebook.exec_cell("legacy_x").text == "2"


def test_exec_cell_callbacks_get_output_as_it_arrives(dev_agent):
    stdout, stderr, results, seen_at = [], [], [], []

    def on_stdout(msg):
        stdout.append(msg)
        seen_at.append(time.monotonic())

    code = ("import sys, time\n"
            "print('first', flush=True)\n"
            "time.sleep(1.5)\n"
            "print('second')\n"
            "print('careful', file=sys.stderr)\n"
            "display({'a': 1})\n"
            "6 * 7")
    with CodeInterpreter() as sandbox:
        t0_ns = time.time_ns()
        execution = sandbox.notebook.exec_cell(code, on_stdout=on_stdout, on_stderr=stderr.append,
                                               on_result=results.append)
        ended = time.monotonic()
    assert all(isinstance(m, OutputMessage) for m in stdout + stderr)
    assert "".join(m.line for m in stdout) == "first\nsecond\n"
    assert [m.error for m in stdout] == [False] * len(stdout)
    assert "".join(str(m) for m in stderr) == "careful\n" and all(m.error for m in stderr)
    assert all(t0_ns <= m.timestamp <= time.time_ns() for m in stdout + stderr)
    assert seen_at[0] < ended - 1.0, "the first line came only with the end of the cell"
    assert all(isinstance(r, Result) for r in results)
    assert [(r.text, r.is_main_result) for r in results] == [("{'a': 1}", False), ("42", True)]
    assert execution.results == results and execution.text == "42"
    assert "".join(execution.logs.stdout) == "first\nsecond\n"
    assert "".join(execution.logs.stderr) == "careful\n"


def test_exec_cell_error_is_in_the_execution(dev_agent):
    with CodeInterpreter() as sandbox:
        execution = sandbox.notebook.exec_cell("print('before')\nlegacy_y = 1 / 0")
        assert execution.error is not None
        assert (execution.error.name, execution.error.value) == ("ZeroDivisionError", "division by zero")
        assert "legacy_y = 1 / 0" in execution.error.traceback
        assert execution.results == [] and execution.text is None
        assert execution.logs.stdout == ["before\n"]
        # The kernel goes on.
        assert sandbox.notebook.exec_cell("'after'").text == "after"


def test_exec_cell_timeout_interrupts_the_cell_and_the_kernel_survives(dev_agent):
    with CodeInterpreter() as sandbox:
        kernel = sandbox.notebook.create_kernel()
        sandbox.notebook.exec_cell("legacy_t = 5", kernel_id=kernel)
        t0 = time.monotonic()
        with pytest.raises(TimeoutException) as e:
            sandbox.notebook.exec_cell("import time\nprint('started', flush=True)\ntime.sleep(30)",
                                       kernel_id=kernel, timeout=1)
        assert time.monotonic() - t0 < 10
        assert e.value.execution.logs.stdout == ["started\n"]
        assert sandbox.notebook.exec_cell("legacy_t", kernel_id=kernel).text == "5"
        sandbox.notebook.shutdown_kernel(kernel)


def test_kernels_are_code_contexts(dev_agent, workdir):
    with CodeInterpreter() as sandbox:
        nb = sandbox.notebook
        default = nb.default_kernel_id
        assert default in nb.list_kernels()
        nb.exec_cell("legacy_k = 'default'")
        assert nb.exec_cell("legacy_k", kernel_id=default).text == "default"

        kernel = nb.create_kernel(cwd=workdir, kernel_name="python3")
        assert isinstance(kernel, str) and kernel != default and kernel in nb.list_kernels()
        assert nb.exec_cell("legacy_k", kernel_id=kernel).error.name == "NameError"
        assert nb.exec_cell("import os; os.getcwd()", kernel_id=kernel).text == workdir
        nb.exec_cell("legacy_k = 'own'", kernel_id=kernel)
        assert nb.exec_cell("legacy_k", kernel_id=kernel).text == "own"
        assert nb.exec_cell("legacy_k").text == "default"

        nb.restart_kernel(kernel)
        assert nb.exec_cell("legacy_k", kernel_id=kernel).error.name == "NameError"
        nb.shutdown_kernel(kernel)
        assert kernel not in nb.list_kernels()
        with pytest.raises(NotFoundException):
            nb.exec_cell("1", kernel_id=kernel)
        nb.close()  # E2B 0.x closed websockets here: the kernels stay
        assert nb.exec_cell("legacy_k").text == "default"


# --- filesystem, process, files --------------------------------------------------

def test_filesystem_and_process_from_cwd(dev_agent, workdir, tmp_path):
    exits, lines = [], []
    with CodeInterpreter(cwd=workdir, on_exit=exits.append) as sandbox:
        fs = sandbox.filesystem
        fs.write("notes/a.txt", "héllo")
        assert fs.read("notes/a.txt") == "héllo"
        with open(os.path.join(workdir, "notes", "a.txt"), encoding="utf-8") as f:
            assert f.read() == "héllo"
        fs.write_bytes("b.bin", b"\x00\xff")
        assert fs.read_bytes("b.bin") == b"\x00\xff"
        fs.make_dir("x/y")
        assert os.path.isdir(os.path.join(workdir, "x", "y"))
        assert {(f.name, f.is_dir) for f in fs.list(".")} == {("notes", True), ("b.bin", False),
                                                               ("x", True)}
        fs.remove("b.bin")
        assert not os.path.exists(os.path.join(workdir, "b.bin"))

        out = sandbox.process.start_and_wait("echo one; echo two >&2; printf three; exit 3",
                                             on_stdout=lambda m: lines.append(("out", m.line)),
                                             on_stderr=lambda m: lines.append(("err", m.line)))
        assert (out.stdout, out.stderr, out.exit_code, out.error) == ("one\nthree", "two", 3, True)
        assert sorted(lines) == [("err", "two"), ("out", "one"), ("out", "three")]
        assert exits == [3]
        assert sandbox.process.start_and_wait("pwd").stdout == workdir
        ok = sandbox.process.start_and_wait("echo $GREETING", env_vars={"GREETING": "hi"})
        assert (ok.stdout, ok.stderr, ok.exit_code, ok.error) == ("hi", "", 0, False)

        proc = sandbox.process.start("read line; echo got $line")
        proc.send_stdin("abc\n")
        assert proc.wait().stdout == "got abc" and proc.exit_code == 0
        assert [m.line for m in proc.output_messages] == ["got abc"]

        local = tmp_path / "legacy_upload.csv"
        local.write_bytes(b"a,b\n1,2\n")
        with open(local, "rb") as f:
            remote = sandbox.upload_file(f)
        assert remote == os.path.join(dev_agent.workdir, "legacy_upload.csv")
        assert sandbox.download_file(remote) == b"a,b\n1,2\n"
        assert sandbox.notebook.exec_cell(f"open({remote!r}).read()").text == "a,b\\n1,2\\n"
        # Today's API is there too.
        assert sandbox.run_code("1 + 1").text == "2"
        assert sandbox.files.read(os.path.join(workdir, "notes", "a.txt")) == "héllo"
        assert sandbox.commands.run("echo today").stdout == "today\n"


# --- lifetime: list, reconnect, keep_alive, close ----------------------------------

def test_list_reconnect_by_metadata_and_close(dev_agent):
    # E2B 0.x's docs: find it by metadata, keep it alive, close, reconnect.
    sandbox = CodeInterpreter(metadata={"user_id": "legacy-uid"}, env_vars={"LEGACY_ENV": "on"})
    sandbox.notebook.exec_cell("legacy_r = 'kept'")
    assert sandbox.notebook.exec_cell("import os; os.environ['LEGACY_ENV']").text == "on"
    running = CodeInterpreter.list()
    assert isinstance(running, list)
    found = [s for s in running if s.metadata.get("user_id") == "legacy-uid"]
    assert [s.sandbox_id for s in found] == [sandbox.id] == [dev_agent.addr]
    sandbox.keep_alive(60)  # dev mode: the agent's lifetime is its starter's (a warning)
    sandbox.close()
    assert sandbox.sandbox.is_running() is False

    again = CodeInterpreter.reconnect(found[0].sandbox_id)
    assert again.sandbox.is_running() and again.id == dev_agent.addr
    assert again.notebook.exec_cell("legacy_r").text == "kept"
    assert dev_agent.addr in [s.sandbox_id for s in CodeInterpreter.list()]
    again.close()
    assert again.sandbox.is_running() is False
    with CodeInterpreter.connect(dev_agent.addr) as third:  # E2B 0.0.11's name
        assert third.notebook.exec_cell("legacy_r").text == "kept"


def test_close_ends_the_sandbox_unless_kept_alive_or_reconnected(dev_agent, monkeypatch):
    fresh = CodeInterpreter()
    calls = record_calls(fresh.sandbox, monkeypatch)
    fresh.close()
    assert calls[0] == "kill"

    kept = CodeInterpreter()
    kept.keep_alive(30)
    calls = record_calls(kept.sandbox, monkeypatch)
    with kept:
        pass
    assert calls == ["close"]

    reconnected = CodeInterpreter.reconnect(dev_agent.addr)
    calls = record_calls(reconnected.sandbox, monkeypatch)
    reconnected.close()
    assert calls == ["close"]

    killed = CodeInterpreter()
    assert killed.kill() is True and killed.kill() is False


def test_keep_alive_extends_never_shortens_and_outlives_this_process(dev_agent, monkeypatch):
    """What keep_alive() does with a micro-VM's lifetime, the VM stood in for:
    set_timeout() only where it extends the end, and the VM is detached
    (cellvm.launch leaves a detached VM alone at exit)."""
    sandbox = CodeInterpreter()
    inner = sandbox.sandbox
    end = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=100)
    monkeypatch.setattr(inner, "get_info", lambda **kw: types.SimpleNamespace(end_at=end))
    timeouts = []
    monkeypatch.setattr(inner, "set_timeout", lambda timeout, **kw: timeouts.append(timeout))
    vm = types.SimpleNamespace(detached=False)
    inner._vm = vm
    try:
        sandbox.keep_alive(30)
        assert timeouts == [] and vm.detached is True
        sandbox.keep_alive(300)
        assert timeouts == [300]
        with pytest.raises(ValueError):
            sandbox.keep_alive(-1)
    finally:
        inner._vm = None
        sandbox.close()


# --- old tutorials, unchanged, through client/python/compat ------------------------

OLD_TUTORIALS = '''
import base64
import os

from e2b_code_interpreter import CodeInterpreter
from e2b_code_interpreter.main import CodeInterpreter as FromMain

E2B_API_KEY = os.getenv("E2B_API_KEY", "e2b_not_needed")
HERE = os.path.dirname(os.path.abspath(__file__))
print("same class:", FromMain is CodeInterpreter)


# CrewAI's E2B tool (crewai_tools' @tool, stood in for here).
def tool(name):
    def register(fn):
        fn.name = name
        return fn
    return register


@tool("Python interpreter")
def execute_python(code: str) -> str:
    """Execute Python code and return the result."""
    with CodeInterpreter() as sandbox:
        execution = sandbox.notebook.exec_cell(code)
        if execution.error:
            return f"{execution.error.name}: {execution.error.value}"
        return execution.text


print("tool:", execute_python("sum(range(10))"))
print("tool:", execute_python("1 / 0"))


# Mistral's cookbook (Codestral with the code interpreter).
def code_interpret(e2b_code_interpreter, code):
    print("Running code interpreter...")
    exec = e2b_code_interpreter.notebook.exec_cell(
        code,
        on_stderr=lambda stderr: print("[Code Interpreter]", stderr),
        on_stdout=lambda stdout: print("[Code Interpreter]", stdout),
    )
    if exec.error:
        print("[Code Interpreter ERROR]", exec.error)
    else:
        return exec.results


def upload_dataset(code_interpreter):
    print("Uploading dataset to Code Interpreter sandbox...")
    with open(os.path.join(HERE, "city_temperature.csv"), "rb") as f:
        remote_path = code_interpreter.upload_file(f)
    print("Uploaded at", remote_path)
    return remote_path


with CodeInterpreter(api_key=E2B_API_KEY) as code_interpreter:
    remote_path = upload_dataset(code_interpreter)
    code_results = code_interpret(code_interpreter, f"""
import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv({remote_path!r})
print(df["AvgTemperature"].mean())
df.plot(x="Year", y="AvgTemperature")
plt.show()
""")
    if code_results:
        first_result = code_results[0]
    else:
        raise Exception("No code interpreter results")
print("png:", base64.b64decode(first_result.png)[:4] == b"\\x89PNG")


# E2B 0.x's docs: keep alive, close, reconnect.
sandbox = CodeInterpreter()
sandbox.filesystem.write(os.environ["E2B_PROGRAM_DIR"] + "/hello.txt", "Hello World!")
sandboxID = sandbox.id
sandbox.keep_alive(2 * 60)
sandbox.close()
sandbox2 = CodeInterpreter.reconnect(sandboxID)
content = sandbox2.filesystem.read(os.environ["E2B_PROGRAM_DIR"] + "/hello.txt")
print(content)
print(sandbox2.process.start_and_wait("cat " + os.environ["E2B_PROGRAM_DIR"] + "/hello.txt").stdout)
sandbox2.close()
'''


def test_old_tutorials_run_unchanged_through_compat(agent, tmp_path):
    (tmp_path / "city_temperature.csv").write_text("Year,AvgTemperature\n2000,20.5\n2001,22.5\n")
    r = run_e2b_program(agent, tmp_path, OLD_TUTORIALS, "legacy-tutorials")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "same class: True",
        "tool: 45",
        "tool: ZeroDivisionError: division by zero",
        "Uploading dataset to Code Interpreter sandbox...",
        f"Uploaded at {os.path.join(agent.workdir, 'city_temperature.csv')}",
        "Running code interpreter...",
        "[Code Interpreter] 21.5",
        "",
        "png: True",
        "Hello World!",
        "Hello World!",
    ], r.stderr
