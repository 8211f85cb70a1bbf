/* cellvm mcp's run_code: one EXECUTE in the session's sandbox, its output
 * as MCP content: stdout and stderr as text, the cell's value as text,
 * every figure as an image/png item, an exception with isError and its
 * name, value and traceback so the model can fix its code. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "cbor_util.h"
#include "mcp.h"
#include "mcp_content.h"
#include "msgtypes.h"
#include "serve_http.h"

/* Past the cell's own timeout (which the agent enforces), how long we wait
 * for its end before giving up on the agent. */
#define GRACE_MS 30000

struct cell {
        struct mcp_text out, err, results, tb;
        json_t *images; /* image items, in order */
        size_t images_dropped;
        bool error, timed_out, restarted; /* restarted: its context was killed */
        char fail[512];                   /* an agent ERROR other than timeout */
};

/* A DISPLAY or RESULT bundle: its image if it has one (a figure), else its
 * text/plain. */
static void bundle(struct cell *c, const struct cvc_event *ev)
{
        cbor_item_t *data = NULL;
        if (cv_map_get_map(ev->root, "data", &data) < 0)
                return;
        static const char *const image_mimes[] = {"image/png", "image/jpeg"};
        for (size_t i = 0; i < 2; i++) {
                cbor_item_t *v = cv_map_get(data, image_mimes[i]);
                const uint8_t *p = NULL;
                size_t n = 0;
                bool b64 = false;
                if (!v)
                        continue;
                if (cbor_isa_bytestring(v) && cbor_bytestring_is_definite(v)) {
                        p = cbor_bytestring_handle(v);
                        n = cbor_bytestring_length(v);
                } else if (cv_item_str(v, (const char **)&p, &n) == 0) {
                        b64 = true; /* a kernel that sent it already encoded */
                }
                if (!p)
                        continue;
                if (json_array_size(c->images) >= MCP_IMAGES_MAX || n > MCP_IMAGE_MAX ||
                    mcp_add_image(c->images, image_mimes[i], p, n, b64) < 0)
                        c->images_dropped++;
                return;
        }
        const char *t;
        size_t n;
        if (cv_map_get_str(data, "text/plain", &t, &n) == 0) {
                if (c->results.len || c->results.cut)
                        (void)mcp_text_add(&c->results, "\n", 1);
                (void)mcp_text_add(&c->results, t, n);
        }
}

static void exec_error(struct cell *c, const struct cvc_event *ev)
{
        c->error = true;
        c->restarted |=
            ev->u.error.name_len == 16 && memcmp(ev->u.error.name, "ContextRestarted", 16) == 0;
        /* The name and value first: the line a model needs, even when the
         * traceback is cut. A bash context's error has no name, its value the
         * exit status. */
        if (ev->u.error.name_len)
                (void)mcp_text_add(&c->tb, ev->u.error.name, ev->u.error.name_len);
        else
                (void)mcp_text_add(&c->tb, "exit status", 11);
        (void)mcp_text_add(&c->tb, ev->u.error.name_len ? ": " : " ", ev->u.error.name_len ? 2 : 1);
        (void)mcp_text_add(&c->tb, ev->u.error.value, ev->u.error.value_len);
        if (ev->u.error.ntb)
                (void)mcp_text_add(&c->tb, "\n\nTraceback:\n", 13);
        for (size_t i = 0; i < ev->u.error.ntb; i++) {
                (void)mcp_text_add(&c->tb, ev->u.error.tb[i], ev->u.error.tb_len[i]);
                (void)mcp_text_add(&c->tb, "\n", 1);
        }
}

/* The cell's messages until its end: 0, or a negative errno (the sandbox's
 * connection broke, or the agent never ended the cell). */
