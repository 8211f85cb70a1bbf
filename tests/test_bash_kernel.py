"""Bash contexts (python-embed/bash_kernel.py) against a dev-mode agent: one
interactive bash per context, as E2B's bash contexts (bash_kernel) behave,
under the confinement of a Python executor. E2B's own bash tests run through
tests/conformance/run; these check each point of the contract beyond them."""

import threading
import time

import pytest

from cellvm import NotFoundException, Sandbox, TimeoutException


@pytest.fixture
def sh(sbx):
    """A bash context of its own."""
    c = sbx.create_code_context(language="bash")
    yield c
    try:
        sbx.remove_code_context(c)
    except NotFoundException:
        pass


def out(e):
    return "".join(e.logs.stdout)


def err(e):
    return "".join(e.logs.stderr)


def test_default_bash_context_is_made_on_first_use_and_listed_after(fresh_agent):
    """E2B lists python and javascript in a new sandbox; run_code(language="bash")
    makes the default bash context in the sandbox's workdir, listed (last) from
    then on and used by every later bash cell without a context."""
    with Sandbox.connect(fresh_agent.addr) as s:
        assert [c.language for c in s.list_code_contexts()] == ["python", "javascript"]
        assert out(s.run_code("echo $((6 * 7)); pwd", language="bash")) == \
            f"42\n{fresh_agent.workdir}\n"
        contexts = s.list_code_contexts()
        assert [c.language for c in contexts] == ["python", "javascript", "bash"]
        assert contexts[-1].cwd == fresh_agent.workdir
        s.run_code("kept=yes", language="Bash")  # E2B reads the name without case
        assert out(s.run_code("echo $kept", language="bash")) == "yes\n"
        assert [c.id for c in s.list_code_contexts() if c.language == "bash"] == [contexts[-1].id]


def test_create_code_context_bash_with_a_cwd(sbx, workdir):
    c = sbx.create_code_context(language="bash", cwd=workdir)
    try:
        assert c.language == "bash" and c.cwd == workdir
        listed = sbx.list_code_contexts()[-1]
        assert (listed.id, listed.language, listed.cwd) == (c.id, "bash", workdir)
        assert out(sbx.run_code("pwd", context=c)) == workdir + "\n"
        with pytest.raises(Exception, match="context or language"):
            sbx.run_code("pwd", context=c, language="bash")
    finally:
        sbx.remove_code_context(c)


def test_variables_functions_and_cwd_persist(sbx, sh):
    run = lambda code: sbx.run_code(code, context=sh)
    e = run("x=41\ndeclare -a arr=(a b c)\ngreet() { echo \"hello $1\"; }\ncd /tmp\n"
            "export EXPORTED=1\nshopt -s nullglob")
    assert e.error is None and out(e) == ""
    e = run("echo $((x + 1)) ${arr[2]} ${#arr[@]}; greet bash; pwd; bash -c 'echo $EXPORTED'; "
            "shopt -q nullglob && echo nullglob-on")
    assert out(e) == "42 c 3\nhello bash\n/tmp\n1\nnullglob-on\n"
    # `local` and `declare` behave as at a prompt (cells run at the top level).
    e = run("f() { local v=inner; echo $v; }; f; echo \"[$v]\"")
    assert out(e) == "inner\n[]\n"


def test_stdout_and_stderr_stream_while_the_cell_runs(sbx, sh):
    seen = []
    e = sbx.run_code("echo first; echo oops >&2; sleep 1.5; echo second", context=sh,
                     on_stdout=lambda m: seen.append((time.monotonic(), "out", str(m))),
                     on_stderr=lambda m: seen.append((time.monotonic(), "err", str(m))))
    done = time.monotonic()
    # bash_kernel runs bash on a terminal: stderr comes as stdout, in order.
    assert out(e) == "first\noops\nsecond\n" and err(e) == ""
    assert seen[0][1:] == ("out", "first\n")
    assert done - seen[0][0] > 1.0  # delivered before the cell ended
    assert e.error is None


def test_a_non_zero_status_is_e2b_s_error(sbx, sh):
    """bash_kernel's error for a cell whose last command fails: name '', value
    the exit status, no traceback; the message is the command's own stderr,
    which comes as stdout (bash_kernel's terminal)."""
    run = lambda code: sbx.run_code(code, context=sh)
    e = run("false")
    assert (e.error.name, e.error.value, e.error.traceback) == ("", "1", "")
    e = run("ls /nonexistent-dir")
    assert e.error.value == "2" and "No such file or directory" in out(e) and err(e) == ""
    e = run("no-such-command-here")
    assert e.error.value == "127"
    assert out(e) == "bash: no-such-command-here: command not found\n"
    e = run("(exit 7)")
    assert e.error.value == "7"
    # Only the status of the cell's last command counts, as at a prompt.
    e = run("false; echo after")
    assert e.error is None and out(e) == "after\n"
    assert run("true").error is None
    # A syntax error is bash's message and status 2.
    e = run("if then fi")
    assert e.error.value == "2" and "syntax error" in out(e)


def test_execution_count_counts_every_cell(sbx, sh):
    first = sbx.run_code("true", context=sh).execution_count
    assert sbx.run_code("", context=sh).execution_count == first + 1  # ipykernel's Kernel
    assert sbx.run_code("false", context=sh).execution_count == first + 2


