/* Zygote loop: Z_READY, then Z_SPAWN -> a spare executor (or a double fork) -> Z_SPAWNED (see
 * zygote.h). */
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../confine/confine.h"
#include "cbor_util.h"
#include "cellvm_module.h"
#include "ctl_channel.h"
#include "executor_epoch.h"
#include "executor_language.h"
#include "executor_proc.h"
#include "fd_pass.h"
#include "msgtypes.h"
#include "node_exec.h"
#include "node_spare.h"

/* Z_SPAWN carries the control socket, stdout and stderr pipe write ends. */
#define SPAWN_NFDS 3

static void log_python_error(const char *what)
{
        fprintf(stderr, "cellvm-executor: %s:\n", what);
        PyErr_Print();
}

static PyObject *split_preload(const char *preload)
{
        PyObject *s = PyUnicode_FromString(preload ? preload : "");
        if (s == NULL)
                return NULL;
        PyObject *sep = PyUnicode_FromString(",");
        PyObject *list = sep ? PyUnicode_Split(s, sep, -1) : NULL;
        Py_XDECREF(sep);
        Py_DECREF(s);
        return list;
}

static int send_ready(int fd, PyObject *kernel, const char *preload)
{
        PyObject *names = split_preload(preload);
        PyObject *res = names ? PyObject_CallMethod(kernel, "zygote_preload", "O", names) : NULL;
        Py_XDECREF(names);
        PyObject *preloaded, *errors;
        if (res == NULL || !PyArg_ParseTuple(res, "OO", &preloaded, &errors)) {
                /* A kernel bug, not a preload failure (those are in `errors`). */
                log_python_error("preloading failed");
                Py_XDECREF(res);
                return -1;
        }
        PyObject *body = Py_BuildValue("{s:l,s:O}", "pid", (long)getpid(), "preloaded", preloaded);
        if (body != NULL && PyList_Size(errors) > 0 &&
            PyDict_SetItemString(body, "errors", errors) < 0)
                Py_CLEAR(body);
        Py_DECREF(res);
        int rc = body ? cellvm_send_dict(fd, CV_MSG_Z_READY, 0, body) : -1;
        Py_XDECREF(body);
        if (rc < 0)
                log_python_error("sending Z_READY");
        return rc;
}

/* The next executor, forked and detached ahead of any context (see spare_start). */
static struct {
        pid_t pid; /* 0: none */
        int sock;  /* the zygote's end of the spare's socket */
} spare = {0, -1};

static void __attribute__((noreturn)) setup_failed(const char *step, int rc)
{
        /* fd 2 is the context's stderr pipe once attached, else the zygote's. */
        fprintf(stderr, "cellvm-executor: %s: %s\n", step, strerror(-rc));
        _exit(1);
}

/* Python's half of detaching: signals, streams, import hooks, warm-ups. */
static void prepare_python(PyObject *kernel)
{
        PyObject *r = PyObject_CallMethod(kernel, "executor_prepare", NULL);
        if (r == NULL) {
                log_python_error("preparing the executor");
                _exit(1);
        }
        Py_DECREF(r);
}

struct assignment {
        int fds[SPAWN_NFDS];
        const char *language;
        const char *cwd;
};

/* In an executor forked for a context at once (no spare ready). */
static void __attribute__((noreturn)) run_executor(PyObject *kernel, void *arg)
{
        const struct assignment *as = arg;
        const char *step;
        PyOS_AfterFork_Child();
        /* The directory as root, as before any spare existed: a context may start in
         * one the sandbox user cannot enter (its code then gets EACCES there). */
        int rc = executor_proc_attach(as->fds[0], as->fds[1], as->fds[2], &step);
        if (rc == 0)
                rc = executor_proc_chdir(as->cwd, &step);
        if (rc == 0)
                rc = executor_proc_detach(EXECUTOR_CTL_FD, &step);
        if (rc < 0)
                setup_failed(step, rc);
        prepare_python(kernel);
        executor_language_serve(kernel, as->language, EXECUTOR_CTL_FD);
}

/* An assignment's text: the language, NUL, the cwd, and if the zygote knows it, NUL and
 * the epoch in decimal. */
#define EPOCH_TEXT_MAX 20
#define ASSIGNMENT_MAX (EXECUTOR_LANGUAGE_MAX + 1 + 4096 + 1 + EPOCH_TEXT_MAX)

struct spare_context {
        const char *language;
        const char *cwd;
        bool has_epoch;
        uint64_t epoch;
};

/* The epoch field of an assignment: decimal digits only. */
static bool parse_epoch(const char *s, uint64_t *out)
{
        char *end;
        if (*s < '0' || *s > '9')
                return false;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || *end)
                return false;
        *out = v;
        return true;
}

