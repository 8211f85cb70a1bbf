/*
 * The spawner (spawner.h): forked by the agent before the agent's seccomp
 * allowlist, it creates the zygote and command processes on the agent's
 * request. Each request is one fixed header (with the child's fds attached,
 * SCM_RIGHTS) followed by `len` bytes of NUL-terminated strings; the answer is
 * the child's pid or -errno. The agent waits for it, as it waited for fork().
 */

#include "spawner.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../confine/confine.h"
#include "agent.h"
#include "agent_caps.h"
#include "buf.h"
#include "agent_seccomp.h"
#include "creds.h"
#include "fd_pass.h"
#include "log.h"
#include "loop.h"

/* execve() refuses more than this much argv + environment anyway (E2BIG). */
#define SPAWN_STRINGS_MAX (4u << 20)
#define SPAWN_MAX_FDS 3
#define SPAWN_GROUPS_MAX 64
/* Arguments of a command run without the shell (spawn_spec.argv). */
#define SPAWN_ARGS_MAX 4096
/* A spawner that does not answer within this is treated as lost. */
#define SPAWN_TIMEOUT_S 30

enum spawn_kind { SPAWN_ZYGOTE = 1, SPAWN_COMMAND = 2 };
/* spawn_hdr.flags of a SPAWN_COMMAND */
#define SPAWN_F_PTY 1u
#define SPAWN_F_SYSTEM 2u

struct spawn_hdr {
        uint32_t kind;
        uint32_t nfds;
        uint32_t len;   /* bytes of strings after the header */
        uint32_t nenv;  /* SPAWN_COMMAND: cmd (or nargs arguments), cwd, nenv NAME=VALUE */
        uint32_t nargs; /* 0: cmd, for the shell; else the argv to exec */
        uint32_t uid;
        uint32_t gid;
        uint32_t drop;
        uint32_t ngroups;
        uint32_t flags; /* SPAWN_F_* */
        uint32_t groups[SPAWN_GROUPS_MAX];
};

_Static_assert(sizeof(((struct creds *)0)->groups) / sizeof(gid_t) == SPAWN_GROUPS_MAX,
               "struct creds and the spawner agree on the group count");

/* --- the spawner process --- */

/* A fork without a new parent: the child is the agent's, the spawner's sibling. */
static pid_t clone_parent(void)
{
        return (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, NULL, NULL, 0);
}

static int read_full(int fd, void *buf, size_t n)
{
        size_t got = 0;
        while (got < n) {
                ssize_t r = read(fd, (char *)buf + got, n - got);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        return -EPIPE;
                got += (size_t)r;
        }
        return 0;
}

/* Receives one header and its fds. 0, -EPIPE at the agent's EOF, or -errno. */
static int recv_hdr(int sock, struct spawn_hdr *h, int *fds, size_t *nfds)
{
        ssize_t n;
        do
                n = cv_recv_with_fds(sock, h, sizeof(*h), fds, SPAWN_MAX_FDS, nfds);
        while (n == -EINTR);
        if (n < 0)
                return (int)n;
        if (n == 0)
                return -EPIPE;
        if ((size_t)n < sizeof(*h))
                return read_full(sock, (char *)h + n, sizeof(*h) - (size_t)n);
        return 0;
}

/* Splits the strings of a SPAWN_COMMAND into `s`: exactly cmd (or `nargs` arguments), cwd
 * and `nenv` NAME=VALUE; `*vec` (to free) holds argv and env, each NULL-terminated. The
 * policy and the commands' cgroup are the spawner's own copies from setup, not the
 * request's. Returns 0, -EPROTO or -ENOMEM. */
