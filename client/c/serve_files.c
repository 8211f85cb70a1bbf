/* cellvm serve's /files (envd.yaml): GET streams FILE_READ's chunks; POST
 * streams a multipart or octet-stream body (gzip'ed or not) into FILE_WRITE
 * and FILE_DATA as it arrives, one agent upload per file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "serve_envd_words.h"
#include "serve_http.h"
#include "serve_multipart.h"

#define FILE_PIECE (256u << 10) /* FILE_DATA messages of at most this much */
#define UPLOAD_MAX (4ull << 30) /* bytes of one upload, after gunzip */
#define REPLY_WAIT_MS 120000    /* for an upload's OK once its data is sent */

/* The agent's file error codes as envd's statuses (PROTOCOL_NOTES.md 3.3). */
static unsigned file_status(const char *code, size_t len)
{
        if (len == 9 && memcmp(code, "not_found", 9) == 0)
                return 404;
        if (len == 17 && memcmp(code, "permission_denied", 17) == 0)
                return 403;
        if (len == 8 && memcmp(code, "no_space", 8) == 0)
                return 507;
        if (len == 16 && memcmp(code, "invalid_argument", 16) == 0)
                return 400;
        return 500;
}

/* The agent's message for a failed file request, or envd's words for it
 * (serve_envd_words.c: one onto a directory, a missing file, ...). */
static void file_why(const char *msg, size_t len, char *out, size_t size)
{
        if (!envd_words(msg, len, out, size))
                snprintf(out, size, "%.*s", (int)len, msg);
}

/* `user` of a file or command request: envd's username, else the default. */
static void enc_user(struct cv_buf *b, const char *user)
{
        cv_enc_cstr(b, "user");
        cv_enc_cstr(b, user && user[0] ? user : "user");
}

/* --- GET ------------------------------------------------------------------ */

static int read_event(struct agent_stream *as, const struct cvc_event *ev)
{
        const uint8_t *p;
        size_t n;
        if (ev->type == CV_MSG_FILE_CHUNK && cv_map_get_bytes(ev->root, "data", &p, &n) == 0)
                return hstream_put(&as->hs, p, n);
        if (cv_msg_is_terminal(ev->type)) {
                as->hs.done = true;
                return ev->type == CV_MSG_OK ? 0 : -1; /* a failure mid-file: cut it */
        }
        return 0;
}

static enum MHD_Result files_get(struct hreq *h)
{
        const char *path = hreq_query(h, "path");
        if (!path || !path[0])
                return reply_error(h, 400, "the path query parameter is required");
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 2);
        cv_enc_cstr(&b, "path");
        cv_enc_cstr(&b, path);
        enc_user(&b, hreq_query(h, "username"));
        struct mux_req *r;
        int rc = mux_open(&h->sbx->mux, &r);
        if (rc == 0 && (rc = mux_send_buf(r, CV_MSG_FILE_READ, &b)) < 0)
                mux_close_req(r);
        cv_buf_free(&b);
        if (rc < 0)
                return reply_error(h, 502, "the sandbox's agent is gone");
        struct cvc_event ev;
        rc = mux_next(r, 60000, &ev);
        if (rc <= 0) {
                serve_cancel(h->sbx, r->id);
                mux_close_req(r);
                return reply_error(h, 502, "the sandbox did not answer");
        }
        if (ev.type == CV_MSG_ERROR || ev.type == CV_MSG_OK) {
                enum MHD_Result out;
                if (ev.type == CV_MSG_ERROR) {
                        char why[4200];
                        file_why(ev.u.fail.message, ev.u.fail.message_len, why, sizeof(why));
                        out = reply_error(h, file_status(ev.u.fail.code, ev.u.fail.code_len), "%s",
                                          why);
                } else /* an empty file: Content-Length 0, which E2B's SDKs look for */
                        out = reply_empty(h, 200);
                cvc_event_free(&ev);
                mux_close_req(r);
                return out;
        }
        struct agent_stream *as = agent_stream_new(h->sbx, r);
        if (!as) {
                cvc_event_free(&ev);
                serve_cancel(h->sbx, r->id);
                mux_close_req(r);
                return MHD_NO;
        }
        as->on_event = read_event;
        as->idle_ms = -1;
        (void)read_event(as, &ev);
        cvc_event_free(&ev);
        return reply_stream(h, 200, "application/octet-stream", &as->hs);
}

/* --- POST ----------------------------------------------------------------- */

struct upload_file {
        struct mux_req *r;
        char *path;
};

struct upload {
        struct hreq *h;
        json_t *meta; /* X-Metadata-* of the request */
        bool multipart, gzip, in_file;
        struct mp mp;
        z_stream z;
        bool z_open;
        bool z_end; /* the gzip stream was whole */
        unsigned long long total;
        char *piece;
        size_t plen;
        struct upload_file *files;
        size_t nfiles;
        unsigned status; /* the first failure */
        char why[512];
};

