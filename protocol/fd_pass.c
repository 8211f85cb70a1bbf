/* Passing file descriptors with bytes on a Unix socket (see fd_pass.h). */
#include "fd_pass.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>

ssize_t cv_send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds,
                         int flags)
{
        if (nfds > CV_FDS_MAX || len == 0)
                return -EINVAL;
        union {
                char buf[CMSG_SPACE(sizeof(int) * CV_FDS_MAX)];
                struct cmsghdr align;
        } ctrl;
        memset(&ctrl, 0, sizeof(ctrl));
        struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
        if (nfds > 0) {
                msg.msg_control = ctrl.buf;
                msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
                struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
                cm->cmsg_level = SOL_SOCKET;
                cm->cmsg_type = SCM_RIGHTS;
                cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
                memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
        }
        ssize_t n;
        do
                n = sendmsg(sock, &msg, flags);
        while (n < 0 && errno == EINTR);
        return n < 0 ? -errno : n;
}

static void close_all(const int *fds, size_t n)
{
        /* On Linux a failed close() still releases the fd: nothing to retry. */
        for (size_t i = 0; i < n; i++)
                (void)close(fds[i]);
}

ssize_t cv_recv_with_fds(int sock, void *buf, size_t len, int *fds, size_t max_fds, size_t *nfds)
{
        union {
                char buf[CMSG_SPACE(sizeof(int) * CV_FDS_MAX)];
                struct cmsghdr align;
        } ctrl;
        struct iovec iov = {.iov_base = buf, .iov_len = len};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = ctrl.buf,
                             .msg_controllen = sizeof(ctrl.buf)};
        *nfds = 0;
        if (max_fds > CV_FDS_MAX)
                return -EINVAL;
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0)
                return -errno;
        int got[CV_FDS_MAX];
        size_t ngot = 0;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
                if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                for (size_t i = 0; i < k && ngot < CV_FDS_MAX; i++)
                        memcpy(&got[ngot++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
        }
        int err = 0;
        if (msg.msg_flags & MSG_TRUNC)
                err = -EMSGSIZE;
        else if ((msg.msg_flags & MSG_CTRUNC) || ngot > max_fds)
                err = -EPROTO; /* more fds than the protocol allows */
        if (err) {
                close_all(got, ngot);
                return err;
        }
        memcpy(fds, got, ngot * sizeof(int));
        *nfds = ngot;
        return n;
}
