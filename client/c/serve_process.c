/* cellvm serve's process.Process (spec/envd/process/process.proto) on the
 * agent's commands service (docs/PROTOCOL.md 10); a Start with `pty` runs on
 * the agent's pseudo-terminal (data.pty, SendInput's input.pty, Update's
 * pty.size as CMD_RESIZE). A command's CMD_START
 * request stays open for its life; a pump thread turns what the agent sends
 * into Connect messages and hands them to every response that follows the
 * command (Start's, and any Connect's), as envd does. A client that leaves
 * does not end the command. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "serve_connect.h"
#include "serve_envd.h"

/* A follower that reads slower than the command writes loses its stream
 * past this much (an error end), instead of stalling the sandbox. */
#define FOLLOWER_MAX (16u << 20)
#define KEEPALIVE_S 30
/* The agent's bound on a pty's columns and rows (docs/PROTOCOL.md 10). */
#define PTY_SIZE_MAX 4096u
#define PTY_SIZE_MAX_TEXT "4096"

struct follower {
        struct hstream hs; /* first: the response's stream */
        struct proc *p;
        struct sandbox *s; /* referenced */
        char *pending;     /* messages not yet taken by hs (under procs_lock) */
        size_t len, cap;
        bool overflow;
        struct follower *next;
};

struct proc {
        uint64_t pid;
        struct mux_req *r;
        json_t *config; /* {cmd, args, envs, cwd} as the client gave it */
        char *tag;
        struct sandbox *s;
        /* under s->procs_lock: */
        struct follower *followers;
        char *end; /* the last messages (end event, end of stream), once ended */
        size_t end_len;
        bool ended;
        pthread_cond_t cond;
        struct proc *next;
};

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

/* `sandbox_envs` (the sandbox's environment) and `envs` (the start's own, over it: all
 * that process.List shows, as envd's). */
static int enc_envs(struct cv_buf *b, json_t *envs, const struct sandbox *s)
{
        json_t *base = serve_sandbox_envs(s);
        if (!base)
                return -ENOMEM;
        json_t *own = json_is_object(envs) ? json_incref(envs) : json_object();
        int rc = own ? 0 : -ENOMEM;
        if (rc == 0) {
                cv_enc_cstr(b, "sandbox_envs");
                rc = serve_enc_string_map(b, base);
        }
        if (rc == 0) {
                cv_enc_cstr(b, "envs");
                rc = serve_enc_string_map(b, own);
        }
        json_decref(base);
        json_decref(own);
        return rc;
}

/* --- the pump ---------------------------------------------------------------- */

static int put_event(struct hstream *out, json_t *event)
{
        return connect_put(out, 0, json_pack("{s:o}", "event", event));
}

/* One agent message as Connect messages into `out`; true at the end. */
static bool convert(const struct cvc_event *ev, struct hstream *out)
{
        if (ev->type == CV_MSG_CMD_OUTPUT) {
                const char *stream;
                const uint8_t *data;
                size_t sl, dl;
                if (cv_map_get_str(ev->root, "stream", &stream, &sl) < 0 ||
                    cv_map_get_bytes(ev->root, "data", &data, &dl) < 0)
                        return false;
                char *b64 = base64_encode(data, dl);
                if (!b64)
                        return false;
                const char *name = sl == 6 && memcmp(stream, "stderr", 6) == 0 ? "stderr"
                                   : sl == 3 && memcmp(stream, "pty", 3) == 0  ? "pty"
                                                                               : "stdout";
                (void)put_event(out, json_pack("{s:{s:s}}", "data", name, b64));
                free(b64);
                return false;
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
                (void)put_event(out, json_pack("{s:o}", "end", end));
                (void)connect_put(out, CONNECT_END_STREAM, json_object());
                return true;
        }
        if (ev->type == CV_MSG_ERROR) {
                char code[64];
                snprintf(code, sizeof(code), "%.*s", (int)ev->u.fail.code_len, ev->u.fail.code);
                (void)connect_put(out, CONNECT_END_STREAM,
                                  json_pack("{s:{s:s, s:s%}}", "error", "code", connect_code(code),
                                            "message", ev->u.fail.message, ev->u.fail.message_len));
                return true;
        }
        return false; /* CMD_STARTED and what a later agent may add */
}

