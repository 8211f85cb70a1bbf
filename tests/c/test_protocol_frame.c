/* Unit tests of protocol/: frame header, message reader, writer and output buffer. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "frame.h"
#include "msgtypes.h"
#include "reader.h"
#include "writer.h"

#include "check.h"

static void test_header_round_trip(void)
{
        struct cv_frame_hdr h = {
            .len = CV_MAX_BODY, .type = 0x8013, .flags = CV_FLAG_MORE, .id = 0xdeadbeef};
        uint8_t raw[CV_HDR_SIZE];
        cv_frame_hdr_encode(&h, raw);
        static const uint8_t want[CV_HDR_SIZE] = {0x00, 0x3f, 0xff, 0xf4, 0x80, 0x13,
                                                  0x00, 0x01, 0xde, 0xad, 0xbe, 0xef};
        CHECK(memcmp(raw, want, sizeof(want)) == 0);
        struct cv_frame_hdr back;
        CHECK(cv_frame_hdr_decode(raw, &back) == 0);
        CHECK(back.len == h.len && back.type == h.type && back.flags == h.flags && back.id == h.id);
}

static void test_header_rejects(void)
{
        struct cv_frame_hdr h = {.len = CV_MAX_BODY + 1, .type = 1, .flags = 0, .id = 1};
        uint8_t raw[CV_HDR_SIZE];
        cv_frame_hdr_encode(&h, raw);
        struct cv_frame_hdr back;
        CHECK(cv_frame_hdr_decode(raw, &back) == -EBADMSG);
        CHECK(back.len == CV_MAX_BODY + 1);
        h.len = 0xffffffffu;
        cv_frame_hdr_encode(&h, raw);
        CHECK(cv_frame_hdr_decode(raw, &back) == -EBADMSG);
        for (unsigned bit = 1; bit < 16; bit++) {
                h = (struct cv_frame_hdr){
                    .len = 0, .type = 1, .flags = (uint16_t)(1u << bit), .id = 1};
                cv_frame_hdr_encode(&h, raw);
                CHECK(cv_frame_hdr_decode(raw, &back) == -EBADMSG);
        }
        h = (struct cv_frame_hdr){.len = 0, .type = 1, .flags = CV_FLAG_MORE, .id = 0};
        cv_frame_hdr_encode(&h, raw);
        CHECK(cv_frame_hdr_decode(raw, &back) == 0);
}

/* Feeds all of `data` through a reader; counts messages and checks each is `want`. */
static int feed_all(struct cv_reader *r, const uint8_t *data, size_t len, size_t step,
                    struct cv_msg *last, int *nmsgs)
{
        size_t pos = 0;
        *nmsgs = 0;
        while (pos < len) {
                size_t n = len - pos < step ? len - pos : step;
                size_t off = 0;
                while (off < n) {
                        size_t used;
                        struct cv_msg m;
                        int rc = cv_reader_feed(r, data + pos + off, n - off, &used, &m);
                        if (rc < 0)
                                return rc;
                        off += used;
                        if (rc == CV_READ_MSG) {
                                *last = m;
                                (*nmsgs)++;
                        }
                }
                pos += n;
        }
        return 0;
}

