/* cellvm serve's /mcp: MCP's Streamable HTTP transport (docs/MCP.md),
 * behind the API key. POST carries one JSON-RPC message: initialize opens a
 * session (Mcp-Session-Id) that every later message names; a request is
 * answered with application/json, a notification or response with 202.
 * DELETE ends the session and its sandbox; GET (no server-sent stream) is
 * 405. An abandoned session ends mcp_idle_s() after its last use. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp.h"
#include "registry.h"
#include "serve_http.h"

#define SESSIONS_MAX 256
#define SESSION_ID_HEX 32

struct http_session {
        char id[SESSION_ID_HEX + 1];
        struct mcp_session s;
        int refs; /* under table_lock; the table holds one */
        struct http_session *next;
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct http_session *sessions;
static size_t nsessions;

static void put_session(struct http_session *hs)
{
        pthread_mutex_lock(&table_lock);
        bool last = --hs->refs == 0;
        pthread_mutex_unlock(&table_lock);
        if (last) {
                mcp_session_end(&hs->s);
                free(hs);
        }
}

/* Unlinks `hs` from the table (table_lock held): the table's reference is
 * then the caller's to put. */
static void unlink_locked(struct http_session *hs)
{
        for (struct http_session **p = &sessions; *p; p = &(*p)->next)
                if (*p == hs) {
                        *p = hs->next;
                        nsessions--;
                        return;
                }
}

/* Ends the sessions nobody used for mcp_idle_s() (their sandboxes are
 * past their deadline already). */
static void sweep(void)
{
        int64_t now = creg_now_ms(), idle_ms = (int64_t)mcp_idle_s() * 1000;
        for (;;) {
                struct http_session *victim = NULL;
                pthread_mutex_lock(&table_lock);
                for (struct http_session *hs = sessions; hs && !victim; hs = hs->next)
                        if (hs->refs == 1 && now - hs->s.last_used_ms > idle_ms)
                                victim = hs;
                if (victim)
                        unlink_locked(victim);
                pthread_mutex_unlock(&table_lock);
                if (!victim)
                        return;
                put_session(victim);
        }
}

static struct http_session *find_session(const char *id, bool remove)
{
        pthread_mutex_lock(&table_lock);
        struct http_session *hs = sessions;
        while (hs && strcmp(hs->id, id) != 0)
                hs = hs->next;
        if (hs && remove)
                unlink_locked(hs); /* its reference is now the caller's */
        else if (hs)
                hs->refs++;
        pthread_mutex_unlock(&table_lock);
        return hs;
}

static enum MHD_Result answer(struct hreq *h, unsigned status, json_t *body, const char *session)
{
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        struct MHD_Response *r = MHD_create_response_from_buffer(
            text ? strlen(text) : 0, text, text ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
        if (!r) {
                free(text);
                return MHD_NO;
        }
        if (text)
                MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        if (session)
                MHD_add_response_header(r, "Mcp-Session-Id", session);
        if (status == 405)
                MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "POST, DELETE");
        enum MHD_Result rc = MHD_queue_response(h->conn, status, r);
        MHD_destroy_response(r);
        return rc;
}

/* The spec's DNS-rebinding guard: a browser's Origin must be the server's
 * own host. Clients that are not browsers send none. */
static bool origin_ok(struct hreq *h)
{
        const char *origin = hreq_header(h, "Origin");
        const char *host = hreq_header(h, "Host");
        if (!origin)
                return true;
        const char *sep = strstr(origin, "://");
        return sep && host && strcasecmp(sep + 3, host) == 0;
}