static void free_proc(struct proc *p)
{
        mux_close_req(p->r);
        json_decref(p->config);
        free(p->tag);
        free(p->end);
        pthread_cond_destroy(&p->cond);
        free(p);
}

static void unlink_proc(struct sandbox *s, struct proc *p)
{
        for (struct proc **q = &s->procs; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        return;
                }
}

static void hand_out(struct proc *p, const char *data, size_t len)
{
        for (struct follower *f = p->followers; f; f = f->next) {
                if (f->overflow)
                        continue;
                if (f->len + len > FOLLOWER_MAX) {
                        f->overflow = true;
                        continue;
                }
                if (f->len + len > f->cap) {
                        size_t cap = f->cap ? f->cap : 4096;
                        while (cap < f->len + len)
                                cap *= 2;
                        char *b = realloc(f->pending, cap);
                        if (!b) {
                                f->overflow = true;
                                continue;
                        }
                        f->pending = b;
                        f->cap = cap;
                }
                memcpy(f->pending + f->len, data, len);
                f->len += len;
        }
}

static void *pump(void *arg)
{
        struct proc *p = arg;
        struct sandbox *s = p->s;
        bool ended = false;
        while (!ended) {
                struct cvc_event ev;
                struct hstream out = {0};
                int rc = mux_next(p->r, -1, &ev);
                if (rc == 1) {
                        ended = convert(&ev, &out);
                        cvc_event_free(&ev);
                } else {
                        ended = true; /* the sandbox ended: followers are cut off */
                }
                pthread_mutex_lock(&s->procs_lock);
                if (ended) {
                        p->end = out.buf; /* taken by every follower, now and later */
                        p->end_len = out.len;
                        out.buf = NULL;
                        p->ended = true;
                } else {
                        hand_out(p, out.buf, out.len);
                }
                pthread_cond_broadcast(&p->cond);
                bool gone = ended && !p->followers;
                if (gone)
                        unlink_proc(s, p);
                pthread_mutex_unlock(&s->procs_lock);
                free(out.buf);
                if (gone)
                        free_proc(p);
        }
        serve_put(s);
        return NULL;
}

/* --- followers: the responses ------------------------------------------------ */

static int follower_fill(struct hstream *hs)
{
        struct follower *f = (struct follower *)hs;
        struct proc *p = f->p;
        pthread_mutex_t *lock = &f->s->procs_lock;
        pthread_mutex_lock(lock);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += KEEPALIVE_S;
        while (!f->len && !p->ended && !f->overflow)
                if (pthread_cond_timedwait(&p->cond, lock, &until) == ETIMEDOUT)
                        break;
        int rc = 0;
        if (f->len) {
                rc = hstream_put(hs, f->pending, f->len);
                f->len = 0;
        } else if (f->overflow) {
                rc = connect_put(hs, CONNECT_END_STREAM,
                                 json_pack("{s:{s:s, s:s}}", "error", "code", "resource_exhausted",
                                           "message", "this client read the output too slowly"));
                hs->done = true;
        } else if (p->ended) {
                /* no end message: the sandbox ended, and the response is cut
                 * off mid-stream as E2B's edge cuts it */
                rc = p->end ? hstream_put(hs, p->end, p->end_len) : -1;
                hs->done = true;
        } else {
                rc = put_event(hs, json_pack("{s:{}}", "keepalive"));
        }
        pthread_mutex_unlock(lock);
        return rc;
}

static void follower_release(struct hstream *hs)
{
        struct follower *f = (struct follower *)hs;
        struct proc *p = f->p;
        struct sandbox *s = f->s;
        pthread_mutex_lock(&s->procs_lock);
        for (struct follower **q = &p->followers; *q; q = &(*q)->next)
                if (*q == f) {
                        *q = f->next;
                        break;
                }
        bool gone = p->ended && !p->followers;
        if (gone)
                unlink_proc(s, p);
        pthread_mutex_unlock(&s->procs_lock);
        if (gone)
                free_proc(p);
        free(f->pending);
        serve_put(s);
}

