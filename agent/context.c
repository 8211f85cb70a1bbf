/* Contexts: one executor process each, spawned by the zygote, restarted when it dies. */

#include "context.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "cbor_util.h"
#include "confine_agent.h"
#include "conn.h"
#include "execution.h"
#include "log.h"
#include "loop.h"
#include "msgtypes.h"
#include "uuid.h"
#include "vmfork.h"
#include "writer.h"
#include "zygote.h"

/* Between the interrupt of a cell and the kill of its process (spec section 4). */
#define INTERRUPT_GRACE_NS (2000000000ull)
/* Time an executor gets from Z_SPAWN to X_READY. */
#define EXECUTOR_START_TIMEOUT_NS (60000000000ull)
/* Consecutive failed starts after which queued executions are failed. */
#define CONTEXT_MAX_START_FAILURES 3u
#define PIPE_READ_CHUNK (64u * 1024u)
/* Chunks a drain reads at most: 1 MiB, the largest pipe an unprivileged process can ask for. */
#define DRAIN_MAX_CHUNKS 16u
/* Pause before respawning an executor that died before it was ready. */
#define RESPAWN_BACKOFF_NS (1000000000ull)
/* Time between the executor closing its control socket and our SIGKILL if it lingers. */
#define DYING_GRACE_NS (1000000000ull)

static void send_sigint(struct context *ctx);

static void on_ctl(struct agent *a, struct watch *w, uint32_t events);
static void kill_executor(struct agent *a, struct context *ctx, const char *reason);
static void on_pipe(struct agent *a, struct watch *w, uint32_t events);
static void context_gone(struct agent *a, struct context *ctx, const char *why);

struct context *context_find(struct agent *a, const char *id, size_t len)
{
        for (struct context *ctx = a->contexts; ctx; ctx = ctx->next)
                if (!ctx->removed && strlen(ctx->id) == len && memcmp(ctx->id, id, len) == 0)
                        return ctx;
        return NULL;
}

static struct context *context_alloc(struct agent *a, const char *cwd, const char *language,
                                     int *err)
{
        struct context *ctx = calloc(1, sizeof(*ctx));
        if (!ctx) {
                *err = -ENOMEM;
                return NULL;
        }
        *err = uuid4_text(ctx->id);
        ctx->cwd = strdup(cwd);
        if (*err < 0 || !ctx->cwd) {
                if (!*err)
                        *err = -ENOMEM;
                free(ctx->cwd);
                free(ctx);
                return NULL;
        }
        ctx->language = language;
        ctx->ctl = (struct watch){.fd = -1, .fn = on_ctl};
        ctx->out = (struct watch){.fd = -1, .fn = on_pipe};
        ctx->err = (struct watch){.fd = -1, .fn = on_pipe};
        cv_reader_init(&ctx->ctl_rd, CV_DEFAULT_MAX_MESSAGE);
        cv_buf_init(&ctx->ctl_out);
        ctx->state = CTX_WAIT_ZYGOTE;
        confine_context_created(a, ctx);
        /* At the end: CONTEXT_LIST lists contexts in creation order (E2B lists its newest last). */
        struct context **tail = &a->contexts;
        while (*tail)
                tail = &(*tail)->next;
        *tail = ctx;
        a->ncontexts++;
        return ctx;
}

struct context *context_new(struct agent *a, const char *cwd, const char *language, int *err)
{
        struct context *ctx = context_alloc(a, cwd, language, err);
        if (ctx)
                context_spawn(a, ctx);
        return ctx;
}

struct context *context_dormant(struct agent *a, const char *language, int *err)
{
        struct context *ctx = context_alloc(a, a->workdir, language, err);
        if (ctx) {
                ctx->state = CTX_DORMANT;
                ctx->lang_default = true;
                log_info("created context %s, the default %s context (started on first use)",
                         ctx->id, language);
        }
        return ctx;
}

struct context *context_for_language(struct agent *a, const char *language, int *err)
{
        for (struct context *ctx = a->contexts; ctx; ctx = ctx->next)
                if (!ctx->removed && ctx->lang_default && strcmp(ctx->language, language) == 0)
                        return ctx;
        if (a->ncontexts >= AGENT_MAX_CONTEXTS) {
                *err = -EMFILE;
                return NULL;
        }
        struct context *ctx = context_new(a, a->workdir, language, err);
        if (ctx) {
                ctx->lang_default = true;
                log_info("created context %s, the default %s context", ctx->id, language);
        }
        return ctx;
}

