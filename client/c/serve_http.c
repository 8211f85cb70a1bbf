/* cellvm serve's HTTP side: routing as E2B's edge does it, authentication,
 * bounded bodies, responses and streams (serve_http.h). */
#include "serve_http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbor_util.h"
#include "mcp.h"
#include "serve_sign.h"

const char *hreq_header(struct hreq *h, const char *name)
{
        return MHD_lookup_connection_value(h->conn, MHD_HEADER_KIND, name);
}

const char *hreq_query(struct hreq *h, const char *name)
{
        return MHD_lookup_connection_value(h->conn, MHD_GET_ARGUMENT_KIND, name);
}

bool hreq_limit(struct hreq *h, long max, long *limit)
{
        const char *v = hreq_query(h, "limit");
        *limit = max;
        if (!v)
                return true;
        char *end;
        errno = 0;
        *limit = strtol(v, &end, 10);
        return errno == 0 && end != v && !*end && *limit >= 1 && *limit <= max;
}

char *hreq_take_body(struct hreq *h, size_t *len)
{
        char *body = h->body; /* the buffer's storage: nothing of it was consumed */
        *len = h->len;
        h->body = NULL;
        h->len = 0;
        cv_buf_init(&h->in);
        return body;
}

/* --- responses ---------------------------------------------------------- */

