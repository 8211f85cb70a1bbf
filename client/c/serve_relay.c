/* A socket and an agent tunnel relayed both ways (serve_relay.h). */
#include "serve_relay.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "cbor_util.h"
#include "mono_clock.h"
#include "msgtypes.h"
#include "serve_port.h"

#define READ_CHUNK (64u * 1024u)

struct relay {
        struct mux_req *r;
        int sock;
        const struct relay_opts *o;
        pthread_mutex_t lock; /* the fields below */
        pthread_cond_t cond;
        uint64_t unacked; /* socket bytes the agent has not acknowledged */
        uint64_t last_ms; /* the last byte either way */
        bool stop;        /* the tunnel side ended: the socket's reader stops */
        bool sock_done;   /* the socket's side ended (or failed) */
};

int serve_send_all(int fd, const void *p, size_t n)
{
        const uint8_t *b = p;
        while (n > 0) {
                ssize_t k = send(fd, b, n, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -EPIPE;
                b += k;
                n -= (size_t)k;
        }
        return 0;
}

/* Socket to tunnel, on a thread of its own, within the window and the rate. */
static void *sock_to_tunnel(void *arg)
{
        struct relay *x = arg;
        uint8_t *buf = malloc(READ_CHUNK);
        uint64_t start = mono_ms(), total = 0;
        for (;;) {
                ssize_t n = buf ? recv(x->sock, buf, READ_CHUNK, 0) : -1;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                pthread_mutex_lock(&x->lock);
                while (!x->stop && x->unacked + (uint64_t)n > CV_PORT_WINDOW)
                        pthread_cond_wait(&x->cond, &x->lock);
                bool stop = x->stop;
                if (!stop) {
                        x->unacked += (uint64_t)n;
                        x->last_ms = mono_ms();
                }
                pthread_mutex_unlock(&x->lock);
                if (stop || port_send(x->r, buf, (size_t)n, 0, false) < 0)
                        break;
                total += (uint64_t)n;
                uint64_t due = x->o->rate ? start + total * 1000u / x->o->rate : 0, now = mono_ms();
                if (due > now) {
                        struct timespec d = {.tv_sec = (time_t)((due - now) / 1000),
                                             .tv_nsec = (long)((due - now) % 1000) * 1000000L};
                        nanosleep(&d, NULL);
                }
        }
        free(buf);
        /* The socket is done sending: so is the tunnel (dropped if it ended). */
        (void)port_send(x->r, NULL, 0, 0, true);
        pthread_mutex_lock(&x->lock);
        x->sock_done = true;
        pthread_mutex_unlock(&x->lock);
        return NULL;
}

/* Tunnel to socket, on the caller's thread. Returns true if the tunnel ended. */
static bool tunnel_to_sock(struct relay *x)
{
        const struct relay_opts *o = x->o;
        if (o->nearly && serve_send_all(x->sock, o->early, o->nearly) < 0)
                return false;
        uint64_t sock_done_at = 0;
        for (;;) {
                struct cvc_event ev;
                int rc = mux_next(x->r, 1000, &ev);
                if (rc < 0)
                        return true; /* ended, or the sandbox is gone */
                if (rc == 0) {
                        pthread_mutex_lock(&x->lock);
                        bool done = x->sock_done;
                        uint64_t quiet = mono_ms() - x->last_ms;
                        pthread_mutex_unlock(&x->lock);
                        if (done && !sock_done_at)
                                sock_done_at = mono_ms();
                        if (sock_done_at && mono_ms() - sock_done_at > (uint64_t)o->linger_ms)
                                return false;
                        if (o->idle_ms && quiet > (uint64_t)o->idle_ms) {
                                fprintf(stderr, "cellvm serve: %s closed: idle for %d s\n",
                                        o->label ? o->label : "a relay", o->idle_ms / 1000);
                                return false;
                        }
                        continue;
                }
                bool terminal = cv_msg_is_terminal(ev.type), failed = false;
                if (ev.type == CV_MSG_PORT_DATA_OUT && ev.root) {
                        uint64_t ack = 0;
                        const uint8_t *data;
                        size_t n = 0;
                        bool eof = false;
                        pthread_mutex_lock(&x->lock);
                        x->last_ms = mono_ms();
                        if (cv_map_get_uint(ev.root, "ack", &ack) == 0 && ack > 0) {
                                x->unacked -= ack <= x->unacked ? ack : x->unacked;
                                pthread_cond_broadcast(&x->cond);
                        }
                        pthread_mutex_unlock(&x->lock);
                        if (cv_map_get_bytes(ev.root, "data", &data, &n) == 0 && n > 0)
                                failed = serve_send_all(x->sock, data, n) < 0 ||
                                         port_send(x->r, NULL, 0, n, false) < 0;
                        if (!failed && cv_map_get_bool(ev.root, "eof", &eof) == 0 && eof &&
                            shutdown(x->sock, SHUT_WR) < 0 && errno != ENOTCONN)
                                failed = true;
                }
                cvc_event_free(&ev);
                if (terminal)
                        return true;
                if (failed)
                        return false;
        }
}

bool serve_relay(struct mux_req *r, int sock, const struct relay_opts *o)
{
        struct relay x = {
            .r = r, .sock = sock, .o = o, .unacked = o->unacked, .last_ms = mono_ms()};
        pthread_mutex_init(&x.lock, NULL);
        pthread_cond_init(&x.cond, NULL);
        pthread_t reader;
        bool reading = pthread_create(&reader, NULL, sock_to_tunnel, &x) == 0;
        bool ended = reading ? tunnel_to_sock(&x) : false;
        pthread_mutex_lock(&x.lock);
        x.stop = true;
        pthread_cond_broadcast(&x.cond);
        pthread_mutex_unlock(&x.lock);
        if (shutdown(sock, SHUT_RDWR) < 0 && errno != ENOTCONN)
                fprintf(stderr, "cellvm serve: shutdown of a relayed connection: %s\n",
                        strerror(errno));
        if (reading)
                pthread_join(reader, NULL);
        pthread_mutex_destroy(&x.lock);
        pthread_cond_destroy(&x.cond);
        return ended;
}
