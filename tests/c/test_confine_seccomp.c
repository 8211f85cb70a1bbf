/*
 * The user-code seccomp filter (confine/confine_seccomp.c): the program compiled
 * ahead by confine_seccomp_prepare() denies and allows exactly what a filter
 * compiled in the child does, and a policy it was not prepared for gets its own.
 */
#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../confine/confine.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

/* Bit i set: probe i was refused with EPERM. */
static unsigned probe(void)
{
        unsigned refused = 0, bit = 0;
        int fd;
#define PROBE(call)                                                                                \
        do {                                                                                       \
                errno = 0;                                                                         \
                fd = (call);                                                                       \
                if (fd < 0 && errno == EPERM)                                                      \
                        refused |= 1u << bit;                                                      \
                else if (fd >= 0 && fd != 0)                                                       \
                        close(fd);                                                                 \
                bit++;                                                                             \
        } while (0)
        PROBE(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
        PROBE(socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
        PROBE(socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
        PROBE(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        PROBE(mount("none", "/nonexistent-cellvm-test", "tmpfs", 0, NULL)); /* ENOENT if allowed */
        PROBE(unshare(CLONE_NEWUSER));
        PROBE(kill(1, 0));
        PROBE(kill(getppid(), 0));
        PROBE(dup(1));
#undef PROBE
        return refused;
}

/* In a child: no_new_privs, the filter for `p`, then the probes. */
static unsigned confined_probe(const struct confine_policy *p)
{
        int pipefd[2];
        assert(pipe2(pipefd, O_CLOEXEC) == 0);
        pid_t pid = fork();
        assert(pid >= 0);
        if (pid == 0) {
                unsigned r = ~0u;
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && confine_seccomp_load(p) == 0)
                        r = probe();
                _exit(write(pipefd[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 1);
        }
        close(pipefd[1]);
        unsigned r = ~0u;
        assert(read(pipefd[0], &r, sizeof(r)) == (ssize_t)sizeof(r));
        close(pipefd[0]);
        int status;
        assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        assert(r != ~0u);
        return r;
}

enum {
        INET = 1,
        INET6 = 2,
        VSOCK = 4,
        UNIX_ = 8,
        MOUNT = 16,
        USERNS = 32,
        KILL1 = 64,
        KILL_AGENT = 128,
        DUP = 256
};

int main(void)
{
        struct confine_policy none = {.net_none = true, .agent_pid = getpid()};
        struct confine_policy allow = {.net_none = false, .agent_pid = getpid()};
        unsigned want_none = INET | INET6 | VSOCK | MOUNT | USERNS | KILL1 | KILL_AGENT;
        unsigned want_allow = VSOCK | MOUNT | USERNS | KILL1 | KILL_AGENT;

        /* Compiled in the child (nothing prepared yet). */
        assert(confined_probe(&none) == want_none);
        assert(confined_probe(&allow) == want_allow);

        /* Prepared for "none": the same answers, and "allow" still gets its own filter. */
        assert(confine_seccomp_prepare(&none) == 0);
        assert(confined_probe(&none) == want_none);
        assert(confined_probe(&allow) == want_allow);

        /* Prepared again for "allow". */
        assert(confine_seccomp_prepare(&allow) == 0);
        assert(confined_probe(&allow) == want_allow);
        assert(confined_probe(&none) == want_none);

        puts("test_confine_seccomp: ok");
        return 0;
}
