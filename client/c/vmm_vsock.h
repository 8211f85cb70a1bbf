/* The host end of the vhost-vsock channel to the CLI's QEMU guest (docs/VMM.md,
 * "vsock with QEMU"). */
#ifndef CELLVM_CLIENT_VMM_VSOCK_H
#define CELLVM_CLIENT_VMM_VSOCK_H

#include <stdbool.h>

#define CVM_AGENT_VSOCK_PORT 1024
/* QEMU's error when another VM holds the guest CID (hw/virtio/vhost-vsock.c). */
#define CVM_CID_IN_USE "unable to set guest cid: Address already in use"
/* How long "no VM holds that CID" is taken for "QEMU is still setting up". */
#define CVM_VSOCK_NO_ROUTE_GRACE_MS 5000

/* A guest CID no other cellvm VM on this host uses: 2^30 + pid * 256 + a
 * per-process count (mod 256); below 2^31 since pid_max <= 2^22. */
unsigned cvm_allocate_cid(void);

/* /dev/vhost-vsock opens (QEMU can give the guest a vsock device). */
bool cvm_vhost_vsock_usable(void);

enum cvm_vsock_failure {
        CVM_VSOCK_RETRY,       /* the guest is not up or not listening yet */
        CVM_VSOCK_NO_ROUTE,    /* no VM holds the CID (yet) */
        CVM_VSOCK_UNAVAILABLE, /* vsock cannot work: use the serial port */
};

/* What a failed vsock connect's negative errno means. */
enum cvm_vsock_failure cvm_vsock_classify(int err);

/* QEMU's stderr (the file at `path`) says the guest CID was taken. */
bool cvm_cid_in_use(const char *path);

#endif
