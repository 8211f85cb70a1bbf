/* cellvm serve's envd RPCs (spec/envd/process and filesystem protos, Connect
 * with JSON): process.Process mapped onto the agent's commands service,
 * filesystem.Filesystem onto its files service (docs/PROTOCOL.md 9, 10). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "serve_connect.h"
#include "serve_http.h"

/* A command started through envd: its CMD_START request stays open for its
 * life, so that a client that left can Connect to it again. */
struct proc {
        uint64_t pid;
        struct mux_req *r;
        json_t *config; /* {cmd, args, envs, cwd} as the client gave it */
        char *tag;
        bool attached; /* a response reads it now */
        struct proc *next;
};

void serve_procs_free(struct sandbox *s)
{
        while (s->procs) {
                struct proc *p = s->procs;
                s->procs = p->next;
                mux_close_req(p->r);
                json_decref(p->config);
                free(p->tag);
                free(p);
        }
}

/* --- errors ---------------------------------------------------------------- */

/* The agent's error codes (docs/PROTOCOL.md 3, 9) as Connect's. */
static const char *connect_code(const char *code)
{
        static const char *const map[][2] = {
            {"not_found", "not_found"},          {"permission_denied", "permission_denied"},
            {"no_space", "resource_exhausted"},  {"invalid_argument", "invalid_argument"},
            {"bad_request", "invalid_argument"}, {"busy", "resource_exhausted"},
            {"timeout", "deadline_exceeded"},    {"cancelled", "canceled"},
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (strcmp(map[i][0], code) == 0)
                        return map[i][1];
        return "internal";
}

/* "code: message" of mux_call as a Connect error response. */
static enum MHD_Result call_failure(struct hreq *h, int rc, const char *err)
{
        if (rc != -EREMOTEIO)
                return reply_connect_error(h, "unavailable", "%s", err);
        char code[64];
        const char *colon = strchr(err, ':');
        size_t n = colon ? (size_t)(colon - err) : 0;
        snprintf(code, sizeof(code), "%.*s", (int)(n < sizeof(code) ? n : 0), err);
        return reply_connect_error(h, connect_code(code), "%s", colon ? colon + 2 : err);
}

/* --- entries --------------------------------------------------------------- */

static json_t *entry_json(const cbor_item_t *e)
{
        const char *name, *path, *type, *perm, *owner, *group, *target;
        size_t nl, pl, tl, perml, ol, gl, tgl;
        uint64_t size = 0, mode = 0, mtime = 0;
        if (!cbor_isa_map(e) || cv_map_get_str(e, "name", &name, &nl) < 0 ||
            cv_map_get_str(e, "path", &path, &pl) < 0 || cv_map_get_str(e, "type", &type, &tl) < 0)
                return NULL;
        json_t *o = json_pack("{s:s%, s:s, s:s%}", "name", name, nl, "type",
                              tl == 4 && memcmp(type, "file", 4) == 0  ? "FILE_TYPE_FILE"
                              : tl == 3 && memcmp(type, "dir", 3) == 0 ? "FILE_TYPE_DIRECTORY"
                                                                       : "FILE_TYPE_UNSPECIFIED",
                              "path", path, pl);
        if (!o)
                return NULL;
        if (cv_map_get_uint(e, "size", &size) == 0)
                json_object_set_new(o, "size", json_integer((json_int_t)size));
        if (cv_map_get_uint(e, "mode", &mode) == 0)
                json_object_set_new(o, "mode", json_integer((json_int_t)mode));
        if (cv_map_get_str(e, "permissions", &perm, &perml) == 0)
                json_object_set_new(o, "permissions", json_stringn(perm, perml));
        if (cv_map_get_str(e, "owner", &owner, &ol) == 0)
                json_object_set_new(o, "owner", json_stringn(owner, ol));
        if (cv_map_get_str(e, "group", &group, &gl) == 0)
                json_object_set_new(o, "group", json_stringn(group, gl));
        if (cv_map_get_uint(e, "modified_time", &mtime) == 0) {
                char t[40];
                iso_time(t, sizeof(t), (int64_t)(mtime / 1000000u));
                json_object_set_new(o, "modifiedTime", json_string(t));
        }
        if (cv_map_get_str(e, "symlink_target", &target, &tgl) == 0)
                json_object_set_new(o, "symlinkTarget", json_stringn(target, tgl));
        return o;
}

/* --- helpers --------------------------------------------------------------- */

static const char *str_field(json_t *o, const char *camel, const char *snake)
{
        json_t *v = json_object_get(o, camel);
        if (!v && snake)
                v = json_object_get(o, snake);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A uint64 that proto JSON may write as a number or a string. */
static bool uint_field(json_t *o, const char *key, uint64_t *out)
{
        json_t *v = json_object_get(o, key);
        if (json_is_integer(v) && json_integer_value(v) >= 0) {
                *out = (uint64_t)json_integer_value(v);
                return true;
        }
        if (json_is_string(v)) {
                char *end;
                const char *s = json_string_value(v);
                unsigned long long x = strtoull(s, &end, 10);
                if (*s && !*end) {
                        *out = x;
                        return true;
                }
        }
        return false;
}

/* A shell word for `bash -c`: single-quoted. */
static int quote(struct hstream *sb, const char *s)
{
        int rc = hstream_put(sb, "'", 1);
        for (; rc == 0 && *s; s++)
                rc = *s == '\'' ? hstream_put(sb, "'\\''", 4) : hstream_put(sb, s, 1);
        return rc ? rc : hstream_put(sb, "'", 1);
}

/* What CMD_START runs (`bash -l -c <it>`) for envd's cmd and args: the SDKs'
 * own `/bin/bash -l -c CMD` is CMD itself; anything else is exec'ed. */
static char *command_line(json_t *proc, char *why, size_t whylen)
{
        const char *cmd = str_field(proc, "cmd", NULL);
        json_t *args = json_object_get(proc, "args");
        if (!cmd || !cmd[0]) {
                snprintf(why, whylen, "process.cmd is required");
                return NULL;
        }
        if (args && !json_is_array(args)) {
                snprintf(why, whylen, "process.args must be an array of strings");
                return NULL;
        }
        size_t n = args ? json_array_size(args) : 0;
        for (size_t i = 0; i < n; i++)
                if (!json_is_string(json_array_get(args, i))) {
                        snprintf(why, whylen, "process.args must be an array of strings");
                        return NULL;
                }
        if (strcmp(cmd, "/bin/bash") == 0 && n == 3 &&
            strcmp(json_string_value(json_array_get(args, 0)), "-l") == 0 &&
            strcmp(json_string_value(json_array_get(args, 1)), "-c") == 0)
                return strdup(json_string_value(json_array_get(args, 2)));
        struct hstream sb = {0};
        int rc = hstream_put(&sb, "exec ", 5);
        if (rc == 0)
                rc = quote(&sb, cmd);
        for (size_t i = 0; rc == 0 && i < n; i++) {
                rc = hstream_put(&sb, " ", 1);
                if (rc == 0)
                        rc = quote(&sb, json_string_value(json_array_get(args, i)));
        }
        if (rc == 0)
                rc = hstream_put(&sb, "", 1);
        if (rc < 0) {
                free(sb.buf);
                snprintf(why, whylen, "out of memory");
                return NULL;
        }
        return sb.buf;
}

static int enc_envs(struct cv_buf *b, json_t *envs, json_t *sandbox_envs)
{
        /* The sandbox's envVars, then the command's own over them. */
        json_t *all = json_object();
        if (!all)
                return -ENOMEM;
        json_object_update(all, sandbox_envs);
        if (json_is_object(envs))
                json_object_update(all, envs);
        const char *k;
        json_t *v;
        json_object_foreach(all, k, v)
        {
                if (!json_is_string(v)) {
                        json_decref(all);
                        return -EINVAL;
                }
        }
        cv_enc_map(b, json_object_size(all));
        json_object_foreach(all, k, v)
        {
                cv_enc_cstr(b, k);
                cv_enc_cstr(b, json_string_value(v));
        }
        json_decref(all);
        return 0;
}

/* --- process.Process: Start and Connect streams ---------------------------- */

struct proc_stream {
        struct proc *p;
        bool started; /* the start event was written */
};

static int put_event(struct agent_stream *as, json_t *event)
{
        return connect_put(&as->hs, 0, json_pack("{s:o}", "event", event));
}

static int proc_event(struct agent_stream *as, const struct cvc_event *ev)
{
        struct proc_stream *ps = as->ud;
        if (ev->type == CV_MSG_CMD_STARTED)
                return 0; /* the start event is written when the stream opens */
        if (ev->type == CV_MSG_CMD_OUTPUT) {
                const char *stream;
                size_t sl;
                const uint8_t *data;
                size_t dl;
                if (cv_map_get_str(ev->root, "stream", &stream, &sl) < 0 ||
                    cv_map_get_bytes(ev->root, "data", &data, &dl) < 0)
                        return 0;
                char *b64 = base64_encode(data, dl);
                if (!b64)
                        return -1;
                json_t *d = json_pack(
                    "{s:s}", sl == 6 && memcmp(stream, "stderr", 6) == 0 ? "stderr" : "stdout",
                    b64);
                free(b64);
                return put_event(as, json_pack("{s:o}", "data", d));
        }
        if (ev->type == CV_MSG_OK) {
                int64_t code = 0;
                const char *err;
                size_t el;
                (void)cv_map_get_int(ev->root, "exit_code", &code);
                bool has_err = cv_map_get_str(ev->root, "error", &err, &el) == 0;
                char status[64];
                if (code < 0 && has_err)
                        snprintf(status, sizeof(status), "%.*s", (int)el, err);
                else
                        snprintf(status, sizeof(status), "exit status %lld", (long long)code);
                json_t *end = json_pack("{s:I, s:b, s:s}", "exitCode", (json_int_t)code, "exited",
                                        code >= 0, "status", status);
                if (has_err)
                        json_object_set_new(end, "error", json_stringn(err, el));
                int rc = put_event(as, json_pack("{s:o}", "end", end));
                as->hs.done = true;
                return rc < 0 ? rc : connect_put(&as->hs, CONNECT_END_STREAM, json_object());
        }
        if (ev->type == CV_MSG_ERROR) {
                char code[64];
                snprintf(code, sizeof(code), "%.*s", (int)ev->u.fail.code_len, ev->u.fail.code);
                json_t *e = json_pack("{s:s, s:s%}", "code", connect_code(code), "message",
                                      ev->u.fail.message, ev->u.fail.message_len);
                as->hs.done = true;
                (void)ps;
                return connect_put(&as->hs, CONNECT_END_STREAM, json_pack("{s:o}", "error", e));
        }
        return 0;
}

static int proc_idle(struct agent_stream *as)
{
        return put_event(as, json_pack("{s:{}}", "keepalive"));
}

static int proc_broken(struct agent_stream *as)
{
        return connect_put(&as->hs, CONNECT_END_STREAM,
                           json_pack("{s:{s:s, s:s}}", "error", "code", "unavailable", "message",
                                     "the sandbox's agent connection is gone"));
}

static void unlink_proc(struct sandbox *s, struct proc *p)
{
        for (struct proc **q = &s->procs; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        return;
                }
}

/* The response ends: an ended process leaves the table; a running one is
 * kept, its output dropped, until someone Connects to it again. */
static void proc_release(struct agent_stream *as)
{
        struct proc_stream *ps = as->ud;
        struct proc *p = ps->p;
        struct sandbox *s = as->s;
        pthread_mutex_lock(&s->procs_lock);
        p->attached = false;
        if (as->ended) {
                unlink_proc(s, p);
                pthread_mutex_unlock(&s->procs_lock);
                mux_close_req(p->r);
                json_decref(p->config);
                free(p->tag);
                free(p);
        } else {
                mux_discard(p->r, true);
                pthread_mutex_unlock(&s->procs_lock);
        }
}

static enum MHD_Result stream_of(struct hreq *h, struct proc *p)
{
        struct proc_stream *ps = calloc(1, sizeof(*ps));
        struct agent_stream *as = ps ? agent_stream_new(h->sbx, p->r) : NULL;
        if (!as) {
                free(ps);
                return MHD_NO;
        }
        ps->p = p;
        as->ud = ps;
        as->free_ud = free;
        as->on_event = proc_event;
        as->on_idle = proc_idle;
        as->on_broken = proc_broken;
        as->on_release = proc_release;
        as->idle_ms = 30000;
        mux_discard(p->r, false);
        (void)put_event(as, json_pack("{s:{s:I}}", "start", "pid", (json_int_t)p->pid));
        return reply_stream(h, 200, "application/connect+json", &as->hs);
}

/* An error before the first message of a stream: an end-stream message. */
static enum MHD_Result stream_error(struct hreq *h, const char *code, const char *msg)
{
        struct hstream *st = calloc(1, sizeof(*st));
        if (!st)
                return MHD_NO;
        if (connect_put(st, CONNECT_END_STREAM,
                        json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg)) < 0) {
                free(st->buf);
                free(st);
                return MHD_NO;
        }
        st->done = true;
        struct MHD_Response *r =
            MHD_create_response_from_buffer(st->len, st->buf, MHD_RESPMEM_MUST_FREE);
        free(st);
        if (!r)
                return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/connect+json");
        enum MHD_Result rc = MHD_queue_response(h->conn, 200, r);
        MHD_destroy_response(r);
        return rc;
}

static enum MHD_Result process_start(struct hreq *h, json_t *req, const char *user)
{
        char why[512] = "";
        json_t *proc = json_object_get(req, "process");
        if (!json_is_object(proc))
                return stream_error(h, "invalid_argument", "process is required");
        if (json_object_get(req, "pty"))
                return stream_error(h, "unimplemented", "pty is not supported by cellvm serve yet");
        char *cmd = command_line(proc, why, sizeof(why));
        if (!cmd)
                return stream_error(h, "invalid_argument", why);
        const char *cwd = str_field(proc, "cwd", NULL), *tag = str_field(req, "tag", NULL);
        json_t *stdin_v = json_object_get(req, "stdin");
        bool with_stdin = json_is_true(stdin_v);
        const char *tmo = hreq_header(h, "Connect-Timeout-Ms");
        uint64_t timeout_ms = tmo ? strtoull(tmo, NULL, 10) : 0;
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 5 + (cwd && cwd[0]) + (tag != NULL) + (timeout_ms > 0));
        cv_enc_cstr(&b, "cmd");
        cv_enc_cstr(&b, cmd);
        cv_enc_cstr(&b, "user");
        cv_enc_cstr(&b, user);
        cv_enc_cstr(&b, "stdin");
        cv_enc_bool(&b, with_stdin);
        /* A client that leaves does not end the process, as in envd. */
        cv_enc_cstr(&b, "background");
        cv_enc_bool(&b, true);
        cv_enc_cstr(&b, "envs");
        int bad = enc_envs(&b, json_object_get(proc, "envs"), h->sbx->envs);
        if (cwd && cwd[0]) {
                cv_enc_cstr(&b, "cwd");
                cv_enc_cstr(&b, cwd);
        }
        if (tag) {
                cv_enc_cstr(&b, "tag");
                cv_enc_cstr(&b, tag);
        }
        if (timeout_ms) {
                cv_enc_cstr(&b, "timeout_ms");
                cv_enc_uint(&b, timeout_ms);
        }
        free(cmd);
        if (bad) {
                cv_buf_free(&b);
                return stream_error(h, "invalid_argument", "process.envs: strings only");
        }
        struct mux_req *r;
        int rc = mux_open(&h->sbx->mux, &r);
        if (rc == 0 && (rc = mux_send_buf(r, CV_MSG_CMD_START, &b)) < 0)
                mux_close_req(r);
        cv_buf_free(&b);
        if (rc < 0)
                return stream_error(h, "unavailable", "the sandbox's agent is gone");
        struct cvc_event ev;
        rc = mux_next(r, 30000, &ev);
        uint64_t pid = 0;
        if (rc == 1 && ev.type == CV_MSG_CMD_STARTED &&
            cv_map_get_uint(ev.root, "pid", &pid) == 0) {
                cvc_event_free(&ev);
        } else {
                char code[64] = "unavailable", msg[512] = "the command did not start";
                if (rc == 1 && ev.type == CV_MSG_ERROR) {
                        snprintf(code, sizeof(code), "%.*s", (int)ev.u.fail.code_len,
                                 ev.u.fail.code);
                        snprintf(msg, sizeof(msg), "%.*s", (int)ev.u.fail.message_len,
                                 ev.u.fail.message);
                }
                if (rc == 1)
                        cvc_event_free(&ev);
                serve_cancel(h->sbx, r->id);
                mux_close_req(r);
                return stream_error(h, rc == 1 ? connect_code(code) : code, msg);
        }
        struct proc *p = calloc(1, sizeof(*p));
        if (!p) {
                serve_cancel(h->sbx, r->id);
                mux_close_req(r);
                return MHD_NO;
        }
        p->pid = pid;
        p->r = r;
        p->config = json_pack(
            "{s:s, s:O, s:O}", "cmd", str_field(proc, "cmd", NULL), "args",
            json_object_get(proc, "args") ? json_object_get(proc, "args") : json_array(), "envs",
            json_object_get(proc, "envs") ? json_object_get(proc, "envs") : json_object());
        if (cwd)
                json_object_set_new(p->config, "cwd", json_string(cwd));
        p->tag = tag ? strdup(tag) : NULL;
        p->attached = true;
        pthread_mutex_lock(&h->sbx->procs_lock);
        p->next = h->sbx->procs;
        h->sbx->procs = p;
        pthread_mutex_unlock(&h->sbx->procs_lock);
        return stream_of(h, p);
}