/* `data` (taken) as the answer, with a header `extra` = `value` when both are set. */
static enum MHD_Result queue_with(struct hreq *h, unsigned status, const char *type, char *data,
                                  size_t len, const char *extra, const char *value)
{
        struct MHD_Response *r = MHD_create_response_from_buffer(
            len, data, data ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (!r) {
                free(data);
                return MHD_NO;
        }
        if (type)
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        if (extra && value)
                MHD_add_response_header(r, extra, value);
        enum MHD_Result rc = MHD_queue_response(h->conn, status, r);
        MHD_destroy_response(r);
        return rc;
}

static enum MHD_Result queue(struct hreq *h, unsigned status, const char *type, char *data,
                             size_t len)
{
        return queue_with(h, status, type, data, len, NULL, NULL);
}

enum MHD_Result reply_json(struct hreq *h, unsigned status, json_t *body)
{
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        if (!text) /* json_pack refused (cannot happen with clean_utf8'd text): still an answer */
                text = strdup("{\"code\":500,\"message\":\"the answer could not be encoded\"}");
        if (!text)
                return MHD_NO;
        return queue(h, status, "application/json", text, strlen(text));
}

enum MHD_Result reply_json_page(struct hreq *h, json_t *arr, const char *next_token)
{
        char *text = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
        json_decref(arr);
        if (!text)
                return reply_error(h, 500, "out of memory");
        return queue_with(h, 200, "application/json", text, strlen(text), "x-next-token",
                          next_token);
}

/* Messages quote what clients sent: any byte that is not part of valid
 * UTF-8 (or a character cut short by a bound) becomes '?', as JSON needs. */
static void clean_utf8(char *s)
{
        unsigned char *p = (unsigned char *)s;
        while (*p) {
                size_t n = *p < 0x80         ? 1
                           : (*p >> 5) == 6  ? 2
                           : (*p >> 4) == 14 ? 3
                           : (*p >> 3) == 30 ? 4
                                             : 0;
                if (n == 1 && *p < 0x20 && *p != '\t') {
                        *p++ = '?';
                        continue;
                }
                bool ok = n > 0 && cv_utf8_valid(p, n);
                for (size_t i = 1; ok && i < n; i++)
                        ok = p[i] != 0;
                if (!ok) {
                        *p++ = '?';
                        continue;
                }
                p += n;
        }
}

enum MHD_Result reply_error(struct hreq *h, unsigned status, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        clean_utf8(msg);
        return reply_json(h, status, json_pack("{s:i, s:s}", "code", (int)status, "message", msg));
}

enum MHD_Result reply_empty(struct hreq *h, unsigned status)
{
        return queue(h, status, NULL, NULL, 0);
}

enum MHD_Result reply_text(struct hreq *h, unsigned status, const char *text)
{
        char *copy = strdup(text);
        if (!copy)
                return MHD_NO;
        return queue(h, status, "text/plain; charset=utf-8", copy, strlen(copy));
}

/* Connect's codes and the HTTP statuses it gives them. */
static unsigned connect_status(const char *code)
{
        static const struct {
                const char *code;
                unsigned status;
        } map[] = {
            {"canceled", 499},
            {"unknown", 500},
            {"invalid_argument", 400},
            {"deadline_exceeded", 504},
            {"not_found", 404},
            {"already_exists", 409},
            {"permission_denied", 403},
            {"resource_exhausted", 429},
            {"failed_precondition", 400},
            {"aborted", 409},
            {"out_of_range", 400},
            {"unimplemented", 501},
            {"internal", 500},
            {"unavailable", 503},
            {"data_loss", 500},
            {"unauthenticated", 401},
        };
        for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
                if (strcmp(map[i].code, code) == 0)
                        return map[i].status;
        return 500;
}

enum MHD_Result reply_connect_error(struct hreq *h, const char *code, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        clean_utf8(msg);
        return reply_json(h, connect_status(code),
                          json_pack("{s:s, s:s}", "code", code, "message", msg));
}

/* --- streams -------------------------------------------------------------- */

int hstream_put(struct hstream *st, const void *data, size_t len)
{
        if (st->off == st->len)
                st->off = st->len = 0;
        if (st->len + len > st->cap) {
                size_t cap = st->cap ? st->cap : 4096;
                while (cap < st->len + len)
                        cap *= 2;
                char *b = realloc(st->buf, cap);
                if (!b)
                        return -ENOMEM;
                st->buf = b;
                st->cap = cap;
        }
        memcpy(st->buf + st->len, data, len);
        st->len += len;
        return 0;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
        (void)pos;
        struct hstream *st = cls;
        while (st->off == st->len) {
                if (st->done) {
                        st->finished = true;
                        return MHD_CONTENT_READER_END_OF_STREAM;
                }
                if (st->fill(st) < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        size_t n = st->len - st->off < max ? st->len - st->off : max;
        memcpy(out, st->buf + st->off, n);
        st->off += n;
        return (ssize_t)n;
}

static void stream_free(void *cls)
{
        struct hstream *st = cls;
        st->release(st);
        free(st->buf);
        free(st);
}

struct MHD_Response *hstream_response(struct hstream *st, uint64_t size)
{
        struct MHD_Response *r =
            MHD_create_response_from_callback(size, 64 * 1024, stream_read, st, stream_free);
        if (!r)
                stream_free(st);
        return r;
}

enum MHD_Result reply_stream(struct hreq *h, unsigned status, const char *content_type,
                             struct hstream *st)
{
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                                                   stream_read, st, stream_free);
        if (!r) {
                stream_free(st);
                return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        enum MHD_Result rc = MHD_queue_response(h->conn, status, r);
        MHD_destroy_response(r);
        return rc;
}

/* --- routing -------------------------------------------------------------- */

const struct serve_backend *serve_backend;

bool same_secret(const char *a, const char *b)
{
        if (!a || !b)
                return false;
        size_t la = strlen(a), lb = strlen(b);
        unsigned char diff = la != lb;
        for (size_t i = 0; i < lb; i++)
                diff |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
        return diff == 0;
}

static bool api_key_ok(struct hreq *h)
{
        const char *k = hreq_header(h, "X-API-Key");
        if (k)
                return same_secret(k, serve.api_key);
        const char *auth = hreq_header(h, "Authorization");
        return auth && strncasecmp(auth, "Bearer ", 7) == 0 && same_secret(auth + 7, serve.api_key);
}

/* Host `<port>-<id>.<domain>`, as E2B's edge reads it. */
static bool host_target(const char *host, char *id, size_t idlen, unsigned *port)
{
        if (!host)
                return false;
        const char *dash = strchr(host, '-'), *dot = strchr(host, '.');
        if (!dash || !dot || dash > dot || dash == host || dash - host > 5)
                return false;
        unsigned p = 0;
        for (const char *c = host; c < dash; c++) {
                if (*c < '0' || *c > '9')
                        return false;
                p = p * 10 + (unsigned)(*c - '0');
        }
        size_t n = (size_t)(dot - dash - 1);
        if (n == 0 || n >= idlen)
                return false;
        memcpy(id, dash + 1, n);
        id[n] = '\0';
        *port = p;
        return p > 0 && p < 65536;
}

static bool valid_id(const char *id)
{
        size_t n = strlen(id);
        if (n == 0 || n > 63)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((id[i] >= 'a' && id[i] <= 'z') || (id[i] >= '0' && id[i] <= '9') ||
                      id[i] == '-'))
                        return false;
        return true;
}

/* The route of a request to a sandbox's port; 0, or an HTTP status to answer. */
static int sandbox_route(struct hreq *h, unsigned port, char *why, size_t whylen)
{
        const char *url = h->url;
        const char *token = hreq_header(h, "X-Access-Token");
        bool token_ok = same_secret(token, h->sbx->token);
        if (port == SERVE_ENVD_PORT) {
                if (strcmp(url, "/health") == 0)
                        return 204; /* answered at once */
                if (strcmp(url, "/files") == 0) {
                        bool get = strcmp(h->method, "GET") == 0;
                        if (!get && strcmp(h->method, "POST") != 0)
                                return 405;
                        if (!token_ok &&
                            serve_check_signature(
                                h->sbx, hreq_query(h, "path"), get ? "read" : "write",
                                hreq_query(h, "username"), hreq_query(h, "signature"),
                                hreq_query(h, "signature_expiration"), why, whylen) < 0)
                                return 401;
                        h->route = get ? &route_files_get : &route_files_post;
                        return 0;
                }
                if (!token_ok) {
                        snprintf(why, whylen, "missing or wrong X-Access-Token for sandbox %s",
                                 h->sbx->id);
                        return 401;
                }
                if (strncmp(url, "/process.Process/", 17) == 0 ||
                    strncmp(url, "/filesystem.Filesystem/", 23) == 0) {
                        if (strcmp(h->method, "POST") != 0)
                                return 405;
                        h->route = &route_envd;
                        return 0;
                }
                snprintf(why, whylen, "no envd endpoint %s", url);
                return 404;
        }
        if (port == SERVE_JUPYTER_PORT) {
                if (strcmp(url, "/health") == 0)
                        return 200;
                /* The code interpreter's clients send the access token on
                 * /execute only, and the traffic token everywhere. */
                if (!token_ok &&
                    !same_secret(hreq_header(h, "E2B-Traffic-Access-Token"), h->sbx->token)) {
                        snprintf(why, whylen, "missing or wrong access token for sandbox %s",
                                 h->sbx->id);
                        return 401;
                }
                if (strcmp(url, "/execute") == 0 || strncmp(url, "/contexts", 9) == 0) {
                        h->route = &route_interp;
                        return 0;
                }
                snprintf(why, whylen, "no code interpreter endpoint %s", url);
                return 404;
        }
        return port_route(h, port, why, whylen);
}

/* Picks the route; 0, or an HTTP status to answer (with h->why). */
static int route(struct hreq *h)
{
        char id[72];
        unsigned port = 0;
        const char *sid = hreq_header(h, "E2b-Sandbox-Id");
        const char *sport = hreq_header(h, "E2b-Sandbox-Port");
        bool to_sandbox = false;
        if (sid) {
                char *end;
                unsigned long p = sport ? strtoul(sport, &end, 10) : 0;
                if (!sport || *end || p == 0 || p > 65535) {
                        snprintf(h->why, sizeof(h->why), "E2b-Sandbox-Port: a port number");
                        return 400;
                }
                if (strlen(sid) >= sizeof(id)) {
                        snprintf(h->why, sizeof(h->why), "E2b-Sandbox-Id: too long");
                        return 400;
                }
                snprintf(id, sizeof(id), "%s", sid);
                port = (unsigned)p;
                to_sandbox = true;
        } else if (host_target(hreq_header(h, "Host"), id, sizeof(id), &port)) {
                to_sandbox = true;
        }
        if (to_sandbox && serve_backend) {
                if (valid_id(id))
                        return serve_backend->sandbox_route(h, id, port);
                snprintf(h->why, sizeof(h->why), "The sandbox %.64s was not found", id);
                return 502;
        }
        if (to_sandbox) {
                /* A paused sandbox created with autoResume wakes for it (E2B's). */
                /* E2B's edge: a sandbox that is not running is a 502 with its
                 * body, for envd's and the interpreter's ports too. */
                if (!valid_id(id) || (!(h->sbx = serve_get(id)) && !(h->sbx = serve_wake(id))))
                        return port_gone_route(h, id, h->why, sizeof(h->why));
                return sandbox_route(h, port, h->why, sizeof(h->why));
        }
        /* A signed /files URL carries no sandbox id: the signature finds it. */
        if (strcmp(h->url, "/files") == 0 && hreq_query(h, "signature")) {
                bool get = strcmp(h->method, "GET") == 0;
                h->sbx = serve_find_signed(hreq_query(h, "path"), get ? "read" : "write",
                                           hreq_query(h, "username"), hreq_query(h, "signature"),
                                           hreq_query(h, "signature_expiration"), h->why,
                                           sizeof(h->why));
                if (!h->sbx)
                        return 401;
                h->route = get ? &route_files_get : &route_files_post;
                return 0;
        }
        if (strcmp(h->url, "/health") == 0)
                return serve.ready ? 200 : 503;
        if (!api_key_ok(h)) {
                snprintf(h->why, sizeof(h->why), "Invalid API key");
                return 401;
        }
        h->route = serve_backend                 ? serve_backend->api
                   : strcmp(h->url, "/mcp") == 0 ? &route_mcp
                                                 : &route_api;
        return 0;
}

static enum MHD_Result answer_status(struct hreq *h, int status)
{
        if (status == 204 || (status == 200 && !h->why[0]))
                return strcmp(h->url, "/health") == 0 && status == 200
                           ? reply_json(h, 200, json_pack("{s:s}", "status", "ok"))
                           : reply_empty(h, (unsigned)status);
        if (status == 503 && strcmp(h->url, "/health") == 0)
                return reply_error(h, 503,
                                   "cellvm serve is not ready (building the template; with "
                                   "--single: warming its sandbox, or that sandbox ended)");
        if (status == 405)
                return reply_error(h, 405, "method %s not allowed on %s", h->method, h->url);
        return reply_error(h, (unsigned)status, "%s", h->why[0] ? h->why : "bad request");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        (void)cls;
        (void)version;
        struct hreq *h = *con_cls;
        if (!h || !h->conn) { /* made by on_uri, or not (no memory then) */
                if (!h)
                        h = calloc(1, sizeof(*h));
                if (!h)
                        return MHD_NO;
                h->conn = conn;
                h->method = method;
                h->url = url;
                *con_cls = h;
                h->status = route(h);
                return MHD_YES; /* the body, if any, comes next */
        }
        if (*upload_data_size) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                if (h->status)
                        return MHD_YES; /* answered with an error once read */
                if (h->route->body) {
                        h->status = h->route->body(h, upload_data, n);
                        return MHD_YES;
                }
                if (n > h->route->body_max - cv_buf_pending(&h->in)) {
                        snprintf(h->why, sizeof(h->why), "request body over %zu bytes",
                                 h->route->body_max);
                        h->status = 413;
                        return MHD_YES;
                }
                if (cv_buf_append(&h->in, upload_data, n) < 0)
                        h->status = 507;
                return MHD_YES;
        }
        if (h->status)
                return answer_status(h, h->status);
        if (cv_buf_append(&h->in, "", 1) < 0)
                return MHD_NO;
        h->body = (char *)h->in.data;
        h->len = cv_buf_pending(&h->in) - 1;
        return h->route->done(h);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        (void)cls;
        (void)conn;
        (void)toe;
        struct hreq *h = *con_cls;
        if (!h)
                return;
        if (h->free_state)
                h->free_state(h->state);
        serve_put(h->sbx);
        cv_buf_free(&h->in);
        free(h->raw_uri);
        free(h);
        *con_cls = NULL;
}

/* The request target as sent, before libmicrohttpd decodes it: a sandbox's own
 * server gets it unchanged (serve_port.c). Its length is bounded by the
 * connection's memory limit. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
        (void)cls;
        (void)conn;
        struct hreq *h = calloc(1, sizeof(*h));
        if (h && !(h->raw_uri = strdup(uri))) {
                free(h);
                h = NULL;
        }
        return h;
}

static void on_mhd_error(void *cls, const char *fmt, va_list ap)
{
        (void)cls;
        fputs("cellvm serve: libmicrohttpd: ", stderr);
        vfprintf(stderr, fmt, ap);
}

struct MHD_Daemon *serve_http_start(const struct sockaddr *addr, int listen_fd,
                                    unsigned client_timeout_s, char *err, size_t errlen)
{
        unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                         MHD_USE_ERROR_LOG |
                         MHD_ALLOW_UPGRADE; /* a sandbox's WebSocket servers (serve_upgrade.c) */
        if (addr && addr->sa_family == AF_INET6)
                flags |= MHD_USE_IPv6;
        /* Where to listen: the socket made for --unix, else the address. */
        struct MHD_OptionItem where =
            listen_fd >= 0 ? (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, listen_fd, NULL}
                           : (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)addr};
        struct MHD_OptionItem opts[] = {
            where,
            {MHD_OPTION_CONNECTION_TIMEOUT, client_timeout_s, NULL},
            {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 64 * 1024, NULL},
            {MHD_OPTION_CONNECTION_LIMIT, 512, NULL},
            {MHD_OPTION_END, 0, NULL},
        };
        struct MHD_Daemon *d = MHD_start_daemon(
            flags, 0, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_error, NULL,
            MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_URI_LOG_CALLBACK, on_uri,
            NULL, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
        if (!d)
                snprintf(err, errlen, "libmicrohttpd could not start on that address");
        return d;
}

