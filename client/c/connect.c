/* Opening the byte stream to an agent: "unix:PATH" or "tcp:HOST:PORT". */
#include "connect.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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

int cvc_open_stream(const char *addr, char *err, size_t errlen)
{
        if (strncmp(addr, "unix:", 5) == 0)
                return connect_unix(addr + 5, err, errlen);
        if (strncmp(addr, "tcp:", 4) == 0)
                return connect_tcp(addr + 4, err, errlen);
        snprintf(err, errlen, "unsupported address %s: expected unix:PATH or tcp:HOST:PORT", addr);
        return -EINVAL;
}
