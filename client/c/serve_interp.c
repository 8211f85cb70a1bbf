/* cellvm serve's code interpreter: E2B's /execute (NDJSON, as
 * template/server of e2b-dev/code-interpreter writes it) and /contexts,
 * mapped onto the agent's EXECUTE and CONTEXT_* (docs/PROTOCOL.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "registry.h"
#include "serve_http.h"

/* Waiting this long for a cell's first message lets a missing context be a
 * 404, as E2B's server answers it, instead of an error inside the stream. */
#define FIRST_EVENT_MS 1000

static int put_line(struct agent_stream *as, json_t *line)
{
        char *text = json_dumps(line, JSON_COMPACT);
        json_decref(line);
        if (!text)
                return -1;
        int rc = hstream_put(&as->hs, text, strlen(text));
        if (rc == 0)
                rc = hstream_put(&as->hs, "\n", 1);
        free(text);
        return rc;
}

/* A DISPLAY or RESULT bundle as E2B's server's Result: MIME types to
 * fields, a str repr's quotes stripped, bytes as base64, the rest `extra`. */
static json_t *result_line(const struct cvc_event *ev, bool main_result)
{
        static const struct {
                const char *mime, *field;
        } fields[] = {
            {"text/plain", "text"},        {"text/html", "html"},
            {"text/markdown", "markdown"}, {"image/svg+xml", "svg"},
            {"image/png", "png"},          {"image/jpeg", "jpeg"},
            {"application/pdf", "pdf"},    {"text/latex", "latex"},
            {"application/json", "json"},  {"application/javascript", "javascript"},
            {"e2b/data", "data"},          {"e2b/chart", "chart"},
        };
        json_t *o = json_pack("{s:s}", "type", "result");
        json_t *extra = json_object();
        cbor_item_t *data = NULL;
        if (cv_map_get_map(ev->root, "data", &data) < 0 || !o || !extra) {
                json_decref(extra);
                return o;
        }
        struct cbor_pair *p = cbor_map_handle(data);
        for (size_t i = 0; i < cbor_map_size(data); i++) {
                const char *k;
                size_t kl;
                if (cv_item_str(p[i].key, &k, &kl) < 0)
                        continue;
                char mime[128];
                if (kl >= sizeof(mime))
                        continue;
                memcpy(mime, k, kl);
                mime[kl] = '\0';
                const char *field = NULL;
                for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
                        if (strcmp(fields[f].mime, mime) == 0)
                                field = fields[f].field;
                json_t *v = cbor_to_json(p[i].value);
                if (field && strcmp(field, "text") == 0 && json_is_string(v)) {
                        const char *t = json_string_value(v);
                        size_t n = json_string_length(v);
                        if (n >= 1 && (t[0] == '\'' || t[0] == '"') && t[n - 1] == t[0]) {
                                json_t *stripped = json_stringn(t + 1, n >= 2 ? n - 2 : 0);
                                json_decref(v);
                                v = stripped;
                        }
                }
                json_object_set_new(field ? o : extra, field ? field : mime, v);
        }
        /* Always there, {} when empty: E2B's Result sets extra to what is left
         * of the bundle and model_dump(exclude_none=True) keeps an empty dict
         * (code-interpreter-server api/models/result.py); the JS SDK's
         * Result.raw has it. */
        json_object_set_new(o, "extra", extra);
        json_object_set_new(o, "is_main_result", json_boolean(main_result));
        return o;
}

static json_t *error_line(const char *name, const char *value, const char *traceback)
{
        return json_pack("{s:s, s:s, s:s, s:s}", "type", "error", "name", name, "value", value,
                         "traceback", traceback);
}

static json_t *exec_error_line(const struct cvc_event *ev)
{
        /* The context's process died and was started anew (the agent's
         * ContextRestarted): E2B's kernel restarter says "restarting" on the
         * kernel's channel and E2B's server ends each execution of it with
         * this error (code-interpreter-server messaging.py _process_message). */
        static const char restarted[] = "ContextRestarted";
        if (ev->u.error.name_len == sizeof(restarted) - 1 &&
            memcmp(ev->u.error.name, restarted, sizeof(restarted) - 1) == 0)
                return error_line("ContextRestarting", "Context was restarted", "");
        /* E2B's server joins ipykernel's traceback entries with "". */
        size_t total = 0;
        for (size_t i = 0; i < ev->u.error.ntb; i++)
                total += ev->u.error.tb_len[i];
        char *tb = malloc(total + 1), *at = tb;
        if (!tb)
                return NULL;
        for (size_t i = 0; i < ev->u.error.ntb; i++) {
                memcpy(at, ev->u.error.tb[i], ev->u.error.tb_len[i]);
                at += ev->u.error.tb_len[i];
        }
        *at = '\0';
        json_t *o = json_pack("{s:s, s:s%, s:s%, s:s}", "type", "error", "name", ev->u.error.name,
                              ev->u.error.name_len, "value", ev->u.error.value,
                              ev->u.error.value_len, "traceback", tb);
        free(tb);
        return o;
}

