/* The commands service (commands.c, docs/PROTOCOL.md section 10): shell commands as child
 * processes of the agent. */
#ifndef CELLVM_AGENT_COMMANDS_H
#define CELLVM_AGENT_COMMANDS_H

#include <cbor.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct agent;
struct conn;

void commands_start_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void commands_list_request(struct agent *a, struct conn *c, uint32_t id);
void commands_kill_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void commands_stdin_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void commands_resize_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body);
void commands_connect_request(struct agent *a, struct conn *c, uint32_t id,
                              const cbor_item_t *body);
/* A child was reaped: true if it was a command. */
bool commands_reaped(struct agent *a, pid_t pid, int status);
void commands_timers(struct agent *a, uint64_t now, uint64_t *next);
void commands_kill_all(struct agent *a);

#endif
