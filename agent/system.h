/* SET_TIME and ADD_ENTROPY (docs/PROTOCOL.md section 11). */
#ifndef CELLVM_AGENT_SYSTEM_H
#define CELLVM_AGENT_SYSTEM_H

#include <cbor.h>
#include <stdint.h>

#include "agent.h"

void system_set_time_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void system_add_entropy_request(struct agent *a, struct conn *c, uint32_t id,
                                const cbor_item_t *body);

#endif
