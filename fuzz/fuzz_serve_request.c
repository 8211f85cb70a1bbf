/*
 * libFuzzer target: what `cellvm serve` does with a client's request bytes
 * before a handler acts on them. The first input byte picks the reader:
 *
 *   0  the streaming multipart reader (serve_multipart.c): a Content-Type
 *      line, a byte choosing piece sizes, then the body; fed whole and in
 *      pieces, the two parses must agree; callbacks check begin/data/end
 *      pairing and that every byte handed on is in the body
 *   1  the same reader on a well-formed body the target builds from the
 *      input (boundary, names and filenames with quotes and backslashes,
 *      data): the parse must give back exactly those parts
 *   2  Connect framing (serve_connect.c): connect_unwrap, connect_unary, and
 *      connect_put's envelope read back by connect_unwrap
 *   3  JSON bodies as the handlers load them (jansson, duplicates refused),
 *      walked for the members they read, and written back as replies are
 *   4  envd's Basic user header (connect_user) and base64_decode
 *   5  signed /files URLs (serve_sign.c) against an independent SHA-256
 *   6  RFC 3339 times as the v2 list's startedAfter takes them (parse_iso_ms)
 *
 * The control plane's and the interpreter's own body checks (string maps,
 * timeout, network, /execute's fields, the metadata filter) are static in
 * serve_api.c and serve_interp.c, and serve_envd.c's field helpers cannot be
 * linked without the agent connection: see docs/FUZZING.md.
 *
 * Linked with serve_http.c, serve_connect.c, serve_multipart.c and
 * serve_sign.c only; the sandbox table and the routes those refer to are
 * stubbed below (no request is routed here).
 */
#include <errno.h>
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve_connect.h"
#include "serve_http.h"
#include "serve_multipart.h"
#include "serve_sign.h"

