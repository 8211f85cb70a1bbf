/*
 * A serve sandbox's egress proxy, host side (serve_egress.h, docs/NETWORK.md).
 * One acceptor thread per sandbox keeps one EGRESS_ACCEPT waiting while fewer
 * than the sandbox's connection bound are open; each stream the guest opens
 * gets a thread that reads the proxy request (egress_request.c), decides
 * (egress_policy.c: the name before any lookup, then every address it
 * resolves to, egress_resolve.c), answers a refusal with a 403 naming the
 * rule, dials, and relays (serve_relay.c: within the tunnel's window, the
 * byte rate when set, and the idle timeout). A CONNECT's TLS ClientHello must name the
 * CONNECT host (SNI) or the stream is closed. Every sandbox of the API has one:
 * one created without rules refuses each stream, naming the PUT that gives it
 * rules, so that E2B's updateNetwork works on any sandbox.
 */
#include "serve_egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cbor_util.h"
#include "egress_request.h"
#include "egress_resolve.h"
#include "msgtypes.h"
#include "serve.h"
#include "serve_http.h"
#include "serve_port.h"
#include "serve_relay.h"

#define DEFAULT_MAX_CONNS 64u
#define DEFAULT_IDLE_S 300
#define DIAL_TIMEOUT_MS 10000

const char *serve_egress_who = "cellvm serve";

struct serve_egress {
        pthread_mutex_t lock; /* the fields below */
        pthread_cond_t cond;  /* a stream ended */
        struct egress_policy policy;
        /* {network, allow_internet_access} as given, kept across a pause; NULL:
         * created without rules, everything refused until a PUT gives some. */
        json_t *rules;
        /* E2B's SandboxDetail fields GET /sandboxes/{id} shows, {network,
         * allowInternetAccess} as given (serve_egress_show): NULL, none. */
        json_t *shown;
        unsigned active, max_conns;
        /* serve_egress_follow's rules file (the launcher's): read again when it
         * changed, before each stream's decision; NULL under serve. */
        char *follow;
        struct stat follow_st;
        uint64_t rate; /* bytes/s toward the guest per stream, 0: unbounded */
        int idle_ms;
};

struct stream {
        struct sandbox *s; /* referenced */
        struct serve_egress *e;
        struct mux_req *r;
        struct cv_buf in; /* guest bytes not yet passed on (head, ClientHello) */
        bool guest_eof, ended;
        int sock;
        uint64_t unacked; /* bytes sent to the guest it has not acknowledged */
        char target[EGRESS_NAME_MAX + 16];
};

static unsigned env_uint(const char *name, unsigned def)
{
        const char *v = getenv(name);
        char *end;
        if (!v || !*v)
                return def;
        errno = 0;
        unsigned long x = strtoul(v, &end, 10);
        return errno || *end || x > 0xFFFFFFFFul ? def : (unsigned)x;
}

static void log_refusal(struct stream *st, const char *why)
{
        fprintf(stderr, "%s: sandbox %s: egress to %s refused: %s\n", serve_egress_who, st->s->id,
                st->target, why);
}

/* One message of the stream before the relay: guest bytes into `in` (acknowledged),
 * acks, eof, the end. 1, 0 on timeout, -1 when the stream or connection ended. */
static int take(struct stream *st, int timeout_ms)
{
        struct cvc_event ev;
        int rc = mux_next(st->r, timeout_ms, &ev);
        if (rc <= 0) {
                if (rc < 0)
                        st->ended = true;
                return rc < 0 ? -1 : 0;
        }
        if (cv_msg_is_terminal(ev.type)) {
                st->ended = st->guest_eof = true;
                cvc_event_free(&ev);
                return -1;
        }
        int out = 1;
        if (ev.type == CV_MSG_PORT_DATA_OUT && ev.root) {
                uint64_t ack = 0;
                const uint8_t *data;
                size_t n = 0;
                bool eof = false;
                if (cv_map_get_uint(ev.root, "ack", &ack) == 0)
                        st->unacked -= ack <= st->unacked ? ack : st->unacked;
                if (cv_map_get_bool(ev.root, "eof", &eof) == 0 && eof)
                        st->guest_eof = true;
                if (cv_map_get_bytes(ev.root, "data", &data, &n) == 0 && n > 0 &&
                    (cv_buf_append(&st->in, data, n) < 0 ||
                     port_send(st->r, NULL, 0, n, false) < 0))
                        out = -1;
        }
        cvc_event_free(&ev);
        return out;
}

