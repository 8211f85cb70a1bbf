/* cellvm mcp: JSON-RPC 2.0 as MCP uses it (docs/MCP.md): initialize with
 * the version negotiation of the official SDKs, ping, tools/list,
 * tools/call; notifications are taken silently, anything else is an error
 * response naming what was wrong. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cellvm.h"
#include "mcp.h"

/* As @modelcontextprotocol/sdk's SUPPORTED_PROTOCOL_VERSIONS; the first is
 * its LATEST_PROTOCOL_VERSION, answered to a version we do not know. */
const char *const mcp_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                    "2024-11-05", "2024-10-07", NULL};

#define RPC_PARSE_ERROR -32700
#define RPC_INVALID_REQUEST -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS -32602
#define RPC_INTERNAL_ERROR -32603

static const char instructions[] =
    "Each session has its own Linux micro-VM (a cellvm sandbox, Debian with Python, "
    "pandas, matplotlib, Node.js): run_code keeps its variables between calls like a "
    "notebook, files and commands share its file system (home /home/user).";

bool mcp_version_supported(const char *v)
{
        for (size_t i = 0; mcp_versions[i]; i++)
                if (strcmp(v, mcp_versions[i]) == 0)
                        return true;
        return false;
}

json_t *mcp_error(json_t *id, int code, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_t *m = json_string(msg);
        if (!m) /* a cut character or client bytes that are not UTF-8 */
                m = json_string("invalid request");
        return json_pack("{s:s, s:O, s:{s:i, s:o}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                         "error", "code", code, "message", m);
}

static json_t *result(json_t *id, json_t *res)
{
        return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", res);
}

/* NULL when `msg` is a JSON-RPC message, else the error response naming
 * what is wrong with it. */
static json_t *check(json_t *msg)
{
        json_t *id = json_object_get(msg, "id");
        const char *why = NULL;
        if (!json_is_object(msg))
                why = "a message is a JSON object";
        else if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
                 strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") != 0)
                why = "\"jsonrpc\" must be \"2.0\"";
        else if (id && !json_is_string(id) && !json_is_integer(id))
                why = "\"id\" must be a string or an integer";
        else if (json_object_get(msg, "method") && !json_is_string(json_object_get(msg, "method")))
                why = "\"method\" must be a string";
        else if (!json_object_get(msg, "method") &&
                 !(id && (json_object_get(msg, "result") || json_object_get(msg, "error"))))
                why = "neither a request, a notification nor a response";
        if (!why)
                return NULL;
        return mcp_error(json_is_string(id) || json_is_integer(id) ? id : NULL, RPC_INVALID_REQUEST,
                         "Invalid Request: %s", why);
}

json_t *mcp_parse(const char *text, size_t len, json_t **error)
{
        json_error_t e;
        *error = NULL;
        json_t *msg = json_loadb(text, len, JSON_REJECT_DUPLICATES, &e);
        if (!msg) {
                *error = mcp_error(NULL, RPC_PARSE_ERROR, "Parse error: %s (at byte %d)", e.text,
                                   e.position);
                return NULL;
        }
        if (json_is_array(msg) && json_array_size(msg) == 0)
                *error = mcp_error(NULL, RPC_INVALID_REQUEST, "Invalid Request: an empty batch");
        else if (!json_is_array(msg)) /* a batch's messages are checked as it runs */
                *error = check(msg);
        if (*error) {
                json_decref(msg);
                return NULL;
        }
        return msg;
}

const char *mcp_request_method(json_t *msg)
{
        if (!json_object_get(msg, "id"))
                return NULL;
        return json_string_value(json_object_get(msg, "method"));
}

static json_t *initialize(struct mcp_session *s, json_t *id, json_t *params)
{
        const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
        if (!asked)
                return mcp_error(id, RPC_INVALID_PARAMS,
                                 "initialize: params.protocolVersion (a string) is required");
        /* The client's version when we speak it, else our latest: the client
         * then decides whether it can go on (the spec's negotiation). */
        snprintf(s->version, sizeof(s->version), "%s",
                 mcp_version_supported(asked) ? asked : mcp_versions[0]);
        s->initialized = true;
        return result(id, json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
                                    s->version, "capabilities", "tools", "listChanged", 0,
                                    "serverInfo", "name", "cellvm", "title", "cellvm sandboxes",
                                    "version", CVC_VERSION, "instructions", instructions));
}

