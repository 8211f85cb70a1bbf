/*
 * What the guest's proxy clients send, read within bounds (it is hostile):
 * the proxy request's head (CONNECT host:port, or an absolute-URI plain HTTP
 * request, rewritten for the origin server) and a TLS ClientHello's SNI.
 * Fuzzed as fuzz/fuzz_egress_request.c.
 */
#ifndef CELLVM_CLIENT_EGRESS_REQUEST_H
#define CELLVM_CLIENT_EGRESS_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress_policy.h"

/* The longest proxy request head read. */
#define EGRESS_HEAD_MAX (16u * 1024u)
/* The most of a ClientHello read for its SNI (one TLS record). */
#define EGRESS_HELLO_MAX (16u * 1024u + 5u)

struct egress_target {
        bool connect;                   /* CONNECT (else plain HTTP) */
        char host[EGRESS_NAME_MAX + 1]; /* a normalized name, or an IP address */
        bool is_ip;
        uint16_t port;
        size_t head_len; /* bytes of the head, through its blank line */
        /* Plain HTTP: the head to send the origin (origin-form target, hop-by-hop
         * and proxy headers dropped, `Connection: close`); malloc'ed. */
        char *origin_head;
        size_t origin_head_len;
};

/* Parses the head at the start of `buf`. 1 with `t` filled (free origin_head),
 * 0 when the head is not complete yet (and `n` < EGRESS_HEAD_MAX), or a
 * negative errno with `why` (an HTTP status's reason: -EINVAL 400, -E2BIG
 * 431, -ENOTSUP 405). */
int egress_parse_head(const char *buf, size_t n, struct egress_target *t, char *why, size_t whylen);

/* The SNI of the TLS ClientHello at the start of `buf`: 1 with `sni` filled
 * (normalized), 0 when more bytes are needed, -ENOENT when these are no TLS
 * handshake or the hello names no server, -EINVAL when it is malformed. */
int egress_parse_sni(const uint8_t *buf, size_t n, char *sni, size_t snilen);

#endif
