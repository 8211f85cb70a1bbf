"""The `cellvm` CLI says what it does: --help everywhere, usage errors that
name the problem (exit 2), exit statuses as --help states them, options that
refuse what they would silently change. Most cases need no VM; a few use the
session's agent (no VM either)."""

import json
import os
import socket
import subprocess

import pytest

from conftest import BUILD

CLI = os.path.join(BUILD, "cellvm")

AGENT_COMMANDS = ["exec", "info", "ping", "contexts", "context-create", "context-restart",
                  "context-remove", "interrupt", "put", "get", "ls", "sh", "shutdown"]
OTHER_COMMANDS = ["run", "shell", "create", "keep", "egress", "egress-keep", "set-timeout", "hold",
                  "host-tsc", "ps", "kill", "pause", "resume", "fork", "create-snapshot",
                  "list-snapshots", "delete-snapshot", "snapshot", "serve", "kube", "mcp"]


def run(*args, env=None, input=None, timeout=60):
    e = dict(os.environ)
    e.pop("CELLVM_ADDR", None)
    e.update(env or {})
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=e, input=input,
                          timeout=timeout)


@pytest.fixture
def rt(tmp_path):
    """An empty registry of this test's own."""
    d = tmp_path / "rt"
    d.mkdir(mode=0o700)
    return {"CELLVM_RUNTIME_DIR": str(d)}


