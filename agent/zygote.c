/* The zygote: a pre-initialised executor that forks a process per context (spec section 8). */

#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "boot.h"
#include "cbor_util.h"
#include "fd_pass.h"
#include "log.h"
#include "loop.h"
#include "msgtypes.h"
#include "spawner.h"
#include "vmfork.h"
#include "writer.h"

/* The fd number the zygote finds its control socket on (`--fd 3`). */
#define ZYGOTE_FD 3
/* Pause before restarting a zygote that died. */
#define ZYGOTE_RESTART_NS (500000000ull)

static void on_zygote(struct agent *a, struct watch *w, uint32_t events);

static void zygote_drop_fds(struct zygote *z)
{
        for (size_t i = 0; i < z->nfds; i++)
                if (close(z->fds[i]) < 0)
                        log_warn("close(fd from the zygote): %s", strerror(errno));
        z->nfds = 0;
}

/* The next `n` fds the zygote sent, in order; false (and none taken) if fewer came. */
static bool zygote_take_fds(struct zygote *z, int *out, size_t n)
{
        if (z->nfds < n)
                return false;
        memcpy(out, z->fds, n * sizeof(int));
        memmove(z->fds, z->fds + n, (z->nfds - n) * sizeof(int));
        z->nfds -= n;
        return true;
}

/* cv_reader_read() with the fds that ride along (SCM_RIGHTS), queued in z->fds. */
static int zygote_read(struct zygote *z, struct cv_msg *m)
{
        for (;;) {
                if (z->in_off < z->in_len) {
                        size_t used = 0;
                        int rc = cv_reader_feed(&z->rd, z->in + z->in_off, z->in_len - z->in_off,
                                                &used, m);
                        z->in_off += used;
                        if (rc != CV_READ_NEED)
                                return rc;
                }
                int fds[CV_FDS_MAX];
                size_t nfds = 0;
                ssize_t n = cv_recv_with_fds(z->w.fd, z->in, sizeof(z->in), fds, CV_FDS_MAX, &nfds);
                if (n == -EINTR)
                        continue;
                if (n == -EAGAIN || n == -EWOULDBLOCK)
                        return CV_READ_NEED;
                if (n < 0)
                        return (int)n;
                for (size_t i = 0; i < nfds; i++) {
                        if (z->nfds < ZYGOTE_MAX_FDS)
                                z->fds[z->nfds++] = fds[i];
                        else if (close(fds[i]) < 0) /* nobody took the earlier ones */
                                log_warn("close(fd from the zygote): %s", strerror(errno));
                }
                z->in_off = 0;
                z->in_len = (size_t)n;
                if (n == 0)
                        return CV_READ_EOF;
        }
}

/* In the child the spawner created (spawner.h): never returns. Only async-signal-safe calls;
 * reports errno on `errfd` if it cannot exec the zygote. */
void zygote_child_exec(struct agent *a, int fd, int errfd)
{
        int err = 0;
        /* fd 3 is the zygote's: keep the status pipe off it. */
        if (errfd == ZYGOTE_FD && (errfd = fcntl(errfd, F_DUPFD_CLOEXEC, ZYGOTE_FD + 1)) < 0)
                _exit(126);
        sigset_t set;
        loop_signals(&set);
        if (sigprocmask(SIG_UNBLOCK, &set, NULL) < 0)
                err = errno;
        signal(SIGPIPE, SIG_DFL);
        /* A zygote must not outlive the agent that serves its children. */
        if (!err && prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                err = errno;
        /* Executors read no input: keep whatever the agent's stdin is (a console) from them. */
        int null_fd = err ? -1 : open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (!err && (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0))
                err = errno;
        /* libgfortran (loaded with numpy's OpenBLAS at preload) picks unit 6's buffering once,
         * from fd 1: a regular file (a dev-mode agent's log) gets a block buffer, kept after a
         * cell's pipe is put on fd 1, so a SciPy fit's Fortran log would come cells late. A
         * console or /dev/null gets none. */
        struct stat st;
        if (!err && fstat(STDOUT_FILENO, &st) < 0)
                err = errno;
        if (!err && S_ISREG(st.st_mode)) {
                int null_out = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (null_out < 0 || dup2(null_out, STDOUT_FILENO) < 0)
                        err = errno;
        }
        if (!err && fd == ZYGOTE_FD) {
                int fl = fcntl(fd, F_GETFD);
                if (fl < 0 || fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC) < 0)
                        err = errno;
        } else if (!err && dup2(fd, ZYGOTE_FD) < 0) {
                err = errno;
        }
        if (!err) {
                char *argv[] = {(char *)a->executor, "--zygote",         "--fd", "3",
                                "--preload",         (char *)a->preload, NULL};
                execv(a->executor, argv);
                err = errno;
        }
        ssize_t w = write(errfd, &err, sizeof(err));
        (void)w; /* nothing more to do if the spawner is gone */
        _exit(127);
}

