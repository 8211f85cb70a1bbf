/*
 * A growable byte buffer: the output queue of a connection and the target of
 * the CBOR encoders. Bytes are appended at `len` and consumed from `start`.
 *
 * Errors are sticky: once an append fails (-ENOMEM, -EMSGSIZE), `err` holds the
 * error, later appends do nothing and return it, so a caller can encode a whole
 * body and check once. cv_out_end() (writer.h) reports and clears it.
 */
#ifndef CELLVM_BUF_H
#define CELLVM_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cv_buf {
        uint8_t *data;
        size_t start; /* first byte not yet consumed */
        size_t len;   /* end of the valid bytes */
        size_t cap;
        size_t limit;      /* most pending bytes allowed, 0 = no limit */
        size_t high_water; /* cv_buf_above_high_water() threshold, 0 = never */
        int err;           /* sticky error of the last failed append, or 0 */
};

/* An empty buffer; no allocation until the first append. */
void cv_buf_init(struct cv_buf *b);

/* Frees the storage and leaves `b` empty (safe to reuse or free again). */
void cv_buf_free(struct cv_buf *b);

/* Makes room for `n` more bytes. Returns 0, -ENOMEM, -EMSGSIZE (over `limit`) or the sticky error.
 */
int cv_buf_reserve(struct cv_buf *b, size_t n);

/* Appends `n` bytes. Returns 0 or a negative errno (also made sticky). */
int cv_buf_append(struct cv_buf *b, const void *p, size_t n);

/* Bytes appended and not yet consumed. */
static inline size_t cv_buf_pending(const struct cv_buf *b)
{
        return b->len - b->start;
}

/* Pointer to the first pending byte. */
static inline const uint8_t *cv_buf_head(const struct cv_buf *b)
{
        return b->data + b->start;
}

/* True when the pending bytes reach `high_water` (if set): stop feeding this buffer. */
static inline bool cv_buf_above_high_water(const struct cv_buf *b)
{
        return b->high_water != 0 && cv_buf_pending(b) >= b->high_water;
}

/* Drops the first `n` pending bytes (n <= pending). Releases big storage once empty. */
void cv_buf_consume(struct cv_buf *b, size_t n);

/* Discards everything after offset `len` (an absolute offset, start <= len <= b->len). */
void cv_buf_truncate(struct cv_buf *b, size_t len);

/* Empties the buffer and clears the sticky error; keeps small storage. */
void cv_buf_reset(struct cv_buf *b);

/*
 * Writes as many pending bytes to `fd` as it takes without blocking (send()
 * with MSG_NOSIGNAL on sockets, write() otherwise), consuming them. Returns 0
 * when the buffer is empty or the fd would block (check cv_buf_pending()), or a
 * negative errno from the write (-EPIPE, -ECONNRESET, ...).
 */
int cv_buf_flush(struct cv_buf *b, int fd);

/* Writes all `n` bytes of `p` to `fd` (send() with MSG_NOSIGNAL on sockets, write()
 * otherwise), retrying on EINTR. 0, or a negative errno (-EAGAIN on a non-blocking fd
 * that is full: the bytes before it were written). */
int cv_write_all(int fd, const void *p, size_t n);

#endif
