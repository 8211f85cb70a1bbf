/* cellvm mcp: one sandbox per MCP session, cloned from the template on the
 * first tool call and kept across calls. Its deadline runs MCP_SANDBOX_IDLE_S
 * past the last call, so a client that vanishes leaves nothing behind for
 * longer than that (the registry's deadline holds even if we die). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "mcp.h"
#include "registry.h"
#include "serve_http.h"

void mcp_session_init(struct mcp_session *s)
{
        memset(s, 0, sizeof(*s));
        pthread_mutex_init(&s->lock, NULL);
        pthread_mutex_init(&s->run_lock, NULL);
        s->last_used_ms = creg_now_ms();
}

void mcp_session_end(struct mcp_session *s)
{
        pthread_mutex_lock(&s->lock);
        struct sandbox *sbx = s->sbx;
        s->sbx = NULL;
        pthread_mutex_unlock(&s->lock);
        if (sbx) {
                serve_kill(sbx);
                serve_put(sbx);
        }
}

int mcp_session_sandbox(struct mcp_session *s, struct sandbox **out, char *err, size_t errlen)
{
        s->last_used_ms = creg_now_ms();
        pthread_mutex_lock(&serve.life);
        bool dead = s->sbx && s->sbx->dead; /* its deadline passed, or its VM exited */
        pthread_mutex_unlock(&serve.life);
        if (dead) {
                serve_put(s->sbx);
                s->sbx = NULL;
        }
        pthread_mutex_lock(&s->run_lock);
        bool closing = s->closing;
        pthread_mutex_unlock(&s->run_lock);
        if (closing) {
                snprintf(err, errlen, "the client is gone");
                return -ECANCELED;
        }
        if (!s->sbx) {
                json_t *meta = json_pack("{s:s}", "cellvm", "mcp");
                int rc = serve_create("mcp", MCP_SANDBOX_IDLE_S, meta, NULL, &s->sbx, err, errlen);
                json_decref(meta);
                if (rc < 0) {
                        s->sbx = NULL;
                        return rc;
                }
        } else if (s->sbx->deadline_ms - s->last_used_ms < MCP_SANDBOX_IDLE_S * 1000 / 2) {
                /* Moved only once half of it is spent: a call costs no extra round trip. */
                int rc = serve_set_timeout(s->sbx, MCP_SANDBOX_IDLE_S, err, errlen);
                if (rc < 0)
                        return rc;
        }
        pthread_mutex_lock(&s->run_lock);
        s->run_sbx = s->sbx;
        pthread_mutex_unlock(&s->run_lock);
        *out = s->sbx;
        return 0;
}

void mcp_session_track(struct mcp_session *s, uint32_t req)
{
        pthread_mutex_lock(&s->run_lock);
        s->run_req = req;
        pthread_mutex_unlock(&s->run_lock);
}

void mcp_session_cancel(struct mcp_session *s, json_t *request_id)
{
        struct sandbox *sbx = NULL;
        uint32_t req = 0;
        pthread_mutex_lock(&s->run_lock);
        if (s->run_id && request_id && json_equal(s->run_id, request_id)) {
                s->cancelled = true;
                if (s->run_sbx && s->run_req) {
                        sbx = serve_ref(s->run_sbx);
                        req = s->run_req;
                }
        }
        pthread_mutex_unlock(&s->run_lock);
        if (sbx) {
                serve_cancel(sbx, req);
                serve_put(sbx);
        }
}

void mcp_session_abort(struct mcp_session *s)
{
        pthread_mutex_lock(&s->run_lock);
        s->closing = true;
        struct sandbox *sbx = s->run_sbx ? serve_ref(s->run_sbx) : NULL;
        pthread_mutex_unlock(&s->run_lock);
        if (sbx) {
                serve_kill(sbx);
                serve_put(sbx);
        }
}