static void context_free(struct agent *a, struct context *ctx)
{
        for (struct context **pp = &a->contexts; *pp; pp = &(*pp)->next) {
                if (*pp == ctx) {
                        *pp = ctx->next;
                        break;
                }
        }
        confine_context_removed(a, ctx);
        cv_reader_free(&ctx->ctl_rd);
        cv_buf_free(&ctx->ctl_out);
        free(ctx->death_reason);
        free(ctx->cwd);
        free(ctx->shown_cwd);
        free(ctx);
}

static int set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

static void close_fd(int fd, const char *what)
{
        if (fd >= 0 && close(fd) < 0)
                log_warn("close(%s): %s", what, strerror(errno));
}

static void backoff(struct context *ctx)
{
        ctx->state = CTX_BACKOFF;
        ctx->respawn_at = now_mono() + RESPAWN_BACKOFF_NS;
}

void context_spawn(struct agent *a, struct context *ctx)
{
        if (!a->zyg.ready) {
                ctx->state = CTX_WAIT_ZYGOTE;
                return;
        }
        int sv[2] = {-1, -1}, po[2] = {-1, -1}, pe[2] = {-1, -1};
        int rc = 0;
        const char *step = "socketpair";
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                rc = -errno;
        if (!rc && (step = "pipe2", pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0))
                rc = -errno;
        if (!rc && (step = "fcntl(O_NONBLOCK)", 1))
                rc = set_nonblock(sv[0]);
        if (!rc)
                rc = set_nonblock(po[0]);
        if (!rc)
                rc = set_nonblock(pe[0]);
        if (!rc) {
                step = "Z_SPAWN";
                ctx->spawn_id = ++a->next_spawn_id;
                int ends[3] = {sv[1], po[1], pe[1]};
                rc = zygote_spawn(a, ctx->spawn_id, ctx->id, ctx->language, ctx->cwd, ends);
        }
        /* The zygote has its own copies now (or never will). */
        close_fd(sv[1], "executor control socket");
        close_fd(po[1], "executor stdout");
        close_fd(pe[1], "executor stderr");
        if (rc < 0) {
                log_error("context %s: spawning an executor: %s: %s", ctx->id, step, strerror(-rc));
                close_fd(sv[0], "control socket");
                close_fd(po[0], "stdout pipe");
                close_fd(pe[0], "stderr pipe");
                backoff(ctx);
                return;
        }
        ctx->ctl.fd = sv[0];
        ctx->out.fd = po[0];
        ctx->err.fd = pe[0];
        cv_reader_reset(&ctx->ctl_rd);
        cv_buf_reset(&ctx->ctl_out);
        ctx->dec_out.npending = ctx->dec_err.npending = 0;
        ctx->pid = 0;
        ctx->kill_at = 0;
        ctx->paused = false;
        ctx->pipe_lost = false;
        ctx->spawned_seen = false;
        ctx->ctl_eof_early = false;
        ctx->state = CTX_STARTING;
        ctx->start_deadline = now_mono() + EXECUTOR_START_TIMEOUT_NS;
        free(ctx->death_reason);
        ctx->death_reason = NULL;
        context_update_interest(a, ctx);
        log_debug("context %s: spawn %u requested", ctx->id, ctx->spawn_id);
}

/* The zygote answered the context's Z_SPAWN (after any adopt_fds). It has closed
 * its copies of the context's pipes by then: only now can a cell that closes its
 * stdout and stderr be seen to (their EOF), so cells start after this answer
 * (context_start_next), even when the executor's X_READY came first. */
static void context_spawned(struct agent *a, struct context *ctx)
{
        ctx->spawned_seen = true;
        if (ctx->ctl_eof_early) {
                ctx->ctl_eof_early = false;
                context_gone(a, ctx, "the executor closed its control socket");
                return;
        }
        context_start_next(a, ctx);
}

/* The executor the zygote spawned came with its own ends (a warm spare): `fds` (control
 * socket, stdout, stderr) replace the ones the context made; taken over either way. */
