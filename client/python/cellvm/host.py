"""The host side of a sandbox, owned by the C CLI (issue 22): the SDK gets
its micro-VMs from `cellvm create --json` and acts on them with `cellvm
ps --json`, `set-timeout --json`, `hold`, `kill`, `pause --json` and
`resume --json`; the CBOR data path goes straight to the agent as before.

create() hands the CLI one end of a socketpair (`--pass-fd`): the CLI sends
the agent connection it restored the clone with (HELLO, NEW_GENERATION and
SET_DEADLINE done) over it, so the SDK needs no second connection (over the
serial port a new one waits for the agent to reopen it, ~0.1 s), and records
this process as the holder of that connection (`--holder`).

The binary: $CELLVM_BIN, else build/cellvm of this checkout, else `cellvm`
on PATH.
"""

import array
import json
import logging
import os
import shutil
import socket
import subprocess

from . import _wire
from .exceptions import (InvalidArgumentException, RateLimitException, SandboxException,
                         SandboxNotFoundException, TimeoutException)

logger = logging.getLogger("cellvm")

BIN_ENV = "CELLVM_BIN"
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# The CLI's exit statuses (client/c/cli.c): 1 not found, 2 usage or refused limits,
# 4 (hold) another process holds the channel.
_NOT_FOUND, _USAGE, _HELD = 1, 2, 4


def binary() -> str:
    """The `cellvm` binary; SandboxException naming where it was looked for."""
    env = os.environ.get(BIN_ENV)
    if env:
        if not os.access(env, os.X_OK):
            raise SandboxException(f"${BIN_ENV}={env}: not an executable")
        return env
    local = os.path.join(_ROOT, "build", "cellvm")
    if os.access(local, os.X_OK):
        return local
    found = shutil.which("cellvm")
    if found:
        return found
    raise SandboxException(f"the cellvm binary was not found (${BIN_ENV}, {local}, PATH): "
                           "`make` builds it; the SDK needs it to create, list and kill sandboxes")


def _error(what, r):
    """The SDK exception for a failed CLI call `r` (its stderr says why)."""
    msg = " ".join(line.removeprefix("cellvm: ") for line in r.stderr.strip().splitlines()[-3:])
    msg = f"{what}: {msg or f'exit status {r.returncode}'}"
    if "Rate limit exceeded" in msg:
        return RateLimitException(msg, code="rate_limit")
    if ("Timeout cannot be greater" in msg or "seconds > 0" in msg or "bad --timeout" in msg
            or "$CELLVM_SNAPSHOT" in msg or "--egress: " in msg
            or (r.returncode == 2 and msg.startswith("egress("))):
        return InvalidArgumentException(msg, code="bad_request")
    if r.returncode == _NOT_FOUND:
        return SandboxNotFoundException(msg)
    if " within " in msg or " in time" in msg:  # the boot (or restore) ran out of time
        return TimeoutException(msg)
    return SandboxException(msg)


def run(args, what, timeout=None):
    """`cellvm ARGS`: its stdout; the SDK's exception when it fails."""
    r = subprocess.run([binary(), *args], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, check=False, timeout=timeout)
    if r.returncode != 0:
        raise _error(what, r)
    return r.stdout


def vm_args(image=None, vmm="qemu", memory_mb=1024, vcpus=1, kernel=None, initramfs=True,
            rootfs=None, snapshot=None, boot_timeout=None, network="none", extra_cmdline=""):
    """create()'s VM options as the CLI's (`image`: a directory, resolved by the caller)."""
    args = ["--image", os.path.abspath(image), "--vmm", vmm, "--memory", str(int(memory_mb)),
            "--vcpus", str(int(vcpus)), "--network", network]
    if extra_cmdline:
        args += ["--cmdline-extra", extra_cmdline]
    if kernel:
        args += ["--kernel", os.path.abspath(kernel)]
    if initramfs is None or initramfs is False:
        args += ["--initramfs", "none"]
    elif isinstance(initramfs, (str, os.PathLike)):
        args += ["--initramfs", os.path.abspath(initramfs)]
    if rootfs:
        args += ["--rootfs", os.path.abspath(rootfs)]
    if snapshot is False:
        args.append("--no-snapshot")
    elif snapshot is True:
        args.append("--from-template")  # even with $CELLVM_SNAPSHOT=0
    elif isinstance(snapshot, (str, os.PathLike)):
        args += ["--snapshot", os.path.abspath(os.fspath(snapshot))]
    if boot_timeout:
        args += ["--boot-timeout", f"{float(boot_timeout):g}"]
    return args


def create(vm_options, timeout=None, metadata=None, template=None, boot_s=None, egress=None,
           on_timeout=None):
    """`cellvm create --json`: (its entry as a dict, a Connection to the agent
    with HELLO done). The CLI restores (or boots) the sandbox, records it in
    the registry with its deadline and tells the guest; it lives on after the
    CLI until its deadline."""
    args = ["create", "--json", "--holder", str(os.getpid()), *vm_options]
    if timeout is not None:
        args += ["--timeout", f"{float(timeout):g}"]
    for k, v in (metadata or {}).items():
        args += ["--metadata", f"{k}={v}"]
    if template:
        args += ["--template", str(template)]
    if egress is not None:
        args += ["--egress", json.dumps(egress)]
    if on_timeout is not None:
        args += ["--on-timeout", on_timeout]
    return _with_connection(args, "create", boot_s)


