/* cellvm serve's filesystem watches (spec/envd/filesystem): WatchDir, a
 * stream, and the polled watchers E2B's sync Python SDK uses (CreateWatcher,
 * GetWatcherEvents, RemoveWatcher), both on the agent's FILE_WATCH. Watch
 * requests are lossy (serve_mux.h): events nobody collects are dropped past
 * a bound instead of stalling the sandbox's connection. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "serve_connect.h"
#include "serve_envd.h"

#define MAX_WATCHERS 64 /* per sandbox */

struct watcher {
        char id[32];
        struct mux_req *r;
        char *dir; /* the watched path, for entries */
        char user[40];
        bool include_entry;
        char last_tmp[4096];
        struct watcher *next;
};

void serve_watchers_free(struct sandbox *s)
{
        while (s->watchers) {
                struct watcher *w = s->watchers;
                s->watchers = w->next;
                mux_close_req(w->r);
                free(w->dir);
                free(w);
        }
}

static const char *event_type(const char *t, size_t n)
{
        static const char *const map[][2] = {
            {"create", "EVENT_TYPE_CREATE"}, {"write", "EVENT_TYPE_WRITE"},
            {"remove", "EVENT_TYPE_REMOVE"}, {"rename", "EVENT_TYPE_RENAME"},
            {"chmod", "EVENT_TYPE_CHMOD"},
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (strlen(map[i][0]) == n && memcmp(map[i][0], t, n) == 0)
                        return map[i][1];
        return "EVENT_TYPE_UNSPECIFIED";
}

/* The agent writes an upload to ".NAME.cellvm-XXXXXXXX" beside NAME and
 * renames it over NAME (docs/PROTOCOL.md 9), where envd writes NAME in
 * place. Events of such temporary files are not shown; the rename that
 * ends an upload shows as envd's create and write of NAME. 1: a temporary
 * file's event (skip it), 2: NAME moved in from one (create and write). */
static int upload_event(const char *name, size_t n, const char *type, size_t tl,
                        char *last_tmp_target, size_t cap)
{
        const char *slash = memrchr(name, '/', n);
        const char *base = slash ? slash + 1 : name;
        size_t bl = n - (size_t)(base - name);
        if (bl > 17 && base[0] == '.' && memcmp(base + bl - 16, ".cellvm-", 8) == 0) {
                bool hex = true;
                for (size_t i = bl - 8; i < bl; i++)
                        hex &= (base[i] >= '0' && base[i] <= '9') ||
                               (base[i] >= 'a' && base[i] <= 'f');
                if (hex) {
                        /* remember NAME (with its directory) when the temporary file moves away */
                        if (tl == 6 && memcmp(type, "rename", 6) == 0) {
                                size_t dir = (size_t)(base - name);
                                size_t target = bl - 17;
                                if (dir + target < cap) {
                                        memcpy(last_tmp_target, name, dir);
                                        memcpy(last_tmp_target + dir, base + 1, target);
                                        last_tmp_target[dir + target] = '\0';
                                }
                        }
                        return 1;
                }
        }
        if (last_tmp_target[0] && tl == 6 && memcmp(type, "create", 6) == 0 &&
            strlen(last_tmp_target) == n && memcmp(last_tmp_target, name, n) == 0) {
                last_tmp_target[0] = '\0';
                return 2;
        }
        return 0;
}

/* A FILE_EVENT as envd's FilesystemEvent; with `dir`, its entry (stat'ed
 * now; absent when the entry is gone). */
static json_t *event_json(struct sandbox *s, const struct cvc_event *ev, const char *dir,
                          const char *user)
{
        const char *name, *type;
        size_t nl, tl;
        if (cv_map_get_str(ev->root, "name", &name, &nl) < 0 ||
            cv_map_get_str(ev->root, "type", &type, &tl) < 0)
                return NULL;
        json_t *o = json_pack("{s:s%, s:s}", "name", name, nl, "type", event_type(type, tl));
        if (!o || !dir)
                return o;
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 2);
        cv_enc_cstr(&b, "path");
        size_t dl = strlen(dir);
        char *path = malloc(dl + nl + 2);
        bool ok = path != NULL;
        if (ok) {
                memcpy(path, dir, dl);
                path[dl] = '/';
                memcpy(path + dl + 1, name, nl);
                path[dl + nl + 1] = '\0';
                cv_enc_cstr(&b, path);
                free(path);
        }
        cv_enc_cstr(&b, "user");
        cv_enc_cstr(&b, user);
        cbor_item_t *reply = NULL;
        char err[256];
        if (ok && mux_call(&s->mux, CV_MSG_FILE_STAT, &b, 10000, &reply, err, sizeof(err)) == 0) {
                cbor_item_t *e = cv_map_get(reply, "entry");
                json_t *j = e ? entry_json(e) : NULL;
                if (j) {
                        serve_meta_attach(s, j);
                        json_object_set_new(o, "entry", j);
                }
        }
        if (reply)
                cbor_decref(&reply);
        cv_buf_free(&b);
        return o;
}

