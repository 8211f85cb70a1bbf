/* Responses that relay one agent request as the agent answers (serve_http.h). */
#include <stdlib.h>

#include "buf.h"
#include "cbor_util.h"
#include "msgtypes.h"
#include "serve_http.h"

void serve_cancel(struct sandbox *s, uint32_t id)
{
        struct mux_req *c;
        if (mux_open(&s->mux, &c) < 0)
                return; /* the connection is gone: the agent cancelled it already */
        struct cv_buf b;
        cv_buf_init(&b);
        cv_enc_map(&b, 1);
        cv_enc_cstr(&b, "id");
        cv_enc_uint(&b, id);
        (void)mux_send_buf(c, CV_MSG_CANCEL, &b); /* a lost CANCEL: the request ran to its end */
        cv_buf_free(&b);
        mux_close_req(c);
}

static int fill(struct hstream *hs)
{
        struct agent_stream *as = (struct agent_stream *)hs;
        struct cvc_event ev;
        int rc = mux_next(as->r, as->idle_ms, &ev);
        if (rc == 0)
                return as->on_idle ? as->on_idle(as) : 0;
        if (rc < 0) {
                /* The sandbox went away (killed, expired): the connection is
                 * dropped mid-stream, which the SDKs read as the sandbox's
                 * end once its /health says 502, as with E2B. */
                as->ended = true;
                return -1;
        }
        if (cv_msg_is_terminal(ev.type))
                as->ended = true;
        rc = as->on_event(as, &ev);
        cvc_event_free(&ev);
        return rc;
}

static void release(struct hstream *hs)
{
        struct agent_stream *as = (struct agent_stream *)hs;
        if (!as->ended)
                serve_cancel(as->s, as->r->id);
        mux_close_req(as->r);
        serve_put(as->s);
        if (as->free_ud)
                as->free_ud(as->ud);
}

struct agent_stream *agent_stream_new(struct sandbox *s, struct mux_req *r)
{
        struct agent_stream *as = calloc(1, sizeof(*as));
        if (!as)
                return NULL;
        as->s = serve_ref(s);
        as->r = r;
        as->idle_ms = 5000;
        as->hs.fill = fill;
        as->hs.release = release;
        return as;
}