/* A response that follows `p`: its start event, then what the pump hands on.
 * Call with procs_lock held (p cannot go away meanwhile). */
static struct follower *follow_locked(struct sandbox *s, struct proc *p)
{
        struct follower *f = calloc(1, sizeof(*f));
        if (!f)
                return NULL;
        f->p = p;
        f->s = serve_ref(s);
        f->hs.fill = follower_fill;
        f->hs.release = follower_release;
        if (put_event(&f->hs, json_pack("{s:{s:I}}", "start", "pid", (json_int_t)p->pid)) < 0) {
                serve_put(s);
                free(f->hs.buf);
                free(f);
                return NULL;
        }
        f->next = p->followers;
        p->followers = f;
        return f;
}

/* --- Start and Connect ------------------------------------------------------- */

static enum MHD_Result reply_follower(struct hreq *h, struct follower *f)
{
        return reply_stream(h, 200, "application/connect+json", &f->hs);
}

/* envd's PTY message, {size: {cols, rows}}, as the agent's `pty` map into `b`. A size
 * left out or 0 is envd's default terminal, 80 x 24. False when malformed. */
static bool enc_pty(struct cv_buf *b, json_t *pty)
{
        json_t *size = json_object_get(pty, "size");
        uint64_t cols = 0, rows = 0;
        if (!json_is_object(pty) || (size && !json_is_object(size)) ||
            (json_object_get(size, "cols") && !uint_field(size, "cols", &cols)) ||
            (json_object_get(size, "rows") && !uint_field(size, "rows", &rows)) ||
            cols > PTY_SIZE_MAX || rows > PTY_SIZE_MAX)
                return false;
        cv_enc_map(b, 2);
        cv_enc_cstr(b, "cols");
        cv_enc_uint(b, cols ? cols : 80);
        cv_enc_cstr(b, "rows");
        cv_enc_uint(b, rows ? rows : 24);
        return true;
}

/* The agent's CMD_STARTED on `r`: 0 with *pid, or -1 with envd's error
 * `code` and `msg` (the request then cancelled and closed). */
static int await_started(struct sandbox *s, struct mux_req *r, uint64_t *pid, char *code,
                         size_t codelen, char *msg, size_t msglen)
{
        struct cvc_event ev;
        int rc = mux_next(r, 30000, &ev);
        if (rc == 1 && ev.type == CV_MSG_CMD_STARTED && cv_map_get_uint(ev.root, "pid", pid) == 0) {
                cvc_event_free(&ev);
                return 0;
        }
        snprintf(code, codelen, "unavailable");
        snprintf(msg, msglen, "the command did not start");
        if (rc == 1 && ev.type == CV_MSG_ERROR) {
                char agent_code[64];
                snprintf(agent_code, sizeof(agent_code), "%.*s", (int)ev.u.fail.code_len,
                         ev.u.fail.code);
                snprintf(msg, msglen, "%.*s", (int)ev.u.fail.message_len, ev.u.fail.message);
                snprintf(code, codelen, "%s", connect_code(agent_code));
        }
        if (rc == 1)
                cvc_event_free(&ev);
        serve_cancel(s, r->id);
        mux_close_req(r);
        return -1;
}

static enum MHD_Result adopt(struct hreq *h, struct mux_req *r, uint64_t pid, json_t *config,
                             const char *tag);

