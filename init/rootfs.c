#include "rootfs.h"

#include "log.h"
#include "mounts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>

#define NEWROOT "/sysroot"
#define LOWER "/.cellvm-lower"
#define RW "/.cellvm-rw"
#define STAGE "/mnt"
#define RW_EXPOSED "/run/cellvm-rw"

bool rootfs_in_initramfs(const struct init_config *c)
{
        struct statfs sfs;

        if (c->test || getpid() != 1 || statfs("/", &sfs) != 0)
                return false;
        return (long)sfs.f_type == RAMFS_MAGIC || (long)sfs.f_type == TMPFS_MAGIC;
}

int rootfs_wait_device(const char *path, unsigned timeout_ms)
{
        uint64_t deadline = boottime_ns() + (uint64_t)timeout_ms * 1000000ull;
        long sleep_ns = 200000;
        struct stat st;

        /* devtmpfs creates the node when the driver probes the disk: polling
         * is enough, and cheaper to get right than a uevent listener. */
        for (;;) {
                if (stat(path, &st) == 0)
                        return S_ISBLK(st.st_mode) ? 0 : -ENOTBLK;
                if (errno != ENOENT)
                        return -errno;
                if (boottime_ns() >= deadline)
                        return -ETIMEDOUT;
                struct timespec ts = {0, sleep_ns};
                nanosleep(&ts, NULL);
                if (sleep_ns < 10000000)
                        sleep_ns *= 2;
        }
}

static int mount_lower(const struct init_config *c)
{
        static const char *const guesses[] = {"erofs", "ext4"};

        if (mkdir(LOWER, 0755) != 0 && errno != EEXIST)
                return -errno;
        if (c->rootfstype[0] != '\0')
                return mount(c->root, LOWER, c->rootfstype, MS_RDONLY, NULL) == 0 ? 0 : -errno;
        int r = -ENODEV;
        for (size_t i = 0; i < sizeof(guesses) / sizeof(guesses[0]); i++) {
                if (mount(c->root, LOWER, guesses[i], MS_RDONLY, NULL) == 0) {
                        log_debug("root %s is %s", c->root, guesses[i]);
                        return 0;
                }
                r = -errno;
        }
        return r;
}

static int mount_overlay(void)
{
        if (mkdir(RW, 0755) != 0 && errno != EEXIST)
                return -errno;
        if (mount("rootrw", RW, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0)
                return -errno;
        if ((mkdir(RW "/upper", 0755) != 0 && errno != EEXIST) ||
            (mkdir(RW "/work", 0755) != 0 && errno != EEXIST) ||
            (mkdir(NEWROOT, 0755) != 0 && errno != EEXIST))
                return -errno;
        if (mount("overlay", NEWROOT, "overlay", 0,
                  "lowerdir=" LOWER ",upperdir=" RW "/upper,workdir=" RW "/work") != 0)
                return -errno;
        return 0;
}

/* Deletes the initramfs' files (ramfs memory is only freed by unlinking),
 * staying on its filesystem so the new root and moved mounts are untouched. */
static void delete_tree(int dirfd, dev_t rootdev)
{
        DIR *dir = fdopendir(dirfd);
        struct dirent *de;

        if (dir == NULL) {
                log_warn("initramfs cleanup: fdopendir: %s", strerror(errno));
                close(dirfd);
                return;
        }
        while ((de = readdir(dir)) != NULL) {
                struct stat st;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                    st.st_dev != rootdev)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        int sub = openat(dirfd, de->d_name,
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                delete_tree(sub, rootdev);
                        else
                                log_warn("initramfs cleanup: open %s: %s", de->d_name,
                                         strerror(errno));
                }
                /* EBUSY: a mount point (/sysroot, /.cellvm-*), not ours to free. */
                if (unlinkat(dirfd, de->d_name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) != 0 &&
                    errno != EBUSY)
                        log_warn("initramfs cleanup %s: %s", de->d_name, strerror(errno));
        }
        closedir(dir);
}

/* Moves the API filesystems mounted so far (with their submounts: /dev/pts,
 * /dev/shm) into the new root. A failure is logged and not fatal: the
 * agent needs /dev and /proc, and their absence shows in its own errors. */
static void move_api_mounts(const char *newroot)
{
        static const char *const moved[] = {"/dev", "/proc", "/sys", "/run", "/tmp"};

        for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++) {
                char target[64];
                snprintf(target, sizeof(target), "%s%s", newroot, moved[i]);
                if (mkdir(target, 0755) != 0 && errno != EEXIST)
                        log_warn("mkdir %s: %s", target, strerror(errno));
                if (mount(moved[i], target, NULL, MS_MOVE, NULL) != 0)
                        log_warn("move %s to %s: %s", moved[i], target, strerror(errno));
        }
}

/* The writable layer's tmpfs (upper/ and work/) bound at /run/cellvm-rw, 0700 root:
 * the agent's filesystem-only pause reads the upper layer there (a copy of
 * the changed files, whiteouts included; docs/SNAPSHOTS.md). A bind without
 * submounts: nothing of the merged root shows through it. Not fatal: such a
 * pause then fails and says so. */
