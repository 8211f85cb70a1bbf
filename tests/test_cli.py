"""The `cellvm` CLI (client/c, libcellvm) against a real agent."""

import json
import os
import subprocess

import pytest

from conftest import BUILD

CLI = os.path.join(BUILD, "cellvm")


def cli(agent, *args, input=None, timeout=60):
    return subprocess.run([CLI, "--connect", agent.addr, *args], input=input, capture_output=True,
                          text=True, timeout=timeout)


def test_help_lists_every_command():
    r = subprocess.run([CLI, "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for cmd in ("exec", "info", "ping", "contexts", "context-create", "context-restart",
                "context-remove", "interrupt", "shutdown"):
        assert cmd in r.stdout


def test_usage_errors_exit_2():
    assert subprocess.run([CLI], capture_output=True).returncode == 2
    r = subprocess.run([CLI, "--connect", "unix:/nonexistent", "frobnicate"], capture_output=True, text=True)
    assert r.returncode == 2 and "unknown command" in r.stderr
    r = subprocess.run([CLI, "exec", "1"], capture_output=True, text=True, env={"PATH": "/usr/bin"})
    assert r.returncode == 2 and "--connect" in r.stderr


def test_unreachable_agent_exits_3(tmp_path):
    r = subprocess.run([CLI, "--connect", f"unix:{tmp_path}/none.sock", "ping"], capture_output=True, text=True)
    assert r.returncode == 3
    assert "none.sock" in r.stderr


def test_exec_prints_stdout_and_result(agent):
    r = cli(agent, "exec", "print('hello'); 6 * 7")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "hello\n42\n"


def test_exec_reads_code_from_stdin(agent):
    r = cli(agent, "exec", "-", input="import sys\nprint('from stdin', file=sys.stderr)\n")
    assert r.returncode == 0
    assert "from stdin" in r.stderr


def test_exec_error_exits_1_with_traceback(agent):
    r = cli(agent, "exec", "def f():\n    return 1 / 0\nf()")
    assert r.returncode == 1
    assert "ZeroDivisionError" in r.stderr
    assert "return 1 / 0" in r.stderr


def test_exec_env(agent):
    r = cli(agent, "exec", "--env", "CELLVM_CLI_TEST=yes", "import os; os.environ['CELLVM_CLI_TEST']")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "'yes'"


def test_exec_writes_figures_as_png(agent, tmp_path):
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
    r = cli(agent, "exec", "--out-dir", str(tmp_path), code)
    assert r.returncode == 0, r.stderr
    pngs = sorted(tmp_path.glob("*.png"))
    assert len(pngs) == 1
    assert pngs[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<Figure size" in r.stdout
    assert str(pngs[0]) in r.stderr


def test_exec_timeout_exits_124(agent):
    r = cli(agent, "exec", "--timeout", "0.5", "import time; time.sleep(30)")
    assert r.returncode == 124
    assert "timed out" in r.stderr


def test_info_and_ping(agent):
    r = cli(agent, "info")
    assert r.returncode == 0
    hello = json.loads(r.stdout)
    assert hello["protocol"] == 1
    assert "execute" in hello["capabilities"]
    r = cli(agent, "ping")
    assert r.returncode == 0 and r.stdout.startswith("pong in ")


def test_shutdown_outside_cellvm_init_is_refused(agent):
    r = cli(agent, "shutdown", "--bogus")
    assert r.returncode == 2 and "usage: shutdown" in r.stderr
    r = cli(agent, "shutdown")
    assert r.returncode == 1 and "unsupported" in r.stderr and "cellvm-init" in r.stderr
    assert agent.proc.poll() is None and cli(agent, "ping").returncode == 0


def test_context_commands(agent):
    r = cli(agent, "context-create")
    assert r.returncode == 0, r.stderr
    ctx = r.stdout.strip()
    assert cli(agent, "exec", "--context", ctx, "secret = 17").returncode == 0
    assert cli(agent, "exec", "--context", ctx, "secret").stdout == "17\n"
    listed = json.loads(cli(agent, "contexts").stdout)
    assert ctx in [c["id"] for c in listed]
    assert cli(agent, "context-restart", ctx).returncode == 0
    r = cli(agent, "exec", "--context", ctx, "secret")
    assert r.returncode == 1 and "NameError" in r.stderr
    assert cli(agent, "context-remove", ctx).returncode == 0
    r = cli(agent, "context-remove", ctx)
    assert r.returncode == 1 and "not_found" in r.stderr
