/* HTTP/1.1 over the VMM's API socket: see vmm_api.h. */
#include "vmm_api.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "connect.h"
#include "mono_clock.h"

static int open_sock(const char *path, char *err, size_t errlen)
{
        char addr[PATH_MAX + 8];
        snprintf(addr, sizeof(addr), "unix:%s", path);
        return cvc_open_stream(addr, err, errlen);
}

static int send_all(int s, const char *p, size_t len, char *err, size_t errlen)
{
        while (len) {
                ssize_t n = send(s, p, len, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int e = errno;
                        snprintf(err, errlen, "sending to the API: %s", strerror(e));
                        return -e;
                }
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

/* The Content-Length of a reply head (lower-cased names compared), or 0. */
static size_t content_length(const char *head)
{
        for (const char *p = strstr(head, "\r\n"); p; p = strstr(p + 2, "\r\n"))
                if (strncasecmp(p + 2, "content-length:", 15) == 0)
                        return (size_t)strtoul(p + 17, NULL, 10);
        return 0;
}

int cvm_api_call(const char *sock, const char *method, const char *path, const char *body,
                 int timeout_ms, char *err, size_t errlen)
{
        int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 1);
        int s = open_sock(sock, err, errlen);
        if (s < 0)
                return s;
        char head[512];
        size_t blen = body ? strlen(body) : 0;
        int n = snprintf(head, sizeof(head),
                         "%s %s HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n"
                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                         method, path, blen);
        int rc = n > 0 && (size_t)n < sizeof(head) ? 0 : -E2BIG;
        if (rc < 0)
                snprintf(err, errlen, "API path too long");
        if (rc == 0)
                rc = send_all(s, head, (size_t)n, err, errlen);
        if (rc == 0 && blen)
                rc = send_all(s, body, blen, err, errlen);
        char reply[CVM_API_REPLY_MAX + 1];
        size_t got = 0, need = 0;
        char *end = NULL;
        while (rc == 0) {
                int64_t left = deadline - mono_ms();
                if (left <= 0) {
                        snprintf(err, errlen, "%s %s: no reply in time", method, path);
                        rc = -ETIMEDOUT;
                        break;
                }
                struct pollfd p = {.fd = s, .events = POLLIN};
                int r = poll(&p, 1, (int)left);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        continue; /* the deadline check ends it */
                ssize_t k = read(s, reply + got, CVM_API_REPLY_MAX - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        rc = -errno;
                        snprintf(err, errlen, "reading the API's reply: %s", strerror(-rc));
                        break;
                }
                got += (size_t)k;
                reply[got] = '\0';
                if (!end && (end = strstr(reply, "\r\n\r\n")) != NULL)
                        need = (size_t)(end + 4 - reply) + content_length(reply);
                if (end && got >= need)
                        break;
                if (k == 0 || got == CVM_API_REPLY_MAX) {
                        snprintf(err, errlen, "%s %s: %s", method, path,
                                 k == 0 ? "the API closed before a whole reply"
                                        : "reply too large");
                        rc = -EPROTO;
                }
        }
        close(s);
        if (rc < 0)
                return rc;
        unsigned status = 0;
        if (sscanf(reply, "HTTP/1.%*1[01] %3u", &status) != 1 || status < 100) {
                snprintf(err, errlen, "%s %s: not an HTTP reply", method, path);
                return -EPROTO;
        }
        if (status / 100 == 2)
                return 0;
        char *text = end + 4;
        size_t tlen = strlen(text);
        for (size_t i = 0; i < tlen; i++) /* one line of text in the message */
                if (text[i] == '\n' || text[i] == '\r')
                        text[i] = ' ';
        snprintf(err, errlen, "%s %s: HTTP %u: %.*s", method, path, status, (int)tlen, text);
        return -EREMOTEIO;
}

int cvm_api_json_string(const char *s, char *out, size_t outlen)
{
        size_t k = 0;
        for (const unsigned char *c = (const unsigned char *)s;; c++) {
                char esc[8];
                int n;
                if (!*c)
                        n = snprintf(esc, sizeof(esc), "\"");
                else if (*c == '"' || *c == '\\')
                        n = snprintf(esc, sizeof(esc), "\\%c", *c);
                else if (*c < 0x20)
                        n = snprintf(esc, sizeof(esc), "\\u%04x", *c);
                else
                        n = snprintf(esc, sizeof(esc), "%c", *c);
                if (k == 0) {
                        if (outlen < 2)
                                return -E2BIG;
                        out[k++] = '"';
                }
                if (k + (size_t)n + 1 > outlen)
                        return -E2BIG;
                memcpy(out + k, esc, (size_t)n);
                k += (size_t)n;
                if (!*c)
                        break;
        }
        out[k] = '\0';
        return 0;
}

int cvm_api_wait(const char *sock, int timeout_ms, int (*still_alive)(void *ud), void *ud,
                 char *err, size_t errlen)
{
        int64_t deadline = mono_ms() + (timeout_ms > 0 ? timeout_ms : 1);
        for (;;) {
                if (still_alive && !still_alive(ud)) {
                        snprintf(err, errlen, "the VMM exited before its API socket was up");
                        return -ECHILD;
                }
                int s = open_sock(sock, err, errlen);
                if (s >= 0) {
                        close(s);
                        return 0;
                }
                if (s != -ENOENT && s != -ECONNREFUSED)
                        return s;
                if (mono_ms() >= deadline) {
                        snprintf(err, errlen, "%s: not up in time", sock);
                        return -ETIMEDOUT;
                }
                struct timespec ts = {.tv_nsec = 10 * 1000000L};
                nanosleep(&ts, NULL);
        }
}