/* Receives the context's fds, language, directory and epoch on `sock` (fd 3) into
 * `buf` (ASSIGNMENT_MAX + 1 bytes); 0, -EPIPE when the zygote closed it without one,
 * or another negative errno. */
static int wait_for_assignment(int sock, int fds[SPAWN_NFDS], char *buf, struct spare_context *sc)
{
        size_t nfds;
        ssize_t n;
        PyThreadState *ts = PyEval_SaveThread(); /* the flusher thread runs meanwhile */
        do
                n = cv_recv_with_fds(sock, buf, ASSIGNMENT_MAX, fds, SPAWN_NFDS, &nfds);
        while (n == -EINTR);
        PyEval_RestoreThread(ts);
        if (n < 0)
                return (int)n;
        if (n == 0)
                return -EPIPE;
        buf[n] = '\0';
        size_t lang_len = strlen(buf);
        size_t cwd_end = lang_len == (size_t)n ? 0 : lang_len + 1 + strlen(buf + lang_len + 1);
        bool epoch_ok = cwd_end >= (size_t)n || parse_epoch(buf + cwd_end + 1, &sc->epoch);
        if (nfds != SPAWN_NFDS || lang_len == (size_t)n || !epoch_ok) {
                for (size_t i = 0; i < nfds; i++)
                        (void)close(fds[i]);
                return -EPROTO;
        }
        sc->language = buf;
        sc->cwd = buf + lang_len + 1;
        sc->has_epoch = cwd_end < (size_t)n;
        return 0;
}

/* In the spare: detach and warm up, wait for a context, attach to it. */
static void __attribute__((noreturn)) run_spare(PyObject *kernel, void *arg)
{
        int sock = *(const int *)arg;
        const char *step;
        PyOS_AfterFork_Child();
        int rc = executor_proc_detach(sock, &step);
        if (rc < 0)
                setup_failed(step, rc);
        prepare_python(kernel);
        int fds[SPAWN_NFDS];
        static char buf[ASSIGNMENT_MAX + 1];
        struct spare_context sc = {0};
        rc = wait_for_assignment(EXECUTOR_CTL_FD, fds, buf, &sc);
        if (rc == -EPIPE)
                _exit(0); /* the zygote is gone or stopping: nobody needs us */
        step = "receive a context";
        /* The answer the zygote waits for: 0, or why it must fork for this context
         * (a directory the sandbox user cannot enter, say). */
        if (rc == 0)
                rc = executor_proc_chdir(sc.cwd, &step);
        int32_t answer = rc;
        ssize_t n = write(EXECUTOR_CTL_FD, &answer, sizeof(answer));
        if (rc < 0 || n != (ssize_t)sizeof(answer))
                _exit(1);
        rc = executor_proc_attach(fds[0], fds[1], fds[2], &step);
        if (rc < 0)
                setup_failed(step, rc);
        /* Forked before a snapshot, the spare may be one of its copies: reseed before
         * X_READY (its failure is printed on the context's stderr; the first cell's
         * X_EXECUTE tries again). */
        if (sc.has_epoch)
                (void)executor_epoch_enter(sc.epoch);
        executor_language_serve(kernel, sc.language, EXECUTOR_CTL_FD);
}

/* Forks an executor running `body` through a short-lived middle process so the
 * agent (a child subreaper) inherits it. Returns its pid or a negative errno. */
pid_t zygote_fork_executor(PyObject *kernel, void (*body)(PyObject *, void *), void *arg)
{
        int pidpipe[2];
        if (pipe2(pidpipe, O_CLOEXEC) < 0)
                return -errno;
        PyOS_BeforeFork();
        pid_t mid = fork();
        if (mid == 0) {
                pid_t exe = fork();
                if (exe == 0)
                        body(kernel, arg);
                int32_t report = exe < 0 ? -errno : exe;
                ssize_t n = write(pidpipe[1], &report, sizeof(report));
                _exit(n == (ssize_t)sizeof(report) ? 0 : 1);
        }
        int fork_errno = errno;
        PyOS_AfterFork_Parent();
        close(pidpipe[1]);
        if (mid < 0) {
                close(pidpipe[0]);
                return -fork_errno;
        }
        int32_t report = -EPIPE;
        ssize_t n;
        do
                n = read(pidpipe[0], &report, sizeof(report));
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(report))
                report = n < 0 ? -errno : -EPIPE;
        close(pidpipe[0]);
        int wstatus;
        while (waitpid(mid, &wstatus, 0) < 0 && errno == EINTR)
                ;
        return report;
}

static void spare_drop(void)
{
        if (spare.sock >= 0)
                close(spare.sock); /* a spare waiting on it exits */
        spare.pid = 0;
        spare.sock = -1;
}