static int adopt_fds(struct agent *a, struct context *ctx, const int fds[3])
{
        int rc = 0;
        for (int i = 0; i < 3 && rc == 0; i++)
                rc = set_nonblock(fds[i]);
        if (rc < 0) {
                for (int i = 0; i < 3; i++)
                        close_fd(fds[i], "a spare's fd");
                return rc;
        }
        watch_close(a, &ctx->ctl);
        watch_close(a, &ctx->out);
        watch_close(a, &ctx->err);
        ctx->ctl.fd = fds[0];
        ctx->out.fd = fds[1];
        ctx->err.fd = fds[2];
        cv_reader_reset(&ctx->ctl_rd);
        cv_buf_reset(&ctx->ctl_out);
        ctx->ctl_eof_early = false; /* that was the old socket */
        context_update_interest(a, ctx);
        return 0;
}

/* The zygote is ready (again): contexts that waited for it spawn now, and an
 * executor whose Z_SPAWNED the old zygote never sent starts its cells (that
 * zygote's copies of its pipes are closed: it is gone). */
static void on_zygote_ready(struct agent *a)
{
        struct context *next;
        for (struct context *ctx = a->contexts; ctx; ctx = next) {
                next = ctx->next;
                if (ctx->state == CTX_WAIT_ZYGOTE) {
                        context_spawn(a, ctx);
                } else if (ctx->state == CTX_READY && !ctx->spawned_seen) {
                        ctx->spawned_seen = true;
                        context_start_next(a, ctx);
                }
        }
}

/* The zygote's Z_SPAWNED for one of our contexts' spawns. */
static void on_zygote_spawned(struct agent *a, struct zygote_spawned *z)
{
        for (struct context *ctx = a->contexts; ctx; ctx = ctx->next) {
                if (strlen(ctx->id) != z->ctx_id_len ||
                    memcmp(ctx->id, z->ctx_id, z->ctx_id_len) != 0)
                        continue;
                /* READY: the executor's X_READY came first. */
                if (z->spawn_id != ctx->spawn_id || ctx->spawned_seen ||
                    (ctx->state != CTX_STARTING && ctx->state != CTX_READY))
                        return; /* an earlier spawn's late answer */
                if (z->pid == 0 || z->pid > INT32_MAX) {
                        log_error("context %s: the zygote could not spawn an executor: %.*s",
                                  ctx->id, (int)(z->error_len > 200 ? 200 : z->error_len),
                                  z->error);
                        /* What the client's error will say once the start is given up. */
                        if (!ctx->death_reason)
                                ctx->death_reason =
                                    strndup(z->error, z->error_len > 400 ? 400 : z->error_len);
                } else if (ctx->pid == 0) {
                        ctx->pid = (pid_t)z->pid;
                        log_debug("context %s: executor pid %d spawned", ctx->id, (int)ctx->pid);
                        if (z->fds) {
                                int rc = adopt_fds(a, ctx, z->fds);
                                z->fds = NULL;
                                if (rc < 0) {
                                        log_error("context %s: taking the spare's fds: %s", ctx->id,
                                                  strerror(-rc));
                                        if (kill(ctx->pid, SIGKILL) < 0 && errno != ESRCH)
                                                log_error("kill(%d): %s", (int)ctx->pid,
                                                          strerror(errno));
                                }
                        }
                }
                context_spawned(a, ctx);
                return;
        }
}

void contexts_register(void)
{
        static const struct zygote_handlers handlers = {.ready = on_zygote_ready,
                                                        .spawned = on_zygote_spawned};
        zygote_set_handlers(&handlers);
}

void context_update_interest(struct agent *a, struct context *ctx)
{
        struct exec *e = ctx->running;
        ctx->paused = e && e->conn && conn_over_high_water(e->conn);
        uint32_t in = ctx->paused ? 0 : EPOLLIN;
        uint32_t ctl = in | (cv_buf_pending(&ctx->ctl_out) ? EPOLLOUT : 0);
        int rc = watch_set(a, &ctx->ctl, ctl);
        if (rc == 0)
                rc = watch_set(a, &ctx->out, in);
        if (rc == 0)
                rc = watch_set(a, &ctx->err, in);
        if (rc < 0)
                log_error("context %s: epoll_ctl: %s", ctx->id, strerror(-rc));
}

/* Stops reading the executor while the running execution's client is over its high water
 * (conn_flush resumes it through requests.c). */
static void pause_if_client_full(struct agent *a, struct context *ctx)
{
        struct exec *e = ctx->running;
        if (e && e->conn && conn_over_high_water(e->conn) && !ctx->paused)
                context_update_interest(a, ctx);
}

