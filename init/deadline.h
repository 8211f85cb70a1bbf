/* The sandbox's deadline: a CLOCK_BOOTTIME instant at which init shuts the
 * machine down, whatever the host does. Set at boot by cellvm.deadline_ms and
 * moved by the agent (the host's SET_DEADLINE) with a queued real-time signal
 * whose value is the milliseconds left from now (0 clears it). docs/INIT.md. */
#ifndef CELLVM_INIT_DEADLINE_H
#define CELLVM_INIT_DEADLINE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/init_signal.h" /* INIT_SIG_DEADLINE */

/* No deadline. */
#define DEADLINE_NONE 0

/* The boot value: cellvm.deadline_ms (CLOCK_BOOTTIME ms; 0 = none) in ns. */
uint64_t deadline_from_boot_ms(uint64_t ms);

/* The new deadline for a request of `ms_left` ms made at `now_ns`: now + ms,
 * saturating; DEADLINE_NONE for 0. */
uint64_t deadline_from_request(uint64_t now_ns, uint64_t ms_left);

/* True if `info` is a deadline request init must obey: queued with
 * sigqueue(3) (not a plain kill) by root, i.e. the agent (user code runs as
 * another uid and cannot signal PID 1 anyway). */
bool deadline_request_valid(const siginfo_t *info);

/* The ms a valid request carries (its sival_ptr, so 64 bits on 64-bit). */
uint64_t deadline_request_ms(const siginfo_t *info);

/* The wait before the deadline, capped at cap_ns; 0 when it has passed. */
uint64_t deadline_wait_ns(uint64_t deadline_ns, uint64_t now_ns, uint64_t cap_ns);

#endif
