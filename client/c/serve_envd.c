/* cellvm serve's envd RPCs (spec/envd protos, Connect with JSON):
 * filesystem.Filesystem mapped onto the agent's files service (docs/PROTOCOL.md
 * 9), the dispatch of every RPC, and the helpers serve_process.c shares. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "serve_connect.h"
#include "serve_envd.h"
#include "serve_envd_words.h"

/* --- errors ---------------------------------------------------------------- */

/* The agent's error codes (docs/PROTOCOL.md 3, 9) as Connect's. */
const char *connect_code(const char *code)
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
enum MHD_Result call_failure(struct hreq *h, int rc, const char *err)
{
        if (rc != -EREMOTEIO)
                return reply_connect_error(h, "unavailable", "%s", err);
        char code[64];
        const char *colon = strchr(err, ':');
        size_t n = colon ? (size_t)(colon - err) : 0;
        snprintf(code, sizeof(code), "%.*s", (int)(n < sizeof(code) ? n : 0), err);
        /* The files service's errors envd words itself (serve_envd_words.c). */
        const char *msg = colon ? colon + 2 : err;
        char words[700];
        if (envd_words(msg, strlen(msg), words, sizeof(words)))
                msg = words;
        return reply_connect_error(h, connect_code(code), "%s", msg);
}

/* --- helpers --------------------------------------------------------------- */

const char *str_field(json_t *o, const char *camel, const char *snake)
{
        json_t *v = json_object_get(o, camel);
        if (!v && snake)
                v = json_object_get(o, snake);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

/* A uint64 that proto JSON may write as a number or a string. */
bool uint_field(json_t *o, const char *key, uint64_t *out)
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

/* An error before the first message of a stream: an end-stream message. */
enum MHD_Result stream_error(struct hreq *h, const char *code, const char *msg)
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

/* --- entries --------------------------------------------------------------- */

json_t *entry_json(const cbor_item_t *e)
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

/* --- filesystem.Filesystem --------------------------------------------------- */

/* A request path as the agent resolves it (relative, "~" and "~/...": the
 * user's home, as envd expands them), for the metadata kept by path;
 * lexical cleaning aside. */
static void absolute(const char *path, const char *user, char *out, size_t outlen)
{
        bool tilde = path[0] == '~' && (path[1] == '\0' || path[1] == '/' || path[1] == '\\');
        const char *rest = tilde ? path + 1 + (path[1] == '/') : path;
        if (!tilde && path[0] == '/')
                snprintf(out, outlen, "%s", path);
        else if (strcmp(user, "root") == 0)
                snprintf(out, outlen, "/root/%s", rest);
        else
                snprintf(out, outlen, "/home/%s/%s", user, rest);
        size_t n = strlen(out);
        while (n > 1 && out[n - 1] == '/')
                out[--n] = '\0';
}

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
        char from[4096], to[4096];
        if (type == CV_MSG_FILE_REMOVE) {
                absolute(path, user, from, sizeof(from));
                serve_meta_remove(h->sbx, from);
        }
        if (move) {
                absolute(src, user, from, sizeof(from));
                absolute(dst, user, to, sizeof(to));
                serve_meta_move(h->sbx, from, to);
        }
        if (type == CV_MSG_FILE_MKDIR) {
                bool created = true;
                (void)cv_map_get_bool(reply, "created", &created);
                if (!created) {
                        cbor_decref(&reply);
                        json_decref(out);
                        absolute(path, user, from, sizeof(from)); /* envd's words */
                        return reply_connect_error(h, "already_exists",
                                                   "directory already exists: %s", from);
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
                if (e) {
                        serve_meta_attach(h->sbx, e);
                        json_object_set_new(out, "entry", e);
                }
        }
        if ((x = cv_map_get(reply, "entries")) != NULL && cbor_isa_array(x)) {
                json_t *arr = json_array();
                for (size_t i = 0; i < cbor_array_size(x); i++) {
                        json_t *e = entry_json(cbor_array_handle(x)[i]);
                        if (e) {
                                serve_meta_attach(h->sbx, e);
                                json_array_append_new(arr, e);
                        }
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
        else if (strcmp(m, "/process.Process/Update") == 0)
                rc = process_update(h, req);
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
        else if (strcmp(m, "/filesystem.Filesystem/WatchDir") == 0)
                rc = watch_dir(h, req, user);
        else if (strcmp(m, "/filesystem.Filesystem/CreateWatcher") == 0)
                rc = watcher_create(h, req, user);
        else if (strcmp(m, "/filesystem.Filesystem/GetWatcherEvents") == 0)
                rc = watcher_events(h, req);
        else if (strcmp(m, "/filesystem.Filesystem/RemoveWatcher") == 0)
                rc = watcher_remove(h, req);
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