#define OUTPUT_LOST_REASON "the cell closed the context's stdout or stderr"

/*
 * The executor closed fd 1 or 2 while alive: later cells would run with their
 * output going nowhere. The context is restarted: at once when idle, else when
 * the running cell ends (that execution then reports ContextRestarted). If the
 * executor is in fact dying, its reaping comes first and carries the real reason.
 */
static void output_lost(struct agent *a, struct context *ctx)
{
        ctx->pipe_lost = true;
        if (!ctx->running)
                kill_executor(a, ctx, OUTPUT_LOST_REASON);
}

/* Reads one chunk (or everything, `drain`) from a pipe; closes it at end of file. */
static void read_pipe(struct agent *a, struct context *ctx, struct watch *w, bool drain)
{
        static uint8_t buf[PIPE_READ_CHUNK];
        int which = w == &ctx->out ? 1 : 2;
        /* A drain takes what a full pipe holds, not what a writer that never stops
         * (`yes` in the background) keeps adding: that would hold the loop forever. */
        for (unsigned i = 0; w->fd >= 0 && i < DRAIN_MAX_CHUNKS; i++) {
                ssize_t n = read(w->fd, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                log_error("context %s: read(%s): %s", ctx->id,
                                          which == 1 ? "stdout" : "stderr", strerror(errno));
                        return;
                }
                if (n == 0) {
                        watch_close(a, w);
                        if (ctx->state == CTX_READY && ctx->pid > 0)
                                output_lost(a, ctx);
                        return;
                }
                exec_stream(a, ctx, which, buf, (size_t)n, false);
                pause_if_client_full(a, ctx);
                if (!drain)
                        return;
        }
}

static void drain_pipes(struct agent *a, struct context *ctx)
{
        read_pipe(a, ctx, &ctx->out, true);
        read_pipe(a, ctx, &ctx->err, true);
}

static struct context *pipe_owner(struct agent *a, struct watch *w)
{
        for (struct context *ctx = a->contexts; ctx; ctx = ctx->next)
                if (w == &ctx->out || w == &ctx->err)
                        return ctx;
        return NULL;
}

static void on_pipe(struct agent *a, struct watch *w, uint32_t events)
{
        (void)events;
        struct context *ctx = pipe_owner(a, w);
        if (!ctx)
                return;
        /* A message the executor sent before it wrote what is in the pipe now
         * goes first (spec section 8). epoll hands us one ready fd at a time, in
         * no promised order, so look at the control socket before the bytes. */
        if (ctx->running && ctx->pid > 0 && ctx->ctl.fd >= 0) {
                on_ctl(a, &ctx->ctl, EPOLLIN);
                if (pipe_owner(a, w) != ctx || w->fd < 0)
                        return;
        }
        read_pipe(a, ctx, w, false);
}

static void kill_executor(struct agent *a, struct context *ctx, const char *reason)
{
        if (reason && !ctx->death_reason)
                ctx->death_reason = strdup(reason);
        if (ctx->pid <= 0)
                return;
        /* No new execution goes to a process on its way out. */
        if (ctx->state == CTX_READY || ctx->state == CTX_STARTING)
                ctx->state = CTX_DYING;
        /* The executor leads its own process group; take subprocesses with it. */
        if (kill(-ctx->pid, SIGKILL) < 0 && kill(ctx->pid, SIGKILL) < 0 && errno != ESRCH)
                log_error("context %s: kill(%d, SIGKILL): %s", ctx->id, (int)ctx->pid,
                          strerror(errno));
        /* And whatever left the process group (setsid, daemons, a fork bomb). */
        confine_context_kill(a, ctx);
}

static void handle_x_ready(struct agent *a, struct context *ctx, const struct cv_msg *m)
{
        cbor_item_t *body;
        uint64_t pid = 0;
        if (cv_body_parse(m->body, m->len, &body) == 0) {
                if (cv_map_get_uint(body, "pid", &pid) < 0)
                        pid = 0;
                cbor_decref(&body);
        }
        if (ctx->state != CTX_STARTING) {
                log_warn("context %s: unexpected X_READY", ctx->id);
                return;
        }
        if (pid > 0 && pid < INT32_MAX)
                ctx->pid = (pid_t)pid;
        /* Into its cgroup before the first cell; without it the limits would not hold. */
        int rc = confine_context_adopt(a, ctx, ctx->pid);
        if (rc < 0) {
                log_error("context %s: moving executor %d into its cgroup: %s", ctx->id,
                          (int)ctx->pid, strerror(-rc));
                kill_executor(a, ctx, "the executor could not be moved into its cgroup");
                return;
        }
        ctx->state = CTX_READY;
        ctx->executor_ready = true;
        ctx->start_failures = 0;
        ctx->start_deadline = 0;
        log_info("context %s: executor pid %d ready", ctx->id, (int)ctx->pid);
        context_start_next(a, ctx);
}

