#include "buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Storage above this is released when the buffer empties, so one big message
 * does not pin memory for the rest of a connection. */
#define CV_BUF_KEEP (256u * 1024u)

void cv_buf_init(struct cv_buf *b)
{
        memset(b, 0, sizeof(*b));
}

void cv_buf_free(struct cv_buf *b)
{
        free(b->data);
        b->data = NULL;
        b->start = b->len = b->cap = 0;
        b->err = 0;
}

static int fail(struct cv_buf *b, int err)
{
        b->err = err;
        return err;
}

int cv_buf_reserve(struct cv_buf *b, size_t n)
{
        if (b->err)
                return b->err;
        if (b->limit && (n > b->limit || cv_buf_pending(b) > b->limit - n))
                return fail(b, -EMSGSIZE);
        if (b->cap - b->len >= n)
                return 0;
        /* Reuse the consumed prefix before growing. */
        if (b->start > 0) {
                memmove(b->data, b->data + b->start, b->len - b->start);
                b->len -= b->start;
                b->start = 0;
                if (b->cap - b->len >= n)
                        return 0;
        }
        if (n > SIZE_MAX / 2 - b->len)
                return fail(b, -ENOMEM);
        size_t want = b->len + n;
        size_t cap = b->cap ? b->cap : 256;
        while (cap < want)
                cap *= 2;
        uint8_t *p = realloc(b->data, cap);
        if (!p)
                return fail(b, -ENOMEM);
        b->data = p;
        b->cap = cap;
        return 0;
}

int cv_buf_append(struct cv_buf *b, const void *p, size_t n)
{
        int rc = cv_buf_reserve(b, n);
        if (rc < 0)
                return rc;
        if (n)
                memcpy(b->data + b->len, p, n);
        b->len += n;
        return 0;
}

void cv_buf_consume(struct cv_buf *b, size_t n)
{
        if (n > cv_buf_pending(b))
                n = cv_buf_pending(b);
        b->start += n;
        if (b->start == b->len) {
                b->start = b->len = 0;
                if (b->cap > CV_BUF_KEEP) {
                        free(b->data);
                        b->data = NULL;
                        b->cap = 0;
                }
        }
}

void cv_buf_truncate(struct cv_buf *b, size_t len)
{
        if (len < b->start)
                len = b->start;
        if (len < b->len)
                b->len = len;
}

void cv_buf_reset(struct cv_buf *b)
{
        b->err = 0;
        cv_buf_consume(b, cv_buf_pending(b));
}

/* send() so a vanished peer is EPIPE, not SIGPIPE; ttys, pipes and files need write(). */
static ssize_t send_or_write(int fd, const void *p, size_t n)
{
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == ENOTSOCK)
                w = write(fd, p, n);
        return w;
}

int cv_write_all(int fd, const void *p, size_t n)
{
        const char *at = p;
        while (n > 0) {
                ssize_t w = send_or_write(fd, at, n);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                at += w;
                n -= (size_t)w;
        }
        return 0;
}

int cv_buf_flush(struct cv_buf *b, int fd)
{
        while (cv_buf_pending(b) > 0) {
                ssize_t n = send_or_write(fd, cv_buf_head(b), cv_buf_pending(b));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return 0;
                        return -errno;
                }
                cv_buf_consume(b, (size_t)n);
        }
        return 0;
}