/* envd's ProcessSelector: {pid} or {tag}. Call with procs_lock held. */
static struct proc *select_proc(struct sandbox *s, json_t *req, uint64_t *pid)
{
        json_t *sel = json_object_get(req, "process");
        const char *tag = json_is_object(sel) ? str_field(sel, "tag", NULL) : NULL;
        *pid = 0;
        if (json_is_object(sel))
                (void)uint_field(sel, "pid", pid);
        for (struct proc *p = s->procs; p; p = p->next)
                if ((tag && p->tag && strcmp(tag, p->tag) == 0) || (!tag && p->pid == *pid)) {
                        *pid = p->pid;
                        return p;
                }
        return NULL;
}

static enum MHD_Result process_connect(struct hreq *h, json_t *req)
{
        uint64_t pid;
        pthread_mutex_lock(&h->sbx->procs_lock);
        struct proc *p = select_proc(h->sbx, req, &pid);
        bool busy = p && p->attached;
        if (p && !busy)
                p->attached = true;
        pthread_mutex_unlock(&h->sbx->procs_lock);
        if (!p)
                return stream_error(h, "not_found", "process not found");
        if (busy)
                return stream_error(h, "failed_precondition",
                                    "another client follows this process");
        return stream_of(h, p);
}

static enum MHD_Result process_list(struct hreq *h)
{
        char err[600];
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 0);
        cbor_item_t *reply = NULL, *list = NULL;
        int rc = mux_call(&h->sbx->mux, CV_MSG_CMD_LIST, &b, 30000, &reply, err, sizeof(err));
        cv_buf_free(&b);
        if (rc < 0)
                return call_failure(h, rc, err);
        json_t *out = json_array();
        if (cv_map_get_array(reply, "processes", &list) == 0) {
                pthread_mutex_lock(&h->sbx->procs_lock);
                for (size_t i = 0; i < cbor_array_size(list); i++) {
                        cbor_item_t *e = cbor_array_handle(list)[i];
                        uint64_t pid;
                        if (!cbor_isa_map(e) || cv_map_get_uint(e, "pid", &pid) < 0)
                                continue;
                        struct proc *p = h->sbx->procs;
                        while (p && p->pid != pid)
                                p = p->next;
                        json_t *o = json_pack("{s:I}", "pid", (json_int_t)pid);
                        if (p) {
                                json_object_set(o, "config", p->config);
                                if (p->tag)
                                        json_object_set_new(o, "tag", json_string(p->tag));
                        } else {
                                const char *cmd;
                                size_t cl;
                                if (cv_map_get_str(e, "cmd", &cmd, &cl) == 0)
                                        json_object_set_new(o, "config",
                                                            json_pack("{s:s, s:[s,s,s%]}", "cmd",
                                                                      "/bin/bash", "args", "-l",
                                                                      "-c", cmd, cl));
                        }
                        json_array_append_new(out, o);
                }
                pthread_mutex_unlock(&h->sbx->procs_lock);
        }
        cbor_decref(&reply);
        return reply_json(h, 200, json_pack("{s:o}", "processes", out));
}

