/*
 * Waiting for a template's guest to settle before it is saved: what the guest
 * is still doing when paused, every clone does again with an empty TCG
 * translation cache (the next spare executor's warm-up cost each clone's first
 * cell ~0.25 s here). Watched from the host as the VMM's CPU time
 * (docs/SNAPSHOTS.md, "Building a template (QEMU)").
 */
#ifndef CELLVM_CLIENT_VMM_IDLE_H
#define CELLVM_CLIENT_VMM_IDLE_H

#include <stdint.h>
#include <sys/types.h>

/* A settled guest's VMM uses under this share of one CPU (percent)... */
#define CVI_IDLE_PERCENT 15
/* ...in this many consecutive windows of this length. */
#define CVI_WINDOWS 2
#define CVI_WINDOW_MS 500

/* Nanoseconds on a CPU of all threads of `pid` (/proc/PID/task/ NAME/schedstat).
 * 0, -ESRCH (the process is gone) or another negative errno. */
int cvi_cpu_ns(pid_t pid, uint64_t *ns);
/* Waits until `pid` used under `percent` of a CPU in `windows` consecutive
 * windows of `window_ms`: 1, or 0 when `timeout_ms` passed first (the caller
 * goes on, saying so), or a negative errno (-ESRCH: the process is gone). */
int cvi_wait_settled(pid_t pid, int timeout_ms, int percent, int windows, int window_ms);

#endif
