/*
 * Any other port of a sandbox (E2B's getHost(port)): the HTTP request is
 * relayed through a tunnel of the agent (PORT_OPEN, docs/PROTOCOL.md section
 * 12) to that TCP port on the guest's loopback, and the guest's response is
 * relayed back as it comes. The request goes out as HTTP/1.1 with
 * `Connection: close`, its body streamed (re-chunked when the client chunked
 * it); the response's head is parsed within HEAD_MAX, its body relayed by
 * length, chunked (decoded here; libmicrohttpd frames it for the client) or to
 * the end of the stream. Both directions keep the tunnel's window, so neither
 * side holds more than CV_PORT_WINDOW bytes of it in flight.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "serve_http.h"
#include "serve_http1.h"
#include "serve_port.h"

/* The guest's status line and headers. */
#define HEAD_MAX (64u * 1024u)
/* Bytes per PORT_DATA toward the guest. */
#define SEND_CHUNK (64u * 1024u)
/* Response bytes the guest may send while its request is still being sent. */
#define EARLY_MAX (1u << 20)
/* How long a send waits for the guest to take more of the request body. */
#define SEND_WAIT_MS 60000
/* How long PORT_OPEN and the response's head may take. */
#define OPEN_WAIT_MS 30000
#define HEAD_WAIT_MS 300000

struct port_fwd {
        struct sandbox *s; /* the request's (referenced by it) */
        unsigned port;
        struct mux_req *r; /* the tunnel, once PORT_OPEN was sent */
        bool opened;
        bool refused;   /* nothing listens on the port */
        bool ended;     /* the tunnel's terminal message came */
        bool guest_eof; /* the guest finished sending */
        bool chunked;   /* the client's body is chunked: re-chunk it */
        bool upgrade;   /* the client asked to switch protocols (WebSocket) */
        int fail;       /* an HTTP status to answer with `why`, or 0 */
        char why[256];
        uint64_t unacked;  /* request bytes the agent has not acknowledged */
        struct cv_buf got; /* guest bytes not yet relayed (the head, early body) */
};

static void fwd_free(void *p)
{
        struct port_fwd *f = p;
        if (!f)
                return;
        if (f->r) {
                if (!f->ended)
                        serve_cancel(f->s, f->r->id);
                mux_close_req(f->r);
        }
        cv_buf_free(&f->got);
        free(f);
}

int port_send(struct mux_req *r, const uint8_t *data, size_t n, uint64_t ack, bool eof)
{
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, (data != NULL) + (ack > 0) + eof);
        if (data) {
                cv_enc_cstr(&b, "data");
                cv_enc_bytes(&b, data, n);
        }
        if (ack > 0) {
                cv_enc_cstr(&b, "ack");
                cv_enc_uint(&b, ack);
        }
        if (eof) {
                cv_enc_cstr(&b, "eof");
                cv_enc_bool(&b, true);
        }
        int rc = mux_send_buf(r, CV_MSG_PORT_DATA, &b);
        cv_buf_free(&b);
        return rc;
}

/* One message of the tunnel while the request is sent or the head awaited:
 * acks, early response bytes (kept in `got`, acknowledged while under
 * EARLY_MAX + HEAD_MAX), the guest's eof, the end. 0, or -1 with f->fail set. */
static int take_event(struct port_fwd *f, const struct cvc_event *ev)
{
        if (ev->type == CV_MSG_ERROR || ev->type == CV_MSG_OK) {
                f->ended = true;
                f->guest_eof = true;
                /* A server that answered and closed before it read the whole
                 * request (a write then fails): its answer stands. */
                if (ev->type == CV_MSG_ERROR && cv_buf_pending(&f->got) == 0) {
                        f->fail = 502;
                        snprintf(f->why, sizeof(f->why), "port %u: %.*s: %.*s", f->port,
                                 (int)ev->u.fail.code_len, ev->u.fail.code,
                                 (int)ev->u.fail.message_len, ev->u.fail.message);
                        return -1;
                }
                return 0;
        }
        if (ev->type != CV_MSG_PORT_DATA_OUT || !ev->root)
                return 0;
        uint64_t ack = 0;
        const uint8_t *data;
        size_t n = 0;
        bool eof = false;
        if (cv_map_get_uint(ev->root, "ack", &ack) == 0)
                f->unacked -= ack <= f->unacked ? ack : f->unacked;
        if (cv_map_get_bool(ev->root, "eof", &eof) == 0 && eof)
                f->guest_eof = true;
        if (cv_map_get_bytes(ev->root, "data", &data, &n) == 0 && n > 0) {
                if (cv_buf_append(&f->got, data, n) < 0) {
                        f->fail = 500;
                        snprintf(f->why, sizeof(f->why), "out of memory");
                        return -1;
                }
                /* Unacknowledged, the guest's bytes stop at the window: it
                 * then waits for us while we may wait for it. */
                if (cv_buf_pending(&f->got) <= EARLY_MAX + HEAD_MAX &&
                    port_send(f->r, NULL, 0, n, false) < 0) {
                        f->fail = 502;
                        snprintf(f->why, sizeof(f->why), "the sandbox's agent connection broke");
                        return -1;
                }
        }
        return 0;
}