#define CHECK(c)                                                                                   \
        do {                                                                                       \
                if (!(c)) {                                                                        \
                        fprintf(stderr, "fuzz_serve_request: check failed: %s (%s:%d)\n", #c,      \
                                __FILE__, __LINE__);                                               \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

/* --- stubs: what serve_http.c and serve_sign.c refer to ---------------------- */

struct serve serve;
static struct sandbox fake[2];
const struct hroute route_api, route_interp, route_envd, route_files_get, route_files_post,
    route_mcp;

int port_gone_route(struct hreq *h, const char *id, char *why, size_t whylen)
{
        (void)h;
        (void)id;
        (void)why;
        (void)whylen;
        return 502;
}

int port_route(struct hreq *h, unsigned port, char *why, size_t whylen)
{
        (void)h;
        (void)port;
        (void)why;
        (void)whylen;
        return 502;
}

struct sandbox *serve_get(const char *id)
{
        (void)id;
        return NULL;
}

struct sandbox *serve_wake(const char *id)
{
        (void)id;
        return NULL;
}

void serve_put(struct sandbox *s)
{
        (void)s;
}

int serve_list(struct sandbox ***out, size_t *n)
{
        *out = malloc(2 * sizeof(**out));
        if (!*out)
                return -ENOMEM;
        (*out)[0] = &fake[0];
        (*out)[1] = &fake[1];
        *n = 2;
        return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        (void)argc;
        (void)argv;
        json_object_seed(1); /* the same hash order every run */
        snprintf(fake[0].token, sizeof(fake[0].token), "0123456789abcdef0123456789abcdef");
        snprintf(fake[1].token, sizeof(fake[1].token), "fedcba9876543210fedcba9876543210");
        return 0;
}

/* --- a growing byte log ------------------------------------------------------ */

struct log {
        char *p;
        size_t len, cap;
};

static void log_put(struct log *l, const void *p, size_t n)
{
        if (l->len + n > l->cap) {
                size_t cap = l->cap ? l->cap : 256;
                while (cap < l->len + n)
                        cap *= 2;
                l->p = realloc(l->p, cap);
                CHECK(l->p);
                l->cap = cap;
        }
        memcpy(l->p + l->len, p, n);
        l->len += n;
}

/* --- 0, 1: multipart --------------------------------------------------------- */

/* What the reader handed on, as one log: 'B' name NUL filename NUL, then 'D'
 * and the data (pieces of a part merged), 'E' at the part's end. */
struct trace {
        struct log log;
        const uint8_t *body;
        size_t body_len;
        bool in_part, data_open;
        unsigned begins, ends;
        size_t data_total;
        size_t part_start; /* where this part's data starts in log */
        int fail_at;       /* a begin callback fails at this part (-1: never) */
};

static int t_begin(void *ud, const char *name, const char *filename)
{
        struct trace *t = ud;
        CHECK(!t->in_part);
        CHECK(name && filename);
        size_t nl = strnlen(name, 256), fl = strnlen(filename, MP_NAME_MAX);
        CHECK(nl < 256 && fl < MP_NAME_MAX);
        t->in_part = true;
        t->data_open = false;
        if (t->fail_at >= 0 && (int)t->begins == t->fail_at)
                return -EDOM; /* a handler's refusal ends the parse with its code */
        t->begins++;
        log_put(&t->log, "B", 1);
        log_put(&t->log, name, nl + 1);
        log_put(&t->log, filename, fl + 1);
        return 0;
}

static int t_data(void *ud, const char *p, size_t len)
{
        struct trace *t = ud;
        CHECK(t->in_part);
        CHECK(len > 0);
        t->data_total += len;
        CHECK(t->data_total <= t->body_len);
        if (!t->data_open) {
                log_put(&t->log, "D", 1);
                t->data_open = true;
                t->part_start = t->log.len;
        }
        log_put(&t->log, p, len);
        return 0;
}

static int t_end(void *ud)
{
        struct trace *t = ud;
        CHECK(t->in_part);
        /* a part's data is a run of the body's bytes */
        if (t->data_open && t->body_len) {
                size_t n = t->log.len - t->part_start;
                CHECK(memmem(t->body, t->body_len, t->log.p + t->part_start, n) != NULL);
        }
        t->in_part = false;
        t->data_open = false;
        t->ends++;
        log_put(&t->log, "E", 1);
        return 0;
}

/* Piece sizes from one input byte: from single bytes to more than a slice
 * (bit 0x40: small pieces only, so a cut lands on every byte now and then). */
static size_t piece(uint32_t *state, uint8_t seed)
{
        static const size_t max[] = {1, 3, 9, 77, 512, 4099, 33000, 70000};
        *state = *state * 1103515245u + 12345u;
        return 1 + ((*state >> 8) % max[(*state >> 28) & (seed & 0x40 ? 3 : 7)]);
}

/* Parses `body` with `ct`, fed in pieces (seed) or whole (whole); returns
 * 0, or the first error; the trace is left in *t. */
static int parse(const char *ct, const uint8_t *body, size_t len, bool whole, uint8_t seed,
                 int fail_at, struct trace *t)
{
        memset(t, 0, sizeof(*t));
        t->body = body;
        t->body_len = len;
        t->fail_at = fail_at;
        struct mp_callbacks cb = {.begin = t_begin, .data = t_data, .end = t_end, .ud = t};
        struct mp m;
        int rc = mp_init(&m, ct, &cb);
        if (rc < 0) {
                CHECK(rc == -EINVAL);
                CHECK(m.why[0]);
                mp_free(&m);
                return rc;
        }
        CHECK(m.dlen >= 5 && m.dlen <= MP_BOUNDARY_MAX + 4);
        uint32_t state = seed;
        for (size_t off = 0; off < len && rc == 0;) {
                size_t n = whole ? len - off : piece(&state, seed);
                if (n > len - off)
                        n = len - off;
                rc = mp_feed(&m, (const char *)body + off, n);
                off += n;
        }
        if (rc == 0)
                rc = mp_finish(&m);
        if (rc == -EDOM) {
                CHECK(fail_at >= 0);
        } else if (rc < 0) {
                CHECK(rc == -EINVAL);
                CHECK(m.why[0]);
        } else {
                /* a whole body: every part begun was ended (a body of a
                 * closing delimiter only has none: the handler refuses it) */
                CHECK(!t->in_part);
                CHECK(t->begins == t->ends);
                CHECK(t->begins <= MP_MAX_PARTS);
        }
        CHECK(t->ends <= t->begins);
        mp_free(&m);
        return rc;
}

static void fuzz_multipart(const uint8_t *d, size_t n)
{
        /* "<Content-Type>\n<seed byte><body>" */
        const uint8_t *nl = memchr(d, '\n', n);
        size_t ctl = nl ? (size_t)(nl - d) : n;
        if (ctl > 512)
                return;
        char ct[513];
        memcpy(ct, d, ctl);
        ct[ctl] = '\0';
        if (strlen(ct) != ctl)
                return; /* a header value has no NUL */
        const uint8_t *rest = nl ? nl + 1 : d + n;
        size_t rl = nl ? n - ctl - 1 : 0;
        uint8_t seed = rl ? rest[0] : 0;
        const uint8_t *body = rl ? rest + 1 : rest;
        size_t bl = rl ? rl - 1 : 0;
        int fail_at = (seed & 0x80) ? (seed & 3) : -1;

        struct trace a, b;
        int ra = parse(ct, body, bl, true, seed, fail_at, &a);
        int rb = parse(ct, body, bl, false, seed, fail_at, &b);
        /* Where the body is cut does not change what it means. */
        if (ra == 0 || rb == 0) {
                if (ra != rb)
                        fprintf(stderr, "whole: %d, in pieces (seed %u): %d\n", ra, seed, rb);
                CHECK(ra == rb);
                CHECK(a.log.len == b.log.len &&
                      (!a.log.len || memcmp(a.log.p, b.log.p, a.log.len) == 0));
        }
        free(a.log.p);
        free(b.log.p);
}

/* Bytes on stderr, escaped: what a failed check was about. */
static void dump(const char *what, const char *p, size_t n)
{
        fprintf(stderr, "%s (%zu bytes): \"", what, n);
        for (size_t i = 0; i < n && i < 4096; i++) {
                unsigned char c = (unsigned char)p[i];
                if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
                        fputc(c, stderr);
                else
                        fprintf(stderr, "\\x%02x", c);
        }
        fprintf(stderr, "\"%s\n", n > 4096 ? "..." : "");
}

/* A parameter value as Go's mime/multipart writer quotes it. */
static void quoted(struct log *l, const char *s, size_t n)
{
        log_put(l, "\"", 1);
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '"' || s[i] == '\\')
                        log_put(l, "\\", 1);
                log_put(l, &s[i], 1);
        }
        log_put(l, "\"", 1);
}

