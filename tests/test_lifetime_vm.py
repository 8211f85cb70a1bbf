"""Sandbox lifetime with real QEMU booting the real image (three boots, each
to the agent's HELLO only: wait_ready=False).

1. Guest side: a program creates a sandbox with timeout=20 and is SIGKILLed;
   the keeper's host-side enforcement is pushed out of reach (grace 600 s),
   and no other cellvm process runs: the guest's init ends the machine, QEMU
   exits, the keeper removes the registry entry and the temp directory.
2. Across processes: a program creates a detached sandbox; while it holds
   the channel this process lists it, reads get_info(), is refused a second
   connection and extends the timeout (the creator relays it to the guest);
   the creator closes its connection and this process connects and runs
   code; the creator exits normally (the sandbox outlives it); this process
   shortens the timeout (the guest's init logs each new deadline) and kills it.
3. Host side: the guest is frozen (SIGSTOP of QEMU: the vCPUs stop, as with
   QMP `stop`; this QEMU command line has no QMP socket) and its keeper is
   SIGKILLed too, so only "the next cellvm process that looks" can act: the
   first `cellvm ps` after deadline + grace kills it.
"""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import IMAGE, build_image_or_skip, process_gone, qemu_pids

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENT = os.path.join(ROOT, "client", "python")
sys.path.insert(0, CLIENT)
CLI = os.path.join(os.environ.get("CELLVM_BUILD", os.path.join(ROOT, "build")), "cellvm")

import registry_view as rv  # noqa: E402
from cellvm import Sandbox  # noqa: E402
from cellvm.exceptions import SandboxException  # noqa: E402

CREATOR = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {client!r})
    from cellvm import Sandbox, host
    s = Sandbox.create({image!r}, timeout={timeout}, wait_ready=False, detach=True,
                       metadata={{"who": "creator"}})
    e = host.find(s.sandbox_id)
    print(s.sandbox_id, s.vmm_pid, e["key"], e["dir"], e["keeper_pid"], flush=True)
    while {linger}:  # SIGKILLed here, or told to close / exit (normally: atexit runs)
        if sys.stdin.readline().strip() != "close":
            break
        s.close()
        print("closed", flush=True)
""")


@pytest.fixture
def rt(tmp_path, monkeypatch):
    path = tmp_path / "rt"
    monkeypatch.setenv("CELLVM_RUNTIME_DIR", str(path))
    monkeypatch.delenv("CELLVM_ADDR", raising=False)
    return str(path)


def start_creator(tmp_path, timeout, linger, env=None):
    build_image_or_skip()
    script = tmp_path / "creator.py"
    script.write_text(CREATOR.format(client=CLIENT, image=IMAGE, timeout=timeout, linger=linger))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            stdin=subprocess.PIPE, env=dict(os.environ, **(env or {})))
    line = proc.stdout.readline().split()
    assert len(line) == 5, (line, proc.wait())
    sid, pid, key, vmdir, keeper = line
    return proc, sid, int(pid), key, vmdir, int(keeper)


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def runtime_dir(pid):
    """The $CELLVM_RUNTIME_DIR process `pid` runs with (None: none, or unreadable)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
    except OSError:
        return None
    for kv in env:
        if kv.startswith(b"CELLVM_RUNTIME_DIR="):
            return kv.split(b"=", 1)[1].decode(errors="replace")
    return None


def cellvm_processes(registry_dir):
    """Processes that could act on this registry now: its keepers (they name
    it) and this checkout's CLI. (Other registries' keepers, e.g. the
    session VM's, cannot.)"""
    found = []
    for p in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if registry_dir.encode() in cmd:
            found.append((int(p), cmd))
        elif cmd.split(b"\0")[0] == CLI.encode() and runtime_dir(p) == registry_dir:
            found.append((int(p), cmd))  # a CLI of another registry cannot act on this one
    return found


def test_guest_ends_itself_at_the_deadline_after_its_creator_was_killed(rt, tmp_path):
    # The keeper inherits the grace: 600 s puts the host's own kill out of reach.
    proc, sid, qemu, key, vmdir, keeper = start_creator(
        tmp_path, 20, True, env={"CELLVM_DEADLINE_GRACE": "600"})
    created = time.monotonic()
    e = rv.find(key, rt)
    assert e is not None and e["sandbox_id"] == sid == key and e["pid"] == qemu
    assert e["metadata"] == {"who": "creator"}
    assert abs((e["deadline_ms"] - rv.now_ms()) / 1000 - 20) < 3
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert qemu in qemu_pids() and os.path.isdir(vmdir)
    # From here only the guest and the keeper (grace 600 s: it only cleans up) act.
    assert [pid for pid, _ in cellvm_processes(rt)] == [keeper]
    # Nothing of ours looks meanwhile: this test only reads /proc and the disk.
    # The guest's own deadline is the timeout: its clock keeps the host's rate
    # (guest_ms below); 30 s for its orderly shutdown under TCG.
    wait_for(lambda: process_gone(qemu), 20 + 30,
             f"QEMU {qemu} still runs {time.monotonic() - created:.0f} s after create")
    ended = time.monotonic() - created
    assert 20 * 0.9 <= ended <= 20 + 30, ended
    wait_for(lambda: process_gone(keeper), 10, "the keeper did not exit")
    assert not os.path.exists(vmdir)
    # Left: the registry's lock, the host's TSC frequency cached for this host
    # boot (host_tsc) and QEMU's version (snapshot_qemu.c), none of them the sandbox's.
    left = sorted(n for n in os.listdir(rt) if not n.startswith("vmm-version-"))
    assert rv.keys(rt) == [] and left in (["lock"], ["host-tsc", "lock"])
    assert cellvm_processes(rt) == []