/* Waits for one message of the tunnel. 0, or -1 with f->fail set. */
static int next_event(struct port_fwd *f, int timeout_ms, const char *waiting_for)
{
        struct cvc_event ev;
        int rc = mux_next(f->r, timeout_ms, &ev);
        if (rc == 0) {
                f->fail = 504;
                snprintf(f->why, sizeof(f->why), "port %u: no %s within %d s", f->port, waiting_for,
                         timeout_ms / 1000);
                return -1;
        }
        if (rc < 0) {
                f->ended = true;
                f->fail = 502;
                snprintf(f->why, sizeof(f->why), "The sandbox was not found");
                return -1;
        }
        rc = take_event(f, &ev);
        cvc_event_free(&ev);
        return rc;
}

/* PORT_OPEN and its answer. 0, or -1 with f->fail (or f->refused) set. */
static int open_tunnel(struct hreq *h, struct port_fwd *f)
{
        int rc = mux_open(&h->sbx->mux, &f->r);
        if (rc < 0) {
                f->r = NULL;
                f->fail = 502;
                snprintf(f->why, sizeof(f->why), "The sandbox was not found");
                return -1;
        }
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "port");
        cv_enc_uint(&b, f->port);
        rc = mux_send_buf(f->r, CV_MSG_PORT_OPEN, &b);
        cv_buf_free(&b);
        if (rc < 0) {
                f->fail = 502;
                snprintf(f->why, sizeof(f->why), "the sandbox's agent connection broke");
                return -1;
        }
        struct cvc_event ev;
        rc = mux_next(f->r, OPEN_WAIT_MS, &ev);
        if (rc <= 0) {
                f->fail = rc == 0 ? 504 : 502;
                snprintf(f->why, sizeof(f->why), "port %u: the tunnel did not open", f->port);
                return -1;
        }
        if (ev.type == CV_MSG_PORT_OPENED) {
                f->opened = true;
        } else if (ev.type == CV_MSG_ERROR) {
                f->ended = true;
                f->refused = ev.u.fail.code_len == 18 &&
                             memcmp(ev.u.fail.code, "connection_refused", 18) == 0;
                f->fail = 502;
                snprintf(f->why, sizeof(f->why), "port %u: %.*s", f->port,
                         (int)ev.u.fail.message_len, ev.u.fail.message);
        } else {
                f->fail = 502;
                snprintf(f->why, sizeof(f->why), "port %u: unexpected answer %s", f->port,
                         cv_msg_type_name(ev.type));
        }
        cvc_event_free(&ev);
        return f->opened ? 0 : -1;
}

/* Sends request bytes within the window. 0, or -1 with f->fail set. */
static int send_bytes(struct port_fwd *f, const char *p, size_t n)
{
        while (n > 0) {
                if (f->ended)
                        return 0; /* the guest is gone: the rest has nowhere to go */
                size_t k = n < SEND_CHUNK ? n : SEND_CHUNK;
                if (f->unacked + k > CV_PORT_WINDOW) {
                        if (next_event(f, SEND_WAIT_MS, "room for the request body") < 0)
                                return -1;
                        continue;
                }
                if (port_send(f->r, (const uint8_t *)p, k, 0, false) < 0) {
                        f->fail = 502;
                        snprintf(f->why, sizeof(f->why), "the sandbox's agent connection broke");
                        return -1;
                }
                f->unacked += k;
                p += k;
                n -= k;
        }
        return 0;
}

static bool name_is(const char *a, const char *b)
{
        return strcasecmp(a, b) == 0;
}

/* Headers not passed on: hop-by-hop ones (RFC 9110 7.6.1), the framing (set
 * here), the routing and the token (E2B's edge drops them too). */
