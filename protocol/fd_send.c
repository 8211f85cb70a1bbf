/* Sending bytes with file descriptors attached (see fd_send.h). */
#include "fd_send.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

ssize_t cv_send_with_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds,
                         int flags)
{
        if (nfds > CV_SEND_FDS_MAX || len == 0)
                return -EINVAL;
        union {
                char buf[CMSG_SPACE(sizeof(int) * CV_SEND_FDS_MAX)];
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
