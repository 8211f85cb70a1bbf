/*
 * Unit tests of egress by policy's pure parts (docs/NETWORK.md): the rules'
 * verdicts with E2B's meaning (client/c/egress_policy.c), the guest's proxy
 * requests and ClientHellos read within bounds (egress_request.c), and the
 * hosts file (egress_resolve.c).
 */
#include "../../client/c/egress_policy.h"
#include "../../client/c/egress_request.h"
#include "../../client/c/egress_resolve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static struct sockaddr_storage addr(const char *text)
{
        struct sockaddr_storage ss = {0};
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        if (inet_pton(AF_INET, text, &sin->sin_addr) == 1)
                sin->sin_family = AF_INET;
        else if (inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1)
                sin6->sin6_family = AF_INET6;
        return ss;
}

static enum egress_verdict check_addr(const struct egress_policy *p, const char *text,
                                      const char **rule)
{
        struct sockaddr_storage ss = addr(text);
        return egress_check_addr(p, (struct sockaddr *)&ss, rule);
}

static void test_rules(void)
{
        const char *allow[] = {"pypi.org", "*.example.com", "10.1.2.0/24", "2001:db8::1"};
        const char *deny[] = {"evil.org", "8.8.0.0/16", "pypi.org", "10.0.0.0/8"};
        struct egress_policy p;
        char why[256];
        const char *rule = NULL;
        CHECK(egress_policy_parse(&p, allow, 4, deny, 4, false, why, sizeof(why)) == 0);
        /* Names: exact, wildcard (subdomains only), allow over deny. */
        CHECK(egress_check_name(&p, "pypi.org", &rule) == EGRESS_ALLOWED);
        CHECK(strcmp(rule, "allowOut \"pypi.org\"") == 0);
        CHECK(egress_check_name(&p, "a.b.example.com", &rule) == EGRESS_ALLOWED);
        CHECK(egress_check_name(&p, "example.com", &rule) == EGRESS_UNDECIDED);
        CHECK(egress_check_name(&p, "badexample.com", &rule) == EGRESS_UNDECIDED);
        CHECK(egress_check_name(&p, "evil.org", &rule) == EGRESS_DENIED);
        CHECK(strcmp(rule, "denyOut \"evil.org\"") == 0);
        /* Addresses: allow CIDR over deny CIDR, deny CIDR, internal, default. */
        CHECK(check_addr(&p, "10.1.2.3", &rule) == EGRESS_ALLOWED);
        CHECK(check_addr(&p, "10.1.3.3", &rule) == EGRESS_DENIED);
        CHECK(strcmp(rule, "denyOut \"10.0.0.0/8\"") == 0);
        CHECK(check_addr(&p, "8.8.8.8", &rule) == EGRESS_DENIED);
        CHECK(check_addr(&p, "1.1.1.1", &rule) == EGRESS_ALLOWED);
        CHECK(check_addr(&p, "127.0.0.1", &rule) == EGRESS_DENIED);
        CHECK(strstr(rule, "internal address") != NULL);
        CHECK(check_addr(&p, "169.254.169.254", &rule) == EGRESS_DENIED);
        CHECK(check_addr(&p, "192.168.1.1", &rule) == EGRESS_DENIED);
        CHECK(check_addr(&p, "::1", &rule) == EGRESS_DENIED);
        CHECK(check_addr(&p, "fe80::1", &rule) == EGRESS_DENIED);
        CHECK(check_addr(&p, "fd00::1", &rule) == EGRESS_DENIED);
        CHECK(check_addr(&p, "::ffff:127.0.0.1", &rule) == EGRESS_DENIED);
        CHECK(check_addr(&p, "::ffff:8.8.4.4", &rule) == EGRESS_DENIED);
        CHECK(strcmp(rule, "denyOut \"8.8.0.0/16\"") == 0);
        CHECK(check_addr(&p, "2001:db8::1", &rule) == EGRESS_ALLOWED);
        CHECK(check_addr(&p, "2606:4700::1111", &rule) == EGRESS_ALLOWED);
        egress_policy_free(&p);

        /* allow_internet_access=false: every address of both families, but allowOut wins. */
        const char *one[] = {"1.1.1.1"};
        CHECK(egress_policy_parse(&p, one, 1, NULL, 0, true, why, sizeof(why)) == 0);
        CHECK(check_addr(&p, "1.1.1.1", &rule) == EGRESS_ALLOWED);
        CHECK(check_addr(&p, "1.0.0.1", &rule) == EGRESS_DENIED);
        CHECK(strstr(rule, "allow_internet_access=false") != NULL);
        CHECK(check_addr(&p, "2606:4700::1111", &rule) == EGRESS_DENIED);
        CHECK(egress_denies_all_addresses(&p) &&
              strstr(egress_denies_all_addresses(&p), "allow_internet_access=false"));
        egress_policy_free(&p);
        const char *all[] = {"0.0.0.0/0"}, *some[] = {"10.0.0.0/8"};
        CHECK(egress_policy_parse(&p, NULL, 0, all, 1, false, why, sizeof(why)) == 0);
        CHECK(egress_denies_all_addresses(&p) &&
              strcmp(egress_denies_all_addresses(&p), "denyOut \"0.0.0.0/0\"") == 0);
        egress_policy_free(&p);
        CHECK(egress_policy_parse(&p, NULL, 0, some, 1, false, why, sizeof(why)) == 0);
        CHECK(egress_denies_all_addresses(&p) == NULL);
        egress_policy_free(&p);

        /* Entries that are none of the three are refused, naming them. */
        const char *bad[][1] = {{"a b"}, {"10.0.0.0/33"}, {"*."}, {"x..y"}, {""}, {"1.2.3.4/-1"}};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                CHECK(egress_policy_parse(&p, bad[i], 1, NULL, 0, false, why, sizeof(why)) ==
                      -EINVAL);
                CHECK(strstr(why, "allowOut") != NULL);
        }
        char normalized[300];
        CHECK(egress_normalize_name("PyPI.Org.", normalized, sizeof(normalized)) == 0);
        CHECK(strcmp(normalized, "pypi.org") == 0);
}

