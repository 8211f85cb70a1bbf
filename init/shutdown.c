#include "shutdown.h"

#include "log.h"
#include "mounts.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Reaps children until none are left or the deadline passes; returns true
 * when none are left. SIGCHLD is blocked, so sigtimedwait sleeps on it. */
static bool reap_until(uint64_t deadline_ns)
{
        sigset_t chld;

        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        for (;;) {
                pid_t pid;
                while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
                        ;
                if (pid < 0 && errno == ECHILD)
                        return true;
                uint64_t now = boottime_ns();
                if (now >= deadline_ns)
                        return false;
                uint64_t left = deadline_ns - now;
                struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
                if (sigtimedwait(&chld, NULL, &ts) < 0 && errno != EAGAIN && errno != EINTR)
                        return false;
        }
}

void shutdown_machine(const struct init_config *c, enum shutdown_action action, const char *why)
{
        log_info("shutdown (%s): %s", action == SHUTDOWN_POWEROFF ? "power off" : "reboot", why);
        /* kill(-1) reaches every process but ourselves. */
        if (kill(-1, SIGTERM) != 0 && errno != ESRCH)
                log_warn("kill(-1, SIGTERM): %s", strerror(errno));
        uint64_t deadline = boottime_ns() + (uint64_t)c->shutdown_timeout_ms * 1000000ull;
        if (!reap_until(deadline)) {
                log_warn("processes left after %u ms; sending SIGKILL", c->shutdown_timeout_ms);
                if (kill(-1, SIGKILL) != 0 && errno != ESRCH)
                        log_warn("kill(-1, SIGKILL): %s", strerror(errno));
                if (!reap_until(boottime_ns() + 1000000000ull))
                        log_warn("processes survived SIGKILL (uninterruptible sleep?)");
        }
        sync();
        mounts_unmount_all();
        log_debug("sync and unmount done");
        int cmd = action == SHUTDOWN_POWEROFF ? RB_POWER_OFF : RB_AUTOBOOT;
        reboot(cmd);
        /* Only reached when reboot(2) is refused (no CAP_SYS_BOOT). */
        log_error("reboot(%s): %s", action == SHUTDOWN_POWEROFF ? "RB_POWER_OFF" : "RB_AUTOBOOT",
                  strerror(errno));
        if (getpid() != 1 || c->test)
                _exit(EXIT_FAILURE); /* not the kernel's init: exiting is harmless */
        for (;;)
                pause(); /* the kernel panics if PID 1 exits */
}