static void upload_free(void *st)
{
        struct upload *u = st;
        if (!u)
                return;
        for (size_t i = 0; i < u->nfiles; i++) {
                serve_cancel(u->h->sbx, u->files[i].r->id); /* no-op once ended */
                mux_close_req(u->files[i].r);
                free(u->files[i].path);
        }
        free(u->files);
        free(u->piece);
        if (u->multipart)
                mp_free(&u->mp);
        if (u->z_open)
                inflateEnd(&u->z);
        json_decref(u->meta);
        free(u);
}

static int set_failure(struct upload *u, unsigned status, const char *why)
{
        if (!u->status) {
                u->status = status;
                snprintf(u->why, sizeof(u->why), "%s", why);
        }
        return -EIO;
}

static int flush_piece(struct upload *u, bool eof)
{
        struct upload_file *f = &u->files[u->nfiles - 1];
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, eof ? 2 : 1);
        cv_enc_cstr(&b, "data");
        cv_enc_bytes(&b, u->piece, u->plen);
        if (eof) {
                cv_enc_cstr(&b, "eof");
                cv_enc_bool(&b, true);
        }
        int rc = mux_send_buf(f->r, CV_MSG_FILE_DATA, &b);
        cv_buf_free(&b);
        u->plen = 0;
        return rc < 0 ? set_failure(u, 502, "the sandbox's agent is gone") : 0;
}

static int file_begin(void *ud, const char *name, const char *filename)
{
        struct upload *u = ud;
        u->in_file = name && strcmp(name, "file") == 0; /* envd ignores other fields */
        if (!u->in_file)
                return 0;
        const char *q = hreq_query(u->h, "path");
        const char *path = q && q[0] ? q : filename;
        if (!path || !path[0])
                return set_failure(u, 400, "a file part without a filename and no path query");
        struct upload_file *grown = realloc(u->files, (u->nfiles + 1) * sizeof(*grown));
        if (!grown)
                return set_failure(u, 507, "out of memory");
        u->files = grown;
        struct upload_file *f = &u->files[u->nfiles];
        f->path = strdup(path);
        if (!f->path || mux_open(&u->h->sbx->mux, &f->r) < 0) {
                free(f->path);
                return set_failure(u, 502, "the sandbox's agent is gone");
        }
        u->nfiles++;
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 2);
        cv_enc_cstr(&b, "path");
        cv_enc_cstr(&b, path);
        enc_user(&b, hreq_query(u->h, "username"));
        int rc = mux_send_buf(f->r, CV_MSG_FILE_WRITE, &b);
        cv_buf_free(&b);
        return rc < 0 ? set_failure(u, 502, "the sandbox's agent is gone") : 0;
}

static int file_data(void *ud, const char *p, size_t len)
{
        struct upload *u = ud;
        if (!u->in_file)
                return 0;
        while (len) {
                size_t take = FILE_PIECE - u->plen < len ? FILE_PIECE - u->plen : len;
                memcpy(u->piece + u->plen, p, take);
                u->plen += take;
                p += take;
                len -= take;
                if (u->plen == FILE_PIECE && flush_piece(u, false) < 0)
                        return -EIO;
        }
        return 0;
}

static int file_end(void *ud)
{
        struct upload *u = ud;
        if (!u->in_file)
                return 0;
        u->in_file = false;
        return flush_piece(u, true);
}

/* Plain bytes of the body (after gunzip) to the multipart reader or the one file. */
static int plain(struct upload *u, const char *p, size_t len)
{
        u->total += len;
        if (u->total > UPLOAD_MAX)
                return set_failure(u, 413, "the upload is over 4 GiB");
        if (!u->multipart)
                return file_data(u, p, len);
        int rc = mp_feed(&u->mp, p, len);
        if (rc < 0 && !u->status)
                set_failure(u, 400, u->mp.why);
        return rc;
}

static int upload_body(struct hreq *h, const char *data, size_t len)
{
        struct upload *u = h->state;
        if (u->status)
                return 0; /* answered at the end; the rest is read and dropped */
        if (!u->gzip)
                return plain(u, data, len) < 0 ? 0 : 0;
        u->z.next_in = (Bytef *)data;
        u->z.avail_in = (uInt)len;
        char out[65536];
        while (u->z.avail_in && !u->status) {
                u->z.next_out = (Bytef *)out;
                u->z.avail_out = sizeof(out);
                int zr = inflate(&u->z, Z_NO_FLUSH);
                if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) {
                        set_failure(u, 400, "the gzip body is malformed");
                        break;
                }
                if (plain(u, out, sizeof(out) - u->z.avail_out) < 0)
                        break;
                if (zr == Z_STREAM_END) {
                        u->z_end = true;
                        break;
                }
        }
        return 0;
}

