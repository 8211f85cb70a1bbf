/* The kernel's VM-fork notice (vmfork.c): each one starts a new epoch. */
#ifndef CELLVM_AGENT_VMFORK_H
#define CELLVM_AGENT_VMFORK_H

struct agent;

/* Watches `path` (the kernel log, /dev/kmsg) for the kernel's VM-fork notice: each one
 * starts a new epoch. Opened during setup (the agent's filter allows reading it later).
 * Returns 0 or -errno (the agent then runs without the watch). */
int vmfork_watch_open(struct agent *a, const char *path);
/* Reads what the kernel logged since (without waiting): called before a cell or a spawn
 * goes out, so a notice already logged counts even if epoll has not reported it yet. */
void vmfork_check(struct agent *a);
void vmfork_watch_close(struct agent *a);
/* Something copied this guest (a VM fork, a new generation: generation.c): a new epoch,
 * so executors reseed before their next cell. */
void epoch_advance(struct agent *a, const char *why);

#endif
