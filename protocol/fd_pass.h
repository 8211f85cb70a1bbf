/*
 * Passing file descriptors (SCM_RIGHTS) on a Unix socket: the agent's Z_SPAWN
 * to the zygote, its requests to the spawner, the zygote's hand-over of a
 * context to its spare executor, and the executor's control channel.
 */
#ifndef CELLVM_FD_PASS_H
#define CELLVM_FD_PASS_H

#include <stddef.h>
#include <sys/types.h>

/* Most fds one message carries. */
#define CV_FDS_MAX 16

/*
 * One sendmsg() of `len` bytes of `buf` (len > 0) with `nfds` fds attached,
 * retried on EINTR; `flags` as sendmsg's (MSG_NOSIGNAL, MSG_DONTWAIT, ...).
 * Returns the bytes sent (the fds went with the first of them; the caller
 * sends any rest without fds) or -errno; -EINVAL over CV_FDS_MAX fds.
 */
ssize_t cv_send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds,
                         int flags);

/*
 * One recvmsg() of at most `len` bytes into `buf`, taking the fds that came
 * with them (close-on-exec) into fds[0..*nfds); fds past `max_fds` (at most
 * CV_FDS_MAX) are closed. Not retried on EINTR: the caller decides whether a
 * signal ends its wait. Returns the bytes read (0: end of stream) or -errno:
 * -EMSGSIZE if a record was cut (MSG_TRUNC), -EPROTO if fds were (MSG_CTRUNC);
 * on an error no fd is left open.
 */
ssize_t cv_recv_with_fds(int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *nfds);

#endif