/* --- helpers shared by the handlers ---------------------------------------- */

void iso_time(char *out, size_t outlen, int64_t ms)
{
        time_t t = (time_t)(ms / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        char base[32];
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(out, outlen, "%s.%03dZ", base, (int)(ms % 1000));
}

int parse_iso_ms(const char *s, int64_t *ms)
{
        struct tm tm = {0};
        const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        int64_t frac = 0;
        if (*p == '.') {
                int digits = 0;
                for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                        if (digits < 3)
                                frac = frac * 10 + (*p - '0');
                while (digits > 0 && digits < 3) {
                        frac *= 10;
                        digits++;
                }
        }
        int64_t off = 0;
        if (*p == '+' || *p == '-') {
                /* exactly "+hh:mm" */
                const char *d = p + 1;
                for (int i = 0; i < 5; i++)
                        if (i == 2 ? d[i] != ':' : !(d[i] >= '0' && d[i] <= '9'))
                                return -EINVAL;
                int hh = (d[0] - '0') * 10 + (d[1] - '0'), mm = (d[3] - '0') * 10 + (d[4] - '0');
                off = (hh * 60 + mm) * 60 * (*p == '+' ? 1 : -1);
                p += 6;
        } else if (*p == 'Z' || *p == 'z') {
                p++;
        } else {
                return -EINVAL;
        }
        if (*p)
                return -EINVAL;
        *ms = ((int64_t)timegm(&tm) - off) * 1000 + frac;
        return 0;
}

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const unsigned char *p, size_t len)
{
        size_t n = 4 * ((len + 2) / 3);
        char *out = malloc(n + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)p[i] << 16;
                if (i + 1 < len)
                        v |= (uint32_t)p[i + 1] << 8;
                if (i + 2 < len)
                        v |= p[i + 2];
                *o++ = b64chars[(v >> 18) & 63];
                *o++ = b64chars[(v >> 12) & 63];
                *o++ = i + 1 < len ? b64chars[(v >> 6) & 63] : '=';
                *o++ = i + 2 < len ? b64chars[v & 63] : '=';
        }
        *o = '\0';
        return out;
}