static int exec_event(struct agent_stream *as, const struct cvc_event *ev)
{
        char ts[40];
        switch (ev->type) {
        case CV_MSG_EXEC_INPUT:
                return put_line(as, json_pack("{s:s, s:I}", "type", "number_of_executions",
                                              "execution_count",
                                              (json_int_t)ev->u.input.execution_count));
        case CV_MSG_STREAM:
                iso_time(ts, sizeof(ts), creg_now_ms());
                return put_line(as,
                                json_pack("{s:s, s:s%, s:s}", "type",
                                          ev->u.stream.is_stderr ? "stderr" : "stdout", "text",
                                          ev->u.stream.text, ev->u.stream.len, "timestamp", ts));
        case CV_MSG_DISPLAY:
        case CV_MSG_RESULT:
                return put_line(as, result_line(ev, ev->type == CV_MSG_RESULT));
        case CV_MSG_EXEC_ERROR:
                return put_line(as, exec_error_line(ev));
        case CV_MSG_ERROR: {
                /* The agent ended the cell another way (cancelled, timeout, ...). */
                char name[64], value[512];
                snprintf(name, sizeof(name), "%.*s", (int)ev->u.fail.code_len, ev->u.fail.code);
                snprintf(value, sizeof(value), "%.*s", (int)ev->u.fail.message_len,
                         ev->u.fail.message);
                int rc = put_line(
                    as, error_line(strcmp(name, "timeout") == 0 ? "TimeoutError" : "ExecutionError",
                                   value, ""));
                as->hs.done = true;
                return rc < 0 ? rc : put_line(as, json_pack("{s:s}", "type", "end_of_execution"));
        }
        case CV_MSG_OK:
                as->hs.done = true;
                return put_line(as, json_pack("{s:s}", "type", "end_of_execution"));
        }
        return 0;
}

static int exec_idle(struct agent_stream *as)
{
        /* A write every few seconds shows whether the client is still there. */
        return put_line(as, json_pack("{s:s}", "type", "keepalive"));
}

/* Encodes an object of strings as a CBOR map; -EINVAL if a value is not one. */
int serve_enc_string_map(struct cv_buf *b, json_t *obj)
{
        const char *k;
        json_t *v;
        json_object_foreach(obj, k, v)
        {
                if (!json_is_string(v))
                        return -EINVAL;
        }
        cv_enc_map(b, json_object_size(obj));
        json_object_foreach(obj, k, v)
        {
                cv_enc_cstr(b, k);
                cv_enc_text(b, json_string_value(v), json_string_length(v));
        }
        return 0;
}

static json_t *load_object(struct hreq *h, char *why, size_t whylen)
{
        json_error_t e;
        if (h->len == 0)
                return json_object();
        json_t *j = json_loadb(h->body, h->len, JSON_REJECT_DUPLICATES, &e);
        if (!j || !json_is_object(j)) {
                snprintf(why, whylen,
                         j ? "the body must be a JSON object" : "malformed JSON body: %s", e.text);
                json_decref(j);
                return NULL;
        }
        return j;
}

/* A string member, absent or null as NULL; false when it has another type. */
static bool opt_string(json_t *o, const char *key, const char **out)
{
        json_t *v = json_object_get(o, key);
        *out = NULL;
        if (!v || json_is_null(v))
                return true;
        if (!json_is_string(v))
                return false;
        *out = json_string_value(v);
        return true;
}

