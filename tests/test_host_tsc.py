"""The host's TSC frequency the launchers give a TCG guest (client/c/host_tsc.c,
through `cellvm host-tsc`): measured right (against the host kernel's own
value), cached per host boot in the registry's runtime directory,
overridable. (The cache line's parser and the command-line rewrite are unit
tests: tests/c/test_client_host_tsc.c.)"""

import ctypes
import os
import platform
import re

import pytest

import registry_view as rv

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 hosts only")


def kernel_tsc_khz():
    """The host kernel's TSC frequency: from a perf_event mmap page (time_mult and
    time_shift, the kernel's TSC-to-ns conversion) where perf_event_open is
    allowed, else from its log (root). None if neither is readable."""
    try:
        return _perf_page_khz()
    except OSError:
        pass
    try:
        fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    # Best first: a refined calibration, the TSC's own, the processor's (the same
    # as the TSC's where the kernel takes it from CPUID: tsc_known_freq).
    found = {}
    kinds = ("Refined TSC clocksource calibration", "TSC", "processor")
    try:
        while True:
            try:
                rec = os.read(fd, 8192).decode(errors="replace")
            except BlockingIOError:
                break
            except BrokenPipeError:
                continue
            text = rec.split(";", 1)[-1].split("\n", 1)[0].strip()
            m = (re.fullmatch(r"tsc: (Refined TSC clocksource calibration): (\d+)\.(\d{3}) MHz", text)
                 or re.fullmatch(r"tsc: Detected (?:(\d+)\.(\d{3}) MHz )(TSC|processor)", text))
            if m and m.group(1).startswith("Refined"):
                found[kinds[0]] = int(m.group(2)) * 1000 + int(m.group(3))
            elif m:
                found[m.group(3)] = int(m.group(1)) * 1000 + int(m.group(2))
    finally:
        os.close(fd)
    return next((found[k] for k in kinds if k in found), None)


def _perf_page_khz():
    libc = ctypes.CDLL(None, use_errno=True)
    attr = bytearray(128)
    attr[0:4] = (1).to_bytes(4, "little")          # type PERF_TYPE_SOFTWARE
    attr[4:8] = (128).to_bytes(4, "little")        # size
    attr[8:16] = (9).to_bytes(8, "little")         # PERF_COUNT_SW_DUMMY
    buf = (ctypes.c_char * 128).from_buffer(attr)
    fd = libc.syscall(298, buf, 0, -1, -1, 0)      # perf_event_open(attr, self, any CPU)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "perf_event_open")
    import mmap
    try:
        page = mmap.mmap(fd, mmap.PAGESIZE, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    caps = int.from_bytes(page[40:48], "little")
    shift = int.from_bytes(page[50:52], "little")
    mult = int.from_bytes(page[52:56], "little")
    page.close()
    if not caps & (1 << 3) or mult == 0:           # cap_user_time
        raise OSError(0, "no cap_user_time")
    return round((1 << shift) / mult * 1e6)


def host_tsc(*args, rt=None, env=None):
    r = rv.cli("host-tsc", *args, rt=rt, env=env)
    return r.returncode, r.stdout.strip(), r.stderr


def test_the_measurement_agrees_with_the_kernels_value():
    kernel = kernel_tsc_khz()
    if kernel is None:
        pytest.skip("neither a perf_event page nor the kernel log is readable here")
    rc, out, err = host_tsc("--measure", env={"CELLVM_TSC_KHZ": ""})
    assert rc == 0, err
    assert abs(int(out) - kernel) / kernel < 5e-4, (out, kernel)


def test_khz_is_cached_per_host_boot(tmp_path, monkeypatch):
    monkeypatch.delenv("CELLVM_TSC_KHZ", raising=False)
    rt = tmp_path / "run"
    rc, first, err = host_tsc(rt=rt)
    assert rc == 0, err
    cache = rt / "host-tsc"
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    assert cache.read_text() == f"cellvm-host-tsc 1 {boot} {first}\n"
    # Another process reads it, not measuring: a value no measurement here gives.
    cache.write_text(f"cellvm-host-tsc 1 {boot} 2345678\n")
    assert host_tsc(rt=rt)[:2] == (0, "2345678")
    # A cache of another boot of the host, or a damaged one, is measured anew.
    for text in (f"cellvm-host-tsc 1 {boot[:-1]}x 2345678\n", "garbage\n",
                 f"cellvm-host-tsc 1 {boot} 12\n"):
        cache.write_text(text)
        rc, khz, err = host_tsc(rt=rt)
        assert rc == 0 and khz != "2345678" and abs(int(khz) - int(first)) / int(first) < 5e-4
        assert cache.read_text() == f"cellvm-host-tsc 1 {boot} {khz}\n"


def test_the_override(tmp_path):
    assert host_tsc(rt=tmp_path, env={"CELLVM_TSC_KHZ": "2445000"})[:2] == (0, "2445000")
    assert not (tmp_path / "host-tsc").exists()  # nothing measured, nothing cached
    for bad in ("2.4e6", "99", "-2445000", "fast"):
        rc, out, err = host_tsc(rt=tmp_path, env={"CELLVM_TSC_KHZ": bad})
        assert (rc, out) == (3, "") and "CELLVM_TSC_KHZ" in err, (bad, err)