/* Sends `n` bytes to the guest within the window (before the relay). 0 or -1. */
static int to_guest(struct stream *st, const void *p, size_t n, bool eof)
{
        while (st->unacked + n > CV_PORT_WINDOW)
                if (take(st, st->e->idle_ms) <= 0)
                        return -1;
        st->unacked += n;
        return port_send(st->r, p, n, 0, eof) < 0 ? -1 : 0;
}

/* An HTTP answer of the proxy, and the end of the guest's stream. */
static void answer(struct stream *st, unsigned status, const char *reason, const char *text)
{
        char msg[1024];
        int len = snprintf(msg, sizeof(msg),
                           "HTTP/1.1 %u %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                           "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
                           status, reason, strlen(text) + 1, text);
        if (len > 0 && (size_t)len < sizeof(msg))
                (void)to_guest(st, msg, (size_t)len, true);
}

/* A 403 "egress to TARGET refused<how><why>", logged with `why`. */
static void refuse_as(struct stream *st, const char *how, const char *why)
{
        char text[768];
        snprintf(text, sizeof(text), "cellvm: egress to %s refused%s%s", st->target, how, why);
        log_refusal(st, why);
        answer(st, 403, "Forbidden", text);
}

static void refuse(struct stream *st, const char *rule)
{
        refuse_as(st, " by ", rule);
}

