/* PORT_DATA's body decoded in place (port_data.h). */
#include "port_data.h"

#include <errno.h>
#include <string.h>

/* One CBOR head at body[*pos]: major type and argument (no indefinite lengths). */
static int read_head(const uint8_t *body, size_t len, size_t *pos, unsigned *major, uint64_t *arg)
{
        if (*pos >= len)
                return -EINVAL;
        uint8_t b = body[(*pos)++];
        unsigned info = b & 31u;
        *major = b >> 5;
        if (info < 24) {
                *arg = info;
                return 0;
        }
        if (info > 27)
                return -EINVAL;
        size_t n = (size_t)1 << (info - 24);
        if (len - *pos < n)
                return -EINVAL;
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++)
                v = v << 8 | body[*pos + i];
        *pos += n;
        *arg = v;
        return 0;
}

enum { KEY_DATA = 1, KEY_EOF = 2, KEY_ACK = 4 };

/* A text key of the three; 0 for anything else. */
static unsigned read_key(const uint8_t *body, size_t len, size_t *pos)
{
        unsigned major;
        uint64_t n;
        if (read_head(body, len, pos, &major, &n) < 0 || major != 3 || n > 4 || len - *pos < n)
                return 0;
        const uint8_t *k = body + *pos;
        *pos += (size_t)n;
        if (n == 4 && memcmp(k, "data", 4) == 0)
                return KEY_DATA;
        if (n == 3 && memcmp(k, "eof", 3) == 0)
                return KEY_EOF;
        if (n == 3 && memcmp(k, "ack", 3) == 0)
                return KEY_ACK;
        return 0;
}

int cv_port_data_decode(const uint8_t *body, size_t len, struct cv_port_data *out)
{
        *out = (struct cv_port_data){0};
        if (len == 0)
                return 0;
        size_t pos = 0;
        unsigned major;
        uint64_t npairs;
        if (read_head(body, len, &pos, &major, &npairs) < 0 || major != 5 || npairs > 3)
                return -EINVAL;
        unsigned seen = 0;
        for (uint64_t i = 0; i < npairs; i++) {
                unsigned key = read_key(body, len, &pos);
                if (key == 0 || (seen & key))
                        return -EINVAL;
                seen |= key;
                uint64_t v;
                if (key == KEY_EOF) {
                        /* true (0xf5) or false (0xf4), the only booleans. */
                        if (pos >= len || (body[pos] != 0xf4 && body[pos] != 0xf5))
                                return -EINVAL;
                        out->eof = body[pos++] == 0xf5;
                } else if (read_head(body, len, &pos, &major, &v) < 0) {
                        return -EINVAL;
                } else if (key == KEY_ACK) {
                        if (major != 0)
                                return -EINVAL;
                        out->ack = v;
                } else {
                        if (major != 2 || v > len - pos)
                                return -EINVAL;
                        out->data = body + pos;
                        out->len = (size_t)v;
                        pos += (size_t)v;
                }
        }
        return pos == len ? 0 : -EINVAL;
}
