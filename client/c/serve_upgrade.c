/*
 * A connection a sandbox's own server upgraded (WebSocket, or any protocol
 * named by `Upgrade`), relayed between the client and the agent's tunnel as
 * raw bytes once both sides switched: libmicrohttpd hands over the client's
 * socket (serve_port.h). Two directions, two threads: the connection's own
 * (guest to client) and one started here (client to guest), each keeping the
 * tunnel's window. Either side's end ends the other: a client that closed is
 * given CLIENT_LINGER_MS for the guest's last bytes, then the tunnel is
 * cancelled.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "cbor_util.h"
#include "msgtypes.h"
#include "serve_http1.h"
#include "serve_port.h"

#define CLIENT_LINGER_MS 30000
#define READ_CHUNK (64u * 1024u)

struct upgrade {
        struct sandbox *s; /* referenced */
        struct mux_req *r; /* the tunnel */
        uint8_t *early;    /* the guest's bytes after its 101 */
        size_t nearly;
        int sock;
        pthread_mutex_t lock; /* the fields below */
        pthread_cond_t cond;
        uint64_t unacked; /* client bytes the agent has not acknowledged */
        bool stop;        /* the guest side ended: the client's reader stops */
        bool client_done; /* the client closed its side (or failed) */
};

static uint64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int send_all(int fd, const uint8_t *p, size_t n)
{
        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -errno;
                p += k;
                n -= (size_t)k;
        }
        return 0;
}

/* Client to guest, on a thread of its own. */
static void *client_to_guest(void *arg)
{
        struct upgrade *u = arg;
        uint8_t *buf = malloc(READ_CHUNK);
        for (;;) {
                ssize_t n = buf ? recv(u->sock, buf, READ_CHUNK, 0) : -1;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                pthread_mutex_lock(&u->lock);
                while (!u->stop && u->unacked + (uint64_t)n > CV_PORT_WINDOW)
                        pthread_cond_wait(&u->cond, &u->lock);
                bool stop = u->stop;
                if (!stop)
                        u->unacked += (uint64_t)n;
                pthread_mutex_unlock(&u->lock);
                if (stop || port_send(u->r, buf, (size_t)n, 0, false) < 0)
                        break;
        }
        free(buf);
        /* The client is done sending: so is the tunnel (dropped if it ended). */
        (void)port_send(u->r, NULL, 0, 0, true);
        pthread_mutex_lock(&u->lock);
        u->client_done = true;
        pthread_mutex_unlock(&u->lock);
        return NULL;
}

/* Guest to client, on the connection's thread. Returns true if the tunnel ended. */
static bool guest_to_client(struct upgrade *u)
{
        if (u->nearly && send_all(u->sock, u->early, u->nearly) < 0)
                return false;
        uint64_t client_done_at = 0;
        for (;;) {
                struct cvc_event ev;
                int rc = mux_next(u->r, 1000, &ev);
                if (rc < 0)
                        return true; /* ended, or the sandbox is gone */
                if (rc == 0) {
                        pthread_mutex_lock(&u->lock);
                        bool done = u->client_done;
                        pthread_mutex_unlock(&u->lock);
                        if (done && !client_done_at)
                                client_done_at = now_ms();
                        if (client_done_at && now_ms() - client_done_at > CLIENT_LINGER_MS)
                                return false;
                        continue;
                }
                bool terminal = cv_msg_is_terminal(ev.type), failed = false;
                if (ev.type == CV_MSG_PORT_DATA_OUT && ev.root) {
                        uint64_t ack = 0;
                        const uint8_t *data;
                        size_t n = 0;
                        bool eof = false;
                        if (cv_map_get_uint(ev.root, "ack", &ack) == 0 && ack > 0) {
                                pthread_mutex_lock(&u->lock);
                                u->unacked -= ack <= u->unacked ? ack : u->unacked;
                                pthread_cond_broadcast(&u->cond);
                                pthread_mutex_unlock(&u->lock);
                        }
                        if (cv_map_get_bytes(ev.root, "data", &data, &n) == 0 && n > 0)
                                failed = send_all(u->sock, data, n) < 0 ||
                                         port_send(u->r, NULL, 0, n, false) < 0;
                        if (!failed && cv_map_get_bool(ev.root, "eof", &eof) == 0 && eof &&
                            shutdown(u->sock, SHUT_WR) < 0)
                                failed = true;
                }
                cvc_event_free(&ev);
                if (terminal)
                        return true;
                if (failed)
                        return false;
        }
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *con_cls, const char *extra_in,
                       size_t extra_in_size, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        (void)conn;
        (void)con_cls;
        struct upgrade *u = cls;
        u->sock = sock;
        /* Blocking: each direction has a thread of its own. */
        int fl = fcntl(sock, F_GETFL);
        bool ok = fl >= 0 && fcntl(sock, F_SETFL, fl & ~O_NONBLOCK) == 0;
        /* What the client sent after its request goes first. */
        if (ok && extra_in_size)
                ok = port_send(u->r, (const uint8_t *)extra_in, extra_in_size, 0, false) == 0;
        if (ok)
                u->unacked = extra_in_size;
        pthread_t reader;
        bool reading = ok && pthread_create(&reader, NULL, client_to_guest, u) == 0;
        bool ended = reading ? guest_to_client(u) : false;
        pthread_mutex_lock(&u->lock);
        u->stop = true;
        pthread_cond_broadcast(&u->cond);
        pthread_mutex_unlock(&u->lock);
        if (shutdown(sock, SHUT_RDWR) < 0 && errno != ENOTCONN)
                fprintf(stderr, "cellvm serve: shutdown of an upgraded connection: %s\n",
                        strerror(errno));
        if (reading)
                pthread_join(reader, NULL);
        if (!ended)
                serve_cancel(u->s, u->r->id);
        mux_close_req(u->r);
        (void)MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
        serve_put(u->s);
        pthread_mutex_destroy(&u->lock);
        pthread_cond_destroy(&u->cond);
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
        u->sock = -1;
        pthread_mutex_init(&u->lock, NULL);
        pthread_cond_init(&u->cond, NULL);
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
                pthread_mutex_destroy(&u->lock);
                pthread_cond_destroy(&u->cond);
                free(u->early);
                free(u);
        }
        return ret;
}
