/* Firecracker and Cloud Hypervisor under the CLI: their launch (the same
 * description as the Python SDK's HybridVsockVM, client/python/cellvm/launch.py)
 * and the agent's connection over their hybrid vsock (hybrid_vsock.h). What
 * cvm_start and cvm_connect do for a cvm_opts whose vmm is not QEMU. */
#ifndef CELLVM_CLIENT_VMM_HYBRID_H
#define CELLVM_CLIENT_VMM_HYBRID_H

#include "cellvm.h"
#include "vmm.h"

/* The vsock device's socket in the VM's temp dir: relative for Firecracker
 * (uds_path, bound in its working directory, so a snapshot's clones each
 * bind their own), absolute for Cloud Hypervisor (docs/VMM.md, "Firecracker",
 * says more). */
#define CVM_HYBRID_VSOCK_SOCKET "vsock.sock"
#define CVM_HYBRID_GUEST_CID 3

/* Writes the launch description into a new temp dir (cellvm-<vmm>-XXXXXX:
 * Firecracker's firecracker.json) and starts the VMM there; does not wait
 * for it (cvm_hybrid_connect retries until the guest's agent listens). On
 * failure nothing is left running or on disk and `err` says why. */
int cvm_hybrid_start(const struct cvm_opts *o, struct cvm *vm, char *err, size_t errlen);

/* Connects over the VMM's hybrid vsock (CONNECT 1024) and completes HELLO,
 * within `timeout_ms`; -ECHILD if the VMM exits first. On failure without a
 * connection, vm->error says why. As cvm_connect. */
int cvm_hybrid_connect(struct cvm *vm, int timeout_ms, struct cvc **out);

#endif
