/* FILE_WATCH (fswatch.c, docs/PROTOCOL.md section 9): inotify relayed as FILE_EVENT. */
#ifndef CELLVM_AGENT_FSWATCH_H
#define CELLVM_AGENT_FSWATCH_H

#include <cbor.h>
#include <stdint.h>

struct agent;
struct conn;

void fswatch_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);

/*
 * Relays the events the kernel has queued for every watch now: a file
 * operation calls it before its reply, so a watch on the same connection
 * delivers the operation's events first (E2B's watch tests read them at once).
 */
void fswatch_flush(struct agent *a);

#endif
