/*
 * Sending bytes with file descriptors attached (SCM_RIGHTS) on a Unix socket:
 * the agent's Z_SPAWN to the zygote, its requests to the spawner, and the
 * zygote's hand-over of a context to its spare executor.
 */
#ifndef CELLVM_FD_SEND_H
#define CELLVM_FD_SEND_H

#include <stddef.h>
#include <sys/types.h>

/* Most fds one call attaches. */
#define CV_SEND_FDS_MAX 8

/*
 * One sendmsg() of `len` bytes of `buf` (len > 0) with `nfds` fds attached,
 * retried on EINTR; `flags` as sendmsg's (MSG_NOSIGNAL, MSG_DONTWAIT, ...).
 * Returns the bytes sent (the fds went with the first of them; the caller
 * sends any rest without fds) or -errno; -EINVAL over CV_SEND_FDS_MAX fds.
 */
ssize_t cv_send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds,
                         int flags);

#endif
