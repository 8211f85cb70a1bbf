/* SNAPSHOT_PREPARE and NEW_GENERATION (generation.c, docs/PROTOCOL.md section 11,
 * docs/SNAPSHOTS.md). */
#ifndef CELLVM_AGENT_GENERATION_H
#define CELLVM_AGENT_GENERATION_H

#include <cbor.h>
#include <stdint.h>

struct agent;
struct conn;

/* SNAPSHOT_PREPARE: from its OK on, requests that run user work wait for a new generation. */
void system_snapshot_prepare_request(struct agent *a, struct conn *c, uint32_t id,
                                     const cbor_item_t *body);
/* NEW_GENERATION: the clock, the entropy, the generation; executors reseed (a new epoch). */
void system_new_generation_request(struct agent *a, struct conn *c, uint32_t id,
                                   const cbor_item_t *body);

#endif
