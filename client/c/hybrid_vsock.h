/* The host end of hybrid vsock (Firecracker, Cloud Hypervisor): the guest's
 * AF_VSOCK bridged to a Unix socket of the VMM. A client connects to it,
 * writes `CONNECT <port>\n` and reads `OK <host-side port>\n`; the stream is
 * then the guest listener's. Until the guest listens the VMM closes the
 * connection (Firecracker) or answers something else, so connects are
 * retried (docs/VMM.md, "Firecracker"). */
#ifndef CELLVM_CLIENT_HYBRID_VSOCK_H
#define CELLVM_CLIENT_HYBRID_VSOCK_H

#include <stddef.h>

/* "OK 1073741824": the reply line is short; anything longer is not a VMM. */
#define CVM_HYBRID_REPLY_MAX 64
/* One attempt's limit, so that a VMM that exits is noticed between attempts. */
#define CVM_HYBRID_ATTEMPT_MS 5000
#define CVM_HYBRID_RETRY_MS 20

/* One attempt: `*fd` (blocking, O_CLOEXEC) past the handshake, or a negative
 * errno with `why` saying what happened: -ECONNREFUSED when the VMM answered
 * something else than OK, -EPROTO for a reply line over
 * CVM_HYBRID_REPLY_MAX, -ETIMEDOUT, -ECONNRESET (closed during the
 * handshake), or connect's error. Nothing past the reply line is read: the
 * protocol's first frame may follow on the stream. */
int cvm_hybrid_vsock_try(const char *uds_path, unsigned port, int timeout_ms, int *fd, char *why,
                         size_t whylen);

/* cvm_hybrid_vsock_try retried until it succeeds or `timeout_ms` passes
 * (-ETIMEDOUT; `why` then holds the most telling failure: the VMM's answer
 * over a cut-short attempt). `still_alive(ud)`, when given, is asked before
 * each attempt: 0 gives up with -ECHILD (the VMM exited). */
int cvm_hybrid_vsock_connect(const char *uds_path, unsigned port, int timeout_ms,
                             int (*still_alive)(void *ud), void *ud, int *fd, char *why,
                             size_t whylen);

#endif
