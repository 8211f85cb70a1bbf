/*
 * The agent's seccomp allowlist (agent/agent_seccomp.c): in a forked child with
 * the filter loaded, what the agent must never do again (fork, exec, sockets,
 * mount, ptrace) fails with EPERM, and what it does while serving still works.
 * Each denied call is chosen so that without the filter it would succeed or
 * fail with another errno, so a filter that lets it through fails the test.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../agent/agent_seccomp.h"

static int failures;

/* `rc` must be -1 with errno EPERM (the filter's answer). */
static void expect_eperm(const char *what, long rc, int err)
{
        if (rc == -1 && err == EPERM)
                return;
        printf("FAIL: %s: expected EPERM, got rc %ld errno %d (%s)\n", what, rc, err,
               strerror(err));
        failures++;
}

/* `rc` must not be an EPERM failure (allowed: success, or the kernel's own errno). */
static void expect_allowed(const char *what, long rc, int err)
{
        if (rc >= 0 || err != EPERM)
                return;
        printf("FAIL: %s: denied (EPERM) but the agent needs it\n", what);
        failures++;
}

#define DENIED(what, call)                                                                         \
        do {                                                                                       \
                errno = 0;                                                                         \
                long rc_ = (long)(call);                                                           \
                expect_eperm(what, rc_, errno);                                                    \
        } while (0)
#define ALLOWED(what, call)                                                                        \
        do {                                                                                       \
                errno = 0;                                                                         \
                long rc_ = (long)(call);                                                           \
                expect_allowed(what, rc_, errno);                                                  \
        } while (0)

