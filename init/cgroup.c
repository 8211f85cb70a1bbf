#include "cgroup.h"

#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

static int write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, text, strlen(text));
        int err = n < 0 ? -errno : 0;
        if (close(fd) != 0 && err == 0)
                err = -errno;
        return err;
}

int cgroup_user_setup(uint64_t mem_limit, uint64_t pids_limit)
{
        struct statfs sfs;
        char num[32];
        int r;

        if (mem_limit == 0 && pids_limit == 0)
                return 0;
        if (statfs("/sys/fs/cgroup", &sfs) != 0)
                return -errno;
        if ((long)sfs.f_type != CGROUP2_SUPER_MAGIC)
                return -ENOTSUP;
        /* Both controllers whichever limit is set: the agent gives each context
         * its own memory and pids limits below ours and needs both. One write
         * per controller, so a kernel without one still gets the other; only a
         * missing controller for a configured limit is an error. */
        r = write_file("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
        if (r < 0 && mem_limit != 0)
                return r;
        if (r < 0)
                log_warn("enable the memory controller: %s", strerror(-r));
        r = write_file("/sys/fs/cgroup/cgroup.subtree_control", "+pids");
        if (r < 0 && pids_limit != 0)
                return r;
        if (r < 0)
                log_warn("enable the pids controller: %s", strerror(-r));
        if (mkdir(CGROUP_USER_PATH, 0755) != 0 && errno != EEXIST)
                return -errno;
        if (mem_limit != 0) {
                snprintf(num, sizeof(num), "%llu", (unsigned long long)mem_limit);
                if ((r = write_file(CGROUP_USER_PATH "/memory.max", num)) < 0)
                        return r;
                /* No swap escape hatch around memory.max; absent without swap support. */
                r = write_file(CGROUP_USER_PATH "/memory.swap.max", "0");
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        if (pids_limit != 0) {
                snprintf(num, sizeof(num), "%llu", (unsigned long long)pids_limit);
                if ((r = write_file(CGROUP_USER_PATH "/pids.max", num)) < 0)
                        return r;
        }
        log_debug("cgroup %s: memory.max %llu, pids.max %llu", CGROUP_USER_PATH,
                  (unsigned long long)mem_limit, (unsigned long long)pids_limit);
        return 1;
}
