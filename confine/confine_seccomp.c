/*
 * The seccomp filter of user code: everything is allowed except what could
 * reach past the sandbox (kernel, mounts, namespaces, other processes' memory,
 * the host channel). Denials are EPERM, not a kill, so programs that probe
 * (pip, test suites) get an ordinary error. docs/SECURITY.md lists the reasons.
 */
#include "confine.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Syscalls that fail with EPERM, by name (names this architecture lacks are
 * skipped). The common set is what no process on the guest's user side needs:
 * user code gets it, and the spawner's filter gives it to the zygote and to
 * commands (agent/agent_seccomp.c).
 */
static const char *const common_denied[] = {
    /* filesystems and the root */
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "open_by_handle_at",
    "swapon",
    "swapoff",
    "acct",
    /* the kernel itself */
    "reboot",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "bpf",
    "perf_event_open",
    "iopl",
    "ioperm",
    "uselib",
    /* kernel keyrings (shared across the guest) */
    "keyctl",
    "add_key",
    "request_key",
    /* other processes' memory */
    "process_vm_writev",
    /* namespaces */
    "setns",
    /* userfaultfd stalls the kernel at will (exploit primitive); io_uring bypasses seccomp. */
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
};

/* And for user code only: */
static const char *const user_denied[] = {
    /* filesystems */
    "name_to_handle_at",
    "quotactl",
    "quotactl_fd",
    /* the kernel's log, clock and terminals */
    "syslog",
    "lookup_dcookie",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "vhangup",
    /* other processes */
    "ptrace",
    "process_vm_readv",
    "pidfd_getfd",
    "kcmp",
    "process_madvise",
};

static int deny_all(scmp_filter_ctx ctx, const char *const *names, size_t n)
{
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < n; i++)
                rc = confine_seccomp_deny(ctx, names[i]);
        return rc;
}

int confine_seccomp_deny_common(void *ctx)
{
        return deny_all(ctx, common_denied, sizeof(common_denied) / sizeof(common_denied[0]));
}

int confine_seccomp_deny(scmp_filter_ctx ctx, const char *name)
{
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR || nr < 0)
                return 0; /* not a syscall of this architecture */
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
}

/* socket(domain, ...) fails for `domain`. */
static int deny_socket_family(scmp_filter_ctx ctx, int domain)
{
        return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
                                SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)domain));
}

/* Signals to `pid` (an int argument: compare its low 32 bits) fail. */
static int deny_signals_to(scmp_filter_ctx ctx, int32_t pid)
{
        scmp_datum_t v = (uint32_t)pid;
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(kill), 1,
                                  SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, v));
        if (rc == 0)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(tgkill), 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, v));
        if (rc == 0)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(tkill), 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, v));
        if (rc == 0 && pid > 0)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(pidfd_open), 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, v));
        return rc;
}

static int add_rules(scmp_filter_ctx ctx, const struct confine_policy *p)
{
        int rc = confine_seccomp_deny_common(ctx);
        if (rc == 0)
                rc = deny_all(ctx, user_denied, sizeof(user_denied) / sizeof(user_denied[0]));
        /* New user namespaces are where unprivileged kernel attack surface starts. */
        if (rc == 0)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(unshare), 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
        if (rc == 0)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                                      SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER));
        /* clone3 passes its flags in memory, out of the filter's sight: ENOSYS makes
         * glibc fall back to clone, whose flags we can check. */
        if (rc == 0)
                rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        /* vsock is the channel to the host: only the agent may use it. */
        if (rc == 0)
                rc = deny_socket_family(ctx, AF_VSOCK);
        if (rc == 0 && p->net_none)
                rc = deny_socket_family(ctx, AF_INET);
        if (rc == 0 && p->net_none)
                rc = deny_socket_family(ctx, AF_INET6);
        /* Mostly for dev mode, where user code runs under the agent's own uid. */
        if (rc == 0)
                rc = deny_signals_to(ctx, 1);
        if (rc == 0)
                rc = deny_signals_to(ctx, -1);
        if (rc == 0 && p->agent_pid > 1)
                rc = deny_signals_to(ctx, p->agent_pid);
        if (rc == 0 && p->agent_pid > 1)
                rc = deny_signals_to(ctx, -p->agent_pid);
        /* The spawner runs as root: a `user: "root"` command could otherwise end it. */
        if (rc == 0 && p->spawner_pid > 1)
                rc = deny_signals_to(ctx, p->spawner_pid);
        return rc;
}

/*
 * The filter compiled ahead by confine_seccomp_prepare(), for the policy fields
 * add_rules() reads. libseccomp takes ~0.5 ms to build a filter, as long as the
 * fork and exec of a small program: a process that forks user code (the zygote,
 * the agent's spawner) compiles once and each child only loads the program.
 */
static struct {
        bool ready;
        bool net_none;
        pid_t agent_pid;
        pid_t spawner_pid;
        struct sock_fprog prog;
} prepared;

static bool prepared_for(const struct confine_policy *p)
{
        return prepared.ready && prepared.net_none == p->net_none &&
               prepared.agent_pid == p->agent_pid && prepared.spawner_pid == p->spawner_pid;
}

/* The BPF program of `ctx` in memory: libseccomp 2.5 exports to an fd only. */
static int export_program(scmp_filter_ctx ctx, struct sock_fprog *out)
{
        int fd = memfd_create("cellvm-seccomp", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        int rc = seccomp_export_bpf(ctx, fd);
        struct stat st;
        if (rc == 0 && fstat(fd, &st) < 0)
                rc = -errno;
        if (rc == 0 && (st.st_size <= 0 || st.st_size % (off_t)sizeof(struct sock_filter) != 0 ||
                        st.st_size / (off_t)sizeof(struct sock_filter) > BPF_MAXINSNS))
                rc = -EINVAL;
        struct sock_filter *insns = NULL;
        if (rc == 0 && !(insns = malloc((size_t)st.st_size)))
                rc = -ENOMEM;
        if (rc == 0) {
                ssize_t n = pread(fd, insns, (size_t)st.st_size, 0);
                if (n != (ssize_t)st.st_size)
                        rc = n < 0 ? -errno : -EIO;
        }
        if (close(fd) < 0 && rc == 0)
                rc = -errno;
        if (rc < 0) {
                free(insns);
                return rc;
        }
        out->len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter));
        out->filter = insns;
        return 0;
}

int confine_seccomp_prepare(const struct confine_policy *p)
{
        if (prepared_for(p))
                return 0;
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        struct sock_fprog prog = {0};
        int rc = add_rules(ctx, p);
        if (rc == 0)
                rc = export_program(ctx, &prog);
        seccomp_release(ctx);
        if (rc < 0)
                return rc;
        free(prepared.prog.filter);
        prepared.prog = prog;
        prepared.net_none = p->net_none;
        prepared.agent_pid = p->agent_pid;
        prepared.spawner_pid = p->spawner_pid;
        prepared.ready = true;
        return 0;
}

int confine_seccomp_load(const struct confine_policy *p)
{
        if (prepared_for(p)) /* no_new_privs is set: confine_apply() did it */
                return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prepared.prog) < 0 ? -errno
                                                                                            : 0;
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        int rc = add_rules(ctx, p);
        if (rc == 0)
                rc = seccomp_load(ctx);
        seccomp_release(ctx);
        return rc < 0 ? rc : 0;
}
