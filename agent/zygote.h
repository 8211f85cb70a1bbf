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

/* A Z_SPAWNED: the zygote's answer to the Z_SPAWN `spawn_id` for context `ctx_id`. */
struct zygote_spawned {
        const char *ctx_id;
        size_t ctx_id_len;
        uint32_t spawn_id;
        uint64_t pid;      /* 0 (or out of range): no executor, `error` says why */
        const char *error; /* "unknown error" when it says nothing */
        size_t error_len;
        int *fds; /* a warm spare's own ends (control socket, stdout, stderr), or NULL; a
                   * handler that takes them sets it NULL, else the zygote closes them */
};

/* What the zygote's user (context.c contexts_register) registers at startup, so that the
 * zygote names no layer above it. */
struct zygote_handlers {
        /* The zygote is ready (again): spawns that waited for it go now. */
        void (*ready)(struct agent *a);
        void (*spawned)(struct agent *a, struct zygote_spawned *answer);
};
void zygote_set_handlers(const struct zygote_handlers *h);

int zygote_start(struct agent *a);
/* The zygote's process, run by the spawner (struct spawner_children): execs the executor in
 * zygote mode with control socket `fd`, or writes errno to `errfd`; never returns. */
void zygote_child_exec(struct agent *a, int fd, int errfd) __attribute__((noreturn));
/* Asks for an executor of `language` in `cwd` for context `ctx_id`, handing it `fds` (control
 * socket, stdout, stderr ends); answered by a Z_SPAWNED with `spawn_id`. 0 or -errno. */
int zygote_spawn(struct agent *a, uint32_t spawn_id, const char *ctx_id, const char *language,
                 const char *cwd, const int fds[3]);
bool zygote_reaped(struct agent *a, pid_t pid, int status);
void zygote_timers(struct agent *a, uint64_t now, uint64_t *next);
void zygote_stop(struct agent *a);

#endif
