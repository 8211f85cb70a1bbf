/* What a QEMU guest boots besides the image's defaults, and the kernel command
 * line edits that needs (docs/VMM.md, "Boot files"). */
#ifndef CELLVM_CLIENT_VMM_BOOT_H
#define CELLVM_CLIENT_VMM_BOOT_H

#include <stdbool.h>
#include <stddef.h>

/* Where image-build/build_image.py puts cellvm-init in the root filesystem. */
#define CVM_INIT_PATH "/sbin/cellvm-init"

/* The root image's filesystem from its superblock: "erofs" or "ext4" in
 * `*type`. -EINVAL for neither, or the negative errno of open/read. */
int cvm_rootfs_type(const char *path, const char **type);

/* Writes to `out`: `base` (launch.txt's cmdline_base) with its rootfstype=
 * word set to `rootfstype` (appended if absent); with `no_initramfs`, also
 * root=/dev/vda, ro and init=/sbin/cellvm-init where base lacks them; then
 * each non-empty string of the NULL-terminated `more`. -E2BIG if it does not
 * fit. */
int cvm_compose_cmdline(char *out, size_t outlen, const char *base, const char *rootfstype,
                        bool no_initramfs, const char *const *more);

/* `path` made absolute as Python's os.path.abspath does: joined to the
 * current directory, then "." and ".." and repeated slashes removed
 * lexically (no symlink is resolved). 0, -ENAMETOOLONG, or getcwd's error. */
int cvm_abspath(const char *path, char *out, size_t outlen);

#endif
