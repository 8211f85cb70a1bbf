/* Process setup of a forked executor (see executor_proc.h). */
#include "executor_proc.h"

#include "../confine/confine.h"

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

int executor_proc_detach(int keep, const char **step)
{
        *step = "setsid";
        if (setsid() < 0)
                return -errno;
        *step = "open /dev/null";
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull < 0)
                return -errno;
        if (dup2(devnull, 0) < 0) {
                int e = -errno;
                close(devnull);
                return e;
        }
        close(devnull);
        /* Nothing of the zygote's but `keep` (and 1, 2 until attach replaces them). */
        *step = "close inherited fds";
        if (keep >= 0 && keep != EXECUTOR_CTL_FD && dup3(keep, EXECUTOR_CTL_FD, O_CLOEXEC) < 0)
                return -errno;
        int rc = close_from(keep >= 0 ? EXECUTOR_CTL_FD + 1 : EXECUTOR_CTL_FD);
        if (rc < 0)
                return rc;
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
        /* Last: the sandbox user, no capabilities, seccomp (confine/confine.h). */
        return confine_apply_from_env(step);
}

int executor_proc_attach(int ctl, int out, int err, const char **step)
{
        *step = "park fds";
        ctl = park(ctl);
        out = ctl < 0 ? ctl : park(out);
        err = out < 0 ? out : park(err);
        if (err < 0)
                return err;
        *step = "dup2 onto 1..3";
        if (dup2(out, 1) < 0 || dup2(err, 2) < 0 || dup3(ctl, EXECUTOR_CTL_FD, O_CLOEXEC) < 0)
                return -errno;
        *step = "close inherited fds";
        return close_from(EXECUTOR_CTL_FD + 1);
}

int executor_proc_chdir(const char *cwd, const char **step)
{
        *step = "chdir";
        if (cwd != NULL && cwd[0] != '\0' && chdir(cwd) < 0)
                return -errno;
        return 0;
}
