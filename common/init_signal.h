/* The signal with which cellvm-agent moves cellvm-init's deadline
 * (init/deadline.h): queued with sigqueue(3), its value the milliseconds left
 * (0 clears it). docs/INIT.md. */
#ifndef CELLVM_COMMON_INIT_SIGNAL_H
#define CELLVM_COMMON_INIT_SIGNAL_H

/* A fixed number, not SIGRTMIN+n: musl's SIGRTMIN (35) and glibc's (34)
 * differ, and the agent (glibc) and init (musl) must agree. */
#define INIT_SIG_DEADLINE 40

#endif
