/* Firecracker's launch description: the --config-file JSON and the argv,
 * as client/python/cellvm/vmm_firecracker.py writes them. */
#ifndef CELLVM_CLIENT_VMM_FIRECRACKER_H
#define CELLVM_CLIENT_VMM_FIRECRACKER_H

#include <stddef.h>

#include "vmm.h"

#define CVM_FIRECRACKER_DEFAULT "firecracker"

/* The configuration of `o`'s launch `l` (cvm_boot_params) into `out`: its
 * boot source, the root drive (read-only; the initramfs mounts it), the
 * machine's size, the vsock device (guest CID 3, uds_path vsock.sock:
 * relative, bound in Firecracker's working directory) and an entropy device.
 * 0 or -E2BIG. */
int cvm_firecracker_config(const struct cvm_opts *o, const struct cvm_launch *l, char *out,
                           size_t outlen);

/* `binary --no-api --config-file CONFIG`; with `api_sock`:
 * `binary --api-sock API_SOCK [--config-file CONFIG]` (`config` NULL: the
 * API alone, for a snapshot load). 0 or -E2BIG. */
int cvm_firecracker_argv(const char *binary, const char *config, const char *api_sock,
                         struct cvm_argv *a);

#endif
