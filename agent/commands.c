/*
 * The commands service (section 10): shell commands as child processes of the
 * agent, their stdout and stderr relayed as CMD_OUTPUT while they run, stdin
 * fed from CMD_STDIN, the exit status in the terminal OK. A command outlives
 * its request only when started with `background`: then a disconnect detaches
 * it (it keeps running, its output is dropped) instead of killing it.
 * With `pty`, the command runs on a pseudo-terminal (pty.h): one output
 * stream, "pty", read from the master, and CMD_STDIN and CMD_RESIZE go to it.
 */

#include "commands.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grp.h>

#include "../confine/confine.h"
#include "cbor_util.h"
#include "conn.h"
#include "creds.h"
#include "log.h"
#include "loop.h"
#include "msgtypes.h"
#include "pty.h"
#include "spawner.h"
#include "svc.h"
#include "writer.h"

/* Bytes read from a command's pipe per CMD_OUTPUT. */
#define CMD_READ_CHUNK (64u * 1024u)
/* Stdin bytes queued for a command that does not read them. */
#define CMD_STDIN_LIMIT (16u * 1024u * 1024u)
/* After the exit, output still in the pipes is relayed up to this much per stream. */
#define CMD_DRAIN_LIMIT (4u * 1024u * 1024u)
#define CMD_MAX 1024u
/* Arguments of a CMD_START `argv` (the spawner's bound). */
#define CMD_ARGV_MAX 4096u

struct kill_wait;

struct command {
        struct command *next;         /* in the agent's list */
        struct kill_wait *kill_waits; /* CMD_KILLs answered at its reap */
        struct svc_req r;             /* r.conn is NULL once no client follows it */
        pid_t pid;
        char *cmd;
        char *cwd;
        char *tag;
        struct cv_buf envs;        /* the request's `envs` map, encoded, for CMD_LIST */
        struct watch out, err, in; /* pty: out reads the master, in writes a dup of it */
        struct cv_buf in_buf;
        bool in_eof; /* close stdin once in_buf is written */
        bool background;
        bool pty;
        bool timed_out;
        bool killed;
        bool paused;
        uint64_t timeout_ns;
        uint64_t deadline; /* monotonic ns, 0 = none */
};

static struct command *commands;
static unsigned ncommands;

/* A CMD_KILL with SIGKILL: its OK comes once the command is reaped, as envd's
 * kill returns once the process is gone (a `kill -0 PID` after it finds none). */
struct kill_wait {
        struct svc_req r;
        struct kill_wait *next; /* the command's */
        struct command *k;
};

static void kill_wait_end(struct kill_wait *w)
{
        for (struct kill_wait **pp = &w->k->kill_waits; *pp; pp = &(*pp)->next)
                if (*pp == w) {
                        *pp = w->next;
                        break;
                }
        svc_detach(&w->r);
        free(w);
}

static void kill_wait_cancel(struct agent *a, struct svc_req *r, bool notify)
{
        struct kill_wait *w = (struct kill_wait *)((char *)r - offsetof(struct kill_wait, r));
        if (notify && r->conn)
                conn_send_error(a, r->conn, r->id, CV_ERR_CANCELLED,
                                "kill of command %d: cancelled", (int)w->k->pid);
        kill_wait_end(w);
}

static const struct svc_ops kill_wait_ops = {
    .name = "command kill",
    .cancel = kill_wait_cancel,
};

static struct command *find_pid(uint64_t pid)
{
        for (struct command *k = commands; k; k = k->next)
                if ((uint64_t)k->pid == pid)
                        return k;
        return NULL;
}

static void command_free(struct agent *a, struct command *k)
{
        for (struct command **pp = &commands; *pp; pp = &(*pp)->next) {
                if (*pp == k) {
                        *pp = k->next;
                        ncommands--;
                        break;
                }
        }
        svc_detach(&k->r);
        watch_close(a, &k->out);
        watch_close(a, &k->err);
        watch_close(a, &k->in);
        cv_buf_free(&k->in_buf);
        cv_buf_free(&k->envs);
        free(k->cmd);
        free(k->cwd);
        free(k->tag);
        free(k);
}

static void command_kill(struct command *k, int sig)
{
        /* The whole process group: a shell's children go too. */
        if (kill(-k->pid, sig) < 0 && kill(k->pid, sig) < 0 && errno != ESRCH)
                log_warn("command %d: kill: %s", (int)k->pid, strerror(errno));
        k->killed = true;
}

static void set_interest(struct agent *a, struct watch *w, uint32_t ev, const char *what)
{
        int rc = watch_set(a, w, ev);
        if (rc < 0)
                log_error("command: epoll_ctl(%s): %s", what, strerror(-rc));
}

static void output_interest(struct agent *a, struct command *k)
{
        k->paused = k->r.conn && conn_over_high_water(k->r.conn);
        set_interest(a, &k->out, k->paused ? 0 : EPOLLIN, "stdout");
        set_interest(a, &k->err, k->paused ? 0 : EPOLLIN, "stderr");
}

