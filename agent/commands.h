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
struct spawn_spec;

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
/* A command's process, run by the spawner (struct spawner_children): its session or process
 * group, stdio, cgroup, credentials, cwd, then exec; errno goes to `errfd`. Never returns. */
void command_child_exec(const struct spawn_spec *s, int in_fd, int out_fd, int err_fd, int errfd)
    __attribute__((noreturn));

#endif
