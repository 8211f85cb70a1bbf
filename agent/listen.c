/* Listening endpoints: unix, vsock and loopback tcp sockets, and the virtio-serial port. */

#include "listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"
#include "conn.h"
#include "log.h"
#include "loop.h"

/* Delay between attempts to reopen a hung-up serial port. */
#define SERIAL_REOPEN_NS (100000000ull)

/* Only the host (CID 2) drives the agent; a guest-local peer (CID 1) is user code. */
static bool vsock_peer_allowed(struct agent *a, const struct sockaddr_vm *peer, socklen_t len)
{
        if (len >= sizeof(*peer) && peer->svm_family == AF_VSOCK &&
            peer->svm_cid == VMADDR_CID_HOST)
                return true;
        if (a->allow_local_vsock)
                return true;
        log_warn("refused a vsock connection from CID %u (only the host, CID %u, may connect)",
                 len >= sizeof(*peer) ? (unsigned)peer->svm_cid : 0u, (unsigned)VMADDR_CID_HOST);
        return false;
}

static void on_accept(struct agent *a, struct watch *w, uint32_t events)
{
        (void)events;
        struct listener *l = (struct listener *)((char *)w - offsetof(struct listener, w));
        for (int i = 0; i < 64; i++) {
                struct sockaddr_vm peer = {0};
                socklen_t plen = sizeof(peer);
                int fd =
                    accept4(w->fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno != EAGAIN)
                                log_error("accept4 on %s: %s", l->addr, strerror(errno));
                        return;
                }
                if (l->kind == TR_VSOCK && !vsock_peer_allowed(a, &peer, plen)) {
                        if (close(fd) < 0)
                                log_warn("close(refused vsock peer): %s", strerror(errno));
                        continue;
                }
                if (!conn_new(a, fd, l->kind)) {
                        if (close(fd) < 0)
                                log_warn("close(accepted fd): %s", strerror(errno));
                }
        }
}

static int parse_port(const char *s, unsigned max, unsigned *out)
{
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || *end || v > max || s[0] == '-')
                return -EINVAL;
        *out = (unsigned)v;
        return 0;
}

static int bind_listen(int fd, const struct sockaddr *sa, socklen_t len)
{
        if (bind(fd, sa, len) < 0 || listen(fd, 128) < 0)
                return -errno;
        return 0;
}

static int open_unix(struct listener *l, const char *path)
{
        struct sockaddr_un sun = {.sun_family = AF_UNIX};
        if (strlen(path) == 0 || strlen(path) >= sizeof(sun.sun_path))
                return -ENAMETOOLONG;
        strcpy(sun.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* A socket file left by an earlier agent would make bind fail. */
        struct stat st;
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && unlink(path) < 0)
                log_warn("unlink stale socket %s: %s", path, strerror(errno));
        /* Bound under a temporary name and renamed once listening, so the file
         * appears only when connects succeed: whoever waits for it to exist is
         * never refused. Too long a path for the suffix is bound in place. */
        struct sockaddr_un tmp = {.sun_family = AF_UNIX};
        int n = snprintf(tmp.sun_path, sizeof(tmp.sun_path), "%s.%d~", path, (int)getpid());
        bool staged = n > 0 && (size_t)n < sizeof(tmp.sun_path);
        if (staged && unlink(tmp.sun_path) < 0 && errno != ENOENT)
                staged = false;
        /* Born 0600: only the agent's user (root in the guest) may connect. */
        mode_t old_mask = umask(0177);
        int rc = bind_listen(fd, (struct sockaddr *)(staged ? &tmp : &sun), sizeof(sun));
        umask(old_mask);
        if (rc == 0 && staged && rename(tmp.sun_path, path) < 0) {
                rc = -errno;
                if (unlink(tmp.sun_path) < 0)
                        log_warn("unlink %s: %s", tmp.sun_path, strerror(errno));
        }
        if (rc < 0) {
                close(fd);
                return rc;
        }
        l->unix_path = strdup(path);
        if (!l->unix_path) {
                close(fd);
                return -ENOMEM;
        }
        return fd;
}

static int open_vsock(const char *port_s)
{
        unsigned port;
        if (parse_port(port_s, UINT32_MAX, &port) < 0)
                return -EINVAL;
        int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct sockaddr_vm svm = {
            .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port};
        int rc = bind_listen(fd, (struct sockaddr *)&svm, sizeof(svm));
        if (rc < 0) {
                close(fd);
                return rc;
        }
        return fd;
}

