/* PID 1's steady state: keep the agent running (restart with backoff), reap
 * every orphan, turn SIGTERM/SIGINT/SIGUSR2/SIGPWR into a shutdown, and shut
 * down at the sandbox's deadline (deadline.h), which signal 40 moves. */
#ifndef CELLVM_INIT_SUPERVISOR_H
#define CELLVM_INIT_SUPERVISOR_H

#include <stdbool.h>

#include "config.h"

/* Blocks every signal; PID 1 takes them synchronously with sigtimedwait. */
int supervisor_block_signals(void);
/* after_start (may be NULL) runs once, right after the first agent start:
 * work that may overlap with the agent's own start-up. */
__attribute__((noreturn)) void supervise(const struct init_config *c, bool user_cgroup,
                                         void (*after_start)(void));

#endif
