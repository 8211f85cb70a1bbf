"""The registry of live sandboxes (client/c/registry.c) and the host side
of their lifetime, without booting: the VMM is a stand-in process
(`sleep`) whose entry is written here in the C side's format
(tests/registry_view.py), since what is tested is the registry's
bookkeeping (sweeps, pid identity, limits, the keeper, the holder of a
channel) as the CLI and the SDK see it, which a real boot would only make
slower. The same code paths with real QEMU are in tests/test_lifetime_vm.py.
"""

import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

import registry_view as rv  # noqa: E402
from cellvm import Sandbox, lifetime  # noqa: E402
from cellvm.exceptions import (InvalidArgumentException, RateLimitException,  # noqa: E402
                               SandboxException, SandboxNotFoundException)

CLI = rv.CLI


@pytest.fixture
def rt(tmp_path, monkeypatch):
    path = tmp_path / "rt"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("CELLVM_RUNTIME_DIR", str(path))
    monkeypatch.delenv("CELLVM_ADDR", raising=False)
    return str(path)


class StandIn:
    """A process standing in for a VMM (its own session, as a VMM's), with a
    temp directory named as a VMM's."""

    def __init__(self, tmp_path):
        self.proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
        self.dir = str(tmp_path / f"cellvm-qemu-{self.proc.pid}")
        os.mkdir(self.dir)
        with open(os.path.join(self.dir, "console.log"), "w") as f:
            f.write("x")

    @property
    def pid(self):
        return self.proc.pid

    def gone(self):
        return self.proc.poll() is not None

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def standins(tmp_path):
    made = []

    def make():
        s = StandIn(tmp_path)
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


SANDBOX_ID = re.compile(r"^[a-z0-9-]{1,63}$")  # E2B's: a DNS label ({port}-{id}.{domain})


def entry_for(rt, vmm, timeout_s=60, address=None, **kw):
    """A stand-in VMM's entry as `cellvm create` writes one: its id is its key."""
    now = rv.now_ms()
    key = f"qemu-{secrets.token_hex(4)}"
    fields = dict(address=address or f"unix:{vmm.dir}/agent.sock", dir=vmm.dir, memory_mb=512,
                  vcpus=1, metadata={"user": "a=b\nc"})
    fields.update(kw)
    text = rv.write_entry(rt, key, vmm.pid, now + int(timeout_s * 1000), started_ms=now, **fields)
    return types.SimpleNamespace(key=key, id=key, started_ms=now,
                                 deadline_ms=now + int(timeout_s * 1000), text=text, **fields)


def test_damaged_entries_are_removed_untrusted(rt, standins):
    vmm = standins()
    e = entry_for(rt, vmm)
    # Damaged: wrong header, garbage number, a key that is not the file's, truncated.
    victim = standins()
    bad = {
        "qemu-00000001": "not a registry file\n",
        "qemu-00000002": e.text.replace(f"key={e.key}", "key=qemu-00000002").replace(
            f"pid={vmm.pid}\n", "pid=12x\n"),
        "qemu-00000003": e.text.replace(f"pid={vmm.pid}\n", f"pid={victim.pid}\n"),  # key mismatch
        "qemu-00000004": e.text[:40],
    }
    for key, body in bad.items():
        with open(os.path.join(rt, key + ".sandbox"), "w") as f:
            f.write(body)
    r = rv.cli("ps", "--json", rt=rt)
    assert r.returncode == 0, r.stderr
    assert [d["key"] for d in rv.ps(rt)] == [e.key]
    assert rv.keys(rt) == [e.key]
    assert r.stderr.count("removed damaged registry entry") == 4, r.stderr
    assert not victim.gone()  # a pid named by a damaged entry is never signalled
    d = rv.find(e.key, rt)  # what the SDK reads of it
    assert d["metadata"] == {"user": "a=b\nc"} and d["pid"] == vmm.pid and not d["held"]
    assert d["entry"] == os.path.join(rt, e.key + ".sandbox")


