/*
 * libFuzzer target: a sandbox's own HTTP server's response as cellvm serve
 * relays it to a getHost(port) client (serve_http1.c). The first byte says
 * whether the request was a HEAD; the rest is what the guest sent. The head
 * is looked for within 64 KiB (as serve_port.c does), parsed, and the rest
 * decoded as its body three times: whole, one byte at a time, and in pieces
 * the input's bytes size. The three must agree (same output, same end, same
 * error), every header handed on must be NUL-free and without CR or LF, and
 * a body by length must never give more than its length. h1_header_value's
 * answer (the guest's Upgrade, for a 101) must fit and hold no CR or LF.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_http1.h"

#define CHECK(c)                                                                                   \
        do {                                                                                       \
                if (!(c)) {                                                                        \
                        fprintf(stderr, "fuzz_guest_http: check failed: %s (%s:%d)\n", #c,         \
                                __FILE__, __LINE__);                                               \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

struct out {
        uint8_t *p;
        size_t n, cap;
};

static int put(void *ud, const void *p, size_t n)
{
        struct out *o = ud;
        CHECK(n > 0);
        if (o->n + n > o->cap) {
                size_t cap = o->cap ? o->cap * 2 : 256;
                while (cap < o->n + n)
                        cap *= 2;
                uint8_t *q = realloc(o->p, cap);
                if (!q)
                        return -1;
                o->p = q;
                o->cap = cap;
        }
        memcpy(o->p + o->n, p, n);
        o->n += n;
        return 0;
}

static int header(void *ud, const char *name, const char *value)
{
        size_t *count = ud;
        CHECK(name[0] != '\0');
        CHECK(!strpbrk(name, "\r\n: \t"));
        CHECK(!strpbrk(value, "\r\n"));
        ++*count;
        return 0;
}

struct run {
        struct out out;
        int rc;
        bool done;
};

/* Feeds `body` in pieces: `step` 0 = whole, else sizes from `sizes`. */
static void feed(const struct h1_body *start, const uint8_t *body, size_t n, size_t step,
                 const uint8_t *sizes, size_t nsizes, struct run *r)
{
        struct h1_body b = *start;
        memset(r, 0, sizeof(*r));
        size_t pos = 0, k = 0;
        while (pos < n && r->rc == 0 && !b.done) {
                size_t piece = step ? step : n - pos;
                if (nsizes)
                        piece = 1 + sizes[k++ % nsizes] % 97;
                if (piece > n - pos)
                        piece = n - pos;
                r->rc = h1_body_feed(&b, body + pos, piece, put, &r->out);
                pos += piece;
        }
        r->done = b.done;
        if (start->framing == H1_LENGTH)
                CHECK(r->out.n <= start->left);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        bool head_request = data[0] & 1;
        const char *p = (const char *)data + 1;
        size_t n = size - 1;
        size_t end = h1_head_end(p, n < 65536 ? n : 65536);
        if (!end)
                return 0;
        CHECK(end <= n);
        char *copy = malloc(end + 1);
        if (!copy)
                return 0;
        memcpy(copy, p, end);
        copy[end] = '\0';
        char value[64];
        int vr = h1_header_value(copy, end, "Upgrade", value, sizeof(value));
        CHECK(vr == 0 || vr == -ENOENT || vr == -ENAMETOOLONG || vr == -EINVAL);
        if (vr == 0)
                CHECK(strlen(value) < sizeof(value) && !strpbrk(value, "\r\n"));
        unsigned status = 0;
        struct h1_body b, again;
        size_t count = 0;
        int rc = h1_parse_head(copy, end, head_request, &status, &b, NULL, NULL);
        if (rc == 0) {
                CHECK(status >= 100 && status <= 599);
                /* With headers handed on the parse gives the same answer. */
                memcpy(copy, p, end);
                unsigned status2 = 0;
                CHECK(h1_parse_head(copy, end, head_request, &status2, &again, header, &count) ==
                      0);
                CHECK(status2 == status && again.framing == b.framing && again.left == b.left);
                if (head_request)
                        CHECK(b.framing == H1_NONE);
                const uint8_t *body = data + 1 + end;
                size_t nb = n - end;
                struct run whole, bytes, pieces;
                feed(&b, body, nb, 0, NULL, 0, &whole);
                feed(&b, body, nb, 1, NULL, 0, &bytes);
                feed(&b, body, nb, 0, data, size, &pieces);
                CHECK(whole.rc == bytes.rc && whole.rc == pieces.rc);
                if (whole.rc == 0) {
                        CHECK(whole.done == bytes.done && whole.done == pieces.done);
                        CHECK(whole.out.n == bytes.out.n && whole.out.n == pieces.out.n);
                        CHECK(whole.out.n == 0 ||
                              (memcmp(whole.out.p, bytes.out.p, whole.out.n) == 0 &&
                               memcmp(whole.out.p, pieces.out.p, whole.out.n) == 0));
                }
                free(whole.out.p);
                free(bytes.out.p);
                free(pieces.out.p);
        } else {
                CHECK(rc == -EINVAL);
        }
        free(copy);
        return 0;
}
