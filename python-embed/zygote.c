/* Zygote loop: Z_READY, then Z_SPAWN -> double fork -> Z_SPAWNED (see zygote.h). */
#include "zygote.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../agent/confine.h"
#include "cbor_util.h"
#include "cellvm_module.h"
#include "ctl_channel.h"
#include "executor_proc.h"
#include "msgtypes.h"

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

/* In the executor (grandchild of the zygote): never returns. */
static void run_executor(PyObject *kernel, int fds[SPAWN_NFDS], const char *cwd)
{
        const char *step;
        PyOS_AfterFork_Child();
        int rc = executor_proc_setup(fds[0], fds[1], fds[2], cwd, &step);
        if (rc < 0) {
                /* fd 2 is the context's stderr pipe once dup2 got that far. */
                fprintf(stderr, "cellvm-executor: %s: %s\n", step, strerror(-rc));
                _exit(1);
        }
        PyObject *r = PyObject_CallMethod(kernel, "executor_main", "i", EXECUTOR_CTL_FD);
        int status = 0;
        if (r == NULL) {
                log_python_error("executor failed");
                status = 1;
        }
        Py_XDECREF(r);
        if (Py_FinalizeEx() < 0)
                status = 120;
        _exit(status);
}

/* Forks the executor through a short-lived middle process so the agent (a
 * child subreaper) inherits it. Returns the executor's pid or a negative errno. */
static pid_t spawn(PyObject *kernel, int fds[SPAWN_NFDS], const char *cwd)
{
        int pidpipe[2];
        if (pipe2(pidpipe, O_CLOEXEC) < 0)
                return -errno;
        PyOS_BeforeFork();
        pid_t mid = fork();
        if (mid == 0) {
                pid_t exe = fork();
                if (exe == 0)
                        run_executor(kernel, fds, cwd);
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

static int send_spawned(int fd, uint32_t id, const char *context, pid_t pid, int err)
{
        PyObject *body =
            Py_BuildValue("{s:s,s:l}", "context", context, "pid", (long)(pid > 0 ? pid : 0));
        if (body != NULL && err < 0) {
                /* Not in the protocol table: a hint for the agent's log (unknown keys are ignored).
                 */
                PyObject *msg = PyUnicode_FromFormat("spawn failed: %s", strerror(-err));
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
        char *context = NULL, *cwd = NULL;
        int rc = cv_body_parse(msg->body, msg->len, &body);
        if (rc == 0)
                rc = cv_map_dup_str(body, "context", &context);
        if (rc == 0) {
                rc = cv_map_dup_str(body, "cwd", &cwd);
                if (rc == -ENOENT)
                        rc = 0;
        }
        if (body != NULL)
                cbor_decref(&body);
        pid_t pid = 0;
        if (rc < 0)
                fprintf(stderr, "cellvm-executor: bad Z_SPAWN body: %s\n", strerror(-rc));
        else if (got < SPAWN_NFDS) {
                fprintf(stderr, "cellvm-executor: Z_SPAWN for %s came with %zu fds, need %d\n",
                        context, got, SPAWN_NFDS);
                rc = -EBADF;
        } else {
                pid = spawn(kernel, fds, cwd);
                if (pid < 0) {
                        rc = pid;
                        fprintf(stderr, "cellvm-executor: spawning %s: %s\n", context,
                                strerror(-rc));
                }
        }
        for (size_t i = 0; i < got; i++)
                close(fds[i]);
        int send_rc = send_spawned(chan->fd, msg->id, context ? context : "", pid, rc);
        free(context);
        free(cwd);
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
        ctl_channel_free(&chan);
        return status;
}