def test_reused_pid_is_not_killed_and_the_entry_is_removed(rt, standins):
    """An entry whose pid is now an unrelated process (other start time),
    even far past its deadline, is stale: removed, that process untouched."""
    unrelated = standins()
    e = entry_for(rt, unrelated, timeout_s=-3600, pid_start=rv.proc_start(unrelated.pid) - 7)
    r = rv.cli("ps", rt=rt)
    assert r.returncode == 0 and "removed stale registry entry" in r.stderr, r.stderr
    assert not unrelated.gone()
    assert rv.keys(rt) == []
    assert not os.path.exists(e.dir)  # its files went with it
    # Killing by id: nothing live has that id now, nothing is signalled.
    assert Sandbox.kill(e.id) is False
    assert not unrelated.gone()


def test_list_get_info_kill_of_another_process_sandbox_and_host_enforcement(rt, standins, monkeypatch):
    """Sandbox.list() shows what the registry holds (another process's VM),
    get_info() has its started_at/end_at, set_timeout() moves end_at, and the
    first list() after deadline + grace kills its VMM."""
    monkeypatch.setenv("CELLVM_DEADLINE_GRACE", "1")
    a, b = standins(), standins()
    # holder pid 1 stands for a live holder: set_timeout tries no connection.
    ea = entry_for(rt, a, timeout_s=60, holder_pid=1, holder_start=rv.proc_start(1))
    eb = entry_for(rt, b, timeout_s=0.5)
    ids = {i.sandbox_id for i in Sandbox.list().next_items()}
    assert {ea.id, eb.id} <= ids
    info = Sandbox.get_info(ea.id)
    assert info.started_at == lifetime.ms_to_datetime(ea.started_ms)
    assert info.end_at == lifetime.ms_to_datetime(ea.deadline_ms)
    assert info.memory_mb == 512 and info.metadata == {"user": "a=b\nc"}
    t0 = rv.now_ms()
    Sandbox.set_timeout(ea.id, 120)
    end = Sandbox.get_info(ea.id).end_at
    assert abs(end.timestamp() * 1000 - (t0 + 120_000)) < 2000
    Sandbox.set_timeout(ea.address, 30)  # shortens; the agent's address (the old id) works too
    assert Sandbox.get_info(ea.id).end_at < end
    with pytest.raises(InvalidArgumentException, match="seconds > 0"):
        Sandbox.set_timeout(ea.id, -1)
    # b is past deadline + grace: the next look ends it.
    time.sleep(1.6)
    ids = {i.sandbox_id for i in Sandbox.list().next_items()}
    assert eb.id not in ids and ea.id in ids
    b.proc.wait(timeout=5)
    assert b.proc.returncode == -signal.SIGKILL
    assert not os.path.exists(eb.dir)
    # kill(id) from "another process": the VMM is stopped host-side, files removed.
    assert Sandbox.kill(ea.id) is True
    a.proc.wait(timeout=5)
    assert rv.keys(rt) == [] and not os.path.exists(ea.dir)
    assert Sandbox.kill(ea.id) is False


