/* The agent's restart backoff: how long PID 1 waits before starting an agent
 * that died, so one that dies at once does not make init spin. */
#ifndef CELLVM_INIT_BACKOFF_H
#define CELLVM_INIT_BACKOFF_H

#include <stdint.h>

/* The first delay, and the floor of cellvm.restart_max_ms. */
#define RESTART_MIN_MS 100
/* An agent that ran this long was healthy: its next death restarts fast. */
#define RESTART_RESET_MS 10000

/* Next delay after an agent that ran `ran_ms` died, given the previous delay
 * (0 for none yet): RESTART_MIN_MS, doubling while it keeps dying young, at
 * most max_ms (raised to RESTART_MIN_MS: 0 would be a tight restart loop). */
unsigned restart_backoff_ms(unsigned prev_ms, uint64_t ran_ms, unsigned max_ms);

#endif
