/*
 * The host's TSC frequency, which a TCG guest's kernel must be told
 * (tsc_early_khz=, docs/VMM.md "The guest's clock under TCG"): measured with
 * rdtsc against CLOCK_MONOTONIC_RAW and cached per host boot.
 *
 * Measured, not looked up: /proc/cpuinfo's "cpu MHz" is the current core
 * clock, not the TSC's; the kernel's own value is in its log (root only on
 * most systems) or in a perf_event mmap page (refused by Debian's default
 * perf_event_paranoid=3). Each end of a 50 ms interval is the tightest of 64
 * (rdtsc, clock, rdtsc) brackets, so a preemption inside one is thrown away,
 * not measured; the median of three intervals is taken. The error is about
 * 1e-5, the guest's budget 5e-3. `cellvm host-tsc` prints the value
 * (tests/test_host_tsc.py compares it with the kernel's).
 */
#ifndef CELLVM_CLIENT_HOST_TSC_H
#define CELLVM_CLIENT_HOST_TSC_H

#include <stddef.h>
#include <stdint.h>

/* The file in the registry's runtime directory: "cellvm-host-tsc 1 BOOT_ID KHZ\n". */
#define CVM_TSC_CACHE_NAME "host-tsc"

/* The frequency in kHz: $CELLVM_TSC_KHZ, else the cache of this host boot, else
 * measured now (~0.15 s) and cached. 0, -ENOTSUP (no TSC to read here), -EINVAL (a
 * bad $CELLVM_TSC_KHZ) or another negative errno. */
int cvm_host_tsc_khz(uint64_t *khz);
/* Measures it now, without the cache. 0 or a negative errno. */
int cvm_host_tsc_measure(uint64_t *khz);
/* The cache's frequency if `text` is a cache line of boot `boot_id`: 0 or -EINVAL. */
int cvm_tsc_cache_parse(const char *text, const char *boot_id, uint64_t *khz);
/* `image_tcg` (launch.txt's cmdline_tcg) with its tsc_early_khz= word replaced by
 * (or, if absent, followed by) tsc_early_khz=`khz` (unless `khz` is 0: unknown), and
 * tsc=reliable unless it has a tsc= word: under TCG the TSC is the host's, and the
 * clocksource watchdog would trade it for jiffies that lag on a busy host. 0 or -E2BIG. */
int cvm_tcg_cmdline(const char *image_tcg, uint64_t khz, char *out, size_t outlen);

#endif
