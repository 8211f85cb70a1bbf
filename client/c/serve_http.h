/*
 * cellvm serve's HTTP side: one request's state, the responses handlers
 * give, and the streams (NDJSON, Connect) they write as the agent answers.
 * libmicrohttpd parses HTTP; what it hands over (headers, body) is bounded
 * and checked here before a handler sees it.
 */
#ifndef CELLVM_CLIENT_SERVE_HTTP_H
#define CELLVM_CLIENT_SERVE_HTTP_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "serve.h"

#define HTTP_JSON_MAX (1u << 20) /* a JSON or Connect request body */

struct hreq;

/* What a route does with the body and at its end. */
struct hroute {
        /* Each piece of the body as it arrives: 0, or an HTTP status to
         * answer with once the body is read (the rest is skipped). NULL:
         * the body is kept whole, up to `body_max` (413 past it). */
        int (*body)(struct hreq *h, const char *data, size_t len);
        /* The whole request is in: queue the response. */
        enum MHD_Result (*done)(struct hreq *h);
        size_t body_max;
};

struct hreq {
        struct MHD_Connection *conn;
        const char *method, *url;
        char *raw_uri; /* the request target as sent (path and query, not decoded) */
        const struct hroute *route;
        struct sandbox *sbx; /* the target sandbox (referenced), or NULL */
        struct cv_buf in;    /* the kept body as it arrives (routes without `body`) */
        char *body;          /* then, for `done`: that body, NUL-terminated */
        size_t len;          /* its length without the NUL */
        int status;          /* set: answer this error once the body is read */
        char why[256];
        void *state;                  /* a route's own */
        void (*free_state)(void *st); /* called when the request ends */
};

/* Compares a client's secret `a` (NULL: none) with `b` in time independent of
 * where they differ. */
bool same_secret(const char *a, const char *b);

/* The kept body (in `done`), now the caller's to free; `h` keeps none. */
char *hreq_take_body(struct hreq *h, size_t *len);

/* Header or query value (NULL when absent). */
const char *hreq_header(struct hreq *h, const char *name);
const char *hreq_query(struct hreq *h, const char *name);
/* The `limit` query argument (1 to `max`; `max` when absent) into *limit:
 * false when it is none of those (a 400). */
bool hreq_limit(struct hreq *h, long max, long *limit);

/* Responses. The control plane's and /files' errors are E2B's
 * `{"code": status, "message": ...}`. */
enum MHD_Result reply_json(struct hreq *h, unsigned status, json_t *body); /* steals body */
/* A page of a list: 200 with the array `arr` (stolen; NULL: 500, out of memory)
 * and, when more follow, the id the next page starts at as `x-next-token`. */
