/* The text side of network configuration, kept apart from the ioctls so it
 * can be unit-tested: cellvm.ip's "a.b.c.d/prefix" and the resolv.conf that
 * cellvm.dns asks for. */
#ifndef CELLVM_INIT_NETCONF_H
#define CELLVM_INIT_NETCONF_H

#include <netinet/in.h>
#include <stddef.h>

/* "10.0.0.2/24" -> address and netmask in network order. The prefix is 0-32
 * in plain decimal digits. Returns 0 or -EINVAL. */
int netconf_parse_cidr(const char *cidr, in_addr_t *addr, in_addr_t *mask);

/* "1.1.1.1,2606:4700::1" -> "nameserver 1.1.1.1\nnameserver 2606:4700::1\n" in
 * out. Empty entries are skipped; each other must be an IPv4 or IPv6 address,
 * so nothing but nameserver lines can reach the file. Returns the length, or
 * -EINVAL (a bad entry, or none at all), -E2BIG (out too small). */
int netconf_resolv_text(const char *dns, char *out, size_t outsz);

#endif
