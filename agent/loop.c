/* The epoll loop: fd events, signals (signalfd) and deadlines (epoll timeouts). */

#include "loop.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"

static struct {
        loop_reap_fn reap[LOOP_MAX_HOOKS];
        loop_timer_fn timer[LOOP_MAX_HOOKS];
        loop_before_wait_fn before_wait[LOOP_MAX_HOOKS];
        loop_stop_fn stop[LOOP_MAX_HOOKS];
        size_t nreap, ntimer, nbefore_wait, nstop;
} hooks;

#define ADD_HOOK(kind, fn)                                                                         \
        do {                                                                                       \
                if (hooks.n##kind >= LOOP_MAX_HOOKS)                                               \
                        return -ENOSPC;                                                            \
                hooks.kind[hooks.n##kind++] = (fn);                                                \
                return 0;                                                                          \
        } while (0)

int loop_on_reap(loop_reap_fn fn)
{
        ADD_HOOK(reap, fn);
}

int loop_on_timer(loop_timer_fn fn)
{
        ADD_HOOK(timer, fn);
}

int loop_before_wait(loop_before_wait_fn fn)
{
        ADD_HOOK(before_wait, fn);
}

int loop_on_stop(loop_stop_fn fn)
{
        ADD_HOOK(stop, fn);
}

uint64_t now_mono(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t now_boottime(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int watch_set(struct agent *a, struct watch *w, uint32_t events)
{
        if (w->fd < 0 || events == w->events)
                return 0;
        struct epoll_event ev = {.events = events, .data.ptr = w};
        int op = w->events == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
        if (epoll_ctl(a->epfd, op, w->fd, &ev) < 0)
                return -errno;
        w->events = events;
        return 0;
}

void watch_close(struct agent *a, struct watch *w)
{
        if (w->fd < 0)
                return;
        int rc = watch_set(a, w, 0);
        if (rc < 0)
                log_warn("epoll_ctl(DEL, fd %d): %s", w->fd, strerror(-rc));
        if (close(w->fd) < 0)
                log_warn("close(fd %d): %s", w->fd, strerror(errno));
        w->fd = -1;
        w->events = 0;
}

void describe_status(int status, char *out, size_t size)
{
        if (WIFEXITED(status))
                snprintf(out, size, "exited with status %d", WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
                snprintf(out, size, "killed by signal %d (%s)", WTERMSIG(status),
                         sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
        else
                snprintf(out, size, "ended with wait status %#x", (unsigned)status);
}

static void reap_children(struct agent *a)
{
        for (;;) {
                int status;
                pid_t pid = waitpid(-1, &status, WNOHANG);
                if (pid < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != ECHILD)
                                log_error("waitpid: %s", strerror(errno));
                        return;
                }
                if (pid == 0)
                        return;
                bool known = false;
                for (size_t i = 0; i < hooks.nreap && !known; i++)
                        known = hooks.reap[i](a, pid, status);
                if (known)
                        continue;
                char how[64];
                describe_status(status, how, sizeof(how));
                log_debug("reaped orphan pid %d: %s", (int)pid, how);
        }
}

static void on_signal(struct agent *a, struct watch *w, uint32_t events)
{
        (void)events;
        struct signalfd_siginfo si;
        for (;;) {
                ssize_t n = read(w->fd, &si, sizeof(si));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                log_error("read(signalfd): %s", strerror(errno));
                        return;
                }
                if ((size_t)n != sizeof(si))
                        return;
                switch (si.ssi_signo) {
                case SIGCHLD:
                        reap_children(a);
                        break;
                case SIGTERM:
                case SIGINT:
                        log_info("got %s, shutting down", sigabbrev_np((int)si.ssi_signo));
                        a->stopping = true;
                        break;
                default:
                        break;
                }
        }
}

/* Signals the loop handles through its signalfd; blocked for the agent, unblocked in children. */
int loop_signals(sigset_t *set)
{
        sigemptyset(set);
        sigaddset(set, SIGCHLD);
        sigaddset(set, SIGTERM);
        sigaddset(set, SIGINT);
        return 0;
}

static int loop_init_signals(struct agent *a)
{
        sigset_t set;
        loop_signals(&set);
        if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
                return -errno;
        int fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        a->sig = (struct watch){.fd = fd, .fn = on_signal};
        return watch_set(a, &a->sig, EPOLLIN);
}

int loop_run(struct agent *a)
{
        int rc = loop_init_signals(a);
        if (rc < 0) {
                log_error("setting up signalfd: %s", strerror(-rc));
                return rc;
        }
        /* Children that exited before the signalfd existed. */
        reap_children(a);
        while (!a->stopping) {
                uint64_t now = now_mono();
                uint64_t next = UINT64_MAX;
                for (size_t i = 0; i < hooks.ntimer; i++)
                        hooks.timer[i](a, now, &next);
                bool more = false;
                for (size_t i = 0; i < hooks.nbefore_wait; i++)
                        more = hooks.before_wait[i](a) || more;
                int timeout = -1;
                if (next != UINT64_MAX) {
                        now = now_mono();
                        uint64_t ms = next > now ? (next - now + 999999) / 1000000 : 0;
                        timeout = ms > 60000 ? 60000 : (int)ms;
                }
                if (more)
                        timeout = 0;
                /* One event per wait: a handler may free objects that another pending event names.
                 */
                struct epoll_event ev;
                int n = epoll_wait(a->epfd, &ev, 1, timeout);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        rc = -errno;
                        log_error("epoll_wait: %s", strerror(errno));
                        return rc;
                }
                if (n == 1) {
                        struct watch *w = ev.data.ptr;
                        w->fn(a, w, ev.events);
                }
        }
        for (size_t i = 0; i < hooks.nstop; i++)
                hooks.stop[i](a);
        return 0;
}