/* A blocking connection to one of `addrs`, within DIAL_TIMEOUT_MS each: the fd or -errno. */
static int dial(const struct sockaddr_storage *addrs, size_t n)
{
        int err = -EHOSTUNREACH;
        for (size_t i = 0; i < n; i++) {
                socklen_t len = addrs[i].ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                                              : sizeof(struct sockaddr_in6);
                int fd = socket(addrs[i].ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (fd < 0)
                        return -errno;
                int rc = connect(fd, (const struct sockaddr *)&addrs[i], len);
                if (rc < 0 && errno == EINPROGRESS) {
                        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                        int soerr = 0;
                        socklen_t sl = sizeof(soerr);
                        int pr = poll(&pfd, 1, DIAL_TIMEOUT_MS);
                        if (pr == 0)
                                soerr = ETIMEDOUT;
                        else if (pr < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
                                soerr = errno;
                        rc = soerr ? -1 : 0;
                        errno = soerr;
                }
                if (rc == 0) {
                        int fl = fcntl(fd, F_GETFL);
                        int one = 1;
                        if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0) {
                                (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                                return fd;
                        }
                }
                err = -errno;
                if (close(fd) < 0)
                        fprintf(stderr, "%s: egress: close: %s\n", serve_egress_who,
                                strerror(errno));
        }
        return err;
}

/* An address of this machine on the port this server listens on: whatever the
 * rules say, a sandbox's egress does not reach the server (its API, other
 * sandboxes' routes). */
static bool is_this_server(const struct sockaddr_storage *a)
{
        bool v4 = a->ss_family == AF_INET;
        const struct sockaddr_in *sin = (const struct sockaddr_in *)a;
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)a;
        if (serve.listen_port == 0 ||
            ntohs(v4 ? sin->sin_port : sin6->sin6_port) != serve.listen_port)
                return false;
        if (v4 ? (ntohl(sin->sin_addr.s_addr) >> 24) == 127 || sin->sin_addr.s_addr == 0
               : IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr) ||
                     IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr) ||
                     (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) && sin6->sin6_addr.s6_addr[12] == 127))
                return true;
        struct ifaddrs *list;
        if (getifaddrs(&list) < 0)
                return true; /* cannot tell: refuse */
        bool mine = false;
        for (const struct ifaddrs *i = list; i && !mine; i = i->ifa_next) {
                if (!i->ifa_addr || i->ifa_addr->sa_family != a->ss_family)
                        continue;
                mine =
                    v4 ? ((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr.s_addr ==
                             sin->sin_addr.s_addr
                       : memcmp(
                             &((const struct sockaddr_in6 *)(const void *)i->ifa_addr)->sin6_addr,
                             &sin6->sin6_addr, sizeof(sin6->sin6_addr)) == 0;
        }
        freeifaddrs(list);
        return mine;
}

static int install(struct serve_egress *e, json_t *network, json_t *aia, char *why, size_t whylen);

/* The rules file `path` ({network, allow_internet_access}): its object, or
 * NULL with `why` saying what is wrong with it. */
static json_t *load_rules(const char *path, char *why, size_t whylen)
{
        json_error_t jerr;
        json_t *rules = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        if (rules && json_is_object(rules))
                return rules;
        snprintf(why, whylen, "%s", rules ? "not an object" : jerr.text);
        json_decref(rules);
        return NULL;
}

/* The launcher's live update (cellvm egress): the rules file, read again when
 * it was replaced since the last read, so a stream that starts after the
 * command returns is decided by the new rules. A file that does not parse
 * keeps the rules in force (said on stderr). */
static void refresh(struct sandbox *s, struct serve_egress *e)
{
        if (!e->follow)
                return;
        struct stat st;
        pthread_mutex_lock(&e->lock);
        bool same = stat(e->follow, &st) == 0 && st.st_ino == e->follow_st.st_ino &&
                    st.st_mtim.tv_sec == e->follow_st.st_mtim.tv_sec &&
                    st.st_mtim.tv_nsec == e->follow_st.st_mtim.tv_nsec &&
                    st.st_size == e->follow_st.st_size;
        if (!same)
                e->follow_st = st;
        pthread_mutex_unlock(&e->lock);
        if (same)
                return;
        char why[300] = "";
        json_t *rules = load_rules(e->follow, why, sizeof(why));
        int rc = rules ? install(e, json_object_get(rules, "network"),
                                 json_object_get(rules, "allow_internet_access"), why, sizeof(why))
                       : -EINVAL;
        if (rc < 0)
                fprintf(stderr, "%s: sandbox %s: egress rules %s: %s (the rules before stay)\n",
                        serve_egress_who, s->id, e->follow, why);
        json_decref(rules);
}

/* The policy's decision and the connection: the socket, or -1 after answering. */
static int decide_and_dial(struct stream *st, const struct egress_target *t)
{
        struct serve_egress *e = st->e;
        const char *rule = NULL;
        char rule_copy[EGRESS_NAME_MAX + 64];
        enum egress_verdict name_v = EGRESS_UNDECIDED;
        refresh(st->s, e);
        pthread_mutex_lock(&e->lock);
        bool unset = !e->rules;
        pthread_mutex_unlock(&e->lock);
        if (unset) { /* no lookup either: nothing was allowed */
                char why[160];
                snprintf(why, sizeof(why),
                         "the sandbox was created without network rules (PUT "
                         "/sandboxes/%s/network gives it some)",
                         st->s->id);
                refuse_as(st, ": ", why);
                return -1;
        }
        if (!t->is_ip) {
                pthread_mutex_lock(&e->lock);
                name_v = egress_check_name(&e->policy, t->host, &rule);
                /* No lookup of a name nothing could allow: a resolver must not
                 * carry what the sandbox may not send (DNS as a channel). */
                const char *all = egress_denies_all_addresses(&e->policy);
                if (name_v == EGRESS_UNDECIDED && all) {
                        name_v = EGRESS_DENIED;
                        rule = all;
                }
                snprintf(rule_copy, sizeof(rule_copy), "%s", rule ? rule : "");
                pthread_mutex_unlock(&e->lock);
                if (name_v == EGRESS_DENIED) {
                        refuse(st, rule_copy);
                        return -1;
                }
        }
        struct sockaddr_storage addrs[EGRESS_MAX_ADDRS];
        size_t n = 0;
        int rc = egress_resolve(t->host, t->port, addrs, EGRESS_MAX_ADDRS, &n);
        if (rc < 0) {
                char text[512];
                snprintf(text, sizeof(text), "cellvm: egress to %s: %s", st->target,
                         rc == -ENOENT ? "no such host" : strerror(-rc));
                log_refusal(st, rc == -ENOENT ? "no such host" : strerror(-rc));
                answer(st, 502, "Bad Gateway", text);
                return -1;
        }
        /* Every address checked again, unless the name itself was allowed. */
        size_t kept = 0;
        rule_copy[0] = '\0';
        pthread_mutex_lock(&e->lock);
        if (!t->is_ip)
                name_v = egress_check_name(&e->policy, t->host, &rule);
        for (size_t i = 0; i < n; i++) {
                if (is_this_server(&addrs[i])) {
                        if (!rule_copy[0])
                                snprintf(rule_copy, sizeof(rule_copy),
                                         "this server's own address (port %u)", serve.listen_port);
                        continue;
                }
                if (name_v != EGRESS_ALLOWED &&
                    egress_check_addr(&e->policy, (struct sockaddr *)&addrs[i], &rule) ==
                        EGRESS_DENIED) {
                        if (!rule_copy[0]) {
                                char a[INET6_ADDRSTRLEN] = "?";
                                const void *p =
                                    addrs[i].ss_family == AF_INET
                                        ? (const void *)&((struct sockaddr_in *)&addrs[i])->sin_addr
                                        : (const void *)&((struct sockaddr_in6 *)&addrs[i])
                                              ->sin6_addr;
                                inet_ntop(addrs[i].ss_family, p, a, sizeof(a));
                                snprintf(rule_copy, sizeof(rule_copy), "%s (address %s)", rule, a);
                        }
                        continue;
                }
                addrs[kept++] = addrs[i];
        }
        pthread_mutex_unlock(&e->lock);
        if (kept == 0) {
                refuse(st, rule_copy);
                return -1;
        }
        int fd = dial(addrs, kept);
        if (fd < 0) {
                char text[512];
                snprintf(text, sizeof(text), "cellvm: egress to %s: %s", st->target, strerror(-fd));
                log_refusal(st, strerror(-fd));
                answer(st, 502, "Bad Gateway", text);
                return -1;
        }
        return fd;
}

static void relay(struct stream *st)
{
        char label[EGRESS_NAME_MAX + 128];
        snprintf(label, sizeof(label), "sandbox %s: egress to %s", st->s->id, st->target);
        struct relay_opts o = {.unacked = st->unacked,
                               .rate = st->e->rate,
                               .linger_ms = st->e->idle_ms,
                               .idle_ms = st->e->idle_ms,
                               .label = label};
        st->ended = serve_relay(st->r, st->sock, &o);
}

/* A CONNECT's ClientHello, if it is TLS: its SNI must be the CONNECT host.
 * 0 to go on, -1 after refusing. */
static int check_sni(struct stream *st, const struct egress_target *t)
{
        char sni[EGRESS_NAME_MAX + 1];
        int rc;
        while ((rc = egress_parse_sni(cv_buf_head(&st->in), cv_buf_pending(&st->in), sni,
                                      sizeof(sni))) == 0) {
                if (st->guest_eof || cv_buf_pending(&st->in) >= EGRESS_HELLO_MAX ||
                    take(st, st->e->idle_ms) <= 0)
                        return -1;
        }
        if (rc == -ENOENT || (rc == 1 && (t->is_ip || strcmp(sni, t->host) == 0)))
                return 0;
        char why[EGRESS_NAME_MAX + 64];
        snprintf(why, sizeof(why),
                 rc == 1 ? "the TLS ClientHello names %s (SNI), not the CONNECT host"
                         : "a malformed TLS ClientHello%s",
                 rc == 1 ? sni : "");
        log_refusal(st, why);
        return -1;
}

static void serve_stream(struct stream *st)
{
        struct egress_target t;
        char why[256];
        int rc;
        while ((rc = egress_parse_head((const char *)cv_buf_head(&st->in), cv_buf_pending(&st->in),
                                       &t, why, sizeof(why))) == 0)
                if (st->guest_eof || take(st, st->e->idle_ms) <= 0)
                        return;
        snprintf(st->target, sizeof(st->target), strchr(t.host, ':') ? "[%s]:%u" : "%s:%u", t.host,
                 t.port);
        if (rc < 0) {
                snprintf(st->target, sizeof(st->target), "(unread)");
                log_refusal(st, why);
                answer(st, rc == -E2BIG ? 431 : 400, rc == -E2BIG ? "Too Large" : "Bad Request",
                       why);
                return;
        }
        st->sock = decide_and_dial(st, &t);
        if (st->sock < 0) {
                free(t.origin_head);
                return;
        }
        cv_buf_consume(&st->in, t.head_len);
        if (t.connect) {
                static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
                if (to_guest(st, ok, sizeof(ok) - 1, false) < 0 || check_sni(st, &t) < 0)
                        return;
        } else if (serve_send_all(st->sock, t.origin_head, t.origin_head_len) < 0) {
                free(t.origin_head);
                return;
        }
        free(t.origin_head);
        if (cv_buf_pending(&st->in) &&
            serve_send_all(st->sock, cv_buf_head(&st->in), cv_buf_pending(&st->in)) < 0)
                return;
        cv_buf_consume(&st->in, cv_buf_pending(&st->in));
        if (st->guest_eof && shutdown(st->sock, SHUT_WR) < 0 && errno != ENOTCONN)
                return;
        relay(st);
}

static void *stream_main(void *arg)
{
        struct stream *st = arg;
        serve_stream(st);
        if (!st->ended)
                serve_cancel(st->s, st->r->id);
        mux_close_req(st->r);
        if (st->sock >= 0 && close(st->sock) < 0)
                fprintf(stderr, "%s: egress: close: %s\n", serve_egress_who, strerror(errno));
        cv_buf_free(&st->in);
        pthread_mutex_lock(&st->e->lock);
        st->e->active--;
        pthread_cond_broadcast(&st->e->cond);
        pthread_mutex_unlock(&st->e->lock);
        serve_put(st->s);
        free(st);
        return NULL;
}

/* Starts a thread for the stream of `r` (taken over). */
static void start_stream(struct sandbox *s, struct mux_req *r)
{
        struct stream *st = calloc(1, sizeof(*st));
        pthread_attr_t attr;
        pthread_t th;
        if (st) {
                st->s = serve_ref(s);
                st->e = s->egress;
                st->r = r;
                st->sock = -1;
                cv_buf_init(&st->in);
                pthread_mutex_lock(&s->egress->lock);
                s->egress->active++;
                pthread_mutex_unlock(&s->egress->lock);
        }
        if (st && pthread_attr_init(&attr) == 0) {
                bool ok = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                          pthread_create(&th, &attr, stream_main, st) == 0;
                pthread_attr_destroy(&attr);
                if (ok)
                        return;
        }
        fprintf(stderr, "%s: sandbox %s: egress: no thread for a stream\n", serve_egress_who,
                s->id);
        serve_cancel(s, r->id);
        mux_close_req(r);
        if (st) {
                st->ended = true;
                st->r = NULL;
                pthread_mutex_lock(&s->egress->lock);
                s->egress->active--;
                pthread_mutex_unlock(&s->egress->lock);
                serve_put(st->s);
                free(st);
        }
}

/* Keeps one EGRESS_ACCEPT waiting while under the bound, until the connection ends. */
static void *acceptor(void *arg)
{
        struct sandbox *s = arg;
        struct serve_egress *e = s->egress;
        for (;;) {
                pthread_mutex_lock(&e->lock);
                while (e->active >= e->max_conns && !__atomic_load_n(&s->dead, __ATOMIC_ACQUIRE)) {
                        struct timespec ts;
                        clock_gettime(CLOCK_REALTIME, &ts);
                        ts.tv_sec += 1;
                        pthread_cond_timedwait(&e->cond, &e->lock, &ts);
                }
                pthread_mutex_unlock(&e->lock);
                struct mux_req *r;
                if (__atomic_load_n(&s->dead, __ATOMIC_ACQUIRE) || mux_open(&s->mux, &r) < 0)
                        break;
                struct cv_buf b;
                cv_buf_init(&b);
                cv_enc_map(&b, 0);
                int rc = mux_send_buf(r, CV_MSG_EGRESS_ACCEPT, &b);
                cv_buf_free(&b);
                struct cvc_event ev;
                if (rc < 0 || mux_next(r, -1, &ev) <= 0) {
                        mux_close_req(r);
                        break;
                }
                uint16_t type = ev.type;
                if (type == CV_MSG_ERROR)
                        fprintf(stderr, "%s: sandbox %s: egress: the agent: %.*s\n",
                                serve_egress_who, s->id, (int)ev.u.fail.message_len,
                                ev.u.fail.message);
                cvc_event_free(&ev);
                if (type != CV_MSG_EGRESS_OPENED) {
                        mux_close_req(r);
                        break;
                }
                start_stream(s, r);
        }
        serve_put(s);
        return NULL;
}

/* {network, allow_internet_access} of a create or an update, copied. */
static json_t *rules_of(json_t *network, json_t *aia)
{
        json_t *r = json_object();
        if (r && network && json_object_set_new(r, "network", json_deep_copy(network)) < 0) {
                json_decref(r);
                return NULL;
        }
        if (r && aia && json_object_set_new(r, "allow_internet_access", json_deep_copy(aia)) < 0) {
                json_decref(r);
                return NULL;
        }
        return r;
}

/* Makes {network, aia} the rules of `e`, live: 0, -EINVAL with `why`, or -ENOMEM. */
static int install(struct serve_egress *e, json_t *network, json_t *aia, char *why, size_t whylen)
{
        struct egress_policy p;
        int rc = serve_egress_policy_of(network, aia, &p, why, whylen);
        if (rc < 0)
                return rc;
        json_t *rules = rules_of(network, aia);
        if (!rules) {
                egress_policy_free(&p);
                snprintf(why, whylen, "out of memory");
                return -ENOMEM;
        }
        pthread_mutex_lock(&e->lock);
        egress_policy_free(&e->policy);
        e->policy = p;
        json_decref(e->rules);
        e->rules = rules;
        pthread_mutex_unlock(&e->lock);
        return 0;
}

static void free_egress(struct serve_egress *e)
{
        egress_policy_free(&e->policy);
        json_decref(e->rules);
        json_decref(e->shown);
        free(e->follow);
        pthread_mutex_destroy(&e->lock);
        pthread_cond_destroy(&e->cond);
        free(e);
}

int serve_egress_start(struct sandbox *s, json_t *rules, char *why, size_t whylen)
{
        json_t *network = json_object_get(rules, "network");
        json_t *aia = json_object_get(rules, "allow_internet_access");
        if (s->egress) /* a pooled clone's, started without rules */
                return rules ? install(s->egress, network, aia, why, whylen) : 0;
        struct serve_egress *e = calloc(1, sizeof(*e));
        if (!e) {
                snprintf(why, whylen, "out of memory");
                return -ENOMEM;
        }
        pthread_mutex_init(&e->lock, NULL);
        pthread_cond_init(&e->cond, NULL);
        int rc = rules ? install(e, network, aia, why, whylen) : 0;
        if (rc < 0) {
                free_egress(e);
                return rc;
        }
        e->max_conns = env_uint("CELLVM_EGRESS_MAX_CONNS", DEFAULT_MAX_CONNS);
        if (e->max_conns == 0)
                e->max_conns = 1;
        e->rate = env_uint("CELLVM_EGRESS_RATE", 0);
        e->idle_ms = (int)env_uint("CELLVM_EGRESS_IDLE_S", DEFAULT_IDLE_S) * 1000;
        s->egress = e;
        pthread_attr_t attr;
        pthread_t th;
        struct sandbox *ref = serve_ref(s);
        bool ok = pthread_attr_init(&attr) == 0;
        if (ok) {
                ok = pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
                     pthread_create(&th, &attr, acceptor, ref) == 0;
                pthread_attr_destroy(&attr);
        }
        if (!ok) {
                serve_put(ref);
                snprintf(why, whylen, "no thread for its acceptor");
                return -EAGAIN;
        }
        return 0;
}

int serve_egress_follow(struct sandbox *s, const char *path, char *why, size_t whylen)
{
        struct stat st;
        if (stat(path, &st) < 0) {
                snprintf(why, whylen, "%s: %s", path, strerror(errno));
                return -errno;
        }
        char bad[JSON_ERROR_TEXT_LENGTH];
        json_t *rules = load_rules(path, bad, sizeof(bad));
        if (!rules) {
                snprintf(why, whylen, "%s: %s", path, bad);
                return -EINVAL;
        }
        char *follow = strdup(path);
        int rc = follow ? serve_egress_start(s, rules, why, whylen) : -ENOMEM;
        json_decref(rules);
        if (rc < 0) {
                free(follow);
                return rc;
        }
        pthread_mutex_lock(&s->egress->lock);
        s->egress->follow = follow;
        s->egress->follow_st = st;
        pthread_mutex_unlock(&s->egress->lock);
        return 0;
}

/* Sets `key` of `out` to a copy of `v` when `ok` (of the type E2B's schema gives). */
static void set_copy(json_t *out, const char *key, json_t *v, bool ok)
{
        if (out && v && ok)
                json_object_set_new(out, key, json_deep_copy(v));
}

/* E2B's SandboxNetworkConfig as its GET gives it back (dbNetworkConfigToAPI):
 * the egress fields of `egress` (allowOut, denyOut, rules as given; the proxy
 * without its password, which E2B never reads back) and the ingress ones of
 * `ingress` (allowPublicTraffic, maskRequestHost). */
static json_t *shown_network(json_t *egress, json_t *ingress)
{
        json_t *n = json_object();
        json_t *allow = json_object_get(egress, "allowOut");
        json_t *deny = json_object_get(egress, "denyOut");
        set_copy(n, "allowOut", allow ? allow : json_object_get(egress, "allow_out"),
                 json_is_array(allow ? allow : json_object_get(egress, "allow_out")));
        set_copy(n, "denyOut", deny ? deny : json_object_get(egress, "deny_out"),
                 json_is_array(deny ? deny : json_object_get(egress, "deny_out")));
        set_copy(n, "rules", json_object_get(egress, "rules"),
                 json_is_object(json_object_get(egress, "rules")));
        json_t *proxy = json_object_get(egress, "egressProxy");
        if (n && json_is_string(json_object_get(proxy, "address"))) {
                json_t *p = json_object();
                set_copy(p, "address", json_object_get(proxy, "address"), true);
                set_copy(p, "username", json_object_get(proxy, "username"),
                         json_is_string(json_object_get(proxy, "username")));
                if (p)
                        json_object_set_new(n, "egressProxy", p);
        }
        set_copy(n, "allowPublicTraffic", json_object_get(ingress, "allowPublicTraffic"),
                 json_is_boolean(json_object_get(ingress, "allowPublicTraffic")));
        set_copy(n, "maskRequestHost", json_object_get(ingress, "maskRequestHost"),
                 json_is_string(json_object_get(ingress, "maskRequestHost")));
        return n;
}

static void set_shown(struct serve_egress *e, json_t *shown)
{
        pthread_mutex_lock(&e->lock);
        json_decref(e->shown);
        e->shown = shown;
        pthread_mutex_unlock(&e->lock);
}

/* An update replaces the egress fields and keeps the ingress ones (E2B's
 * PUT .../network): a sandbox created without `network` gets one. */
static void shown_update(struct serve_egress *e, json_t *body)
{
        pthread_mutex_lock(&e->lock);
        json_t *old = e->shown ? json_incref(e->shown) : NULL;
        pthread_mutex_unlock(&e->lock);
        json_t *shown = old ? json_deep_copy(old) : json_object();
        json_t *n = shown_network(body, json_object_get(old, "network"));
        if (shown && n)
                json_object_set(shown, "network", n);
        json_decref(n);
        json_decref(old);
        if (shown)
                set_shown(e, shown);
}

int serve_egress_show(struct sandbox *s, json_t *body)
{
        if (!s->egress)
                return -ENOENT;
        json_t *network = json_object_get(body, "network");
        json_t *aia = json_object_get(body, "allow_internet_access");
        json_t *shown = json_object();
        if (shown && json_is_object(network)) {
                json_t *n = shown_network(network, network);
                if (!n || json_object_set_new(shown, "network", n) < 0)
                        json_decref(shown), shown = NULL;
        }
        set_copy(shown, "allowInternetAccess", aia, json_is_boolean(aia));
        if (!shown)
                return -ENOMEM;
        set_shown(s->egress, shown);
        return 0;
}

int serve_egress_show_kept(struct sandbox *s, json_t *shown)
{
        if (!s->egress)
                return -ENOENT;
        json_t *copy = json_is_object(shown) ? json_deep_copy(shown) : NULL;
        set_shown(s->egress, copy);
        return 0;
}

json_t *serve_egress_shown(struct sandbox *s)
{
        struct serve_egress *e = s->egress;
        if (!e)
                return NULL;
        pthread_mutex_lock(&e->lock);
        json_t *r = e->shown ? json_deep_copy(e->shown) : NULL;
        pthread_mutex_unlock(&e->lock);
        return r;
}

int serve_egress_update(struct sandbox *s, json_t *body, char *why, size_t whylen)
{
        json_t *aia = json_object_get(body, "allow_internet_access");
        if (!s->egress) { /* checked all the same: a bad body is a 400 first */
                struct egress_policy p;
                int rc = serve_egress_policy_of(body, aia, &p, why, whylen);
                egress_policy_free(&p);
                return rc < 0 ? rc : -ENOENT;
        }
        int rc = install(s->egress, body, aia, why, whylen);
        if (rc == 0)
                shown_update(s->egress, body);
        return rc;
}

json_t *serve_egress_rules(struct sandbox *s)
{
        struct serve_egress *e = s->egress;
        if (!e)
                return NULL;
        pthread_mutex_lock(&e->lock);
        json_t *r = e->rules ? json_deep_copy(e->rules) : NULL;
        pthread_mutex_unlock(&e->lock);
        return r;
}

void serve_egress_free(struct sandbox *s)
{
        if (!s->egress)
                return;
        free_egress(s->egress);
        s->egress = NULL;
}

int serve_egress_envs(json_t *envs)
{
        static const char *const names[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                                            "https_proxy"};
        int rc = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                rc |= json_object_set_new(envs, names[i], json_string(SERVE_EGRESS_PROXY));
        rc |= json_object_set_new(envs, "NO_PROXY", json_string("localhost,127.0.0.1,::1"));
        rc |= json_object_set_new(envs, "no_proxy", json_string("localhost,127.0.0.1,::1"));
        return rc ? -ENOMEM : 0;
}

/* An array of strings of `network` (either spelling) into a malloc'ed array. */
static int strings_of(json_t *network, const char *key, const char *alt, const char ***out,
                      size_t *n, char *why, size_t whylen)
{
        *out = NULL;
        *n = 0;
        json_t *v = json_object_get(network, key);
        if (!v)
                v = json_object_get(network, alt);
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v)) {
                snprintf(why, whylen, "network.%s must be an array of strings", key);
                return -EINVAL;
        }
        size_t k = json_array_size(v);
        if (k > EGRESS_MAX_RULES) {
                snprintf(why, whylen, "network.%s: more than %d entries", key, EGRESS_MAX_RULES);
                return -EINVAL;
        }
        *out = calloc(k ? k : 1, sizeof(**out));
        if (!*out) {
                snprintf(why, whylen, "out of memory");
                return -ENOMEM;
        }
        for (size_t i = 0; i < k; i++) {
                json_t *x = json_array_get(v, i);
                if (!json_is_string(x)) {
                        snprintf(why, whylen, "network.%s must be an array of strings", key);
                        free(*out);
                        *out = NULL;
                        return -EINVAL;
                }
                (*out)[i] = json_string_value(x);
        }
        *n = k;
        return 0;
}

