#include "reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* A reassembly buffer above this is released after its message is delivered. */
#define CV_READER_KEEP (256u * 1024u)

void cv_reader_init(struct cv_reader *r, size_t max_message)
{
        memset(r, 0, sizeof(*r));
        r->max_message = max_message ? max_message : CV_DEFAULT_MAX_MESSAGE;
        r->max_reads = 1;
}

void cv_reader_free(struct cv_reader *r)
{
        free(r->msg);
        free(r->in);
        size_t max = r->max_message;
        unsigned max_reads = r->max_reads;
        memset(r, 0, sizeof(*r));
        r->max_message = max;
        r->max_reads = max_reads;
}

static void start_next_message(struct cv_reader *r)
{
        r->delivered = false;
        r->chunked = false;
        r->msg_len = 0;
        if (r->msg_cap > CV_READER_KEEP) {
                free(r->msg);
                r->msg = NULL;
                r->msg_cap = 0;
        }
}

void cv_reader_reset(struct cv_reader *r)
{
        start_next_message(r);
        r->hdr_got = 0;
        r->body_got = 0;
        r->in_off = r->in_len = 0;
}

bool cv_reader_mid_message(const struct cv_reader *r)
{
        return !r->delivered && (r->hdr_got > 0 || r->chunked);
}

static int reserve_msg(struct cv_reader *r, size_t extra)
{
        if (r->msg_cap - r->msg_len >= extra)
                return 0;
        size_t want = r->msg_len + extra;
        size_t cap = r->msg_cap ? r->msg_cap : 4096;
        while (cap < want)
                cap *= 2;
        uint8_t *p = realloc(r->msg, cap);
        if (!p)
                return -ENOMEM;
        r->msg = p;
        r->msg_cap = cap;
        return 0;
}

/* Validates a freshly completed header against the message being reassembled. */
static int accept_header(struct cv_reader *r)
{
        int rc = cv_frame_hdr_decode(r->hdr, &r->cur);
        if (rc < 0) {
                r->bad = r->cur;
                return rc;
        }
        if (r->chunked && (r->cur.type != r->msg_type || r->cur.id != r->msg_id)) {
                r->bad = r->cur;
                return -EBADMSG;
        }
        if (r->cur.len > r->max_message - r->msg_len) {
                r->bad = r->cur;
                return -EMSGSIZE;
        }
        r->msg_type = r->cur.type;
        r->msg_id = r->cur.id;
        r->body_got = 0;
        return 0;
}

/* The current frame's body is all there: the message if it was the last frame. */
static int frame_complete(struct cv_reader *r, struct cv_msg *msg)
{
        r->hdr_got = 0;
        if (r->cur.flags & CV_FLAG_MORE) {
                r->chunked = true;
                return CV_READ_NEED;
        }
        r->delivered = true;
        *msg = (struct cv_msg){
            .type = r->msg_type,
            .id = r->msg_id,
            .body = r->msg_len ? r->msg : (const uint8_t *)"",
            .len = r->msg_len,
        };
        return CV_READ_MSG;
}

int cv_reader_feed(struct cv_reader *r, const uint8_t *data, size_t len, size_t *used,
                   struct cv_msg *msg)
{
        size_t pos = 0;
        if (r->delivered)
                start_next_message(r);
        while (pos < len) {
                if (r->hdr_got < CV_HDR_SIZE) {
                        size_t n = CV_HDR_SIZE - r->hdr_got;
                        if (n > len - pos)
                                n = len - pos;
                        memcpy(r->hdr + r->hdr_got, data + pos, n);
                        r->hdr_got += n;
                        pos += n;
                        if (r->hdr_got < CV_HDR_SIZE)
                                break;
                        int rc = accept_header(r);
                        if (rc < 0) {
                                *used = pos;
                                return rc;
                        }
                }
                size_t n = r->cur.len - r->body_got;
                if (n > len - pos)
                        n = len - pos;
                if (n > 0) {
                        int rc = reserve_msg(r, n);
                        if (rc < 0) {
                                *used = pos;
                                return rc;
                        }
                        memcpy(r->msg + r->msg_len, data + pos, n);
                        r->msg_len += n;
                        r->body_got += (uint32_t)n;
                        pos += n;
                }
                if (r->body_got < r->cur.len)
                        break;
                if (frame_complete(r, msg) == CV_READ_MSG) {
                        *used = pos;
                        return CV_READ_MSG;
                }
        }
        *used = pos;
        return CV_READ_NEED;
}

/* read() of up to `len` bytes as readv() of page-sized pieces: a virtio-serial port
 * hands over one page-sized buffer per read (the guest's virtio_console driver), and
 * for a device without read_iter the kernel reads the pieces one after the other,
 * so one call takes as many buffers as there are pieces. A socket fills them in one
 * go, as one read would. */
static ssize_t read_pages(int fd, uint8_t *p, size_t len)
{
        struct iovec iov[CV_READER_CHUNK / CV_READER_PAGE];
        int n = 0;
        while (len > 0 && n < (int)(sizeof(iov) / sizeof(iov[0]))) {
                size_t k = len < CV_READER_PAGE ? len : CV_READER_PAGE;
                iov[n++] = (struct iovec){.iov_base = p, .iov_len = k};
                p += k;
                len -= k;
        }
        return readv(fd, iov, n);
}

/* Body bytes of the current frame still to come, when they are worth a read of their own. */
static size_t direct_room(const struct cv_reader *r)
{
        if (r->delivered || r->hdr_got < CV_HDR_SIZE)
                return 0;
        size_t left = r->cur.len - r->body_got;
        if (left < CV_READER_DIRECT_MIN)
                return 0;
        return left < CV_READER_CHUNK ? left : CV_READER_CHUNK;
}

int cv_reader_read(struct cv_reader *r, int fd, struct cv_msg *msg)
{
        if (!r->in) {
                r->in = malloc(CV_READER_CHUNK);
                if (!r->in)
                        return -ENOMEM;
        }
        for (unsigned reads = 0;;) {
                if (cv_reader_buffered(r) > 0) {
                        size_t used;
                        int rc =
                            cv_reader_feed(r, r->in + r->in_off, cv_reader_buffered(r), &used, msg);
                        r->in_off += used;
                        if (rc != CV_READ_NEED)
                                return rc;
                }
                if (reads == r->max_reads)
                        return CV_READ_NEED;
                r->in_off = r->in_len = 0;
                /* Inside a large body: straight into the message, one copy fewer. */
                size_t direct = direct_room(r);
                if (direct > 0) {
                        int rc = reserve_msg(r, direct);
                        if (rc < 0)
                                return rc;
                }
                ssize_t n = direct > 0 ? read_pages(fd, r->msg + r->msg_len, direct)
                                       : read_pages(fd, r->in, CV_READER_CHUNK);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return CV_READ_NEED;
                        return -errno;
                }
                if (n == 0) {
                        if (r->delivered)
                                start_next_message(r);
                        return CV_READ_EOF;
                }
                reads++;
                if (direct == 0) {
                        r->in_len = (size_t)n;
                        continue;
                }
                r->msg_len += (size_t)n;
                r->body_got += (uint32_t)n;
                if (r->body_got == r->cur.len && frame_complete(r, msg) == CV_READ_MSG)
                        return CV_READ_MSG;
        }
}
