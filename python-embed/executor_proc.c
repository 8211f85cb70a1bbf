/* Process setup of a forked executor (see executor_proc.h). */
#include "executor_proc.h"

#include "../agent/confine.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* First fd number used to park the inherited fds while 0..3 are rearranged. */
#define PARK_FD 10

/* Timer slack of the executor, in nanoseconds. */
#define EXECUTOR_TIMER_SLACK_NS 1000

static int park(int fd)
{
        int r = fcntl(fd, F_DUPFD_CLOEXEC, PARK_FD);
        return r < 0 ? -errno : r;
}

static int close_from(unsigned int first)
{
        if (syscall(SYS_close_range, first, ~0U, 0) == 0)
                return 0;
        if (errno != ENOSYS)
                return -errno;
        /* Kernels before 5.9: close what can be open. */
        long max = sysconf(_SC_OPEN_MAX);
        for (long fd = first; fd < (max > 0 ? max : 65536); fd++)
                close((int)fd);
        return 0;
}

int executor_proc_setup(int ctl, int out, int err, const char *cwd, const char **step)
{
        int devnull, rc;

        *step = "setsid";
        if (setsid() < 0)
                return -errno;
        *step = "park fds";
        ctl = park(ctl);
        out = ctl < 0 ? ctl : park(out);
        err = out < 0 ? out : park(err);
        if (err < 0)
                return err;
        *step = "open /dev/null";
        devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull < 0)
                return -errno;
        *step = "dup2 onto 0..3";
        if (dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 ||
            dup3(ctl, EXECUTOR_CTL_FD, O_CLOEXEC) < 0)
                return -errno;
        *step = "close inherited fds";
        rc = close_from(EXECUTOR_CTL_FD + 1);
        if (rc < 0)
                return rc;
        if (cwd != NULL && cwd[0] != '\0') {
                *step = "chdir";
                if (chdir(cwd) < 0)
                        return -errno;
        }
        *step = "sigprocmask";
        sigset_t none;
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0)
                return -errno;
        /* The output drain wait sleeps a few microseconds at a time; the default
         * 50 us slack would stretch each sleep tenfold. */
        *step = "timer slack";
        if (prctl(PR_SET_TIMERSLACK, EXECUTOR_TIMER_SLACK_NS, 0, 0, 0) < 0)
                return -errno;
        /* Last: the sandbox user, no capabilities, seccomp (agent/confine.h). */
        return confine_apply_from_env(step);
}
