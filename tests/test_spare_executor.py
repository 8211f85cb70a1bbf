"""The zygote's spare executor (docs/PROTOCOL.md section 8): forked and
detached ahead, handed to the next context; a context still starts when the
spare is gone. Real agent, real zygote."""

import os
import signal
import time

import pytest

from cellvm import Sandbox


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(p) for p in f.read().split()]


def status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def executors(agent_pid):
    """The agent's children that are forks of the zygote and leaders of a
    session of their own (the zygote is in the agent's session)."""
    out = []
    for pid in children(agent_pid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                session = int(f.read().rsplit(")", 1)[1].split()[3])
        except OSError:
            continue
        if argv[0].endswith(b"cellvm-executor") and session == pid:
            out.append(pid)
    return out


def wait_for(pred, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


def spares(sbx, agent_pid):
    """Executors no context owns."""
    owned = {int(sbx.run_code("import os; os.getpid()", context=c).text)
             for c in sbx.list_code_contexts() if c.language == "python"}
    return [p for p in executors(agent_pid) if p not in owned]


def test_the_next_context_gets_the_spare_executor(fresh_agent):
    with Sandbox.connect(fresh_agent.addr) as sbx:
        agent_pid = sbx.hello["pid"]
        sbx.run_code("1")  # the default context exists; a spare waits beside it
        spare = wait_for(lambda: spares(sbx, agent_pid))
        assert len(spare) == 1
        if os.geteuid() == 0:
            # Sandboxed before any context asks for it: the sandbox user,
            # no_new_privs and its own seccomp filter. A fork is visible as a
            # session leader a moment before it drops root (and the agent's
            # own filter is inherited), so wait for the finished state.
            agent_filters = int(status(agent_pid).get("Seccomp_filters", "0"))

            def sandboxed():
                st = status(spare[0])
                own_filter = int(st.get("Seccomp_filters", "1")) > agent_filters
                return (st["NoNewPrivs"] == "1" and st["Uid"].split()[0] != "0"
                        and st["Seccomp"] == "2" and own_filter)
            wait_for(sandboxed)
        ctx = sbx.create_code_context()
        assert int(sbx.run_code("import os; os.getpid()", context=ctx).text) == spare[0]
        assert sbx.run_code("import os; os.getcwd()", context=ctx).text == ctx.cwd
        # And another one is forked for the context after that.
        nxt = wait_for(lambda: spares(sbx, agent_pid))
        assert nxt != spare


def test_a_context_starts_without_a_spare(fresh_agent):
    with Sandbox.connect(fresh_agent.addr) as sbx:
        agent_pid = sbx.hello["pid"]
        sbx.run_code("1")
        spare = wait_for(lambda: spares(sbx, agent_pid))[0]
        os.kill(spare, signal.SIGKILL)
        wait_for(lambda: spare not in executors(agent_pid))
        ctx = sbx.create_code_context(cwd="/tmp")
        assert sbx.run_code("import os; os.getcwd(), 6 * 7", context=ctx).text == "('/tmp', 42)"
        pid = int(sbx.run_code("import os; os.getpid()", context=ctx).text)
        assert pid != spare


def test_contexts_do_not_share_random_state(fresh_agent):
    """Each executor reseeds its generators after the fork, spare or not."""
    with Sandbox.connect(fresh_agent.addr) as sbx:
        a, b = sbx.create_code_context(), sbx.create_code_context()
        draw = "import random; random.random()"
        assert sbx.run_code(draw, context=a).text != sbx.run_code(draw, context=b).text


def test_a_directory_the_sandbox_user_cannot_enter_still_gets_a_context(fresh_agent, tmp_path):
    """The spare, already the sandbox user, cannot enter a root-only directory;
    the zygote then forks an executor that enters it as root before dropping,
    as contexts always could."""
    if os.geteuid() != 0:
        pytest.skip("needs a root agent (the sandbox user differs from the agent's)")
    closed = tmp_path / "root-only"
    closed.mkdir(mode=0o700)
    os.chmod(tmp_path, 0o755)
    with Sandbox.connect(fresh_agent.addr) as sbx:
        agent_pid = sbx.hello["pid"]
        sbx.run_code("1")
        spare = wait_for(lambda: spares(sbx, agent_pid))[0]
        ctx = sbx.create_code_context(cwd=str(closed))
        got = sbx.run_code("import os; os.getcwd(), os.getpid(), os.access('.', os.R_OK)", context=ctx)
        cwd, pid, readable = eval(got.text)
        assert (cwd, readable) == (str(closed), False) and pid != spare
        # The next context still gets a spare: a new one (the one that could not
        # enter the directory exits, and may not be gone yet).
        nxt = wait_for(lambda: [p for p in spares(sbx, agent_pid) if p != spare])[0]
        ctx2 = sbx.create_code_context()
        assert int(sbx.run_code("import os; os.getpid()", context=ctx2).text) == nxt
