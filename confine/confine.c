/* Applying a confinement policy to the process that is about to run user code. */
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>

static int set_limit(int resource, uint64_t value)
{
        struct rlimit rl = {.rlim_cur = value, .rlim_max = value};
        struct rlimit cur;
        if (getrlimit(resource, &cur) < 0)
                return -errno;
        /* Never raise a hard limit (that needs privileges we may not have). */
        if (cur.rlim_max != RLIM_INFINITY && rl.rlim_max > cur.rlim_max)
                rl.rlim_cur = rl.rlim_max = cur.rlim_max;
        return setrlimit(resource, &rl) < 0 ? -errno : 0;
}

static int apply_limits(const struct confine_policy *p, const char **step)
{
        int rc;
        *step = "setrlimit(RLIMIT_CORE)";
        if ((rc = set_limit(RLIMIT_CORE, 0)) < 0)
                return rc;
        *step = "setrlimit(RLIMIT_FSIZE)";
        if (p->fsize && (rc = set_limit(RLIMIT_FSIZE, p->fsize)) < 0)
                return rc;
        *step = "setrlimit(RLIMIT_NOFILE)";
        if (p->nofile && (rc = set_limit(RLIMIT_NOFILE, p->nofile)) < 0)
                return rc;
#ifndef __SANITIZE_ADDRESS__
        /* (Not under ASan: its shadow memory is terabytes of private mappings.) */
        *step = "setrlimit(RLIMIT_DATA)";
        if (p->data && (rc = set_limit(RLIMIT_DATA, p->data)) < 0)
                return rc;
#endif
        /* RLIMIT_NPROC counts every process of the uid: only meaningful for the sandbox user. */
        *step = "setrlimit(RLIMIT_NPROC)";
        if (p->drop_user && p->nproc && (rc = set_limit(RLIMIT_NPROC, p->nproc)) < 0)
                return rc;
        return 0;
}

/* Empties the bounding set so no later exec can regain a capability. */
static int drop_bounding_set(void)
{
        for (unsigned long cap = 0; cap <= 63; cap++) {
                if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0)
                        continue;
                if (errno == EINVAL)
                        return 0; /* past the kernel's last capability */
                return -errno;
        }
        return 0;
}

static int clear_capabilities(void)
{
        struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
        struct __user_cap_data_struct data[2] = {{0}};
        if (syscall(SYS_capset, &hdr, data) < 0)
                return -errno;
        return 0;
}

static int change_user(const struct confine_policy *p, const char **step)
{
        *step = "drop the capability bounding set";
        int rc = drop_bounding_set();
        if (rc < 0)
                return rc;
        *step = "setgroups";
        if (setgroups(0, NULL) < 0)
                return -errno;
        *step = "setresgid";
        if (setresgid(p->gid, p->gid, p->gid) < 0)
                return -errno;
        *step = "setresuid";
        if (setresuid(p->uid, p->uid, p->uid) < 0)
                return -errno;
        /* The uid change left the process non-dumpable, which makes its own /proc
         * entries root's; user code may inspect itself like any process. */
        *step = "prctl(PR_SET_DUMPABLE)";
        if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

/*
 * User code is what the OOM killer should take first. It inherits the agent's
 * -1000 (the agent protects itself), under which a cgroup's OOM kills nothing
 * and a cell over memory.max hangs forever. Raising the value needs no privilege.
 */
static int prefer_for_oom_kill(void)
{
        static const char value[] = "500";
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno; /* no /proc: nothing inherited to undo */
        ssize_t n = write(fd, value, sizeof(value) - 1);
        int rc = n == (ssize_t)sizeof(value) - 1 ? 0 : n < 0 ? -errno : -EIO;
        if (close(fd) < 0 && rc == 0)
                rc = -errno;
        return rc;
}

int confine_apply(const struct confine_policy *p, const char **step)
{
        *step = "write /proc/self/oom_score_adj";
        int rc = prefer_for_oom_kill();
        if (rc < 0)
                return rc;
        rc = apply_limits(p, step);
        if (rc < 0)
                return rc;
        if (p->drop_user && (rc = change_user(p, step)) < 0)
                return rc;
        *step = "clear ambient capabilities";
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -errno;
        *step = "capset";
        if ((rc = clear_capabilities()) < 0)
                return rc;
        *step = "prctl(PR_SET_NO_NEW_PRIVS)";
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        *step = "seccomp filter";
        return confine_seccomp_load(p);
}

int confine_apply_from_env(const char **step)
{
        const char *text = getenv(CONFINE_ENV);
        if (!text)
                return 0;
        struct confine_policy p;
        *step = "parse " CONFINE_ENV;
        int rc = confine_policy_parse(text, &p);
        if (rc < 0)
                return rc;
        return confine_apply(&p, step);
}

int confine_seccomp_prepare_from_env(void)
{
        const char *text = getenv(CONFINE_ENV);
        if (!text)
                return 0;
        struct confine_policy p;
        int rc = confine_policy_parse(text, &p);
        return rc < 0 ? rc : confine_seccomp_prepare(&p);
}