static void denied_calls(const char *dir)
{
        char *argv[] = {"/bin/true", NULL};
        char *envp[] = {NULL};
        DENIED("execve", execve("/bin/true", argv, envp));
        DENIED("execveat", syscall(SYS_execveat, AT_FDCWD, "/bin/true", argv, envp, 0));
        /* A fork that got through: the copy leaves at once and the check fails. */
        long pid = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
        if (pid == 0)
                _exit(0);
        expect_eperm("clone (fork)", pid, errno);
        errno = 0;
        pid = fork();
        if (pid == 0)
                _exit(0);
        expect_eperm("fork()", pid, errno);
        DENIED("socket(AF_INET)", socket(AF_INET, SOCK_STREAM, 0));
        DENIED("socket(AF_UNIX)", socket(AF_UNIX, SOCK_STREAM, 0));
        /* The ports service's sockets are TCP, non-blocking, close-on-exec only. */
        DENIED("socket(AF_INET, SOCK_DGRAM)",
               socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        DENIED("socket(AF_PACKET)",
               socket(AF_PACKET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        DENIED("socket(AF_INET, SOCK_RAW)",
               socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 255));
        DENIED("socketpair(AF_INET)", socketpair(AF_INET, SOCK_STREAM, 0, (int[2]){0, 0}));
        /* Without the filter: ENOENT (no such target), whatever the privileges. */
        char target[600];
        snprintf(target, sizeof(target), "%s/no-such-dir/x", dir);
        DENIED("mount", mount("none", target, "tmpfs", 0, NULL));
        DENIED("umount2", umount2(target, 0));
        DENIED("chroot", chroot(target));
#ifndef __SANITIZE_ADDRESS__
        /* Sanitizer builds keep ptrace for LeakSanitizer (agent_seccomp.c). */
        DENIED("ptrace", ptrace(PTRACE_TRACEME, 0, NULL, NULL));
        /* ioctl is limited to the requests the agent uses. */
        DENIED("ioctl(FIONREAD)", ioctl(0, FIONREAD, &(int){0}));
        DENIED("prctl(PR_SET_DUMPABLE)", syscall(SYS_prctl, 4 /* PR_SET_DUMPABLE */, 1, 0, 0, 0));
#endif
        DENIED("bpf", syscall(SYS_bpf, 0, NULL, 0));
        DENIED("setuid", setuid(12345));
        DENIED("unshare", syscall(SYS_unshare, 0));
        DENIED("clone3", syscall(SYS_clone3, NULL, 0));
}

static void allowed_calls(const char *dir)
{
        char path[600], path2[600];
        ALLOWED("getpid", syscall(SYS_getpid));
        ALLOWED("kill(self, 0)", kill(getpid(), 0));
        int ep = epoll_create1(EPOLL_CLOEXEC);
        ALLOWED("epoll_create1", ep);
        int p[2] = {-1, -1};
        ALLOWED("pipe2", pipe2(p, O_CLOEXEC));
        struct epoll_event ev = {.events = EPOLLIN};
        ALLOWED("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
        ALLOWED("write", write(p[1], "x", 1));
        ALLOWED("epoll_wait", epoll_wait(ep, &ev, 1, 0));
        char c;
        ALLOWED("read", read(p[0], &c, 1));
        int sv[2] = {-1, -1};
        ALLOWED("socketpair(AF_UNIX)", socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
        int tcp = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        ALLOWED("socket(AF_INET, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC)", tcp);
        close(tcp);
        ALLOWED("sendmsg", send(sv[0], "y", 1, MSG_NOSIGNAL));
        ALLOWED("recvmsg", recv(sv[1], &c, 1, 0));
        int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        ALLOWED("openat", fd);
        ALLOWED("ioctl(TCGETS) on a non-tty", ioctl(fd, TCGETS, &(char[64]){0}));
        struct stat st;
        ALLOWED("fstat", fstat(fd, &st));
        snprintf(path, sizeof(path), "%s/d", dir);
        ALLOWED("mkdir", mkdir(path, 0700));
        snprintf(path, sizeof(path), "%s/d/f", dir);
        int f = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ALLOWED("open(O_CREAT)", f);
        ALLOWED("fchmod", fchmod(f, 0644));
        ALLOWED("ftruncate", ftruncate(f, 10));
        ALLOWED("fsync", fsync(f));
        snprintf(path2, sizeof(path2), "%s/d/g", dir);
        ALLOWED("rename", rename(path, path2));
        ALLOWED("lstat", lstat(path2, &st));
        ALLOWED("chown", chown(path2, getuid(), getgid()));
        ALLOWED("unlink", unlink(path2));
        snprintf(path, sizeof(path), "%s/d", dir);
        int in = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        ALLOWED("inotify_init1", in);
        ALLOWED("inotify_add_watch", inotify_add_watch(in, path, IN_CREATE));
        ALLOWED("rmdir", rmdir(path));
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGCHLD);
        ALLOWED("sigprocmask", sigprocmask(SIG_BLOCK, &set, NULL));
        ALLOWED("signalfd", signalfd(-1, &set, SFD_CLOEXEC));
        ALLOWED("setfsuid (query)", syscall(SYS_setfsuid, -1));
        ALLOWED("wait4", waitpid(-1, NULL, WNOHANG));
        ALLOWED("getrandom", syscall(SYS_getrandom, &c, 1, 0));
        void *m = malloc(1 << 20); /* mmap */
        ALLOWED("malloc", m ? 0 : -1);
        free(m);
}

int main(void)
{
        char dir[] = "/tmp/cellvm-test-seccomp-XXXXXX";
        if (!mkdtemp(dir)) {
                perror("mkdtemp");
                return 1;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) {
                perror("fork");
                return 1;
        }
        if (pid == 0) {
                int rc = agent_seccomp_apply();
                if (rc < 0) {
                        printf("FAIL: agent_seccomp_apply: %s\n", strerror(-rc));
                        fflush(stdout);
                        _exit(2);
                }
                denied_calls(dir);
                allowed_calls(dir);
                fflush(stdout);
                _exit(failures ? 1 : 0);
        }
        int status;
        if (waitpid(pid, &status, 0) < 0) {
                perror("waitpid");
                return 1;
        }
        if (rmdir(dir) < 0)
                perror("rmdir"); /* a leftover directory only */
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                printf("test_agent_seccomp: FAILED (status %#x)\n", (unsigned)status);
                return 1;
        }
        printf("test_agent_seccomp: ok\n");
        return 0;
}
