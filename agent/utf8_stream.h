/*
 * Incremental UTF-8 sanitising of executor output: pipe reads split multi-byte
 * sequences anywhere, and CBOR text must be valid UTF-8. Complete valid
 * sequences pass through, an incomplete trailing sequence waits for the next
 * read, and invalid bytes become U+FFFD (one per maximal invalid subpart, as
 * Python's errors="replace" does).
 */
#ifndef CELLVM_AGENT_UTF8_STREAM_H
#define CELLVM_AGENT_UTF8_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

struct utf8_stream {
        uint8_t pending[4];
        size_t npending;
};

/*
 * Appends the valid UTF-8 for `in[0..len)` to `out`, keeping an incomplete
 * trailing sequence unless `final` (then it becomes U+FFFD). Returns 0 or the
 * buffer's error.
 */
int utf8_stream_decode(struct utf8_stream *s, const uint8_t *in, size_t len, int final,
                       struct cv_buf *out);

#endif
