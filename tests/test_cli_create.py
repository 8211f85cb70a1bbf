"""The plumbing the Python SDK drives (issue 22): `cellvm create --json`,
`ps --json`, `set-timeout`, `kill` and `keep`, with real QEMU restoring one
clone of the session template (tests/conftest.py vm_template). What the SDK
does with them is tests/test_snapshot_vm.py's and test_lifetime_vm.py's.
"""

import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import _wire  # noqa: E402
from conftest import IMAGE, SNAPSHOT_MEMORY_MB, process_gone  # noqa: E402

CLI = os.path.join(os.path.dirname(IMAGE), "cellvm")


@pytest.fixture(scope="module")
def env(tmp_path_factory, vm_template):
    d = tmp_path_factory.mktemp("cli-create")
    return dict(os.environ, CELLVM_RUNTIME_DIR=str(d / "rt"),
                CELLVM_PAUSED_DIR=str(d / "paused"),
                CELLVM_TEMPLATE_DIR=os.path.dirname(vm_template.tdir.path))


def cli(env, *args, **kw):
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, env=env,
                          **kw)


def deadlines_said(vmdir):
    """The deadlines the guest's init logged as set by the agent, in ms."""
    with open(os.path.join(vmdir, "console.log"), errors="replace") as f:
        return [int(ms) for ms in re.findall(r"deadline in (\d+) ms \(set by the agent\)", f.read())]


def wait_for(cond, what, timeout=10):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_create_json_ps_set_timeout_and_kill(env, vm_template):
    t0 = time.time()
    r = cli(env, "create", "--json", "--from-template", "--image", IMAGE, "--memory",
            str(SNAPSHOT_MEMORY_MB), "--timeout", "60", "--metadata", "who=test",
            "--metadata", "n=1", "--template", "base")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    sid, pid, vmdir, keeper = info["sandbox_id"], info["pid"], info["dir"], info["keeper_pid"]
    try:
        assert re.fullmatch(r"qemu-[0-9a-f]{8}", sid) and info["key"] == sid
        assert info["snapshot_dir"] == vm_template.snapdir
        assert list(info["restore"]) == ["vmm_spawn", "state_loaded", "running", "handshake",
                                         "new_generation", "deadline"]
        assert info["metadata"] == {"who": "test", "n": "1"} and info["template"] == "base"
        assert abs(info["deadline_ms"] / 1000 - (t0 + 60)) < 15
        assert not process_gone(pid) and not process_gone(keeper)  # it outlives the command
        # The agent answers at the address it printed; it took its own deadline.
        conn = _wire.Connection.connect(info["address"], timeout=30)
        try:
            assert conn.hello.get("generation", 0) > vm_template.manifest.generation
        finally:
            conn.close()
        assert len(deadlines_said(vmdir)) == 1
        listed = json.loads(cli(env, "ps", "--json").stdout)
        assert [(e["sandbox_id"], e["state"], e["metadata"]) for e in listed] == \
            [(sid, "running", {"who": "test", "n": "1"})]
        # set-timeout: the registry, and the guest over a connection of its own.
        r = cli(env, "set-timeout", sid, "30")
        assert r.returncode == 0, r.stderr
        (e,) = json.loads(cli(env, "ps", "--json").stdout)
        assert abs(e["deadline_ms"] / 1000 - (time.time() + 30)) < 5
        assert e["metadata"] == {"who": "test", "n": "1"}  # kept by the rewrite
        wait_for(lambda: len(deadlines_said(vmdir)) == 2, "the guest did not get the deadline")
        assert cli(env, "set-timeout", "--registry-only", sid, "40").returncode == 0
        assert len(deadlines_said(vmdir)) == 2
        assert cli(env, "set-timeout", "qemu-00000000", "30").returncode == 1
        r = cli(env, "set-timeout", sid, "9999999")
        assert r.returncode == 2 and "Timeout cannot be greater" in r.stderr
        assert cli(env, "create", "--json", "--env", "A=1").returncode == 2  # run's option
    finally:
        r = cli(env, "kill", sid)
    assert r.returncode == 0, r.stderr
    wait_for(lambda: process_gone(pid) and process_gone(keeper), "QEMU or its keeper survived")
    assert not os.path.exists(vmdir)
    assert json.loads(cli(env, "ps", "--json").stdout) == []
    assert cli(env, "kill", sid).returncode == 1


