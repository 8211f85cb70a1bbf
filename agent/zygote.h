/* The zygote (zygote.c): a pre-initialised executor that forks a process per context (spec
 * section 8). */
#ifndef CELLVM_AGENT_ZYGOTE_H
#define CELLVM_AGENT_ZYGOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "loop.h"
#include "reader.h"

struct agent;
struct context;

/* Fds a Z_SPAWNED may carry (a warm Node.js spare's ctl, stdout, stderr), queued until read. */
#define ZYGOTE_MAX_FDS 16
#define ZYGOTE_READ_CHUNK 4096

struct zygote {
        pid_t pid;
        bool ready;
        struct watch w;
        struct cv_reader rd;
        uint8_t in[ZYGOTE_READ_CHUNK]; /* bytes received with their fds, not yet fed to `rd` */
        size_t in_off, in_len;
        int fds[ZYGOTE_MAX_FDS]; /* received fds in arrival order */
        size_t nfds;
        struct cv_buf out;
        uint64_t started_at;
        uint64_t restart_at; /* monotonic ns, 0 = none */
};

int zygote_start(struct agent *a);
/* The zygote's process, run by the spawner (struct spawner_children): execs the executor in
 * zygote mode with control socket `fd`, or writes errno to `errfd`; never returns. */
void zygote_child_exec(struct agent *a, int fd, int errfd) __attribute__((noreturn));
int zygote_spawn(struct agent *a, struct context *ctx, int ctl_fd, int out_fd, int err_fd);
bool zygote_reaped(struct agent *a, pid_t pid, int status);
void zygote_timers(struct agent *a, uint64_t now, uint64_t *next);
void zygote_stop(struct agent *a);

#endif