/* What envd would have sent for one FILE_EVENT: none, one or two events. */
static json_t *events_of(struct sandbox *s, const struct cvc_event *ev, const char *dir,
                         const char *user, char *last_tmp, size_t cap)
{
        const char *name, *type;
        size_t nl, tl;
        json_t *list = json_array();
        if (!list || cv_map_get_str(ev->root, "name", &name, &nl) < 0 ||
            cv_map_get_str(ev->root, "type", &type, &tl) < 0)
                return list;
        int kind = upload_event(name, nl, type, tl, last_tmp, cap);
        if (kind == 1)
                return list;
        json_t *e = event_json(s, ev, dir, user);
        if (!e)
                return list;
        if (kind == 2) {
                json_t *w = json_deep_copy(e);
                json_object_set_new(w, "type", json_string("EVENT_TYPE_WRITE"));
                json_array_append_new(list, e);
                json_array_append_new(list, w);
        } else {
                json_array_append_new(list, e);
        }
        return list;
}

/* Opens a FILE_WATCH and waits for WATCH_STARTED: 0 with *out, or a
 * negative errno with `code` and `msg` (Connect's) set. */
static int start_watch(struct hreq *h, json_t *req, const char *user, struct mux_req **out,
                       char *code, size_t codelen, char *msg, size_t msglen)
{
        const char *path = str_field(req, "path", NULL);
        if (!path || !path[0]) {
                snprintf(code, codelen, "invalid_argument");
                snprintf(msg, msglen, "path is required");
                return -EINVAL;
        }
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 3);
        cv_enc_cstr(&b, "path");
        cv_enc_cstr(&b, path);
        cv_enc_cstr(&b, "recursive");
        cv_enc_bool(&b, json_is_true(json_object_get(req, "recursive")));
        cv_enc_cstr(&b, "user");
        cv_enc_cstr(&b, user);
        struct mux_req *r;
        int rc = mux_open(&h->sbx->mux, &r);
        if (rc == 0) {
                mux_set_lossy(r);
                if ((rc = mux_send_buf(r, CV_MSG_FILE_WATCH, &b)) < 0)
                        mux_close_req(r);
        }
        cv_buf_free(&b);
        if (rc < 0) {
                snprintf(code, codelen, "unavailable");
                snprintf(msg, msglen, "the sandbox's agent is gone");
                return rc;
        }
        struct cvc_event ev;
        rc = mux_next(r, 30000, &ev);
        if (rc == 1 && ev.type == CV_MSG_WATCH_STARTED) {
                cvc_event_free(&ev);
                *out = r;
                return 0;
        }
        snprintf(code, codelen, "unavailable");
        snprintf(msg, msglen, "the watch did not start");
        if (rc == 1 && ev.type == CV_MSG_ERROR) {
                char c[64];
                snprintf(c, sizeof(c), "%.*s", (int)ev.u.fail.code_len, ev.u.fail.code);
                snprintf(code, codelen, "%s", connect_code(c));
                snprintf(msg, msglen, "%.*s", (int)ev.u.fail.message_len, ev.u.fail.message);
        }
        if (rc == 1)
                cvc_event_free(&ev);
        serve_cancel(h->sbx, r->id);
        mux_close_req(r);
        return -EIO;
}