enum MHD_Result process_start(struct hreq *h, json_t *req, const char *user)
{
        char why[512] = "";
        json_t *proc = json_object_get(req, "process");
        if (!json_is_object(proc))
                return stream_error(h, "invalid_argument", "process is required");
        json_t *pty = json_object_get(req, "pty");
        if (json_is_null(pty))
                pty = NULL;
        char *cmd = command_line(proc, why, sizeof(why));
        if (!cmd)
                return stream_error(h, "invalid_argument", why);
        const char *cwd = str_field(proc, "cwd", NULL), *tag = str_field(req, "tag", NULL);
        bool with_stdin = json_is_true(json_object_get(req, "stdin"));
        const char *tmo = hreq_header(h, "Connect-Timeout-Ms");
        uint64_t timeout_ms = tmo ? strtoull(tmo, NULL, 10) : 0;
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 6 + (cwd && cwd[0]) + (tag != NULL) + (timeout_ms > 0) + (pty != NULL));
        /* A terminal's program (the SDKs' `/bin/bash -i -l`) is exec'd as envd does: a login
         * shell around it would read the profile twice before the first prompt. */
        const char *path = str_field(proc, "cmd", NULL);
        json_t *argl = json_object_get(proc, "args");
        if (pty && path[0] == '/') {
                cv_enc_cstr(&b, "argv");
                cv_enc_array(&b, 1 + json_array_size(argl));
                cv_enc_cstr(&b, path);
                for (size_t i = 0; i < json_array_size(argl); i++)
                        cv_enc_cstr(&b, json_string_value(json_array_get(argl, i)));
        } else {
                cv_enc_cstr(&b, "cmd");
                cv_enc_cstr(&b, cmd);
        }
        cv_enc_cstr(&b, "user");
        cv_enc_cstr(&b, user);
        cv_enc_cstr(&b, "stdin");
        cv_enc_bool(&b, with_stdin);
        cv_enc_cstr(&b, "background"); /* our connection stays; this is for its end */
        cv_enc_bool(&b, true);
        int bad = enc_envs(&b, json_object_get(proc, "envs"), h->sbx);
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
        if (pty) {
                cv_enc_cstr(&b, "pty");
                if (!enc_pty(&b, pty)) {
                        free(cmd);
                        cv_buf_free(&b);
                        return stream_error(h, "invalid_argument",
                                            "pty.size: cols and rows up to " PTY_SIZE_MAX_TEXT);
                }
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
        uint64_t pid = 0;
        char code[64], msg[512];
        if (await_started(h->sbx, r, &pid, code, sizeof(code), msg, sizeof(msg)) < 0)
                return stream_error(h, code, msg);
        json_t *args = json_object_get(proc, "args"), *envs = json_object_get(proc, "envs");
        json_t *config = json_pack("{s:s, s:o, s:o}", "cmd", str_field(proc, "cmd", NULL), "args",
                                   args ? json_incref(args) : json_array(), "envs",
                                   envs ? json_incref(envs) : json_object());
        if (cwd && config)
                json_object_set_new(config, "cwd", json_string(cwd));
        return adopt(h, r, pid, config, tag);
}

/* Follows command `pid` of the agent that no connection follows (one
 * started before a pause, whose connection went with it): CMD_CONNECT. */
static enum MHD_Result follow_agent_command(struct hreq *h, uint64_t pid)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "pid");
        cv_enc_uint(&b, pid);
        struct mux_req *r;
        int rc = mux_open(&h->sbx->mux, &r);
        if (rc == 0 && (rc = mux_send_buf(r, CV_MSG_CMD_CONNECT, &b)) < 0)
                mux_close_req(r);
        cv_buf_free(&b);
        if (rc < 0)
                return stream_error(h, "unavailable", "the sandbox's agent is gone");
        uint64_t started = 0;
        char code[64], msg[512];
        if (await_started(h->sbx, r, &started, code, sizeof(code), msg, sizeof(msg)) < 0)
                return stream_error(h, code, msg);
        return adopt(h, r, pid, NULL, NULL);
}

/* Takes command `pid` (its request `r` past CMD_STARTED, `config` owned,
 * NULL when unknown) into the sandbox's table, with this request as its
 * first follower and a pump. */
