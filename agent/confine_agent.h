/* The agent's side of confinement (confine_agent.c): the user-code policy handed to the
 * zygote, and the per-context cgroups or the rlimit fallback. */
#ifndef CELLVM_AGENT_CONFINE_AGENT_H
#define CELLVM_AGENT_CONFINE_AGENT_H

#include <stdbool.h>
#include <sys/types.h>

struct agent;
struct context;

/* What user code's AF_INET/AF_INET6 sockets may reach (--network). */
enum user_net {
        USER_NET_NONE,     /* no such socket: the default, and dev mode's on a networked host */
        USER_NET_LOOPBACK, /* sockets, where no interface but lo is up (a guest without NIC) */
        USER_NET_ALLOW,    /* sockets, and whatever the machine's interfaces reach */
};

/* Decides the user-code policy (sandbox user, limits, network) and hands it to the
 * zygote's environment; sets up the cgroup parent or logs the fallback. Returns 0 or -errno. */
int confine_agent_setup(struct agent *a);
/* Creates the context's cgroup (no-op without cgroups). */
void confine_context_created(struct agent *a, struct context *ctx);
/* Moves a new executor into its context's cgroup before it runs any cell. Returns 0 or -errno. */
int confine_context_adopt(struct agent *a, struct context *ctx, pid_t pid);
/* Kills every process of the context (cgroup.kill); false if there is no cgroup. */
bool confine_context_kill(struct agent *a, struct context *ctx);
void confine_context_removed(struct agent *a, struct context *ctx);

/* The policy's name ("none", "loopback", "allow"), as --network and HELLO spell it. */
const char *user_net_name(enum user_net p);

#endif
