/* The early filesystems every guest needs: proc, sysfs, devtmpfs, devpts,
 * /dev/shm, /run, /tmp, cgroup2, and the /dev/fd links. */
#ifndef CELLVM_INIT_MOUNTS_H
#define CELLVM_INIT_MOUNTS_H

#include <stdbool.h>

/* Mounts /proc (needed before the command line can be read). Returns
 * mount_fs's result: main logs it once debug logging is known. */
int mounts_proc(void);
/* Mounts the rest. With lenient (cellvm.test=1) a failed essential mount is a
 * warning; otherwise it is returned as an error after all were tried. */
int mounts_early(bool lenient);
/* cgroup2 on /sys/fs/cgroup. Separate because it can cost milliseconds
 * (an RCU grace period on some kernels): unless limits need it first, init
 * mounts it while the agent is already starting. Failure is a warning.
 * Returns mount_fs's result. */
int mounts_cgroup(void);
/* /dev/fd, /dev/stdin, /dev/stdout, /dev/stderr -> /proc/self/fd. */
int mounts_dev_links(void);
/* Unmounts, newest first, what mounts_* mounted (shutdown). */
void mounts_unmount_all(void);
/* Mounts and remembers one filesystem: returns 1 when mounted, 0 when it was
 * already mounted (same fs type at a mount point, and for proc: of our PID
 * namespace), or a negative errno. */
int mount_fs(const char *source, const char *target, const char *fstype, unsigned long flags,
             const char *data);

#endif
