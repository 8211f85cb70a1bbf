/*
 * libFuzzer target: what a sandbox's proxy clients send, as cellvm serve's
 * egress reads it (egress_request.c). The first byte picks the reader: even,
 * the proxy request's head; odd, a TLS ClientHello's SNI. Each is also read
 * from every shorter prefix: a prefix may only ask for more (0) or fail as the
 * whole does, never give another answer. A head's target must be a
 * normalized name or an IP address with a port, its length within the input
 * and EGRESS_HEAD_MAX, and the origin's head free of NUL and ending its head.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_request.h"

#define CHECK(c)                                                                                   \
        do {                                                                                       \
                if (!(c)) {                                                                        \
                        fprintf(stderr, "fuzz_egress_request: check failed: %s (%s:%d)\n", #c,     \
                                __FILE__, __LINE__);                                               \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

static void head(const char *p, size_t n)
{
        struct egress_target t;
        char why[256];
        int rc = egress_parse_head(p, n, &t, why, sizeof(why));
        if (rc == 1) {
                CHECK(t.head_len <= n && t.head_len <= EGRESS_HEAD_MAX);
                CHECK(t.port > 0 && t.host[0]);
                char norm[EGRESS_NAME_MAX + 1];
                CHECK(t.is_ip || (egress_normalize_name(t.host, norm, sizeof(norm)) == 0 &&
                                  strcmp(norm, t.host) == 0));
                CHECK(t.connect ||
                      (t.origin_head && t.origin_head_len >= 4 &&
                       memcmp(t.origin_head + t.origin_head_len - 4, "\r\n\r\n", 4) == 0 &&
                       !memchr(t.origin_head, '\0', t.origin_head_len)));
                free(t.origin_head);
                /* A prefix without the whole head asks for more. */
                CHECK(egress_parse_head(p, t.head_len - 1, &t, why, sizeof(why)) == 0);
        } else {
                CHECK(rc == 0 || rc == -EINVAL || rc == -E2BIG || rc == -ENOMEM);
        }
}

static void sni(const uint8_t *p, size_t n)
{
        char name[EGRESS_NAME_MAX + 1];
        int rc = egress_parse_sni(p, n, name, sizeof(name));
        CHECK(rc == 1 || rc == 0 || rc == -ENOENT || rc == -EINVAL);
        if (rc == 1)
                CHECK(strlen(name) > 0 && strlen(name) <= EGRESS_NAME_MAX);
        for (size_t k = 0; k < n && k < 64; k++) {
                int r = egress_parse_sni(p, k, name, sizeof(name));
                CHECK(r == 0 || r == rc || (rc != 0 && r == -EINVAL) || r == -ENOENT);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        if (data[0] % 2 == 0)
                head((const char *)data + 1, size - 1);
        else
                sni(data + 1, size - 1);
        return 0;
}
