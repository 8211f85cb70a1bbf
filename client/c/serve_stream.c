/* Responses that relay one agent request as the agent answers (serve_http.h). */
#include <poll.h>
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

/* How often a silent stream looks at its client's socket. */
#define WATCH_MS 200

/* Whether the client hung up (a FIN or an error; data it sends is not that). */
static bool client_gone(int fd)
{
        struct pollfd p = {.fd = fd, .events = POLLRDHUP};
        return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static int fill(struct hstream *hs)
{
        struct agent_stream *as = (struct agent_stream *)hs;
        struct cvc_event ev;
        int rc = 0;
        if (as->client_fd < 0) {
                rc = mux_next(as->r, as->idle_ms, &ev);
        } else {
                /* E2B's server (Starlette) sees a client leave at once and
                 * interrupts the cell (messaging.py, "Client disconnected
                 * during execution"): a runCode cut by its timeoutMs does not
                 * hold up the next one while this one prints nothing. */
                for (int waited = 0; rc == 0 && waited < as->idle_ms; waited += WATCH_MS) {
                        if (client_gone(as->client_fd))
                                return -1; /* release() cancels the agent's request */
                        int slice =
                            as->idle_ms - waited < WATCH_MS ? as->idle_ms - waited : WATCH_MS;
                        rc = mux_next(as->r, slice, &ev);
                }
        }
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
        as->client_fd = -1;
        as->hs.fill = fill;
        as->hs.release = release;
        return as;
}

void agent_stream_watch_client(struct agent_stream *as, struct hreq *h)
{
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(h->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
                as->client_fd = ci->connect_fd;
}
