/* Opening the byte stream to an agent: "unix:PATH", "tcp:HOST:PORT" or "vsock:CID:PORT". */
#include "connect.h"

#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/vm_sockets.h>

static int connect_unix(const char *path, char *err, size_t errlen)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof(sa.sun_path)) {
                snprintf(err, errlen, "unix socket path too long: %s", path);
                return -ENAMETOOLONG;
        }
        strcpy(sa.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                snprintf(err, errlen, "socket(AF_UNIX): %s", strerror(errno));
                return -errno;
        }
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int e = errno;
                snprintf(err, errlen, "connect unix:%s: %s", path, strerror(e));
                close(fd);
                return -e;
        }
        return fd;
}

static int connect_tcp(const char *hostport, char *err, size_t errlen)
{
        char host[256];
        const char *colon = strrchr(hostport, ':');
        if (!colon || colon == hostport || (size_t)(colon - hostport) >= sizeof(host)) {
                snprintf(err, errlen, "bad tcp address %s: expected tcp:HOST:PORT", hostport);
                return -EINVAL;
        }
        memcpy(host, hostport, (size_t)(colon - hostport));
        host[colon - hostport] = '\0';
        struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        struct addrinfo *res;
        int gai = getaddrinfo(host, colon + 1, &hints, &res);
        if (gai != 0) {
                snprintf(err, errlen, "resolve %s: %s", hostport, gai_strerror(gai));
                return -EHOSTUNREACH;
        }
        int rc = -ECONNREFUSED;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
                int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
                if (fd < 0) {
                        rc = -errno;
                        continue;
                }
                if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
                        freeaddrinfo(res);
                        return fd;
                }
                rc = -errno;
                close(fd);
        }
        freeaddrinfo(res);
        snprintf(err, errlen, "connect tcp:%s: %s", hostport, strerror(-rc));
        return rc;
}

/* A decimal number below 2^32 spanning [s, end); false otherwise. */
static bool parse_u32(const char *s, const char *end, uint32_t *v)
{
        if (s == end || end - s > 10)
                return false;
        uint64_t n = 0;
        for (const char *p = s; p < end; p++) {
                if (*p < '0' || *p > '9')
                        return false;
                n = n * 10 + (uint64_t)(*p - '0');
        }
        if (n > UINT32_MAX)
                return false;
        *v = (uint32_t)n;
        return true;
}

int cvc_parse_vsock(const char *cidport, unsigned *cid, unsigned *port)
{
        const char *colon = strchr(cidport, ':');
        uint32_t c, p;
        if (!colon || !parse_u32(cidport, colon, &c) || !parse_u32(colon + 1, strchr(colon, 0), &p))
                return -EINVAL;
        *cid = c;
        *port = p;
        return 0;
}

static int connect_vsock(const char *cidport, char *err, size_t errlen)
{
        unsigned cid, port;
        if (cvc_parse_vsock(cidport, &cid, &port) < 0) {
                snprintf(err, errlen, "bad vsock address %s: expected vsock:CID:PORT (decimal)",
                         cidport);
                return -EINVAL;
        }
        int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                int e = errno;
                snprintf(err, errlen, "socket(AF_VSOCK): %s", strerror(e));
                return -e;
        }
        /* A short wait per attempt: a launcher retrying while the guest boots
         * notices a VMM that exited between attempts, not after the deadline. */
        struct timeval tv = {.tv_sec = CVC_VSOCK_CONNECT_TIMEOUT_MS / 1000,
                             .tv_usec = CVC_VSOCK_CONNECT_TIMEOUT_MS % 1000 * 1000};
        if (setsockopt(fd, AF_VSOCK, SO_VM_SOCKETS_CONNECT_TIMEOUT, &tv, sizeof(tv)) < 0 ||
            connect(fd,
                    (struct sockaddr *)&(struct sockaddr_vm){
                        .svm_family = AF_VSOCK, .svm_cid = cid, .svm_port = port},
                    sizeof(struct sockaddr_vm)) < 0) {
                int e = errno;
                snprintf(err, errlen, "connect vsock:%u:%u: %s", cid, port, strerror(e));
                close(fd);
                return -e;
        }
        return fd;
}

int cvc_open_stream(const char *addr, char *err, size_t errlen)
{
        if (strncmp(addr, "unix:", 5) == 0)
                return connect_unix(addr + 5, err, errlen);
        if (strncmp(addr, "tcp:", 4) == 0)
                return connect_tcp(addr + 4, err, errlen);
        if (strncmp(addr, "vsock:", 6) == 0)
                return connect_vsock(addr + 6, err, errlen);
        snprintf(err, errlen,
                 "unsupported address %s: expected unix:PATH, tcp:HOST:PORT or vsock:CID:PORT",
                 addr);
        return -EINVAL;
}
