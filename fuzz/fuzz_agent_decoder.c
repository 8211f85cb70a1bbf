/*
 * libFuzzer target: what the agent does with bytes from a connection. The
 * stream goes through the frame reader (split at input-chosen points, so
 * every partial-read path is taken), each complete message through
 * cv_body_parse() and the typed accessors the request handlers use, and the
 * decoded tree is re-encoded as PING echoes its payload. Each message also
 * goes through PORT_DATA's in-place decoder (port_data.h), which must read
 * whatever it accepts exactly as the general decoder does.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cbor_util.h"
#include "port_data.h"
#include "reader.h"
#include "writer.h"

static const char *const keys[] = {"protocol", "client", "code",    "context",   "cwd",
                                   "language", "id",     "payload", "timeout_ms"};

static void walk_request(const cbor_item_t *map)
{
        const char *s;
        const uint8_t *bytes;
        size_t len;
        uint64_t u;
        int64_t i;
        bool flag;
        cbor_item_t *sub;
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
                (void)cv_map_get_str(map, keys[k], &s, &len);
                (void)cv_map_get_uint(map, keys[k], &u);
                (void)cv_map_get_int(map, keys[k], &i);
                (void)cv_map_get_bool(map, keys[k], &flag);
                (void)cv_map_get_bytes(map, keys[k], &bytes, &len);
        }
        if (cv_map_get_map(map, "envs", &sub) == 0) {
                struct cbor_pair *pairs = cbor_map_handle(sub);
                for (size_t n = 0; n < cbor_map_size(sub); n++) {
                        (void)cv_item_str(pairs[n].key, &s, &len);
                        (void)cv_item_str(pairs[n].value, &s, &len);
                }
        }
        char *dup = NULL;
        if (cv_map_dup_str(map, "code", &dup) == 0)
                free(dup);
        cbor_item_t *payload = cv_map_get(map, "payload");
        if (payload) {
                struct cv_buf out;
                cv_buf_init(&out);
                size_t mark;
                if (cv_out_begin(&out, &mark) == 0) {
                        cv_enc_map(&out, 1);
                        cv_enc_cstr(&out, "payload");
                        cv_enc_item(&out, payload);
                        (void)cv_out_end(&out, mark, 0x8000, 1);
                }
                cv_buf_free(&out);
        }
}

/* The in-place reading of a body it accepted, against libcbor's (agent/ports.c). */
static void check_port_data(const uint8_t *body, size_t len)
{
        struct cv_port_data pd;
        if (cv_port_data_decode(body, len, &pd) < 0)
                return;
        if (pd.data && (pd.data < body || pd.data + pd.len > body + len))
                abort();
        cbor_item_t *map;
        if (cv_body_parse(body, len, &map) < 0)
                abort();
        const uint8_t *data = NULL;
        size_t n = 0;
        uint64_t ack = 0;
        bool eof = false;
        int r1 = cv_map_get_bytes(map, "data", &data, &n), r2 = cv_map_get_uint(map, "ack", &ack),
            r3 = cv_map_get_bool(map, "eof", &eof);
        if ((r1 != 0 && r1 != -ENOENT) || (r2 != 0 && r2 != -ENOENT) ||
            (r3 != 0 && r3 != -ENOENT) || (r1 == 0) != (pd.data != NULL) || n != pd.len ||
            (n && memcmp(data, pd.data, n) != 0) || ack != pd.ack || eof != pd.eof)
                abort();
        cbor_decref(&map);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        /* First byte: the size of the pieces the stream arrives in. */
        size_t piece = (size_t)data[0] + 1;
        data++;
        size--;
        struct cv_reader r;
        cv_reader_init(&r, 1u << 20);
        size_t off = 0;
        while (off < size) {
                size_t n = size - off < piece ? size - off : piece;
                size_t used = 0;
                struct cv_msg msg;
                int rc = cv_reader_feed(&r, data + off, n, &used, &msg);
                off += used;
                if (rc < 0)
                        break;
                if (rc == CV_READ_MSG) {
                        check_port_data(msg.body, msg.len);
                        cbor_item_t *body;
                        if (cv_body_parse(msg.body, msg.len, &body) == 0) {
                                walk_request(body);
                                cbor_decref(&body);
                        }
                } else if (used == 0) {
                        break;
                }
        }
        (void)cv_reader_mid_message(&r);
        cv_reader_free(&r);
        return 0;
}
