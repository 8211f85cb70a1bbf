/* PID 1's steady state: keep the agent running (restart with backoff), reap
 * every orphan, turn SIGTERM/SIGINT/SIGUSR2/SIGPWR into a shutdown. */
#ifndef CELLVM_INIT_SUPERVISOR_H
#define CELLVM_INIT_SUPERVISOR_H

#include <stdbool.h>

#include "config.h"

#define RESTART_MIN_MS 100
/* An agent that ran this long was healthy: its next death restarts fast. */
#define RESTART_RESET_MS 10000

/* Blocks every signal; PID 1 takes them synchronously with sigtimedwait. */
int supervisor_block_signals(void);
/* after_start (may be NULL) runs once, right after the first agent start:
 * work that may overlap with the agent's own start-up. */
__attribute__((noreturn)) void supervise(const struct init_config *c, bool user_cgroup,
                                         void (*after_start)(void));

/* Next backoff after an agent that ran `ran_ms` died, given the previous one. */
unsigned restart_backoff_ms(unsigned prev_ms, uint64_t ran_ms, unsigned max_ms);

#endif
