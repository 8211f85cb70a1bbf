"""The host's TSC frequency the launchers give a TCG guest (cellvm.host_tsc,
client/c/host_tsc.c): measured right (against the host kernel's own value),
cached per host boot in a file the SDK and the CLI share, overridable."""

import ctypes
import os
import platform
import re
import subprocess
import sys

import pytest

from cellvm import host_tsc
from test_vm_qemu_fake import CLI, IMAGE, fake_qemu, launches  # noqa: F401 - the fixture

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


def test_the_measurement_agrees_with_the_kernels_value():
    kernel = kernel_tsc_khz()
    if kernel is None:
        pytest.skip("neither a perf_event page nor the kernel log is readable here")
    measured = host_tsc.measure_khz()
    assert measured is not None
    assert abs(measured - kernel) / kernel < 5e-4, (measured, kernel)


def test_khz_is_cached_per_host_boot(tmp_path, monkeypatch):
    monkeypatch.setenv("CELLVM_RUNTIME_DIR", str(tmp_path))
    monkeypatch.delenv("CELLVM_TSC_KHZ", raising=False)
    monkeypatch.setattr(host_tsc, "_known", None)
    first = host_tsc.khz()
    cache = tmp_path / host_tsc.CACHE_NAME
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    assert cache.read_text() == f"cellvm-host-tsc 1 {boot} {first}\n"
    # Another process reads it: no measurement (it would fail here).
    monkeypatch.setattr(host_tsc, "_known", None)
    monkeypatch.setattr(host_tsc, "measure_khz", lambda *a, **k: pytest.fail("measured again"))
    assert host_tsc.khz() == first
    # A cache of another boot of the host, or a damaged one, is measured anew.
    for text in (f"cellvm-host-tsc 1 {boot[:-1]}x {first}\n", "garbage\n",
                 f"cellvm-host-tsc 1 {boot} 12\n"):
        cache.write_text(text)
        monkeypatch.setattr(host_tsc, "_known", None)
        monkeypatch.setattr(host_tsc, "measure_khz", lambda *a, **k: 2_345_678)
        assert host_tsc.khz() == 2_345_678
        assert cache.read_text() == f"cellvm-host-tsc 1 {boot} 2345678\n"


def test_the_override_and_the_command_line(monkeypatch):
    monkeypatch.setenv("CELLVM_TSC_KHZ", "2445000")
    assert host_tsc.khz() == 2445000
    assert host_tsc.tcg_cmdline("tsc_early_khz=2000000") == "tsc_early_khz=2445000 tsc=reliable"
    assert host_tsc.tcg_cmdline("a=1 tsc_early_khz=2000000 b") == \
        "a=1 b tsc_early_khz=2445000 tsc=reliable"
    assert host_tsc.tcg_cmdline("") == "tsc_early_khz=2445000 tsc=reliable"
    assert host_tsc.tcg_cmdline("tsc=unstable") == "tsc=unstable tsc_early_khz=2445000"
    for bad in ("2.4e6", "99", "-2445000", "fast"):
        monkeypatch.setenv("CELLVM_TSC_KHZ", bad)
        with pytest.raises(ValueError, match="CELLVM_TSC_KHZ"):
            host_tsc.khz()
    # Where the TSC cannot be read, the image's words stay as they are.
    monkeypatch.delenv("CELLVM_TSC_KHZ")
    monkeypatch.setattr(host_tsc, "_known", None)
    monkeypatch.setattr(host_tsc, "read_cache", lambda *a: None)
    monkeypatch.setattr(host_tsc, "measure_khz", lambda *a, **k: None)
    assert host_tsc.tcg_cmdline("tsc_early_khz=2000000") == "tsc_early_khz=2000000 tsc=reliable"


def test_the_cli_uses_the_frequency_the_sdk_cached(fake_qemu, agent, tmp_path):
    """One cache for both: the CLI's QEMU command line gets the value the SDK
    wrote (a value no measurement here gives, to tell them apart). The fake
    QEMU of test_vm_qemu_fake bridges to a real agent."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    host_tsc.write_cache(2_345_678, str(runtime / host_tsc.CACHE_NAME))
    env = dict(fake_qemu["env"], CELLVM_ACCEL="tcg", CELLVM_FAKE_QEMU_AGENT=agent.sock,
               CELLVM_RUNTIME_DIR=str(runtime))
    env.pop("CELLVM_TSC_KHZ", None)
    r = subprocess.run([CLI, "run", "--image", IMAGE, "--vsock", "off", "--", "6 * 7"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (0, "42\n"), r.stderr
    (argv,) = launches(fake_qemu["log"])
    words = argv[argv.index("-append") + 1].split()
    assert [w for w in words if w.startswith("tsc")] == ["tsc_early_khz=2345678", "tsc=reliable"]