def test_keeper_cleans_up_after_the_vmm_and_enforces_the_deadline(rt, standins, monkeypatch):
    monkeypatch.setenv("CELLVM_DEADLINE_GRACE", "0.5")
    # 1. The VMM exits by itself (the guest's deadline): entry and files go.
    a = standins()
    ea = entry_for(rt, a, timeout_s=600)
    keeper = int(rv.cli("keep", ea.key, check=True).stdout)
    assert os.path.exists(f"/proc/{keeper}")
    os.kill(a.pid, signal.SIGTERM)
    a.proc.wait()
    deadline = time.monotonic() + 10
    while (rv.keys(rt) or os.path.exists(ea.dir)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rv.keys(rt) == [] and not os.path.exists(ea.dir)
    # 2. Past deadline + grace the keeper kills it, after a set_timeout moved it.
    b = standins()
    eb = entry_for(rt, b, timeout_s=600, holder_pid=1, holder_start=rv.proc_start(1))
    rv.cli("keep", eb.key, check=True)
    time.sleep(1.5)
    assert not b.gone()
    rv.cli("set-timeout", eb.key, "0.5", check=True)
    b.proc.wait(timeout=10)
    assert b.proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while rv.keys(rt) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rv.keys(rt) == [] and not os.path.exists(eb.dir)


def test_the_holder_of_a_channel_and_what_set_timeout_tells_the_guest(rt, standins):
    """`cellvm hold`: a serial channel (`unix:`) another live process holds
    is refused to this one (Sandbox.connect names that process), a release
    by anyone but the holder changes nothing, a dead holder holds nothing.
    `set-timeout --json` of a held sandbox leaves the guest to the holder
    and says what to send it: the timeout itself when the guest's clock is
    exact (the host's TSC frequency known, or KVM), else with TCG's slack."""
    holder, vmm = standins(), standins()
    e = entry_for(rt, vmm)
    rv.cli("hold", e.key, str(holder.pid), check=True)
    assert rv.find(e.key, rt)["held"] and rv.find(e.key, rt)["holder_pid"] == holder.pid
    with pytest.raises(SandboxException, match=f"in use by process {holder.pid}: its channel"):
        Sandbox.connect(e.id)
    r = rv.cli("hold", e.key, str(os.getpid()), rt=rt)
    assert r.returncode == 4 and f"in use by process {holder.pid}" in r.stderr
    rv.cli("hold", "--release", e.key, str(os.getpid()), check=True)  # not ours: no change
    assert rv.find(e.key, rt)["holder_pid"] == holder.pid
    on_kvm = entry_for(rt, standins(), accel="kvm", holder_pid=1, holder_start=rv.proc_start(1))
    for key, tsc, want in ((e.key, "2445000", 40_000), (e.key, "fast", 40_000 * 1.3 + 2000),
                           (on_kvm.key, "fast", 40_000)):
        r = rv.cli("set-timeout", "--json", key, "40", env={"CELLVM_TSC_KHZ": tsc})
        assert r.returncode == 0 and r.stderr == "", r.stderr  # held: no connection tried
        out = json.loads(r.stdout)
        assert out["held"] and abs(out["guest_timeout_ms"] - want) <= 1, (key, tsc, out)
        assert abs(out["deadline_ms"] - (rv.now_ms() + 40_000)) < 2000
    rv.cli("hold", "--release", e.key, str(holder.pid), check=True)
    assert not rv.find(e.key, rt)["held"]
    rv.cli("hold", e.key, str(holder.pid), check=True)
    holder.close()  # a holder that exited holds nothing
    assert not rv.find(e.key, rt)["held"]
    rv.cli("hold", e.key, str(os.getpid()), check=True)
    assert rv.find(e.key, rt)["holder_pid"] == os.getpid()


def test_limits_refused_with_e2b_style_errors_before_any_boot(rt, standins, monkeypatch):
    monkeypatch.setenv("CELLVM_MAX_TIMEOUT", "3600")
    with pytest.raises(InvalidArgumentException) as e:
        Sandbox.create(timeout=3601)
    assert "Timeout cannot be greater than 1 hours" in str(e.value)
    monkeypatch.setenv("CELLVM_MAX_SANDBOXES", "1")
    entry_for(rt, standins())
    with pytest.raises(RateLimitException) as e:
        Sandbox.create(timeout=60)
    assert "maximum number of concurrent sandboxes (1)" in str(e.value)
    assert "Rate limit exceeded" in str(e.value)


def test_runtime_dir_of_another_user_or_writable_by_others_is_refused(tmp_path, monkeypatch):
    d = tmp_path / "open"
    d.mkdir(mode=0o777)
    os.chmod(d, 0o777)
    monkeypatch.setenv("CELLVM_RUNTIME_DIR", str(d))
    with pytest.raises(SandboxException, match=str(d)):
        Sandbox.list().next_items()


def test_dev_mode_agent_keeps_its_lifetime_and_says_so(agent, caplog):
    """An agent not under cellvm-init: no deadline to set, and the SDK says so."""
    from cellvm import _wire
    lifetime._warned.clear()  # it warns once per sandbox and call: an earlier test may have
    with Sandbox.connect(agent.addr) as sbx:
        with caplog.at_level("WARNING"):
            sbx.set_timeout(60)
            Sandbox.set_timeout(agent.addr, 60)
        assert sum("dev mode" in r.message and "lifetime belongs to whoever started it" in r.message
                   for r in caplog.records) >= 1
        assert sbx.get_info().end_at is None
        with pytest.raises(_wire.AgentError) as e:
            sbx._conn.call(_wire.SET_DEADLINE, {"timeout_ms": 1000})
        assert e.value.code == "unsupported" and "dev mode" in e.value.message
        assert sbx.run_code("1 + 1").text == "2"  # still there


def cli(*args, env=None):
    return rv.cli(*args, env=env)


def test_cli_ps_kill_and_limits_on_the_same_registry(rt, standins):
    """The C CLI reads what the SDK wrote: ps lists it, kill stops its VMM
    (here a stand-in); run refuses past the limits before booting."""
    a, b = standins(), standins()
    ea, eb = entry_for(rt, a, timeout_s=90), entry_for(rt, b, timeout_s=3600)
    r = cli("ps")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:6] == ["KEY", "AGE", "LEFT", "VMM", "MEMORY", "STATE"]
    row = next(line for line in lines if line.startswith(ea.key)).split()
    assert row[2] in ("1m29s", "1m30s") and row[3:5] == ["qemu", str(a.pid)]
    assert row[5].endswith("M/512M") and row[6] == "running" and row[7] == ea.id == ea.key
    os.kill(b.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while open(f"/proc/{b.pid}/stat").read().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline, "the stand-in did not stop"
        time.sleep(0.01)  # the stop takes effect once it is scheduled
    assert "frozen" in next(line for line in cli("ps").stdout.splitlines() if line.startswith(eb.key))
    r = cli("kill", ea.key, "qemu-nope")
    assert r.returncode == 1 and f"killed {ea.key}" in r.stdout and "no live or paused sandbox qemu-nope" in r.stderr
    a.proc.wait(timeout=5)
    assert a.proc.returncode == -signal.SIGKILL and not os.path.exists(ea.dir)
    # Limits, refused before anything boots (E2B's wording): a timeout over the
    # maximum is a bad option (exit 2), the sandbox limit a refusal (exit 3).
    r = cli("run", "--timeout", "61", "--", "1", env={"CELLVM_MAX_TIMEOUT": "60"})
    assert r.returncode == 2 and "Timeout cannot be greater than 60 seconds" in r.stderr
    r = cli("run", "--", "1", env={"CELLVM_MAX_SANDBOXES": "1"})
    assert r.returncode == 3
    assert "maximum number of concurrent sandboxes (1)" in r.stderr
    r = cli("kill", "--all")
    assert r.returncode == 0 and f"killed {eb.key}" in r.stdout
    b.proc.wait(timeout=5)
    assert rv.keys(rt) == []


def test_cli_ps_lists_paused_records_and_skips_a_damaged_one(rt, tmp_path, monkeypatch):
    """The paused store as the SDK writes it (snapshot_format.Manifest, kind
    paused): ps lists each record, a manifest that does not read is reported
    and left alone, kill of a paused id removes its record only. (The real
    thing, a paused clone: test_snapshot_vm's
    test_the_cli_lists_a_paused_sandbox_and_kills_it.)"""
    import snapshot_format as snapshot
    root = tmp_path / "paused"
    monkeypatch.setenv(snapshot.PAUSED_DIR_ENV, str(root))
    started = int(time.time() * 1000) - 125_000
    for key, sid in (("qemu-aaaa", "sbx-one"), ("qemu-bbbb", "sbx-two")):
        d = root / key
        d.mkdir(parents=True)
        m = snapshot.Manifest(kind="paused", vmm="qemu", state="state", memory_mb=512,
                              sandbox_id=sid, registry_key=key, started_ms=started)
        (d / "manifest").write_text(m.to_text())
    (root / "qemu-bad").mkdir()
    (root / "qemu-bad" / "manifest").write_text("cellvm-snapshot 99\nnonsense\n")
    (root / "qemu-half.tmp").mkdir()  # a pause in progress: not listed
    r = cli("ps")
    assert r.returncode == 0, r.stderr
    rows = [ln.split() for ln in r.stdout.splitlines()[1:]]
    assert all(row[1] in ("2m05s", "2m06s") for row in rows), r.stdout  # AGE: since started
    assert [row[:1] + row[2:] for row in rows] == [
        ["qemu-aaaa", "-", "qemu", "-", "-/512M", "paused", "sbx-one"],
        ["qemu-bbbb", "-", "qemu", "-", "-/512M", "paused", "sbx-two"]], r.stdout
    assert f"paused sandbox {root}/qemu-bad is unreadable" in r.stderr
    r = cli("kill", "sbx-two")
    assert r.returncode == 0 and "killed qemu-bbbb (sbx-two, paused" in r.stdout, r.stderr
    assert sorted(os.listdir(root)) == ["lock", "qemu-aaaa", "qemu-bad", "qemu-half.tmp"]
    assert [i.sandbox_id for i in Sandbox.list().next_items()] == ["sbx-one"]


def test_another_process_vm_is_reached_by_its_id_and_by_its_address(rt, standins, agent):
    """A registry entry whose guest is the session's dev agent (its VMM a
    stand-in): connect, Sandbox(sandbox_id=...) (E2B 1.x), get_info, list
    and kill by the id (the key) work (set_timeout: the dev agent refuses a
    deadline; test_snapshot_vm has it), the agent's address (a
    VM's id before ids were keys) still connects, and every Sandbox says
    the key; an id nobody has is E2B's not-found."""
    vmm = standins()
    e = entry_for(rt, vmm, address=agent.addr, holder_pid=0)
    sid = e.key
    assert SANDBOX_ID.match(sid) and sid == e.id
    s = Sandbox.connect(sid)
    try:
        assert s.sandbox_id == sid and s.run_code("6 * 7").text == "42"
        assert s.get_info().sandbox_id == sid
        assert [i.sandbox_id for i in Sandbox.list().next_items()] == [sid]
    finally:
        s.close()
    old = Sandbox.connect(agent.addr)  # the old form: the agent's address
    try:
        assert old.sandbox_id == sid and old.run_code("1 + 1").text == "2"
    finally:
        old.close()
    e2b1 = Sandbox(sandbox_id=sid, api_key="e2b_unused")
    try:
        assert e2b1.sandbox_id == sid and e2b1.run_code("2 + 2").text == "4"
    finally:
        e2b1.close()
    assert Sandbox.get_info(sid).sandbox_id == sid
    assert Sandbox.kill(sid) is True
    vmm.proc.wait(timeout=5)
    assert rv.keys(rt) == []
    # (connect's is E2B's "Paused sandbox ... not found")
    for call in (Sandbox.connect, Sandbox.get_info, lambda i: Sandbox.set_timeout(i, 60)):
        with pytest.raises(SandboxNotFoundException, match=f"andbox {sid} not found"):
            call(sid)
    assert Sandbox.kill(sid) is False
    assert agent.proc.poll() is None  # the agent itself was never the target


def test_the_deadline_relay_runs_only_while_it_watches_a_sandbox(tmp_path):
    """The relay thread (lifetime.watch) stats each watched entry's file once
    per poll; with nothing left to watch it ends, and a later watch() starts
    another. In a process of its own: this one's sandboxes keep its relay."""
    entry = tmp_path / "entry"
    entry.write_text("{}")
    script = f"""
import sys, threading, time, types
sys.path.insert(0, {os.path.join(ROOT, "client", "python")!r})
from cellvm import lifetime
lifetime.RELAY_POLL_S = 0.02

class Held:  # what the relay reads of a Sandbox that holds a channel
    _killed = _closed = False
    _entry = types.SimpleNamespace(path={str(entry)!r}, deadline_ms=0)

def relays():
    return [t for t in threading.enumerate() if t.name == "cellvm-deadline-relay"]

def ends_within(seconds):
    deadline = time.monotonic() + seconds
    while relays() and time.monotonic() < deadline:
        time.sleep(0.01)
    return not relays()

assert not relays()
for _ in range(2):
    sbx = Held()
    lifetime.watch(sbx)
    assert len(relays()) == 1
    time.sleep(0.1)
    assert len(relays()) == 1, "still watching: still running"
    lifetime.unwatch(sbx)
    assert ends_within(2), "nothing to watch: ended"
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == "ok\n", r.stdout + r.stderr
