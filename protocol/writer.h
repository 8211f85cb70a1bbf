/*
 * Appending framed messages to a cv_buf (docs/PROTOCOL.md section 2). Bodies
 * over CV_MAX_BODY are split into frames with MORE set on all but the last.
 *
 * Two ways to append:
 *   cv_out_msg(b, type, 0, id, body, len)     an already-encoded body;
 *   cv_out_begin(b, &m); cv_enc_...(b, ...); cv_out_end(b, m, type, id)
 *                                              encode the CBOR body in place.
 */
#ifndef CELLVM_WRITER_H
#define CELLVM_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/*
 * Appends one message of `len` body bytes. `flags` is OR-ed into every frame
 * (pass 0; MORE is managed here). Returns 0, -EMSGSIZE when `len` is over
 * CV_DEFAULT_MAX_MESSAGE, -ENOMEM, or the buffer's sticky error (which it
 * clears). On error nothing is appended.
 */
int cv_out_msg(struct cv_buf *b, uint16_t type, uint16_t flags, uint32_t id, const void *body,
               size_t len);

/* Starts a message whose body the caller encodes straight into `b`; `*mark`
 * remembers where it starts. Returns 0 or a negative errno. */
int cv_out_begin(struct cv_buf *b, size_t *mark);

/*
 * Finishes the message started at `mark`: writes its header(s), chunking if the
 * body grew past CV_MAX_BODY. If an append failed since cv_out_begin() (sticky
 * error) or the body is over CV_DEFAULT_MAX_MESSAGE, removes the partial message,
 * clears the error and returns it (-ENOMEM, -EMSGSIZE). Returns 0 on success.
 */
int cv_out_end(struct cv_buf *b, size_t mark, uint16_t type, uint32_t id);

/* Drops a message started with cv_out_begin() and clears the sticky error. */
void cv_out_abort(struct cv_buf *b, size_t mark);

/* Appends ERROR{code, message} for request `id` (a complete message). */
int cv_out_error(struct cv_buf *b, uint32_t id, const char *code, const char *message);

#endif
