/* The network interfaces of the agent's network namespace (netif.c), for the `loopback` policy. */
#ifndef CELLVM_AGENT_NETIF_H
#define CELLVM_AGENT_NETIF_H

#include <stddef.h>

/* How many interfaces other than loopback are up in this network namespace; their
 * names, space-separated, in `names` (truncated to `size`). Or -errno. */
int netif_others_up(char *names, size_t size);

#endif
