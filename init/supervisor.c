#include "supervisor.h"

#include "agent.h"
#include "backoff.h"
#include "deadline.h"
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
        uint64_t deadline_ns; /* DEADLINE_NONE or CLOCK_BOOTTIME of the shutdown */
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

static void log_deadline(uint64_t deadline_ns, const char *why)
{
        if (deadline_ns == DEADLINE_NONE) {
                log_info("deadline cleared (%s)", why);
                return;
        }
        uint64_t now = boottime_ns();
        uint64_t left_ms = deadline_ns > now ? (deadline_ns - now) / 1000000ull : 0;
        log_info("deadline in %llu ms (%s)", (unsigned long long)left_ms, why);
}

/* A queued INIT_SIG_DEADLINE moves the deadline; anything else is ignored. */
static void take_deadline_request(struct supervisor *s, const siginfo_t *info)
{
        if (!deadline_request_valid(info)) {
                log_warn("ignored deadline signal from pid %d uid %d (code %d): not queued by root",
                         (int)info->si_pid, (int)info->si_uid, info->si_code);
                return;
        }
        s->deadline_ns = deadline_from_request(boottime_ns(), deadline_request_ms(info));
        log_deadline(s->deadline_ns, "set by the agent");
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
        s.deadline_ns = deadline_from_boot_ms(c->deadline_ms);
        if (s.deadline_ns != DEADLINE_NONE)
                log_deadline(s.deadline_ns, "cellvm.deadline_ms");
        start_agent(&s);
        if (after_start != NULL)
                after_start();
        for (;;) {
                uint64_t now = boottime_ns();
                uint64_t wait = deadline_wait_ns(s.deadline_ns, now, 3600ull * 1000000000ull);
                if (wait == 0)
                        shutdown_machine(c, c->shutdown, "the sandbox's deadline passed");
                if (s.agent == 0) {
                        if (now >= s.restart_at_ns) {
                                start_agent(&s);
                                continue;
                        }
                        if (s.restart_at_ns - now < wait)
                                wait = s.restart_at_ns - now;
                }
                struct timespec ts = {(time_t)(wait / 1000000000ull), (long)(wait % 1000000000ull)};
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
                case INIT_SIG_DEADLINE:
                        take_deadline_request(&s, &info);
                        break;
                default:
                        log_debug("ignored signal %d (%s) from pid %d", sig, strsignal(sig),
                                  (int)info.si_pid);
                        break;
                }
        }
}
