/*
 * cellvm mcp: sandboxes as Model Context Protocol tools (docs/MCP.md).
 * JSON-RPC 2.0 messages (mcp_rpc.c) reach the tools (mcp_tools.c), which run
 * in the session's own sandbox, a clone of the template made on the first
 * call (mcp_session.c). Two transports: stdio, one message a line
 * (mcp_stdio.c, `cellvm mcp`), and Streamable HTTP at /mcp of `cellvm serve`
 * (mcp_http.c). Every message is hostile until parsed within bounds.
 */
#ifndef CELLVM_CLIENT_MCP_H
#define CELLVM_CLIENT_MCP_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "serve.h"

#define MCP_MESSAGE_MAX (16u << 20) /* one JSON-RPC message (a line, a POST body) */
#define MCP_OUTPUT_MAX (64u << 10)  /* bytes kept of each text output of a call */
#define MCP_IMAGE_MAX (4u << 20)    /* bytes of one image returned */
#define MCP_IMAGES_MAX 8            /* images returned by one call */
#define MCP_READ_MAX (8u << 20)     /* bytes read_file reads */
#define MCP_LIST_MAX 1000           /* entries list_files shows */
#define MCP_DEFAULT_TIMEOUT_S 30    /* a cell's or command's, unless asked */
#define MCP_CALL_GRACE_S 60         /* a call's end past its timeout (an interrupt, a kill) */
#define MCP_MAX_TIMEOUT_S 3600
#define MCP_SANDBOX_IDLE_S 600 /* a session's sandbox lives this long past its last call */

#define MCP_EARLY_CANCELS 8

struct mcp_session {
        pthread_mutex_t lock; /* one call at a time: the sandbox and the fields below */
        struct sandbox *sbx;  /* referenced and in serve's table, or NULL until the first call */
        bool initialized;
        char version[16]; /* the protocol version agreed on */
        int64_t last_used_ms;
        /* The call in progress, for a cancellation or a vanished client
         * arriving meanwhile (another thread): under run_lock. */
        pthread_mutex_t run_lock;
        json_t *run_id;          /* its JSON-RPC id */
        struct sandbox *run_sbx; /* its sandbox (the session's, borrowed) */
        uint32_t run_req;        /* its agent request, 0 when none is open */
        bool cancelled;          /* notifications/cancelled named it */
        bool closing;            /* the client is gone: no new sandbox */
        /* Requests cancelled before they ran (an HTTP call waiting on `lock`):
         * the last few ids, never run nor answered when their turn comes. */
        json_t *early_cancels[MCP_EARLY_CANCELS];
        unsigned early_next;
};

/* --- sessions (mcp_session.c) --- */

/* How long a session's sandbox outlives its last call, in seconds:
 * $CELLVM_MCP_IDLE_S (10 to 86400), else MCP_SANDBOX_IDLE_S. */
unsigned mcp_idle_s(void);
void mcp_session_init(struct mcp_session *s);
/* Ends the session's sandbox (killed) and frees what it holds. */
void mcp_session_end(struct mcp_session *s);
/* The session's sandbox, made on first use and again after it ended (its
 * deadline passed); its deadline is moved mcp_idle_s() past the end of a
 * call that may run call_s seconds (its timeout; 0 for a quick one). Call
 * with s->lock held. 0, or a negative errno with `err`. */
int mcp_session_sandbox(struct mcp_session *s, unsigned call_s, struct sandbox **out, char *err,
                        size_t errlen);

/* The agent request the call in progress waits on (0: none), so that a
 * cancellation can name it. */
void mcp_session_track(struct mcp_session *s, uint32_t req);
/* notifications/cancelled: CANCEL to the agent if `request_id` is the call
 * in progress (its response is then not sent). */
void mcp_session_cancel(struct mcp_session *s, json_t *request_id);
/* The client is gone: the call in progress ends with its sandbox (killed),
 * and no call makes a new one. */
void mcp_session_abort(struct mcp_session *s);
/* Whether notifications/cancelled named `request_id` before it ran (then
 * forgotten): the call is neither run nor answered. */
bool mcp_session_cancelled_early(struct mcp_session *s, json_t *request_id);

/* --- JSON-RPC (mcp_rpc.c) --- */

/* The protocol versions answered (newest first) and whether `v` is one. */
extern const char *const mcp_versions[];
bool mcp_version_supported(const char *v);
/* Parses one message or a batch (a non-empty array, its messages checked
 * as mcp_dispatch takes them): it, or NULL with *error set to the JSON-RPC
 * error response to send (parse error, invalid request). */
json_t *mcp_parse(const char *text, size_t len, json_t **error);
/* A request's method when `msg` is a request (has an id), else NULL. */
const char *mcp_request_method(json_t *msg);
/* Handles one parsed message: the response to send, or NULL for a
 * notification or a response. Takes s->lock for the call. A batch (under
 * 2025-03-26 only) gives the array of its responses, NULL if it has none. */
json_t *mcp_dispatch(struct mcp_session *s, json_t *msg);
/* The JSON-RPC error response for `id` (borrowed; NULL: null). */
json_t *mcp_error(json_t *id, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* --- tools (mcp_tools.c) --- */

/* tools/list's `tools` array (new reference). */
json_t *mcp_tools_list(void);
/* tools/call: the CallToolResult, or NULL with *rpc_code and `err` set for a
 * JSON-RPC error (unknown tool). Argument errors are results with isError,
 * so the model reads them. Call with s->lock held. */
json_t *mcp_tools_call(struct mcp_session *s, const char *name, json_t *args, int *rpc_code,
                       char *err, size_t errlen);

/* Opens agent request `type` with body `b` in `s` (mux_open, then sent),
 * tracked as the call's for cancellation. 0 or a negative errno. */
struct cv_buf;
int mcp_request_open(struct sandbox *s, uint16_t type, struct cv_buf *b, struct mux_req **r);
/* run_code (mcp_run_code.c): the cell's CallToolResult. */
json_t *mcp_run_code(struct sandbox *s, const char *code, const char *language, unsigned timeout_s);

/* --- Streamable HTTP (mcp_http.c): the /mcp route of cellvm serve --- */
struct hroute;
extern const struct hroute route_mcp;

#endif
