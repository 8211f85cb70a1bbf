#include "netconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int netconf_parse_cidr(const char *cidr, in_addr_t *addr, in_addr_t *mask)
{
        char ip[INET_ADDRSTRLEN];
        const char *slash = strchr(cidr, '/');
        unsigned prefix = 0;

        if (slash == NULL || (size_t)(slash - cidr) >= sizeof(ip))
                return -EINVAL;
        memcpy(ip, cidr, (size_t)(slash - cidr));
        ip[slash - cidr] = '\0';
        /* Digits only: strtol would also take " 24" and "+24". */
        const char *d = slash + 1;
        if (*d == '\0' || strlen(d) > 2)
                return -EINVAL;
        for (; *d != '\0'; d++) {
                if (*d < '0' || *d > '9')
                        return -EINVAL;
                prefix = prefix * 10 + (unsigned)(*d - '0');
        }
        if (prefix > 32)
                return -EINVAL;
        struct in_addr a;
        if (inet_pton(AF_INET, ip, &a) != 1)
                return -EINVAL;
        *addr = a.s_addr;
        *mask = htonl(prefix == 0 ? 0 : 0xffffffffu << (32 - prefix));
        return 0;
}

static int is_ip_literal(const char *s)
{
        struct in6_addr a6;
        struct in_addr a4;

        return inet_pton(AF_INET, s, &a4) == 1 || inet_pton(AF_INET6, s, &a6) == 1;
}

int netconf_resolv_text(const char *dns, char *out, size_t outsz)
{
        size_t len = 0;
        int entries = 0;

        if (outsz == 0)
                return -E2BIG;
        out[0] = '\0';
        for (const char *p = dns; *p != '\0';) {
                size_t n = strcspn(p, ",");
                if (n > 0) {
                        char ip[INET6_ADDRSTRLEN];
                        if (n >= sizeof(ip))
                                return -EINVAL;
                        memcpy(ip, p, n);
                        ip[n] = '\0';
                        if (!is_ip_literal(ip))
                                return -EINVAL;
                        int w = snprintf(out + len, outsz - len, "nameserver %s\n", ip);
                        if (w < 0 || (size_t)w >= outsz - len)
                                return -E2BIG;
                        len += (size_t)w;
                        entries++;
                }
                p += n;
                if (*p == ',')
                        p++;
        }
        return entries > 0 ? (int)len : -EINVAL;
}
