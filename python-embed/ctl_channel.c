/* Blocking framed messages with fd passing on a control socket (see ctl_channel.h). */
#include "ctl_channel.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "fd_pass.h"
#include "writer.h"

int ctl_channel_init(struct ctl_channel *c, int fd)
{
        memset(c, 0, sizeof(*c));
        c->fd = fd;
        cv_reader_init(&c->reader, 0);
        c->in = malloc(CV_READER_CHUNK);
        if (c->in == NULL) {
                cv_reader_free(&c->reader);
                return -ENOMEM;
        }
        return 0;
}

void ctl_channel_free(struct ctl_channel *c)
{
        for (size_t i = 0; i < c->nfds; i++)
                close(c->fds[i]);
        c->nfds = 0;
        cv_reader_free(&c->reader);
        free(c->in);
        c->in = NULL;
}

static int fill(struct ctl_channel *c)
{
        int fds[CV_FDS_MAX];
        size_t nfds;
        ssize_t n = cv_recv_with_fds(c->fd, c->in, CV_READER_CHUNK, fds, CV_FDS_MAX, &nfds);
        if (n < 0)
                return (int)n;
        for (size_t i = 0; i < nfds; i++) {
                if (c->nfds < CTL_MAX_FDS)
                        c->fds[c->nfds++] = fds[i];
                else
                        (void)close(fds[i]); /* nobody took the earlier ones: a stuck peer */
        }
        c->in_off = 0;
        c->in_len = (size_t)n;
        return n == 0 ? CV_READ_EOF : CV_READ_NEED;
}

int ctl_channel_recv(struct ctl_channel *c, struct cv_msg *msg)
{
        for (;;) {
                if (c->in_off < c->in_len) {
                        size_t used = 0;
                        int rc = cv_reader_feed(&c->reader, c->in + c->in_off,
                                                c->in_len - c->in_off, &used, msg);
                        c->in_off += used;
                        if (rc != CV_READ_NEED)
                                return rc;
                }
                int rc = fill(c);
                if (rc != CV_READ_NEED)
                        return rc;
        }
}

int ctl_channel_take_fd(struct ctl_channel *c)
{
        if (c->nfds == 0)
                return -ENOENT;
        int fd = c->fds[0];
        memmove(c->fds, c->fds + 1, (c->nfds - 1) * sizeof(int));
        c->nfds--;
        return fd;
}

int ctl_send(int fd, uint16_t type, uint32_t id, const uint8_t *body, size_t len)
{
        struct cv_buf out;
        cv_buf_init(&out);
        int rc = cv_out_msg(&out, type, 0, id, body, len);
        if (rc == 0)
                rc = cv_write_all(fd, cv_buf_head(&out), cv_buf_pending(&out));
        cv_buf_free(&out);
        return rc;
}