/* Takes a field of the input up to a 0xff byte (or `max` bytes). */
static size_t field(const uint8_t **d, size_t *n, size_t max, const uint8_t **out)
{
        size_t i = 0;
        while (i < *n && i < max && (*d)[i] != 0xff)
                i++;
        *out = *d;
        size_t used = i < *n && (*d)[i] == 0xff ? i + 1 : i;
        *d += used;
        *n -= used;
        return i;
}

static void fuzz_multipart_roundtrip(const uint8_t *d, size_t n)
{
        static const char bchars[] =
            "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
            "'()+_,-./:=? ";
        if (n < 3)
                return;
        uint8_t seed = d[0], flags = d[1];
        size_t blen = 1 + d[2] % MP_BOUNDARY_MAX;
        d += 3;
        n -= 3;
        if (n < blen)
                return;
        char boundary[MP_BOUNDARY_MAX + 1];
        for (size_t i = 0; i < blen; i++)
                boundary[i] = bchars[d[i] % (sizeof(bchars) - 1)];
        if (boundary[blen - 1] == ' ')
                boundary[blen - 1] = '_'; /* RFC 2046: not a space last */
        boundary[blen] = '\0';
        d += blen;
        n -= blen;
        char delim[MP_BOUNDARY_MAX + 8];
        size_t dl = (size_t)snprintf(delim, sizeof(delim), "\r\n--%s", boundary);

        char ct[200];
        bool needs_quotes = strpbrk(boundary, "()<>@,;:\\\"/[]?= ") != NULL;
        snprintf(ct, sizeof(ct),
                 (flags & 1) || needs_quotes ? "%s; boundary=\"%s\"%s" : "%s; boundary=%s%s",
                 flags & 2 ? "multipart/form-data" : "Multipart/Form-Data", boundary,
                 flags & 4 ? "; charset=utf-8" : "");

        struct log body = {0}, want = {0};
        if (flags & 8)
                log_put(&body, "a preamble\r\n", 12);
        unsigned parts = 0;
        while (n && parts < 16) {
                const uint8_t *name, *fname, *data;
                size_t nl = field(&d, &n, 200, &name);
                size_t fl = field(&d, &n, 300, &fname);
                size_t dlen = field(&d, &n, 8192, &data);
                /* header values: no CR, LF or NUL; data: no delimiter */
                if (memchr(name, '\r', nl) || memchr(name, '\n', nl) || memchr(name, 0, nl) ||
                    memchr(fname, '\r', fl) || memchr(fname, '\n', fl) || memchr(fname, 0, fl) ||
                    memmem(data, dlen, delim, dl))
                        goto out;
                log_put(&body, "--", 2);
                log_put(&body, boundary, blen);
                log_put(&body, "\r\n", 2);
                if (parts % 2 == 1 && (flags & 16))
                        log_put(&body, "Content-Type: text/plain\r\n", 26);
                /* SDKs write name first; others may not */
                log_put(&body, "Content-Disposition: form-data", 30);
                bool filename_first = (flags & 32) && parts % 2;
                for (int k = 0; k < 2; k++) {
                        bool is_name = (k == 0) != filename_first;
                        if (is_name) {
                                log_put(&body, "; name=", 7);
                                quoted(&body, (const char *)name, nl);
                        } else if (fl) {
                                log_put(&body, "; filename=", 11);
                                quoted(&body, (const char *)fname, fl);
                        }
                }
                log_put(&body, "\r\n", 2);
                if (!(flags & 16))
                        log_put(&body, "Content-Type: application/octet-stream\r\n", 40);
                log_put(&body, "\r\n", 2);
                log_put(&body, data, dlen);
                log_put(&body, "\r\n", 2);
                log_put(&want, "B", 1);
                log_put(&want, name, nl);
                log_put(&want, "", 1);
                log_put(&want, fname, fl);
                log_put(&want, "", 1);
                if (dlen) {
                        log_put(&want, "D", 1);
                        log_put(&want, data, dlen);
                }
                log_put(&want, "E", 1);
                parts++;
        }
        if (!parts)
                goto out;
        log_put(&body, "--", 2);
        log_put(&body, boundary, blen);
        log_put(&body, "--\r\n", 4);
        if (flags & 64)
                log_put(&body, "an epilogue\r\n", 13);
        struct trace t;
        int rc = parse(ct, (const uint8_t *)body.p, body.len, (flags & 128) != 0, seed, -1, &t);
        if (rc != 0 || t.log.len != want.len || memcmp(t.log.p, want.p, want.len) != 0) {
                fprintf(stderr, "round trip: rc %d, %u parts sent, %u read; Content-Type %s\n", rc,
                        parts, t.begins, ct);
                dump("body", body.p, body.len);
                dump("want", want.p, want.len);
                dump("read", t.log.p, t.log.len);
                CHECK(!"a well-formed body parses back to its parts");
        }
        free(t.log.p);
out:
        free(body.p);
        free(want.p);
}