/* X-Metadata-<Key>: value, keys lower-cased (HTTP header names have no case). */
static enum MHD_Result collect_meta(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
        (void)kind;
        struct upload *u = cls;
        if (strncasecmp(key, "X-Metadata-", 11) != 0 || !key[11] || !value)
                return MHD_YES;
        char k[256];
        size_t n = strlen(key + 11);
        if (n >= sizeof(k))
                return MHD_YES;
        for (size_t i = 0; i <= n; i++)
                k[i] = (char)(key[11 + i] >= 'A' && key[11 + i] <= 'Z' ? key[11 + i] - 'A' + 'a'
                                                                       : key[11 + i]);
        json_object_set_new(u->meta, k, json_string(value));
        return MHD_YES;
}

static int upload_start(struct hreq *h)
{
        struct upload *u = calloc(1, sizeof(*u));
        if (!u)
                return 507;
        h->state = u;
        h->free_state = upload_free;
        u->h = h;
        u->piece = malloc(FILE_PIECE);
        u->meta = json_object();
        if (!u->piece || !u->meta)
                return 507;
        MHD_get_connection_values(h->conn, MHD_HEADER_KIND, collect_meta, u);
        const char *ct = hreq_header(h, "Content-Type");
        const char *ce = hreq_header(h, "Content-Encoding");
        if (ce && strcasecmp(ce, "gzip") == 0) {
                u->gzip = true;
                if (inflateInit2(&u->z, 16 + MAX_WBITS) != Z_OK)
                        return 507;
                u->z_open = true;
        } else if (ce && strcasecmp(ce, "identity") != 0) {
                snprintf(h->why, sizeof(h->why), "Content-Encoding %.40s: gzip or none", ce);
                return 415;
        }
        if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
                struct mp_callbacks cb = {
                    .begin = file_begin, .data = file_data, .end = file_end, .ud = u};
                if (mp_init(&u->mp, ct, &cb) < 0) {
                        snprintf(h->why, sizeof(h->why), "%s", u->mp.why);
                        mp_free(&u->mp);
                        return 400;
                }
                u->multipart = true;
                return 0;
        }
        const char *path = hreq_query(h, "path");
        if (!path || !path[0]) {
                snprintf(h->why, sizeof(h->why),
                         "an octet-stream upload needs the path query parameter");
                return 400;
        }
        u->in_file = true;
        return file_begin(u, "file", path) < 0 ? (int)u->status : 0;
}

static int files_post_body(struct hreq *h, const char *data, size_t len)
{
        if (!h->state) {
                int st = upload_start(h);
                if (st)
                        return st;
        }
        return upload_body(h, data, len);
}

static enum MHD_Result files_post(struct hreq *h)
{
        if (!h->state) {
                int st = upload_start(h); /* an empty body */
                if (st)
                        return reply_error(h, (unsigned)st, "%s", h->why[0] ? h->why : "upload");
        }
        struct upload *u = h->state;
        if (!u->status) {
                if (u->gzip && !u->z_end)
                        set_failure(u, 400, "the gzip body is cut short");
                else if (u->multipart && mp_finish(&u->mp) < 0)
                        set_failure(u, 400, u->mp.why);
                else if (!u->multipart && u->in_file)
                        (void)file_end(u);
        }
        if (!u->status && u->nfiles == 0)
                set_failure(u, 400, "no file in the upload");
        json_t *entries = json_array();
        for (size_t i = 0; i < u->nfiles && !u->status; i++) {
                struct cvc_event ev;
                int rc;
                do
                        rc = mux_next(u->files[i].r, REPLY_WAIT_MS, &ev);
                while (rc == 1 && !cv_msg_is_terminal(ev.type) && (cvc_event_free(&ev), 1));
                if (rc <= 0) {
                        set_failure(u, 502, "the sandbox did not answer the upload");
                        break;
                }
                if (ev.type == CV_MSG_ERROR) {
                        char why[512];
                        file_why(ev.u.fail.message, ev.u.fail.message_len, why, sizeof(why));
                        set_failure(u, file_status(ev.u.fail.code, ev.u.fail.code_len), why);
                } else {
                        const char *p, *n;
                        size_t pl, nl;
                        if (cv_map_get_str(ev.root, "path", &p, &pl) == 0 &&
                            cv_map_get_str(ev.root, "name", &n, &nl) == 0) {
                                json_t *e = json_pack("{s:s%, s:s%, s:s}", "path", p, pl, "name", n,
                                                      nl, "type", "file");
                                const char *path = json_string_value(json_object_get(e, "path"));
                                if (path) /* an upload without metadata clears the old */
                                        serve_meta_set(h->sbx, path, u->meta);
                                serve_meta_attach(h->sbx, e);
                                json_array_append_new(entries, e);
                        }
                }
                cvc_event_free(&ev);
        }
        if (u->status) {
                json_decref(entries);
                return reply_error(h, u->status, "%s", u->why);
        }
        return reply_json(h, 200, entries);
}

const struct hroute route_files_get = {.done = files_get, .body_max = 0};
const struct hroute route_files_post = {.body = files_post_body, .done = files_post};