static bool dropped_request_header(const char *name)
{
        static const char *const names[] = {
            "Connection",
            "Keep-Alive",
            "Proxy-Connection",
            "TE",
            "Trailer",
            "Transfer-Encoding",
            "Upgrade",
            "Proxy-Authorization",
            "Content-Length",
            "Expect",
            "E2b-Sandbox-Id",
            "E2b-Sandbox-Port",
            "E2B-Traffic-Access-Token",
        };
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (name_is(name, names[i]))
                        return true;
        return false;
}

static enum MHD_Result add_header(void *cls, enum MHD_ValueKind kind, const char *name,
                                  const char *value)
{
        (void)kind;
        struct cv_buf *b = cls;
        if (!name || dropped_request_header(name))
                return MHD_YES;
        if (!value)
                value = "";
        if (strpbrk(name, "\r\n:") || strpbrk(value, "\r\n"))
                return MHD_YES; /* libmicrohttpd parsed it: cannot happen, never passed on */
        cv_buf_append(b, name, strlen(name));
        cv_buf_append(b, ": ", 2);
        cv_buf_append(b, value, strlen(value));
        cv_buf_append(b, "\r\n", 2);
        return MHD_YES;
}

static void append_str(struct cv_buf *b, const char *s)
{
        cv_buf_append(b, s, strlen(s));
}

/* Opens the tunnel and sends the request's head. 0, or -1 with f->fail set. */
static int start(struct hreq *h, struct port_fwd *f)
{
        if (open_tunnel(h, f) < 0)
                return -1;
        const char *te = hreq_header(h, "Transfer-Encoding");
        const char *cl = hreq_header(h, "Content-Length");
        f->chunked = te && !cl && strcasestr(te, "chunked");
        struct cv_buf b;
        cv_buf_init(&b);
        const char *target = h->raw_uri ? h->raw_uri : h->url;
        cv_buf_append(&b, h->method, strlen(h->method));
        append_str(&b, " ");
        cv_buf_append(&b, target, strlen(target));
        append_str(&b, " HTTP/1.1\r\n");
        MHD_get_connection_values(h->conn, MHD_HEADER_KIND, add_header, &b);
        if (cl) {
                char line[64];
                int n = snprintf(line, sizeof(line), "Content-Length: %llu\r\n",
                                 strtoull(cl, NULL, 10));
                cv_buf_append(&b, line, (size_t)n);
        } else if (f->chunked) {
                append_str(&b, "Transfer-Encoding: chunked\r\n");
        }
        /* An Upgrade (WebSocket) goes on as the client asked; anything else is
         * one request on a connection of its own. */
        const char *up = hreq_header(h, "Upgrade"), *conn = hreq_header(h, "Connection");
        f->upgrade = up && conn && strcasestr(conn, "upgrade") && !strpbrk(up, "\r\n");
        if (f->upgrade) {
                append_str(&b, "Upgrade: ");
                cv_buf_append(&b, up, strlen(up));
                append_str(&b, "\r\nConnection: Upgrade\r\n\r\n");
        } else {
                append_str(&b, "Connection: close\r\n\r\n");
        }
        int rc = b.err ? -1 : send_bytes(f, (const char *)cv_buf_head(&b), cv_buf_pending(&b));
        if (b.err) {
                f->fail = 500;
                snprintf(f->why, sizeof(f->why), "out of memory");
        }
        cv_buf_free(&b);
        return rc;
}

static int fwd_body(struct hreq *h, const char *data, size_t len)
{
        struct port_fwd *f = h->state;
        if (f->fail || f->ended)
                return 0; /* answered at the end; the rest of the body is read and dropped */
        if (!f->r && start(h, f) < 0)
                return 0;
        /* A failed send sets f->fail, answered at the end. */
        if (!f->chunked) {
                (void)send_bytes(f, data, len);
                return 0;
        }
        char size[24];
        int n = snprintf(size, sizeof(size), "%zx\r\n", len);
        if (send_bytes(f, size, (size_t)n) == 0 && send_bytes(f, data, len) == 0)
                (void)send_bytes(f, "\r\n", 2);
        return 0;
}

/* --- the response --------------------------------------------------------- */

static int put_body(void *ud, const void *p, size_t n)
{
        return hstream_put(ud, p, n);
}