/* A pid for SendInput, SendSignal, CloseStdin: ours by pid or tag, else
 * the pid as given (the agent knows it, or says not_found). */
static uint64_t target_pid(struct hreq *h, json_t *req)
{
        uint64_t pid;
        pthread_mutex_lock(&h->sbx->procs_lock);
        (void)select_proc(h->sbx, req, &pid);
        pthread_mutex_unlock(&h->sbx->procs_lock);
        return pid;
}

static enum MHD_Result process_signal(struct hreq *h, json_t *req)
{
        const char *sig = str_field(req, "signal", NULL);
        int signo = 9;
        if (sig && strcmp(sig, "SIGNAL_SIGTERM") == 0)
                signo = 15;
        else if (sig && strcmp(sig, "SIGNAL_SIGKILL") != 0)
                return reply_connect_error(h, "invalid_argument",
                                           "signal %.40s: SIGNAL_SIGKILL "
                                           "or SIGNAL_SIGTERM",
                                           sig);
        uint64_t pid = target_pid(h, req);
        if (!pid)
                return reply_connect_error(h, "not_found", "process not found");
        char err[600];
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 2);
        cv_enc_cstr(&b, "pid");
        cv_enc_uint(&b, pid);
        cv_enc_cstr(&b, "signal");
        cv_enc_uint(&b, (uint64_t)signo);
        int rc = mux_call(&h->sbx->mux, CV_MSG_CMD_KILL, &b, 30000, NULL, err, sizeof(err));
        cv_buf_free(&b);
        return rc < 0 ? call_failure(h, rc, err) : reply_json(h, 200, json_object());
}

