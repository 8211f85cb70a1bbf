/* The ports service (ports.c, docs/PROTOCOL.md section 12): tunnels to TCP ports on the
 * guest's loopback. */
#ifndef CELLVM_AGENT_PORTS_H
#define CELLVM_AGENT_PORTS_H

#include <cbor.h>
#include <stdint.h>

struct agent;
struct conn;

void ports_open_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
/* A tunnel on the guest connection `fd` (taken over), accepted by the egress
 * proxy, for request `id` of `c`: EGRESS_OPENED, then PORT_DATA as for PORT_OPEN. */
void ports_adopt(struct agent *a, struct conn *c, uint32_t id, int fd);

#endif
