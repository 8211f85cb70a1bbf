/* SYS_STATS: the guest's CPU, memory and disk counters (stats.c, docs/PROTOCOL.md section 11). */
#ifndef CELLVM_AGENT_STATS_H
#define CELLVM_AGENT_STATS_H

#include <cbor.h>
#include <stdint.h>

struct agent;
struct conn;

void stats_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);

#endif