static void test_split_reads_every_boundary(void)
{
        struct cv_buf out;
        cv_buf_init(&out);
        const char body[] = "\xa1\x64text\x65hello";
        CHECK(cv_out_msg(&out, CV_MSG_STREAM, 0, 7, body, sizeof(body) - 1) == 0);
        CHECK(cv_out_msg(&out, CV_MSG_OK, 0, 7, NULL, 0) == 0);
        size_t total = cv_buf_pending(&out);
        CHECK(total == 2 * CV_HDR_SIZE + sizeof(body) - 1);
        for (size_t split = 0; split <= total; split++) {
                struct cv_reader r;
                cv_reader_init(&r, 0);
                int n1 = 0, n2 = 0;
                struct cv_msg m = {0};
                int rc1 = feed_all(&r, cv_buf_head(&out), split, 1, &m, &n1);
                struct cv_msg m2 = m;
                int rc2 = feed_all(&r, cv_buf_head(&out) + split, total - split, total, &m2, &n2);
                CHECK(rc1 == 0 && rc2 == 0);
                CHECK(n1 + n2 == 2);
                CHECK(m2.type == CV_MSG_OK && m2.id == 7 && m2.len == 0);
                cv_reader_free(&r);
        }
        /* One byte at a time, checking the first message's body. */
        struct cv_reader r;
        cv_reader_init(&r, 0);
        const uint8_t *p = cv_buf_head(&out);
        int got = 0;
        for (size_t i = 0; i < total; i++) {
                size_t used;
                struct cv_msg m;
                int rc = cv_reader_feed(&r, p + i, 1, &used, &m);
                CHECK(used == 1);
                if (rc == CV_READ_MSG) {
                        got++;
                        if (got == 1) {
                                CHECK(m.type == CV_MSG_STREAM && m.id == 7);
                                CHECK(m.len == sizeof(body) - 1 &&
                                      memcmp(m.body, body, m.len) == 0);
                                CHECK(i == CV_HDR_SIZE + sizeof(body) - 2);
                        }
                }
        }
        CHECK(got == 2);
        CHECK(!cv_reader_mid_message(&r));
        cv_reader_free(&r);
        cv_buf_free(&out);
}

static uint8_t *pattern(size_t len)
{
        uint8_t *p = malloc(len);
        for (size_t i = 0; i < len; i++)
                p[i] = (uint8_t)(i * 7 + (i >> 13));
        return p;
}

static void test_chunking_and_reassembly(void)
{
        size_t len = 2 * CV_MAX_BODY + 1000;
        uint8_t *body = pattern(len);
        struct cv_buf out;
        cv_buf_init(&out);
        CHECK(cv_out_msg(&out, CV_MSG_EXECUTE, 0, 42, body, len) == 0);
        CHECK(cv_buf_pending(&out) == len + 3 * CV_HDR_SIZE);
        /* Frame headers: MORE, MORE, last. */
        struct cv_frame_hdr h;
        const uint8_t *p = cv_buf_head(&out);
        CHECK(cv_frame_hdr_decode(p, &h) == 0 && h.len == CV_MAX_BODY && h.flags == CV_FLAG_MORE);
        p += CV_HDR_SIZE + CV_MAX_BODY;
        CHECK(cv_frame_hdr_decode(p, &h) == 0 && h.len == CV_MAX_BODY && h.flags == CV_FLAG_MORE);
        p += CV_HDR_SIZE + CV_MAX_BODY;
        CHECK(cv_frame_hdr_decode(p, &h) == 0 && h.len == 1000 && h.flags == 0 && h.id == 42);

        struct cv_reader r;
        cv_reader_init(&r, 0);
        int n = 0;
        struct cv_msg m = {0};
        CHECK(feed_all(&r, cv_buf_head(&out), cv_buf_pending(&out), 65536, &m, &n) == 0);
        CHECK(n == 1 && m.type == CV_MSG_EXECUTE && m.id == 42 && m.len == len);
        CHECK(m.len == len && memcmp(m.body, body, len) == 0);
        cv_reader_free(&r);

        /* The in-place encoder chunks the same way. */
        struct cv_buf out2;
        cv_buf_init(&out2);
        cv_buf_append(&out2, "xyz", 3); /* a consumed prefix must not confuse the mark */
        cv_buf_consume(&out2, 3);
        size_t mark;
        CHECK(cv_out_begin(&out2, &mark) == 0);
        CHECK(cv_buf_append(&out2, body, len) == 0);
        CHECK(cv_out_end(&out2, mark, CV_MSG_EXECUTE, 42) == 0);
        CHECK(cv_buf_pending(&out2) == cv_buf_pending(&out));
        CHECK(memcmp(cv_buf_head(&out2), cv_buf_head(&out), cv_buf_pending(&out)) == 0);
        cv_buf_free(&out2);
        cv_buf_free(&out);
        free(body);
}

static void test_exact_multiple_of_cap(void)
{
        size_t len = CV_MAX_BODY;
        uint8_t *body = pattern(len);
        struct cv_buf out;
        cv_buf_init(&out);
        CHECK(cv_out_msg(&out, CV_MSG_RESULT, 0, 3, body, len) == 0);
        CHECK(cv_buf_pending(&out) == len + CV_HDR_SIZE); /* one frame, no empty tail */
        size_t mark;
        cv_buf_reset(&out);
        CHECK(cv_out_begin(&out, &mark) == 0);
        cv_buf_append(&out, body, len);
        CHECK(cv_out_end(&out, mark, CV_MSG_RESULT, 3) == 0);
        CHECK(cv_buf_pending(&out) == len + CV_HDR_SIZE);
        cv_buf_free(&out);
        free(body);
}