static const struct zygote_handlers *handlers;

void zygote_set_handlers(const struct zygote_handlers *h)
{
        handlers = h;
}

int zygote_start(struct agent *a)
{
        struct zygote *z = &a->zyg;
        z->restart_at = 0;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        /* The agent cannot fork (its filter): the spawner starts the zygote as our child. */
        pid_t pid = spawner_zygote(a, sv[1]);
        if (close(sv[1]) < 0)
                log_warn("close(zygote's socket end): %s", strerror(errno));
        if (pid < 0) {
                if (close(sv[0]) < 0)
                        log_warn("close(zygote's socket): %s", strerror(errno));
                return pid;
        }
        int fl = fcntl(sv[0], F_GETFL);
        if (fl < 0 || fcntl(sv[0], F_SETFL, fl | O_NONBLOCK) < 0) {
                int err = -errno;
                close(sv[0]);
                kill(pid, SIGKILL);
                return err;
        }
        z->pid = pid;
        z->ready = false;
        z->started_at = now_mono();
        cv_reader_free(&z->rd);
        cv_reader_init(&z->rd, CV_DEFAULT_MAX_MESSAGE);
        zygote_drop_fds(z);
        z->in_off = z->in_len = 0;
        cv_buf_reset(&z->out);
        z->w = (struct watch){.fd = sv[0], .fn = on_zygote};
        int rc = watch_set(a, &z->w, EPOLLIN);
        if (rc < 0) {
                close(sv[0]);
                z->w.fd = -1;
                kill(pid, SIGKILL);
                return rc;
        }
        log_info("zygote pid %d started: %s --zygote --fd 3 --preload '%s'", (int)pid, a->executor,
                 a->preload);
        return 0;
}

static void schedule_restart(struct agent *a)
{
        if (!a->stopping && !a->zyg.restart_at)
                a->zyg.restart_at = now_mono() + ZYGOTE_RESTART_NS;
}

static void handle_ready(struct agent *a, const struct cv_msg *m)
{
        cbor_item_t *body;
        if (cv_body_parse(m->body, m->len, &body) < 0) {
                log_error("zygote: Z_READY body is not a CBOR map");
                return;
        }
        cbor_item_t *arr;
        char list[512] = "";
        size_t k = 0;
        if (cv_map_get_array(body, "preloaded", &arr) == 0) {
                for (size_t i = 0; i < cbor_array_size(arr); i++) {
                        const char *s;
                        size_t n;
                        if (cv_item_str(cbor_array_handle(arr)[i], &s, &n) == 0 && k < sizeof(list))
                                k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%.*s",
                                                      k ? "," : "", (int)(n > 64 ? 64 : n), s);
                }
        }
        log_info("zygote pid %d ready, preloaded: %s", (int)a->zyg.pid, k ? list : "(none)");
        if (cv_map_get_array(body, "errors", &arr) == 0) {
                for (size_t i = 0; i < cbor_array_size(arr); i++) {
                        const char *s;
                        size_t n;
                        if (cv_item_str(cbor_array_handle(arr)[i], &s, &n) == 0)
                                log_warn("zygote preload error: %.*s", (int)(n > 300 ? 300 : n), s);
                }
        }
        cbor_decref(&body);
        a->zyg.ready = true;
        /* The first readiness is the boot stage; later ones are restarts. */
        bool seen = false;
        for (size_t i = 0; i < a->nboot; i++)
                seen = seen || strcmp(a->boot[i].name, "executor_ready") == 0;
        if (!seen)
                boot_stamp(a, "executor_ready", now_boottime());
        handlers->ready(a);
}

