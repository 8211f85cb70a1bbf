/*
 * The agent's own seccomp filter, loaded once it listens. A filter is inherited
 * by every process the agent forks afterwards (the zygote on restart, command
 * processes), and those run arbitrary programs, so this is the set of syscalls
 * no process of the guest's user side ever needs, failed with EPERM; user code
 * gets the stricter filter of confine_seccomp.c on top. docs/SECURITY.md says
 * why this is not an allowlist.
 */
#include <errno.h>
#include <seccomp.h>
#include <stddef.h>
#include <unistd.h>

#include "agent.h"
#include "confine.h"

static const char *const agent_denied[] = {
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
    "swapon",
    "swapoff",
    "reboot",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "process_vm_writev",
    "iopl",
    "ioperm",
    "uselib",
    "acct",
    "setns",
    "userfaultfd",
    "open_by_handle_at",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
#ifndef __SANITIZE_ADDRESS__
    /* LeakSanitizer stops the world with ptrace at exit: allowed in SAN builds only. */
    "ptrace",
    "process_vm_readv",
#endif
};

int agent_seccomp_apply(void)
{
        scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        int rc = 0;
        for (size_t i = 0; rc == 0 && i < sizeof(agent_denied) / sizeof(agent_denied[0]); i++)
                rc = confine_seccomp_deny(ctx, agent_denied[i]);
        /* As root, load without no_new_privs (CAP_SYS_ADMIN allows it) so command
         * processes may still exec setuid helpers; user code sets it for itself. */
        if (rc == 0 && geteuid() == 0)
                rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
        if (rc == 0)
                rc = seccomp_load(ctx);
        seccomp_release(ctx);
        return rc < 0 ? rc : 0;
}
