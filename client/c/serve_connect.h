/* The Connect protocol's framing as E2B's SDKs use it (JSON codec): a
 * streaming request or response is envelopes of a flag byte, a 4-byte
 * big-endian length and that much JSON; flag 0x02 marks the end of a
 * response stream. Requests are bounded and checked here. */
#ifndef CELLVM_CLIENT_SERVE_CONNECT_H
#define CELLVM_CLIENT_SERVE_CONNECT_H

#include <jansson.h>
#include <stddef.h>

#define CONNECT_END_STREAM 0x02

/* A streaming request body: exactly one uncompressed envelope. Returns its
 * JSON object, or NULL with `why` set. */
json_t *connect_unwrap(const char *body, size_t len, char *why, size_t whylen);
/* A unary request body: one JSON object, or NULL with `why` set. */
json_t *connect_unary(const char *body, size_t len, char *why, size_t whylen);
/* Appends an envelope of `flags` with `msg` (stolen) to `*out`. 0 or -ENOMEM. */
struct hstream;
int connect_put(struct hstream *st, unsigned char flags, json_t *msg);

/* The user an envd request acts as: `Authorization: Basic base64("<user>:")`,
 * else "user". 0, or -EINVAL for a header that is not such. */
int connect_user(const char *authorization, char *out, size_t outlen);

#endif
