"""The tests' view of the C registry of live sandboxes (client/c/registry.c):
what the SDK sees too, through the CLI (`cellvm ps --json`, `kill --all`,
`host-tsc`); and, for the stand-in VMMs of test_lifetime.py, entry files
written in the C side's format (docs/VMM.md, "Live sandboxes") so that its
reader, sweeps and limits are what is tested."""

import json
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build")), "cellvm")
RUNTIME_ENV = "CELLVM_RUNTIME_DIR"


def cli(*args, rt=None, env=None, check=False):
    e = dict(os.environ, **(env or {}))
    if rt is not None:
        e[RUNTIME_ENV] = str(rt)
    r = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, env=e,
                       stdin=subprocess.DEVNULL)
    assert not check or r.returncode == 0, (args, r.returncode, r.stderr)
    return r


def ps(rt=None):
    """The live sandboxes (`cellvm ps --json`, which sweeps), as dicts."""
    out = cli("ps", "--json", rt=rt, check=True).stdout
    return [d for d in json.loads(out) if d["state"] == "running"]


def find(ident, rt=None):
    return next((d for d in ps(rt) if ident in (d["sandbox_id"], d["key"], d["address"])), None)


def killed_leftovers(rt):
    """The ids of the sandboxes still live in registry `rt`, all killed now."""
    if not os.path.isdir(rt):
        return []
    left = [d["sandbox_id"] for d in ps(rt)]
    if left:
        cli("kill", "--all", rt=rt, check=True)
    return left


def private_state(tmp_path, monkeypatch):
    """For a VM module's autouse fixture (`yield from private_state(...)`):
    the test's own registry and paused store, template snapshots on, and
    after it no sandbox of its left running (a failed test's are killed)."""
    from snapshot_format import PAUSED_DIR_ENV
    from cellvm.launch import SNAPSHOT_ENV
    rt = tmp_path / "rt"
    monkeypatch.setenv(RUNTIME_ENV, str(rt))
    monkeypatch.setenv(PAUSED_DIR_ENV, str(tmp_path / "paused"))
    monkeypatch.setenv(SNAPSHOT_ENV, "1")
    yield
    left = killed_leftovers(str(rt))
    assert not left, f"sandboxes left in the registry: {left}"


def keys(rt):
    """The entry files' keys (no parsing, no sweep)."""
    try:
        return sorted(n[:-len(".sandbox")] for n in os.listdir(rt) if n.endswith(".sandbox"))
    except FileNotFoundError:
        return []


def host_tsc_khz():
    """This host's TSC frequency as TCG guests are told it (cellvm host-tsc)."""
    return int(cli("host-tsc", check=True).stdout)


def proc_start(pid):
    """Field 22 of /proc/PID/stat, as the registry names a process."""
    with open(f"/proc/{int(pid)}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[19])


def now_ms():
    import time
    return time.time_ns() // 1_000_000


def write_entry(rt, key, pid, deadline_ms, started_ms=None, **fields):
    """An entry file as the C side writes one (a stand-in VMM's)."""
    values = dict(key=key, id=key, vmm="qemu", pid=pid, pid_start=proc_start(pid),
                  started_ms=started_ms or now_ms(), deadline_ms=deadline_ms, memory_mb=0,
                  vcpus=0, creator_pid=0, creator_start=0, holder_pid=0, holder_start=0,
                  keeper_pid=0, accel="tcg", address="", dir="", image="", template="")
    values.update(fields)
    metadata = values.pop("metadata", {})
    text = "cellvm-sandbox 1\n" + "".join(f"{k}={v}\n" for k, v in values.items())
    text += "metadata=" + json.dumps(metadata, ensure_ascii=True) + "\n"
    os.makedirs(rt, mode=0o700, exist_ok=True)
    with open(os.path.join(rt, key + ".sandbox"), "w") as f:
        f.write(text)
    return text
