/* The hybrid-vsock handshake (`CONNECT <port>` over the VMM's Unix socket):
 * see hybrid_vsock.h. */
#include "hybrid_vsock.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "connect.h"
#include "mono_clock.h"

/* Reads the reply line one byte at a time (what follows it is the agent's). */
static int read_reply(int fd, int64_t deadline, char *line, size_t cap, char *why, size_t whylen)
{
        size_t n = 0;
        for (;;) {
                int64_t left = deadline - mono_ms();
                if (left <= 0) {
                        snprintf(why, whylen, "no handshake reply");
                        return -ETIMEDOUT;
                }
                struct pollfd p = {.fd = fd, .events = POLLIN};
                int r = poll(&p, 1, (int)left);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        int e = errno;
                        snprintf(why, whylen, "poll: %s", strerror(e));
                        return -e;
                }
                if (r == 0)
                        continue; /* the deadline check above ends it */
                char b;
                ssize_t got = read(fd, &b, 1);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got < 0) {
                        int e = errno;
                        snprintf(why, whylen, "read: %s", strerror(e));
                        return -e;
                }
                if (got == 0) {
                        snprintf(why, whylen, "closed during the handshake");
                        return -ECONNRESET;
                }
                if (b == '\n') {
                        line[n] = '\0';
                        return 0;
                }
                if (n + 1 >= cap) {
                        snprintf(why, whylen, "handshake reply too long");
                        return -EPROTO;
                }
                line[n++] = b;
        }
}

int cvm_hybrid_vsock_try(const char *uds_path, unsigned port, int timeout_ms, int *fd, char *why,
                         size_t whylen)
{
        int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 1);
        char addr[PATH_MAX + 8];
        snprintf(addr, sizeof(addr), "unix:%s", uds_path);
        int s = cvc_open_stream(addr, why, whylen);
        if (s < 0)
                return s;
        int rc = 0;
        char req[32];
        int len = snprintf(req, sizeof(req), "CONNECT %u\n", port);
        /* A fresh Unix stream takes 13 bytes at once; MSG_NOSIGNAL: a VMM that
         * closed it is an EPIPE, not a SIGPIPE. */
        errno = 0;
        if (rc == 0 && send(s, req, (size_t)len, MSG_NOSIGNAL) != (ssize_t)len) {
                rc = errno ? -errno : -EIO;
                snprintf(why, whylen, "sending CONNECT: %s", strerror(-rc));
        }
        char line[CVM_HYBRID_REPLY_MAX + 1];
        if (rc == 0)
                rc = read_reply(s, deadline, line, sizeof(line), why, whylen);
        if (rc == 0 && strncmp(line, "OK ", 3) != 0) {
                snprintf(why, whylen, "VMM answered '%.*s'", CVM_HYBRID_REPLY_MAX, line);
                rc = -ECONNREFUSED;
        }
        if (rc < 0) {
                close(s);
                return rc;
        }
        *fd = s;
        return 0;
}

static void sleep_ms(long ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int cvm_hybrid_vsock_connect(const char *uds_path, unsigned port, int timeout_ms,
                             int (*still_alive)(void *ud), void *ud, int *fd, char *why,
                             size_t whylen)
{
        int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 1);
        char last[160] = "no attempt";
        bool last_answered = false; /* `last` is what the VMM answered */
        for (;;) {
                if (still_alive && !still_alive(ud)) {
                        snprintf(why, whylen, "the VMM exited (last: %s)", last);
                        return -ECHILD;
                }
                int64_t left = deadline - mono_ms();
                if (left <= 0) {
                        snprintf(why, whylen,
                                 "vsock port %u via %s: not accepted in time (last: %s)", port,
                                 uds_path, last);
                        return -ETIMEDOUT;
                }
                char now[160];
                int rc = cvm_hybrid_vsock_try(
                    uds_path, port,
                    (int)(left < CVM_HYBRID_ATTEMPT_MS ? left : CVM_HYBRID_ATTEMPT_MS), fd, now,
                    sizeof(now));
                if (rc == 0)
                        return 0;
                /* An attempt the deadline cut short says less than the VMM's answer. */
                if (!(rc == -ETIMEDOUT && last_answered)) {
                        memcpy(last, now, sizeof(last));
                        last_answered = rc == -ECONNREFUSED || rc == -EPROTO;
                }
                sleep_ms(CVM_HYBRID_RETRY_MS);
        }
}