static void handle_spawned(struct agent *a, const struct cv_msg *m)
{
        cbor_item_t *body;
        if (cv_body_parse(m->body, m->len, &body) < 0) {
                log_error("zygote: Z_SPAWNED body is not a CBOR map");
                return;
        }
        const char *id;
        size_t len;
        uint64_t pid = 0;
        if (cv_map_get_str(body, "context", &id, &len) < 0 ||
            cv_map_get_uint(body, "pid", &pid) < 0) {
                log_error("zygote: Z_SPAWNED without context or pid");
                cbor_decref(&body);
                return;
        }
        /* A warm spare's own ends (docs/PROTOCOL.md section 8): they replace the context's. */
        uint64_t nfds = 0;
        int fds[3] = {-1, -1, -1};
        bool have_fds = false;
        if (cv_map_get_uint(body, "fds", &nfds) == 0 && nfds == 3) {
                have_fds = zygote_take_fds(&a->zyg, fds, 3);
                if (!have_fds)
                        log_error("zygote: Z_SPAWNED announces 3 fds, fewer came");
        }
        struct zygote_spawned ans = {.ctx_id = id,
                                     .ctx_id_len = len,
                                     .spawn_id = m->id,
                                     .pid = pid,
                                     .fds = have_fds ? fds : NULL};
        if (cv_map_get_str(body, "error", &ans.error, &ans.error_len) < 0)
                ans.error = "unknown error", ans.error_len = 13;
        handlers->spawned(a, &ans);
        have_fds = have_fds && ans.fds;
        if (have_fds) /* no context wants them: the spare ends with its socket */
                for (int i = 0; i < 3; i++)
                        if (close(fds[i]) < 0)
                                log_warn("close(a spare's fd): %s", strerror(errno));
        cbor_decref(&body);
}

static void zygote_lost(struct agent *a, const char *why)
{
        struct zygote *z = &a->zyg;
        log_error("zygote pid %d: %s", (int)z->pid, why);
        watch_close(a, &z->w);
        z->ready = false;
        if (z->pid > 0 && kill(z->pid, SIGKILL) < 0 && errno != ESRCH)
                log_error("kill(zygote %d): %s", (int)z->pid, strerror(errno));
        /* The restart is scheduled when it is reaped. */
}

static void on_zygote(struct agent *a, struct watch *w, uint32_t events)
{
        struct zygote *z = &a->zyg;
        if (events & EPOLLOUT) {
                int rc = cv_buf_flush(&z->out, w->fd);
                if (rc < 0) {
                        zygote_lost(a, "write to its socket failed");
                        return;
                }
                if (cv_buf_pending(&z->out) == 0 && watch_set(a, w, EPOLLIN) < 0)
                        log_error("zygote: epoll_ctl: %s", strerror(errno));
        }
        while (w->fd >= 0) {
                struct cv_msg m;
                int rc = zygote_read(z, &m);
                if (rc == CV_READ_NEED)
                        return;
                if (rc == CV_READ_EOF) {
                        zygote_lost(a, "closed its socket");
                        return;
                }
                if (rc < 0) {
                        char why[96];
                        snprintf(why, sizeof(why), "reading its socket: %s", strerror(-rc));
                        zygote_lost(a, why);
                        return;
                }
                if (m.type == CV_MSG_Z_READY)
                        handle_ready(a, &m);
                else if (m.type == CV_MSG_Z_SPAWNED)
                        handle_spawned(a, &m);
                else
                        log_warn("zygote: unexpected message %s (%#x)", cv_msg_type_name(m.type),
                                 m.type);
        }
}

