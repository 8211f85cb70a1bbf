"""The host's TSC frequency, which a TCG guest's kernel must be told
(docs/VMM.md, "The guest's clock under TCG").

Under TCG, QEMU's `rdtsc` returns the host's own time stamp counter (offset
so that it stops while the VM is stopped: `cpu_get_ticks()`), and the TSC is
the guest's only clocksource. The guest kernel cannot calibrate it well
under emulation, so the launchers pass `tsc_early_khz=`: with the host's
real TSC frequency the guest's clocks advance at the host's rate, cold or
restored; with any other value they run fast or slow by the ratio.

The frequency is measured, not looked up: /proc/cpuinfo's "cpu MHz" is the
current core clock, not the TSC's; the kernel's own value is in its log
(root only on most systems) or in a perf_event mmap page (refused by
Debian's default perf_event_paranoid=3). So the TSC is read with `rdtsc`
(a 10-byte function in an executable page, through ctypes: the standard
library has no other way) against CLOCK_MONOTONIC_RAW, the kernel's
unadjusted clock, at both ends of a 50 ms interval. Each end is the tightest
of 64 (rdtsc, clock, rdtsc) brackets, so a preemption inside one is thrown
away, not measured; the median of three intervals is taken. The error is
about 1e-5 (a microsecond of bracket over 50 ms), the guest's budget 5e-3.

The result is cached per host boot (keyed by /proc/sys/kernel/random/boot_id,
the TSC's frequency does not change while a host runs) in the registry's
runtime directory, in a file the C CLI reads and writes too
(client/c/host_tsc.c): the measurement (~0.2 s) is paid once per boot.
x86 hosts only; elsewhere khz() returns None and the image's fallback value
stays on the command line.
"""

import ctypes
import logging
import mmap
import os
import platform
import statistics
import time
from typing import Optional

logger = logging.getLogger("cellvm.host_tsc")

CACHE_NAME = "host-tsc"
CACHE_FORMAT = "cellvm-host-tsc 1"
INTERVAL_S = 0.05
ROUNDS = 3
BRACKETS = 64
# Plausible TSC frequencies: what falls outside is a failed measurement.
MIN_KHZ, MAX_KHZ = 100_000, 10_000_000

# rdtsc; shl rdx, 32; or rax, rdx; ret: the 64-bit counter in rax (System V ABI).
_RDTSC_CODE = bytes.fromhex("0f31" "48c1e220" "4809d0" "c3")
_rdtsc = None


def _rdtsc_function():
    """A ctypes function that returns the TSC, or None (not x86-64, or no
    executable anonymous page allowed here)."""
    global _rdtsc
    if _rdtsc is None:
        if platform.machine() not in ("x86_64", "AMD64"):
            return None
        page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                         prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        page.write(_RDTSC_CODE)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
        fn = ctypes.CFUNCTYPE(ctypes.c_uint64)(addr)
        fn.page = page  # the mapping lives as long as the function
        _rdtsc = fn
    return _rdtsc


def _bracket(rdtsc, clock):
    """(tsc, ns, width): the tightest of BRACKETS (rdtsc, clock, rdtsc) reads, the
    TSC taken as the middle of the bracket."""
    best = None
    for _ in range(BRACKETS):
        t0 = rdtsc()
        ns = clock()
        t1 = rdtsc()
        if t1 >= t0 and (best is None or t1 - t0 < best[2]):
            best = ((t0 + t1) // 2, ns, t1 - t0)
    return best


def measure_khz(interval_s=INTERVAL_S, rounds=ROUNDS) -> Optional[int]:
    """Measures the TSC's frequency in kHz now (about rounds * interval_s), or
    None where it cannot be read."""
    try:
        rdtsc = _rdtsc_function()
    except (OSError, ValueError, PermissionError) as e:
        logger.debug("no executable page for rdtsc: %s", e)
        return None
    if rdtsc is None:
        return None
    clock = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)  # noqa: E731
    results = []
    for _ in range(rounds):
        a = _bracket(rdtsc, clock)
        time.sleep(interval_s)
        b = _bracket(rdtsc, clock)
        if a is None or b is None or b[1] <= a[1]:
            continue
        results.append((b[0] - a[0]) * 1_000_000 / (b[1] - a[1]))
    if not results:
        return None
    khz = round(statistics.median(results))
    return khz if MIN_KHZ <= khz <= MAX_KHZ else None


def _boot_id() -> Optional[str]:
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def _cache_path() -> Optional[str]:
    from .registry import runtime_dir
    try:
        return os.path.join(runtime_dir(), CACHE_NAME)
    except OSError as e:
        logger.debug("no runtime directory for the TSC cache: %s", e)
        return None


def read_cache(path=None) -> Optional[int]:
    """The cached frequency, if it was measured during this boot of the host."""
    path = path or _cache_path()
    boot = _boot_id()
    if not path or not boot:
        return None
    try:
        with open(path) as f:
            fmt, _, rest = f.read(256).strip().rpartition(" ")
            tag, _, cached_boot = fmt.rpartition(" ")
    except OSError:
        return None
    if tag != CACHE_FORMAT or cached_boot != boot or not rest.isdigit():
        return None
    khz = int(rest)
    return khz if MIN_KHZ <= khz <= MAX_KHZ else None


def write_cache(khz, path=None) -> None:
    path = path or _cache_path()
    boot = _boot_id()
    if not path or not boot:
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(f"{CACHE_FORMAT} {boot} {khz}\n")
        os.replace(tmp, path)
    except OSError as e:
        logger.debug("caching the TSC frequency in %s: %s", path, e)
        try:
            os.unlink(tmp)
        except OSError:
            pass


_known = None


def khz() -> Optional[int]:
    """The host's TSC frequency in kHz: this process's, the cache's, or measured
    now (and cached). None where it cannot be measured.
    $CELLVM_TSC_KHZ overrides it (a decimal number of kHz)."""
    global _known
    forced = os.environ.get("CELLVM_TSC_KHZ")
    if forced:
        if not forced.isdigit() or not MIN_KHZ <= int(forced) <= MAX_KHZ:
            raise ValueError(f"$CELLVM_TSC_KHZ={forced!r}: a frequency in kHz, "
                             f"{MIN_KHZ} to {MAX_KHZ}")
        return int(forced)
    if _known is None:
        _known = read_cache()
    if _known is None:
        _known = measure_khz()
        if _known is None:
            logger.warning("cannot measure this host's TSC frequency (no rdtsc here): a TCG "
                           "guest's clock keeps the image's default and may run fast or slow")
            return None
        write_cache(_known)
    return _known


def tcg_cmdline(image_tcg: str) -> str:
    """The image's TCG command-line words (manifest cmdline.tcg) with
    tsc_early_khz= set to this host's frequency (kept as is if unknown), and
    tsc=reliable: the TSC, the host's own under TCG, is the one clock that keeps
    time there; the kernel's clocksource watchdog would otherwise compare it with
    jiffies, which lag behind when the host is busy, call it unstable and fall
    back to jiffies (seen: the guest's clock then ran 4 % slow)."""
    host = khz()
    words = image_tcg.split()
    if host is not None:
        words = [w for w in words if not w.startswith("tsc_early_khz=")]
        words.append(f"tsc_early_khz={host}")
    if not any(w.startswith("tsc=") for w in words):
        words.append("tsc=reliable")
    return " ".join(words)
