/* Reading the guest's proxy requests and ClientHellos within bounds (egress_request.h). */
#include "egress_request.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "buf.h"

static const char *find_crlf2(const char *buf, size_t n)
{
        for (size_t i = 0; i + 3 < n; i++)
                if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' &&
                    buf[i + 3] == '\n')
                        return buf + i;
        return NULL;
}

static int parse_port(const char *s, size_t n, uint16_t *port)
{
        if (n == 0 || n > 5)
                return -EINVAL;
        unsigned v = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned)(s[i] - '0');
        }
        if (v == 0 || v > 65535)
                return -EINVAL;
        *port = (uint16_t)v;
        return 0;
}

/* "host[:port]" or "[v6][:port]" of `n` bytes into t->host, t->is_ip, t->port
 * (`def` when absent, 0 = required). */
static int parse_authority(const char *s, size_t n, uint16_t def, struct egress_target *t)
{
        char host[EGRESS_NAME_MAX + 1];
        const char *hend, *colon = NULL;
        if (n > 0 && s[0] == '[') {
                hend = memchr(s, ']', n);
                if (!hend || hend == s + 1)
                        return -EINVAL;
                if ((size_t)(hend + 1 - s) < n) {
                        if (hend[1] != ':')
                                return -EINVAL;
                        colon = hend + 1;
                }
                size_t hl = (size_t)(hend - s - 1);
                if (hl >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s + 1, hl);
                host[hl] = '\0';
                struct in6_addr a6;
                if (inet_pton(AF_INET6, host, &a6) != 1)
                        return -EINVAL;
                snprintf(t->host, sizeof(t->host), "%s", host);
                t->is_ip = true;
        } else {
                colon = memchr(s, ':', n);
                size_t hl = colon ? (size_t)(colon - s) : n;
                if (hl == 0 || hl >= sizeof(host))
                        return -EINVAL;
                memcpy(host, s, hl);
                host[hl] = '\0';
                struct in_addr a4;
                if (inet_pton(AF_INET, host, &a4) == 1) {
                        snprintf(t->host, sizeof(t->host), "%s", host);
                        t->is_ip = true;
                } else if (egress_normalize_name(host, t->host, sizeof(t->host)) < 0) {
                        return -EINVAL;
                }
        }
        if (colon)
                return parse_port(colon + 1, (size_t)(s + n - colon - 1), &t->port);
        if (def == 0)
                return -EINVAL;
        t->port = def;
        return 0;
}

/* Headers a proxy consumes or that describe the client's hop, not the origin's. */
static bool hop_header(const char *name, size_t n)
{
        static const char *const hop[] = {"connection",
                                          "proxy-connection",
                                          "keep-alive",
                                          "proxy-authorization",
                                          "proxy-authenticate",
                                          "te",
                                          "upgrade",
                                          "trailer"};
        for (size_t i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
                if (strlen(hop[i]) == n && strncasecmp(name, hop[i], n) == 0)
                        return true;
        return false;
}

static int fail(char *why, size_t whylen, int rc, const char *msg)
{
        snprintf(why, whylen, "%s", msg);
        return rc;
}

int egress_parse_head(const char *buf, size_t n, struct egress_target *t, char *why, size_t whylen)
{
        memset(t, 0, sizeof(*t));
        size_t avail = n < EGRESS_HEAD_MAX ? n : EGRESS_HEAD_MAX;
        const char *end = find_crlf2(buf, avail);
        if (!end)
                return n >= EGRESS_HEAD_MAX
                           ? fail(why, whylen, -E2BIG, "the proxy request's head is too large")
                           : 0;
        t->head_len = (size_t)(end - buf) + 4;
        if (memchr(buf, '\0', t->head_len))
                return fail(why, whylen, -EINVAL, "malformed request");
        const char *line_end = memmem(buf, t->head_len, "\r\n", 2); /* the head has one */
        if (!line_end)
                return fail(why, whylen, -EINVAL, "malformed request");
        const char *sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
        const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line_end - sp1 - 1)) : NULL;
        if (!sp1 || !sp2 || sp1 == buf || sp2 == sp1 + 1)
                return fail(why, whylen, -EINVAL, "malformed request line");
        const char *version = sp2 + 1;
        size_t vlen = (size_t)(line_end - version);
        if (vlen != 8 || strncmp(version, "HTTP/1.", 7) != 0 ||
            (version[7] != '0' && version[7] != '1'))
                return fail(why, whylen, -EINVAL, "not an HTTP/1.x request");
        size_t mlen = (size_t)(sp1 - buf);
        const char *target = sp1 + 1;
        size_t tlen = (size_t)(sp2 - target);
        if (mlen == 7 && strncmp(buf, "CONNECT", 7) == 0) {
                t->connect = true;
                if (parse_authority(target, tlen, 0, t) < 0)
                        return fail(why, whylen, -EINVAL, "CONNECT needs host:port");
                return 1;
        }
        for (size_t i = 0; i < mlen; i++)
                if (buf[i] < 'A' || buf[i] > 'Z')
                        return fail(why, whylen, -EINVAL, "malformed method");
        if (tlen < 8 || strncasecmp(target, "http://", 7) != 0)
                return fail(why, whylen, -EINVAL,
                            "a proxy request names an absolute http:// URI (https: goes "
                            "through CONNECT)");
        const char *auth = target + 7;
        size_t alen = 0;
        while (7 + alen < tlen && auth[alen] != '/' && auth[alen] != '?' && auth[alen] != '#')
                alen++;
        if (memchr(auth, '@', alen) || parse_authority(auth, alen, 80, t) < 0)
                return fail(why, whylen, -EINVAL, "the URI's authority is no host[:port]");
        const char *path = auth + alen;
        size_t plen = tlen - 7 - alen;
        /* The origin's head: origin-form target, end-to-end headers, Connection: close. */
        struct cv_buf out;
        cv_buf_init(&out);
        int rc = cv_buf_append(&out, buf, mlen + 1);
        if (plen == 0 || path[0] != '/')
                rc |= cv_buf_append(&out, "/", 1);
        rc |= cv_buf_append(&out, path, plen);
        rc |= cv_buf_append(&out, " ", 1);
        rc |= cv_buf_append(&out, version, vlen);
        rc |= cv_buf_append(&out, "\r\n", 2);
        bool has_host = false;
        for (const char *l = line_end + 2; l < end + 2;) {
                const char *le = memmem(l, (size_t)(end + 2 - l), "\r\n", 2);
                size_t ll = (size_t)(le - l);
                const char *colon = memchr(l, ':', ll);
                if (!colon || colon == l || l[0] == ' ' || l[0] == '\t') {
                        cv_buf_free(&out);
                        return fail(why, whylen, -EINVAL, "malformed header line");
                }
                size_t nl = (size_t)(colon - l);
                if (nl == 4 && strncasecmp(l, "host", 4) == 0) {
                        const char *v = colon + 1;
                        while (v < le && (*v == ' ' || *v == '\t'))
                                v++;
                        size_t vl = (size_t)(le - v);
                        while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
                                vl--;
                        struct egress_target h = {0};
                        if (has_host || parse_authority(v, vl, 80, &h) < 0 ||
                            strcmp(h.host, t->host) != 0 || h.port != t->port) {
                                cv_buf_free(&out);
                                return fail(why, whylen, -EINVAL,
                                            "the Host header names another host than the URI");
                        }
                        has_host = true;
                }
                if (!hop_header(l, nl))
                        rc |= cv_buf_append(&out, l, ll + 2);
                l = le + 2;
        }
        if (!has_host) {
                char hh[EGRESS_NAME_MAX + 32];
                int k = snprintf(hh, sizeof(hh),
                                 strchr(t->host, ':') ? "Host: [%s]:%u\r\n" : "Host: %s:%u\r\n",
                                 t->host, t->port);
                rc |= cv_buf_append(&out, hh, (size_t)k);
        }
        rc |= cv_buf_append(&out, "Connection: close\r\n\r\n", 21);
        if (rc) {
                cv_buf_free(&out);
                return fail(why, whylen, -ENOMEM, "out of memory");
        }
        t->origin_head_len = cv_buf_pending(&out);
        t->origin_head = malloc(t->origin_head_len);
        if (!t->origin_head) {
                cv_buf_free(&out);
                return fail(why, whylen, -ENOMEM, "out of memory");
        }
        memcpy(t->origin_head, cv_buf_head(&out), t->origin_head_len);
        cv_buf_free(&out);
        return 1;
}