static void test_max_message(void)
{
        /* A 3-frame message against a 2-frame limit: refused at the third header. */
        size_t len = 2 * CV_MAX_BODY + 10;
        uint8_t *body = pattern(len);
        struct cv_buf out;
        cv_buf_init(&out);
        CHECK(cv_out_msg(&out, CV_MSG_EXECUTE, 0, 1, body, len) == 0);
        struct cv_reader r;
        cv_reader_init(&r, 2 * CV_MAX_BODY);
        size_t used;
        struct cv_msg m;
        int rc = cv_reader_feed(&r, cv_buf_head(&out), cv_buf_pending(&out), &used, &m);
        CHECK(rc == -EMSGSIZE);
        CHECK(used == 3 * CV_HDR_SIZE + 2 * CV_MAX_BODY); /* stopped right after the header */
        CHECK(r.bad.len == 10);
        cv_reader_free(&r);

        /* A single frame over a small limit, refused before its body. */
        cv_reader_init(&r, 100);
        cv_buf_reset(&out);
        CHECK(cv_out_msg(&out, CV_MSG_PING, 0, 1, body, 101) == 0);
        rc = cv_reader_feed(&r, cv_buf_head(&out), CV_HDR_SIZE, &used, &m);
        CHECK(rc == -EMSGSIZE && used == CV_HDR_SIZE);
        cv_reader_free(&r);

        /* Exactly the limit is fine. */
        cv_reader_init(&r, 100);
        cv_buf_reset(&out);
        CHECK(cv_out_msg(&out, CV_MSG_PING, 0, 1, body, 100) == 0);
        rc = cv_reader_feed(&r, cv_buf_head(&out), cv_buf_pending(&out), &used, &m);
        CHECK(rc == CV_READ_MSG && m.len == 100);
        cv_reader_free(&r);

        /* The writer refuses bodies over the announced maximum. */
        cv_buf_reset(&out);
        CHECK(cv_out_msg(&out, CV_MSG_PING, 0, 1, body, CV_DEFAULT_MAX_MESSAGE + 1) == -EMSGSIZE);
        CHECK(cv_buf_pending(&out) == 0);
        cv_buf_free(&out);
        free(body);
}

static void test_bad_frames(void)
{
        struct cv_reader r;
        size_t used;
        struct cv_msg m;
        uint8_t raw[CV_HDR_SIZE];
        struct cv_frame_hdr h = {.len = CV_MAX_BODY + 1, .type = 1, .id = 1};
        cv_frame_hdr_encode(&h, raw);
        cv_reader_init(&r, 0);
        CHECK(cv_reader_feed(&r, raw, sizeof(raw), &used, &m) == -EBADMSG);
        cv_reader_free(&r);

        h = (struct cv_frame_hdr){.len = 0, .type = 1, .flags = 0x8000, .id = 1};
        cv_frame_hdr_encode(&h, raw);
        cv_reader_init(&r, 0);
        CHECK(cv_reader_feed(&r, raw, sizeof(raw), &used, &m) == -EBADMSG);
        cv_reader_free(&r);

        /* Another message's frame inside a chunked one. */
        struct cv_buf out;
        cv_buf_init(&out);
        struct cv_frame_hdr h1 = {.len = 1, .type = CV_MSG_EXECUTE, .flags = CV_FLAG_MORE, .id = 5};
        cv_frame_hdr_encode(&h1, raw);
        cv_buf_append(&out, raw, sizeof(raw));
        cv_buf_append(&out, "a", 1);
        CHECK(cv_out_msg(&out, CV_MSG_PING, 0, 6, NULL, 0) == 0);
        cv_reader_init(&r, 0);
        CHECK(cv_reader_feed(&r, cv_buf_head(&out), cv_buf_pending(&out), &used, &m) == -EBADMSG);
        cv_reader_free(&r);
        cv_buf_free(&out);
}

