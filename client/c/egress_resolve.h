/*
 * Host names of egress requests resolved on the host: first the hosts-format
 * file $CELLVM_HOSTS names (internal mirrors; tests' loopback servers), then
 * the system's resolver. The guest resolves nothing (docs/NETWORK.md).
 */
#ifndef CELLVM_CLIENT_EGRESS_RESOLVE_H
#define CELLVM_CLIENT_EGRESS_RESOLVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define EGRESS_MAX_ADDRS 16

/* The addresses of `host` (a normalized name or an IP address) with `port`:
 * 0 with *n >= 1, or -ENOENT (no such name) or another negative errno. */
int egress_resolve(const char *host, uint16_t port, struct sockaddr_storage *out, size_t max,
                   size_t *n);

/* The addresses `path` (hosts format: an address, then names; '#' comments)
 * gives `name`: 0 with *n >= 1, -ENOENT when it names none, or -errno. */
int egress_hosts_lookup(const char *path, const char *name, uint16_t port,
                        struct sockaddr_storage *out, size_t max, size_t *n);

#endif
