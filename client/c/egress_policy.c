/* A sandbox's egress rules and their verdicts (egress_policy.h). */
#include "egress_policy.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The default refusal of an internal address no entry names. */
#define RULE_INTERNAL "internal address (no allowOut entry names it)"
#define RULE_DEFAULT "no denyOut entry covers it"

int egress_normalize_name(const char *host, char *out, size_t outlen)
{
        size_t n = strlen(host);
        if (n > 0 && host[n - 1] == '.')
                n--;
        if (n == 0 || n > EGRESS_NAME_MAX || n >= outlen)
                return -EINVAL;
        size_t label = 0;
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char)host[i];
                if (ch == '.') {
                        if (label == 0)
                                return -EINVAL;
                        label = 0;
                } else if (isalnum(ch) || ch == '-' || ch == '_') {
                        if (++label > 63)
                                return -EINVAL;
                } else {
                        return -EINVAL;
                }
                out[i] = (char)tolower(ch);
        }
        if (label == 0)
                return -EINVAL;
        out[n] = '\0';
        return 0;
}

/* An IP address or CIDR block into `r`: 0, or -EINVAL when `s` is neither. */
static int parse_cidr(const char *s, struct egress_rule *r)
{
        char buf[64];
        const char *slash = strchr(s, '/');
        size_t alen = slash ? (size_t)(slash - s) : strlen(s);
        if (alen == 0 || alen >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, alen);
        buf[alen] = '\0';
        if (inet_pton(AF_INET, buf, r->addr) == 1)
                r->family = AF_INET;
        else if (inet_pton(AF_INET6, buf, r->addr) == 1)
                r->family = AF_INET6;
        else
                return -EINVAL;
        unsigned max = r->family == AF_INET ? 32 : 128;
        r->prefix = max;
        if (slash) {
                char *end;
                errno = 0;
                unsigned long v = strtoul(slash + 1, &end, 10);
                if (errno || end == slash + 1 || *end || v > max || slash[1] == '-' ||
                    slash[1] == '+')
                        return -EINVAL;
                r->prefix = (unsigned)v;
        }
        return 0;
}

static int parse_rule(const char *what, const char *s, struct egress_rule *r)
{
        memset(r, 0, sizeof(*r));
        if (strlen(s) > EGRESS_NAME_MAX + 2)
                return -EINVAL;
        snprintf(r->text, sizeof(r->text), "%s \"%s\"", what, s);
        if (parse_cidr(s, r) == 0)
                return 0;
        r->is_name = true;
        if (s[0] == '*' && s[1] == '.') {
                r->wildcard = true;
                s += 2;
        }
        return egress_normalize_name(s, r->name, sizeof(r->name));
}

static int parse_list(const char *what, const char *const *in, size_t n, bool extra_all,
                      struct egress_rule **out, size_t *nout, char *why, size_t whylen)
{
        size_t total = n + (extra_all ? 2 : 0);
        if (total > EGRESS_MAX_RULES) {
                snprintf(why, whylen, "network.%s: more than %d entries", what, EGRESS_MAX_RULES);
                return -EINVAL;
        }
        *out = calloc(total ? total : 1, sizeof(**out));
        if (!*out) {
                snprintf(why, whylen, "out of memory");
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (parse_rule(what, in[i], &(*out)[i]) < 0) {
                        snprintf(why, whylen,
                                 "network.%s: %.80s is no IP address, CIDR block or host name",
                                 what, in[i]);
                        return -EINVAL;
                }
        /* E2B's allow_internet_access=false: every address, of both families. */
        if (extra_all) {
                (void)parse_rule(what, "0.0.0.0/0", &(*out)[n]);
                (void)parse_rule(what, "::/0", &(*out)[n + 1]);
                snprintf((*out)[n].text, sizeof((*out)[n].text),
                         "allow_internet_access=false (denyOut \"0.0.0.0/0\")");
                snprintf((*out)[n + 1].text, sizeof((*out)[n + 1].text),
                         "allow_internet_access=false (denyOut \"::/0\")");
        }
        *nout = total;
        return 0;
}

int egress_policy_parse(struct egress_policy *p, const char *const *allow, size_t nallow,
                        const char *const *deny, size_t ndeny, bool deny_all, char *why,
                        size_t whylen)
{
        memset(p, 0, sizeof(*p));
        int rc = parse_list("allowOut", allow, nallow, false, &p->allow, &p->nallow, why, whylen);
        if (rc == 0)
                rc = parse_list("denyOut", deny, ndeny, deny_all, &p->deny, &p->ndeny, why, whylen);
        if (rc < 0)
                egress_policy_free(p);
        return rc;
}

void egress_policy_free(struct egress_policy *p)
{
        free(p->allow);
        free(p->deny);
        memset(p, 0, sizeof(*p));
}

static bool name_matches(const struct egress_rule *r, const char *name)
{
        if (!r->is_name)
                return false;
        if (!r->wildcard)
                return strcmp(r->name, name) == 0;
        size_t n = strlen(name), m = strlen(r->name);
        return n > m + 1 && name[n - m - 1] == '.' && strcmp(name + n - m, r->name) == 0;
}

enum egress_verdict egress_check_name(const struct egress_policy *p, const char *name,
                                      const char **rule)
{
        for (size_t i = 0; i < p->nallow; i++)
                if (name_matches(&p->allow[i], name)) {
                        *rule = p->allow[i].text;
                        return EGRESS_ALLOWED;
                }
        for (size_t i = 0; i < p->ndeny; i++)
                if (name_matches(&p->deny[i], name)) {
                        *rule = p->deny[i].text;
                        return EGRESS_DENIED;
                }
        return EGRESS_UNDECIDED;
}

/* The address of `sa` as a family and 4 or 16 bytes; an IPv4-mapped IPv6
 * address is its IPv4 address. */
static int addr_of(const struct sockaddr *sa, uint8_t out[16])
{
        if (sa->sa_family == AF_INET) {
                memcpy(out, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
                return AF_INET;
        }
        if (sa->sa_family != AF_INET6)
                return -1;
        const struct in6_addr *a6 = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a6)) {
                memcpy(out, a6->s6_addr + 12, 4);
                return AF_INET;
        }
        memcpy(out, a6->s6_addr, 16);
        return AF_INET6;
}