@pytest.mark.parametrize("cmd", AGENT_COMMANDS + OTHER_COMMANDS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_every_command_answers_help_without_connecting(cmd, flag, rt):
    # An address that cannot answer: --help must not need it.
    r = run("--connect", "unix:/nonexistent/none.sock", cmd, flag, env=rt)
    assert r.returncode == 0, (cmd, r.stderr)
    assert r.stdout.startswith("usage:") and r.stderr == "", (cmd, r.stdout[:200], r.stderr)


@pytest.mark.parametrize("argv,what", [
    (["info", "extra"], "info takes no arguments"),
    (["ping", "extra"], "ping takes no arguments"),
    (["contexts", "extra"], "contexts takes no arguments"),
    (["interrupt", "a", "b"], "interrupt takes at most one argument"),
    (["ls", "a", "b"], "ls takes at most one argument"),
    (["put", "a"], "put takes exactly two arguments"),
    (["context-restart"], "context-restart takes exactly one argument"),
])
def test_agent_commands_refuse_extra_operands_before_connecting(argv, what):
    r = run("--connect", "unix:/nonexistent/none.sock", *argv)
    assert r.returncode == 2 and what in r.stderr, r.stderr


def test_exec_help_among_its_options_needs_no_agent():
    r = run("--connect", "unix:/nonexistent/none.sock", "exec", "-c", "ctx", "--help")
    assert r.returncode == 0 and r.stdout.startswith("usage: cellvm [--connect ADDR] exec"), r


def test_keep_refuses_an_unknown_key_and_forks_nothing(rt):
    r = run("keep", "nosuchkey", env=rt)
    assert r.returncode == 1 and "no live sandbox has that key" in r.stderr, r
    assert r.stdout == ""
    r = run("keep", "--bogus", env=rt)
    assert r.returncode == 2 and "unknown option" in r.stderr, r


def test_main_usage_tells_the_truth():
    r = run("--help")
    assert r.returncode == 0
    out = r.stdout
    assert "serve [options]" in out and "--version" in out
    assert "mcp [--image DIR] [--memory MB] [--vcpus N]" in out
    assert "run [vm options] [-e KEY=VALUE]... [-t SEC] [-o DIR] -- CODE|-" in out
    assert "[--template NAME] [--json]" in out and "[--template NAME] --json" not in out
    assert "about 15-50 s under TCG" in out and "~25 s" not in out
    assert "at least 64 MiB" in out
    assert "sh: the command's own status" in out
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("cellvm ")
    # run takes no exec -c: the usage above no longer promises it
    r = run("run", "-c", "x", "--", "1")
    assert r.returncode == 2


@pytest.mark.parametrize("opt,value", [
    ("--vcpus", "0.5"), ("--vcpus", "1.9"), ("--vcpus", "1e0"), ("--vcpus", "+2"),
    ("--memory", "1024.9"), ("--memory", "1024.0"), ("--memory", "4294968320"),
])
def test_counts_and_mib_refuse_non_integers(opt, value, rt):
    for cmd in (["run"], ["create"], ["snapshot", "manifest"]):
        tail = ["--", "1"] if cmd == ["run"] else []
        r = run(*cmd, opt, value, *tail, env=rt)
        assert r.returncode == 2 and f"bad {opt}" in r.stderr and value in r.stderr, (cmd, r)


def test_shell_timeout_is_refused_with_a_reason(rt):
    r = run("shell", "--timeout", "5", env=rt)
    assert r.returncode == 2 and "--timeout" in r.stderr and "shell" in r.stderr, r


def test_bad_option_values_exit_2_before_booting(rt, tmp_path):
    r = run("run", "--timeout", "100000", "--", "1", env=rt)
    assert r.returncode == 2 and "Timeout cannot be greater than 24 hours" in r.stderr, r
    r = run("create", "--timeout", "100000", env=rt)
    assert r.returncode == 2 and "Timeout cannot be greater than 24 hours" in r.stderr, r
    r = run("run", "--kernel", "/nonexistent/bzImage", "--", "1", env=rt)
    assert r.returncode == 2 and "--kernel /nonexistent/bzImage" in r.stderr, r
    assert "booting cold" not in r.stderr  # the real error only
    r = run("run", "--image", "/nonexistent/image", "--", "1", env=rt)
    assert r.returncode == 2 and "--image /nonexistent/image" in r.stderr, r
    r = run("run", "--rootfs", str(tmp_path), "--", "1", env=rt)
    assert r.returncode == 2 and "a directory, not a file" in r.stderr, r
    r = run("run", "--initramfs", "/nonexistent/initrd", "--", "1", env=rt)
    assert r.returncode == 2 and "--initramfs" in r.stderr, r


@pytest.mark.parametrize("var", ["CELLVM_MAX_SANDBOXES", "CELLVM_MAX_TIMEOUT",
                                 "CELLVM_DEADLINE_GRACE"])
def test_bad_limit_variables_are_errors(var, rt):
    r = run("ps", env={**rt, var: "abc"})
    assert r.returncode == 2 and f"${var}" in r.stderr and "abc" in r.stderr, r
    assert run("ps", env={**rt, var: "30"}).returncode == 0


def test_usage_errors_name_the_problem(rt):
    r = run("pause", "--bogus", "ID", env=rt)
    assert r.returncode == 2 and r.stderr.startswith("cellvm: pause: unknown option"), r
    assert "--bogus" in r.stderr.splitlines()[0]
    r = run("hold", "ID", "1", env=rt)
    assert r.returncode == 2 and r.stderr.startswith("cellvm: hold: bad PID 1"), r
    r = run("fork", env=rt)
    assert r.returncode == 2 and r.stderr.startswith("cellvm: fork: no ID given"), r
    r = run("ps", "--bogus", env=rt)
    assert r.returncode == 2 and "--bogus" in r.stderr, r
    r = run("host-tsc", "--bogus")
    assert r.returncode == 2 and "--bogus" in r.stderr, r
    r = run("create", "--metadata", "a=b", "--egress", "{}", "extra", env=rt)
    assert r.returncode == 2 and "not extra" in r.stderr, r


@pytest.mark.parametrize("rules", [
    '{"allowout": ["pypi.org"]}',
    '{"network": {"allowOut": ["pypi.org"]}, "extra": 1}',
    '{"network": {"allowout": ["pypi.org"]}}',
    '{"network": ["pypi.org"]}',
])
def test_egress_refuses_unknown_keys(rules, rt):
    r = run("egress", "some-sandbox", rules, env=rt)
    assert r.returncode == 2 and "cellvm: egress some-sandbox: " in r.stderr, r


@pytest.mark.parametrize("rules", [
    '{"allowOut": ["pypi.org"], "denyOut": ["0.0.0.0/0"]}',
    '{"allow_out": ["pypi.org"], "allow_internet_access": false}',
    # the shape `cellvm egress ID` prints
    '{"network": {"allowOut": ["pypi.org"], "denyOut": ["0.0.0.0/0"]}}',
    '{"network": {"allowOut": ["pypi.org"]}, "allow_internet_access": false}',
    '{}',
])
def test_egress_accepts_what_it_prints(rules, rt):
    # Parsed first: accepted rules reach the lookup (no such sandbox here: exit 1).
    r = run("egress", "some-sandbox", rules, env=rt)
    assert r.returncode == 1 and "no live sandbox" in r.stderr, r


def test_serve_options_are_checked_before_anything(tmp_path):
    env = {"HOME": str(tmp_path), "CELLVM_API_KEY": ""}
    for argv, what in [
        (["--pool", "4294967296"], "--pool takes 0 to 64"),
        (["--client-timeout", "4294967297"], "--client-timeout takes 1 to 3600"),
        (["--listen", "[::1]"], "[ADDRESS]:PORT"),
        (["--namespace", "agents"], "--backend agent-sandbox's"),
        (["--single", "--backend", "agent-sandbox"], "exclude each other"),
        (["--image", str(tmp_path / "none")], "--image"),
    ]:
        r = run("serve", *argv, env=env, timeout=30)
        assert r.returncode == 2 and what in r.stderr, (argv, r)
    # none of them made an API key
    assert not (tmp_path / ".config").exists()


def test_serve_names_the_port_in_use_and_keeps_a_live_unix_socket(tmp_path):
    env = {"CELLVM_API_KEY": "k" * 16, "HOME": str(tmp_path)}
    image = tmp_path / "image"
    image.mkdir()
    (image / "launch.txt").write_text("garbage\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run("serve", "--listen", f"127.0.0.1:{port}", "--image", str(image), env=env,
                timeout=30)
        assert r.returncode == 1 and f"127.0.0.1:{port}: Address already in use" in r.stderr, r
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as u:
        u.bind(path)
        u.listen()
        r = run("serve", "--unix", path, "--image", str(image), env=env, timeout=30)
        assert r.returncode == 2 and "another server is listening" in r.stderr, r
        assert os.path.exists(path)
        # ... still its socket
        with socket.socket(socket.AF_UNIX) as c:
            c.connect(path)


def test_serve_listen_port_0_says_the_port_it_took(tmp_path):
    env = {"CELLVM_API_KEY": "k" * 16, "HOME": str(tmp_path),
           "CELLVM_TEMPLATE_DIR": str(tmp_path / "t")}
    image = tmp_path / "image"
    image.mkdir()
    (image / "launch.txt").write_text("garbage\n")  # the template fails: serve ends
    r = run("serve", "--listen", "127.0.0.1:0", "--image", str(image), env=env, timeout=60)
    line = next(x for x in r.stderr.splitlines() if "listening on" in x)
    port = int(line.split("http://127.0.0.1:")[1].split()[0])
    assert 0 < port < 65536, line
    assert "--force" not in r.stderr + r.stdout


def test_kube_help_and_kvm_options():
    r = run("kube", "--help")
    assert r.returncode == 0 and "not in this build" not in r.stdout
    r = run("kube", "manifests", "--image", "example.com/cellvm:1", "--kvm", "--no-kvm")
    assert r.returncode == 2 and "exclude each other" in r.stderr, r


# --- with the session's agent (no VM) ---------------------------------------------


def acli(agent, *args, input=None):
    return run("--connect", agent.addr, *args, input=input)


def test_exec_in_a_missing_context_exits_1(agent):
    r = acli(agent, "exec", "-c", "nosuch", "1")
    assert r.returncode == 1, r
    assert acli(agent, "context-restart", "nosuch").returncode == 1


def test_file_errors_exit_1(agent, tmp_path):
    r = acli(agent, "put", str(tmp_path), "x")
    assert r.returncode == 1 and "Is a directory" in r.stderr, r
    assert acli(agent, "sh", "echo hi > /tmp/cli_truth.txt").returncode == 0
    r = acli(agent, "get", "/tmp/cli_truth.txt", str(tmp_path))
    assert r.returncode == 1, r
    acli(agent, "sh", "rm -f /tmp/cli_truth.txt")


def test_exec_reading_stdin_from_a_directory_fails(agent, tmp_path):
    d = os.open(tmp_path, os.O_RDONLY)  # a directory's fd: read() fails with EISDIR
    try:
        r = subprocess.run([CLI, "--connect", agent.addr, "exec", "-"], stdin=d,
                           capture_output=True, text=True, timeout=60)
    finally:
        os.close(d)
    assert r.returncode == 1 and "reading the code from stdin: Is a directory" in r.stderr, r


def test_sub_millisecond_timeout_still_times_out(agent):
    r = acli(agent, "exec", "--timeout", "0.0004", "import time; time.sleep(30)")
    assert r.returncode == 124 and "timed out" in r.stderr, r
    r = acli(agent, "sh", "--timeout", "0.0004", "sleep 30")
    assert r.returncode == 124, r


def test_sh_passes_the_commands_status_through(agent):
    assert acli(agent, "sh", "exit 7").returncode == 7
    assert "own exit status" in run("sh", "--help").stdout



def test_create_with_an_unknown_template_says_so(rt, tmp_path):
    # --snapshot of an empty directory: the restore fails after the warning, no VM starts.
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {**rt, "CELLVM_SNAPSHOTS_DIR": str(tmp_path / "kept")}
    r = run("create", "--template", "nosuch", "--snapshot", str(empty), env=env)
    lines = [x for x in r.stderr.splitlines() if "--template nosuch" in x]
    assert len(lines) == 1 and "is no kept snapshot" in lines[0], r.stderr
    assert r.returncode != 0