/* --- 2: Connect ---------------------------------------------------------------- */

static void fuzz_connect(const uint8_t *d, size_t n)
{
        char why[256];
        why[0] = '\0';
        json_t *j = connect_unwrap((const char *)d, n, why, sizeof(why));
        if (j) {
                CHECK(json_is_object(j));
                CHECK(n >= 5 && d[0] == 0);
                CHECK(((size_t)d[1] << 24 | (size_t)d[2] << 16 | (size_t)d[3] << 8 | d[4]) ==
                      n - 5);
                json_decref(j);
        } else {
                CHECK(why[0]);
        }
        why[0] = '\0';
        j = connect_unary((const char *)d, n, why, sizeof(why));
        if (!j) {
                CHECK(why[0]);
                return;
        }
        CHECK(json_is_object(j));
        /* What connect_put frames, connect_unwrap reads back. */
        struct hstream st = {0};
        json_t *copy = json_deep_copy(j);
        CHECK(copy);
        if (connect_put(&st, 0, copy) == 0) {
                CHECK(st.len >= 5 && (unsigned char)st.buf[0] == 0);
                json_t *back = connect_unwrap(st.buf, st.len, why, sizeof(why));
                if (!back)
                        fprintf(stderr, "connect_unwrap of connect_put's envelope: %s\n", why);
                CHECK(back && json_equal(back, j));
                json_decref(back);
        }
        free(st.buf);
        json_decref(j);
}

/* --- 3: JSON bodies ------------------------------------------------------------ */

static void walk_strings(json_t *v)
{
        const char *k;
        json_t *x;
        if (!json_is_object(v))
                return;
        json_object_foreach(v, k, x)
        {
                CHECK(k);
                if (json_is_string(x))
                        CHECK(strlen(json_string_value(x)) <= json_string_length(x));
        }
}