static int head(const char *s, struct egress_target *t)
{
        char why[256];
        return egress_parse_head(s, strlen(s), t, why, sizeof(why));
}

static void test_heads(void)
{
        struct egress_target t;
        CHECK(head("CONNECT Files.PythonHosted.org:443 HTTP/1.1\r\nHost: x\r\n\r\n", &t) == 1);
        CHECK(t.connect && strcmp(t.host, "files.pythonhosted.org") == 0 && t.port == 443);
        CHECK(!t.is_ip && t.head_len == strlen("CONNECT Files.PythonHosted.org:443 HTTP/1.1\r\n"
                                               "Host: x\r\n\r\n"));
        CHECK(head("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", &t) == 1);
        CHECK(t.is_ip && strcmp(t.host, "2001:db8::1") == 0 && t.port == 8443);
        CHECK(head("CONNECT example.com HTTP/1.1\r\n\r\n", &t) == -EINVAL);   /* no port */
        CHECK(head("CONNECT example.com:0 HTTP/1.1\r\n\r\n", &t) == -EINVAL); /* port 0 */
        CHECK(head("CONNECT example.com:443 HTTP/1.1\r\n", &t) == 0);         /* more to come */

        CHECK(head("GET http://example.com:8080/a?b=c HTTP/1.1\r\nHost: example.com:8080\r\n"
                   "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\nBODY",
                   &t) == 1);
        CHECK(!t.connect && strcmp(t.host, "example.com") == 0 && t.port == 8080);
        const char *want = "GET /a?b=c HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\n"
                           "Connection: close\r\n\r\n";
        CHECK(t.origin_head_len == strlen(want) && memcmp(t.origin_head, want, strlen(want)) == 0);
        free(t.origin_head);
        CHECK(head("GET http://example.com HTTP/1.0\r\n\r\n", &t) == 1);
        want = "GET / HTTP/1.0\r\nHost: example.com:80\r\nConnection: close\r\n\r\n";
        CHECK(t.port == 80 && t.origin_head_len == strlen(want) &&
              memcmp(t.origin_head, want, strlen(want)) == 0);
        free(t.origin_head);
        /* The Host header must name the URI's host: no fronting by Host. */
        CHECK(head("GET http://a.com/ HTTP/1.1\r\nHost: b.com\r\n\r\n", &t) == -EINVAL);
        CHECK(head("GET https://a.com/ HTTP/1.1\r\n\r\n", &t) == -EINVAL);
        CHECK(head("GET /relative HTTP/1.1\r\nHost: a.com\r\n\r\n", &t) == -EINVAL);
        CHECK(head("GET http://user@a.com/ HTTP/1.1\r\n\r\n", &t) == -EINVAL);
        CHECK(head("GET http://a.com/ HTTP/2.0\r\n\r\n", &t) == -EINVAL);
        CHECK(head("GET http://a.com/ HTTP/1.1\r\n folded\r\n\r\n", &t) == -EINVAL);
        /* A head over the bound is refused, not read on. */
        size_t big = EGRESS_HEAD_MAX + 10;
        char *s = malloc(big);
        memset(s, 'a', big);
        memcpy(s, "GET http://a.com/ HTTP/1.1\r\nX: ", 31);
        char why[256];
        CHECK(egress_parse_head(s, big, &t, why, sizeof(why)) == -E2BIG);
        free(s);
}

