#include "utf8_stream.h"

#include <string.h>

static const uint8_t replacement[3] = {0xef, 0xbf, 0xbd};

/*
 * Length of the sequence starting at lead byte `c` (0 if `c` cannot start one)
 * and the allowed range of its second byte (which rules out overlongs,
 * surrogates and code points past U+10FFFF).
 */
static size_t seq_shape(uint8_t c, uint8_t *lo, uint8_t *hi)
{
        *lo = 0x80, *hi = 0xbf;
        if (c >= 0xc2 && c <= 0xdf)
                return 2;
        if (c == 0xe0) {
                *lo = 0xa0;
                return 3;
        }
        if (c == 0xed) {
                *hi = 0x9f;
                return 3;
        }
        if (c >= 0xe1 && c <= 0xef)
                return 3;
        if (c == 0xf0) {
                *lo = 0x90;
                return 4;
        }
        if (c == 0xf4) {
                *hi = 0x8f;
                return 4;
        }
        if (c >= 0xf1 && c <= 0xf3)
                return 4;
        return 0;
}

/* Processes `p[0..len)`; returns how many trailing bytes form an incomplete sequence (not emitted).
 */
static size_t decode_run(const uint8_t *p, size_t len, int final, struct cv_buf *out)
{
        size_t i = 0, run = 0; /* run: start of valid bytes not yet appended */
        while (i < len) {
                uint8_t c = p[i];
                if (c < 0x80) {
                        i++;
                        continue;
                }
                uint8_t lo, hi;
                size_t n = seq_shape(c, &lo, &hi);
                size_t k = 1;
                while (n && k < n && i + k < len) {
                        uint8_t d = p[i + k];
                        if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xbf))
                                break;
                        k++;
                }
                if (n && k == n) {
                        i += n;
                        continue;
                }
                cv_buf_append(out, p + run, i - run);
                if (n && i + k == len && !final)
                        return len - i; /* a valid prefix cut by the end of the read */
                cv_buf_append(out, replacement, sizeof(replacement));
                i += k; /* the maximal invalid subpart; the byte that broke it is looked at again */
                run = i;
        }
        cv_buf_append(out, p + run, len - run);
        return 0;
}

int utf8_stream_decode(struct utf8_stream *s, const uint8_t *in, size_t len, int final,
                       struct cv_buf *out)
{
        static const uint8_t nothing[1];
        if (!in)
                in = nothing, len = 0;
        /* Complete the sequence left over from the previous read first. */
        while (s->npending > 0 && (len > 0 || final)) {
                uint8_t tmp[8];
                uint8_t lo, hi;
                size_t n = seq_shape(s->pending[0], &lo, &hi);
                size_t take = len < n - s->npending ? len : n - s->npending;
                memcpy(tmp, s->pending, s->npending);
                if (take)
                        memcpy(tmp + s->npending, in, take);
                size_t m = s->npending + take;
                size_t keep = decode_run(tmp, m, final, out);
                /* The kept tail (a new cut sequence) becomes the pending bytes. */
                memmove(s->pending, tmp + m - keep, keep);
                s->npending = keep;
                in += take;
                len -= take;
                if (final)
                        break;
        }
        size_t keep = decode_run(in, len, final, out);
        if (keep)
                memcpy(s->pending + s->npending, in + len - keep, keep);
        s->npending += keep;
        return out->err;
}