int zygote_spawn(struct agent *a, uint32_t spawn_id, const char *ctx_id, const char *language,
                 const char *cwd, const int fds[3])
{
        struct zygote *z = &a->zyg;
        if (!z->ready || z->w.fd < 0)
                return -EAGAIN;
        if (cv_buf_pending(&z->out) > 0)
                return -EAGAIN; /* fds must ride with the first byte of their message */
        vmfork_check(a);        /* the epoch of this very moment */
        struct cv_buf *b = &a->scratch;
        cv_buf_reset(b);
        size_t mark;
        cv_out_begin(b, &mark);
        cv_enc_map(b, 4);
        cv_enc_cstr(b, "context");
        cv_enc_cstr(b, ctx_id);
        cv_enc_cstr(b, "language");
        cv_enc_cstr(b, language);
        cv_enc_cstr(b, "cwd");
        cv_enc_cstr(b, cwd);
        /* The zygote reseeds itself on a new one and drops spares of an older one. */
        cv_enc_cstr(b, "epoch");
        cv_enc_uint(b, a->epoch);
        int rc = cv_out_end(b, mark, CV_MSG_Z_SPAWN, spawn_id);
        if (rc < 0)
                return rc;
        ssize_t n = cv_send_with_fds(z->w.fd, cv_buf_head(b), cv_buf_pending(b), fds, 3,
                                     MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0)
                return (int)n;
        if ((size_t)n < cv_buf_pending(b)) {
                /* The rest (no fds) follows when the socket has room. */
                cv_buf_append(&z->out, cv_buf_head(b) + n, cv_buf_pending(b) - (size_t)n);
                if (z->out.err) {
                        int err = z->out.err;
                        cv_buf_reset(&z->out);
                        zygote_lost(a, "out of memory queueing Z_SPAWN");
                        return err;
                }
                if (watch_set(a, &z->w, EPOLLIN | EPOLLOUT) < 0)
                        log_error("zygote: epoll_ctl: %s", strerror(errno));
        }
        return 0;
}

bool zygote_reaped(struct agent *a, pid_t pid, int status)
{
        struct zygote *z = &a->zyg;
        if (pid != z->pid)
                return false;
        char how[96];
        describe_status(status, how, sizeof(how));
        if (!a->stopping)
                log_error("zygote pid %d %s", (int)pid, how);
        if (z->w.fd >= 0)
                watch_close(a, &z->w);
        z->pid = 0;
        z->ready = false;
        schedule_restart(a);
        return true;
}

void zygote_timers(struct agent *a, uint64_t now, uint64_t *next)
{
        struct zygote *z = &a->zyg;
        if (z->restart_at && now >= z->restart_at) {
                int rc = zygote_start(a);
                if (rc < 0) {
                        log_error("restarting the zygote: %s", strerror(-rc));
                        z->restart_at = 0;
                        schedule_restart(a);
                }
        }
        if (z->restart_at && z->restart_at < *next)
                *next = z->restart_at;
}

void zygote_stop(struct agent *a)
{
        struct zygote *z = &a->zyg;
        if (z->w.fd >= 0)
                watch_close(a, &z->w);
        if (z->pid > 0) {
                if (kill(z->pid, SIGKILL) < 0 && errno != ESRCH)
                        log_warn("kill(zygote %d): %s", (int)z->pid, strerror(errno));
                if (waitpid(z->pid, NULL, 0) < 0 && errno != ECHILD)
                        log_warn("waitpid(zygote %d): %s", (int)z->pid, strerror(errno));
                z->pid = 0;
        }
        cv_reader_free(&z->rd);
        zygote_drop_fds(z);
        cv_buf_free(&z->out);
}
