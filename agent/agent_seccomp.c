/*
 * The agent's seccomp filters.
 *
 * agent_seccomp_apply(): the agent's own allowlist, loaded once it listens and
 * its spawner runs. The agent then serves requests and supervises processes,
 * but creates none: fork, exec and new sockets are the spawner's (spawner.c),
 * so they are not on the list, with one narrow exception: the ports service's
 * TCP client sockets (allow_tunnel_sockets). Anything not listed fails with EPERM rather
 * than killing the agent: a syscall missed on a rare path (an error branch, a
 * libc update) then fails one operation, which the agent logs, instead of
 * taking every context down; either way the syscall does not run.
 *
 * spawner_seccomp_apply(): the spawner's filter, inherited by the zygote and
 * by command processes, which run arbitrary programs. So it is a denylist of
 * what no process of the guest's user side needs; user code gets the stricter
 * filter of confine_seccomp.c on top.
 */

#include "agent_seccomp.h"

#include <errno.h>
#include <linux/random.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "../confine/confine.h"

/* What the agent's loop, connections, services and supervision call after setup
 * (strace -f of the test suite; names this architecture lacks are skipped). */
/* clang-format off */
static const char *const agent_allowed[] = {
    /* the loop */
    "epoll_wait", "epoll_pwait", "epoll_pwait2", "epoll_ctl", "epoll_create1", "signalfd4",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "restart_syscall",
    "clock_gettime", "clock_getres", "gettimeofday", "nanosleep", "clock_nanosleep",
    /* fd I/O: connections, pipes, the zygote's and the spawner's sockets, files */
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "lseek",
    "close", "dup", "dup2", "dup3", "fcntl", "pipe2", "sendmsg", "recvmsg", "sendto",
    "recvfrom", "accept4", "accept", "shutdown", "getsockname", "getpeername", "getsockopt",
    /* files service (files.c, file_transfer.c, fswatch.c), cgroups (cgroup.c), /proc */
    "open", "openat", "creat", "stat", "fstat", "lstat", "newfstatat", "statx", "statfs",
    "fstatfs", "access", "faccessat", "faccessat2", "getdents64", "getcwd", "mkdir", "mkdirat",
    "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link", "linkat",
    "symlink", "symlinkat", "readlink", "readlinkat", "chmod", "fchmod", "fchmodat", "chown",
    "fchown", "fchownat", "lchown", "utimensat", "truncate", "ftruncate", "fallocate", "fsync",
    "fdatasync", "fadvise64", "umask", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    /* acting as the sandbox user on files (creds.c) */
    "setfsuid", "setfsgid", "setgroups", "getgroups", "getuid", "geteuid", "getgid",
    "getegid", "getresuid", "getresgid",
    /* supervision: signals to its children, reaping */
    "kill", "tgkill", "tkill", "wait4", "waitid", "getpid", "gettid", "getppid",
    /* memory, libc */
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "futex", "getrandom", "uname",
    "sched_yield", "getrlimit", "prlimit64", "sysinfo", "exit", "exit_group",
    /* SET_TIME (system.c); ADD_ENTROPY's ioctls are below; SET_DEADLINE's sigqueue to init */
    "clock_settime", "rt_sigqueueinfo",
#ifdef __SANITIZE_ADDRESS__
    /* LeakSanitizer stops the world at exit with a tracer task (clone with CLONE_VM, below)
     * that lists /proc/<agent>/task (getdents on x86_64) and ptraces the agent's threads.
     * Sanitizer builds only. */
    "ptrace", "prctl", "getdents", "sigaltstack", "sched_getaffinity", "process_vm_readv",
#endif
};
/* clang-format on */

#ifdef __SANITIZE_ADDRESS__
/* LeakSanitizer's tracer task shares the agent's memory: clone with CLONE_VM and without
 * CLONE_VFORK. A fork (no CLONE_VM) still fails. Sanitizer builds only. */
static int allow_sanitizer_clone(scmp_filter_ctx ctx)
{
        int nr = seccomp_syscall_resolve_name("clone");
        return seccomp_rule_add(
            ctx, SCMP_ACT_ALLOW, nr, 1,
            SCMP_A0(SCMP_CMP_MASKED_EQ, (scmp_datum_t)(CLONE_VM | CLONE_VFORK), CLONE_VM));
}
#endif