/*
 * Forks the next executor ahead: it detaches (session, fds, sandbox user,
 * seccomp) and warms up, then waits on a socket for a context's fds. Creating
 * a context then costs a message instead of two forks of this large process
 * and the executor's start. Failing is not fatal: contexts fork directly.
 */
static void spare_start(PyObject *kernel)
{
        if (spare.pid > 0)
                return;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
                fprintf(stderr, "cellvm-executor: spare executor: socketpair: %s\n",
                        strerror(errno));
                return;
        }
        pid_t pid = zygote_fork_executor(kernel, run_spare, &sv[1]);
        close(sv[1]);
        if (pid < 0) {
                fprintf(stderr, "cellvm-executor: forking a spare executor: %s\n", strerror(-pid));
                close(sv[0]);
                return;
        }
        spare.pid = pid;
        spare.sock = sv[0];
}

/* Hands the context to the spare; its pid, or a negative errno (the spare is
 * gone: the caller forks one for the context). The spare is used up either way. */
static pid_t spare_assign(const int fds[SPAWN_NFDS], const char *language, const char *cwd)
{
        if (spare.pid <= 0)
                return -ENOENT;
        size_t lang_len = strlen(language);
        size_t len = cwd ? strlen(cwd) : 0;
        if (len > 4096 || lang_len > EXECUTOR_LANGUAGE_MAX)
                return -ENAMETOOLONG;
        /* The language, NUL, the cwd (maybe empty), NUL and the epoch if known. */
        char body[ASSIGNMENT_MAX];
        memcpy(body, language, lang_len);
        body[lang_len] = '\0';
        if (len)
                memcpy(body + lang_len + 1, cwd, len);
        size_t body_len = lang_len + 1 + len;
        uint64_t epoch;
        if (executor_epoch_get(&epoch))
                body_len += (size_t)snprintf(body + body_len, sizeof(body) - body_len, "%c%llu",
                                             '\0', (unsigned long long)epoch);
        ssize_t n = cv_send_with_fds(spare.sock, body, body_len, fds, SPAWN_NFDS, MSG_NOSIGNAL);
        pid_t pid = n == (ssize_t)body_len ? spare.pid : (n < 0 ? (pid_t)n : -EIO);
        if (pid > 0) {
                /* Waits for the spare to have entered the directory (or finished its
                 * warm-up first, if it is that young). */
                int32_t answer = -EPIPE;
                do
                        n = read(spare.sock, &answer, sizeof(answer));
                while (n < 0 && errno == EINTR);
                if (n != (ssize_t)sizeof(answer))
                        answer = n < 0 ? -errno : -EPIPE;
                if (answer < 0)
                        pid = answer;
        }
        spare_drop();
        return pid;
}

static int send_spawned(int fd, uint32_t id, const char *context, pid_t pid, int err,
                        const char *why)
{
        PyObject *body =
            Py_BuildValue("{s:s,s:l}", "context", context, "pid", (long)(pid > 0 ? pid : 0));
        if (body != NULL && err < 0) {
                /* Not in the protocol table: a hint for the agent's log (unknown keys are ignored).
                 */
                PyObject *msg = why ? PyUnicode_FromString(why)
                                    : PyUnicode_FromFormat("spawn failed: %s", strerror(-err));
                if (msg == NULL || PyDict_SetItemString(body, "error", msg) < 0)
                        Py_CLEAR(body);
                Py_XDECREF(msg);
        }
        int rc = body ? cellvm_send_dict(fd, CV_MSG_Z_SPAWNED, id, body) : -1;
        Py_XDECREF(body);
        if (rc < 0)
                log_python_error("sending Z_SPAWNED");
        return rc;
}