/* Reads once from a pipe and relays it. Returns bytes read, 0 at EOF (pipe closed), or -1. */
static ssize_t relay_once(struct agent *a, struct command *k, struct watch *w, const char *name)
{
        struct conn *c = k->r.conn;
        uint8_t buf[CMD_READ_CHUNK];
        ssize_t n = read(w->fd, buf, sizeof(buf));
        if (n < 0 && errno == EIO && k->pty) {
                /* A pty master reads EIO once every slave fd is closed: its EOF. */
                watch_close(a, w);
                return 0;
        }
        if (n < 0) {
                if (errno != EAGAIN && errno != EINTR) {
                        log_warn("command %d: read(%s): %s", (int)k->pid, name, strerror(errno));
                        watch_close(a, w);
                }
                return -1;
        }
        if (n == 0) {
                watch_close(a, w);
                return 0;
        }
        if (c) {
                size_t mark;
                cv_out_begin(&c->out, &mark);
                cv_enc_map(&c->out, 2);
                cv_enc_cstr(&c->out, "stream");
                cv_enc_cstr(&c->out, name);
                cv_enc_cstr(&c->out, "data");
                cv_enc_bytes(&c->out, buf, (size_t)n);
                if (cv_out_end(&c->out, mark, CV_MSG_CMD_OUTPUT, k->r.id) < 0)
                        log_error("conn %u: id %u: queueing CMD_OUTPUT failed", c->num, k->r.id);
                conn_touch(c);
        }
        return n;
}

/* The CMD_OUTPUT stream of `out` (else err). */
static const char *out_name(const struct command *k, bool is_out)
{
        return k->pty ? "pty" : is_out ? "stdout" : "stderr";
}

static void on_output(struct agent *a, struct watch *w, uint32_t events)
{
        (void)events;
        bool is_out = false;
        struct command *k = NULL;
        for (struct command *x = commands; x && !k; x = x->next) {
                if (&x->out == w)
                        k = x, is_out = true;
                else if (&x->err == w)
                        k = x;
        }
        if (!k)
                return;
        relay_once(a, k, w, out_name(k, is_out));
        if (k->r.conn && conn_over_high_water(k->r.conn))
                output_interest(a, k);
}

static int flush_stdin(struct command *k)
{
        int rc = cv_buf_flush(&k->in_buf, k->in.fd);
        if (rc < 0)
                cv_buf_reset(&k->in_buf); /* EPIPE: the command closed its stdin */
        return rc;
}

static void stdin_interest(struct agent *a, struct command *k)
{
        if (k->in.fd < 0)
                return;
        if (cv_buf_pending(&k->in_buf) > 0) {
                set_interest(a, &k->in, EPOLLOUT, "stdin");
                return;
        }
        if (k->in_eof)
                watch_close(a, &k->in);
        else
                set_interest(a, &k->in, 0, "stdin");
}

static void on_stdin(struct agent *a, struct watch *w, uint32_t events)
{
        (void)events;
        struct command *k = (struct command *)((char *)w - offsetof(struct command, in));
        int rc = flush_stdin(k);
        if (rc < 0)
                log_debug("command %d: writing stdin: %s", (int)k->pid, strerror(-rc));
        stdin_interest(a, k);
}

/* Go's ProcessState.String(), which E2B reports as the command's `error`. */
static void exit_text(int status, int *code, char *err, size_t size)
{
        err[0] = '\0';
        if (WIFEXITED(status)) {
                *code = WEXITSTATUS(status);
                if (*code)
                        snprintf(err, size, "exit status %d", *code);
                return;
        }
        *code = -1;
        const char *s = WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "unknown";
        snprintf(err, size, "signal: %s", s ? s : "unknown");
        if (err[8] >= 'A' && err[8] <= 'Z')
                err[8] = (char)(err[8] - 'A' + 'a');
}

static void command_finish(struct agent *a, struct command *k, int status)
{
        /* Whatever the command wrote before it exited is in the pipes now. */
        size_t drained[2] = {0, 0};
        struct watch *ws[2] = {&k->out, &k->err};
        for (int i = 0; i < 2; i++) {
                while (ws[i]->fd >= 0 && drained[i] < CMD_DRAIN_LIMIT) {
                        ssize_t n = relay_once(a, k, ws[i], out_name(k, i == 0));
                        if (n <= 0)
                                break;
                        drained[i] += (size_t)n;
                }
        }
        while (k->kill_waits) {
                struct kill_wait *w = k->kill_waits;
                if (w->r.conn)
                        svc_reply_ok_empty(w->r.conn, w->r.id);
                kill_wait_end(w);
        }
        int code;
        char err[96];
        exit_text(status, &code, err, sizeof(err));
        log_debug("command %d ended: %s", (int)k->pid, err[0] ? err : "exit status 0");
        struct conn *c = k->r.conn;
        if (c && k->timed_out) {
                conn_send_error(a, c, k->r.id, CV_ERR_TIMEOUT,
                                "command ran past its timeout of %llu ms and was killed",
                                (unsigned long long)(k->timeout_ns / 1000000ull));
        } else if (c) {
                size_t mark;
                cv_out_begin(&c->out, &mark);
                cv_enc_map(&c->out, err[0] ? 2 : 1);
                cv_enc_cstr(&c->out, "exit_code");
                cv_enc_int(&c->out, code);
                if (err[0]) {
                        cv_enc_cstr(&c->out, "error");
                        cv_enc_cstr(&c->out, err);
                }
                if (cv_out_end(&c->out, mark, CV_MSG_OK, k->r.id) < 0)
                        conn_send_error(a, c, k->r.id, CV_ERR_INTERNAL, "encoding the reply");
                conn_touch(c);
        }
        command_free(a, k);
}

