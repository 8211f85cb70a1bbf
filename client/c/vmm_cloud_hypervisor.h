/* Cloud Hypervisor's command line, as client/python/cellvm/vmm_cloud_hypervisor.py
 * renders it. Its devices are virtio-pci (the image's initramfs loads
 * virtio_pci), described through ACPI; it boots the ELF vmlinux (PVH). */
#ifndef CELLVM_CLIENT_VMM_CLOUD_HYPERVISOR_H
#define CELLVM_CLIENT_VMM_CLOUD_HYPERVISOR_H

#include "vmm.h"

#define CVM_CLOUD_HYPERVISOR_DEFAULT "cloud-hypervisor"

/* The argv booting `o`'s launch `l` (cvm_boot_params; no TCG words: Cloud
 * Hypervisor needs KVM), its vsock socket and serial console file in `dir`;
 * `api_sock` non-NULL adds --api-socket. 0 or -E2BIG. */
int cvm_cloud_hypervisor_argv(const struct cvm_opts *o, const struct cvm_launch *l, const char *dir,
                              const char *api_sock, struct cvm_argv *a);

/* `binary --api-socket API_SOCK` alone (a VMM waiting for a restore). */
int cvm_cloud_hypervisor_api_argv(const char *binary, const char *api_sock, struct cvm_argv *a);

#endif