static int collect(struct sandbox *s, struct mux_req *r, struct cell *c, int wait_ms)
{
        for (;;) {
                struct cvc_event ev;
                int got = mux_next(r, wait_ms, &ev);
                if (got == 0) {
                        serve_cancel(s, r->id);
                        return -ETIMEDOUT;
                }
                if (got < 0)
                        return got;
                switch (ev.type) {
                case CV_MSG_STREAM:
                        (void)mcp_text_add(ev.u.stream.is_stderr ? &c->err : &c->out,
                                           ev.u.stream.text, ev.u.stream.len);
                        break;
                case CV_MSG_DISPLAY:
                case CV_MSG_RESULT:
                        bundle(c, &ev);
                        break;
                case CV_MSG_EXEC_ERROR:
                        exec_error(c, &ev);
                        break;
                case CV_MSG_ERROR:
                        if (ev.u.fail.code_len == 7 && memcmp(ev.u.fail.code, "timeout", 7) == 0)
                                c->timed_out = true;
                        else
                                snprintf(c->fail, sizeof(c->fail), "%.*s: %.*s",
                                         (int)ev.u.fail.code_len, ev.u.fail.code,
                                         (int)ev.u.fail.message_len, ev.u.fail.message);
                        break;
                }
                bool end = cv_msg_is_terminal(ev.type);
                cvc_event_free(&ev);
                if (end)
                        return 0;
        }
}

static json_t *report(struct cell *c, unsigned timeout_s)
{
        json_t *content = json_array();
        if (!content)
                return NULL;
        if (c->out.len || c->out.cut)
                (void)mcp_add_text(content, "stdout:\n", &c->out);
        if (c->err.len || c->err.cut)
                (void)mcp_add_text(content, "stderr:\n", &c->err);
        if (c->results.len || c->results.cut)
                (void)mcp_add_text(content, "result:\n", &c->results);
        json_array_extend(content, c->images);
        if (c->images_dropped) {
                char note[160];
                snprintf(note, sizeof(note),
                         "[cellvm: %zu more image(s) not returned: at most %d a call, %u MiB each]",
                         c->images_dropped, MCP_IMAGES_MAX, MCP_IMAGE_MAX >> 20);
                (void)mcp_add_string(content, note);
        }
        if (c->error)
                (void)mcp_add_text(content, "error:\n", &c->tb);
        if (c->timed_out) {
                char note[400];
                snprintf(note, sizeof(note),
                         "TimeoutError: the cell ran past its timeout of %u s and was "
                         "interrupted; %s Pass a larger `timeout` (at most %d s) for longer work.",
                         timeout_s,
                         c->restarted ? "it did not stop, so its context was restarted: what it "
                                        "defined before is gone."
                                      : "what it defined before stays.",
                         MCP_MAX_TIMEOUT_S);
                (void)mcp_add_string(content, note);
        }
        if (c->fail[0])
                (void)mcp_add_string(content, c->fail);
        return mcp_tool_result(content, c->error || c->timed_out || c->fail[0]);
}

json_t *mcp_run_code(struct sandbox *s, const char *code, const char *language, unsigned timeout_s)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 2 + (language != NULL));
        cv_enc_cstr(&b, "code");
        cv_enc_cstr(&b, code);
        if (language) {
                cv_enc_cstr(&b, "language");
                cv_enc_cstr(&b, language);
        }
        cv_enc_cstr(&b, "timeout_ms");
        cv_enc_uint(&b, (uint64_t)timeout_s * 1000);
        struct mux_req *r;
        int rc = mcp_request_open(s, CV_MSG_EXECUTE, &b, &r);
        cv_buf_free(&b);
        if (rc < 0)
                return mcp_tool_error("the sandbox's agent is gone (%s); the next call starts a "
                                      "new sandbox",
                                      strerror(-rc));
        struct cell c = {.out.max = MCP_OUTPUT_MAX,
                         .err.max = MCP_OUTPUT_MAX,
                         .results.max = MCP_OUTPUT_MAX,
                         .tb.max = MCP_OUTPUT_MAX,
                         .images = json_array()};
        rc = c.images ? collect(s, r, &c, (int)timeout_s * 1000 + GRACE_MS) : -ENOMEM;
        mux_close_req(r);
        json_t *res = rc < 0 ? mcp_tool_error("the cell did not end: %s", strerror(-rc))
                             : report(&c, timeout_s);
        json_decref(c.images);
        mcp_text_free(&c.out);
        mcp_text_free(&c.err);
        mcp_text_free(&c.results);
        mcp_text_free(&c.tb);
        return res;
}
