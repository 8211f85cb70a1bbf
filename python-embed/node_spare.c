/* The warm Node.js spare (see node_spare.h). */
#include "node_spare.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "ctl_channel.h"
#include "executor_epoch.h"
#include "executor_proc.h"
#include "fd_pass.h"
#include "frame.h"
#include "msgtypes.h"
#include "node_exec.h"
#include "writer.h"
#include "zygote.h"

/* Longest wait for a spare's answer: it may still be starting (Node.js under TCG). */
#define ASSIGN_TIMEOUT_MS 30000
/* Largest X_ASSIGNED body accepted. */
#define ANSWER_MAX 4096

/* What the spare's process gets to exec with. */
struct spare_args {
        int ends[3]; /* control socket, stdout and stderr write ends */
        const char *language;
};

static struct {
        pid_t pid;  /* 0: none */
        int fds[3]; /* the zygote's ends: control socket, stdout and stderr read ends */
        bool has_epoch;
        uint64_t epoch; /* the zygote's when it started the spare */
} spare = {0, {-1, -1, -1}, false, 0};

bool node_spare_wants(const char *language)
{
        return language &&
               (strcmp(language, "javascript") == 0 || strcmp(language, "typescript") == 0);
}

static void close_all(int *fds, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (fds[i] >= 0)
                        (void)close(fds[i]);
                fds[i] = -1;
        }
}

void node_spare_drop(void)
{
        close_all(spare.fds, 3);
        spare.pid = 0;
}

void node_spare_drop_unless_epoch(uint64_t epoch)
{
        if (spare.pid > 0 && (!spare.has_epoch || spare.epoch != epoch)) {
                if (kill(spare.pid, SIGKILL) < 0 && errno != ESRCH)
                        fprintf(stderr, "cellvm-executor: kill(node spare %d): %s\n",
                                (int)spare.pid, strerror(errno));
                node_spare_drop();
        }
}

/* In the spare: its own fds as 1..3, detached and confined, then node. */
static void __attribute__((noreturn)) run_node_spare(PyObject *kernel, void *arg)
{
        (void)kernel;
        const struct spare_args *sa = arg;
        const char *step;
        int rc = executor_proc_attach(sa->ends[0], sa->ends[1], sa->ends[2], &step);
        if (rc == 0)
                rc = executor_proc_detach(EXECUTOR_CTL_FD, &step);
        if (rc == 0)
                rc = node_exec(sa->language, true, EXECUTOR_CTL_FD, &step);
        fprintf(stderr, "cellvm-executor: node spare: %s: %s\n", step, strerror(-rc));
        _exit(127);
}

void node_spare_start(PyObject *kernel, const char *language)
{
        if (spare.pid > 0)
                return;
        int sv[2] = {-1, -1}, po[2] = {-1, -1}, pe[2] = {-1, -1};
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
            pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
                fprintf(stderr, "cellvm-executor: node spare: %s\n", strerror(errno));
                int all[6] = {sv[0], sv[1], po[0], po[1], pe[0], pe[1]};
                close_all(all, 6);
                return;
        }
        struct spare_args sa = {{sv[1], po[1], pe[1]}, language};
        pid_t pid = zygote_fork_executor(kernel, run_node_spare, &sa);
        close_all(sa.ends, 3);
        if (pid < 0) {
                fprintf(stderr, "cellvm-executor: forking a node spare: %s\n", strerror(-pid));
                int mine[3] = {sv[0], po[0], pe[0]};
                close_all(mine, 3);
                return;
        }
        spare.pid = pid;
        spare.has_epoch = executor_epoch_get(&spare.epoch);
        spare.fds[0] = sv[0];
        spare.fds[1] = po[0];
        spare.fds[2] = pe[0];
}

static int send_assign(int fd, const char *language, const char *cwd)
{
        struct cv_buf b;
        cv_buf_init(&b);
        size_t mark;
        cv_out_begin(&b, &mark);
        cv_enc_map(&b, 2);
        cv_enc_cstr(&b, "language");
        cv_enc_cstr(&b, language);
        cv_enc_cstr(&b, "cwd");
        cv_enc_cstr(&b, cwd ? cwd : "");
        int rc = cv_out_end(&b, mark, CV_MSG_X_ASSIGN, 0);
        if (rc == 0)
                rc = cv_write_all(fd, cv_buf_head(&b), cv_buf_pending(&b));
        cv_buf_free(&b);
        return rc;
}

