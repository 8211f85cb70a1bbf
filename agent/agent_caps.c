/*
 * The agent's own capabilities after setup. It keeps what serving needs:
 * acting as the sandbox user on files (CHOWN, DAC_*, FOWNER, FSETID,
 * SETUID/SETGID for setfsuid), handing SETUID/SETGID/SETPCAP to the zygote
 * it may restart (executors drop to the user and empty their bounding set),
 * killing user code (KILL), cgroup files and RNDADDENTROPY and seccomp
 * without no_new_privs (SYS_ADMIN), raising limits (SYS_RESOURCE) and
 * SET_TIME (SYS_TIME). Everything else (modules, raw I/O, network
 * administration, reboot, ptrace, BPF, ...) leaves the bounding set too, so
 * nothing the agent starts later can regain it.
 */

#include "agent_caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint64_t kept_mask(void)
{
        static const int keep[] = {
            CAP_CHOWN,      CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER,
            CAP_FSETID,     CAP_KILL,         CAP_SETGID,          CAP_SETUID,
            CAP_SETPCAP,    CAP_SYS_ADMIN,    CAP_SYS_TIME,        CAP_SYS_RESOURCE,
#ifdef __SANITIZE_ADDRESS__
            CAP_SYS_PTRACE, /* LeakSanitizer stops the (non-dumpable) agent's threads */
#endif
        };
        uint64_t mask = 0;
        for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++)
                mask |= 1ull << keep[i];
        return mask;
}

int agent_drop_capabilities(void)
{
        if (geteuid() != 0)
                return 0; /* dev mode: nothing to drop */
        uint64_t keep = kept_mask();
        for (unsigned long cap = 0; cap < 64; cap++) {
                if (keep & (1ull << cap))
                        continue;
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
                        continue;
                if (errno == EINVAL)
                        break; /* past the kernel's last capability */
                return -errno;
        }
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct data[2];
        if (syscall(SYS_capget, &hdr, data) < 0)
                return -errno;
        for (int i = 0; i < 2; i++) {
                uint32_t k = (uint32_t)(keep >> (32 * i));
                data[i].effective &= k;
                data[i].permitted &= k;
                data[i].inheritable &= k;
        }
        if (syscall(SYS_capset, &hdr, data) < 0)
                return -errno;
        return 0;
}
