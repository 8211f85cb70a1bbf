/* The keeper of one sandbox (keeper.h). */
#include "keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "registry.h"

#define POLL_MS 1000 /* the entry is read again this often: set-timeout moves it */
#define ENTRY_MAX 65536

/* Entry `key` of `r` into `e`: 1, 0 when there is none, -1 when it does not parse. */
static int read_entry(struct creg *r, const char *key, struct creg_entry *e)
{
        static char text[ENTRY_MAX + 1];
        char path[sizeof(r->dir) + 100];
        snprintf(path, sizeof(path), "%s/%s.sandbox", r->dir, key);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -1;
        size_t len = 0;
        ssize_t n;
        while (len < ENTRY_MAX && (n = read(fd, text + len, ENTRY_MAX - len)) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        break;
                len += (size_t)n;
        }
        close(fd);
        text[len] = '\0';
        char why[128];
        return creg_parse(text, key, e, why, sizeof(why)) == 0 ? 1 : -1;
}

/* E2B's onTimeout "pause": `cellvm pause KEY` (this binary, cli_pause.c) at
 * the deadline; it saves the guest, stops the VMM and removes the entry. A
 * failed pause leaves the sandbox to the sweep: killed past its grace. */
static void pause_now(const char *key)
{
        pid_t child = fork();
        if (child == 0) {
                execl("/proc/self/exe", "cellvm", "pause", key, (char *)NULL);
                _exit(127);
        }
        int status;
        while (child > 0 && waitpid(child, &status, 0) < 0 && errno == EINTR)
                ;
}

static void keep(const char *key)
{
        struct creg r = {.lock_fd = -1};
        struct creg_entry e;
        static struct creg_entry live[CREG_MAX_ENTRIES];
        char err[600];
        if (creg_open(&r, err, sizeof(err)) < 0 || read_entry(&r, key, &e) != 1)
                return;
        pid_t pid = e.pid;
        uint64_t start = e.pid_start;
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        int64_t paused_at = 0; /* the deadline a pause was tried at */
        for (;;) {
                if (creg_lock(&r) < 0)
                        return;
                int got = read_entry(&r, key, &e);
                if (got != 1 || e.pid != pid || e.pid_start != start) {
                        creg_unlock(&r); /* killed by someone, or damaged: the sweeps own it */
                        return;
                }
                if (creg_proc_start(pid) != start) {
                        creg_remove(&r, &e, true); /* the guest ended (its deadline) */
                        creg_unlock(&r);
                        return;
                }
                bool pauses = creg_pauses_at_timeout(&e);
                bool pause = pauses && e.deadline_ms != paused_at;
                /* After a pause that failed: killed when the sweep would kill it. */
                double margin = pauses ? CREG_PAUSE_MARGIN_S : 0;
                int64_t grace = pause ? 0 : (int64_t)((creg_grace_s() + margin) * 1000);
                int64_t left = e.deadline_ms + grace - creg_now_ms();
                if (left <= 0 && pause) {
                        creg_unlock(&r);
                        paused_at = e.deadline_ms;
                        pause_now(key);
                        continue;
                }
                if (left <= 0) {
                        (void)creg_sweep(&r, live, CREG_MAX_ENTRIES, stderr); /* kills it */
                        creg_unlock(&r);
                        continue;
                }
                creg_unlock(&r);
                struct pollfd p = {.fd = pidfd, .events = POLLIN};
                int wait = left < POLL_MS ? (int)left : POLL_MS;
                if (poll(&p, pidfd >= 0 ? 1 : 0, wait) < 0 && errno != EINTR)
                        return;
        }
}

void ckeeper_detach(const char *out)
{
        (void)setsid();
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        int o =
            out ? open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600) : null;
        if (null < 0 || o < 0 || dup2(null, 0) < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0)
                _exit(1);
        if (syscall(SYS_close_range, 3u, ~0u, 0u) < 0)
                for (int fd = 3; fd < 1024; fd++)
                        (void)close(fd);
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGTERM, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
}

pid_t ckeeper_start(const char *key)
{
        pid_t child = fork();
        if (child != 0)
                return child < 0 ? -errno : child;
        ckeeper_detach(NULL);
        keep(key);
        _exit(0);
}
