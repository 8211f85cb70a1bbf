/* Hostname, loopback, and eth0 with a static address when the policy asks for
 * it; /etc/resolv.conf when nameservers are given. */
#ifndef CELLVM_INIT_NETWORK_H
#define CELLVM_INIT_NETWORK_H

#include "config.h"

int network_hostname(const char *name);
int network_link_up(const char *ifname);
int network_static(const char *ifname, const char *cidr, const char *gateway);
/* Writes netconf_resolv_text(dns) to path (created or truncated). */
int network_resolv_conf(const char *path, const char *dns);
/* All of the above as the configuration says; logs each failure. With
 * cellvm.test=1 /etc/resolv.conf is left alone: it is the host's. */
int network_setup(const struct init_config *c);

#endif
