/*
 * A connection a sandbox's own server upgraded (WebSocket, or any protocol
 * named by `Upgrade`), relayed between the client and the agent's tunnel as
 * raw bytes once both sides switched: libmicrohttpd hands over the client's
 * socket (serve_port.h), and serve_relay.c relays it. Either side's end ends
 * the other: a client that closed is given CLIENT_LINGER_MS for the guest's
 * last bytes, then the tunnel is cancelled.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "cbor_util.h"
#include "msgtypes.h"
#include "serve_http1.h"
#include "serve_port.h"
#include "serve_relay.h"

#define CLIENT_LINGER_MS 30000

struct upgrade {
        struct sandbox *s; /* referenced */
        struct mux_req *r; /* the tunnel */
        uint8_t *early;    /* the guest's bytes after its 101 */
        size_t nearly;
};

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        (void)conn;
        (void)con_cls;
        struct upgrade *u = cls;
        /* Blocking: each direction has a thread of its own (serve_relay.c). */
        int fl = fcntl(sock, F_GETFL);
        bool ok = fl >= 0 && fcntl(sock, F_SETFL, fl & ~O_NONBLOCK) == 0;
        /* What the client sent after its request goes first. */
        if (ok && extra_in_size)
                ok = port_send(u->r, (const uint8_t *)extra_in, extra_in_size, 0, false) == 0;
        struct relay_opts o = {.early = u->early,
                               .nearly = u->nearly,
                               .unacked = extra_in_size,
                               .linger_ms = CLIENT_LINGER_MS};
        bool ended = ok ? serve_relay(u->r, sock, &o) : false;
        if (!ok && shutdown(sock, SHUT_RDWR) < 0 && errno != ENOTCONN)
                fprintf(stderr, "cellvm serve: shutdown of an upgraded connection: %s\n",
                        strerror(errno));
        if (!ended)
                serve_cancel(u->s, u->r->id);
        mux_close_req(u->r);
        (void)MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        serve_put(u->s);
        free(u->early);
        free(u);
}

static int add_header(void *ud, const char *name, const char *value)
{
        return MHD_add_response_header(ud, name, value) == MHD_YES ? 0 : -1;
}

enum MHD_Result upgrade_reply(struct hreq *h, struct mux_req *r, char *head, size_t head_len,
                              const uint8_t *early, size_t nearly)
{
        char protocol[256];
        struct upgrade *u = calloc(1, sizeof(*u));
        if (!u || h1_header_value(head, head_len, "Upgrade", protocol, sizeof(protocol)) < 0 ||
            (nearly && !(u->early = malloc(nearly)))) {
                free(u);
                serve_cancel(h->sbx, r->id);
                mux_close_req(r);
                return reply_error(h, 502, "the server's 101 answer names no protocol (Upgrade)");
        }
        if (nearly)
                memcpy(u->early, early, nearly);
        u->nearly = nearly;
        u->s = serve_ref(h->sbx);
        u->r = r;
        struct MHD_Response *resp = MHD_create_response_for_upgrade(on_upgrade, u);
        unsigned status;
        struct h1_body b;
        int rc = resp ? h1_parse_head(head, head_len, false, &status, &b, add_header, resp) : -1;
        if (rc == 0 && MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, protocol) != MHD_YES)
                rc = -1;
        enum MHD_Result ret =
            rc == 0 ? MHD_queue_response(h->conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp) : MHD_NO;
        if (resp)
                MHD_destroy_response(resp);
        /* Known gap: a client that leaves between this queueing and libmicrohttpd
         * sending the 101 never gets on_upgrade, and `u` with its tunnel stays
         * until the sandbox's agent connection ends (libmicrohttpd gives an
         * upgrade response no free callback; the order of its completion
         * notice and on_upgrade is not documented, so it is not guessed). */
        if (ret != MHD_YES) {
                /* on_upgrade never runs: the tunnel and the rest are ours to end. */
                serve_cancel(u->s, r->id);
                mux_close_req(r);
                serve_put(u->s);
                free(u->early);
                free(u);
        }
        return ret;
}