static enum MHD_Result process_stdin(struct hreq *h, json_t *req, bool close_it)
{
        uint64_t pid = target_pid(h, req);
        if (!pid)
                return reply_connect_error(h, "not_found", "process not found");
        unsigned char *data = NULL;
        size_t dl = 0;
        if (!close_it) {
                json_t *input = json_object_get(req, "input");
                const char *s = json_is_object(input) ? str_field(input, "stdin", NULL) : NULL;
                if (!s && json_is_object(input) && str_field(input, "pty", NULL))
                        return reply_connect_error(h, "unimplemented",
                                                   "no pty in cellvm serve yet");
                if (!s || !(data = base64_decode(s, strlen(s), &dl)))
                        return reply_connect_error(h, "invalid_argument",
                                                   "input.stdin: base64 bytes are required");
        }
        char err[600];
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 2);
        cv_enc_cstr(&b, "pid");
        cv_enc_uint(&b, pid);
        if (close_it) {
                cv_enc_cstr(&b, "eof");
                cv_enc_bool(&b, true);
        } else {
                cv_enc_cstr(&b, "data");
                cv_enc_bytes(&b, data, dl);
        }
        free(data);
        int rc = mux_call(&h->sbx->mux, CV_MSG_CMD_STDIN, &b, 30000, NULL, err, sizeof(err));
        cv_buf_free(&b);
        return rc < 0 ? call_failure(h, rc, err) : reply_json(h, 200, json_object());
}