static int parse_command(const struct agent *a, const struct spawn_hdr *h, char *str,
                         struct spawn_spec *s, struct creds *cr, char ***vec)
{
        if (h->len == 0 || str[h->len - 1] != '\0' || h->ngroups > SPAWN_GROUPS_MAX ||
            h->nenv > h->len || h->nargs > SPAWN_ARGS_MAX ||
            (h->flags & ~(SPAWN_F_PTY | SPAWN_F_SYSTEM)))
                return -EPROTO;
        size_t nfix = h->nargs ? h->nargs : 1;
        /* v: the nfix arguments, NULL, the cwd's slot, the nenv variables, NULL */
        char **v = calloc(nfix + (size_t)h->nenv + 3, sizeof(*v));
        if (!v)
                return -ENOMEM;
        size_t k = 0, want = nfix + 1 + (size_t)h->nenv;
        char *p = str;
        for (; p < str + h->len && k < want; p += strlen(p) + 1, k++)
                v[k < nfix ? k : k + 1] = p;
        if (k != want || p != str + h->len) {
                free(v);
                return -EPROTO;
        }
        *vec = v;
        memset(cr, 0, sizeof(*cr));
        cr->uid = (uid_t)h->uid;
        cr->gid = (gid_t)h->gid;
        cr->drop = h->drop != 0;
        cr->ngroups = (int)h->ngroups;
        for (uint32_t i = 0; i < h->ngroups; i++)
                cr->groups[i] = (gid_t)h->groups[i];
        *s = (struct spawn_spec){.cmd = h->nargs ? NULL : v[0],
                                 .argv = h->nargs ? v : NULL,
                                 .cwd = v[nfix + 1],
                                 .cgroup_procs = a->commands_cgroup_procs,
                                 .cr = cr,
                                 .env = v + nfix + 2,
                                 .pty = (h->flags & SPAWN_F_PTY) != 0,
                                 .system = (h->flags & SPAWN_F_SYSTEM) != 0};
        /* Checked again here: unconfined root runs the agent's tool and nothing else. */
        if (s->system && (cr->drop || cr->uid != 0 || !spawn_is_system_tool(s->argv))) {
                free(v);
                return -EPROTO;
        }
        return 0;
}

bool spawn_is_system_tool(char *const *argv)
{
        static const char *const head[] = {"/usr/bin/python3", "-I", SPAWN_SYSTEM_TOOL};
        for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
                if (!argv || !argv[i] || strcmp(argv[i], head[i]) != 0)
                        return false;
        return true;
}

/* Creates the zygote's or a command's process (`s` NULL: the zygote) and waits until it has
 * exec'd (EOF on the status pipe) or reported why not. Returns its pid or -errno. */