bool commands_reaped(struct agent *a, pid_t pid, int status)
{
        struct command *k = find_pid((uint64_t)pid);
        if (!k)
                return false;
        command_finish(a, k, status);
        return true;
}

void commands_timers(struct agent *a, uint64_t now, uint64_t *next)
{
        (void)a;
        for (struct command *k = commands; k; k = k->next) {
                if (!k->deadline)
                        continue;
                if (k->deadline <= now) {
                        log_info("command %d: timeout of %llu ms: killing it", (int)k->pid,
                                 (unsigned long long)(k->timeout_ns / 1000000ull));
                        k->timed_out = true;
                        k->deadline = 0;
                        command_kill(k, SIGKILL);
                } else if (k->deadline < *next) {
                        *next = k->deadline;
                }
        }
}

void commands_kill_all(struct agent *a)
{
        (void)a;
        for (struct command *k = commands; k; k = k->next)
                command_kill(k, SIGKILL);
}

static void command_cancel(struct agent *a, struct svc_req *r, bool notify)
{
        struct command *k = (struct command *)((char *)r - offsetof(struct command, r));
        if (notify && r->conn)
                conn_send_error(a, r->conn, r->id, CV_ERR_CANCELLED, "command %d killed",
                                (int)k->pid);
        if (notify || !k->background)
                command_kill(k, SIGKILL);
        else
                log_info("command %d: its client left; it keeps running in the background",
                         (int)k->pid);
        /* Stays in the list until reaped; nobody follows its output any more. */
        svc_detach(r);
        output_interest(a, k);
}

static void command_resume(struct agent *a, struct svc_req *r)
{
        struct command *k = (struct command *)((char *)r - offsetof(struct command, r));
        if (k->paused)
                output_interest(a, k);
}

static const struct svc_ops command_ops = {
    .name = "command",
    .cancel = command_cancel,
    .resume = command_resume,
};

/* --- starting --- */

