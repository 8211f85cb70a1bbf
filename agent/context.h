/* Contexts (context.c): one executor process each, spawned by the zygote, restarted when it
 * dies. */
#ifndef CELLVM_AGENT_CONTEXT_H
#define CELLVM_AGENT_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "loop.h"
#include "reader.h"
#include "utf8_stream.h"
#include "uuid.h"

struct agent;
struct exec;

#define AGENT_MAX_CONTEXTS 64u

enum ctx_state {
        CTX_DORMANT,     /* no process until its first execution (context_dormant) */
        CTX_WAIT_ZYGOTE, /* no process; spawn when the zygote is ready */
        CTX_STARTING,    /* Z_SPAWN sent, waiting for X_READY */
        CTX_READY,       /* executor idle or running `running` */
        CTX_DYING,       /* control socket closed, waiting to reap the executor */
        CTX_BACKOFF,     /* failed to start; respawn at `respawn_at` */
};

struct context {
        struct context *next;
        char id[UUID_TEXT_LEN + 1];
        char *cwd;
        char *shown_cwd;      /* the cwd CONTEXT_CREATE asked for, when not `cwd`; or NULL */
        const char *language; /* canonical name (language.c), static */
        bool lang_default;    /* the context EXECUTE{language} without `context` runs in */
        enum ctx_state state;
        bool removed;        /* gone from the list; freed once its process is */
        bool restarting;     /* CONTEXT_RESTART: the death is expected */
        bool executor_ready; /* the current executor sent X_READY */
        bool spawned_seen;   /* the zygote answered this spawn's Z_SPAWN */
        bool ctl_eof_early;  /* its first control socket ended before that answer */
        pid_t pid;           /* executor pid, 0 if unknown */
        uint32_t spawn_id;
        unsigned start_failures;
        uint64_t start_deadline; /* CTX_STARTING: kill if not ready by then */
        uint64_t kill_at;        /* monotonic ns of the SIGKILL after an interrupt, 0 = none */
        uint64_t respawn_at;
        struct watch ctl, out, err; /* control socket, stdout and stderr pipes */
        struct cv_reader ctl_rd;
        struct cv_buf ctl_out;
        struct utf8_stream dec_out, dec_err;
        bool paused; /* the running execution's client is over its high water */
        struct exec *queue_head, *queue_tail; /* waiting executions */
        struct exec *running;
        char *death_reason; /* why the last executor ended, for ContextRestarted */
        bool cgroup;        /* has its own cgroup under agent.cgroup_parent */
        bool pipe_lost;     /* the live executor closed its stdout or stderr */
};

/* `language` is a canonical name (language_canonical). */
struct context *context_new(struct agent *a, const char *cwd, const char *language, int *err);
/* The default context of `language`, created (in the workdir) on first use; NULL with *err set. */
struct context *context_for_language(struct agent *a, const char *language, int *err);
/* Creates the default context of `language` with no process until its first execution:
 * listed from the start, as E2B lists its JavaScript context, without a Node.js start
 * for sandboxes that never run JavaScript. NULL with *err set. */
struct context *context_dormant(struct agent *a, const char *language, int *err);
struct context *context_find(struct agent *a, const char *id, size_t len);
void context_spawn(struct agent *a, struct context *ctx);
/* Registers the contexts as the zygote's user (zygote_set_handlers): its readiness and its
 * answers to their spawns. */
void contexts_register(void);
void context_restart(struct agent *a, struct context *ctx);
void context_remove(struct agent *a, struct context *ctx);
/* The executor with `pid` was reaped; returns true if it belonged to a context. */
bool context_reaped(struct agent *a, pid_t pid, int status);
void contexts_timers(struct agent *a, uint64_t now, uint64_t *next);
void context_update_interest(struct agent *a, struct context *ctx);
/* Queues `e` (of a connection) on `ctx` and starts it if the executor is idle. */
void context_enqueue(struct agent *a, struct context *ctx, struct exec *e);
/* Sends the next queued execution to an idle executor (X_EXECUTE). */
void context_start_next(struct agent *a, struct context *ctx);
/* Cancels `e`: a queued one ends now (CANCELLED if `notify`), a running one is interrupted;
 * without `notify` (its client is gone) it is detached from its connection first. */
void context_cancel_exec(struct agent *a, struct exec *e, bool notify);
/* Interrupts the running execution: SIGINT, and SIGKILL if it does not stop. */
void context_interrupt(struct agent *a, struct context *ctx);
void contexts_kill_all(struct agent *a);
/* Handles executor messages left in read buffers; true if some remain (poll again at once). */
bool contexts_pending_work(struct agent *a);

#endif