static void test_fd_reader_eof(void)
{
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        CHECK(fcntl(sv[0], F_SETFL, O_NONBLOCK) == 0);
        struct cv_buf out;
        cv_buf_init(&out);
        CHECK(cv_out_msg(&out, CV_MSG_PING, 0, 9, "\xa0", 1) == 0);
        CHECK(cv_out_msg(&out, CV_MSG_PING, 0, 10, "\xa0", 1) == 0);
        CHECK(cv_buf_flush(&out, sv[1]) == 0 && cv_buf_pending(&out) == 0);
        struct cv_reader r;
        cv_reader_init(&r, 0);
        struct cv_msg m;
        CHECK(cv_reader_read(&r, sv[0], &m) == CV_READ_MSG && m.id == 9);
        CHECK(cv_reader_read(&r, sv[0], &m) == CV_READ_MSG && m.id == 10);
        CHECK(cv_reader_read(&r, sv[0], &m) == CV_READ_NEED);
        /* Half a header, then EOF: truncated. */
        CHECK(write(sv[1], "\0\0\0", 3) == 3);
        CHECK(cv_reader_read(&r, sv[0], &m) == CV_READ_NEED);
        CHECK(close(sv[1]) == 0);
        CHECK(cv_reader_read(&r, sv[0], &m) == CV_READ_EOF);
        CHECK(cv_reader_mid_message(&r));
        cv_reader_free(&r);
        CHECK(close(sv[0]) == 0);

        /* Clean EOF after a complete message. */
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        CHECK(cv_out_msg(&out, CV_MSG_PING, 0, 11, NULL, 0) == 0);
        CHECK(cv_buf_flush(&out, sv[1]) == 0);
        CHECK(close(sv[1]) == 0);
        cv_reader_init(&r, 0);
        CHECK(cv_reader_read(&r, sv[0], &m) == CV_READ_MSG && m.id == 11 && m.len == 0);
        CHECK(cv_reader_read(&r, sv[0], &m) == CV_READ_EOF);
        CHECK(!cv_reader_mid_message(&r));
        cv_reader_free(&r);
        CHECK(close(sv[0]) == 0);
        cv_buf_free(&out);
}

/* Large bodies arrive straight in the message (reader.h, CV_READER_DIRECT_MIN), in
 * whatever pieces the socket gives, with frames of other messages behind them; one
 * read per call, or as many as `max_reads` allows. */
static void test_fd_reader_large_bodies(unsigned max_reads)
{
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
        size_t big = 2 * CV_MAX_BODY + 1000; /* three frames: MORE, MORE, last */
        static const size_t lens[] = {2 * CV_MAX_BODY + 1000,   70000, 0, CV_READER_DIRECT_MIN + 1,
                                      CV_READER_DIRECT_MIN - 1, 5};
        size_t nmsgs = sizeof(lens) / sizeof(lens[0]);
        uint8_t *body = pattern(big);
        struct cv_buf out;
        cv_buf_init(&out);
        for (size_t i = 0; i < nmsgs; i++)
                CHECK(cv_out_msg(&out, CV_MSG_PING, 0, (uint32_t)(i + 1), body + i, lens[i]) == 0);
        struct cv_reader r;
        cv_reader_init(&r, 0);
        CHECK(r.max_reads == 1);
        r.max_reads = max_reads;
        size_t got = 0;
        int rounds = 0;
        while (got < nmsgs && rounds++ < 100000) {
                CHECK(cv_buf_flush(&out, sv[1]) == 0);
                struct cv_msg m;
                int rc;
                while ((rc = cv_reader_read(&r, sv[0], &m)) == CV_READ_MSG) {
                        CHECK(got < nmsgs && m.id == got + 1 && m.len == lens[got] &&
                              memcmp(m.body, body + got, m.len) == 0);
                        got++;
                }
                CHECK(rc == CV_READ_NEED);
                if (rc != CV_READ_NEED)
                        break;
        }
        CHECK(got == nmsgs && cv_buf_pending(&out) == 0 && cv_reader_buffered(&r) == 0);
        CHECK(!cv_reader_mid_message(&r));
        cv_reader_free(&r);
        cv_buf_free(&out);
        free(body);
        CHECK(close(sv[0]) == 0 && close(sv[1]) == 0);
}