static int handle_spawn(struct ctl_channel *chan, PyObject *kernel, const struct cv_msg *msg)
{
        int fds[SPAWN_NFDS];
        size_t got = 0;
        while (got < SPAWN_NFDS) {
                int fd = ctl_channel_take_fd(chan);
                if (fd < 0)
                        break;
                fds[got++] = fd;
        }
        cbor_item_t *body = NULL;
        char *context = NULL, *cwd = NULL, *language = NULL;
        uint64_t epoch = 0;
        bool has_epoch = false;
        const char *why = NULL;
        int spare_fds[3];
        bool with_fds = false;
        char missing[512];
        int rc = cv_body_parse(msg->body, msg->len, &body);
        if (rc == 0)
                rc = cv_map_dup_str(body, "context", &context);
        if (rc == 0) {
                rc = cv_map_dup_str(body, "cwd", &cwd);
                if (rc == -ENOENT)
                        rc = 0;
        }
        if (rc == 0) {
                /* Absent: an agent from before languages, which only knew Python. */
                rc = cv_map_dup_str(body, "language", &language);
                if (rc == -ENOENT && !(language = strdup("python")))
                        rc = -ENOMEM;
                else if (rc == -ENOENT)
                        rc = 0;
        }
        if (rc == 0) {
                /* Absent: an agent from before snapshots. */
                int erc = cv_map_get_uint(body, "epoch", &epoch);
                has_epoch = erc == 0;
                if (erc < 0 && erc != -ENOENT)
                        rc = erc;
        }
        if (body != NULL)
                cbor_decref(&body);
        if (rc == 0 && has_epoch) {
                /* A copy of a snapshot: what this zygote forks from now on starts from a
                 * fresh state, and a Node.js spare of an older epoch is not used (its
                 * V8 and OpenSSL generators cannot be reseeded). A failed reseed is
                 * printed; the forks reseed themselves at fork all the same. */
                (void)executor_epoch_enter(epoch);
                node_spare_drop_unless_epoch(epoch);
        }
        pid_t pid = 0;
        if (rc < 0) {
                fprintf(stderr, "cellvm-executor: bad Z_SPAWN body: %s\n", strerror(-rc));
        } else if (!executor_language_known(language)) {
                rc = -EPROTONOSUPPORT;
                why = "this executor runs no such language";
                fprintf(stderr, "cellvm-executor: Z_SPAWN for %s: no executor for language %.64s\n",
                        context, language);
        } else if (node_spare_wants(language) &&
                   (rc = node_exec_available(missing, sizeof(missing))) < 0) {
                why = missing;
                fprintf(stderr, "cellvm-executor: Z_SPAWN for %s: %s\n", context, missing);
        } else if (got < SPAWN_NFDS) {
                fprintf(stderr, "cellvm-executor: Z_SPAWN for %s came with %zu fds, need %d\n",
                        context, got, SPAWN_NFDS);
                rc = -EBADF;
        } else if (node_spare_wants(language) &&
                   (pid = node_spare_assign(language, cwd, spare_fds)) > 0) {
                /* A warm Node.js with its own fds: the agent takes them (Z_SPAWNED `fds`). */
                with_fds = true;
        } else {
                pid = spare_assign(fds, language, cwd);
                if (pid < 0) {
                        struct assignment as = {{fds[0], fds[1], fds[2]}, language, cwd};
                        pid = zygote_fork_executor(kernel, run_executor, &as);
                }
                if (pid < 0) {
                        rc = pid;
                        fprintf(stderr, "cellvm-executor: spawning %s: %s\n", context,
                                strerror(-rc));
                }
        }
        for (size_t i = 0; i < got; i++)
                close(fds[i]);
        int send_rc = with_fds
                          ? node_spare_send_spawned(chan->fd, msg->id, context, pid, spare_fds)
                          : send_spawned(chan->fd, msg->id, context ? context : "", pid, rc, why);
        bool node = rc == 0 && node_spare_wants(language);
        spare_start(kernel); /* for the next context, while this one starts */
        if (node)
                node_spare_start(kernel, language); /* JavaScript is in use: keep a Node.js warm */
        free(context);
        free(cwd);
        free(language);
        return send_rc;
}

int zygote_run(int fd, PyObject *kernel, const char *preload)
{
        struct ctl_channel chan;
        int rc;

        /* Every executor loads the same filter: compile it once, here. */
        rc = confine_seccomp_prepare_from_env();
        if (rc < 0)
                fprintf(stderr,
                        "cellvm-executor: compiling the seccomp filter ahead: %s "
                        "(each executor compiles its own)\n",
                        strerror(-rc));
        if (send_ready(fd, kernel, preload) < 0)
                return 1;
        spare_start(kernel);
        rc = ctl_channel_init(&chan, fd);
        if (rc < 0) {
                fprintf(stderr, "cellvm-executor: %s\n", strerror(-rc));
                return 1;
        }
        int status = 0;
        for (;;) {
                struct cv_msg msg;
                Py_BEGIN_ALLOW_THREADS rc = ctl_channel_recv(&chan, &msg);
                Py_END_ALLOW_THREADS if (rc == -EINTR) continue;
                if (rc == CV_READ_EOF)
                        break;
                if (rc < 0) {
                        fprintf(stderr, "cellvm-executor: zygote control socket: %s\n",
                                strerror(-rc));
                        status = 1;
                        break;
                }
                if (msg.type != CV_MSG_Z_SPAWN) {
                        fprintf(stderr, "cellvm-executor: zygote ignores message type 0x%04x\n",
                                msg.type);
                        continue;
                }
                if (handle_spawn(&chan, kernel, &msg) < 0) {
                        status = 1;
                        break;
                }
        }
        spare_drop();
        node_spare_drop();
        ctl_channel_free(&chan);
        return status;
}
