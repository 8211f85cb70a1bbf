/* Unit tests of protocol/cbor_util: encoders, body parsing, typed lookups, hostile input. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cbor_util.h"

#include "check.h"

static int parse(const void *p, size_t n, cbor_item_t **out)
{
        return cv_body_parse(p, n, out);
}

static void test_encode_known_bytes(void)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 8);
        cv_enc_cstr(&b, "a");
        cv_enc_uint(&b, 500);
        cv_enc_cstr(&b, "b");
        cv_enc_int(&b, -1);
        cv_enc_cstr(&b, "c");
        cv_enc_bool(&b, true);
        cv_enc_cstr(&b, "d");
        cv_enc_null(&b);
        cv_enc_cstr(&b, "e");
        cv_enc_bytes(&b, "\x01\x02", 2);
        cv_enc_cstr(&b, "f");
        cv_enc_array(&b, 1);
        cv_enc_int(&b, INT64_MIN);
        cv_enc_cstr(&b, "g");
        cv_enc_double(&b, 1.5);
        cv_enc_cstr(&b, "h");
        cv_enc_text(&b, "hé", 3);
        CHECK(b.err == 0);
        static const uint8_t want[] = {
            0xa8, 0x61, 'a',  0x19, 0x01, 0xf4, 0x61, 'b',  0x20, 0x61, 'c',  0xf5, 0x61,
            'd',  0xf6, 0x61, 'e',  0x42, 0x01, 0x02, 0x61, 'f',  0x81, 0x3b, 0x7f, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x61, 'g',  0xfb, 0x3f, 0xf8, 0,    0,
            0,    0,    0,    0,    0x61, 'h',  0x63, 'h',  0xc3, 0xa9,
        };
        CHECK(cv_buf_pending(&b) == sizeof(want));
        CHECK(memcmp(cv_buf_head(&b), want, sizeof(want)) == 0);

        cbor_item_t *m;
        CHECK(parse(cv_buf_head(&b), cv_buf_pending(&b), &m) == 0);
        uint64_t u;
        int64_t i;
        bool flag;
        const char *s;
        size_t n;
        const uint8_t *bytes;
        cbor_item_t *arr;
        CHECK(cv_map_get_uint(m, "a", &u) == 0 && u == 500);
        CHECK(cv_map_get_int(m, "a", &i) == 0 && i == 500);
        CHECK(cv_map_get_int(m, "b", &i) == 0 && i == -1);
        CHECK(cv_map_get_uint(m, "b", &u) == -EINVAL);
        CHECK(cv_map_get_bool(m, "c", &flag) == 0 && flag);
        CHECK(cv_map_get_bool(m, "d", &flag) == -EINVAL);
        CHECK(cv_map_get_bytes(m, "e", &bytes, &n) == 0 && n == 2 && bytes[1] == 2);
        CHECK(cv_map_get_str(m, "e", &s, &n) == -EINVAL);
        CHECK(cv_map_get_array(m, "f", &arr) == 0 && cbor_array_size(arr) == 1);
        CHECK(cv_map_get_map(m, "f", &arr) == -EINVAL);
        CHECK(cv_map_get_str(m, "h", &s, &n) == 0 && n == 3 && memcmp(s, "hé", 3) == 0);
        CHECK(cv_map_get_str(m, "zz", &s, &n) == -ENOENT);
        CHECK(cv_map_get_uint(m, "zz", &u) == -ENOENT);
        char *dup = NULL;
        CHECK(cv_map_dup_str(m, "h", &dup) == 0 && strcmp(dup, "hé") == 0);
        free(dup);

        /* Re-encoding a decoded item gives the same bytes. */
        struct cv_buf b2;
        cv_buf_init(&b2);
        CHECK(cv_enc_item(&b2, m) == 0);
        CHECK(cv_buf_pending(&b2) == sizeof(want) &&
              memcmp(cv_buf_head(&b2), want, sizeof(want)) == 0);
        cv_buf_free(&b2);
        cbor_decref(&m);
        cv_buf_free(&b);
}

static void test_parse_rejects(void)
{
        cbor_item_t *m = NULL;
        /* Empty body = empty map. */
        CHECK(parse("", 0, &m) == 0 && cbor_isa_map(m) && cbor_map_size(m) == 0);
        cbor_decref(&m);
        CHECK(parse("\x01", 1, &m) == -EPROTOTYPE && m == NULL);                /* not a map */
        CHECK(parse("\x80", 1, &m) == -EPROTOTYPE);                             /* array */
        CHECK(parse("\xa1\x61", 2, &m) == -EINVAL);                             /* truncated */
        CHECK(parse("\xa0\xa0", 2, &m) == -EINVAL);                             /* trailing item */
        CHECK(parse("\xa0\x00", 2, &m) == -EINVAL);                             /* trailing byte */
        CHECK(parse("\xff", 1, &m) == -EINVAL);                                 /* lone break */
        CHECK(parse("\x1c", 1, &m) == -EINVAL);                                 /* reserved */
        CHECK(parse("\xbf\x61x\xff", 4, &m) == -EINVAL);                        /* odd indef map */
        CHECK(parse("\xbf\x61x\x01\xff", 5, &m) == 0 && cbor_map_size(m) == 1); /* indef map ok */
        cbor_decref(&m);
        /* A map claiming 2^32 pairs in 9 bytes: refused before libcbor allocates. */
        CHECK(parse("\xbb\x00\x00\x00\x01\x00\x00\x00\x00", 9, &m) == -EINVAL);
        CHECK(parse("\xa1\x61x\x9a\xff\xff\xff\xff", 8, &m) == -EINVAL);
        /* A string claiming more bytes than there are. */
        CHECK(parse("\xa1\x61x\x7a\x00\x10\x00\x00", 8, &m) == -EINVAL);
}

