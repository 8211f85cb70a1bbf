#include "network.h"

#include "log.h"
#include "netconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int network_hostname(const char *name)
{
        if (sethostname(name, strlen(name)) != 0)
                return -errno;
        return 0;
}

static int ifreq_for(struct ifreq *ifr, const char *ifname)
{
        memset(ifr, 0, sizeof(*ifr));
        if (strlen(ifname) >= sizeof(ifr->ifr_name))
                return -ENAMETOOLONG;
        memcpy(ifr->ifr_name, ifname, strlen(ifname) + 1);
        return 0;
}

static int inet_socket(void)
{
        int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        return fd < 0 ? -errno : fd;
}

int network_link_up(const char *ifname)
{
        struct ifreq ifr;
        int r = ifreq_for(&ifr, ifname);
        if (r < 0)
                return r;
        int fd = inet_socket();
        if (fd < 0)
                return fd;
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) != 0)
                goto fail;
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0)
                goto fail;
        close(fd);
        return 0;
fail:
        r = -errno;
        close(fd);
        return r;
}

static void set_sin(struct sockaddr *sa, in_addr_t addr)
{
        struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr = {.s_addr = addr}};
        memcpy(sa, &sin, sizeof(sin));
}

int network_static(const char *ifname, const char *cidr, const char *gateway)
{
        struct ifreq ifr;
        in_addr_t addr, mask;
        int r = netconf_parse_cidr(cidr, &addr, &mask);
        if (r < 0)
                return r;
        r = ifreq_for(&ifr, ifname);
        if (r < 0)
                return r;
        int fd = inet_socket();
        if (fd < 0)
                return fd;
        set_sin(&ifr.ifr_addr, addr);
        if (ioctl(fd, SIOCSIFADDR, &ifr) != 0)
                goto fail;
        set_sin(&ifr.ifr_netmask, mask);
        if (ioctl(fd, SIOCSIFNETMASK, &ifr) != 0)
                goto fail;
        close(fd);
        r = network_link_up(ifname);
        if (r < 0 || gateway[0] == '\0')
                return r;

        struct rtentry rt;
        struct in_addr gw;
        memset(&rt, 0, sizeof(rt));
        if (inet_pton(AF_INET, gateway, &gw) != 1)
                return -EINVAL;
        set_sin(&rt.rt_dst, INADDR_ANY);
        set_sin(&rt.rt_genmask, INADDR_ANY);
        set_sin(&rt.rt_gateway, gw.s_addr);
        rt.rt_flags = RTF_UP | RTF_GATEWAY;
        fd = inet_socket();
        if (fd < 0)
                return fd;
        if (ioctl(fd, SIOCADDRT, &rt) != 0 && errno != EEXIST)
                goto fail;
        close(fd);
        return 0;
fail:
        r = -errno;
        close(fd);
        return r;
}

int network_resolv_conf(const char *path, const char *dns)
{
        char text[512];
        int len = netconf_resolv_text(dns, text, sizeof(text));
        if (len < 0)
                return len;
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        ssize_t w = write(fd, text, (size_t)len);
        int err = w < 0 ? -errno : w != len ? -EIO : 0;
        if (close(fd) != 0 && err == 0)
                err = -errno;
        return err;
}

int network_setup(const struct init_config *c)
{
        int failures = 0;
        int r;

        if ((r = network_hostname(c->hostname)) < 0) {
                log_warn("sethostname %s: %s", c->hostname, strerror(-r));
                failures++;
        }
        if ((r = network_link_up("lo")) < 0) {
                log_warn("loopback up: %s", strerror(-r));
                failures++;
        }
        if (c->net == NET_STATIC) {
                r = network_static("eth0", c->ip, c->gateway);
                if (r < 0) {
                        log_warn("eth0 %s via %s: %s", c->ip,
                                 c->gateway[0] ? c->gateway : "(no gateway)", strerror(-r));
                        failures++;
                } else {
                        log_debug("eth0 %s up", c->ip);
                }
        }
        if (c->dns[0] != '\0' && c->test) {
                /* The namespace shares the host's /etc: not ours to rewrite. */
                log_info("cellvm.test=1: /etc/resolv.conf not written (cellvm.dns=%s)", c->dns);
        } else if (c->dns[0] != '\0' && (r = network_resolv_conf("/etc/resolv.conf", c->dns)) < 0) {
                log_warn("/etc/resolv.conf: %s", strerror(-r));
                failures++;
        }
        log_debug("network: hostname %s, %s", c->hostname,
                  c->net == NET_STATIC ? "lo + eth0" : "lo only");
        return failures ? -EIO : 0;
}