/* socketpair(AF_UNIX, ...): the zygote's control socket (zygote.c). */
static int allow_socketpair(scmp_filter_ctx ctx)
{
        int nr = seccomp_syscall_resolve_name("socketpair");
        return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1, SCMP_A0(SCMP_CMP_EQ, AF_UNIX));
}

/*
 * The ports service (ports.c) connects to TCP ports on the guest's loopback:
 * socket() of exactly AF_INET or AF_INET6, SOCK_STREAM | SOCK_NONBLOCK |
 * SOCK_CLOEXEC, protocol 0, and connect(). Not through the spawner: a tunnel
 * is opened per HTTP request and its connect must not block the agent's loop
 * (the spawner answers one synchronous request at a time), and passing the
 * fd back would add a second path for the same bytes. No bind, listen or
 * other families: the agent still cannot serve on, sniff or route a network.
 * connect()'s address cannot be checked by seccomp (a pointer); ports.c only
 * ever passes 127.0.0.1 or ::1, and the guest has no other interface unless
 * its VM was given one (cellvm.net=static, docs/SECURITY.md).
 */
static int allow_tunnel_sockets(scmp_filter_ctx ctx)
{
        int nr = seccomp_syscall_resolve_name("socket");
        const int families[] = {AF_INET, AF_INET6};
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < 2; i++)
                rc = seccomp_rule_add(
                    ctx, SCMP_ACT_ALLOW, nr, 3, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)families[i]),
                    SCMP_A1(SCMP_CMP_EQ,
                            (scmp_datum_t)(SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC)),
                    SCMP_A2(SCMP_CMP_EQ, 0));
        if (rc == 0)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, seccomp_syscall_resolve_name("connect"),
                                      0);
        return rc;
}

/* ioctl: only the serial port's tty settings (listen.c), ADD_ENTROPY (common/entropy.c) and
 * the ptys of commands (pty.c): unlocking a new master, opening its slave from it (no path
 * lookup) and setting its window size. The slave's TIOCSCTTY is the child's, before exec. */
static int allow_ioctls(scmp_filter_ctx ctx)
{
        static const unsigned long requests[] = {
            TCGETS,        TCSETS,     TIOCEXCL,    RNDADDENTROPY,
            RNDRESEEDCRNG, TIOCSPTLCK, TIOCGPTPEER, TIOCSWINSZ,
        };
        int nr = seccomp_syscall_resolve_name("ioctl");
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < sizeof(requests) / sizeof(requests[0]); i++)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
                                      SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)requests[i]));
        return rc;
}

int agent_seccomp_apply(void)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ctx)
                return -ENOMEM;
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < sizeof(agent_allowed) / sizeof(agent_allowed[0]); i++) {
                int nr = seccomp_syscall_resolve_name(agent_allowed[i]);
                if (nr != __NR_SCMP_ERROR)
                        rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
        }
        if (rc == 0)
                rc = allow_socketpair(ctx);
        if (rc == 0)
                rc = allow_ioctls(ctx);
        if (rc == 0)
                rc = allow_tunnel_sockets(ctx);
#ifdef __SANITIZE_ADDRESS__
        if (rc == 0)
                rc = allow_sanitizer_clone(ctx);
#endif
        /* no_new_privs stays on (libseccomp's default): the agent never execs. */
        if (rc == 0)
                rc = seccomp_load(ctx);
        seccomp_release(ctx);
        return rc < 0 ? rc : 0;
}

int spawner_seccomp_apply(void)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        /* What no process of the guest's user side needs (confine_seccomp.c). */
        int rc = confine_seccomp_deny_common(ctx);
#ifndef __SANITIZE_ADDRESS__
        /* LeakSanitizer stops the world with ptrace at exit: allowed in SAN builds only. */
        if (rc == 0)
                rc = confine_seccomp_deny(ctx, "ptrace");
        if (rc == 0)
                rc = confine_seccomp_deny(ctx, "process_vm_readv");
#endif
        /* As root, load without no_new_privs (CAP_SYS_ADMIN allows it) so command
         * processes may still exec setuid helpers; user code sets it for itself. */
        if (rc == 0 && geteuid() == 0)
                rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (rc == 0)
                rc = seccomp_load(ctx);
        seccomp_release(ctx);
        return rc < 0 ? rc : 0;
}