def test_per_execution_envs_are_set_for_the_cell_then_unset_as_e2b_does(sbx, sh):
    run = lambda code, **kw: sbx.run_code(code, context=sh, **kw)
    e = run("echo $FOO; bash -c 'echo child $FOO'", envs={"FOO": "bar"})
    assert out(e) == "bar\nchild bar\n"
    assert out(run("echo ${FOO:-default}")) == "default\n"
    # As E2B's server: `unset` after the cell, even a value the context had before.
    run("export FOO=mine")
    assert out(run("echo $FOO", envs={"FOO": "cell's"})) == "cell's\n"
    assert out(run("echo ${FOO-unset}")) == "unset\n"
    # Values are taken literally: quotes, $, newlines.
    e = run("printf '%s|' \"$ODD\"", envs={"ODD": "it's $HOME\nline2"})
    assert out(e) == "it's $HOME\nline2|"


def test_sandbox_envs_and_their_per_execution_override(agent):
    with Sandbox.connect(agent.addr, envs={"SANDBOX_WIDE": "sandbox"}) as s:
        c = s.create_code_context(language="bash")
        try:
            assert out(s.run_code("echo $SANDBOX_WIDE", context=c)) == "sandbox\n"
            e = s.run_code("echo $SANDBOX_WIDE", context=c, envs={"SANDBOX_WIDE": "cell"})
            assert out(e) == "cell\n"
            assert out(s.run_code("echo $SANDBOX_WIDE", context=c)) == "sandbox\n"
        finally:
            s.remove_code_context(c)


def test_timeout_interrupts_and_the_shell_survives(sbx, sh):
    sbx.run_code("survivor=alive; cd /tmp", context=sh)
    t0 = time.monotonic()
    with pytest.raises(TimeoutException):
        sbx.run_code("sleep 30; echo never", context=sh, timeout=1)
    assert time.monotonic() - t0 < 3
    e = sbx.run_code("echo $survivor; pwd", context=sh)
    assert out(e) == "alive\n/tmp\n" and e.error is None


def run_interrupted(sbx, context, code):
    """Runs `code`, with Sandbox.interrupt(context) 1 s in: (execution, seconds)."""
    timer = threading.Timer(1.0, lambda: sbx.interrupt(context))
    timer.start()
    try:
        t0 = time.monotonic()
        e = sbx.run_code(code, context=context, timeout=60)
        return e, time.monotonic() - t0
    finally:
        timer.cancel()


def test_interrupt_ends_the_whole_cell(sbx, sh):
    """INTERRUPT: the running command and the rest of the cell are dropped
    (E2B's ExecutionAborted), the shell and its state stay."""
    sbx.run_code("kept=7", context=sh)
    e, took = run_interrupted(sbx, sh, "echo start; sleep 30; echo rest-of-cell")
    assert took < 5
    # bash's newline after a job killed by SIGINT comes too (stderr, on stdout).
    assert out(e) in ("start\n", "start\n\n") and e.error.name == "ExecutionAborted", e
    assert out(sbx.run_code("echo $kept", context=sh)) == "7\n"


def test_a_cell_that_ignores_the_interrupt_is_killed_and_the_context_restarts(sbx, sh):
    sbx.run_code("before=1", context=sh)
    e, took = run_interrupted(sbx, sh, "trap '' INT; while :; do sleep 0.1; done")
    assert took < 10
    assert e.error.name == "ContextRestarting", e.error  # E2B's name for the agent's ContextRestarted
    # A new bash: the old state is gone, the context works.
    e = sbx.run_code("echo \"[${before:-}]\" $((1 + 1))", context=sh)
    assert out(e) == "[] 2\n" and e.error is None


def test_exit_restarts_bash(sbx, sh):
    """`exit` ends the shell: as bash_kernel, the cell ends with "Restarting
    Bash" and the next cell runs in a new one."""
    sbx.run_code("gone=soon", context=sh)
    e = sbx.run_code("echo bye; exit 3", context=sh)
    # An interactive bash says "exit" (on stderr, so on stdout here, as on
    # bash_kernel's terminal).
    assert out(e) == "bye\nexit\nRestarting Bash" and e.error is None
    e = sbx.run_code("echo \"[${gone:-}]\"", context=sh)
    assert out(e) == "[]\n" and e.error is None


def test_confined_as_python_executors(sbx, sh):
    """The sandbox user, no capabilities, no_new_privs, the seccomp filter
    (no user namespaces, no AF_INET on this networked host: --network none)."""
    e = sbx.run_code("id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | "
                     "tr -s '\\t' ' '\n"
                     "unshare -U true 2>/dev/null || echo unshare-denied\n"
                     "(exec 3<>/dev/tcp/127.0.0.1/9) 2>&1 | tail -1 | sed 's/.*: //'", context=sh)
    assert out(e) == ("1000\nCapEff: 0000000000000000\nNoNewPrivs: 1\nSeccomp: 2\n"
                      "unshare-denied\nOperation not permitted\n"), e


def test_restart_and_remove(sbx, sh):
    sbx.run_code("mark=1", context=sh)
    sbx.restart_code_context(sh)
    assert out(sbx.run_code("echo \"[${mark:-}]\"", context=sh)) == "[]\n"
    sbx.remove_code_context(sh)
    with pytest.raises(NotFoundException):
        sbx.run_code("true", context=sh)