static enum MHD_Result post(struct hreq *h)
{
        const char *version = hreq_header(h, "MCP-Protocol-Version");
        if (version && !mcp_version_supported(version))
                return answer(h, 400,
                              mcp_error(NULL, -32600,
                                        "Bad Request: unsupported MCP-Protocol-Version %.40s",
                                        version),
                              NULL);
        json_t *error = NULL;
        json_t *msg = mcp_parse(h->body, h->len, &error);
        if (!msg)
                return answer(h, 400, error, NULL);
        const char *method = mcp_request_method(msg);
        json_t *id = json_object_get(msg, "id");
        if (method && strcmp(method, "initialize") == 0) {
                /* Ours: msg goes before the replies that name the request's id. */
                id = json_incref(id);
                struct http_session *hs = calloc(1, sizeof(*hs));
                if (!hs || serve_random_hex(hs->id, SESSION_ID_HEX) < 0) {
                        free(hs);
                        json_t *e = mcp_error(id, -32603, "Internal error: no session");
                        json_decref(msg);
                        json_decref(id);
                        return answer(h, 500, e, NULL);
                }
                mcp_session_init(&hs->s);
                hs->refs = 1;
                json_t *reply = mcp_dispatch(&hs->s, msg);
                json_decref(msg);
                if (!hs->s.initialized) { /* refused: no session */
                        put_session(hs);
                        json_decref(id);
                        return answer(h, 400, reply, NULL);
                }
                sweep();
                pthread_mutex_lock(&table_lock);
                bool full = nsessions >= SESSIONS_MAX;
                if (!full) {
                        hs->next = sessions;
                        sessions = hs;
                        nsessions++;
                }
                pthread_mutex_unlock(&table_lock);
                if (full) {
                        put_session(hs);
                        json_decref(reply);
                        json_t *e = mcp_error(id, -32603,
                                              "too many MCP sessions (%d): end some (DELETE "
                                              "/mcp) or wait for idle ones to expire",
                                              SESSIONS_MAX);
                        json_decref(id);
                        return answer(h, 503, e, NULL);
                }
                json_decref(id);
                return answer(h, 200, reply, hs->id);
        }
        const char *sid = hreq_header(h, "Mcp-Session-Id");
        if (!sid) {
                json_t *e = mcp_error(id, -32600,
                                      "Bad Request: Mcp-Session-Id is required (from initialize)");
                json_decref(msg);
                return answer(h, 400, e, NULL);
        }
        struct http_session *hs = find_session(sid, false);
        if (!hs) {
                json_t *e = mcp_error(id, -32001, "Session not found: initialize again");
                json_decref(msg);
                return answer(h, 404, e, NULL);
        }
        json_t *reply = mcp_dispatch(&hs->s, msg);
        /* A batch the session's version refuses is one error, not an array. */
        bool refused = json_is_array(msg) && json_is_object(reply);
        json_decref(msg);
        put_session(hs);
        if (refused)
                return answer(h, 400, reply, NULL);
        return reply ? answer(h, 200, reply, sid) : answer(h, 202, NULL, NULL);
}

static enum MHD_Result mcp_done(struct hreq *h)
{
        if (!origin_ok(h))
                return answer(
                    h, 403, mcp_error(NULL, -32600, "Forbidden: Origin is not this server"), NULL);
        if (strcmp(h->method, "POST") == 0)
                return post(h);
        if (strcmp(h->method, "DELETE") == 0) {
                const char *sid = hreq_header(h, "Mcp-Session-Id");
                struct http_session *hs = sid ? find_session(sid, true) : NULL;
                if (!hs)
                        return answer(h, sid ? 404 : 400,
                                      mcp_error(NULL, -32600, "%s",
                                                sid ? "Session not found"
                                                    : "Bad Request: Mcp-Session-Id is required"),
                                      NULL);
                /* A call in progress ends with its sandbox now, not when it returns. */
                mcp_session_abort(&hs->s);
                put_session(hs); /* the table's: the session and its sandbox end */
                return answer(h, 200, NULL, NULL);
        }
        return answer(h, 405,
                      mcp_error(NULL, -32600,
                                "Method Not Allowed: POST a message, DELETE a session (no "
                                "server-sent event stream)"),
                      NULL);
}

const struct hroute route_mcp = {.done = mcp_done, .body_max = MCP_MESSAGE_MAX};