static unsigned get16(const uint8_t *p)
{
        return (unsigned)p[0] << 8 | p[1];
}

int egress_parse_sni(const uint8_t *buf, size_t n, char *sni, size_t snilen)
{
        if (n < 1)
                return 0;
        if (buf[0] != 0x16)
                return -ENOENT;
        if (n < 5)
                return 0;
        size_t rlen = get16(buf + 3);
        if (buf[1] != 3 || rlen < 4 || rlen > EGRESS_HELLO_MAX - 5)
                return -EINVAL;
        if (n < 5 + rlen)
                return 0;
        const uint8_t *p = buf + 5, *end = buf + 5 + rlen;
        size_t hlen = (size_t)p[1] << 16 | (size_t)p[2] << 8 | p[3];
        if (p[0] != 1 || hlen > rlen - 4)
                return -EINVAL; /* no ClientHello, or one that spans records */
        end = p + 4 + hlen;
        p += 4;
        /* version, random */
        if (end - p < 34)
                return -EINVAL;
        p += 34;
        if (end - p < 1 || end - p < 1 + p[0])
                return -EINVAL;
        p += 1 + p[0]; /* session id */
        if (end - p < 2 || (size_t)(end - p) < 2 + get16(p))
                return -EINVAL;
        p += 2 + get16(p); /* cipher suites */
        if (end - p < 1 || end - p < 1 + p[0])
                return -EINVAL;
        p += 1 + p[0]; /* compression methods */
        if (end == p)
                return -ENOENT; /* no extensions */
        if (end - p < 2 || (size_t)(end - p) < 2 + get16(p))
                return -EINVAL;
        end = p + 2 + get16(p);
        p += 2;
        while (end - p >= 4) {
                unsigned type = get16(p), len = get16(p + 2);
                p += 4;
                if ((size_t)(end - p) < len)
                        return -EINVAL;
                if (type == 0) { /* server_name */
                        const uint8_t *q = p, *qend = p + len;
                        if (qend - q < 2 || (size_t)(qend - q) < 2 + get16(q))
                                return -EINVAL;
                        qend = q + 2 + get16(q);
                        q += 2;
                        while (qend - q >= 3) {
                                unsigned nt = q[0], nl = get16(q + 1);
                                q += 3;
                                if ((size_t)(qend - q) < nl)
                                        return -EINVAL;
                                if (nt == 0) {
                                        char raw[EGRESS_NAME_MAX + 2];
                                        if (nl == 0 || nl >= sizeof(raw))
                                                return -EINVAL;
                                        memcpy(raw, q, nl);
                                        raw[nl] = '\0';
                                        if (egress_normalize_name(raw, sni, snilen) < 0)
                                                return -EINVAL;
                                        return 1;
                                }
                                q += nl;
                        }
                        return -ENOENT;
                }
                p += len;
        }
        return -ENOENT;
}
