/*
 * The network interfaces of the agent's network namespace, for the `loopback`
 * policy (confine_agent.c): user code may open AF_INET/AF_INET6 sockets only
 * where they can reach nothing but this machine, i.e. where no interface other
 * than lo is up. Neither user code (no CAP_NET_ADMIN, no new user namespaces)
 * nor a command run as `user: "root"` (no capabilities) can bring one up later.
 */

#include "netif.h"

#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdbool.h>
#include <string.h>

int netif_others_up(char *names, size_t size)
{
        struct ifaddrs *list;
        if (getifaddrs(&list) < 0)
                return -errno;
        int n = 0;
        size_t used = 0;
        if (size)
                names[0] = '\0';
        for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
                if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK))
                        continue;
                /* One entry per address family: name each interface once. */
                bool seen = false;
                for (const struct ifaddrs *j = list; j != i && !seen; j = j->ifa_next)
                        seen = (j->ifa_flags & IFF_UP) && !(j->ifa_flags & IFF_LOOPBACK) &&
                               strcmp(j->ifa_name, i->ifa_name) == 0;
                if (seen)
                        continue;
                n++;
                size_t len = strlen(i->ifa_name);
                if (used + len + 2 < size) {
                        if (used)
                                names[used++] = ' ';
                        memcpy(names + used, i->ifa_name, len + 1);
                        used += len;
                }
        }
        freeifaddrs(list);
        return n;
}