static void ctl_message(struct agent *a, struct context *ctx, const struct cv_msg *m)
{
        struct exec *e = ctx->running;
        switch (m->type) {
        case CV_MSG_X_READY:
                handle_x_ready(a, ctx, m);
                return;
        case CV_MSG_EXEC_INPUT:
        case CV_MSG_STREAM:
        case CV_MSG_DISPLAY:
        case CV_MSG_RESULT:
        case CV_MSG_EXEC_ERROR:
        case CV_MSG_X_END:
                /*
                 * The executor waits for us to empty the pipes before it sends a message
                 * (spec section 8), so what is in them now was written after it: relay the
                 * message first. X_END is the exception: output the cell wrote but we had
                 * not read yet (we stop reading while a client is slow) still belongs to it.
                 */
                if (m->type == CV_MSG_X_END)
                        drain_pipes(a, ctx);
                if (!e || e->internal_id != m->id) {
                        log_warn("context %s: dropping %s for execution %u, not the running one",
                                 ctx->id, cv_msg_type_name(m->type), m->id);
                        return;
                }
                if (m->type == CV_MSG_X_END && ctx->pipe_lost) {
                        /* Reaping ends this execution with ContextRestarted. */
                        kill_executor(a, ctx, OUTPUT_LOST_REASON);
                        return;
                }
                if (m->type == CV_MSG_X_END) {
                        ctx->running = NULL;
                        ctx->kill_at = 0;
                        exec_finish(a, e, m->body, m->len);
                        context_update_interest(a, ctx);
                        context_start_next(a, ctx);
                } else if (m->type == CV_MSG_STREAM) {
                        if (e->input_seen)
                                exec_stream_message(a, e, m->body, m->len);
                        pause_if_client_full(a, ctx);
                } else {
                        exec_relay(e, m->type, m->body, m->len);
                        pause_if_client_full(a, ctx);
                        if (m->type == CV_MSG_EXEC_INPUT) {
                                e->input_seen = true;
                                if (e->interrupt_pending)
                                        send_sigint(ctx);
                        }
                }
                return;
        }
        log_warn("context %s: unexpected message %s (%#x) from the executor", ctx->id,
                 cv_msg_type_name(m->type), m->type);
}

static void on_ctl(struct agent *a, struct watch *w, uint32_t events)
{
        struct context *ctx = (struct context *)((char *)w - offsetof(struct context, ctl));
        if (events & EPOLLOUT) {
                int rc = cv_buf_flush(&ctx->ctl_out, w->fd);
                if (rc < 0) {
                        log_error("context %s: writing to the executor: %s", ctx->id,
                                  strerror(-rc));
                        context_gone(a, ctx, "control socket write failed");
                        return;
                }
                context_update_interest(a, ctx);
        }
        for (int i = 0; i < 64 && !ctx->paused && w->fd >= 0; i++) {
                struct cv_msg m;
                int rc = cv_reader_read(&ctx->ctl_rd, w->fd, &m);
                if (rc == CV_READ_MSG) {
                        ctl_message(a, ctx, &m);
                        continue;
                }
                if (rc == CV_READ_NEED)
                        return;
                if (rc == CV_READ_EOF && ctx->state == CTX_STARTING && !ctx->spawned_seen) {
                        /* The zygote closed the ends we sent: its answer may bring a warm
                         * spare's own (adopt_fds). Settled in context_spawned(). */
                        ctx->ctl_eof_early = true;
                        watch_close(a, w);
                } else if (rc == CV_READ_EOF) {
                        context_gone(a, ctx, "the executor closed its control socket");
                } else {
                        log_error("context %s: reading from the executor: %s", ctx->id,
                                  strerror(-rc));
                        context_gone(a, ctx, "bad data on the control socket");
                }
                return;
        }
}