static int b64val(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+' || c == '-')
                return 62;
        if (c == '/' || c == '_')
                return 63;
        return -1;
}

unsigned char *base64_decode(const char *s, size_t len, size_t *outlen)
{
        while (len && s[len - 1] == '=')
                len--;
        if (len % 4 == 1)
                return NULL;
        unsigned char *out = malloc(len * 3 / 4 + 1);
        if (!out)
                return NULL;
        size_t o = 0;
        uint32_t acc = 0;
        int bits = 0;
        for (size_t i = 0; i < len; i++) {
                int v = b64val(s[i]);
                if (v < 0) {
                        free(out);
                        return NULL;
                }
                acc = (acc << 6) | (uint32_t)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[o++] = (unsigned char)(acc >> bits);
                }
        }
        *outlen = o;
        return out;
}

/* n (or -1 - n) as a JSON number: exact when it fits json_int_t, else the
 * nearest double (jansson writes no longer integers; a JavaScript client
 * parses any long integer to that same double). */
static json_t *int_to_json(uint64_t n, bool negative)
{
        if (n <= INT64_MAX)
                return json_integer(negative ? -1 - (json_int_t)n : (json_int_t)n);
        return json_real(negative ? -1 - (double)n : (double)n);
}

/* A CBOR bignum: tag 2 over n's big-endian bytes, or 3 over those of -1 - n. */
static json_t *bignum_to_json(const cbor_item_t *tag)
{
        cbor_item_t *inner = cbor_tag_item(tag); /* a new reference */
        json_t *j = NULL;
        if (cbor_isa_bytestring(inner) && cbor_bytestring_is_definite(inner)) {
                const unsigned char *p = cbor_bytestring_handle(inner);
                size_t len = cbor_bytestring_length(inner);
                size_t skip = 0;
                while (skip < len && p[skip] == 0)
                        skip++;
                uint64_t u = 0;
                double d = 0;
                for (size_t i = skip; i < len; i++) {
                        u = (u << 8) | p[i];
                        d = d * 256 + p[i];
                }
                bool negative = cbor_tag_value(tag) == 3;
                j = len - skip <= 8 ? int_to_json(u, negative) : json_real(negative ? -1 - d : d);
        }
        cbor_decref(&inner);
        return j ? j : json_null();
}