/* In the child, still root: joins the commands' cgroup. Returns 0 or an errno. */
static int join_cgroup(const char *procs)
{
        if (!procs[0])
                return 0;
        if (procs[0] == '-')
                return EPERM; /* the cgroup could not be made: no unbounded commands */
        int fd = open(procs, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return errno;
        int err = write(fd, "0", 1) == 1 ? 0 : errno;
        if (close(fd) < 0 && !err)
                err = errno;
        return err;
}

/* Appends `envs`' NAME=VALUE strings to env[0..m) (room made by the caller), each
 * replacing an earlier NAME=; returns the new count. A NULL entry is an allocation that
 * failed (build_env() checks). */
static size_t add_envs(char **env, size_t m, const cbor_item_t *envs)
{
        struct cbor_pair *pairs = cbor_map_handle(envs);
        for (size_t i = 0; i < cbor_map_size(envs); i++) {
                const char *k, *v;
                size_t kl, vl;
                if (cv_item_str(pairs[i].key, &k, &kl) < 0 ||
                    cv_item_str(pairs[i].value, &v, &vl) < 0)
                        continue;
                char *s = malloc(kl + vl + 2);
                if (s) {
                        memcpy(s, k, kl);
                        s[kl] = '=';
                        memcpy(s + kl + 1, v, vl);
                        s[kl + vl + 1] = '\0';
                }
                /* A later NAME= wins over an inherited one for getenv(), but drop the old anyway.
                 */
                for (size_t j = 0; j < m; j++) {
                        if (env[j] && strncmp(env[j], k, kl) == 0 && env[j][kl] == '=') {
                                free(env[j]);
                                env[j] = env[--m];
                                env[m] = NULL;
                                break;
                        }
                }
                env[m++] = s;
        }
        return m;
}

/* NAME=VALUE strings: the agent's environment, the user's identity, `term` (TERM=..., or
 * NULL to inherit it), then each of `maps` (NULL or a map) in turn, a later one's name over
 * an earlier one's. */
static char **build_env(const struct creds *cr, const cbor_item_t *const maps[2], const char *term)
{
        extern char **environ;
        size_t n = 0;
        while (environ[n])
                n++;
        size_t extra = 6;
        for (int i = 0; i < 2; i++)
                extra += maps[i] ? cbor_map_size(maps[i]) : 0;
        char **env = calloc(n + extra + 1, sizeof(*env));
        if (!env)
                return NULL;
        size_t m = 0;
        static const char *const replaced[] = {"HOME=", "USER=", "LOGNAME=", CONFINE_ENV "=", NULL};
        bool has_path = false;
        for (size_t i = 0; i < n; i++) {
                bool skip = false;
                for (int j = 0; replaced[j]; j++)
                        skip = skip || strncmp(environ[i], replaced[j], strlen(replaced[j])) == 0;
                skip = skip || (term && strncmp(environ[i], "TERM=", 5) == 0);
                has_path = has_path || strncmp(environ[i], "PATH=", 5) == 0;
                if (!skip)
                        env[m++] = strdup(environ[i]);
        }
        char kv[4200];
        snprintf(kv, sizeof(kv), "HOME=%s", cr->home);
        env[m++] = strdup(kv);
        snprintf(kv, sizeof(kv), "USER=%s", cr->name);
        env[m++] = strdup(kv);
        snprintf(kv, sizeof(kv), "LOGNAME=%s", cr->name);
        env[m++] = strdup(kv);
        if (!has_path)
                env[m++] =
                    strdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        if (term)
                env[m++] = strdup(term); /* `envs` may still set its own */
        for (int i = 0; i < 2; i++)
                if (maps[i])
                        m = add_envs(env, m, maps[i]);
        env[m] = NULL;
        for (size_t i = 0; i < m; i++) {
                if (!env[i]) {
                        for (size_t j = 0; j < m; j++)
                                free(env[j]);
                        free(env);
                        return NULL;
                }
        }
        return env;
}

static void free_env(char **env)
{
        for (size_t i = 0; env && env[i]; i++)
                free(env[i]);
        free(env);
}

/*
 * In the child: the isolation policy the agent gives user code (confine.h,
 * from CONFINE_ENV: rlimits, seccomp, no new privileges, network), with the
 * identity of the requested user instead of the policy's. Without a policy,
 * just the credential drop. Returns 0 or an errno.
 */
static int confine_child(const struct creds *cr)
{
        const char *text = getenv(CONFINE_ENV);
        struct confine_policy p;
        if (text && confine_policy_parse(text, &p) == 0) {
                p.drop_user = cr->drop;
                p.uid = cr->uid;
                p.gid = cr->gid;
#ifdef __SANITIZE_ADDRESS__
                /* This child is still the ASan agent until exec: its allocator needs more
                 * address space than RLIMIT_DATA allows. Sanitizer builds only. */
                p.data = 0;
#endif
                const char *step = "";
                int rc = confine_apply(&p, &step);
                return rc < 0 ? -rc : 0;
        }
        if (cr->drop && (setgroups((size_t)cr->ngroups, cr->groups) < 0 || setgid(cr->gid) < 0 ||
                         setuid(cr->uid) < 0))
                return errno;
        return 0;
}

/* In the child, still root, session leader with the pty's slave as fd 0: makes it the
 * controlling terminal, owned by the user who runs on it (as login does). 0 or an errno. */
static int take_terminal(const struct creds *cr)
{
        if (ioctl(0, TIOCSCTTY, 0) < 0)
                return errno;
        if (cr->drop && fchown(0, cr->uid, (gid_t)-1) < 0)
                return errno;
        return 0;
}

/* In the child the spawner created (spawner.h): becomes the command. Only async-signal-safe
 * calls; reports errno on `errfd`. */
/* Every signal back to its default action: what whoever started the agent
 * ignored (a shell's background job ignores SIGINT and SIGQUIT; nohup,
 * SIGHUP) or the agent itself set (SIGPIPE) must not reach user commands,
 * whose ^C would then do nothing. 0 or an errno. */
static int default_signals(void)
{
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigemptyset(&dfl.sa_mask);
        for (int sig = 1; sig < NSIG; sig++) {
                if (sig == SIGKILL || sig == SIGSTOP)
                        continue;
                /* EINVAL: numbers the C library keeps for itself. */
                if (sigaction(sig, &dfl, NULL) < 0 && errno != EINVAL)
                        return errno;
        }
        return 0;
}

void command_child_exec(const struct spawn_spec *s, int in_fd, int out_fd, int err_fd, int errfd)
{
        int err = 0;
        sigset_t none;
        sigemptyset(&none);
        /* On a pty, the command leads a new session (its terminal's); else a process group.
         * Either way its pid is the group's, which command_kill() signals. */
        if ((s->pty ? (int)setsid() : setpgid(0, 0)) < 0 ||
            sigprocmask(SIG_SETMASK, &none, NULL) < 0)
                err = errno;
        if (!err)
                err = default_signals();
        if (!err && (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0))
                err = errno;
        if (!err && s->pty)
                err = take_terminal(s->cr);
        if (!err)
                err = join_cgroup(s->cgroup_procs);
        if (!err && !s->system)
                err = confine_child(s->cr);
        if (!err && chdir(s->cwd) < 0)
                err = errno;
        if (!err && s->argv) {
                execve(s->argv[0], s->argv, s->env);
                err = errno;
        } else if (!err) {
                static const char bash[] = "/bin/bash";
                if (access(bash, X_OK) == 0) {
                        char *argv[] = {"/bin/bash", "-l", "-c", (char *)s->cmd, NULL};
                        execve(bash, argv, s->env);
                } else {
                        char *argv[] = {"/bin/sh", "-c", (char *)s->cmd, NULL};
                        execve("/bin/sh", argv, s->env);
                }
                err = errno;
        }
        ssize_t w = write(errfd, &err, sizeof(err));
        (void)w; /* nothing more to do if the parent is gone */
        _exit(127);
}

/*
 * command_spawn() on a pty of `cols` x `rows`: the slave is the child's fds 0-2, the agent
 * keeps the master to read (`*out_r`) and a dup of it to write (`*in_w`: epoll watches
 * each fd once); `*err_r` is -1. Returns the pid or -errno.
 */
static pid_t pty_command_spawn(struct agent *a, const struct spawn_spec *s, int *in_w, int *out_r,
                               int *err_r)
{
        int master, slave;
        int rc = pty_open(s->cols, s->rows, &master, &slave);
        if (rc < 0)
                return rc;
        int master_w = fcntl(master, F_DUPFD_CLOEXEC, 0);
        pid_t pid = master_w < 0 ? -errno : spawner_command(a, s, slave, slave, slave);
        if (close(slave) < 0)
                log_warn("command: close: %s", strerror(errno));
        if (pid < 0) {
                if (close(master) < 0 || (master_w >= 0 && close(master_w) < 0))
                        log_warn("command: close: %s", strerror(errno));
                return pid;
        }
        *in_w = master_w;
        *out_r = master;
        *err_r = -1;
        return pid;
}

/*
 * Starts the command through the spawner (the agent cannot fork), which runs
 * command_child_exec() in the new process: process group, pipes, cgroup,
 * credential drop, cwd and exec. Fills the pipe ends the agent keeps (stdin
 * write end or -1, stdout and stderr read ends). Returns the pid or -errno (of
 * the spawn, or of the child's setup or exec).
 */
static pid_t command_spawn(struct agent *a, const struct spawn_spec *s, int *in_w, int *out_r,
                           int *err_r)
{
        if (s->pty)
                return pty_command_spawn(a, s, in_w, out_r, err_r);
        int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
        int rc = 0;
        if (s->with_stdin ? pipe2(in, O_CLOEXEC) < 0
                          : (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
                rc = -errno;
        if (rc == 0 && (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0))
                rc = -errno;
        pid_t pid = rc;
        if (rc == 0)
                pid = spawner_command(a, s, in[0], out[1], err[1]);
        int child_ends[] = {in[0], out[1], err[1]};
        for (size_t i = 0; i < 3; i++)
                if (child_ends[i] >= 0 && close(child_ends[i]) < 0)
                        log_warn("command: close: %s", strerror(errno));
        if (pid < 0) {
                int leftovers[] = {in[1], out[0], err[0]};
                for (size_t i = 0; i < 3; i++)
                        if (leftovers[i] >= 0 && close(leftovers[i]) < 0)
                                log_warn("command: close: %s", strerror(errno));
                return pid;
        }
        *in_w = in[1];
        *out_r = out[0];
        *err_r = err[0];
        return pid;
}

static int set_nonblock(int fd)
{
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return -errno;
        return 0;
}

/* CMD_STARTED{pid}: the command of request `id` runs and its output follows. */
static void send_started(struct conn *c, uint32_t id, pid_t pid)
{
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, 1);
        cv_enc_cstr(&c->out, "pid");
        cv_enc_uint(&c->out, (uint64_t)pid);
        if (cv_out_end(&c->out, mark, CV_MSG_CMD_STARTED, id) < 0)
                log_error("conn %u: id %u: queueing CMD_STARTED failed", c->num, id);
        conn_touch(c);
}

/* CMD_START's `argv` into a NULL-terminated copy (free_env()); -ENOENT without it, -EINVAL
 * when malformed, -ENOMEM. */
static int parse_argv(const cbor_item_t *body, char ***out)
{
        cbor_item_t *arr = NULL;
        int rc = cv_map_get_array(body, "argv", &arr);
        if (rc < 0)
                return rc == -ENOENT ? rc : -EINVAL;
        size_t n = cbor_array_size(arr);
        if (n == 0 || n > CMD_ARGV_MAX)
                return -EINVAL;
        char **v = calloc(n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *p;
                size_t len;
                rc = cv_item_str(cbor_array_handle(arr)[i], &p, &len);
                if (rc < 0 || memchr(p, '\0', len) || (i == 0 && (len == 0 || p[0] != '/'))) {
                        rc = -EINVAL;
                } else if (!(v[i] = strndup(p, len))) {
                        rc = -ENOMEM;
                }
                if (rc < 0) {
                        free_env(v);
                        return rc;
                }
        }
        *out = v;
        return 0;
}

/* argv as one line, for CMD_LIST and logs. NULL when out of memory. */
static char *join_argv(char *const *argv)
{
        size_t len = 1;
        for (size_t i = 0; argv[i]; i++)
                len += strlen(argv[i]) + 1;
        char *s = malloc(len), *p = s;
        for (size_t i = 0; s && argv[i]; i++)
                p += sprintf(p, "%s%s", i ? " " : "", argv[i]);
        if (s)
                *p = '\0';
        return s;
}

/* `pty: {cols, rows}` of a CMD_START or CMD_RESIZE into *cols, *rows; -ENOENT without it,
 * -EINVAL when malformed. */
static int parse_pty_size(const cbor_item_t *body, uint16_t *cols, uint16_t *rows)
{
        cbor_item_t *pty = NULL;
        int rc = cv_map_get_map(body, "pty", &pty);
        if (rc < 0)
                return rc == -ENOENT ? rc : -EINVAL;
        uint64_t c, r;
        if (cv_map_get_uint(pty, "cols", &c) < 0 || cv_map_get_uint(pty, "rows", &r) < 0 ||
            c == 0 || r == 0 || c > PTY_SIZE_MAX || r > PTY_SIZE_MAX)
                return -EINVAL;
        *cols = (uint16_t)c;
        *rows = (uint16_t)r;
        return 0;
}

/* body's map `key` of names (no '=') to texts into *out (NULL when absent); -EINVAL when
 * malformed. */
static int get_env_map(const cbor_item_t *body, const char *key, cbor_item_t **out)
{
        *out = NULL;
        int rc = cv_map_get_map(body, key, out);
        if (rc == -ENOENT)
                return 0;
        if (rc < 0)
                return -EINVAL;
        struct cbor_pair *pairs = cbor_map_handle(*out);
        for (size_t i = 0; i < cbor_map_size(*out); i++) {
                const char *p;
                size_t n;
                if (cv_item_str(pairs[i].key, &p, &n) < 0 || n == 0 || memchr(p, '=', n) ||
                    memchr(p, '\0', n) || cv_item_str(pairs[i].value, &p, &n) < 0 ||
                    memchr(p, '\0', n))
                        return -EINVAL;
        }
        return 0;
}

void commands_start_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        char *user = NULL, *cwd = NULL, *tag = NULL;
        const char *cmd = NULL;
        size_t cmd_len = 0;
        cbor_item_t *envs = NULL, *sandbox_envs = NULL;
        bool with_stdin = false, background = false, system = false;
        uint64_t timeout_ms = 0;
        char **argv = NULL;
        int ra = parse_argv(body, &argv);
        int rcmd = cv_map_get_str(body, "cmd", &cmd, &cmd_len);
        if (ra == -ENOMEM) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                return;
        }
        if (ra == -EINVAL || (ra == 0) == (rcmd == 0) ||
            (rcmd == 0 && memchr(cmd, '\0', cmd_len))) {
                free_env(argv);
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "one of `cmd` (text) or `argv` (1 to %u texts, the first an "
                                "absolute path) is required",
                                CMD_ARGV_MAX);
                return;
        }
        /* `sandbox_envs`: the sandbox's environment (E2B's defaults, its create envs), under
         * `envs`; CMD_LIST shows `envs` alone, as E2B's process list shows a start's own. */
        if (get_env_map(body, "envs", &envs) < 0 ||
            get_env_map(body, "sandbox_envs", &sandbox_envs) < 0) {
                free_env(argv);
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`envs` and `sandbox_envs` must map names (no '=') to text values");
                return;
        }
        int r1 = cv_map_dup_str(body, "user", &user), r2 = cv_map_dup_str(body, "cwd", &cwd),
            r3 = cv_map_dup_str(body, "tag", &tag),
            r4 = cv_map_get_bool(body, "stdin", &with_stdin),
            r5 = cv_map_get_bool(body, "background", &background),
            r6 = cv_map_get_uint(body, "timeout_ms", &timeout_ms),
            r7 = cv_map_get_bool(body, "system", &system);
        int rs[] = {r1, r2, r3, r4, r5, r6, r7};
        struct creds cr;
        char cwd_abs[PATH_MAX];
        char *cmd_copy = NULL;
        char **env = NULL;
        for (size_t i = 0; i < sizeof(rs) / sizeof(rs[0]); i++) {
                if (rs[i] < 0 && rs[i] != -ENOENT) {
                        conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                        "`user`, `cwd`, `tag` must be text, `stdin`, "
                                        "`background` and `system` bools, `timeout_ms` an "
                                        "unsigned integer");
                        goto out;
                }
        }
        uint16_t cols = 0, rows = 0;
        int rp = parse_pty_size(body, &cols, &rows);
        if (rp == -EINVAL) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`pty` must be {cols, rows}, each 1 to %u", PTY_SIZE_MAX);
                goto out;
        }
        /* `system`: the agent's own tool as root, unconfined (the host's filesystem-only
         * pause); never a program or user the request chose. */
        if (system &&
            (!spawn_is_system_tool(argv) || (user && strcmp(user, "root") != 0) || rp == 0)) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`system` runs %s as root without a pty, nothing else",
                                SPAWN_SYSTEM_TOOL);
                goto out;
        }
        if (ncommands >= CMD_MAX) {
                conn_send_error(a, c, id, CV_ERR_BUSY, "%u commands are running", ncommands);
                goto out;
        }
        if (creds_lookup(a, system ? "root" : user, &cr) < 0) {
                conn_send_error(a, c, id, CV_ERR_NOT_FOUND, "no user %.64s", user);
                goto out;
        }
        int rr = creds_resolve_path(&cr, cwd ? cwd : cr.home, cwd_abs, sizeof(cwd_abs));
        if (rr == -EINVAL) {
                conn_send_error(a, c, id, "invalid_argument", CREDS_TILDE_ERROR, cwd, cr.name);
                goto out;
        }
        if (rr < 0) {
                svc_send_errno(a, c, id, ENAMETOOLONG, "cwd", cwd);
                goto out;
        }
        /* envd looks for the cwd itself (as root) before it starts anything: a missing one
         * is the caller's invalid argument, not a failed start (process/handler New). */
        struct stat cwd_st;
        if (stat(cwd_abs, &cwd_st) < 0 && errno == ENOENT) {
                conn_send_error(a, c, id, "invalid_argument", "cwd '%.3800s' does not exist",
                                cwd_abs);
                goto out;
        }
        cmd_copy = argv ? join_argv(argv) : strndup(cmd, cmd_len);
        const cbor_item_t *const maps[2] = {sandbox_envs, envs};
        env = build_env(&cr, maps, rp == 0 ? "TERM=xterm-256color" : NULL);
        if (!cmd_copy || !env) {
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                goto out;
        }
        struct spawn_spec spec = {.cmd = cmd_copy,
                                  .argv = argv,
                                  .cwd = cwd_abs,
                                  .cr = &cr,
                                  .env = env,
                                  .with_stdin = with_stdin,
                                  .pty = rp == 0,
                                  .cols = cols,
                                  .rows = rows,
                                  .system = system};
        int in_w, out_r, err_r;
        pid_t pid = command_spawn(a, &spec, &in_w, &out_r, &err_r);
        if (pid < 0) {
                svc_send_errno(a, c, id, (int)-pid, "start command in", cwd_abs);
                goto out;
        }
        struct command *k = calloc(1, sizeof(*k));
        if (!k) {
                /* The child runs unsupervised: stop it. */
                kill(-pid, SIGKILL);
                close(in_w), close(out_r);
                if (err_r >= 0)
                        close(err_r);
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "out of memory");
                goto out;
        }
        k->pid = pid;
        k->cmd = cmd_copy;
        cmd_copy = NULL;
        k->cwd = strdup(cwd_abs);
        k->tag = tag;
        tag = NULL;
        k->background = background;
        k->pty = spec.pty;
        k->timeout_ns = timeout_ms > UINT64_MAX / 1000000ull ? UINT64_MAX : timeout_ms * 1000000ull;
        k->deadline = timeout_ms ? now_mono() + k->timeout_ns : 0;
        cv_buf_init(&k->envs);
        if (envs)
                cv_enc_item(&k->envs, envs);
        else
                cv_enc_map(&k->envs, 0);
        cv_buf_init(&k->in_buf);
        k->in_buf.limit = CMD_STDIN_LIMIT;
        k->out = (struct watch){.fd = out_r, .fn = on_output};
        k->err = (struct watch){.fd = err_r, .fn = on_output};
        k->in = (struct watch){.fd = in_w, .fn = on_stdin};
        k->next = commands;
        commands = k;
        ncommands++;
        svc_attach(c, &k->r, id, &command_ops);
        if ((in_w >= 0 && set_nonblock(in_w) < 0) || set_nonblock(out_r) < 0 ||
            (err_r >= 0 && set_nonblock(err_r) < 0))
                log_warn("command %d: O_NONBLOCK: %s", (int)pid, strerror(errno));
        output_interest(a, k);
        log_debug("conn %u: command %d started as %s in %s: %.200s", c->num, (int)pid, cr.name,
                  cwd_abs, k->cmd);
        send_started(c, id, pid);