static enum MHD_Result execute(struct hreq *h)
{
        char why[512] = "";
        json_t *body = load_object(h, why, sizeof(why));
        if (!body)
                return reply_error(h, 400, "%s", why);
        const char *code = NULL, *ctx = NULL, *lang = NULL;
        json_t *envs = json_object_get(body, "env_vars");
        if (!opt_string(body, "code", &code) || !code)
                snprintf(why, sizeof(why), "code: a string is required");
        else if (!opt_string(body, "context_id", &ctx) || !opt_string(body, "language", &lang))
                snprintf(why, sizeof(why), "context_id and language are strings");
        else if (ctx && lang)
                snprintf(why, sizeof(why),
                         "Only one of context_id or language can be provided, not both.");
        else if (envs && !json_is_null(envs) && !json_is_object(envs))
                snprintf(why, sizeof(why), "env_vars must be an object of strings");
        if (why[0]) {
                json_decref(body);
                return reply_error(h, 400, "%s", why);
        }
        /* The sandbox's environment, which E2B's server sets in each context. */
        json_t *sbx_envs = serve_sandbox_envs(h->sbx);
        if (!sbx_envs) {
                json_decref(body);
                return reply_error(h, 500, "out of memory");
        }
        struct cv_buf b;
        cv_buf_init(&b);
        bool has_envs = envs && json_is_object(envs) && json_object_size(envs);
        cv_enc_map(&b, 2 + (ctx != NULL) + (lang != NULL) + has_envs);
        cv_enc_cstr(&b, "code");
        cv_enc_cstr(&b, code);
        if (ctx) {
                cv_enc_cstr(&b, "context");
                cv_enc_cstr(&b, ctx);
        }
        if (lang) {
                cv_enc_cstr(&b, "language");
                cv_enc_cstr(&b, lang);
        }
        int bad = 0;
        if (has_envs) {
                cv_enc_cstr(&b, "envs");
                bad = serve_enc_string_map(&b, envs);
        }
        cv_enc_cstr(&b, "sandbox_envs");
        bad |= serve_enc_string_map(&b, sbx_envs);
        json_decref(sbx_envs);
        json_decref(body);
        if (bad) {
                cv_buf_free(&b);
                return reply_error(h, 400, "env_vars must be an object of strings");
        }
        struct mux_req *r;
        int rc = mux_open(&h->sbx->mux, &r);
        if (rc == 0 && (rc = mux_send_buf(r, CV_MSG_EXECUTE, &b)) < 0)
                mux_close_req(r);
        cv_buf_free(&b);
        if (rc < 0)
                return reply_error(h, 502, "the sandbox's agent is gone: %s", strerror(-rc));
        /* A refusal (unknown context or language) comes at once: an HTTP error.
         * E2B's server answers an unknown context with a 404 and a language it
         * cannot start a kernel for with a 500 (its create_context raises,
         * main.py post_execute), both as plain text; the JS SDK reads the
         * latter as SandboxError("500 Internal Server Error"). */
        struct cvc_event first;
        int got = mux_next(r, FIRST_EVENT_MS, &first);
        if (got == 1 && first.type == CV_MSG_ERROR) {
                char msg[512];
                snprintf(msg, sizeof(msg), "%.*s", (int)first.u.fail.message_len,
                         first.u.fail.message);
                bool not_found =
                    first.u.fail.code_len == 9 && memcmp(first.u.fail.code, "not_found", 9) == 0;
                cvc_event_free(&first);
                mux_close_req(r);
                return reply_text(h, not_found ? 404 : 500, msg);
        }
        if (got < 0) { /* the sandbox ended meanwhile: cut off, as mid-stream */
                mux_close_req(r);
                return MHD_NO;
        }
        struct agent_stream *as = agent_stream_new(h->sbx, r);
        if (!as) {
                if (got == 1)
                        cvc_event_free(&first);
                serve_cancel(h->sbx, r->id);
                mux_close_req(r);
                return MHD_NO;
        }
        as->on_event = exec_event;
        as->on_idle = exec_idle;
        agent_stream_watch_client(as, h);
        if (got == 1) {
                if (cv_msg_is_terminal(first.type))
                        as->ended = true;
                (void)exec_event(as, &first);
                cvc_event_free(&first);
        }
        return reply_stream(h, 200, "application/x-ndjson", &as->hs);
}

static json_t *context_json(const cbor_item_t *m)
{
        json_t *o = json_object();
        static const char *const keys[] = {"id", "language", "cwd"};
        for (size_t i = 0; o && i < 3; i++) {
                const char *s;
                size_t n;
                if (cv_map_get_str(m, keys[i], &s, &n) == 0)
                        json_object_set_new(o, keys[i], json_stringn(s, n));
        }
        return o;
}

/* The agent's error as the code interpreter's clients read it: 404 as text.
 * A context the agent refuses to make (a language it does not run, a cwd it
 * cannot enter) is E2B's 500 as text: its create_context fails on Jupyter's
 * answer or on the kernel's error changing directory (contexts.py, main.py
 * post_contexts). */
