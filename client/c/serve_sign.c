/* Signed /files URLs (serve_sign.h). SHA-256 from nettle, which
 * libmicrohttpd's TLS stack (GnuTLS) already brings. */
#include "serve_sign.h"

#include <errno.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve_http.h"

static int expected(const struct sandbox *s, const char *path, const char *op, const char *user,
                    const char *expiration, char *out, size_t outlen)
{
        char raw[8192];
        int n = expiration ? snprintf(raw, sizeof(raw), "%s:%s:%s:%s:%s", path, op,
                                      user ? user : "", s->token, expiration)
                           : snprintf(raw, sizeof(raw), "%s:%s:%s:%s", path, op, user ? user : "",
                                      s->token);
        if (n < 0 || (size_t)n >= sizeof(raw))
                return -ENAMETOOLONG;
        struct sha256_ctx ctx;
        unsigned char digest[SHA256_DIGEST_SIZE];
        sha256_init(&ctx);
        sha256_update(&ctx, (size_t)n, (const uint8_t *)raw);
        sha256_digest(&ctx, sizeof(digest), digest);
        char *b = base64_encode(digest, sizeof(digest));
        if (!b)
                return -ENOMEM;
        size_t bl = strlen(b);
        while (bl && b[bl - 1] == '=')
                b[--bl] = '\0';
        snprintf(out, outlen, "v1_%s", b);
        free(b);
        return 0;
}

static bool same(const char *a, const char *b)
{
        size_t la = strlen(a), lb = strlen(b);
        unsigned char d = la != lb;
        for (size_t i = 0; i < la && i < lb; i++)
                d |= (unsigned char)(a[i] ^ b[i]);
        return d == 0;
}

int serve_check_signature(const struct sandbox *s, const char *path, const char *op,
                          const char *user, const char *signature, const char *expiration,
                          char *why, size_t whylen)
{
        if (!signature || !path) {
                snprintf(why, whylen, "missing X-Access-Token, or a signature and path");
                return -EACCES;
        }
        if (expiration) {
                char *end;
                long long exp = strtoll(expiration, &end, 10);
                if (*end || end == expiration) {
                        snprintf(why, whylen, "signature_expiration: unix seconds");
                        return -EINVAL;
                }
                if (exp < (long long)time(NULL)) {
                        snprintf(why, whylen, "signature is already expired"); /* envd's words */
                        return -EACCES;
                }
        }
        char want[64];
        if (expected(s, path, op, user, expiration, want, sizeof(want)) < 0 ||
            !same(signature, want)) {
                snprintf(why, whylen, "invalid signature");
                return -EACCES;
        }
        return 0;
}

struct sandbox *serve_find_signed(const char *path, const char *op, const char *user,
                                  const char *signature, const char *expiration, char *why,
                                  size_t whylen)
{
        struct sandbox **all;
        size_t n;
        if (serve_list(&all, &n) < 0) {
                snprintf(why, whylen, "out of memory");
                return NULL;
        }
        struct sandbox *found = NULL;
        snprintf(why, whylen, "invalid signature");
        for (size_t i = 0; i < n; i++) {
                if (!found && serve_check_signature(all[i], path, op, user, signature, expiration,
                                                    why, whylen) == 0)
                        found = all[i];
                else
                        serve_put(all[i]);
        }
        free(all);
        return found;
}
