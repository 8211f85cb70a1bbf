/* Resolving egress requests' names: $CELLVM_HOSTS, then DNS (egress_resolve.h). */
#include "egress_resolve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A hosts file line longer than this is skipped. */
#define HOSTS_LINE_MAX 1024

/* `text`, an IP address, with `port` into `ss`: 0, or -EINVAL. */
static int ip_of(const char *text, uint16_t port, struct sockaddr_storage *ss)
{
        memset(ss, 0, sizeof(*ss));
        struct sockaddr_in *sin = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET, text, &sin->sin_addr) == 1) {
                sin->sin_family = AF_INET;
                sin->sin_port = htons(port);
                return 0;
        }
        if (inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1) {
                sin6->sin6_family = AF_INET6;
                sin6->sin6_port = htons(port);
                return 0;
        }
        return -EINVAL;
}

int egress_hosts_lookup(const char *path, const char *name, uint16_t port,
                        struct sockaddr_storage *out, size_t max, size_t *n)
{
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        char line[HOSTS_LINE_MAX];
        *n = 0;
        while (*n < max && fgets(line, sizeof(line), f)) {
                if (!strchr(line, '\n') && !feof(f)) {
                        int ch; /* too long: skip the rest of it */
                        while ((ch = fgetc(f)) != EOF && ch != '\n')
                                ;
                        continue;
                }
                char *hash = strchr(line, '#');
                if (hash)
                        *hash = '\0';
                char *save, *addr = strtok_r(line, " \t\r\n", &save);
                if (!addr)
                        continue;
                for (char *w = strtok_r(NULL, " \t\r\n", &save); w;
                     w = strtok_r(NULL, " \t\r\n", &save)) {
                        size_t wl = strlen(w);
                        if (wl > 0 && w[wl - 1] == '.')
                                w[--wl] = '\0';
                        if (strcasecmp(w, name) == 0 && ip_of(addr, port, &out[*n]) == 0) {
                                (*n)++;
                                break;
                        }
                }
        }
        int err = ferror(f) ? -EIO : 0;
        if (fclose(f) < 0 && err == 0)
                err = -errno;
        if (err < 0)
                return err;
        return *n ? 0 : -ENOENT;
}

int egress_resolve(const char *host, uint16_t port, struct sockaddr_storage *out, size_t max,
                   size_t *n)
{
        *n = 0;
        if (max == 0)
                return -EINVAL;
        if (ip_of(host, port, &out[0]) == 0) {
                *n = 1;
                return 0;
        }
        const char *hosts = getenv("CELLVM_HOSTS");
        if (hosts && *hosts) {
                int rc = egress_hosts_lookup(hosts, host, port, out, max, n);
                if (rc != -ENOENT)
                        return rc;
        }
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG};
        struct addrinfo *res;
        int rc = getaddrinfo(host, NULL, &hints, &res);
        if (rc != 0)
                return rc == EAI_NONAME || rc == EAI_NODATA ? -ENOENT
                       : rc == EAI_SYSTEM                   ? -errno
                       : rc == EAI_MEMORY                   ? -ENOMEM
                                                            : -EHOSTUNREACH;
        for (struct addrinfo *ai = res; ai && *n < max; ai = ai->ai_next) {
                if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
                    ai->ai_addrlen > sizeof(out[0]))
                        continue;
                memset(&out[*n], 0, sizeof(out[0]));
                memcpy(&out[*n], ai->ai_addr, ai->ai_addrlen);
                if (ai->ai_family == AF_INET)
                        ((struct sockaddr_in *)&out[*n])->sin_port = htons(port);
                else
                        ((struct sockaddr_in6 *)&out[*n])->sin6_port = htons(port);
                (*n)++;
        }
        freeaddrinfo(res);
        return *n ? 0 : -ENOENT;
}
