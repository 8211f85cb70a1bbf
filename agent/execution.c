/* EXECUTE requests: relaying an executor's output to the client, the terminal reply. */

#include "execution.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "cbor_util.h"
#include "conn.h"
#include "context.h"
#include "log.h"
#include "loop.h"
#include "msgtypes.h"
#include "utf8_stream.h"
#include "writer.h"

/* Bytes of dropped output shown in the log. */
#define DROPPED_SHOWN 200

void exec_free(struct exec *e)
{
        cv_buf_free(&e->xbody);
        free(e);
}

void exec_detach_conn(struct exec *e)
{
        struct conn *c = e->conn;
        if (!c)
                return;
        for (struct exec **pp = &c->execs; *pp; pp = &(*pp)->conn_next) {
                if (*pp == e) {
                        *pp = e->conn_next;
                        break;
                }
        }
        c->ninflight--;
        e->conn = NULL;
        e->conn_next = NULL;
}

/* Queues a message for the execution's client (its context pauses if that fills it up). */
static void send_to_client(struct exec *e, uint16_t type, const uint8_t *body, size_t len)
{
        struct conn *c = e->conn;
        if (!c)
                return;
        int rc = cv_out_msg(&c->out, type, 0, e->client_id, body, len);
        if (rc < 0)
                log_error("conn %u: id %u: queueing %s (%zu bytes): %s", c->num, e->client_id,
                          cv_msg_type_name(type), len, strerror(-rc));
        conn_touch(c);
}

void exec_relay(struct exec *e, uint16_t type, const uint8_t *body, size_t len)
{
        if (type == CV_MSG_EXEC_INPUT) {
                cbor_item_t *item;
                if (cv_body_parse(body, len, &item) == 0) {
                        uint64_t n;
                        if (cv_map_get_uint(item, "execution_count", &n) == 0)
                                e->execution_count = n;
                        cbor_decref(&item);
                }
        }
        send_to_client(e, type, body, len);
}

static void log_dropped(struct context *ctx, int which, const uint8_t *p, size_t n)
{
        char shown[DROPPED_SHOWN * 4 + 1];
        size_t k = 0;
        for (size_t i = 0; i < n && i < DROPPED_SHOWN; i++) {
                uint8_t ch = p[i];
                if (ch >= 0x20 && ch < 0x7f && ch != '\\')
                        shown[k++] = (char)ch;
                else
                        k += (size_t)snprintf(shown + k, sizeof(shown) - k, "\\x%02x", ch);
        }
        shown[k] = 0;
        log_info("context %s: %zu bytes of %s with no execution running, dropped: %s%s", ctx->id, n,
                 which == 1 ? "stdout" : "stderr", shown, n > DROPPED_SHOWN ? "..." : "");
}

static void queue_stream(struct exec *e, int which, const char *text, size_t len);

/*
 * The per-execution output cap: trims `*n` to what still fits. Past the cap the
 * pipes are still read and the bytes dropped, so the cell runs on and the
 * agent's memory stays bounded. Returns true the first time the cap is hit (the
 * caller then sends the notice).
 */
static bool output_cap(struct agent *a, struct exec *e, size_t *n)
{
        if (!a->output_max)
                return false;
        uint64_t used = e->output_bytes;
        e->output_bytes += *n;
        if (e->output_bytes <= a->output_max)
                return false;
        *n = used < a->output_max ? (size_t)(a->output_max - used) : 0;
        if (e->output_truncated)
                return false;
        e->output_truncated = true;
        return true;
}