enum MHD_Result reply_json_page(struct hreq *h, json_t *arr, const char *next_token);
enum MHD_Result reply_error(struct hreq *h, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
enum MHD_Result reply_empty(struct hreq *h, unsigned status);
enum MHD_Result reply_text(struct hreq *h, unsigned status, const char *text);
/* Connect's unary error: `{"code": "<connect code>", "message": ...}`. */
enum MHD_Result reply_connect_error(struct hreq *h, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A streamed response: `fill` blocks until it appended output to the
 * stream (hstream_put) or ended it (`done`); it runs on the connection's
 * own thread. `release` runs once, when the response ends or the client
 * went away (`st->finished` tells which). */
struct hstream {
        char *buf;
        size_t len, off, cap;
        bool done;
        bool finished; /* the last byte was handed to the client */
        int (*fill)(struct hstream *st);
        void (*release)(struct hstream *st);
        void *ud;
};
int hstream_put(struct hstream *st, const void *data, size_t len);
enum MHD_Result reply_stream(struct hreq *h, unsigned status, const char *content_type,
                             struct hstream *st);
/* A response reading `st` (`size` bytes, or MHD_SIZE_UNKNOWN), for the caller
 * to add headers to and queue; NULL when out of memory (`st` is then released). */
struct MHD_Response *hstream_response(struct hstream *st, uint64_t size);

/* A response that relays one agent request as the agent answers it: `fill`
 * waits for the request's next message and hands it to `on_event` (which
 * writes to the stream and, at the terminal message, sets `ended` and
 * hs.done); `on_idle` runs every `idle_ms` without one (a keepalive).
 * When the agent connection breaks (the sandbox ended), the response is cut
 * off, as E2B's edge cuts it. When the client leaves
 * before the end, the agent request is cancelled: at the next write, or,
 * with `client_fd` set (agent_stream_watch_client), within WATCH_MS of its
 * hang-up while no message comes. */
struct agent_stream {
        struct hstream hs; /* first: the stream callbacks get this */
        struct sandbox *s; /* referenced */
        struct mux_req *r;
        bool ended;
        int idle_ms;
        int client_fd; /* the client's socket, or -1 */
        int (*on_event)(struct agent_stream *as, const struct cvc_event *ev);
        int (*on_idle)(struct agent_stream *as);
        void (*free_ud)(void *ud);
        void *ud;
};
/* A zeroed agent_stream for `s` (referenced) and `r` (owned), its hs
 * callbacks set. NULL when out of memory (r and s are then left alone). */
struct agent_stream *agent_stream_new(struct sandbox *s, struct mux_req *r);
/* Lets `as` notice that the client of `h` hung up while the agent is silent. */
void agent_stream_watch_client(struct agent_stream *as, struct hreq *h);
/* Sends CANCEL for request `id` of `s` and does not wait for its answer. */
void serve_cancel(struct sandbox *s, uint32_t id);

/* The handlers' routes (serve_api.c, serve_interp.c, serve_envd.c, serve_files.c). */
extern const struct hroute route_api;
extern const struct hroute route_interp;
extern const struct hroute route_envd;
extern const struct hroute route_files_get;
extern const struct hroute route_files_post;
/* Any other port of a sandbox (serve_port.c): checks the traffic token rule,
 * sets the route; 0, or an HTTP status with `why`. */
int port_route(struct hreq *h, unsigned port, char *why, size_t whylen);
/* Any other port of a sandbox that is not running (`id` as the client named
 * it): E2B's edge's 502 body, once the request's body is read. */
int port_gone_route(struct hreq *h, const char *id, char *why, size_t whylen);

/* E2B's snapshots API (serve_snapshots.c): POST /sandboxes/{id}/snapshots of
 * running sandbox `s`; GET /snapshots and DELETE /templates/{id}. */
enum MHD_Result serve_snapshot_create(struct hreq *h, struct sandbox *s);
enum MHD_Result serve_snapshots_route(struct hreq *h);

/* E2B's /sandboxes routes (and /v2/'s) to a backend's handlers (serve_api.c):
 * create, list (`v2`: paginated), one sandbox's: /sandboxes/{id}[/action]
 * with `prefix` "/v2" or "" (`id` under 72 bytes; `action` "" when none),
 * and the snapshots'. */
struct api_handlers {
        enum MHD_Result (*create)(struct hreq *h);
        enum MHD_Result (*list)(struct hreq *h, bool v2);
        enum MHD_Result (*one)(struct hreq *h, const char *prefix, const char *id,
                               const char *action);
        /* GET /snapshots and DELETE /templates/{id}; NULL: the backend keeps none. */
        enum MHD_Result (*snapshots)(struct hreq *h);
};
enum MHD_Result serve_api_dispatch(struct hreq *h, const struct api_handlers *a);

/* Another backend's routes, set before the listener starts (--backend
 * agent-sandbox: serve_kube.c): its control plane, and the route of a
 * request to sandbox `id`'s `port` (0, or an HTTP status with h->why).
 * NULL: the sandboxes of this server. */
struct serve_backend {
        const struct hroute *api;
        int (*sandbox_route)(struct hreq *h, const char *id, unsigned port);
};
extern const struct serve_backend *serve_backend;

/* Converts an agent's CBOR value to JSON (bytes as base64), bounded by depth. */
json_t *cbor_to_json(const cbor_item_t *item);
/* RFC 3339 UTC with milliseconds, as E2B writes times. */
void iso_time(char *out, size_t outlen, int64_t ms);
/* An RFC 3339 time (Z or +hh:mm, fractions optional) in ms since the epoch. */
int parse_iso_ms(const char *s, int64_t *ms);
/* Standard base64 of `len` bytes: a malloc'ed NUL-terminated string. */
char *base64_encode(const unsigned char *p, size_t len);
/* Decodes standard base64 (padding optional): malloc'ed, *outlen set; NULL if invalid. */
unsigned char *base64_decode(const char *s, size_t len, size_t *outlen);

#endif
