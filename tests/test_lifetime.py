"""The registry of live sandboxes and the host side of their lifetime,
without booting: the VMM is a stand-in process (`sleep`), since what is
tested here is the registry's bookkeeping (locking, sweeps, pid identity,
limits, the keeper), which a real boot would only make slower. The same
code paths with real QEMU are in tests/test_lifetime_vm.py.
"""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "client", "python"))

from cellvm import Sandbox, lifetime, registry  # noqa: E402
from cellvm.exceptions import (InvalidArgumentException, RateLimitException,  # noqa: E402
                               SandboxException, SandboxNotFoundException)

CLI = os.path.join(os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build")), "cellvm")


@pytest.fixture
def rt(tmp_path, monkeypatch):
    path = tmp_path / "rt"
    monkeypatch.setenv("CELLVM_RUNTIME_DIR", str(path))
    monkeypatch.delenv("CELLVM_ADDR", raising=False)
    return registry.Registry(str(path))


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


def entry_for(reg, vmm, timeout_s=60, address=None, ident=None, **kw):
    """An entry as the SDK writes one: its id is its key (`ident`: another
    id, as older writers gave, the agent's address)."""
    now = registry.now_ms()
    key = reg.new_key("qemu")
    e = registry.Entry(key=key, id=ident or key, vmm="qemu",
                       pid=vmm.pid, pid_start=registry.proc_start_time(vmm.pid),
                       started_ms=now, deadline_ms=now + int(timeout_s * 1000),
                       address=address or f"unix:{vmm.dir}/agent.sock", dir=vmm.dir,
                       memory_mb=512, vcpus=1, accel="tcg", metadata={"user": "a=b\nc"}, **kw)
    reg.write(e)
    return e


def test_entry_round_trip_and_damaged_entries_are_removed_untrusted(rt, standins, caplog):
    vmm = standins()
    e = entry_for(rt, vmm)
    assert rt.read(e.key) == e  # metadata with '=' and a newline survives (JSON)
    with open(os.path.join(rt.path, e.key + ".sandbox")) as f:
        text = f.read()
    assert text.startswith("cellvm-sandbox 1\n") and f"\npid={vmm.pid}\n" in text
    # Damaged: wrong header, garbage number, a key that is not the file's, truncated.
    victim = standins()
    bad = {
        "qemu-00000001": "not a registry file\n",
        "qemu-00000002": text.replace(f"key={e.key}", "key=qemu-00000002").replace(
            f"pid={vmm.pid}\n", "pid=12x\n"),
        "qemu-00000003": text.replace(f"pid={vmm.pid}\n", f"pid={victim.pid}\n"),  # key mismatch
        "qemu-00000004": text[:40],
    }
    for key, body in bad.items():
        with open(os.path.join(rt.path, key + ".sandbox"), "w") as f:
            f.write(body)
    with caplog.at_level("WARNING"):
        live = rt.sweep()
    assert [x.key for x in live] == [e.key]
    assert sorted(k for k in rt.keys()) == [e.key]
    assert sum("damaged entry" in r.message for r in caplog.records) == 4
    assert not victim.gone()  # a pid named by a damaged entry is never signalled


def test_reused_pid_is_not_killed_and_the_entry_is_removed(rt, standins, caplog):
    """An entry whose pid is now an unrelated process (other start time),
    even far past its deadline, is stale: removed, that process untouched."""
    unrelated = standins()
    e = entry_for(rt, unrelated, timeout_s=-3600)
    e.pid_start -= 7  # the VMM that had this pid started at another time
    rt.write(e)
    with caplog.at_level("WARNING"):
        assert rt.sweep() == []
    assert not unrelated.gone()
    assert rt.keys() == []
    assert not os.path.exists(e.dir)  # its files went with it
    assert any("stale entry" in r.message for r in caplog.records)
    # Killing by id: nothing live has that id now, nothing is signalled.
    assert Sandbox.kill(e.id) is False
    assert not unrelated.gone()


def test_list_get_info_kill_of_another_process_sandbox_and_host_enforcement(rt, standins, monkeypatch):
    """Sandbox.list() shows what the registry holds (another process's VM),
    get_info() has its started_at/end_at, set_timeout() moves end_at, and the
    first list() after deadline + grace kills its VMM."""
    monkeypatch.setenv("CELLVM_DEADLINE_GRACE", "1")
    a, b = standins(), standins()
    ea = entry_for(rt, a, timeout_s=60, holder_pid=1)
    eb = entry_for(rt, b, timeout_s=0.5)
    ids = {i.sandbox_id for i in Sandbox.list().next_items()}
    assert {ea.id, eb.id} <= ids
    info = Sandbox.get_info(ea.id)
    assert info.started_at == lifetime.ms_to_datetime(ea.started_ms)
    assert info.end_at == lifetime.ms_to_datetime(ea.deadline_ms)
    assert info.memory_mb == 512 and info.metadata == {"user": "a=b\nc"}
    # set_timeout from here: recorded (the guest is reached by its holder;
    # holder pid 1 stands for a live holder, so no connection is tried).
    ea.holder_start = registry.proc_start_time(1)
    rt.write(ea)
    t0 = registry.now_ms()
    Sandbox.set_timeout(ea.id, 120)
    end = Sandbox.get_info(ea.id).end_at
    assert abs(end.timestamp() * 1000 - (t0 + 120_000)) < 2000
    Sandbox.set_timeout(ea.address, 30)  # shortens; the agent's address (the old id) works too
    assert Sandbox.get_info(ea.id).end_at < end
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
    assert rt.keys() == [] and not os.path.exists(ea.dir)
    assert Sandbox.kill(ea.id) is False


def test_keeper_cleans_up_after_the_vmm_and_enforces_the_deadline(rt, standins, monkeypatch):
    monkeypatch.setenv("CELLVM_DEADLINE_GRACE", "0.5")
    # 1. The VMM exits by itself (the guest's deadline): entry and files go.
    a = standins()
    ea = entry_for(rt, a, timeout_s=600)
    keeper = registry.start_keeper(rt, ea.key, sys.executable)
    assert registry.proc_start_time(keeper) is not None
    os.kill(a.pid, signal.SIGTERM)
    a.proc.wait()
    deadline = time.monotonic() + 10
    while (rt.keys() or os.path.exists(ea.dir)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rt.keys() == [] and not os.path.exists(ea.dir)
    # 2. Past deadline + grace the keeper kills it, after a set_timeout moved it.
    b = standins()
    eb = entry_for(rt, b, timeout_s=600)
    registry.start_keeper(rt, eb.key, sys.executable)
    time.sleep(1.5)
    assert not b.gone()
    rt.set_deadline(eb.key, registry.now_ms() + 500)
    b.proc.wait(timeout=10)
    assert b.proc.returncode == -signal.SIGKILL
    deadline = time.monotonic() + 5
    while rt.keys() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rt.keys() == [] and not os.path.exists(eb.dir)


CREATOR = textwrap.dedent("""
    import os, subprocess, sys, time
    sys.path.insert(0, {client!r})
    from cellvm import lifetime, registry

    class FakeVM:  # a stand-in for QEMU: what the registry records of a VM
        def __init__(self):
            self.proc = subprocess.Popen(["sleep", "600"], start_new_session=True,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.pid, self.address, self.dir = self.proc.pid, f"unix:/nonexistent/{{self.proc.pid}}", ""
            self.memory_mb, self.vcpus, self.accel = 256, 1, "tcg"

    reg = registry.Registry()
    made, refused = [], 0
    for i in range(int(sys.argv[1])):
        try:
            with reg.lock():  # what launch.create_sandbox holds: limits, start, record
                reg.check_limits(60)
                vm = FakeVM()
                made.append(lifetime.record(reg, vm, 0, 60))
        except registry.LimitExceeded as e:
            assert e.kind == "sandboxes", e
            refused += 1
    print(len(made), refused, flush=True)
""")


def test_concurrent_creators_keep_the_registry_consistent_and_the_limit(rt, monkeypatch, tmp_path):
    """Two processes create 12 stand-in VMs each at once, with a limit of
    16: exactly 16 are recorded, 8 refused, every entry parses and names a
    distinct live process."""
    monkeypatch.setenv("CELLVM_MAX_SANDBOXES", "16")
    script = tmp_path / "creator.py"
    script.write_text(CREATOR.format(client=os.path.join(ROOT, "client", "python")))
    procs = [subprocess.Popen([sys.executable, str(script), "12"], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    made = sum(int(o[0]) for o in outs)
    refused = sum(int(o[1]) for o in outs)
    try:
        assert (made, refused) == (16, 8)
        live = rt.entries(enforce=False)
        assert len(live) == 16 and len({e.pid for e in live}) == 16
        assert all(e.id == e.key and SANDBOX_ID.match(e.id) for e in live)  # the id is the key
        assert all(e.vmm_alive() for e in live)
        assert not [n for n in os.listdir(rt.path) if ".tmp-" in n]
    finally:
        for e in rt.entries(enforce=False):
            registry.kill_vmm(e)
            rt.forget(e.key)


def test_limits_refused_with_e2b_style_errors_before_any_boot(rt, standins, monkeypatch):
    monkeypatch.setenv("CELLVM_MAX_TIMEOUT", "3600")
    with pytest.raises(InvalidArgumentException) as e:
        Sandbox.create(timeout=3601)
    assert str(e.value).startswith("Timeout cannot be greater than 1 hours")
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
    with pytest.raises(PermissionError):
        registry.runtime_dir()


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
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **(env or {})))


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
    # Limits, refused before anything boots (exit 3, E2B's wording).
    r = cli("run", "--timeout", "61", "--", "1", env={"CELLVM_MAX_TIMEOUT": "60"})
    assert r.returncode == 3 and "Timeout cannot be greater than 60 seconds" in r.stderr
    r = cli("run", "--", "1", env={"CELLVM_MAX_SANDBOXES": "1"})
    assert r.returncode == 3
    assert "maximum number of concurrent sandboxes (1)" in r.stderr
    r = cli("kill", "--all")
    assert r.returncode == 0 and f"killed {eb.key}" in r.stdout
    b.proc.wait(timeout=5)
    assert rt.keys() == []


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


def fake_vm(standin, address="unix:/nonexistent/agent.sock"):
    """What lifetime.record reads of a started VM."""
    return types.SimpleNamespace(pid=standin.pid, address=address, dir=standin.dir, vmm="qemu",
                                 memory_mb=256, vcpus=1, accel="tcg")


def test_the_sdk_records_its_key_as_the_id_and_keeps_a_paused_sandboxs_key(
        rt, standins, tmp_path, monkeypatch):
    """lifetime.record: the entry's id is its key, `<vmm>-<8 hex>`; a new
    key is never one a paused sandbox has (it takes it back when it
    resumes: pause.resume records `key=`), and a key that is live is refused."""
    import snapshot_format as snapshot
    paused = tmp_path / "paused"
    monkeypatch.setenv(snapshot.PAUSED_DIR_ENV, str(paused))
    (paused / "qemu-0000aaaa").mkdir(parents=True)  # a paused sandbox's record
    draws = iter(["0000aaaa", "0000bbbb"])
    monkeypatch.setattr(registry.secrets, "token_hex", lambda n: next(draws))
    e = lifetime.record(rt, fake_vm(standins()), 0, 60, keeper=False)
    assert e.key == e.id == "qemu-0000bbbb" and SANDBOX_ID.match(e.id)
    assert rt.read(e.key).id == e.key  # as written: `id=<key>`, what `cellvm ps` shows
    back = lifetime.record(rt, fake_vm(standins()), 0, 60, keeper=False, key="qemu-0000aaaa")
    assert back.key == back.id == "qemu-0000aaaa"
    with pytest.raises(SandboxException, match="qemu-0000aaaa is running already"):
        lifetime.record(rt, fake_vm(standins()), 0, 60, keeper=False, key="qemu-0000aaaa")
    assert sorted(rt.keys()) == ["qemu-0000aaaa", "qemu-0000bbbb"]


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
    assert rt.keys() == []
    for call in (Sandbox.connect, Sandbox.get_info, lambda i: Sandbox.set_timeout(i, 60)):
        with pytest.raises(SandboxNotFoundException, match=f"Sandbox {sid} not found"):
            call(sid)
    assert Sandbox.kill(sid) is False
    assert agent.proc.poll() is None  # the agent itself was never the target