static json_t *tools_call(struct mcp_session *s, json_t *id, json_t *params)
{
        const char *name = json_string_value(json_object_get(params, "name"));
        json_t *args = json_object_get(params, "arguments");
        if (!name)
                return mcp_error(id, RPC_INVALID_PARAMS, "tools/call: params.name is required");
        if (args && !json_is_object(args) && !json_is_null(args))
                return mcp_error(id, RPC_INVALID_PARAMS,
                                 "tools/call: params.arguments must be an object");
        char err[512] = "";
        int code = RPC_INTERNAL_ERROR;
        json_t *empty = json_object();
        pthread_mutex_lock(&s->lock);
        if (mcp_session_cancelled_early(s, id)) { /* cancelled while it waited its turn */
                pthread_mutex_unlock(&s->lock);
                json_decref(empty);
                return NULL;
        }
        pthread_mutex_lock(&s->run_lock);
        s->run_id = json_incref(id);
        s->cancelled = false;
        pthread_mutex_unlock(&s->run_lock);
        json_t *res =
            mcp_tools_call(s, name, json_is_object(args) ? args : empty, &code, err, sizeof(err));
        pthread_mutex_lock(&s->run_lock);
        json_decref(s->run_id);
        s->run_id = NULL;
        s->run_sbx = NULL;
        s->run_req = 0;
        bool cancelled = s->cancelled;
        pthread_mutex_unlock(&s->run_lock);
        pthread_mutex_unlock(&s->lock);
        json_decref(empty);
        if (cancelled) { /* the client forgot the request: no response (the spec's rule) */
                json_decref(res);
                return NULL;
        }
        if (!res)
                return mcp_error(id, code, "%s", err[0] ? err : "the call failed");
        return result(id, res);
}

/* A JSON-RPC batch: MCP 2025-03-26 has servers take them, 2025-06-18 removed
 * them, so only a session that agreed on 2025-03-26 runs one. Its messages
 * run in order; the responses come as one array (NULL: none to send). */
static json_t *batch(struct mcp_session *s, json_t *msgs)
{
        if (strcmp(s->version, "2025-03-26") != 0)
                return mcp_error(NULL, RPC_INVALID_REQUEST,
                                 "Invalid Request: JSON-RPC batches are not supported under MCP "
                                 "%s (2025-03-26 has them; 2025-06-18 removed them): send one "
                                 "message at a time",
                                 s->initialized ? s->version : "before initialize");
        json_t *replies = json_array();
        size_t i;
        json_t *msg;
        json_array_foreach(msgs, i, msg)
        {
                json_t *reply = check(msg);
                const char *method = reply ? NULL : mcp_request_method(msg);
                if (method && strcmp(method, "initialize") == 0)
                        reply =
                            mcp_error(json_object_get(msg, "id"), RPC_INVALID_REQUEST,
                                      "Invalid Request: initialize must not be part of a batch");
                else if (!reply)
                        reply = mcp_dispatch(s, msg);
                if (reply)
                        json_array_append_new(replies, reply);
        }
        if (json_array_size(replies) == 0) {
                json_decref(replies);
                return NULL;
        }
        return replies;
}

json_t *mcp_dispatch(struct mcp_session *s, json_t *msg)
{
        if (json_is_array(msg))
                return batch(s, msg);
        json_t *id = json_object_get(msg, "id");
        const char *method = json_string_value(json_object_get(msg, "method"));
        json_t *params = json_object_get(msg, "params");
        if (!id && method && strcmp(method, "notifications/cancelled") == 0)
                mcp_session_cancel(s, json_object_get(params, "requestId"));
        if (!id || !method)
                return NULL; /* a notification (initialized, cancelled, ...) or a response */
        if (params && !json_is_object(params))
                return mcp_error(id, RPC_INVALID_PARAMS, "%s: params must be an object", method);
        if (strcmp(method, "initialize") == 0)
                return initialize(s, id, params);
        if (strcmp(method, "ping") == 0)
                return result(id, json_object());
        if (strcmp(method, "tools/list") == 0)
                return result(id, json_pack("{s:o}", "tools", mcp_tools_list()));
        if (strcmp(method, "tools/call") == 0)
                return tools_call(s, id, params);
        return mcp_error(id, RPC_METHOD_NOT_FOUND,
                         "Method not found: %.200s (cellvm serves initialize, ping, tools/list, "
                         "tools/call)",
                         method);
}