static bool prefix_matches(const uint8_t *a, const uint8_t *b, unsigned bits)
{
        unsigned full = bits / 8, rest = bits % 8;
        if (memcmp(a, b, full) != 0)
                return false;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t)(0xFF00u >> rest);
        return (a[full] & mask) == (b[full] & mask);
}

static bool cidr_matches(const struct egress_rule *r, int family, const uint8_t *addr)
{
        return !r->is_name && r->family == family && prefix_matches(addr, r->addr, r->prefix);
}

/* Loopback, link-local, private, shared (CGNAT), unspecified, multicast,
 * broadcast and the IPv6 equivalents: what "the internet" does not mean. */
static bool is_internal(int family, const uint8_t *a)
{
        if (family == AF_INET) {
                static const struct {
                        uint8_t net[4];
                        unsigned bits;
                } nets[] = {
                    {{0, 0, 0, 0}, 8},    {{10, 0, 0, 0}, 8},     {{100, 64, 0, 0}, 10},
                    {{127, 0, 0, 0}, 8},  {{169, 254, 0, 0}, 16}, {{172, 16, 0, 0}, 12},
                    {{192, 0, 0, 0}, 24}, {{192, 168, 0, 0}, 16}, {{198, 18, 0, 0}, 15},
                    {{224, 0, 0, 0}, 4},  {{240, 0, 0, 0}, 4},
                };
                for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++)
                        if (prefix_matches(a, nets[i].net, nets[i].bits))
                                return true;
                return false;
        }
        static const uint8_t zero[16] = {0};
        static const uint8_t ula[16] = {0xfc}, ll[16] = {0xfe, 0x80}, mc[16] = {0xff},
                             nat64[16] = {0, 0x64, 0xff, 0x9b};
        return prefix_matches(a, zero, 96) || /* ::, ::1 and IPv4-compatible */
               prefix_matches(a, ula, 7) || prefix_matches(a, ll, 10) || prefix_matches(a, mc, 8) ||
               prefix_matches(a, nat64, 96);
}

enum egress_verdict egress_check_addr(const struct egress_policy *p, const struct sockaddr *sa,
                                      const char **rule)
{
        uint8_t a[16];
        int family = addr_of(sa, a);
        if (family < 0) {
                *rule = "not an IP address";
                return EGRESS_DENIED;
        }
        for (size_t i = 0; i < p->nallow; i++)
                if (cidr_matches(&p->allow[i], family, a)) {
                        *rule = p->allow[i].text;
                        return EGRESS_ALLOWED;
                }
        for (size_t i = 0; i < p->ndeny; i++)
                if (cidr_matches(&p->deny[i], family, a)) {
                        *rule = p->deny[i].text;
                        return EGRESS_DENIED;
                }
        if (is_internal(family, a)) {
                *rule = RULE_INTERNAL;
                return EGRESS_DENIED;
        }
        *rule = RULE_DEFAULT;
        return EGRESS_ALLOWED;
}

const char *egress_denies_all_addresses(const struct egress_policy *p)
{
        for (size_t i = 0; i < p->ndeny; i++)
                if (!p->deny[i].is_name && p->deny[i].family == AF_INET && p->deny[i].prefix == 0)
                        return p->deny[i].text;
        return NULL;
}