/* The control socket ended: wait (briefly) to reap the executor, or finish now if we can't. */
static void finalize(struct agent *a, struct context *ctx, const char *why);

static void context_gone(struct agent *a, struct context *ctx, const char *why)
{
        if (ctx->pid > 0) {
                log_info("context %s: %s; waiting for pid %d", ctx->id, why, (int)ctx->pid);
                watch_close(a, &ctx->ctl);
                ctx->state = CTX_DYING;
                uint64_t at = now_mono() + DYING_GRACE_NS;
                if (!ctx->kill_at || ctx->kill_at > at)
                        ctx->kill_at = at;
                return;
        }
        finalize(a, ctx, why);
}

static void fail_queue(struct agent *a, struct context *ctx, const char *code, const char *why)
{
        while (ctx->queue_head) {
                struct exec *e = ctx->queue_head;
                ctx->queue_head = e->queue_next;
                if (!ctx->queue_head)
                        ctx->queue_tail = NULL;
                if (e->conn)
                        conn_send_error(a, e->conn, e->client_id, code, "%s", why);
                exec_detach_conn(e);
                exec_free(e);
        }
}

/* The executor is gone for good: settle its execution and respawn (or free) the context. */
static void finalize(struct agent *a, struct context *ctx, const char *why)
{
        /* A context restarted on request respawns at once; a failed start backs off. */
        bool respawn_now = ctx->executor_ready || ctx->restarting;
        if (ctx->death_reason)
                why = ctx->death_reason;
        drain_pipes(a, ctx);
        watch_close(a, &ctx->ctl);
        watch_close(a, &ctx->out);
        watch_close(a, &ctx->err);
        cv_reader_reset(&ctx->ctl_rd);
        cv_buf_reset(&ctx->ctl_out);
        if (ctx->pid > 0)
                kill_executor(a, ctx, NULL); /* leftovers in its process group */
        log_info("context %s: executor %d gone: %s", ctx->id, (int)ctx->pid, why);
        ctx->pid = 0;
        ctx->kill_at = 0;
        ctx->paused = false;
        ctx->executor_ready = false;
        if (ctx->running) {
                struct exec *e = ctx->running;
                ctx->running = NULL;
                exec_died(a, e, why);
        }
        if (ctx->removed) {
                fail_queue(a, ctx, CV_ERR_CANCELLED, "the context was removed");
                context_free(a, ctx);
                return;
        }
        ctx->restarting = false;
        if (!respawn_now && !a->stopping) {
                if (++ctx->start_failures >= CONTEXT_MAX_START_FAILURES) {
                        char msg[300];
                        snprintf(msg, sizeof(msg), "context failed to start %u times: %s",
                                 ctx->start_failures, why);
                        fail_queue(a, ctx, CV_ERR_INTERNAL, msg);
                }
                free(ctx->death_reason);
                ctx->death_reason = NULL;
                backoff(ctx);
                return;
        }
        free(ctx->death_reason);
        ctx->death_reason = NULL;
        if (!a->stopping)
                context_spawn(a, ctx);
}

bool context_reaped(struct agent *a, pid_t pid, int status)
{
        for (struct context *ctx = a->contexts; ctx; ctx = ctx->next) {
                if (ctx->pid != pid)
                        continue;
                char how[96];
                describe_status(status, how, sizeof(how));
                char why[128];
                snprintf(why, sizeof(why), "executor %s", how);
                finalize(a, ctx, why);
                return true;
        }
        return false;
}

void context_restart(struct agent *a, struct context *ctx)
{
        fail_queue(a, ctx, CV_ERR_CANCELLED, "the context was restarted");
        ctx->start_failures = 0;
        switch (ctx->state) {
        case CTX_DORMANT:
        case CTX_WAIT_ZYGOTE:
                return;
        case CTX_BACKOFF:
                context_spawn(a, ctx);
                return;
        case CTX_STARTING:
        case CTX_READY:
        case CTX_DYING:
                ctx->restarting = true;
                if (ctx->pid > 0)
                        kill_executor(a, ctx, "the context was restarted");
                else
                        finalize(a, ctx, "the context was restarted");
                return;
        }
}