static pid_t spawn_checked(struct agent *a, const struct spawn_spec *s, const int *fds)
{
        int status[2];
        if (pipe2(status, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = clone_parent();
        if (pid == 0 && !s)
                a->spawner.children.zygote(a, fds[0], status[1]);
        if (pid == 0)
                a->spawner.children.command(s, fds[0], fds[1], fds[2], status[1]);
        int rc = pid < 0 ? -errno : pid;
        if (close(status[1]) < 0 && rc > 0)
                rc = -errno;
        if (pid > 0) {
                int child_err = 0;
                ssize_t n;
                do
                        n = read(status[0], &child_err, sizeof(child_err));
                while (n < 0 && errno == EINTR);
                if (n == (ssize_t)sizeof(child_err) && child_err)
                        rc = -child_err; /* the child exits 127; the agent reaps it */
        }
        if (close(status[0]) < 0 && rc > 0)
                rc = -errno;
        return rc;
}

/* Handles one request. Returns the answer, or -EPROTO/-EPIPE when the channel is broken. */
static int serve_one(struct agent *a, int sock, int32_t *answer)
{
        struct spawn_hdr h;
        int fds[SPAWN_MAX_FDS];
        size_t nfds = 0;
        int rc = recv_hdr(sock, &h, fds, &nfds);
        char *str = NULL;
        if (rc == 0 && (h.nfds != nfds || h.len > SPAWN_STRINGS_MAX ||
                        (h.kind == SPAWN_ZYGOTE && (nfds != 1 || h.len != 0)) ||
                        (h.kind == SPAWN_COMMAND && nfds != 3) ||
                        (h.kind != SPAWN_ZYGOTE && h.kind != SPAWN_COMMAND)))
                rc = -EPROTO;
        if (rc == 0 && h.len && !(str = malloc(h.len)))
                rc = -ENOMEM;
        if (rc == 0 && h.len)
                rc = read_full(sock, str, h.len);
        if (rc == 0 && h.kind == SPAWN_ZYGOTE) {
                *answer = spawn_checked(a, NULL, fds);
        } else if (rc == 0) {
                struct spawn_spec s;
                struct creds cr;
                char **vec = NULL;
                rc = parse_command(a, &h, str, &s, &cr, &vec);
                if (rc == 0) {
                        *answer = spawn_checked(a, &s, fds);
                        free(vec);
                }
        }
        free(str);
        for (size_t i = 0; i < nfds; i++)
                if (close(fds[i]) < 0) /* the child has its copies */
                        log_warn("spawner: close: %s", strerror(errno));
        return rc;
}

/* Closes every fd but stdio and `keep` (the agent's epoll fd, ...). */
static int close_others(int keep)
{
        if ((keep == 3 || syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) == 0) &&
            syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
                return 0;
        if (errno != ENOSYS)
                return -errno;
        /* Kernels before 5.9: one by one, up to the fd limit. */
        long max = sysconf(_SC_OPEN_MAX);
        for (int fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
                if (fd != keep && close(fd) < 0 && errno != EBADF)
                        return -errno;
        return 0;
}

/* The user-code policy its children apply names the spawner too, so user code cannot signal
 * it (confine_seccomp.c); it inherited the agent's copy, without its pid. 0 or -errno. */
static int policy_add_self(void)
{
        const char *text = getenv(CONFINE_ENV);
        struct confine_policy p;
        if (!text)
                return 0;
        int rc = confine_policy_parse(text, &p);
        if (rc < 0)
                return rc;
        p.spawner_pid = getpid();
        char out[CONFINE_TEXT_MAX];
        rc = confine_policy_format(&p, out, sizeof(out));
        if (rc == 0 && setenv(CONFINE_ENV, out, 1) < 0)
                rc = -errno;
        return rc;
}

static void __attribute__((noreturn)) spawner_main(struct agent *a, int sock, pid_t agent_pid)
{
        /* Gone with the agent (init restarts both); no orphan spawner. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != agent_pid)
                _exit(1);
        /* Told apart from the agent in ps and /proc/<pid>/comm. */
        if (prctl(PR_SET_NAME, "cellvm-spawner", 0, 0, 0) < 0)
                log_warn("spawner: prctl(PR_SET_NAME): %s", strerror(errno));
        int rc = close_others(sock);
        if (rc == 0)
                rc = policy_add_self();
        /* Commands load the user-code filter: compile it once, here (confine.h). */
        if (rc == 0 && (rc = confine_seccomp_prepare_from_env()) < 0) {
                log_warn("spawner: compiling the user-code filter ahead: %s", strerror(-rc));
                rc = 0;
        }
        /* What the agent keeps after setup is what its children get (agent_caps.c). */
        if (rc == 0)
                rc = agent_drop_capabilities();
        if (rc == 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                rc = -errno;
        /* Its children (zygote, commands) run with this filter, as the agent's did before. */
        if (rc == 0 && !a->no_agent_seccomp)
                rc = spawner_seccomp_apply();
        if (rc < 0) {
                log_error("spawner: setup: %s", strerror(-rc));
                _exit(1);
        }
        for (;;) {
                int32_t answer = -EIO;
                rc = serve_one(a, sock, &answer);
                if (rc == -EPIPE)
                        _exit(0); /* the agent closed the channel: it is stopping */
                if (rc < 0) {
                        log_error("spawner: bad request from the agent: %s", strerror(-rc));
                        _exit(1);
                }
                if (cv_write_all(sock, &answer, sizeof(answer)) < 0)
                        _exit(1);
        }
}

/* --- the agent's side --- */

int spawner_start(struct agent *a, const struct spawner_children *children)
{
        a->spawner.children = *children;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        /* A spawner that hangs must not hang the agent with it. */
        struct timeval tv = {.tv_sec = SPAWN_TIMEOUT_S};
        if (setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0) {
                int err = -errno;
                close(sv[0]);
                close(sv[1]);
                return err;
        }
        pid_t agent_pid = getpid();
        pid_t pid = fork();
        if (pid < 0) {
                int err = -errno;
                close(sv[0]);
                close(sv[1]);
                return err;
        }
        if (pid == 0)
                spawner_main(a, sv[1], agent_pid);
        if (close(sv[1]) < 0)
                log_warn("spawner: close: %s", strerror(errno));
        a->spawner = (struct spawner){.pid = pid, .fd = sv[0]};
        log_info("spawner pid %d started", (int)pid);
        return 0;
}

static void spawner_lost(struct agent *a, const char *why)
{
        struct spawner *sp = &a->spawner;
        if (!sp->lost)
                log_error("spawner %s: the agent cannot start processes any more; shutting "
                          "down",
                          why);
        sp->lost = true;
        a->stopping = true;
        if (sp->fd >= 0 && close(sp->fd) < 0)
                log_warn("spawner: close: %s", strerror(errno));
        sp->fd = -1;
        if (sp->pid > 0 && kill(sp->pid, SIGKILL) < 0 && errno != ESRCH)
                log_warn("kill(spawner %d): %s", (int)sp->pid, strerror(errno));
}

/* Sends one request and waits for its answer. Returns the answer (pid or -errno). */
static pid_t request(struct agent *a, const struct spawn_hdr *h, const int *fds, const char *str)
{
        struct spawner *sp = &a->spawner;
        if (sp->fd < 0)
                return -EPIPE;
        ssize_t n = cv_send_with_fds(sp->fd, h, sizeof(*h), fds, h->nfds, MSG_NOSIGNAL);
        int rc = n < 0 ? (int)n : 0;
        /* The fds went with the first byte; the rest of the header and the strings follow. */
        if (rc == 0 && (size_t)n < sizeof(*h))
                rc = cv_write_all(sp->fd, (const char *)h + n, sizeof(*h) - (size_t)n);
        if (rc == 0 && h->len)
                rc = cv_write_all(sp->fd, str, h->len);
        int32_t answer = 0;
        if (rc == 0)
                rc = read_full(sp->fd, &answer, sizeof(answer));
        if (rc < 0) {
                char why[96];
                snprintf(why, sizeof(why), "pid %d does not answer (%s)", (int)sp->pid,
                         rc == -EAGAIN ? "timed out" : strerror(-rc));
                spawner_lost(a, why);
                return rc == -EAGAIN ? -ETIMEDOUT : rc;
        }
        return answer;
}

pid_t spawner_zygote(struct agent *a, int fd)
{
        struct spawn_hdr h = {.kind = SPAWN_ZYGOTE, .nfds = 1};
        return request(a, &h, &fd, NULL);
}

/* Appends `s` and its NUL at `*at` in `buf` (of `size`). -E2BIG when it does not fit. */
static int put_str(char *buf, size_t size, size_t *at, const char *s)
{
        size_t n = strlen(s) + 1;
        if (n > size - *at)
                return -E2BIG;
        memcpy(buf + *at, s, n);
        *at += n;
        return 0;
}

pid_t spawner_command(struct agent *a, const struct spawn_spec *s, int in_fd, int out_fd,
                      int err_fd)
{
        struct spawn_hdr h = {.kind = SPAWN_COMMAND,
                              .nfds = 3,
                              .uid = (uint32_t)s->cr->uid,
                              .gid = (uint32_t)s->cr->gid,
                              .drop = s->cr->drop,
                              .flags =
                                  (s->pty ? SPAWN_F_PTY : 0) | (s->system ? SPAWN_F_SYSTEM : 0),
                              .ngroups = s->cr->ngroups < 0 ? 0 : (uint32_t)s->cr->ngroups};
        if (h.ngroups > SPAWN_GROUPS_MAX)
                return -EINVAL;
        for (uint32_t i = 0; i < h.ngroups; i++)
                h.groups[i] = (uint32_t)s->cr->groups[i];
        size_t len = strlen(s->cwd) + 1;
        for (size_t i = 0; s->argv && s->argv[i]; i++, h.nargs++)
                len += strlen(s->argv[i]) + 1;
        if (!s->argv)
                len += strlen(s->cmd) + 1;
        for (size_t i = 0; s->env[i]; i++, h.nenv++)
                len += strlen(s->env[i]) + 1;
        if (len > SPAWN_STRINGS_MAX || h.nargs > SPAWN_ARGS_MAX || (s->argv && !h.nargs))
                return -E2BIG;
        char *str = malloc(len);
        if (!str)
                return -ENOMEM;
        size_t at = 0;
        int rc = 0;
        for (size_t i = 0; rc == 0 && s->argv && s->argv[i]; i++)
                rc = put_str(str, len, &at, s->argv[i]);
        if (rc == 0 && !s->argv)
                rc = put_str(str, len, &at, s->cmd);
        if (rc == 0)
                rc = put_str(str, len, &at, s->cwd);
        for (size_t i = 0; rc == 0 && s->env[i]; i++)
                rc = put_str(str, len, &at, s->env[i]);
        h.len = (uint32_t)at;
        int fds[3] = {in_fd, out_fd, err_fd};
        pid_t pid = rc < 0 ? rc : request(a, &h, fds, str);
        free(str);
        return pid;
}

bool spawner_reaped(struct agent *a, pid_t pid, int status)
{
        struct spawner *sp = &a->spawner;
        if (pid != sp->pid || pid <= 0)
                return false;
        char how[64], why[96];
        describe_status(status, how, sizeof(how));
        snprintf(why, sizeof(why), "pid %d %s", (int)pid, how);
        sp->pid = 0; /* reaped: nothing left to kill */
        if (!a->stopping)
                spawner_lost(a, why);
        return true;
}

void spawner_stop(struct agent *a)
{
        struct spawner *sp = &a->spawner;
        if (sp->fd >= 0 && close(sp->fd) < 0)
                log_warn("spawner: close: %s", strerror(errno));
        sp->fd = -1;
        /* EOF on its channel ends it. */
        if (sp->pid > 0 && waitpid(sp->pid, NULL, 0) < 0 && errno != ECHILD)
                log_warn("waitpid(spawner %d): %s", (int)sp->pid, strerror(errno));
        sp->pid = 0;
}
