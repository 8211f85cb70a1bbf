#include "mounts.h"

#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <linux/magic.h>

#define MAX_TRACKED 16

struct mount_spec {
        const char *source, *target, *fstype;
        unsigned long flags;
        const char *data;
        bool essential; /* the agent cannot work without it */
};

static const struct mount_spec early_mounts[] = {
    {"sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL, true},
    {"devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755", true},
    {"devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "gid=5,mode=0620,ptmxmode=0666", false},
    {"shm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", false},
    {"run", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755", true},
    {"tmp", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", true},
};

static char tracked[MAX_TRACKED][64];
static int n_tracked;

static long magic_of(const char *fstype)
{
        if (strcmp(fstype, "proc") == 0)
                return PROC_SUPER_MAGIC;
        if (strcmp(fstype, "sysfs") == 0)
                return SYSFS_MAGIC;
        if (strcmp(fstype, "devpts") == 0)
                return DEVPTS_SUPER_MAGIC;
        if (strcmp(fstype, "cgroup2") == 0)
                return CGROUP2_SUPER_MAGIC;
        /* devtmpfs reports tmpfs's magic. */
        return TMPFS_MAGIC;
}

static bool is_mount_point(const char *path)
{
        char parent[80];
        struct stat a, b;

        if (snprintf(parent, sizeof(parent), "%s/..", path) >= (int)sizeof(parent))
                return false;
        if (stat(path, &a) != 0 || stat(parent, &b) != 0)
                return false;
        return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

/* A /proc inherited from another PID namespace shows the wrong processes
 * (and the wrong /proc/1): it does not count as mounted. */
static bool proc_is_ours(void)
{
        char link[32];
        ssize_t n = readlink("/proc/self", link, sizeof(link) - 1);

        if (n <= 0)
                return false;
        link[n] = '\0';
        return strtol(link, NULL, 10) == (long)getpid();
}

static bool already_mounted(const char *target, const char *fstype)
{
        struct statfs sfs;

        if (!is_mount_point(target) || statfs(target, &sfs) != 0)
                return false;
        if ((long)sfs.f_type != magic_of(fstype))
                return false;
        return strcmp(fstype, "proc") != 0 || proc_is_ours();
}

int mount_fs(const char *source, const char *target, const char *fstype, unsigned long flags,
             const char *data)
{
        if (already_mounted(target, fstype)) {
                log_debug("%s already mounted on %s", fstype, target);
                return 0;
        }
        if (mkdir(target, 0755) != 0 && errno != EEXIST)
                return -errno;
        if (mount(source, target, fstype, flags, data) != 0)
                return -errno;
        if (n_tracked < MAX_TRACKED && snprintf(tracked[n_tracked], sizeof(tracked[0]), "%s",
                                                target) < (int)sizeof(tracked[0]))
                n_tracked++;
        log_debug("mounted %s on %s", fstype, target);
        return 1;
}

int mounts_proc(void)
{
        return mount_fs("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

int mounts_cgroup(void)
{
        int r = mount_fs("cgroup2", "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                         NULL);
        if (r < 0)
                log_warn("mount cgroup2 on /sys/fs/cgroup: %s (continuing)", strerror(-r));
        return r;
}

int mounts_early(bool lenient)
{
        int first_err = 0;

        for (size_t i = 0; i < sizeof(early_mounts) / sizeof(early_mounts[0]); i++) {
                const struct mount_spec *m = &early_mounts[i];
                int r = mount_fs(m->source, m->target, m->fstype, m->flags, m->data);
                if (r >= 0)
                        continue;
                if (m->essential && !lenient) {
                        log_error("mount %s on %s: %s", m->fstype, m->target, strerror(-r));
                        if (first_err == 0)
                                first_err = r;
                } else {
                        log_warn("mount %s on %s: %s (continuing)", m->fstype, m->target,
                                 strerror(-r));
                }
        }
        return first_err;
}

int mounts_dev_links(void)
{
        static const char *const links[][2] = {
            {"/proc/self/fd", "/dev/fd"},
            {"/proc/self/fd/0", "/dev/stdin"},
            {"/proc/self/fd/1", "/dev/stdout"},
            {"/proc/self/fd/2", "/dev/stderr"},
        };

        for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
                if (symlink(links[i][0], links[i][1]) != 0 && errno != EEXIST) {
                        int err = -errno;
                        log_warn("symlink %s -> %s: %s", links[i][1], links[i][0], strerror(-err));
                        return err;
                }
        }
        return 0;
}

void mounts_unmount_all(void)
{
        /* Lazy: a process stuck in D state must not stop the power-off. */
        for (int i = n_tracked - 1; i >= 0; i--) {
                if (umount2(tracked[i], MNT_DETACH) != 0)
                        log_debug("unmount %s: %s", tracked[i], strerror(errno));
        }
        n_tracked = 0;
}