static enum MHD_Result agent_failure(struct hreq *h, int rc, const char *err, bool creating)
{
        if (rc == -EREMOTEIO && strncmp(err, "not_found:", 10) == 0)
                return reply_text(h, 404, err + 11);
        if (rc == -EREMOTEIO && strncmp(err, "bad_request:", 12) == 0)
                return creating ? reply_text(h, 500, err + 13)
                                : reply_error(h, 400, "%s", err + 13);
        return reply_error(h, rc == -EREMOTEIO ? 500 : 502, "%s", err);
}

static enum MHD_Result contexts(struct hreq *h)
{
        char why[512] = "", err[600];
        const char *rest = h->url + 9; /* after "/contexts" */
        struct cv_buf b;
        cv_buf_init(&b);
        cbor_item_t *reply = NULL;
        int rc;
        enum MHD_Result out;
        if (!rest[0] && strcmp(h->method, "POST") == 0) {
                json_t *body = load_object(h, why, sizeof(why));
                const char *lang = NULL, *cwd = NULL;
                if (body &&
                    (!opt_string(body, "language", &lang) || !opt_string(body, "cwd", &cwd)))
                        snprintf(why, sizeof(why), "language and cwd are strings");
                if (why[0]) {
                        json_decref(body);
                        return reply_error(h, 400, "%s", why);
                }
                cv_enc_map(&b, (lang != NULL) + (cwd != NULL));
                if (lang) {
                        cv_enc_cstr(&b, "language");
                        cv_enc_cstr(&b, lang);
                }
                if (cwd) {
                        cv_enc_cstr(&b, "cwd");
                        cv_enc_cstr(&b, cwd);
                }
                json_decref(body);
                rc = mux_call(&h->sbx->mux, CV_MSG_CONTEXT_CREATE, &b, 60000, &reply, err,
                              sizeof(err));
                out = rc < 0 ? agent_failure(h, rc, err, true)
                             : reply_json(h, 200, context_json(reply));
        } else if (!rest[0] && strcmp(h->method, "GET") == 0) {
                cv_enc_map(&b, 0);
                rc = mux_call(&h->sbx->mux, CV_MSG_CONTEXT_LIST, &b, 30000, &reply, err,
                              sizeof(err));
                cbor_item_t *list = NULL;
                if (rc == 0 && cv_map_get_array(reply, "contexts", &list) < 0) {
                        rc = -EPROTO;
                        snprintf(err, sizeof(err), "the agent's CONTEXT_LIST had no contexts");
                }
                if (rc < 0) {
                        out = agent_failure(h, rc, err, false);
                } else {
                        json_t *arr = json_array();
                        for (size_t i = 0; i < cbor_array_size(list); i++)
                                if (cbor_isa_map(cbor_array_handle(list)[i]))
                                        json_array_append_new(
                                            arr, context_json(cbor_array_handle(list)[i]));
                        out = reply_json(h, 200, arr);
                }
        } else if (rest[0] == '/' && rest[1]) {
                char id[128];
                const char *slash = strchr(rest + 1, '/');
                size_t n = slash ? (size_t)(slash - rest - 1) : strlen(rest + 1);
                bool restart =
                    slash && strcmp(slash, "/restart") == 0 && strcmp(h->method, "POST") == 0;
                bool remove = !slash && strcmp(h->method, "DELETE") == 0;
                if (n >= sizeof(id) || (!restart && !remove)) {
                        cv_buf_free(&b);
                        return reply_error(h, 404, "no such route %s %s", h->method, h->url);
                }
                memcpy(id, rest + 1, n);
                id[n] = '\0';
                cv_enc_map(&b, 1);
                cv_enc_cstr(&b, "context");
                cv_enc_cstr(&b, id);
                rc =
                    mux_call(&h->sbx->mux, restart ? CV_MSG_CONTEXT_RESTART : CV_MSG_CONTEXT_REMOVE,
                             &b, 60000, &reply, err, sizeof(err));
                out = rc < 0 ? agent_failure(h, rc, err, false) : reply_empty(h, 204);
        } else {
                out = reply_error(h, 404, "no such route %s %s", h->method, h->url);
        }
        cv_buf_free(&b);
        if (reply)
                cbor_decref(&reply);
        return out;
}

static enum MHD_Result interp_done(struct hreq *h)
{
        if (strcmp(h->url, "/execute") == 0) {
                if (strcmp(h->method, "POST") != 0)
                        return reply_error(h, 405, "POST /execute");
                return execute(h);
        }
        return contexts(h);
}

const struct hroute route_interp = {.done = interp_done, .body_max = 16u << 20};