static void test_depth_and_items(void)
{
        /* {"x": [[[...]]]} nested far too deep must fail cleanly (no stack overflow). */
        size_t depth = 200000;
        uint8_t *p = malloc(depth + 4);
        p[0] = 0xa1, p[1] = 0x61, p[2] = 'x';
        memset(p + 3, 0x81, depth);
        p[3 + depth] = 0x00;
        cbor_item_t *m = NULL;
        CHECK(parse(p, depth + 4, &m) == -EINVAL);
        /* Within the limit is fine: 1 map level + 62 arrays. */
        p[3 + 62] = 0x00;
        CHECK(parse(p, 3 + 62 + 1, &m) == 0);
        if (m)
                cbor_decref(&m);
        memset(p + 3, 0x81, depth);
        p[3 + 63] = 0x00;
        CHECK(parse(p, 3 + 63 + 1, &m) == 0);
        if (m)
                cbor_decref(&m);
        memset(p + 3, 0x81, depth);
        p[3 + 64] = 0x00;
        CHECK(parse(p, 3 + 64 + 1, &m) == -EINVAL);
        free(p);

        /* Too many items: a 2M-element array of zeros. */
        size_t n = 2u << 20;
        p = malloc(n + 8);
        uint8_t hdr[] = {
            0xa1,      0x61, 'x', 0x9a, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8),
            (uint8_t)n};
        memcpy(p, hdr, sizeof(hdr));
        memset(p + sizeof(hdr), 0, n);
        CHECK(parse(p, n + sizeof(hdr), &m) == -EINVAL);
        CHECK(cv_body_parse_limited(p, n + sizeof(hdr), 8, n + 10, &m) == 0);
        if (m)
                cbor_decref(&m);
        free(p);
}

static void test_strings(void)
{
        CHECK(cv_utf8_valid((const uint8_t *)"", 0));
        CHECK(cv_utf8_valid((const uint8_t *)"\xf0\x9f\x98\x80", 4));
        CHECK(!cv_utf8_valid((const uint8_t *)"\xf0\x9f\x98", 3));     /* cut */
        CHECK(!cv_utf8_valid((const uint8_t *)"\xc0\xaf", 2));         /* overlong */
        CHECK(!cv_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));     /* surrogate */
        CHECK(!cv_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
        CHECK(!cv_utf8_valid((const uint8_t *)"\xff", 1));

        cbor_item_t *m;
        const char *s;
        size_t n;
        /* {"t": <invalid UTF-8 text>}: libcbor refuses it while loading... */
        CHECK(parse("\xa1\x61t\x62\xc3\x28", 6, &m) == -EINVAL);
        /* ...and the accessor checks items built any other way. */
        cbor_item_t *bad = cbor_build_stringn("\xc3\x28", 2);
        CHECK(cv_item_str(bad, &s, &n) == -EINVAL);
        cbor_decref(&bad);
        /* Empty text, and text with a NUL (fine as borrowed, refused by dup). */
        CHECK(parse("\xa2\x61t\x60\x61u\x63\x61\x00\x62", 10, &m) == 0);
        CHECK(cv_map_get_str(m, "t", &s, &n) == 0 && n == 0 && s != NULL);
        CHECK(cv_map_get_str(m, "u", &s, &n) == 0 && n == 3);
        char *dup = NULL;
        CHECK(cv_map_dup_str(m, "u", &dup) == -EINVAL && dup == NULL);
        CHECK(cv_map_dup_str(m, "t", &dup) == 0 && dup[0] == 0);
        free(dup);
        cbor_decref(&m);
        /* Non-text keys are skipped, the first matching text key wins. */
        CHECK(parse("\xa2\x01\x02\x61k\x03", 6, &m) == 0);
        uint64_t u;
        CHECK(cv_map_get_uint(m, "k", &u) == 0 && u == 3);
        cbor_decref(&m);
        /* Indefinite text strings are refused by the accessors (never sent by our clients). */
        CHECK(parse("\xa1\x61t\x7f\x61\x61\xff", 7, &m) == 0);
        CHECK(cv_map_get_str(m, "t", &s, &n) == -EINVAL);
        cbor_decref(&m);
}

int main(void)
{
        test_encode_known_bytes();
        test_parse_rejects();
        test_depth_and_items();
        test_strings();
        return check_report("test_protocol_cbor");
}