/* --- filesystem.Filesystem --------------------------------------------------- */

static enum MHD_Result fs_call(struct hreq *h, uint16_t type, json_t *req, const char *user)
{
        char err[600];
        const char *path = str_field(req, "path", NULL);
        const char *src = str_field(req, "source", NULL),
                   *dst = str_field(req, "destination", NULL);
        bool move = type == CV_MSG_FILE_RENAME;
        if (move ? !src || !dst : !path)
                return reply_connect_error(h, "invalid_argument", "%s is required",
                                           move ? "source and destination" : "path");
        uint64_t depth = 1;
        bool list = type == CV_MSG_FILE_LIST;
        if (list && json_object_get(req, "depth") && !uint_field(req, "depth", &depth))
                return reply_connect_error(h, "invalid_argument", "depth: a number");
        if (list && depth == 0)
                depth = 1;
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, (move ? 3 : 2) + list);
        if (move) {
                cv_enc_cstr(&b, "old_path");
                cv_enc_cstr(&b, src);
                cv_enc_cstr(&b, "new_path");
                cv_enc_cstr(&b, dst);
        } else {
                cv_enc_cstr(&b, "path");
                cv_enc_cstr(&b, path);
        }
        if (list) {
                cv_enc_cstr(&b, "depth");
                cv_enc_uint(&b, depth);
        }
        cv_enc_cstr(&b, "user");
        cv_enc_cstr(&b, user);
        cbor_item_t *reply = NULL;
        int rc = mux_call(&h->sbx->mux, type, &b, 60000, &reply, err, sizeof(err));
        cv_buf_free(&b);
        if (rc < 0) {
                /* envd's Remove of a missing path succeeds (E2B's tests expect it). */
                if (type == CV_MSG_FILE_REMOVE && strncmp(err, "not_found:", 10) == 0)
                        return reply_json(h, 200, json_object());
                return call_failure(h, rc, err);
        }
        json_t *out = json_object();
        cbor_item_t *x;
        if (type == CV_MSG_FILE_MKDIR) {
                bool created = true;
                (void)cv_map_get_bool(reply, "created", &created);
                if (!created) {
                        cbor_decref(&reply);
                        json_decref(out);
                        return reply_connect_error(h, "already_exists", "directory %s exists",
                                                   path);
                }
                /* envd answers with the new directory's entry */
                cbor_decref(&reply);
                struct cv_buf sb;
                cv_buf_init(&sb);
                cv_enc_map(&sb, 2);
                cv_enc_cstr(&sb, "path");
                cv_enc_cstr(&sb, path);
                cv_enc_cstr(&sb, "user");
                cv_enc_cstr(&sb, user);
                rc = mux_call(&h->sbx->mux, CV_MSG_FILE_STAT, &sb, 60000, &reply, err, sizeof(err));
                cv_buf_free(&sb);
                if (rc < 0) {
                        json_decref(out);
                        return call_failure(h, rc, err);
                }
        }
        if ((x = cv_map_get(reply, "entry")) != NULL) {
                json_t *e = entry_json(x);
                if (e)
                        json_object_set_new(out, "entry", e);
        }
        if ((x = cv_map_get(reply, "entries")) != NULL && cbor_isa_array(x)) {
                json_t *arr = json_array();
                for (size_t i = 0; i < cbor_array_size(x); i++) {
                        json_t *e = entry_json(cbor_array_handle(x)[i]);
                        if (e)
                                json_array_append_new(arr, e);
                }
                json_object_set_new(out, "entries", arr);
        }
        cbor_decref(&reply);
        return reply_json(h, 200, out);
}