void context_remove(struct agent *a, struct context *ctx)
{
        ctx->removed = true;
        a->ncontexts--;
        fail_queue(a, ctx, CV_ERR_CANCELLED, "the context was removed");
        if (ctx->pid > 0 &&
            (ctx->state == CTX_READY || ctx->state == CTX_STARTING || ctx->state == CTX_DYING))
                kill_executor(a, ctx, "the context was removed");
        else
                finalize(a, ctx, "the context was removed");
}

static void send_sigint(struct context *ctx)
{
        if (kill(ctx->pid, SIGINT) < 0)
                log_error("context %s: kill(%d, SIGINT): %s", ctx->id, (int)ctx->pid,
                          strerror(errno));
}

void context_interrupt(struct agent *a, struct context *ctx)
{
        (void)a;
        if (!ctx->running || ctx->pid <= 0)
                return;
        if (!ctx->kill_at)
                ctx->kill_at = now_mono() + INTERRUPT_GRACE_NS;
        /* Until it sends EXEC_INPUT the executor is between cells and ignores SIGINT
         * (ipykernel's rule): the signal goes out when the cell starts. */
        if (!ctx->running->input_seen) {
                ctx->running->interrupt_pending = true;
                return;
        }
        send_sigint(ctx);
}

void context_enqueue(struct agent *a, struct context *ctx, struct exec *e)
{
        e->ctx = ctx;
        e->conn_next = e->conn->execs;
        e->conn->execs = e;
        e->conn->ninflight++;
        if (ctx->queue_tail)
                ctx->queue_tail->queue_next = e;
        else
                ctx->queue_head = e;
        ctx->queue_tail = e;
        if (ctx->state == CTX_DORMANT)
                context_spawn(a, ctx); /* its first execution */
        context_start_next(a, ctx);
}

/* X_EXECUTE: the request's pairs and the agent's epoch now (the executor reseeds
 * before the cell if it has not seen this one, section 8). */
static int queue_x_execute(struct agent *a, struct context *ctx, struct exec *e)
{
        struct cv_buf *b = &ctx->ctl_out;
        size_t mark;
        cv_out_begin(b, &mark);
        cv_enc_map(b, e->xpairs + 1);
        cv_buf_append(b, cv_buf_head(&e->xbody), cv_buf_pending(&e->xbody));
        cv_enc_cstr(b, "epoch");
        cv_enc_uint(b, a->epoch);
        return cv_out_end(b, mark, CV_MSG_X_EXECUTE, e->internal_id);
}

void context_start_next(struct agent *a, struct context *ctx)
{
        if (ctx->state != CTX_READY || !ctx->spawned_seen || ctx->running || !ctx->queue_head)
                return;
        /* Prepared for a snapshot: no cell starts before the copy has its generation. */
        if (a->awaiting_generation)
                return;
        vmfork_check(a); /* the epoch of this very moment */
        struct exec *e = ctx->queue_head;
        ctx->queue_head = e->queue_next;
        if (!ctx->queue_head)
                ctx->queue_tail = NULL;
        e->queue_next = NULL;
        e->running = true;
        e->internal_id = ++a->next_internal_id;
        if (e->internal_id == 0)
                e->internal_id = ++a->next_internal_id;
        ctx->running = e;
        ctx->dec_out.npending = ctx->dec_err.npending = 0;
        int rc = queue_x_execute(a, ctx, e);
        cv_buf_free(&e->xbody);
        if (rc == 0)
                rc = cv_buf_flush(&ctx->ctl_out, ctx->ctl.fd);
        if (rc < 0)
                /* The control socket's EOF or the reaping settles the execution. */
                log_error("context %s: sending X_EXECUTE: %s", ctx->id, strerror(-rc));
        e->deadline = e->timeout_ns ? now_mono() + e->timeout_ns : 0;
        log_debug("context %s: running execution %u (conn %u id %u)", ctx->id, e->internal_id,
                  e->conn ? e->conn->num : 0, e->client_id);
        context_update_interest(a, ctx);
}

void context_cancel_exec(struct agent *a, struct exec *e, bool notify)
{
        struct context *ctx = e->ctx;
        if (!e->running) {
                struct exec *prev = NULL;
                for (struct exec *q = ctx->queue_head; q; prev = q, q = q->queue_next) {
                        if (q != e)
                                continue;
                        if (prev)
                                prev->queue_next = e->queue_next;
                        else
                                ctx->queue_head = e->queue_next;
                        if (ctx->queue_tail == e)
                                ctx->queue_tail = prev;
                        break;
                }
                if (notify && e->conn)
                        conn_send_error(a, e->conn, e->client_id, CV_ERR_CANCELLED,
                                        "cancelled before it started");
                exec_detach_conn(e);
                exec_free(e);
                return;
        }
        e->end = END_CANCELLED;
        if (!notify) {
                exec_detach_conn(e);
                /* No client to slow us down any more. */
                context_update_interest(a, ctx);
                /* --on-disconnect continue: the cell finishes; its output is dropped. */
                if (a->disconnect_continues)
                        return;
        }
        context_interrupt(a, ctx);
}