/* A ClientHello with `sni` (NULL: no server_name extension). */
static size_t hello(const char *sni, uint8_t *out)
{
        uint8_t body[512];
        size_t n = 0;
        body[n++] = 3, body[n++] = 3;
        memset(body + n, 7, 32), n += 32;
        body[n++] = 0;                                                 /* session id */
        body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 1; /* one suite */
        body[n++] = 1, body[n++] = 0;                                  /* null compression */
        size_t ext_at = n;
        n += 2;
        if (sni) {
                size_t l = strlen(sni);
                body[n++] = 0, body[n++] = 0; /* server_name */
                body[n++] = 0, body[n++] = (uint8_t)(l + 5);
                body[n++] = 0, body[n++] = (uint8_t)(l + 3);
                body[n++] = 0;
                body[n++] = 0, body[n++] = (uint8_t)l;
                memcpy(body + n, sni, l), n += l;
        }
        body[n++] = 0, body[n++] = 0x2b, body[n++] = 0, body[n++] = 3; /* supported_versions */
        body[n++] = 2, body[n++] = 3, body[n++] = 4;
        size_t ext = n - ext_at - 2;
        body[ext_at] = (uint8_t)(ext >> 8), body[ext_at + 1] = (uint8_t)ext;
        size_t m = 0;
        out[m++] = 0x16, out[m++] = 3, out[m++] = 1;
        out[m++] = (uint8_t)((n + 4) >> 8), out[m++] = (uint8_t)(n + 4);
        out[m++] = 1, out[m++] = 0, out[m++] = (uint8_t)(n >> 8), out[m++] = (uint8_t)n;
        memcpy(out + m, body, n);
        return m + n;
}

static void test_sni(void)
{
        uint8_t buf[600];
        char sni[300];
        size_t n = hello("Api.Example.COM", buf);
        CHECK(egress_parse_sni(buf, n, sni, sizeof(sni)) == 1);
        CHECK(strcmp(sni, "api.example.com") == 0);
        /* Every cut short of the whole record asks for more. */
        int more = 0;
        for (size_t k = 0; k < n; k++)
                more += egress_parse_sni(buf, k, sni, sizeof(sni)) == 0;
        CHECK(more == (int)n);
        n = hello(NULL, buf);
        CHECK(egress_parse_sni(buf, n, sni, sizeof(sni)) == -ENOENT);
        CHECK(egress_parse_sni((const uint8_t *)"GET / HTTP/1.1\r\n", 16, sni, sizeof(sni)) ==
              -ENOENT);
        /* Lengths that point past their parts are malformed, never read past. */
        n = hello("a.com", buf);
        buf[5 + 4 + 34] = 200; /* session id length */
        CHECK(egress_parse_sni(buf, n, sni, sizeof(sni)) == -EINVAL);
        n = hello("bad name!", buf);
        CHECK(egress_parse_sni(buf, n, sni, sizeof(sni)) == -EINVAL);
}

static void test_hosts_file(void)
{
        char path[] = "/tmp/cellvm-test-hosts-XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0);
        const char *text = "# comment\n127.0.0.1 mirror.internal other # trailing\n"
                           "::1 mirror.internal\n10.0.0.5\tdb.internal.\n";
        CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
        CHECK(close(fd) == 0);
        struct sockaddr_storage out[4];
        size_t n = 0;
        CHECK(egress_hosts_lookup(path, "mirror.internal", 80, out, 4, &n) == 0 && n == 2);
        CHECK(out[0].ss_family == AF_INET && out[1].ss_family == AF_INET6);
        CHECK(ntohs(((struct sockaddr_in *)&out[0])->sin_port) == 80);
        CHECK(egress_hosts_lookup(path, "db.internal", 5432, out, 4, &n) == 0 && n == 1);
        CHECK(egress_hosts_lookup(path, "comment", 80, out, 4, &n) == -ENOENT);
        CHECK(egress_hosts_lookup(path, "nowhere", 80, out, 4, &n) == -ENOENT);
        CHECK(unlink(path) == 0);
        CHECK(egress_resolve("192.0.2.1", 443, out, 4, &n) == 0 && n == 1);
}

int main(void)
{
        test_rules();
        test_heads();
        test_sni();
        test_hosts_file();
        return check_report("test_egress");
}
