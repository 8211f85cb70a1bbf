#include "supervisor.h"

#include "agent.h"
#include "backoff.h"
#include "log.h"
#include "shutdown.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

int supervisor_block_signals(void)
{
        sigset_t all;

        sigfillset(&all);
        return sigprocmask(SIG_SETMASK, &all, NULL) == 0 ? 0 : -errno;
}

static void describe_exit(int status, char *buf, size_t bufsz)
{
        if (WIFEXITED(status))
                snprintf(buf, bufsz, "exited with status %d", WEXITSTATUS(status));
        else if (WIFSIGNALED(status))
                snprintf(buf, bufsz, "killed by signal %d (%s)", WTERMSIG(status),
                         strsignal(WTERMSIG(status)));
        else
                snprintf(buf, bufsz, "ended (status 0x%x)", status);
}

struct supervisor {
        const struct init_config *cfg;
        bool user_cgroup;
        pid_t agent;
        uint64_t agent_started_ns;
        uint64_t restart_at_ns;
        unsigned backoff_ms;
};

static void start_agent(struct supervisor *s)
{
        pid_t pid = agent_start(s->cfg, s->user_cgroup);
        uint64_t now = boottime_ns();

        if (pid > 0) {
                s->agent = pid;
                s->agent_started_ns = now;
                return;
        }
        s->backoff_ms = restart_backoff_ms(s->backoff_ms, 0, s->cfg->restart_max_ms);
        s->restart_at_ns = now + (uint64_t)s->backoff_ms * 1000000ull;
        log_error("start agent %s: %s; retry in %u ms", s->cfg->agent, strerror(-pid),
                  s->backoff_ms);
}

static void reap_children(struct supervisor *s)
{
        int status;
        pid_t pid;
        char why[96];

        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
                if (pid != s->agent) {
                        log_debug("reaped orphan %d", (int)pid);
                        continue;
                }
                uint64_t now = boottime_ns();
                uint64_t ran_ms = (now - s->agent_started_ns) / 1000000ull;
                s->agent = 0;
                s->backoff_ms = restart_backoff_ms(s->backoff_ms, ran_ms, s->cfg->restart_max_ms);
                s->restart_at_ns = now + (uint64_t)s->backoff_ms * 1000000ull;
                describe_exit(status, why, sizeof(why));
                log_warn("agent pid %d %s after %llu ms; restarting in %u ms", (int)pid, why,
                         (unsigned long long)ran_ms, s->backoff_ms);
        }
        if (pid < 0 && errno != ECHILD)
                log_warn("waitpid: %s", strerror(errno));
}

void supervise(const struct init_config *c, bool user_cgroup, void (*after_start)(void))
{
        struct supervisor s = {.cfg = c, .user_cgroup = user_cgroup};
        sigset_t all;
        siginfo_t info;

        sigfillset(&all);
        start_agent(&s);
        if (after_start != NULL)
                after_start();
        for (;;) {
                struct timespec ts = {3600, 0};
                if (s.agent == 0) {
                        uint64_t now = boottime_ns();
                        if (now >= s.restart_at_ns) {
                                start_agent(&s);
                                continue;
                        }
                        uint64_t left = s.restart_at_ns - now;
                        ts.tv_sec = (time_t)(left / 1000000000ull);
                        ts.tv_nsec = (long)(left % 1000000000ull);
                }
                int sig = sigtimedwait(&all, &info, &ts);
                if (sig < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                log_warn("sigtimedwait: %s", strerror(errno));
                        continue;
                }
                switch (sig) {
                case SIGCHLD:
                        reap_children(&s);
                        break;
                case SIGTERM:
                case SIGINT:
                        shutdown_machine(c, c->shutdown, sig == SIGTERM ? "SIGTERM" : "SIGINT");
                case SIGUSR2:
                case SIGPWR:
                        shutdown_machine(c, SHUTDOWN_POWEROFF, strsignal(sig));
                default:
                        log_debug("ignored signal %d (%s) from pid %d", sig, strsignal(sig),
                                  (int)info.si_pid);
                        break;
                }
        }
}
