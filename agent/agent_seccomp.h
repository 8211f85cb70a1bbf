/* The agent's and the spawner's seccomp filters (agent_seccomp.c). */
#ifndef CELLVM_AGENT_AGENT_SECCOMP_H
#define CELLVM_AGENT_AGENT_SECCOMP_H

/* Loads the agent's own syscall allowlist: after it, no fork, exec or socket. 0 or -errno. */
int agent_seccomp_apply(void);
/* Loads the spawner's filter, inherited by the zygote and commands: the syscalls no process
 * of the guest's user side needs fail with EPERM. Returns 0 or -errno. */
int spawner_seccomp_apply(void);

#endif