/* --- WatchDir: a stream ------------------------------------------------------ */

struct watch_ud {
        char *dir;
        char user[40];
        bool include_entry;
        char last_tmp[4096];
};

static void free_watch_ud(void *p)
{
        struct watch_ud *u = p;
        if (u)
                free(u->dir);
        free(u);
}

static int watch_event(struct agent_stream *as, const struct cvc_event *ev)
{
        struct watch_ud *u = as->ud;
        if (ev->type == CV_MSG_FILE_EVENT) {
                json_t *list = events_of(as->s, ev, u->include_entry ? u->dir : NULL, u->user,
                                         u->last_tmp, sizeof(u->last_tmp));
                int rc = 0;
                for (size_t i = 0; rc == 0 && i < json_array_size(list); i++)
                        rc = connect_put(&as->hs, 0,
                                         json_pack("{s:O}", "filesystem", json_array_get(list, i)));
                json_decref(list);
                return rc;
        }
        if (!cv_msg_is_terminal(ev->type))
                return 0;
        as->hs.done = true;
        if (ev->type == CV_MSG_OK) /* the directory went away */
                return connect_put(&as->hs, CONNECT_END_STREAM, json_object());
        char code[64];
        snprintf(code, sizeof(code), "%.*s", (int)ev->u.fail.code_len, ev->u.fail.code);
        return connect_put(&as->hs, CONNECT_END_STREAM,
                           json_pack("{s:{s:s, s:s%}}", "error", "code", connect_code(code),
                                     "message", ev->u.fail.message, ev->u.fail.message_len));
}

static int watch_idle(struct agent_stream *as)
{
        return connect_put(&as->hs, 0, json_pack("{s:{}}", "keepalive"));
}

enum MHD_Result watch_dir(struct hreq *h, json_t *req, const char *user)
{
        char code[64], msg[512];
        struct mux_req *r;
        if (start_watch(h, req, user, &r, code, sizeof(code), msg, sizeof(msg)) < 0)
                return stream_error(h, code, msg);
        struct watch_ud *u = calloc(1, sizeof(*u));
        struct agent_stream *as = u ? agent_stream_new(h->sbx, r) : NULL;
        if (!as || !(u->dir = strdup(str_field(req, "path", NULL)))) {
                free(as);
                free_watch_ud(u);
                serve_cancel(h->sbx, r->id);
                mux_close_req(r);
                return MHD_NO;
        }
        snprintf(u->user, sizeof(u->user), "%s", user);
        u->include_entry = json_is_true(json_object_get(req, "includeEntry")) ||
                           json_is_true(json_object_get(req, "include_entry"));
        as->ud = u;
        as->free_ud = free_watch_ud;
        as->on_event = watch_event;
        as->on_idle = watch_idle;
        as->idle_ms = 30000;
        (void)connect_put(&as->hs, 0, json_pack("{s:{}}", "start"));
        return reply_stream(h, 200, "application/connect+json", &as->hs);
}

/* --- polled watchers ----------------------------------------------------------- */