out:
        free_env(argv);
        free_env(env);
        free(cmd_copy);
        free(user);
        free(cwd);
        free(tag);
}

void commands_list_request(struct agent *a, struct conn *c, uint32_t id)
{
        size_t mark;
        cv_out_begin(&c->out, &mark);
        cv_enc_map(&c->out, 1);
        cv_enc_cstr(&c->out, "processes");
        cv_enc_array(&c->out, ncommands);
        for (struct command *k = commands; k; k = k->next) {
                cv_enc_map(&c->out, k->tag ? 5 : 4);
                cv_enc_cstr(&c->out, "pid");
                cv_enc_uint(&c->out, (uint64_t)k->pid);
                cv_enc_cstr(&c->out, "cmd");
                cv_enc_cstr(&c->out, k->cmd);
                cv_enc_cstr(&c->out, "cwd");
                cv_enc_cstr(&c->out, k->cwd ? k->cwd : "");
                cv_enc_cstr(&c->out, "envs");
                cv_buf_append(&c->out, cv_buf_head(&k->envs), cv_buf_pending(&k->envs));
                if (k->tag) {
                        cv_enc_cstr(&c->out, "tag");
                        cv_enc_cstr(&c->out, k->tag);
                }
        }
        if (cv_out_end(&c->out, mark, CV_MSG_OK, id) < 0)
                conn_send_error(a, c, id, CV_ERR_INTERNAL, "encoding the reply");
        conn_touch(c);
}

