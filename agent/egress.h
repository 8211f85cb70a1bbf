/* The guest's egress proxy listener (egress.c, docs/PROTOCOL.md section 13). */
#ifndef CELLVM_AGENT_EGRESS_H
#define CELLVM_AGENT_EGRESS_H

#include <cbor.h>
#include <stdint.h>

struct agent;
struct conn;

/* Listens on ADDR ("tcp:127.0.0.1:PORT"); before the agent's filter. 0 or -errno. */
int egress_listen(struct agent *a, const char *addr);
void egress_accept_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void egress_close(struct agent *a);

#endif