def deadlines_said(vmdir):
    """The deadlines the guest's init logged as set by the agent, in ms."""
    with open(os.path.join(vmdir, "console.log"), errors="replace") as f:
        text = f.read()
    return [int(ms) for ms in re.findall(r"deadline in (\d+) ms \(set by the agent\)", text)]


def guest_timeout_ms(accel):
    """The guest's own deadline (ms) for a timeout of s seconds (docs/SDK.md,
    "Lifetime"): the timeout itself when its clock keeps the host's rate
    (KVM, or TCG told this host's TSC frequency), else with TCG's slack."""
    if accel == "kvm" or rv.cli("host-tsc").returncode == 0:
        return lambda s: s * 1000
    return lambda s: s * 1300 + 2000


def test_second_process_lists_connects_times_out_and_kills(rt, tmp_path):
    proc, sid, qemu, key, vmdir, keeper = start_creator(tmp_path, 60, True)
    guest_ms = guest_timeout_ms(rv.find(key, rt)["accel"])
    try:
        # A cold boot's id is its registry key too: a DNS label, `cellvm ps`'s KEY and SANDBOX ID.
        assert re.fullmatch(r"qemu-[0-9a-f]{8}", sid) and sid == key
        r = subprocess.run([CLI, "ps"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        row = next(ln.split() for ln in r.stdout.splitlines()[1:] if ln.startswith(sid))
        assert row[0] == row[-1] == sid and row[4] == str(qemu), r.stdout
        infos = {i.sandbox_id: i for i in Sandbox.list().next_items()}
        assert sid in infos and infos[sid].metadata == {"who": "creator"}
        info = Sandbox.get_info(sid)
        assert abs((info.end_at - info.started_at).total_seconds() - 60) < 0.01
        # While the creator holds QEMU's serial channel: no second client, but
        # set_timeout is recorded here and relayed to the guest by the creator.
        with pytest.raises(SandboxException, match="in use by process"):
            Sandbox.connect(sid)
        t0 = time.time()
        Sandbox.set_timeout(sid, 200)
        end = Sandbox.get_info(sid).end_at.timestamp()
        assert t0 + 199 <= end <= time.time() + 200
        wait_for(lambda: len(deadlines_said(vmdir)) == 2, 60, "the creator did not relay it")
        # The creator closes its connection: the channel is free for us.
        proc.stdin.write("close\n")
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == "closed"
        # E2B's connect only extends: 100 s is less than what is left, the end stays.
        sbx = Sandbox.connect(sid, timeout=100)
        assert sbx.run_code("6 * 7").text == "42"
        # The creator exits normally: detached, the sandbox outlives it.
        proc.stdin.write("exit\n")
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
        assert not process_gone(qemu)
        assert sbx.run_code("6 * 8").text == "48"
        assert sbx.get_info().end_at.timestamp() == end
        sbx.set_timeout(40)  # shortens, over this process's own connection
        assert abs(Sandbox.get_info(sid).end_at.timestamp() - (time.time() + 40)) < 2
        wait_for(lambda: len(deadlines_said(vmdir)) == 3, 60, "init did not log three deadlines")
        said = deadlines_said(vmdir)
        # create's own (60 s), the relayed 200 s (less the relay's delay), then 40 s.
        assert abs(said[0] - guest_ms(60)) < 100, said
        assert guest_ms(200) - 5000 < said[1] <= guest_ms(200), said
        assert abs(said[2] - guest_ms(40)) < 100, said
        # A second process's kill: QEMU, entry, files gone.
        assert Sandbox.kill(sid) is True
        wait_for(lambda: process_gone(qemu), 10, "QEMU survived kill")
        assert not os.path.exists(vmdir) and rv.keys(rt) == []
        assert sid not in {i.sandbox_id for i in Sandbox.list().next_items()}
        wait_for(lambda: process_gone(keeper), 10, "the keeper did not exit")
    finally:
        proc.kill()
        if not process_gone(qemu):
            os.kill(qemu, signal.SIGKILL)


def test_frozen_guest_is_killed_by_the_first_cellvm_ps_after_deadline_and_grace(rt, tmp_path):
    grace = 3
    proc, sid, qemu, key, vmdir, keeper = start_creator(tmp_path, 8, False)
    assert proc.wait(timeout=30) == 0  # detached: its exit leaves the sandbox running
    try:
        os.kill(keeper, signal.SIGKILL)  # the host side's helper is gone too
        os.kill(qemu, signal.SIGSTOP)    # the guest cannot act
        end = rv.find(key, rt)["deadline_ms"] / 1000
        time.sleep(max(0, end + grace + 1 - time.time()))
        assert not process_gone(qemu)  # nobody looked yet
        r = subprocess.run([CLI, "ps"], capture_output=True, text=True, timeout=30,
                           env=dict(os.environ, CELLVM_DEADLINE_GRACE=str(grace)))
        assert r.returncode == 0, r.stderr
        assert "past its deadline" in r.stderr and key in r.stderr
        assert key not in r.stdout
        wait_for(lambda: process_gone(qemu), 5, "cellvm ps did not kill the frozen VM")
        assert not os.path.exists(vmdir) and rv.keys(rt) == []
    finally:
        if not process_gone(qemu):
            os.kill(qemu, signal.SIGKILL)