static struct command *lookup_pid(struct agent *a, struct conn *c, uint32_t id,
                                  const cbor_item_t *body)
{
        uint64_t pid;
        if (cv_map_get_uint(body, "pid", &pid) < 0) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`pid` must be an unsigned integer");
                return NULL;
        }
        struct command *k = find_pid(pid);
        if (!k)
                conn_send_error(a, c, id, CV_ERR_NOT_FOUND, "no command with pid %llu",
                                (unsigned long long)pid);
        return k;
}

void commands_kill_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct command *k = lookup_pid(a, c, id, body);
        if (!k)
                return;
        uint64_t sig = SIGKILL;
        int rc = cv_map_get_uint(body, "signal", &sig);
        if ((rc < 0 && rc != -ENOENT) || sig == 0 || sig >= (uint64_t)SIGRTMIN) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST, "`signal` must be a signal number");
                return;
        }
        log_info("conn %u: signal %llu to command %d", c->num, (unsigned long long)sig,
                 (int)k->pid);
        command_kill(k, (int)sig);
        /* SIGKILL: answered at the reap (command_finish); any other signal may
         * leave it running, so at once. */
        struct kill_wait *w =
            sig == SIGKILL && c->ninflight < CONN_MAX_INFLIGHT ? calloc(1, sizeof(*w)) : NULL;
        if (!w) {
                svc_reply_ok_empty(c, id);
                return;
        }
        w->k = k;
        w->next = k->kill_waits;
        k->kill_waits = w;
        svc_attach(c, &w->r, id, &kill_wait_ops);
}