def egress(ident, rules=None):
    """`cellvm egress --json`: the rules of live sandbox `ident` replaced by
    `rules` (E2B's update body), or only read; its {sandbox_id, rules, envs}."""
    args = ["egress", "--json", ident]
    if rules is not None:
        args.append(json.dumps(rules))
    return json.loads(run(args, f"egress({ident})"))


def resume(ident, timeout_s=None):
    """`cellvm resume --json`: the paused sandbox `ident` running again under
    its id; (its entry as a dict, a Connection to its agent), as create()."""
    args = ["resume", "--json", "--holder", str(os.getpid())]
    if timeout_s is not None:
        args += ["--timeout", f"{float(timeout_s):g}"]
    return _with_connection([*args, ident], f"resume({ident})", None)


def fork(args, what):
    """`cellvm fork --json --paused ...`: (the fork records it printed, as ps()
    lists paused ones; the exception for the forks it did not make, or None).
    Raises when it made none."""
    r = subprocess.run([binary(), *args], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, check=False)
    recs = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    if r.returncode != 0 and not recs:
        raise _error(what, r)
    return recs, (_error(what, r) if r.returncode != 0 else SandboxException(f"{what}: no fork"))


def _with_connection(args, what, wait_s):
    """Runs `cellvm ARGS --pass-fd N`: its JSON line and the agent connection it sent."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        # pass_fds keeps the fd's number in the child.
        proc = subprocess.Popen([binary(), *args, "--pass-fd", str(theirs.fileno())],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, pass_fds=(theirs.fileno(),))
        theirs.close()
        out, err = proc.communicate(timeout=wait_s)
        r = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        if r.returncode != 0:
            raise _error(what, r)
        for line in err.splitlines():  # what it warned of (a template rebuilt, a cold boot)
            if line.strip():
                logger.warning("%s", line)
        info = json.loads(out.strip().splitlines()[-1])
        fd = _receive_fd(mine)
    finally:
        theirs.close()
        mine.close()
    if fd is None:  # the CLI could not pass it: a connection of our own
        return info, _wire.Connection.connect(info["address"], timeout=30.0)
    conn = _wire.Connection(socket.socket(fileno=fd))
    try:  # a repeated HELLO on the one stream: this client's own handshake
        conn.handshake({"protocol": _wire.PROTOCOL_VERSION, "client": "cellvm-python"}, 30.0)
    except BaseException:
        conn.close()
        kill(info["sandbox_id"])
        raise
    return info, conn


def _receive_fd(sock):
    """The fd the CLI sent (SCM_RIGHTS), or None when it sent none."""
    fds = array.array("i")
    sock.setblocking(False)
    try:
        msg, anc, _flags, _addr = sock.recvmsg(1, socket.CMSG_SPACE(fds.itemsize))
    except BlockingIOError:
        return None
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    for extra in fds[1:]:
        os.close(extra)
    return fds[0] if fds else None


def ps():
    """`cellvm ps --json`: the live sandboxes (oldest first), then the paused."""
    return json.loads(run(["ps", "--json"], "list"))


def find(ident):
    """The live sandbox `ident` (its id, key or agent address) as ps() has it, or None."""
    if not isinstance(ident, str):
        return None
    for e in ps():
        if e.get("state") == "running" and ident in (e["sandbox_id"], e["key"], e["address"]):
            return e
    return None


def kill(ident) -> bool:
    """`cellvm kill ID`: True if it was live or paused, False if there was none."""
    r = subprocess.run([binary(), "kill", ident], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, check=False)
    if r.returncode == _NOT_FOUND:
        return False
    if r.returncode != 0:
        raise _error(f"kill {ident}", r)
    return True


def set_timeout(ident, timeout_s, registry_only=False):
    """`cellvm set-timeout --json`: ends `ident` `timeout_s` from now (registry;
    the guest too unless `registry_only`, or another process holds its
    channel). Its JSON: deadline_ms, guest_timeout_ms (what to send the guest), held."""
    args = ["set-timeout", "--json", *(["--registry-only"] if registry_only else []), ident,
            f"{float(timeout_s):g}"]
    return json.loads(run(args, f"set_timeout({ident})"))


def hold(ident, pid, release=False):
    """`cellvm hold`: process `pid` holds the channel of `ident` (`release`:
    no longer). SandboxException naming the holder when another live process
    holds a serial channel (it serves one client at a time)."""
    r = subprocess.run([binary(), "hold", *(["--release"] if release else []), ident, str(pid)],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    if r.returncode == _HELD:
        raise SandboxException(r.stderr.strip().removeprefix("cellvm: "))
    if r.returncode != 0:
        raise _error(f"hold({ident})", r)
