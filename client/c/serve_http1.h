/*
 * The guest's HTTP/1.1 responses, as cellvm serve relays them from a
 * sandbox's own server (serve_port.c): the head parsed within the bytes it
 * is given, the body's framing decided as RFC 9112 section 6.3 says, and a
 * chunked body decoded as it streams. Everything here comes from the guest:
 * hostile until parsed (fuzzed as fuzz/fuzz_guest_http.c).
 */
#ifndef CELLVM_CLIENT_SERVE_HTTP1_H
#define CELLVM_CLIENT_SERVE_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum h1_framing { H1_NONE, H1_LENGTH, H1_CHUNKED, H1_TO_EOF };

/* Where a body stands. */
struct h1_body {
        enum h1_framing framing;
        uint64_t left; /* H1_LENGTH: bytes still to come; chunked: of this chunk */
        int chunk_state;
        char line[256]; /* a chunk-size or trailer line being read */
        size_t line_len;
        bool done;      /* the body ended (bytes after it are not part of it) */
        bool announced; /* the head had a Content-Length (a HEAD's answer keeps it) */
        uint64_t announced_length;
};

/* Where a head ends in `p` (just after its blank line), or 0 while incomplete. */
size_t h1_head_end(const char *p, size_t n);

/* A header handed on: not hop-by-hop (Connection, Keep-Alive, TE, Trailer,
 * Upgrade, Proxy-Connection) nor framing (Transfer-Encoding, Content-Length).
 * Returns 0, or nonzero to fail the parse. */
typedef int (*h1_header_fn)(void *ud, const char *name, const char *value);

/* Parses the head in `p` (`n` bytes, up to h1_head_end; written to: names and
 * values are NUL-terminated in place): the status, the body's framing into
 * `b` (none for a HEAD request, 1xx, 204 and 304), each header passed on to
 * `header` (NULL: none). 0, -EINVAL for a malformed head (also conflicting
 * Content-Lengths), or -ECANCELED when `header` failed. */
int h1_parse_head(char *p, size_t n, bool head_request, unsigned *status, struct h1_body *b,
                  h1_header_fn header, void *ud);

/* The value of header `name` in the head `p` (`n` bytes; the first such
 * header), trimmed, into `out`. 0, -ENOENT, -ENAMETOOLONG when it does not
 * fit, or -EINVAL when it holds a NUL or CR. */
int h1_header_value(const char *p, size_t n, const char *name, char *out, size_t outlen);

/* Body bytes in `out`; 0 or nonzero to fail. */
typedef int (*h1_out_fn)(void *ud, const void *p, size_t n);

/* Decodes `n` bytes of the body (chunked framing removed, trailers dropped)
 * into `out`. Sets b->done at its end. 0, -EINVAL for malformed chunking, or
 * -ECANCELED when `out` failed. */
int h1_body_feed(struct h1_body *b, const uint8_t *p, size_t n, h1_out_fn out, void *ud);

#endif