def test_create_passes_its_connection_and_the_keeper_cleans_up(env):
    """--pass-fd: the agent connection comes over the socket (a HELLO on it
    answers at once); the guest powering off leaves nothing (the keeper)."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    with mine:
        r = cli(env, "create", "--json", "--from-template", "--image", IMAGE, "--memory",
                str(SNAPSHOT_MEMORY_MB), "--pass-fd", str(theirs.fileno()),
                pass_fds=(theirs.fileno(),))
        theirs.close()
        assert r.returncode == 0, r.stderr
        info = json.loads(r.stdout)
        _msg, fds, _flags, _addr = socket.recv_fds(mine, 1, 1)
    assert len(fds) == 1
    conn = _wire.Connection(socket.socket(fileno=fds[0]))
    try:
        conn.handshake({"protocol": _wire.PROTOCOL_VERSION, "client": "test"}, 10)
        assert not conn.hello.get("awaiting_generation")  # NEW_GENERATION was done
        conn.call(_wire.SHUTDOWN, {"poweroff": True}, timeout=30)
    finally:
        conn.close()
    wait_for(lambda: process_gone(info["pid"]), "the guest did not power off", 60)
    wait_for(lambda: process_gone(info["keeper_pid"]), "the keeper did not exit")
    assert not os.path.exists(info["dir"])
    assert json.loads(cli(env, "ps", "--json").stdout) == []


def manifest_of(env, *opts):
    r = cli(env, "snapshot", "manifest", "--image", IMAGE, "--memory", str(SNAPSHOT_MEMORY_MB),
            *opts)
    assert r.returncode == 0, r.stderr
    fields = [line.split("=", 1) for line in r.stdout.splitlines()[1:] if "=" in line]
    return {k: v for k, v in fields if k != "arg"}, [v for k, v in fields if k == "arg"]


def template_name(env, *opts):
    r = cli(env, "snapshot", "check", "--image", IMAGE, "--memory", str(SNAPSHOT_MEMORY_MB), *opts)
    return re.search(r"/(qemu-[0-9a-f]{16})[/:]", r.stdout).group(1)


def test_network_and_cmdline_extra_are_part_of_the_launch_and_the_template(env, vm_template):
    """--network user (QEMU's NAT, as the SDK's network="user") and
    --cmdline-extra go into the argv and kernel command line, so a template
    made with either is another template (no VM: the launch's manifest)."""
    plain, plain_args = manifest_of(env)
    net, net_args = manifest_of(env, "--network", "user", "--cmdline-extra", 'cellvm.debug=1 a="b c"')
    assert "-netdev" not in plain_args
    i = net_args.index("-netdev")
    assert net_args[i:i + 4] == ["-netdev", "user,id=net0", "-device", "virtio-net-device,netdev=net0"]
    assert net["cmdline"] == plain["cmdline"].replace(
        " cellvm.mem_limit=", " cellvm.net=static cellvm.ip=10.0.2.15/24 cellvm.gateway=10.0.2.2 "
        "cellvm.dns=10.0.2.3 cellvm.mem_limit=") + ' cellvm.debug=1 a="b c"'
    names = {template_name(env), template_name(env, "--network", "user"),
             template_name(env, "--cmdline-extra", "cellvm.debug=1"),
             template_name(env, "--network", "none")}
    assert len(names) == 3 and os.path.basename(vm_template.tdir.path) in names, names
    for vmm in ("firecracker", "cloud-hypervisor"):
        r = cli(env, "create", "--json", "--vmm", vmm, "--network", "user")
        assert r.returncode == 2 and "--network user is QEMU's" in r.stderr, r.stderr
    r = cli(env, "run", "--network", "bridge", "--", "1")
    assert r.returncode == 2 and "--network takes none" in r.stderr