int serve_egress_policy_of(json_t *network, json_t *aia, struct egress_policy *p, char *why,
                           size_t whylen)
{
        memset(p, 0, sizeof(*p));
        if (aia && !json_is_null(aia) && !json_is_boolean(aia)) {
                snprintf(why, whylen, "allow_internet_access must be a boolean");
                return -EINVAL;
        }
        if (!network || json_is_null(network)) /* allow_internet_access: false alone denies all */
                return json_is_false(aia)
                           ? egress_policy_parse(p, NULL, 0, NULL, 0, true, why, whylen)
                           : 0;
        if (!json_is_object(network)) {
                snprintf(why, whylen, "network must be an object");
                return -EINVAL;
        }
        json_t *rules = json_object_get(network, "rules");
        if (rules && !json_is_null(rules) && !(json_is_object(rules) && !json_object_size(rules))) {
                snprintf(why, whylen,
                         "network.rules: request transforms are not supported (docs/NETWORK.md)");
                return -EINVAL;
        }
        const char **allow = NULL, **deny = NULL;
        size_t nallow = 0, ndeny = 0;
        int rc = strings_of(network, "allowOut", "allow_out", &allow, &nallow, why, whylen);
        if (rc == 0)
                rc = strings_of(network, "denyOut", "deny_out", &deny, &ndeny, why, whylen);
        if (rc == 0 && (nallow + ndeny > 0 || json_is_false(aia)))
                rc = egress_policy_parse(p, allow, nallow, deny, ndeny, json_is_false(aia), why,
                                         whylen);
        free(allow);
        free(deny);
        if (rc < 0)
                return rc;
        return nallow + ndeny > 0;
}