/* --- dispatch -------------------------------------------------------------- */

static bool is_stream(const char *method)
{
        return strcmp(method, "/process.Process/Start") == 0 ||
               strcmp(method, "/process.Process/Connect") == 0 ||
               strcmp(method, "/filesystem.Filesystem/WatchDir") == 0;
}

static enum MHD_Result envd_done(struct hreq *h)
{
        const char *m = h->url;
        bool streaming = is_stream(m);
        const char *ct = hreq_header(h, "Content-Type");
        char why[512] = "", user[40];
        if (streaming ? !ct || strncmp(ct, "application/connect+json", 24) != 0
                      : ct && strncmp(ct, "application/json", 16) != 0)
                return reply_connect_error(h, "invalid_argument",
                                           "Content-Type %s: this server speaks Connect with JSON",
                                           ct ? ct : "(none)");
        json_t *req = streaming ? connect_unwrap(h->body, h->len, why, sizeof(why))
                                : connect_unary(h->body, h->len, why, sizeof(why));
        if (!req)
                return streaming ? stream_error(h, "invalid_argument", why)
                                 : reply_connect_error(h, "invalid_argument", "%s", why);
        if (connect_user(hreq_header(h, "Authorization"), user, sizeof(user)) < 0) {
                json_decref(req);
                return reply_connect_error(h, "unauthenticated",
                                           "Authorization: Basic base64(\"<user>:\")");
        }
        enum MHD_Result rc;
        if (strcmp(m, "/process.Process/Start") == 0)
                rc = process_start(h, req, user);
        else if (strcmp(m, "/process.Process/Connect") == 0)
                rc = process_connect(h, req);
        else if (strcmp(m, "/process.Process/List") == 0)
                rc = process_list(h);
        else if (strcmp(m, "/process.Process/SendSignal") == 0)
                rc = process_signal(h, req);
        else if (strcmp(m, "/process.Process/SendInput") == 0)
                rc = process_stdin(h, req, false);
        else if (strcmp(m, "/process.Process/CloseStdin") == 0)
                rc = process_stdin(h, req, true);
        else if (strcmp(m, "/filesystem.Filesystem/Stat") == 0)
                rc = fs_call(h, CV_MSG_FILE_STAT, req, user);
        else if (strcmp(m, "/filesystem.Filesystem/ListDir") == 0)
                rc = fs_call(h, CV_MSG_FILE_LIST, req, user);
        else if (strcmp(m, "/filesystem.Filesystem/MakeDir") == 0)
                rc = fs_call(h, CV_MSG_FILE_MKDIR, req, user);
        else if (strcmp(m, "/filesystem.Filesystem/Move") == 0)
                rc = fs_call(h, CV_MSG_FILE_RENAME, req, user);
        else if (strcmp(m, "/filesystem.Filesystem/Remove") == 0)
                rc = fs_call(h, CV_MSG_FILE_REMOVE, req, user);
        else if (streaming)
                rc = stream_error(h, "unimplemented", "not supported by cellvm serve yet");
        else
                rc = reply_connect_error(h, "unimplemented",
                                         "%s is not supported by cellvm "
                                         "serve yet",
                                         m);
        json_decref(req);
        return rc;
}

const struct hroute route_envd = {.done = envd_done, .body_max = HTTP_JSON_MAX};