void commands_stdin_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct command *k = lookup_pid(a, c, id, body);
        if (!k)
                return;
        const uint8_t *data = NULL;
        size_t n = 0;
        int rc = cv_map_get_bytes(body, "data", &data, &n);
        if (rc == -EINVAL)
                rc = cv_map_get_str(body, "data", (const char **)&data, &n);
        bool eof = false;
        int rc2 = cv_map_get_bool(body, "eof", &eof);
        if ((rc < 0 && rc != -ENOENT) || (rc2 < 0 && rc2 != -ENOENT)) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`data` must be bytes or text and `eof` a bool");
                return;
        }
        if (k->in.fd < 0) {
                conn_send_error(a, c, id, "invalid_argument",
                                "command %d has no open stdin (start it with stdin=True)",
                                (int)k->pid);
                return;
        }
        if (n > CMD_STDIN_LIMIT - cv_buf_pending(&k->in_buf) ||
            cv_buf_append(&k->in_buf, data, n) < 0) {
                conn_send_error(a, c, id, CV_ERR_BUSY,
                                "command %d is not reading its stdin (%u bytes queued)",
                                (int)k->pid, CMD_STDIN_LIMIT);
                return;
        }
        if (eof && k->pty) {
                conn_send_error(a, c, id, "invalid_argument",
                                "command %d runs on a pty: send ^D (0x04) to end its input",
                                (int)k->pid);
                return;
        }
        k->in_eof = k->in_eof || eof;
        rc = flush_stdin(k);
        if (rc < 0)
                log_debug("command %d: writing stdin: %s", (int)k->pid, strerror(-rc));
        stdin_interest(a, k);
        svc_reply_ok_empty(c, id);
}

