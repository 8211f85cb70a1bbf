/* From initramfs to the real root: wait for the root device, mount it
 * read-only under a tmpfs overlay, move the early mounts over and
 * switch_root into it (freeing the initramfs). */
#ifndef CELLVM_INIT_ROOTFS_H
#define CELLVM_INIT_ROOTFS_H

#include <stdbool.h>

#include "config.h"

/* True when / is the initramfs (ramfs or tmpfs) and we are the first init. */
bool rootfs_in_initramfs(const struct init_config *c);
int rootfs_wait_device(const char *path, unsigned timeout_ms);
int rootfs_mount_and_switch(const struct init_config *c);

#endif
