/*
 * PORT_DATA's body (docs/PROTOCOL.md section 12) decoded in place: the common
 * shape `{data?: bytes, eof?: bool, ack?: uint}`, each key at most once, with
 * `data` borrowed from the body instead of a libcbor tree and copy. A body of
 * any other shape (other keys, a repeated key, indefinite lengths, trailing
 * bytes) is declined, and the caller decodes it the general way
 * (cv_body_parse), which gives it the same meaning or the same error.
 */
#ifndef CELLVM_PORT_DATA_H
#define CELLVM_PORT_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cv_port_data {
        const uint8_t *data; /* inside the body; NULL when `data` is absent */
        size_t len;
        bool eof;
        uint64_t ack; /* 0 when absent */
};

/* Fills `*out` from `body` (length 0 is the empty map). Returns 0, or -EINVAL
 * when the body is not of that shape. Reads no byte outside body[0, len). */
int cv_port_data_decode(const uint8_t *body, size_t len, struct cv_port_data *out);

#endif
