/* cellvm mcp: one sandbox per MCP session, cloned from the template on the
 * first tool call and kept across calls. Its deadline runs mcp_idle_s()
 * past the last call, so a client that vanishes leaves nothing behind for
 * longer than that (the registry's deadline holds even if we die). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "registry.h"
#include "serve_http.h"

unsigned mcp_idle_s(void)
{
        const char *v = getenv("CELLVM_MCP_IDLE_S");
        char *end;
        unsigned long n = v && v[0] ? strtoul(v, &end, 10) : 0;
        return v && v[0] && !*end && n >= 10 && n <= 86400 ? (unsigned)n : MCP_SANDBOX_IDLE_S;
}

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
        pthread_mutex_lock(&s->run_lock);
        for (unsigned i = 0; i < MCP_EARLY_CANCELS; i++) {
                json_decref(s->early_cancels[i]);
                s->early_cancels[i] = NULL;
        }
        pthread_mutex_unlock(&s->run_lock);
        if (sbx) {
                serve_kill(sbx);
                serve_put(sbx);
        }
}

int mcp_session_sandbox(struct mcp_session *s, unsigned call_s, struct sandbox **out, char *err,
                        size_t errlen)
{
        s->last_used_ms = creg_now_ms();
        /* The idle lifetime past the call's own end: a cell may run up to its timeout. */
        unsigned life_s = mcp_idle_s() + call_s + MCP_CALL_GRACE_S;
        pthread_mutex_lock(&serve.life);
        bool dead = s->sbx && s->sbx->dead; /* its deadline passed, or its VM exited */
        int64_t deadline_ms = s->sbx ? s->sbx->deadline_ms : 0;
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
                int rc = serve_create("mcp", life_s, meta, NULL, &s->sbx, err, errlen);
                json_decref(meta);
                if (rc < 0) {
                        s->sbx = NULL;
                        return rc;
                }
        } else if (deadline_ms - s->last_used_ms <
                   ((int64_t)call_s + MCP_CALL_GRACE_S) * 1000 + (int64_t)mcp_idle_s() * 1000 / 2) {
                /* Moved only once half of the idle part is spent: a call costs no extra
                 * round trip. */
                int rc = serve_set_timeout(s->sbx, life_s, err, errlen);
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
        } else if (request_id) { /* not running yet, or never sent: kept a while */
                json_t **slot = &s->early_cancels[s->early_next++ % MCP_EARLY_CANCELS];
                json_decref(*slot);
                *slot = json_incref(request_id);
        }
        pthread_mutex_unlock(&s->run_lock);
        if (sbx) {
                serve_cancel(sbx, req);
                serve_put(sbx);
        }
}

bool mcp_session_cancelled_early(struct mcp_session *s, json_t *request_id)
{
        bool found = false;
        pthread_mutex_lock(&s->run_lock);
        for (unsigned i = 0; i < MCP_EARLY_CANCELS && !found; i++) {
                if (s->early_cancels[i] && json_equal(s->early_cancels[i], request_id)) {
                        json_decref(s->early_cancels[i]);
                        s->early_cancels[i] = NULL;
                        found = true;
                }
        }
        pthread_mutex_unlock(&s->run_lock);
        return found;
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