void exec_stream(struct agent *a, struct context *ctx, int which, const uint8_t *p, size_t n,
                 bool final)
{
        struct exec *e = ctx->running;
        struct utf8_stream *dec = which == 1 ? &ctx->dec_out : &ctx->dec_err;
        /* Before EXEC_INPUT the cell has not started: this output is not its. */
        if (!e || !e->input_seen) {
                if (n)
                        log_dropped(ctx, which, p, n);
                dec->npending = 0;
                return;
        }
        if (!e->conn) {
                dec->npending = 0;
                return;
        }
        bool notice = output_cap(a, e, &n);
        if (e->output_truncated && !notice) {
                dec->npending = 0;
                return;
        }
        struct cv_buf *text = &a->scratch;
        cv_buf_reset(text);
        /* At the cap, a sequence cut in half ends as U+FFFD like at the end of a cell. */
        utf8_stream_decode(dec, p, n, final || notice, text);
        if (text->err) {
                log_error("context %s: decoding output: %s", ctx->id, strerror(-text->err));
                return;
        }
        if (cv_buf_pending(text) > 0)
                queue_stream(e, which, (const char *)cv_buf_head(text), cv_buf_pending(text));
        if (notice) {
                char msg[160];
                int len = snprintf(msg, sizeof(msg),
                                   "\n[cellvm: output truncated: this execution wrote more than "
                                   "%llu bytes to stdout/stderr; the rest is discarded]\n",
                                   (unsigned long long)a->output_max);
                log_info("context %s: execution %u: output over %llu bytes, truncated", ctx->id,
                         e->client_id, (unsigned long long)a->output_max);
                queue_stream(e, 2, msg, (size_t)len);
        }
}

/* The longest prefix of `p` (n bytes of UTF-8) that ends on a character boundary. */
static size_t utf8_boundary(const char *p, size_t n)
{
        size_t k = n;
        while (k > 0 && ((unsigned char)p[k - 1] & 0xC0) == 0x80)
                k--;
        if (k == 0)
                return 0;
        unsigned char lead = (unsigned char)p[k - 1];
        size_t need = lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        return n - (k - 1) >= need ? n : k - 1;
}

void exec_stream_message(struct agent *a, struct exec *e, const uint8_t *body, size_t len)
{
        cbor_item_t *item;
        const char *name, *text;
        size_t name_len, n;
        if (cv_body_parse(body, len, &item) < 0) {
                log_warn("context %s: STREAM from the executor is not a CBOR map", e->ctx->id);
                return;
        }
        if (cv_map_get_str(item, "name", &name, &name_len) < 0 ||
            cv_map_get_str(item, "text", &text, &n) < 0 ||
            !((name_len == 6 && memcmp(name, "stdout", 6) == 0) ||
              (name_len == 6 && memcmp(name, "stderr", 6) == 0))) {
                log_warn("context %s: dropping a STREAM without name or text", e->ctx->id);
                cbor_decref(&item);
                return;
        }
        int which = name[3] == 'o' ? 1 : 2;
        if (e->conn && !(e->output_truncated)) {
                size_t want = n;
                bool notice = output_cap(a, e, &n);
                if (n < want)
                        n = utf8_boundary(text, n);
                if (n > 0)
                        queue_stream(e, which, text, n);
                if (notice) {
                        char msg[160];
                        int mlen =
                            snprintf(msg, sizeof(msg),
                                     "\n[cellvm: output truncated: this execution wrote more than "
                                     "%llu bytes to stdout/stderr; the rest is discarded]\n",
                                     (unsigned long long)a->output_max);
                        log_info("context %s: execution %u: output over %llu bytes, truncated",
                                 e->ctx->id, e->client_id, (unsigned long long)a->output_max);
                        queue_stream(e, 2, msg, (size_t)mlen);
                }
        }
        cbor_decref(&item);
}

/* Queues a STREAM with `len` bytes of valid UTF-8 for the client of `e`. */
static void queue_stream(struct exec *e, int which, const char *text, size_t len)
{
        struct cv_buf *b = &e->conn->out;
        size_t mark;
        cv_out_begin(b, &mark);
        cv_enc_map(b, 2);
        cv_enc_cstr(b, "name");
        cv_enc_cstr(b, which == 1 ? "stdout" : "stderr");
        cv_enc_cstr(b, "text");
        cv_enc_text(b, text, len);
        int rc = cv_out_end(b, mark, CV_MSG_STREAM, e->client_id);
        if (rc < 0)
                log_error("conn %u: id %u: queueing STREAM: %s", e->conn->num, e->client_id,
                          strerror(-rc));
        conn_touch(e->conn);
}