static void test_flush_would_block(void)
{
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
        struct cv_buf out;
        cv_buf_init(&out);
        out.high_water = 1024;
        size_t len = 8u << 20;
        uint8_t *body = pattern(len);
        CHECK(!cv_buf_above_high_water(&out));
        CHECK(cv_out_msg(&out, CV_MSG_DISPLAY, 0, 1, body, len) == 0);
        CHECK(cv_buf_above_high_water(&out));
        CHECK(cv_buf_flush(&out, sv[1]) == 0);
        CHECK(cv_buf_pending(&out) > 0); /* the socket buffer is smaller than 8 MiB */
        struct cv_reader r;
        cv_reader_init(&r, 0);
        struct cv_msg m;
        int rc, loops = 0;
        while ((rc = cv_reader_read(&r, sv[0], &m)) == CV_READ_NEED && loops++ < 100000)
                CHECK(cv_buf_flush(&out, sv[1]) == 0);
        CHECK(rc == CV_READ_MSG && m.len == len && memcmp(m.body, body, len) == 0);
        CHECK(cv_buf_pending(&out) == 0);
        CHECK(close(sv[0]) == 0);
        CHECK(cv_buf_flush(&out, sv[1]) == 0); /* nothing pending: no write at all */
        CHECK(cv_out_msg(&out, CV_MSG_OK, 0, 1, NULL, 0) == 0);
        CHECK(cv_buf_flush(&out, sv[1]) == -EPIPE); /* and no SIGPIPE */
        CHECK(close(sv[1]) == 0);
        cv_reader_free(&r);
        cv_buf_free(&out);
        free(body);
}

static void test_error_message(void)
{
        struct cv_buf out;
        cv_buf_init(&out);
        CHECK(cv_out_error(&out, 4, CV_ERR_NOT_FOUND, "no such context") == 0);
        struct cv_reader r;
        cv_reader_init(&r, 0);
        size_t used;
        struct cv_msg m;
        CHECK(cv_reader_feed(&r, cv_buf_head(&out), cv_buf_pending(&out), &used, &m) ==
              CV_READ_MSG);
        CHECK(m.type == CV_MSG_ERROR && m.id == 4);
        cbor_item_t *item;
        CHECK(cv_body_parse(m.body, m.len, &item) == 0);
        const char *s;
        size_t n;
        CHECK(cv_map_get_str(item, "code", &s, &n) == 0 && n == 9 &&
              memcmp(s, "not_found", 9) == 0);
        CHECK(cv_map_get_str(item, "message", &s, &n) == 0 && n == 15);
        cbor_decref(&item);
        cv_reader_free(&r);
        cv_buf_free(&out);
}

static void test_buf_limit_sticky(void)
{
        struct cv_buf b;
        cv_buf_init(&b);
        b.limit = 16;
        CHECK(cv_buf_append(&b, "0123456789", 10) == 0);
        CHECK(cv_buf_append(&b, "0123456789", 10) == -EMSGSIZE);
        CHECK(cv_enc_uint(&b, 1) == -EMSGSIZE); /* sticky */
        CHECK(cv_buf_pending(&b) == 10);
        cv_buf_reset(&b);
        CHECK(b.err == 0 && cv_buf_append(&b, "x", 1) == 0);
        cv_buf_free(&b);
        CHECK(strcmp(cv_msg_type_name(CV_MSG_X_END), "X_END") == 0);
        CHECK(strcmp(cv_msg_type_name(0x7777), "UNKNOWN") == 0);
        CHECK(cv_msg_is_terminal(CV_MSG_OK) && cv_msg_is_terminal(CV_MSG_ERROR));
        CHECK(!cv_msg_is_terminal(CV_MSG_STREAM));
}

int main(void)
{
        test_header_round_trip();
        test_header_rejects();
        test_split_reads_every_boundary();
        test_chunking_and_reassembly();
        test_exact_multiple_of_cap();
        test_max_message();
        test_bad_frames();
        test_fd_reader_eof();
        test_fd_reader_large_bodies(1);
        test_fd_reader_large_bodies(64);
        test_flush_would_block();
        test_error_message();
        test_buf_limit_sticky();
        return check_report("test_protocol_frame");
}
