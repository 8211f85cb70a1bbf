/* SET_TIME, ADD_ENTROPY, SHUTDOWN and SET_DEADLINE (system.c, docs/PROTOCOL.md section 11). */
#ifndef CELLVM_AGENT_SYSTEM_H
#define CELLVM_AGENT_SYSTEM_H

#include <cbor.h>
#include <stdbool.h>
#include <stdint.h>

struct agent;
struct conn;

void system_set_time_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void system_add_entropy_request(struct agent *a, struct conn *c, uint32_t id,
                                const cbor_item_t *body);
/* Accepts a shutdown: the signal for PID 1 goes out once the OK is flushed
 * (system_signal_init). Only under cellvm-init (CELLVM_INIT=1). */
void system_shutdown_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
/* Relays the host's deadline to PID 1 (INIT_SIG_DEADLINE). Only under cellvm-init. */
void system_set_deadline_request(struct agent *a, struct conn *c, uint32_t id,
                                 const cbor_item_t *body);
/* The agent runs in the VM under cellvm-init (CELLVM_INIT=1), not in dev mode. */
bool system_under_init(void);
/* Sets CLOCK_REALTIME to `ns` since the epoch. 0 or -errno. */
int system_set_realtime(uint64_t ns);

/* Sends a->init_signal to PID 1 if a shutdown was accepted; called by the loop after flushing. */
void system_signal_init(struct agent *a);

#endif