/* Flushes cut UTF-8 sequences as U+FFFD: nothing more of this execution's output follows. */
static void flush_streams(struct agent *a, struct context *ctx)
{
        if (ctx->dec_out.npending)
                exec_stream(a, ctx, 1, NULL, 0, true);
        if (ctx->dec_err.npending)
                exec_stream(a, ctx, 2, NULL, 0, true);
}

/* Sends the terminal message for how `e` ended, then forgets it. */
static void send_terminal(struct agent *a, struct exec *e, const char *status, uint64_t count)
{
        struct conn *c = e->conn;
        if (c) {
                if (e->end == END_TIMEOUT) {
                        conn_send_error(a, c, e->client_id, CV_ERR_TIMEOUT,
                                        "the execution exceeded its timeout of %llu ms",
                                        (unsigned long long)(e->timeout_ns / 1000000ull));
                } else if (e->end == END_CANCELLED) {
                        conn_send_error(a, c, e->client_id, CV_ERR_CANCELLED,
                                        "the execution was cancelled");
                } else {
                        struct cv_buf *b = &c->out;
                        size_t mark;
                        cv_out_begin(b, &mark);
                        cv_enc_map(b, 2);
                        cv_enc_cstr(b, "status");
                        cv_enc_cstr(b, status);
                        cv_enc_cstr(b, "execution_count");
                        cv_enc_uint(b, count);
                        int rc = cv_out_end(b, mark, CV_MSG_OK, e->client_id);
                        if (rc < 0)
                                conn_send_error(a, c, e->client_id, CV_ERR_INTERNAL,
                                                "encoding the reply: %s", strerror(-rc));
                        conn_touch(c);
                }
        }
        exec_detach_conn(e);
        exec_free(e);
}

void exec_finish(struct agent *a, struct exec *e, const uint8_t *body, size_t len)
{
        /* ctx->running is already cleared; flush as if it still ran. */
        e->ctx->running = e;
        flush_streams(a, e->ctx);
        e->ctx->running = NULL;
        const char *status = "error";
        uint64_t count = e->execution_count;
        cbor_item_t *item;
        if (cv_body_parse(body, len, &item) == 0) {
                const char *s;
                size_t n;
                if (cv_map_get_str(item, "status", &s, &n) == 0 && n == 2 &&
                    memcmp(s, "ok", 2) == 0)
                        status = "ok";
                uint64_t c;
                if (cv_map_get_uint(item, "execution_count", &c) == 0)
                        count = c;
                cbor_decref(&item);
        } else {
                log_error("context %s: X_END body is not a CBOR map", e->ctx->id);
        }
        log_debug("context %s: execution %u ended: %s", e->ctx->id, e->internal_id, status);
        send_terminal(a, e, status, count);
}

void exec_died(struct agent *a, struct exec *e, const char *why)
{
        struct context *ctx = e->ctx;
        /* ctx->running is already cleared; flush as if it still ran. */
        ctx->running = e;
        flush_streams(a, ctx);
        ctx->running = NULL;
        if (e->conn) {
                struct cv_buf *b = &e->conn->out;
                size_t mark;
                cv_out_begin(b, &mark);
                cv_enc_map(b, 3);
                cv_enc_cstr(b, "name");
                cv_enc_cstr(b, "ContextRestarted");
                cv_enc_cstr(b, "value");
                cv_enc_cstr(b, why);
                cv_enc_cstr(b, "traceback");
                cv_enc_array(b, 0);
                int rc = cv_out_end(b, mark, CV_MSG_EXEC_ERROR, e->client_id);
                if (rc < 0)
                        log_error("conn %u: queueing EXEC_ERROR: %s", e->conn->num, strerror(-rc));
        }
        send_terminal(a, e, "error", e->execution_count);
}