static int relay_event(struct agent_stream *as, const struct cvc_event *ev)
{
        struct h1_body *b = as->ud;
        if (ev->type == CV_MSG_PORT_DATA_OUT && ev->root) {
                const uint8_t *data;
                size_t n = 0;
                bool eof = false;
                if (cv_map_get_bytes(ev->root, "data", &data, &n) == 0 && n > 0) {
                        if (h1_body_feed(b, data, n, put_body, &as->hs) < 0)
                                return -1;
                        /* Handed on (hstream holds one message at most): room for more. */
                        if (port_send(as->r, NULL, 0, n, false) < 0)
                                return -1;
                }
                if (cv_map_get_bool(ev->root, "eof", &eof) == 0 && eof) {
                        if (b->framing == H1_TO_EOF)
                                b->done = true;
                        else if (!b->done)
                                return -1; /* cut short: the client sees the cut */
                }
        } else if (cv_msg_is_terminal(ev->type)) {
                if (b->framing == H1_TO_EOF && ev->type == CV_MSG_OK)
                        b->done = true;
                if (!b->done)
                        return -1;
        }
        if (b->done)
                as->hs.done = true;
        return 0;
}

static int add_response_header(void *ud, const char *name, const char *value)
{
        return MHD_add_response_header(ud, name, value) == MHD_YES ? 0 : -1;
}

static enum MHD_Result reply_closed_port(struct hreq *h, struct port_fwd *f)
{
        /* E2B's edge, for a port nothing listens on. */
        return reply_json(h, 502,
                          json_pack("{s:s, s:s, s:i, s:i}", "message",
                                    "The sandbox is running but port is not open", "sandboxId",
                                    h->sbx->id, "port", (int)f->port, "code", 502));
}

static enum MHD_Result fwd_fail(struct hreq *h, struct port_fwd *f)
{
        if (f->refused)
                return reply_closed_port(h, f);
        if (strcmp(f->why, "The sandbox was not found") == 0)
                return reply_json(h, 502,
                                  json_pack("{s:s, s:s, s:i}", "message", f->why, "sandboxId",
                                            h->sbx->id, "code", 502));
        return reply_error(h, (unsigned)(f->fail ? f->fail : 502), "%s", f->why);
}

/* `n` bytes and a NUL (the guest's may hold NULs: not strndup). */
static char *dup_bytes(const char *p, size_t n)
{
        char *c = malloc(n + 1);
        if (c) {
                memcpy(c, p, n);
                c[n] = '\0';
        }
        return c;
}

static enum MHD_Result fwd_done(struct hreq *h)
{
        struct port_fwd *f = h->state;
        if (!f->fail && !f->r)
                (void)start(h, f);
        if (!f->fail && f->chunked && !f->ended)
                (void)send_bytes(f, "0\r\n\r\n", 5);
        /* The head: read until its blank line, skipping interim (1xx) ones. */
        bool head_request = strcmp(h->method, "HEAD") == 0;
        size_t end = 0;
        unsigned status = 0;
        struct h1_body rl;
        while (!f->fail) {
                const char *p = (const char *)cv_buf_head(&f->got);
                size_t n = cv_buf_pending(&f->got);
                end = h1_head_end(p, n < HEAD_MAX ? n : HEAD_MAX);
                if (end) {
                        char *copy = dup_bytes(p, end);
                        int rc =
                            copy ? h1_parse_head(copy, end, head_request, &status, &rl, NULL, NULL)
                                 : -1;
                        free(copy);
                        if (rc < 0) {
                                f->fail = 502;
                                snprintf(f->why, sizeof(f->why),
                                         "port %u: the server's response head is malformed",
                                         f->port);
                                break;
                        }
                        if (status >= 200 || (status == 101 && f->upgrade))
                                break;
                        cv_buf_consume(&f->got, end); /* 1xx: the final head follows */
                        continue;
                }
                if (n >= HEAD_MAX) {
                        f->fail = 502;
                        snprintf(f->why, sizeof(f->why),
                                 "port %u: the server's response head is over %u bytes", f->port,
                                 HEAD_MAX);
                        break;
                }
                if (f->guest_eof) {
                        f->fail = 502;
                        snprintf(f->why, sizeof(f->why),
                                 "port %u: the server closed the connection without a response",
                                 f->port);
                        break;
                }
                if (next_event(f, HEAD_WAIT_MS, "response") < 0)
                        break;
        }
        if (f->fail)
                return fwd_fail(h, f);
        if (status == 101) {
                char *head = dup_bytes((const char *)cv_buf_head(&f->got), end);
                if (!head)
                        return reply_error(h, 500, "out of memory");
                cv_buf_consume(&f->got, end);
                struct mux_req *r = f->r;
                f->r = NULL; /* upgrade_reply's now */
                enum MHD_Result ret =
                    upgrade_reply(h, r, head, end, cv_buf_head(&f->got), cv_buf_pending(&f->got));
                free(head);
                return ret;
        }

