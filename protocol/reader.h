/*
 * Incremental message reader (docs/PROTOCOL.md section 2): turns a byte stream
 * into complete messages, reassembling MORE chunks, with bounded memory (one
 * message of at most `max_message` bytes plus a fixed read buffer).
 *
 * Use either cv_reader_read() on a (non-blocking) fd or cv_reader_feed() with
 * bytes you already have; don't mix the two on one reader.
 */
#ifndef CELLVM_READER_H
#define CELLVM_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frame.h"

/* Bytes cv_reader_read() asks the kernel for at a time. */
#define CV_READER_CHUNK (64u * 1024u)
/* The pieces cv_reader_read() reads in (readv), a virtio-serial port's buffer size. */
#define CV_READER_PAGE 4096u
/* A frame body with at least this much still to come is read into the message directly. */
#define CV_READER_DIRECT_MIN 4096u

enum cv_read_status {
        CV_READ_NEED = 0, /* no complete message yet: wait for the fd / feed more */
        CV_READ_MSG = 1,  /* *msg holds a complete message */
        CV_READ_EOF = 2,  /* end of stream; cv_reader_mid_message() tells if it cut a frame */
};

/* A complete message. `body` stays valid until the next call on the reader. */
struct cv_msg {
        uint16_t type;
        uint32_t id;
        const uint8_t *body;
        size_t len;
};

struct cv_reader {
        size_t max_message;
        /* read()s one cv_reader_read() makes at most: 1 (cv_reader_init), more only for a
         * non-blocking fd, so that one wakeup of its poll loop reads what is there. */
        unsigned max_reads;
        uint8_t hdr[CV_HDR_SIZE];
        size_t hdr_got;          /* header bytes of the current frame received */
        struct cv_frame_hdr cur; /* current frame, valid once hdr_got == CV_HDR_SIZE */
        uint32_t body_got;       /* body bytes of the current frame received */
        bool chunked;            /* a MORE frame was seen: msg_type/msg_id are fixed */
        uint16_t msg_type;
        uint32_t msg_id;
        uint8_t *msg; /* reassembled body */
        size_t msg_len;
        size_t msg_cap;
        bool delivered;          /* the last call returned CV_READ_MSG: reset before going on */
        struct cv_frame_hdr bad; /* the header that caused -EBADMSG / -EMSGSIZE, for logs */
        uint8_t *in;             /* cv_reader_read() staging buffer */
        size_t in_off;
        size_t in_len;
};

/* Prepares `r`; `max_message` 0 means CV_DEFAULT_MAX_MESSAGE. */
void cv_reader_init(struct cv_reader *r, size_t max_message);

/* Frees the buffers; `r` can be initialised again. */
void cv_reader_free(struct cv_reader *r);

/* Forgets any partial message and buffered bytes (a new peer on the same stream). */
void cv_reader_reset(struct cv_reader *r);

/*
 * Consumes bytes of `data` until one message completes or the bytes run out;
 * `*used` gets how many were consumed. Returns CV_READ_MSG (fills `*msg`),
 * CV_READ_NEED (all bytes used), -EBADMSG (frame header invalid, or a frame of
 * another message inside a chunked one), -EMSGSIZE (reassembled message over
 * max_message; detected from the header, before the body arrives) or -ENOMEM.
 * After an error the stream cannot be trusted; reset or drop the reader.
 */
int cv_reader_feed(struct cv_reader *r, const uint8_t *data, size_t len, size_t *used,
                   struct cv_msg *msg);

/*
 * Reads from `fd` until a message is complete, the fd would block or
 * `max_reads` read()s were made (each of at most CV_READER_CHUNK bytes, in
 * CV_READER_PAGE pieces; the rest of a large frame body goes straight into
 * the message).
 * Returns CV_READ_MSG, CV_READ_NEED (the fd would block, or the reads did not
 * complete a message: with a level-triggered poll just wait again),
 * CV_READ_EOF, or a negative errno: the errors of cv_reader_feed() or of
 * read(). Bytes already buffered are used before reading again, so call it
 * until it returns something other than CV_READ_MSG, or check
 * cv_reader_buffered().
 */
int cv_reader_read(struct cv_reader *r, int fd, struct cv_msg *msg);

/* Bytes read from the fd and not yet consumed. */
static inline size_t cv_reader_buffered(const struct cv_reader *r)
{
        return r->in_len - r->in_off;
}

/* True if a frame or chunked message is partly received (EOF now = truncated). */
bool cv_reader_mid_message(const struct cv_reader *r);

#endif
