"""The guest's clocks and generations in the real micro-VM (the session's boot,
conftest.vm_sandbox): under TCG the launcher tells the guest kernel this
host's TSC frequency, so the guest's time.time() and time.monotonic() advance
at the host's rate (issue 11: within 0.5 % over 20 s of host time); and
SNAPSHOT_PREPARE / NEW_GENERATION do their work in a real guest (root agent
under cellvm-init: the clock is set, the entropy credited)."""

import os
import secrets
import time

import pytest

import registry_view
from cellvm import _wire

WINDOW_S = 20.0
RATE_TOLERANCE = 0.005


@pytest.fixture(scope="module")
def sbx(vm_sandbox):
    """The session's Sandbox; cells run in a context of this module's
    (`ctx`), so the default context stays untouched for test_vm_e2e."""
    ctx = vm_sandbox.create_code_context()
    vm_sandbox.clock_ctx = ctx
    yield vm_sandbox
    vm_sandbox.remove_code_context(ctx)


def guest_clocks(sbx, tries=3):
    """(host_mid_ns, guest_time_ns, guest_monotonic_ns, host_rtt_ns): the guest's
    clocks read in a cell, and the host's CLOCK_MONOTONIC at the middle of the
    quickest of `tries` round trips (the guest read them somewhere inside it).
    The host's monotonic clock, not its realtime one: a step of the host's
    clock (by anything on this machine) during the window is not the guest's rate."""
    best = None
    for _ in range(tries):
        h0 = time.monotonic_ns()
        ex = sbx.run_code("import time; print(time.time_ns(), time.monotonic_ns())",
                          context=sbx.clock_ctx, timeout=60)
        h1 = time.monotonic_ns()
        assert ex.error is None, ex.error
        g_time, g_mono = map(int, "".join(ex.logs.stdout).split())
        if best is None or h1 - h0 < best[3]:
            best = ((h0 + h1) // 2, g_time, g_mono, h1 - h0)
    return best


def test_the_tcg_guest_is_told_this_hosts_tsc_frequency(sbx):
    if sbx.vm.accel != "tcg":
        pytest.skip("under KVM the guest has kvm-clock; tsc_early_khz is TCG's")
    with open(f"/proc/{sbx.vmm_pid}/cmdline", "rb") as f:
        append = f.read().split(b"\0")
    cmdline = append[append.index(b"-append") + 1].decode()
    (khz,) = [int(w.split("=", 1)[1]) for w in cmdline.split() if w.startswith("tsc_early_khz=")]
    host = registry_view.host_tsc_khz()  # the C side's measurement (cellvm host-tsc)
    assert abs(khz - host) <= host // 1000, (khz, host)
    # Without it the clocksource watchdog may judge the TSC by jiffies, which lag on a
    # busy host, and switch to them (seen: refined-jiffies, the clock 4 % slow).
    assert "tsc=reliable" in cmdline.split()
    # The TSC is the guest's clocksource, still (the kernel log, which says it kept the
    # value: no "Refined TSC clocksource calibration", is not readable here: `quiet`,
    # and dmesg_restrict without CAP_SYSLOG; docs/VMM.md quotes a boot with
    # loglevel=7). That the kernel uses the value is what the next test measures.
    r = sbx.commands.run("cat /sys/devices/system/clocksource/clocksource0/current_clocksource",
                         timeout=60)
    assert r.stdout.strip() == "tsc", r.stdout


def test_the_tcg_guest_kernel_copies_without_rep_movsb(sbx):
    """TCG runs `rep movsb` a byte an iteration: the image's cmdline_tcg clears ERMS,
    so the kernel's copies to and from user memory take its `rep movsq` routine
    (docs/IMAGE.md; bench/egress.py measured it)."""
    if sbx.vm.accel != "tcg":
        pytest.skip("under KVM the host's CPU copies fast with ERMS; clearcpuid is TCG's")
    with open(f"/proc/{sbx.vmm_pid}/cmdline", "rb") as f:
        append = f.read().split(b"\0")
    assert "clearcpuid=erms" in append[append.index(b"-append") + 1].decode().split()
    flags = sbx.commands.run("grep -m1 '^flags' /proc/cpuinfo", timeout=60).stdout.split()
    assert "rep_good" in flags and "erms" not in flags, flags


def test_guest_clocks_advance_at_the_hosts_rate(sbx):
    """20 s of host time: the guest's realtime and monotonic clocks move by the
    same amount within 0.5 % (with the image's old fixed 2 GHz on this 2.1 GHz
    host they ran 5 % fast; 22 % on a 2.445 GHz one)."""
    h_a, t_a, m_a, rtt_a = guest_clocks(sbx)
    time.sleep(WINDOW_S)
    h_b, t_b, m_b, rtt_b = guest_clocks(sbx)
    host = h_b - h_a
    realtime_rate, monotonic_rate = (t_b - t_a) / host, (m_b - m_a) / host
    detail = (f"host {host / 1e9:.3f} s, guest realtime x{realtime_rate:.5f}, monotonic "
              f"x{monotonic_rate:.5f}, round trips {rtt_a / 1e6:.1f} and {rtt_b / 1e6:.1f} ms")
    print(detail)
    assert abs(realtime_rate - 1) < RATE_TOLERANCE, detail
    assert abs(monotonic_rate - 1) < RATE_TOLERANCE, detail


def test_snapshot_prepare_and_new_generation_in_the_guest(sbx):
    conn = sbx._conn
    before = conn.call(_wire.HELLO, {"protocol": 1})
    assert before["awaiting_generation"] is False
    ended = conn.call(_wire.SNAPSHOT_PREPARE, {})
    assert ended == {"generation": before["generation"]}
    assert conn.call(_wire.HELLO, {"protocol": 1})["awaiting_generation"] is True
    with pytest.raises(_wire.AgentError) as refused:
        conn.call(_wire.EXECUTE, {"code": "1 + 1"}, timeout=60)
    assert refused.value.code == "no_generation"
    # Step the guest's clock away first, so that NEW_GENERATION has to set it.
    conn.call(_wire.SET_TIME, {"realtime_ns": time.time_ns() - 3600 * 10**9})
    generation = secrets.randbits(62) + before["generation"] + 1
    sent = time.time_ns()
    ok = conn.call(_wire.NEW_GENERATION, {"generation": generation, "entropy": os.urandom(64),
                                          "realtime_ns": sent}, timeout=60)
    assert ok == {"generation": generation, "credited_bits": 512, "clock_set": True}, ok
    # The guest's clock is the host's again, behind by the request's transit only
    # (issue 11: within 50 ms right after a restore): a PING's time_ns against the
    # middle of the quickest of five round trips.
    pings = []
    for _ in range(5):
        h0 = time.time_ns()
        guest = conn.call(_wire.PING, {})["time_ns"]
        h1 = time.time_ns()
        pings.append((h1 - h0, guest - (h0 + h1) // 2))
    rtt, offset = min(pings)
    print(f"guest clock after NEW_GENERATION: {offset / 1e6:+.2f} ms (round trip {rtt / 1e6:.2f} ms)")
    assert abs(offset) < 50_000_000, pings
    hello = conn.call(_wire.HELLO, {"protocol": 1})
    assert (hello["generation"], hello["awaiting_generation"]) == (generation, False)
    # The guest serves again, and this live context reseeded before this cell
    # (what that costs a copy's first cell, under TCG: printed).
    ex = sbx.run_code("import cellvm_reseed, timeit\n"
                      "print(cellvm_reseed.reseeded_at[-1] == cellvm_reseed.epoch)\n"
                      "print(min(timeit.repeat(cellvm_reseed.reseed, number=20, repeat=3)) / 20)",
                      context=sbx.clock_ctx, timeout=60)
    lines = "".join(ex.logs.stdout).split()
    assert ex.error is None and lines[0] == "True", ex
    print(f"a reseed in the guest: {float(lines[1]) * 1e3:.2f} ms")