        struct h1_body *relay = malloc(sizeof(*relay));
        struct agent_stream *as = relay ? agent_stream_new(h->sbx, f->r) : NULL;
        if (!as) {
                free(relay);
                return reply_error(h, 500, "out of memory");
        }
        *relay = rl;
        as->ud = relay;
        as->free_ud = free;
        as->on_event = relay_event;
        as->ended = f->ended;
        f->r = NULL; /* the stream's now */
        char *copy = dup_bytes((const char *)cv_buf_head(&f->got), end);
        cv_buf_consume(&f->got, end);
        if (!copy || h1_body_feed(relay, cv_buf_head(&f->got), cv_buf_pending(&f->got), put_body,
                                  &as->hs) < 0) {
                free(copy);
                as->hs.release(&as->hs);
                free(as->hs.buf);
                free(as);
                return reply_error(h, 502, "port %u: the server's response is malformed", f->port);
        }
        /* After the guest's end, what came is all there is (cut short unless
         * the body ran to the end of the stream). */
        if (relay->done || f->guest_eof)
                as->hs.done = true;
        uint64_t size = relay->framing == H1_LENGTH ? relay->left + as->hs.len
                        : relay->framing == H1_NONE ? 0
                                                    : MHD_SIZE_UNKNOWN;
        /* A HEAD's answer carries the length a GET would have (never sent). */
        if (head_request)
                size = relay->announced ? relay->announced_length : MHD_SIZE_UNKNOWN;
        struct MHD_Response *resp = hstream_response(&as->hs, size);
        if (!resp) {
                free(copy);
                return MHD_NO;
        }
        struct h1_body scratch;
        int rc =
            h1_parse_head(copy, end, head_request, &status, &scratch, add_response_header, resp);
        free(copy);
        enum MHD_Result r = rc < 0 ? MHD_NO : MHD_queue_response(h->conn, status, resp);
        MHD_destroy_response(resp);
        return r;
}

static const struct hroute route_port = {.body = fwd_body, .done = fwd_done};

int port_route(struct hreq *h, unsigned port, char *why, size_t whylen)
{
        if (__atomic_load_n(&h->sbx->private_traffic, __ATOMIC_ACQUIRE)) {
                if (!same_secret(hreq_header(h, "E2B-Traffic-Access-Token"), h->sbx->token)) {
                        snprintf(why, whylen,
                                 "sandbox %s is private (allowPublicTraffic=false): its ports "
                                 "need its E2B-Traffic-Access-Token",
                                 h->sbx->id);
                        return 403;
                }
        }
        struct port_fwd *f = calloc(1, sizeof(*f));
        if (!f) {
                snprintf(why, whylen, "out of memory");
                return 500;
        }
        f->s = h->sbx;
        f->port = port;
        cv_buf_init(&f->got);
        h->state = f;
        h->free_state = fwd_free;
        h->route = &route_port;
        return 0;
}

/* --- a sandbox that is not running ------------------------------------------ */

static int gone_body(struct hreq *h, const char *data, size_t len)
{
        (void)h;
        (void)data;
        (void)len;
        return 0; /* read and dropped */
}

static enum MHD_Result gone_done(struct hreq *h)
{
        /* E2B's edge, for a sandbox that is not running (host.test.ts). */
        return reply_json(h, 502,
                          json_pack("{s:s, s:s, s:i}", "message", "The sandbox was not found",
                                    "sandboxId", (const char *)h->state, "code", 502));
}

static const struct hroute route_port_gone = {.body = gone_body, .done = gone_done};

int port_gone_route(struct hreq *h, const char *id, char *why, size_t whylen)
{
        /* Quoted back: only the characters of an id, as much as one holds. */
        size_t n = strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-");
        char *copy = strndup(id, n > 63 ? 63 : n);
        if (!copy) {
                snprintf(why, whylen, "out of memory");
                return 500;
        }
        h->state = copy;
        h->free_state = free;
        h->route = &route_port_gone;
        return 0;
}
