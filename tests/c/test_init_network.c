/* Unit tests for cellvm-init's network text: cellvm.ip's CIDR
 * (netconf_parse_cidr) and the resolv.conf from cellvm.dns
 * (netconf_resolv_text, network_resolv_conf on a temporary file). */
#include "../../init/netconf.h"
#include "../../init/network.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static int cidr_is(const char *cidr, const char *want_addr, uint32_t want_mask)
{
        in_addr_t addr, mask;
        struct in_addr w;
        if (netconf_parse_cidr(cidr, &addr, &mask) != 0 || inet_pton(AF_INET, want_addr, &w) != 1)
                return 0;
        return addr == w.s_addr && ntohl(mask) == want_mask;
}

static void test_cidr(void)
{
        in_addr_t addr, mask;

        CHECK(cidr_is("10.0.0.2/24", "10.0.0.2", 0xffffff00u));
        CHECK(cidr_is("192.168.1.7/32", "192.168.1.7", 0xffffffffu));
        CHECK(cidr_is("172.16.0.1/12", "172.16.0.1", 0xfff00000u));
        CHECK(cidr_is("0.0.0.0/0", "0.0.0.0", 0));
        CHECK(cidr_is("10.0.0.2/1", "10.0.0.2", 0x80000000u));
        static const char *const bad[] = {
            "10.0.0.2",     "10.0.0.2/",    "10.0.0.2/33",    "10.0.0.2/-1",  "10.0.0.2/+24",
            "10.0.0.2/ 24", "10.0.0.2/24x", "10.0.0.2/024",   "300.0.0.1/24", "10.0.0/24",
            "/24",          "::1/64",       "10.0.0.2/24/24", "a.b.c.d/8",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = netconf_parse_cidr(bad[i], &addr, &mask);
                if (r != -EINVAL)
                        fprintf(stderr, "  accepted bad CIDR \"%s\"\n", bad[i]);
                CHECK(r == -EINVAL);
        }
}

static void test_resolv_text(void)
{
        char out[512];

        CHECK(netconf_resolv_text("1.1.1.1", out, sizeof(out)) == 19);
        CHECK(strcmp(out, "nameserver 1.1.1.1\n") == 0);
        CHECK(netconf_resolv_text(",8.8.8.8,,2606:4700::1111,", out, sizeof(out)) > 0);
        CHECK(strcmp(out, "nameserver 8.8.8.8\nnameserver 2606:4700::1111\n") == 0);
        CHECK(netconf_resolv_text("", out, sizeof(out)) == -EINVAL);
        CHECK(netconf_resolv_text(",,", out, sizeof(out)) == -EINVAL);
        /* Only addresses: no other resolv.conf directive can be smuggled in. */
        CHECK(netconf_resolv_text("1.1.1.1,search evil", out, sizeof(out)) == -EINVAL);
        CHECK(netconf_resolv_text("1.1.1.1\noptions x", out, sizeof(out)) == -EINVAL);
        CHECK(netconf_resolv_text("dns.example", out, sizeof(out)) == -EINVAL);
        CHECK(netconf_resolv_text(" 1.1.1.1", out, sizeof(out)) == -EINVAL);
        char small[25];
        CHECK(netconf_resolv_text("1.1.1.1,8.8.8.8", small, sizeof(small)) == -E2BIG);
        CHECK(netconf_resolv_text("1.1.1.1", small, sizeof(small)) == 19);
}

static void test_resolv_conf_file(void)
{
        char dir[] = "/tmp/cellvm-resolv-XXXXXX", path[64], text[128];
        if (mkdtemp(dir) == NULL) {
                CHECK(!"mkdtemp");
                return;
        }
        snprintf(path, sizeof(path), "%s/resolv.conf", dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && write(fd, "old contents, longer than the new\n", 34) == 34);
        if (fd >= 0)
                close(fd);
        CHECK(network_resolv_conf(path, "10.0.2.3") == 0);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
        if (fd >= 0)
                close(fd);
        CHECK(n == 20);
        text[n < 0 ? 0 : n] = '\0';
        CHECK(strcmp(text, "nameserver 10.0.2.3\n") == 0); /* truncated, not appended */
        /* A bad value leaves the file alone. */
        CHECK(network_resolv_conf(path, "nonsense") == -EINVAL);
        CHECK(network_resolv_conf("/nonexistent-dir/resolv.conf", "1.1.1.1") == -ENOENT);
        unlink(path);
        rmdir(dir);
}

int main(void)
{
        test_cidr();
        test_resolv_text();
        test_resolv_conf_file();
        return check_report("test_init_network");
}