static void fuzz_json(const uint8_t *d, size_t n)
{
        json_error_t e;
        json_t *j = json_loadb((const char *)d, n, JSON_REJECT_DUPLICATES, &e);
        if (!j) {
                CHECK(strnlen(e.text, sizeof(e.text)) < sizeof(e.text));
                return;
        }
        /* the members the control plane, /execute, /contexts and envd read */
        static const char *const keys[] = {
            "templateID", "timeout",     "metadata", "envVars",  "network", "duration",
            "code",       "context_id",  "language", "env_vars", "cwd",     "path",
            "source",     "destination", "depth",    "pid",      "process", "input"};
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                json_t *v = json_object_get(j, keys[i]);
                if (json_is_number(v)) {
                        volatile double x = json_number_value(v);
                        (void)x;
                }
                walk_strings(v);
        }
        json_t *net = json_object_get(j, "network");
        (void)json_array_size(json_object_get(net, "allowOut"));
        /* as replies write JSON back (reply_json: compact), and read again */
        char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
        CHECK(text);
        json_t *back = json_loads(text, JSON_DECODE_ANY, &e);
        CHECK(back && json_equal(j, back));
        json_decref(back);
        free(text);
        json_decref(j);
}

/* --- 4: Basic user header and base64 ------------------------------------------- */

static bool user_char(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.';
}

static void check_user(const char *hdr, size_t outlen)
{
        char out[64];
        memset(out, 'X', sizeof(out));
        int rc = connect_user(hdr, out, outlen);
        CHECK(rc == 0 || rc == -EINVAL);
        CHECK(memchr(out, '\0', outlen) != NULL); /* always a string, within outlen */
        CHECK(out[outlen] == 'X');                /* and nothing past it */
        if (rc == 0) {
                size_t l = strlen(out);
                CHECK(l > 0 && l <= 32);
                for (size_t i = 0; i < l; i++)
                        CHECK(user_char((unsigned char)out[i]));
        }
}

static void fuzz_auth(const uint8_t *d, size_t n)
{
        if (n > 4096)
                return;
        /* the header as it arrives (a C string) */
        char *hdr = malloc(n + 1);
        CHECK(hdr);
        memcpy(hdr, d, n);
        hdr[n] = '\0';
        check_user(hdr, 40);
        check_user(hdr, 1 + (n ? d[0] % 40 : 0));
        check_user(NULL, 40);

        /* base64_decode: what it accepts, base64_encode writes back the same */
        size_t ol = 0;
        unsigned char *raw = base64_decode(hdr, n, &ol);
        if (raw) {
                CHECK(ol <= n * 3 / 4 + 1);
                char *enc = base64_encode(raw, ol);
                CHECK(enc);
                size_t ol2 = 0;
                unsigned char *raw2 = base64_decode(enc, strlen(enc), &ol2);
                CHECK(raw2 && ol2 == ol && memcmp(raw, raw2, ol) == 0);
                free(raw2);
                free(enc);
                free(raw);
        }
        /* and every byte string survives encode then decode */
        char *enc = base64_encode(d, n);
        CHECK(enc && strlen(enc) == 4 * ((n + 2) / 3));
        raw = base64_decode(enc, strlen(enc), &ol);
        CHECK(raw && ol == n && memcmp(raw, d, n) == 0);
        free(raw);

        /* A header of "<user>:" names that user, or is refused. */
        size_t ul = n < 40 ? n : 40;
        char cred[48];
        memcpy(cred, d, ul);
        cred[ul] = ':';
        char *b = base64_encode((const unsigned char *)cred, ul + 1);
        CHECK(b);
        char header[128];
        snprintf(header, sizeof(header), "%s %s", (n && (d[0] & 1)) ? "basic" : "Basic", b);
        free(b);
        char out[40];
        int rc = connect_user(header, out, sizeof(out));
        size_t name_len = (size_t)((char *)memchr(cred, ':', ul + 1) - cred);
        bool valid = name_len <= 32;
        for (size_t i = 0; i < name_len; i++)
                valid &= user_char((unsigned char)cred[i]);
        if (name_len == 0)
                CHECK(rc == 0 && strcmp(out, "user") == 0);
        else if (valid)
                CHECK(rc == 0 && strlen(out) == name_len && memcmp(out, cred, name_len) == 0);
        else
                CHECK(rc == -EINVAL);
        free(enc);
        free(hdr);
}

/* --- 5: signed URLs ------------------------------------------------------------- */

