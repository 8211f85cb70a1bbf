/* Unit tests of protocol/port_data.c: PORT_DATA decoded in place, and declined
 * for every other shape, which the general decoder (libcbor) then takes. */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "cbor_util.h"
#include "port_data.h"

#include "check.h"

/* The general decoder's reading of the same body, as agent/ports.c does it. */
static int general(const uint8_t *body, size_t len, struct cv_port_data *out)
{
        *out = (struct cv_port_data){0};
        cbor_item_t *map;
        if (cv_body_parse(body, len, &map) < 0)
                return -EINVAL;
        int r1 = cv_map_get_bytes(map, "data", &out->data, &out->len),
            r2 = cv_map_get_uint(map, "ack", &out->ack),
            r3 = cv_map_get_bool(map, "eof", &out->eof);
        int rc = (r1 < 0 && r1 != -ENOENT) || (r2 < 0 && r2 != -ENOENT) || (r3 < 0 && r3 != -ENOENT)
                     ? -EINVAL
                     : 0;
        /* `data` borrows from the tree: compare it before the tree goes. */
        static uint8_t copy[1 << 17];
        if (rc == 0 && out->data && out->len <= sizeof(copy)) {
                memcpy(copy, out->data, out->len);
                out->data = copy;
        }
        cbor_decref(&map);
        return rc;
}

static bool same(const struct cv_port_data *a, const struct cv_port_data *b)
{
        return (a->data == NULL) == (b->data == NULL) && a->len == b->len &&
               (a->len == 0 || memcmp(a->data, b->data, a->len) == 0) && a->eof == b->eof &&
               a->ack == b->ack;
}

/* Every combination of the three keys as serve and the agent encode them (cv_enc_*), with
 * data lengths on each side of CBOR's length-size boundaries. */
static void test_encoder_shapes(void)
{
        static uint8_t data[70000];
        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (uint8_t)(i * 13);
        static const size_t lens[] = {0, 1, 23, 24, 255, 256, 65535, 65536, 70000};
        static const uint64_t acks[] = {1, 23, 24, 65536, 4294967296ull};
        for (unsigned keys = 0; keys < 8; keys++)
                for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
                        for (size_t ai = 0; ai < sizeof(acks) / sizeof(acks[0]); ai++) {
                                bool has_data = keys & 1, eof = keys & 2, has_ack = keys & 4;
                                struct cv_buf b;
                                cv_buf_init(&b);
                                cv_enc_map(&b, has_data + eof + has_ack);
                                if (has_data) {
                                        cv_enc_cstr(&b, "data");
                                        cv_enc_bytes(&b, data, lens[li]);
                                }
                                if (has_ack) {
                                        cv_enc_cstr(&b, "ack");
                                        cv_enc_uint(&b, acks[ai]);
                                }
                                if (eof) {
                                        cv_enc_cstr(&b, "eof");
                                        cv_enc_bool(&b, true);
                                }
                                struct cv_port_data fast, slow;
                                CHECK(b.err == 0);
                                CHECK(cv_port_data_decode(cv_buf_head(&b), cv_buf_pending(&b),
                                                          &fast) == 0);
                                CHECK(general(cv_buf_head(&b), cv_buf_pending(&b), &slow) == 0);
                                CHECK(same(&fast, &slow));
                                CHECK(fast.len == (has_data ? lens[li] : 0) && fast.eof == eof &&
                                      fast.ack == (has_ack ? acks[ai] : 0));
                                /* Borrowed from the body, not copied. */
                                const uint8_t *head = cv_buf_head(&b);
                                CHECK(!has_data ||
                                      (fast.data > head &&
                                       fast.data + fast.len <= head + cv_buf_pending(&b)));
                                cv_buf_free(&b);
                        }
        /* The empty body is the empty map. */
        struct cv_port_data pd;
        CHECK(cv_port_data_decode((const uint8_t *)"", 0, &pd) == 0 && pd.data == NULL &&
              pd.len == 0 && !pd.eof && pd.ack == 0);
        CHECK(cv_port_data_decode((const uint8_t *)"\xa0", 1, &pd) == 0 && pd.data == NULL);
        /* eof false, data empty. */
        CHECK(cv_port_data_decode((const uint8_t *)"\xa2\x63"
                                                   "eof\xf4\x64"
                                                   "data\x40",
                                  12, &pd) == 0 &&
              !pd.eof && pd.data && pd.len == 0);
}

/* Shapes the in-place decoder leaves to the general one; where that one takes them
 * too, it means what the body says (the agent then answers the same as before). */
static void test_declined(void)
{
        static const struct {
                const char *body;
                size_t len;
                bool general_ok;
        } cases[] = {
            {"\xa1\x64"
             "data\x43xy",
             9, false}, /* bytes cut short */
            {"\xa1\x64"
             "data\x5a\xff\xff\xff\xff",
             10, false}, /* a length past the end */
            {"\xa1\x64"
             "data\x5f\x41x\xff",
             10, false}, /* indefinite bytes */
            {"\xa1\x64"
             "data\x61x",
             8, false}, /* text, not bytes */
            {"\xa1\x63"
             "ack\x20",
             6, false}, /* a negative ack */
            {"\xa1\x63"
             "eof\x01",
             6, false}, /* eof not a boolean */
            {"\xa1\x63"
             "eof\xf6",
             6, false}, /* null */
            {"\xa2\x63"
             "ack\x01\x63"
             "ack\x02",
             11, true}, /* a repeated key */
            {"\xa1\x63"
             "xyz\x01",
             6, true}, /* another key */
            {"\xa2\x63"
             "ack\x01\x01\x01",
             8, true}, /* a key that is not text */
            {"\xa1\x63"
             "ack\x01\x00",
             7, false}, /* a byte after the map */
            {"\xa4\x63"
             "ack\x01\x63"
             "eof\xf5\x64"
             "data\x40\x61z\x00",
             20, true}, /* four pairs */
            {"\xbf\x63"
             "ack\x01\xff",
             7, true},          /* an indefinite map */
            {"\x80", 1, false}, /* not a map */
            {"\xa1", 1, false}, /* a map cut short */
            {"\xa1\x64"
             "dat",
             5, false}, /* a key cut short */
            {"\xa1\x63"
             "ack\x1b\x01",
             6, false}, /* an integer cut short */
            {"\xa1\x63"
             "ack\x1c",
             5, false}, /* a reserved argument size */
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct cv_port_data pd, slow;
                const uint8_t *b = (const uint8_t *)cases[i].body;
                int rc = cv_port_data_decode(b, cases[i].len, &pd);
                CHECK(rc == -EINVAL);
                if (rc != -EINVAL)
                        fprintf(stderr, "case %zu accepted\n", i);
                CHECK((general(b, cases[i].len, &slow) == 0) == cases[i].general_ok);
        }
}

int main(void)
{
        test_encoder_shapes();
        test_declined();
        return check_report("test_protocol_port_data");
}