static void expose_rw(const char *rw, const char *newroot)
{
        char target[64];
        snprintf(target, sizeof(target), "%s" RW_EXPOSED, newroot);
        if (mkdir(target, 0700) != 0 && errno != EEXIST)
                log_warn("mkdir %s: %s", target, strerror(errno));
        else if (mount(rw, target, NULL, MS_BIND, NULL) != 0)
                log_warn("bind %s on %s: %s", rw, target, strerror(errno));
}

int rootfs_mount_and_switch(const struct init_config *c)
{
        struct stat st;
        int r;

        if ((r = rootfs_wait_device(c->root, c->root_timeout_ms)) < 0) {
                log_error("root device %s: %s after %u ms", c->root, strerror(-r),
                          c->root_timeout_ms);
                return r;
        }
        if ((r = mount_lower(c)) < 0) {
                log_error("mount root %s read-only: %s", c->root, strerror(-r));
                return r;
        }
        if ((r = mount_overlay()) < 0) {
                log_error("overlay on %s: %s", NEWROOT, strerror(-r));
                return r;
        }
        move_api_mounts(NEWROOT);
        expose_rw(RW, NEWROOT);
        if (stat("/", &st) != 0)
                return -errno;
        if (chdir(NEWROOT) != 0)
                return -errno;
        int rootfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rootfd >= 0)
                delete_tree(rootfd, st.st_dev);
        else
                log_warn("initramfs not freed: open /: %s", strerror(errno));
        if (mount(".", "/", NULL, MS_MOVE, NULL) != 0)
                return -errno;
        if (chroot(".") != 0 || chdir("/") != 0)
                return -errno;
        log_debug("switched root to %s (overlay on %s)", c->root,
                  c->rootfstype[0] ? c->rootfstype : "auto");
        return 0;
}

bool rootfs_read_only(const struct init_config *c)
{
        struct statfs sfs;

        if (c->test || getpid() != 1 || statfs("/", &sfs) != 0)
                return false;
        return (sfs.f_flags & ST_RDONLY) != 0 && (long)sfs.f_type != OVERLAYFS_SUPER_MAGIC;
}

/* Booted without an initramfs, the kernel mounted root= read-only on / and
 * ran us from it. We give it the initramfs path's layout (a tmpfs overlay
 * over all of /) rather than tmpfs on a few directories: user code and
 * Python write anywhere (/home/user, /etc/cellvm/mpl, /var, /root), and
 * one layout is one thing to test. pivot_root rather than switch_root's
 * MS_MOVE + chroot: it detaches the old root and the staging mount instead
 * of leaving them under the new root. */
int rootfs_overlay_in_place(void)
{
        int r;

        /* The tmpfs holding the upper layer needs a mount point, and on a
         * read-only root only existing directories can be one. The root's own
         * /mnt serves: the overlay's lower layer is the ext4 root itself, which
         * mounts do not change, and the pivot below detaches it again. Not a
         * directory under /run or /tmp: those are moved into the new root, and
         * a mount cannot move beneath itself. */
        if (mount("rootrw", STAGE, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") != 0) {
                r = -errno;
                log_error("tmpfs on %s: %s", STAGE, strerror(-r));
                return r;
        }
        if ((mkdir(STAGE "/upper", 0755) != 0 && errno != EEXIST) ||
            (mkdir(STAGE "/work", 0755) != 0 && errno != EEXIST) ||
            (mkdir(STAGE "/root", 0755) != 0 && errno != EEXIST)) {
                r = -errno;
                log_error("mkdir in %s: %s", STAGE, strerror(-r));
                goto undo;
        }
        if (mount("overlay", STAGE "/root", "overlay", 0,
                  "lowerdir=/,upperdir=" STAGE "/upper,workdir=" STAGE "/work") != 0) {
                r = -errno;
                log_error("overlay of / on %s: %s", STAGE "/root", strerror(-r));
                goto undo;
        }
        move_api_mounts(STAGE "/root");
        expose_rw(STAGE, STAGE "/root");
        /* pivot_root(".", "."): the old root ends up on top of the new one and
         * is detached at once (pivot_root(2)); with it goes the staging tmpfs'
         * mount point (its bind at /run/cellvm-rw stays, for root only). */
        if (chdir(STAGE "/root") != 0 || syscall(SYS_pivot_root, ".", ".") != 0) {
                r = -errno;
                log_error("pivot_root into the overlay: %s", strerror(-r));
                return r;
        }
        if (umount2(".", MNT_DETACH) != 0) {
                r = -errno;
                log_error("detach the old root: %s", strerror(-r));
                return r;
        }
        if (chdir("/") != 0)
                return -errno;
        log_debug("root read-only: overlay with a tmpfs upper layer on /");
        return 0;
undo:
        if (umount2(STAGE, MNT_DETACH) != 0)
                log_warn("unmount %s: %s", STAGE, strerror(errno));
        return r;
}