/* Reads exactly `n` bytes (nothing beyond: X_READY follows in the same socket, for the agent). */
static int read_exact(int fd, uint8_t *p, size_t n, int timeout_ms)
{
        while (n > 0) {
                struct pollfd pfd = {.fd = fd, .events = POLLIN};
                int r = poll(&pfd, 1, timeout_ms);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                if (r == 0)
                        return -ETIMEDOUT;
                ssize_t got = read(fd, p, n);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0)
                        return -errno;
                if (got == 0)
                        return -EPIPE;
                p += got;
                n -= (size_t)got;
        }
        return 0;
}

/* The spare's X_ASSIGNED: 0, or the negative errno it could not enter the cwd with. */
static int read_answer(int fd)
{
        uint8_t hdr[CV_HDR_SIZE];
        int rc = read_exact(fd, hdr, sizeof(hdr), ASSIGN_TIMEOUT_MS);
        if (rc < 0)
                return rc;
        uint32_t len =
            (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
        uint16_t type = (uint16_t)(hdr[4] << 8 | hdr[5]);
        if (type != CV_MSG_X_ASSIGNED || len > ANSWER_MAX)
                return -EPROTO;
        uint8_t body[ANSWER_MAX];
        rc = read_exact(fd, body, len, ASSIGN_TIMEOUT_MS);
        if (rc < 0)
                return rc;
        cbor_item_t *item;
        if (cv_body_parse(body, len, &item) < 0)
                return -EPROTO;
        uint64_t err = 0;
        if (cv_map_get_uint(item, "errno", &err) < 0)
                err = 0;
        cbor_decref(&item);
        return err > 0 && err < 4096 ? -(int)err : 0;
}

pid_t node_spare_assign(const char *language, const char *cwd, int fds[3])
{
        if (spare.pid <= 0)
                return -ENOENT;
        pid_t pid = spare.pid;
        int rc = send_assign(spare.fds[0], language, cwd);
        if (rc == 0)
                rc = read_answer(spare.fds[0]);
        if (rc < 0) {
                /* Dead, stuck or unable to enter cwd: a fresh executor takes the context. */
                if (kill(pid, SIGKILL) < 0 && errno != ESRCH)
                        fprintf(stderr, "cellvm-executor: kill(node spare %d): %s\n", (int)pid,
                                strerror(errno));
                node_spare_drop();
                return rc;
        }
        memcpy(fds, spare.fds, sizeof(spare.fds));
        spare.fds[0] = spare.fds[1] = spare.fds[2] = -1;
        spare.pid = 0;
        return pid;
}

int node_spare_send_spawned(int sock, uint32_t id, const char *context, pid_t pid, const int fds[3])
{
        struct cv_buf b;
        cv_buf_init(&b);
        size_t mark;
        cv_out_begin(&b, &mark);
        cv_enc_map(&b, 3);
        cv_enc_cstr(&b, "context");
        cv_enc_cstr(&b, context ? context : "");
        cv_enc_cstr(&b, "pid");
        cv_enc_uint(&b, (uint64_t)pid);
        cv_enc_cstr(&b, "fds");
        cv_enc_uint(&b, 3);
        int rc = cv_out_end(&b, mark, CV_MSG_Z_SPAWNED, id);
        if (rc == 0) {
                /* The fds ride with the first byte; the rest follows without them. */
                ssize_t n = cv_send_with_fds(sock, cv_buf_head(&b), cv_buf_pending(&b), fds, 3,
                                             MSG_NOSIGNAL);
                if (n < 0)
                        rc = (int)n;
                else if ((size_t)n < cv_buf_pending(&b))
                        rc =
                            cv_write_all(sock, cv_buf_head(&b) + n, cv_buf_pending(&b) - (size_t)n);
        }
        cv_buf_free(&b);
        int mine[3] = {fds[0], fds[1], fds[2]};
        close_all(mine, 3);
        if (rc < 0)
                fprintf(stderr, "cellvm-executor: sending Z_SPAWNED: %s\n", strerror(-rc));
        return rc;
}