static void want_signature(const char *path, const char *op, const char *user, const char *token,
                           const char *exp, char *out)
{
        struct sha256_ctx c;
        uint8_t dig[SHA256_DIGEST_SIZE];
        sha256_init(&c);
        sha256_update(&c, strlen(path), (const uint8_t *)path);
        sha256_update(&c, 1, (const uint8_t *)":");
        sha256_update(&c, strlen(op), (const uint8_t *)op);
        sha256_update(&c, 1, (const uint8_t *)":");
        sha256_update(&c, strlen(user), (const uint8_t *)user);
        sha256_update(&c, 1, (const uint8_t *)":");
        sha256_update(&c, strlen(token), (const uint8_t *)token);
        if (exp) {
                sha256_update(&c, 1, (const uint8_t *)":");
                sha256_update(&c, strlen(exp), (const uint8_t *)exp);
        }
        sha256_digest(&c, sizeof(dig), dig);
        static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        char *o = out + 3;
        memcpy(out, "v1_", 3);
        uint32_t acc = 0;
        int bits = 0;
        for (size_t i = 0; i < sizeof(dig); i++) {
                acc = acc << 8 | dig[i];
                bits += 8;
                while (bits >= 6) {
                        bits -= 6;
                        *o++ = a[(acc >> bits) & 63];
                }
        }
        if (bits)
                *o++ = a[(acc << (6 - bits)) & 63];
        *o = '\0';
}

static void fuzz_sign(const uint8_t *d, size_t n)
{
        /* path \n user \n signature \n expiration; byte flags first */
        if (n < 1 || n > 16384)
                return;
        uint8_t flags = d[0];
        char *s = malloc(n);
        CHECK(s);
        memcpy(s, d + 1, n - 1);
        s[n - 1] = '\0';
        char *f[4] = {s, NULL, NULL, NULL};
        for (int i = 1; i < 4 && f[i - 1]; i++) {
                char *nl = strchr(f[i - 1], '\n');
                if (nl) {
                        *nl = '\0';
                        f[i] = nl + 1;
                }
        }
        const char *path = f[0], *user = f[1], *sig = f[2], *exp = f[3];
        const char *op = flags & 1 ? "write" : "read";
        const struct sandbox *sb = &fake[(flags >> 1) & 1];
        char want[64];
        if (flags & 4) {
                /* the signature it should have (made so half the time) */
                want_signature(path, op, user ? user : "", sb->token, exp, want);
                sig = want;
        }
        char why[256] = "";
        int rc = serve_check_signature(sb, path, op, user, sig, exp, why, sizeof(why));
        CHECK(rc == 0 || why[0]);
        if (rc == 0) {
                char w[64];
                CHECK(sig && path);
                want_signature(path, op, user ? user : "", sb->token, exp, w);
                CHECK(strcmp(sig, w) == 0);
                if (exp) {
                        char *end;
                        long long e = strtoll(exp, &end, 10);
                        CHECK(end != exp && !*end && e >= (long long)time(NULL));
                }
        } else if ((flags & 4) && !exp && strlen(path) + strlen(user ? user : "") < 8000) {
                CHECK(!"a right signature without expiration is accepted");
        }
        /* the sandbox a signature without an id finds is the one that made it */
        struct sandbox *found = serve_find_signed(path, op, user, sig, exp, why, sizeof(why));
        CHECK(found == NULL || (rc == 0) == (found == sb));
        free(s);
}

/* --- 6: times in queries ---------------------------------------------------------- */

static void fuzz_time(const uint8_t *d, size_t n)
{
        if (n > 256)
                return;
        char *s = malloc(n + 1); /* exactly: a read past the query value is caught */
        CHECK(s);
        memcpy(s, d, n);
        s[n] = '\0';
        int64_t ms = 0;
        if (parse_iso_ms(s, &ms) == 0) {
                /* what iso_time writes of it reads back the same */
                if (ms >= 0 && ms < 253402300800000LL) { /* years 1970 to 9999 */
                        char t[40];
                        int64_t back = -1;
                        iso_time(t, sizeof(t), ms);
                        CHECK(parse_iso_ms(t, &back) == 0 && back == ms);
                }
        }
        free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        const uint8_t *d = data + 1;
        size_t n = size - 1;
        switch (data[0] % 7) {
        case 0:
                fuzz_multipart(d, n);
                break;
        case 1:
                fuzz_multipart_roundtrip(d, n);
                break;
        case 2:
                fuzz_connect(d, n);
                break;
        case 3:
                fuzz_json(d, n);
                break;
        case 4:
                fuzz_auth(d, n);
                break;
        case 5:
                fuzz_sign(d, n);
                break;
        case 6:
                fuzz_time(d, n);
                break;
        }
        return 0;
}