static enum MHD_Result adopt(struct hreq *h, struct mux_req *r, uint64_t pid, json_t *config,
                             const char *tag)
{
        struct proc *p = calloc(1, sizeof(*p));
        if (!p) {
                json_decref(config);
                serve_cancel(h->sbx, r->id);
                mux_close_req(r);
                return MHD_NO;
        }
        p->pid = pid;
        p->r = r;
        p->s = h->sbx;
        pthread_cond_init(&p->cond, NULL);
        p->config = config;
        p->tag = tag ? strdup(tag) : NULL;
        pthread_mutex_lock(&h->sbx->procs_lock);
        p->next = h->sbx->procs;
        h->sbx->procs = p;
        struct follower *f = follow_locked(h->sbx, p);
        pthread_mutex_unlock(&h->sbx->procs_lock);
        /* The pump holds a reference to the sandbox until the command ends. */
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        serve_ref(h->sbx);
        if (pthread_create(&t, &attr, pump, p) != 0) {
                /* No thread to follow it: cancel it and pump here, to its end. */
                serve_cancel(h->sbx, r->id);
                pump(p);
        }
        pthread_attr_destroy(&attr);
        return f ? reply_follower(h, f) : MHD_NO;
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
                if (!p->ended &&
                    ((tag && p->tag && strcmp(tag, p->tag) == 0) || (!tag && p->pid == *pid))) {
                        *pid = p->pid;
                        return p;
                }
        return NULL;
}

enum MHD_Result process_connect(struct hreq *h, json_t *req)
{
        uint64_t pid;
        pthread_mutex_lock(&h->sbx->procs_lock);
        struct proc *p = select_proc(h->sbx, req, &pid);
        struct follower *f = p ? follow_locked(h->sbx, p) : NULL;
        pthread_mutex_unlock(&h->sbx->procs_lock);
        bool by_tag = json_is_object(json_object_get(req, "process")) &&
                      str_field(json_object_get(req, "process"), "tag", NULL);
        if (!p && pid && !by_tag)
                return follow_agent_command(h, pid); /* the agent says not_found if none */
        if (!p)
                return stream_error(h, "not_found", "process not found");
        return f ? reply_follower(h, f) : MHD_NO;
}

enum MHD_Result process_list(struct hreq *h)
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
                        if (p && p->config) {
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

enum MHD_Result process_signal(struct hreq *h, json_t *req)
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

enum MHD_Result process_stdin(struct hreq *h, json_t *req, bool close_it)
{
        uint64_t pid = target_pid(h, req);
        if (!pid)
                return reply_connect_error(h, "not_found", "process not found");
        unsigned char *data = NULL;
        size_t dl = 0;
        if (!close_it) {
                /* ProcessInput's oneof: stdin, or what is typed into the pty; both go to
                 * CMD_STDIN (the agent writes a pty's to its master). */
                json_t *input = json_object_get(req, "input");
                const char *s = json_is_object(input) ? str_field(input, "stdin", NULL) : NULL;
                if (!s && json_is_object(input))
                        s = str_field(input, "pty", NULL);
                if (!s || !(data = base64_decode(s, strlen(s), &dl)))
                        return reply_connect_error(h, "invalid_argument",
                                                   "input.stdin or input.pty: base64 bytes "
                                                   "are required");
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

/* Update: a pty's new window size (CMD_RESIZE); without `pty`, nothing to do, as in envd. */
enum MHD_Result process_update(struct hreq *h, json_t *req)
{
        uint64_t pid = target_pid(h, req);
        if (!pid)
                return reply_connect_error(h, "not_found", "process not found");
        json_t *pty = json_object_get(req, "pty");
        if (!pty || json_is_null(pty))
                return reply_json(h, 200, json_object());
        char err[600];
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 2);
        cv_enc_cstr(&b, "pid");
        cv_enc_uint(&b, pid);
        cv_enc_cstr(&b, "pty");
        if (!enc_pty(&b, pty)) {
                cv_buf_free(&b);
                return reply_connect_error(h, "invalid_argument",
                                           "pty.size: cols and rows up to " PTY_SIZE_MAX_TEXT);
        }
        int rc = mux_call(&h->sbx->mux, CV_MSG_CMD_RESIZE, &b, 30000, NULL, err, sizeof(err));
        cv_buf_free(&b);
        return rc < 0 ? call_failure(h, rc, err) : reply_json(h, 200, json_object());
}