/* tcp:HOST:PORT with HOST a loopback address (127.0.0.0/8, localhost, [::1]). */
int listen_tcp_loopback(const char *hostport, char *bound, size_t bound_size)
{
        const char *colon = strrchr(hostport, ':');
        if (!colon)
                return -EINVAL;
        char host[64];
        size_t hlen = (size_t)(colon - hostport);
        if (hlen == 0 || hlen >= sizeof(host))
                return -EINVAL;
        memcpy(host, hostport, hlen);
        host[hlen] = 0;
        unsigned port;
        if (parse_port(colon + 1, 65535, &port) < 0)
                return -EINVAL;
        struct sockaddr_storage ss = {0};
        socklen_t sslen;
        int family;
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        if (strcmp(host, "localhost") == 0)
                strcpy(host, "127.0.0.1");
        if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
                if ((ntohl(sin->sin_addr.s_addr) >> 24) != 127)
                        return -EADDRNOTAVAIL;
                family = AF_INET;
                sin->sin_family = AF_INET;
                sin->sin_port = htons((uint16_t)port);
                sslen = sizeof(*sin);
        } else {
                if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
                        memmove(host, host + 1, hlen - 2);
                        host[hlen - 2] = 0;
                }
                if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
                        return -EINVAL;
                if (!IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
                        return -EADDRNOTAVAIL;
                family = AF_INET6;
                sin6->sin6_family = AF_INET6;
                sin6->sin6_port = htons((uint16_t)port);
                sslen = sizeof(*sin6);
        }
        int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        int one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
                log_warn("setsockopt(SO_REUSEADDR): %s", strerror(errno));
        int rc = bind_listen(fd, (struct sockaddr *)&ss, sslen);
        if (rc < 0) {
                close(fd);
                return rc;
        }
        /* Report the real port (PORT may be 0). */
        if (getsockname(fd, (struct sockaddr *)&ss, &sslen) == 0)
                snprintf(bound, bound_size, "tcp:%s:%u", host,
                         (unsigned)ntohs(family == AF_INET ? sin->sin_port : sin6->sin6_port));
        return fd;
}

/* The serial port's connection closed: reopen the port after a pause. */
static void serial_hung_up(struct conn *c, void *owner)
{
        (void)c;
        struct listener *l = owner;
        l->serial_conn = NULL;
        l->reopen_at = now_mono() + SERIAL_REOPEN_NS;
}

/* Opens the serial port; on failure schedules another attempt. */
static void serial_open(struct agent *a, struct listener *l)
{
        const char *path = l->addr + strlen("serial:");
        l->reopen_at = 0;
        int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) {
                log_debug("open %s: %s (retrying)", path, strerror(errno));
                l->reopen_at = now_mono() + SERIAL_REOPEN_NS;
                return;
        }
        /* The port is the host's channel: root's alone, and exclusive where it is a tty. */
        if (fchmod(fd, 0600) < 0)
                log_warn("chmod 0600 %s: %s", path, strerror(errno));
        if (isatty(fd) && ioctl(fd, TIOCEXCL) < 0)
                log_warn("ioctl(%s, TIOCEXCL): %s", path, strerror(errno));
        /* A tty (emulated ports, consoles) must pass bytes untouched. */
        struct termios t;
        if (tcgetattr(fd, &t) == 0) {
                cfmakeraw(&t);
                if (tcsetattr(fd, TCSANOW, &t) < 0)
                        log_warn("tcsetattr(%s): %s", path, strerror(errno));
        }
        struct conn *c = conn_new(a, fd, TR_SERIAL);
        if (!c) {
                if (close(fd) < 0)
                        log_warn("close(%s): %s", path, strerror(errno));
                l->reopen_at = now_mono() + SERIAL_REOPEN_NS;
                return;
        }
        c->closed = serial_hung_up;
        c->owner = l;
        l->serial_conn = c;
        log_debug("conn %u: opened %s", c->num, path);
}

void listeners_timers(struct agent *a, uint64_t now, uint64_t *next)
{
        for (struct listener *l = a->listeners; l; l = l->next) {
                if (l->kind == TR_SERIAL && !l->serial_conn && l->reopen_at && l->reopen_at <= now)
                        serial_open(a, l);
                if (l->reopen_at && l->reopen_at < *next)
                        *next = l->reopen_at;
        }
}

int listener_add(struct agent *a, const char *addr)
{
        struct listener *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->addr = strdup(addr);
        if (!l->addr) {
                free(l);
                return -ENOMEM;
        }
        l->w = (struct watch){.fd = -1, .fn = on_accept};
        char shown[128];
        snprintf(shown, sizeof(shown), "%s", addr);
        int fd;
        if (strncmp(addr, "unix:", 5) == 0) {
                l->kind = TR_UNIX;
                fd = open_unix(l, addr + 5);
        } else if (strncmp(addr, "vsock:", 6) == 0) {
                l->kind = TR_VSOCK;
                fd = open_vsock(addr + 6);
        } else if (strncmp(addr, "tcp:", 4) == 0) {
                l->kind = TR_TCP;
                fd = listen_tcp_loopback(addr + 4, shown, sizeof(shown));
        } else if (strncmp(addr, "serial:", 7) == 0 && addr[7]) {
                l->kind = TR_SERIAL;
                l->next = a->listeners;
                a->listeners = l;
                serial_open(a, l);
                log_info("serving on %s%s", addr,
                         l->serial_conn ? "" : " (not openable yet, retrying)");
                return 0;
        } else {
                fd = -EINVAL;
        }
        if (fd < 0) {
                free(l->unix_path);
                free(l->addr);
                free(l);
                return fd;
        }
        l->w.fd = fd;
        int rc = watch_set(a, &l->w, EPOLLIN);
        if (rc < 0) {
                close(fd);
                free(l->unix_path);
                free(l->addr);
                free(l);
                return rc;
        }
        l->next = a->listeners;
        a->listeners = l;
        log_info("listening on %s", shown);
        return 0;
}

void listeners_close(struct agent *a)
{
        while (a->listeners) {
                struct listener *l = a->listeners;
                a->listeners = l->next;
                watch_close(a, &l->w);
                if (l->unix_path && unlink(l->unix_path) < 0 && errno != ENOENT)
                        log_warn("unlink %s: %s", l->unix_path, strerror(errno));
                free(l->unix_path);
                free(l->addr);
                free(l);
        }
}
