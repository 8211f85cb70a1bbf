/* Client requests (requests.c, docs/PROTOCOL.md sections 3-4): dispatch by message type. */
#ifndef CELLVM_AGENT_REQUESTS_H
#define CELLVM_AGENT_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

struct agent;
struct conn;

/* One message from `c`: a request goes to its handler (the request_kinds table), a
 * continuation (FILE_DATA, PORT_DATA) to its request in flight; a refused one gets ERROR. */
void request_dispatch(struct agent *a, struct conn *c, uint16_t type, uint32_t id,
                      const uint8_t *body, size_t len);

/* Registers the dispatcher as every connection's handler (conn_set_handlers): it gets the
 * messages, and cancels and resumes the requests in flight. */
void requests_register(void);

#endif
