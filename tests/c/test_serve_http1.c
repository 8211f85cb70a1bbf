/*
 * Unit tests of cellvm serve's reading of a sandbox's own HTTP responses
 * (client/c/serve_http1.c): heads as Python's http.server, Node and Go write
 * them, the body's framing chosen as RFC 9112 6.3 says, chunked bodies with
 * extensions and trailers decoded however they are cut, and malformed heads
 * and chunking refused.
 */
#include "../../client/c/serve_http1.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

struct collect {
        char names[16][64];
        char values[16][128];
        int n;
};

static int header(void *ud, const char *name, const char *value)
{
        struct collect *c = ud;
        if (c->n < 16) {
                snprintf(c->names[c->n], 64, "%s", name);
                snprintf(c->values[c->n], 128, "%s", value);
        }
        c->n++;
        return 0;
}

static int parse(const char *raw, bool head_request, unsigned *status, struct h1_body *b,
                 struct collect *c)
{
        size_t end = h1_head_end(raw, strlen(raw));
        if (!end)
                return -EAGAIN;
        char *copy = strndup(raw, end);
        memset(c, 0, sizeof(*c));
        int rc = h1_parse_head(copy, end, head_request, status, b, header, c);
        free(copy);
        return rc;
}

struct out {
        char buf[4096];
        size_t n;
};

static int put(void *ud, const void *p, size_t n)
{
        struct out *o = ud;
        if (o->n + n > sizeof(o->buf))
                return -1;
        memcpy(o->buf + o->n, p, n);
        o->n += n;
        return 0;
}

/* Feeds `body` `step` bytes at a time (0: whole); the decoder's result. */
static int decode(struct h1_body b, const char *body, size_t step, struct out *o, bool *done)
{
        memset(o, 0, sizeof(*o));
        size_t n = strlen(body), pos = 0;
        int rc = 0;
        while (pos < n && rc == 0 && !b.done) {
                size_t k = step && step < n - pos ? step : n - pos;
                rc = h1_body_feed(&b, (const uint8_t *)body + pos, k, put, o);
                pos += k;
        }
        *done = b.done;
        return rc;
}

static void test_heads(void)
{
        unsigned st;
        struct h1_body b;
        struct collect c;
        CHECK(h1_head_end("HTTP/1.1 200 OK\r\nA: b\r\n", 23) == 0);
        CHECK(parse("HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6\r\nContent-type: text/html\r\n"
                    "Content-Length: 12\r\n\r\nbody",
                    false, &st, &b, &c) == 0);
        CHECK(st == 200 && b.framing == H1_LENGTH && b.left == 12 && !b.done);
        /* framing and hop-by-hop headers are not handed on */
        CHECK(c.n == 2 && strcmp(c.names[0], "Server") == 0 &&
              strcmp(c.values[0], "SimpleHTTP/0.6") == 0 && strcmp(c.values[1], "text/html") == 0);
        CHECK(parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nConnection: "
                    "keep-alive\r\nKeep-Alive: timeout=5\r\nX-A:   spaced  \r\n\r\n",
                    false, &st, &b, &c) == 0);
        CHECK(b.framing == H1_CHUNKED && c.n == 1 && strcmp(c.values[0], "spaced") == 0);
        CHECK(parse("HTTP/1.0 201 Made\nX: y\n\n", false, &st, &b, &c) == 0);
        CHECK(st == 201 && b.framing == H1_TO_EOF && c.n == 1);
        CHECK(parse("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", false, &st, &b, &c) ==
                  0 &&
              b.framing == H1_NONE && b.done);
        CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true, &st, &b, &c) == 0 &&
              b.framing == H1_NONE && b.announced && b.announced_length == 9);
        CHECK(parse("HTTP/1.1 100 Continue\r\n\r\n", false, &st, &b, &c) == 0 && st == 100);
        CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, &st, &b, &c) == 0 &&
              b.framing == H1_LENGTH && b.done);
        /* malformed */
        const char *bad[] = {
            "HTTP/2 200 OK\r\n\r\n",
            "HTTP/1.1 20 OK\r\n\r\n",
            "HTTP/1.1 999 Big\r\n\r\n",
            "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
            "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
            "ICY 200 OK\r\n\r\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CHECK(parse(bad[i], false, &st, &b, &c) == -EINVAL);
        /* the same Content-Length twice is one */
        CHECK(parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", false, &st,
                    &b, &c) == 0 &&
              b.left == 5);
        /* a NUL inside the head */
        char nul[] = "HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n";
        size_t n = sizeof(nul) - 1, end = h1_head_end(nul, n);
        CHECK(end == n && h1_parse_head(nul, end, false, &st, &b, NULL, NULL) == -EINVAL);
}

static void test_bodies(void)
{
        struct h1_body b = {.framing = H1_CHUNKED};
        const char *chunked =
            "6;name=value\r\nfirst,\r\nA\r\n0123456789\r\n0\r\nX-T: t\r\n\r\nafter";
        for (size_t step = 0; step < 8; step++) {
                struct out o;
                bool done;
                CHECK(decode(b, chunked, step, &o, &done) == 0);
                CHECK(done && o.n == 16 && memcmp(o.buf, "first,0123456789", 16) == 0);
        }
        struct h1_body len = {.framing = H1_LENGTH, .left = 4};
        struct out o;
        bool done;
        CHECK(decode(len, "abcdef", 1, &o, &done) == 0 && done && o.n == 4);
        struct h1_body eof = {.framing = H1_TO_EOF};
        CHECK(decode(eof, "all of it", 2, &o, &done) == 0 && !done && o.n == 9);
        const char *bad[] = {
            "zz\r\nx\r\n0\r\n\r\n",   /* not hex */
            "3\r\nabcd\r\n0\r\n\r\n", /* data longer than its size */
            "1000000000000000\r\n",   /* over 2^60 */
            "3x\r\nabc\r\n",          /* junk after the size */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CHECK(decode(b, bad[i], 0, &o, &done) == -EINVAL);
        /* a size line past the bound */
        char longline[400];
        memset(longline, '0', sizeof(longline) - 1);
        longline[sizeof(longline) - 1] = '\0';
        longline[0] = '1';
        longline[1] = ';';
        CHECK(decode(b, longline, 0, &o, &done) == -EINVAL);
        /* the consumer's failure stops the decoding */
        struct h1_body big = {.framing = H1_LENGTH, .left = 5000};
        char many[4200];
        memset(many, 'x', sizeof(many) - 1);
        many[sizeof(many) - 1] = '\0';
        CHECK(decode(big, many, 0, &o, &done) == -ECANCELED);
}

static void test_header_value(void)
{
        const char *head = "HTTP/1.1 101 Switching Protocols\r\nupgrade:  websocket \r\n"
                           "Connection: Upgrade\r\n\r\n";
        char v[16];
        CHECK(h1_header_value(head, strlen(head), "Upgrade", v, sizeof(v)) == 0 &&
              strcmp(v, "websocket") == 0);
        CHECK(h1_header_value(head, strlen(head), "Upgrade", v, 9) == -ENAMETOOLONG);
        CHECK(h1_header_value(head, strlen(head), "Sec-WebSocket-Accept", v, sizeof(v)) == -ENOENT);
        /* the status line is not a header */
        CHECK(h1_header_value("HTTP/1.1 101 x\r\n\r\n", 18, "HTTP/1.1 101 x", v, sizeof(v)) ==
              -ENOENT);
}

int main(void)
{
        test_header_value();
        test_heads();
        test_bodies();
        return check_report("test_serve_http1");
}
