/* The writable root: from an initramfs, wait for the root device, mount it
 * read-only under a tmpfs overlay, move the early mounts over and
 * switch_root into it (freeing the initramfs). Booted without one (root=
 * mounted read-only by the kernel), the same overlay over / in place. */
#ifndef CELLVM_INIT_ROOTFS_H
#define CELLVM_INIT_ROOTFS_H

#include <stdbool.h>

#include "config.h"

/* True when / is the initramfs (ramfs or tmpfs) and we are the first init. */
bool rootfs_in_initramfs(const struct init_config *c);
int rootfs_wait_device(const char *path, unsigned timeout_ms);
int rootfs_mount_and_switch(const struct init_config *c);
/* True when we are the first init and / is read-only and not yet an overlay. */
bool rootfs_read_only(const struct init_config *c);
/* Puts a tmpfs overlay over the read-only / and pivots into it. */
int rootfs_overlay_in_place(void);

#endif
