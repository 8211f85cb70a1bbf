/* Connect framing and envd's user header (serve_connect.h). */
#include "serve_connect.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve_http.h"

static json_t *object(const char *p, size_t len, char *why, size_t whylen)
{
        json_error_t e;
        json_t *j = json_loadb(p, len, JSON_REJECT_DUPLICATES, &e);
        if (!j) {
                snprintf(why, whylen, "malformed JSON: %s", e.text);
                return NULL;
        }
        if (!json_is_object(j)) {
                json_decref(j);
                snprintf(why, whylen, "the message must be a JSON object");
                return NULL;
        }
        return j;
}

json_t *connect_unwrap(const char *body, size_t len, char *why, size_t whylen)
{
        if (len < 5) {
                snprintf(why, whylen, "a Connect envelope has a 5-byte prefix");
                return NULL;
        }
        const unsigned char *p = (const unsigned char *)body;
        if (p[0] != 0) {
                snprintf(why, whylen,
                         "envelope flags %#x: compression and end-stream "
                         "flags are not taken in requests",
                         p[0]);
                return NULL;
        }
        uint32_t n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
        if ((size_t)n != len - 5) {
                snprintf(why, whylen, "the envelope says %u bytes, the body has %zu", n, len - 5);
                return NULL;
        }
        return object(body + 5, n, why, whylen);
}

json_t *connect_unary(const char *body, size_t len, char *why, size_t whylen)
{
        if (len == 0)
                return json_object();
        return object(body, len, why, whylen);
}

int connect_put(struct hstream *st, unsigned char flags, json_t *msg)
{
        char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
        json_decref(msg);
        if (!text)
                return -ENOMEM;
        size_t n = strlen(text);
        unsigned char hdr[5] = {flags, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                (unsigned char)(n >> 8), (unsigned char)n};
        int rc = hstream_put(st, hdr, sizeof(hdr));
        if (rc == 0)
                rc = hstream_put(st, text, n);
        free(text);
        return rc;
}

int connect_user(const char *authorization, char *out, size_t outlen)
{
        snprintf(out, outlen, "user");
        if (!authorization)
                return 0;
        if (strncasecmp(authorization, "Basic ", 6) != 0)
                return -EINVAL;
        size_t n;
        unsigned char *raw = base64_decode(authorization + 6, strlen(authorization + 6), &n);
        if (!raw)
                return -EINVAL;
        unsigned char *colon = memchr(raw, ':', n);
        size_t ul = colon ? (size_t)(colon - raw) : n;
        int rc = 0;
        if (ul == 0 || ul >= outlen || ul > 32)
                rc = ul == 0 ? 0 : -EINVAL;
        else {
                for (size_t i = 0; i < ul; i++)
                        if (!((raw[i] >= 'a' && raw[i] <= 'z') ||
                              (raw[i] >= 'A' && raw[i] <= 'Z') ||
                              (raw[i] >= '0' && raw[i] <= '9') || raw[i] == '_' || raw[i] == '-' ||
                              raw[i] == '.'))
                                rc = -EINVAL;
                if (rc == 0) {
                        memcpy(out, raw, ul);
                        out[ul] = '\0';
                }
        }
        free(raw);
        return rc;
}