static void earliest(uint64_t *next, uint64_t t)
{
        if (t && t < *next)
                *next = t;
}

void contexts_timers(struct agent *a, uint64_t now, uint64_t *next)
{
        struct context *after;
        for (struct context *ctx = a->contexts; ctx; ctx = after) {
                after = ctx->next;
                struct exec *e = ctx->running;
                if (e && e->deadline && now >= e->deadline) {
                        e->deadline = 0;
                        e->end = END_TIMEOUT;
                        log_info("context %s: execution %u timed out, interrupting", ctx->id,
                                 e->client_id);
                        context_interrupt(a, ctx);
                }
                if (ctx->kill_at && now >= ctx->kill_at) {
                        ctx->kill_at = 0;
                        log_info("context %s: killing executor %d", ctx->id, (int)ctx->pid);
                        kill_executor(a, ctx,
                                      ctx->state == CTX_DYING
                                          ? NULL
                                          : "the cell did not stop within 2 s of the "
                                            "interrupt; its process was killed");
                        /* Reaping finishes the job; if it never comes, don't spin. */
                        if (ctx->pid <= 0)
                                finalize(a, ctx, "killed");
                        continue;
                }
                if (ctx->state == CTX_STARTING && ctx->start_deadline &&
                    now >= ctx->start_deadline) {
                        ctx->start_deadline = 0;
                        log_error("context %s: executor not ready after %llu s", ctx->id,
                                  EXECUTOR_START_TIMEOUT_NS / 1000000000ull);
                        if (ctx->pid > 0) {
                                kill_executor(a, ctx, "the executor did not start in time");
                        } else {
                                finalize(a, ctx, "the executor did not start in time");
                                continue;
                        }
                }
                if (ctx->state == CTX_BACKOFF && now >= ctx->respawn_at)
                        context_spawn(a, ctx);

                if (e && ctx->running == e)
                        earliest(next, e->deadline);
                earliest(next, ctx->kill_at);
                if (ctx->state == CTX_STARTING)
                        earliest(next, ctx->start_deadline);
                if (ctx->state == CTX_BACKOFF)
                        earliest(next, ctx->respawn_at);
        }
}

static bool has_buffered_messages(const struct context *ctx)
{
        return !ctx->paused && ctx->ctl.fd >= 0 && cv_reader_buffered(&ctx->ctl_rd) > 0;
}

bool contexts_pending_work(struct agent *a)
{
        /* epoll cannot know about messages already in our read buffer. */
        struct context *after;
        for (struct context *ctx = a->contexts; ctx; ctx = after) {
                after = ctx->next;
                if (has_buffered_messages(ctx))
                        on_ctl(a, &ctx->ctl, 0); /* may free ctx, never another one */
        }
        for (struct context *ctx = a->contexts; ctx; ctx = ctx->next)
                if (has_buffered_messages(ctx))
                        return true;
        return false;
}

void contexts_kill_all(struct agent *a)
{
        while (a->contexts) {
                struct context *ctx = a->contexts;
                if (ctx->pid > 0) {
                        kill_executor(a, ctx, NULL);
                        /* SIGKILL is prompt; reap so no zombie outlives us. */
                        if (waitpid(ctx->pid, NULL, 0) < 0 && errno != ECHILD)
                                log_warn("waitpid(%d): %s", (int)ctx->pid, strerror(errno));
                }
                while (ctx->queue_head) {
                        struct exec *e = ctx->queue_head;
                        ctx->queue_head = e->queue_next;
                        exec_detach_conn(e);
                        exec_free(e);
                }
                if (ctx->running) {
                        exec_detach_conn(ctx->running);
                        exec_free(ctx->running);
                }
                watch_close(a, &ctx->ctl);
                watch_close(a, &ctx->out);
                watch_close(a, &ctx->err);
                context_free(a, ctx);
        }
}