enum MHD_Result watcher_create(struct hreq *h, json_t *req, const char *user)
{
        struct sandbox *s = h->sbx;
        pthread_mutex_lock(&s->procs_lock);
        unsigned n = 0;
        for (struct watcher *w = s->watchers; w; w = w->next)
                n++;
        pthread_mutex_unlock(&s->procs_lock);
        if (n >= MAX_WATCHERS)
                return reply_connect_error(h, "resource_exhausted",
                                           "at most %d watchers per sandbox", MAX_WATCHERS);
        char code[64], msg[512];
        struct mux_req *r;
        if (start_watch(h, req, user, &r, code, sizeof(code), msg, sizeof(msg)) < 0)
                return reply_connect_error(h, code, "%s", msg);
        struct watcher *w = calloc(1, sizeof(*w));
        if (!w || !(w->dir = strdup(str_field(req, "path", NULL)))) {
                free(w);
                serve_cancel(s, r->id);
                mux_close_req(r);
                return reply_connect_error(h, "resource_exhausted", "out of memory");
        }
        w->r = r;
        snprintf(w->user, sizeof(w->user), "%s", user);
        w->include_entry = json_is_true(json_object_get(req, "includeEntry")) ||
                           json_is_true(json_object_get(req, "include_entry"));
        pthread_mutex_lock(&s->procs_lock);
        snprintf(w->id, sizeof(w->id), "w%u", ++s->next_watcher);
        w->next = s->watchers;
        s->watchers = w;
        pthread_mutex_unlock(&s->procs_lock);
        return reply_json(h, 200, json_pack("{s:s}", "watcherId", w->id));
}

/* Takes watcher `id` out of the table (the caller then owns it), or NULL. */
static struct watcher *take(struct sandbox *s, const char *id)
{
        pthread_mutex_lock(&s->procs_lock);
        struct watcher **q = &s->watchers;
        while (*q && strcmp((*q)->id, id) != 0)
                q = &(*q)->next;
        struct watcher *w = *q;
        if (w)
                *q = w->next;
        pthread_mutex_unlock(&s->procs_lock);
        return w;
}

static void put_back(struct sandbox *s, struct watcher *w)
{
        pthread_mutex_lock(&s->procs_lock);
        w->next = s->watchers;
        s->watchers = w;
        pthread_mutex_unlock(&s->procs_lock);
}

static const char *watcher_id(json_t *req)
{
        return str_field(req, "watcherId", "watcher_id");
}

enum MHD_Result watcher_events(struct hreq *h, json_t *req)
{
        const char *id = watcher_id(req);
        struct watcher *w = id ? take(h->sbx, id) : NULL;
        if (!w)
                return reply_connect_error(h, "not_found", "watcher %.40s not found",
                                           id ? id : "(none)");
        json_t *events = json_array();
        bool gone = false;
        struct cvc_event ev;
        int rc;
        while ((rc = mux_next(w->r, 0, &ev)) == 1) {
                if (ev.type == CV_MSG_FILE_EVENT) {
                        json_t *more = events_of(h->sbx, &ev, w->include_entry ? w->dir : NULL,
                                                 w->user, w->last_tmp, sizeof(w->last_tmp));
                        json_array_extend(events, more);
                        json_decref(more);
                } else if (cv_msg_is_terminal(ev.type)) {
                        gone = true;
                }
                cvc_event_free(&ev);
        }
        if (rc < 0)
                gone = true;
        if (gone) { /* the directory or the connection went away: so did the watcher */
                mux_close_req(w->r);
                free(w->dir);
                free(w);
                if (json_array_size(events) == 0) {
                        json_decref(events);
                        return reply_connect_error(h, "not_found", "the watched directory is gone");
                }
        } else {
                put_back(h->sbx, w);
        }
        return reply_json(h, 200, json_pack("{s:o}", "events", events));
}

enum MHD_Result watcher_remove(struct hreq *h, json_t *req)
{
        const char *id = watcher_id(req);
        struct watcher *w = id ? take(h->sbx, id) : NULL;
        if (!w)
                return reply_connect_error(h, "not_found", "watcher %.40s not found",
                                           id ? id : "(none)");
        serve_cancel(h->sbx, w->r->id);
        mux_close_req(w->r);
        free(w->dir);
        free(w);
        return reply_json(h, 200, json_object());
}