/*
 * Follows a command nobody follows any more (its client left while it ran in
 * the background) from this connection on, as E2B's commands.connect(pid):
 * CMD_STARTED, then its output from now on and its end, as for CMD_START.
 */
void commands_connect_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct command *k = lookup_pid(a, c, id, body);
        if (!k)
                return;
        if (k->r.conn) {
                conn_send_error(a, c, id, CV_ERR_BUSY,
                                "command %d is followed by another connection", (int)k->pid);
                return;
        }
        svc_attach(c, &k->r, id, &command_ops);
        output_interest(a, k);
        log_info("conn %u: follows command %d", c->num, (int)k->pid);
        send_started(c, id, k->pid);
}

void commands_resize_request(struct agent *a, struct conn *c, uint32_t id, const cbor_item_t *body)
{
        struct command *k = lookup_pid(a, c, id, body);
        if (!k)
                return;
        uint16_t cols, rows;
        if (parse_pty_size(body, &cols, &rows) < 0) {
                conn_send_error(a, c, id, CV_ERR_BAD_REQUEST,
                                "`pty` must be {cols, rows}, each 1 to %u", PTY_SIZE_MAX);
                return;
        }
        if (!k->pty || k->out.fd < 0) {
                conn_send_error(a, c, id, "invalid_argument",
                                k->pty ? "command %d has closed its pty"
                                       : "command %d does not run on a pty",
                                (int)k->pid);
                return;
        }
        int rc = pty_resize(k->out.fd, cols, rows);
        if (rc < 0) {
                svc_send_errno(a, c, id, -rc, "resize the pty of", k->cmd);
                return;
        }
        log_debug("conn %u: command %d: pty %ux%u", c->num, (int)k->pid, cols, rows);
        svc_reply_ok_empty(c, id);
}
