/*
 * libFuzzer target: what `cellvm mcp` and serve's /mcp do with a client's
 * bytes before a sandbox is involved. The first input byte picks:
 *
 *   0  one JSON-RPC message (the rest of the input, a stdio line or a POST
 *      body): mcp_parse, then mcp_dispatch on a session whose sandbox cannot
 *      be made (serve_create refuses), so tools/call runs its argument checks
 *      and base64 decoding and ends in a tool error. A request gets exactly
 *      one JSON-RPC response with its id; a notification or a response, none;
 *      a batch, one error (the session agreed on no version that has them).
 *   2  the same on a session that agreed on 2025-03-26, where a batch runs:
 *      an array of at most one response per message, or none.
 *   1, 3  tool text (mcp_content.c): the rest of the input, kept up to a bound
 *      the second byte sets, must come out as a JSON string (valid UTF-8,
 *      no NUL) with the truncation marker when something was cut.
 *
 * Linked with mcp_rpc.c, mcp_tools.c, mcp_run_code.c, mcp_content.c,
 * mcp_session.c and serve_http.c (base64); the sandbox side is stubbed below.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "mcp_content.h"
#include "serve_http.h"

#define CHECK(c)                                                                                   \
        do {                                                                                       \
                if (!(c)) {                                                                        \
                        fprintf(stderr, "fuzz_mcp_message: check failed: %s (%s:%d)\n", #c,        \
                                __FILE__, __LINE__);                                               \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

/* --- stubs: the sandbox side, never reached with a sandbox ------------------- */

struct serve serve;
const struct hroute route_api, route_interp, route_envd, route_files_get, route_files_post,
    route_mcp;

int port_route(struct hreq *h, unsigned port, char *why, size_t whylen)
{
        (void)h, (void)port, (void)why, (void)whylen;
        return 502;
}

int port_gone_route(struct hreq *h, const char *id, char *why, size_t whylen)
{
        (void)h, (void)id, (void)why, (void)whylen;
        return 502;
}

int serve_create(const char *template_id, double timeout_s, json_t *metadata, json_t *envs,
                 struct sandbox **out, char *err, size_t errlen)
{
        (void)template_id, (void)timeout_s, (void)metadata, (void)envs, (void)out;
        snprintf(err, errlen, "no sandboxes in the fuzzer");
        return -EAGAIN;
}
int serve_set_timeout(struct sandbox *s, double timeout_s, char *err, size_t errlen)
{
        (void)s, (void)timeout_s, (void)err, (void)errlen;
        return -EIO;
}
bool serve_kill(struct sandbox *s)
{
        (void)s;
        return false;
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
struct sandbox *serve_ref(struct sandbox *s)
{
        return s;
}
void serve_put(struct sandbox *s)
{
        (void)s;
}
int serve_list(struct sandbox ***out, size_t *n)
{
        *out = NULL;
        *n = 0;
        return 0;
}
void serve_cancel(struct sandbox *s, uint32_t id)
{
        (void)s, (void)id;
}
int serve_check_signature(const struct sandbox *s, const char *path, const char *op,
                          const char *user, const char *signature, const char *expiration,
                          char *why, size_t whylen)
{
        (void)s, (void)path, (void)op, (void)user, (void)signature, (void)expiration;
        snprintf(why, whylen, "none");
        return -EACCES;
}
struct sandbox *serve_find_signed(const char *path, const char *op, const char *user,
                                  const char *signature, const char *expiration, char *why,
                                  size_t whylen)
{
        (void)path, (void)op, (void)user, (void)signature, (void)expiration;
        snprintf(why, whylen, "none");
        return NULL;
}
int64_t creg_now_ms(void)
{
        return 0;
}
int mux_open(struct mux *m, struct mux_req **out)
{
        (void)m, (void)out;
        return -ECONNRESET;
}
int mux_send_buf(struct mux_req *r, uint16_t type, struct cv_buf *b)
{
        (void)r, (void)type, (void)b;
        return -ECONNRESET;
}
int mux_next(struct mux_req *r, int timeout_ms, struct cvc_event *ev)
{
        (void)r, (void)timeout_ms, (void)ev;
        return -ECONNRESET;
}
void mux_close_req(struct mux_req *r)
{
        (void)r;
}
int mux_call(struct mux *m, uint16_t type, struct cv_buf *body, int timeout_ms, cbor_item_t **reply,
             char *err, size_t errlen)
{
        (void)m, (void)type, (void)body, (void)timeout_ms, (void)reply;
        snprintf(err, errlen, "no agent");
        return -ECONNRESET;
}
void cvc_event_free(struct cvc_event *ev)
{
        (void)ev;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        (void)argc;
        (void)argv;
        json_object_seed(1);
        return 0;
}

static void check_response(json_t *reply)
{
        char *text = json_dumps(reply, JSON_COMPACT);
        CHECK(text);
        free(text);
        CHECK(!json_object_get(reply, "result") != !json_object_get(reply, "error"));
}

static void batch(struct mcp_session *s, json_t *msgs, bool batches)
{
        json_t *reply = mcp_dispatch(s, msgs);
        if (!batches) {
                CHECK(json_is_object(reply) && json_is_null(json_object_get(reply, "id")));
                CHECK(json_is_object(json_object_get(reply, "error")));
        } else if (reply) {
                CHECK(json_is_array(reply));
                CHECK(json_array_size(reply) > 0 &&
                      json_array_size(reply) <= json_array_size(msgs));
                size_t i;
                json_t *r;
                json_array_foreach(reply, i, r) check_response(r);
        }
        json_decref(reply);
}

static void message(const uint8_t *data, size_t size, bool batches)
{
        struct mcp_session s;
        mcp_session_init(&s);
        if (batches) {
                snprintf(s.version, sizeof(s.version), "2025-03-26");
                s.initialized = true;
        }
        json_t *error = NULL;
        json_t *msg = mcp_parse((const char *)data, size, &error);
        CHECK(!msg != !error);
        if (!msg) {
                CHECK(json_is_object(json_object_get(error, "error")));
                json_decref(error);
                return;
        }
        if (json_is_array(msg)) {
                batch(&s, msg, batches);
                json_decref(msg);
                CHECK(!s.sbx);
                mcp_session_end(&s);
                return;
        }
        bool request = mcp_request_method(msg) != NULL;
        json_t *reply = mcp_dispatch(&s, msg);
        CHECK(!reply == !request);
        if (reply) {
                check_response(reply);
                CHECK(json_equal(json_object_get(reply, "id"), json_object_get(msg, "id")));
        }
        json_decref(reply);
        json_decref(msg);
        CHECK(!s.sbx);
        mcp_session_end(&s);
}

static void text(const uint8_t *data, size_t size)
{
        if (!size)
                return;
        struct mcp_text t = {.max = data[0]};
        CHECK(mcp_text_add(&t, data + 1, size - 1) == 0);
        CHECK(t.len + t.cut == size - 1);
        json_t *content = json_array();
        CHECK(mcp_add_text(content, "label:\n", &t) == 0);
        const char *out = json_string_value(json_object_get(json_array_get(content, 0), "text"));
        CHECK(out && strncmp(out, "label:\n", 7) == 0);
        CHECK(!t.cut || strstr(out, "[cellvm: output truncated") != NULL);
        json_decref(content);
        mcp_text_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        if (data[0] % 2 == 0)
                message(data + 1, size - 1, data[0] % 4 == 2);
        else
                text(data + 1, size - 1);
        return 0;
}
