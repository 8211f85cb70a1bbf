/*
 * A sandbox's egress rules with E2B's meaning (docs/NETWORK.md): `allowOut`
 * and `denyOut` entries are host names (exact, or `*.` for any subdomain),
 * IP addresses or CIDR blocks; an allow entry wins over a deny entry;
 * `allow_internet_access: false` is a deny of every address. A name is
 * checked first; the addresses it resolves to are checked again, and an
 * internal address (loopback, link-local, private, ...) passes only when an
 * allow entry names it or the name that resolved to it.
 */
#ifndef CELLVM_CLIENT_EGRESS_POLICY_H
#define CELLVM_CLIENT_EGRESS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define EGRESS_MAX_RULES 256
#define EGRESS_NAME_MAX 253

struct egress_rule {
        char text[EGRESS_NAME_MAX + 16]; /* list and entry (denyOut "x"): refusals, logs */
        bool is_name;
        bool wildcard;                  /* "*.example.com": `name` is "example.com" */
        char name[EGRESS_NAME_MAX + 1]; /* lowercase, no trailing dot */
        int family;                     /* AF_INET or AF_INET6 for an address rule */
        uint8_t addr[16];
        unsigned prefix;
};

struct egress_policy {
        struct egress_rule *allow, *deny;
        size_t nallow, ndeny;
};

enum egress_verdict { EGRESS_UNDECIDED, EGRESS_ALLOWED, EGRESS_DENIED };

/* Builds `p` from the entries (NULL-free arrays of strings); `deny_all` adds
 * E2B's allow_internet_access=false. 0, or -EINVAL with `why` naming the
 * entry. Free with egress_policy_free. */
int egress_policy_parse(struct egress_policy *p, const char *const *allow, size_t nallow,
                        const char *const *deny, size_t ndeny, bool deny_all, char *why,
                        size_t whylen);
void egress_policy_free(struct egress_policy *p);

/* Lowercases `host` into `out` without a trailing dot: 0, or -EINVAL when it is
 * no host name (letters, digits, '-', '.', '_'; labels of 1-63). */
int egress_normalize_name(const char *host, char *out, size_t outlen);

/* The name's verdict: ALLOWED when an allow entry names it (its addresses then
 * pass too), DENIED when a deny entry does, else UNDECIDED (check the
 * addresses). `rule` gets the deciding entry's text. `name` is normalized. */
enum egress_verdict egress_check_name(const struct egress_policy *p, const char *name,
                                      const char **rule);
/* An address's verdict, ALLOWED or DENIED, with the deciding entry (or a
 * description of the default that decided) in `rule`. */
enum egress_verdict egress_check_addr(const struct egress_policy *p, const struct sockaddr *sa,
                                      const char **rule);

/* The deny entry that covers every IPv4 address (0.0.0.0/0, E2B's
 * ALL_TRAFFIC, or allow_internet_access=false), or NULL: a name no entry
 * names is then refused without a lookup. */
const char *egress_denies_all_addresses(const struct egress_policy *p);

#endif