static json_t *cbor_to_json_depth(const cbor_item_t *it, int depth)
{
        if (depth > 64)
                return json_null();
        switch (cbor_typeof(it)) {
        case CBOR_TYPE_UINT:
                return int_to_json(cbor_get_int(it), false);
        case CBOR_TYPE_NEGINT:
                return int_to_json(cbor_get_int(it), true);
        case CBOR_TYPE_STRING:
                if (cbor_string_is_definite(it))
                        return json_stringn((const char *)cbor_string_handle(it),
                                            cbor_string_length(it));
                return json_null();
        case CBOR_TYPE_BYTESTRING: {
                if (!cbor_bytestring_is_definite(it))
                        return json_null();
                char *b = base64_encode(cbor_bytestring_handle(it), cbor_bytestring_length(it));
                json_t *j = b ? json_string(b) : json_null();
                free(b);
                return j;
        }
        case CBOR_TYPE_ARRAY: {
                json_t *a = json_array();
                for (size_t i = 0; a && i < cbor_array_size(it); i++)
                        json_array_append_new(
                            a, cbor_to_json_depth(cbor_array_handle(it)[i], depth + 1));
                return a;
        }
        case CBOR_TYPE_MAP: {
                json_t *o = json_object();
                struct cbor_pair *p = cbor_map_handle(it);
                for (size_t i = 0; o && i < cbor_map_size(it); i++) {
                        if (!cbor_isa_string(p[i].key) || !cbor_string_is_definite(p[i].key))
                                continue;
                        json_object_setn_new(o, (const char *)cbor_string_handle(p[i].key),
                                             cbor_string_length(p[i].key),
                                             cbor_to_json_depth(p[i].value, depth + 1));
                }
                return o;
        }
        case CBOR_TYPE_FLOAT_CTRL:
                if (cbor_float_ctrl_is_ctrl(it)) {
                        if (cbor_is_bool(it))
                                return json_boolean(cbor_get_bool(it));
                        return json_null();
                } else {
                        double d = cbor_float_get_float(it);
                        if (d != d || d > 1.7976931348623157e308 || d < -1.7976931348623157e308)
                                return json_null(); /* JSON has no NaN or infinity */
                        return json_real(d);
                }
        case CBOR_TYPE_TAG: {
                if (cbor_tag_value(it) == 2 || cbor_tag_value(it) == 3)
                        return bignum_to_json(it);
                cbor_item_t *inner = cbor_tag_item(it); /* a new reference */
                json_t *j = cbor_to_json_depth(inner, depth + 1);
                cbor_decref(&inner);
                return j;
        }
        }
        return json_null();
}

json_t *cbor_to_json(const cbor_item_t *item)
{
        return cbor_to_json_depth(item, 0);
}
