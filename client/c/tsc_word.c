/* The tsc_early_khz word of a command line (see tsc_word.h). */
#include "tsc_word.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char key[] = "tsc_early_khz=";
#define KEY_LEN (sizeof(key) - 1)

static bool is_sep(char c)
{
        return c == ' ' || c == '\t';
}

/* Whether the word at `w` (`len` bytes) is tsc_early_khz=<1 to 19 digits>. */
static bool is_tsc_word(const char *w, size_t len)
{
        if (len <= KEY_LEN || len > KEY_LEN + 19 || memcmp(w, key, KEY_LEN) != 0)
                return false;
        for (size_t i = KEY_LEN; i < len; i++)
                if (w[i] < '0' || w[i] > '9')
                        return false;
        return true;
}

/* The length of the word at s[i] (0 at a separator). */
static size_t word_len(const char *s, size_t n, size_t i)
{
        size_t len = 0;
        while (i + len < n && !is_sep(s[i + len]))
                len++;
        return len;
}

char *ctsc_neutral(const char *in)
{
        size_t n = strlen(in);
        /* "host" is at most 3 bytes longer than the shortest value (1 digit). */
        char *out = malloc(n + n / (KEY_LEN + 1) * 3 + 4);
        if (!out)
                return NULL;
        size_t o = 0;
        for (size_t i = 0; i < n;) {
                size_t len = word_len(in, n, i);
                if (len == 0) {
                        out[o++] = in[i++];
                } else if (is_tsc_word(in + i, len)) {
                        memcpy(out + o, key, KEY_LEN);
                        memcpy(out + o + KEY_LEN, "host", 4);
                        o += KEY_LEN + 4;
                } else {
                        memcpy(out + o, in + i, len);
                        o += len;
                }
                i += len;
        }
        out[o] = '\0';
        return out;
}

bool ctsc_khz_of(const char *s, uint64_t *khz)
{
        size_t n = strlen(s);
        for (size_t i = 0; i < n; i++) {
                size_t len = word_len(s, n, i);
                if (len && is_tsc_word(s + i, len)) {
                        uint64_t v = 0;
                        for (size_t k = KEY_LEN; k < len; k++)
                                v = v * 10 + (uint64_t)(s[i + k] - '0');
                        *khz = v;
                        return true;
                }
                i += len;
        }
        return false;
}

int ctsc_mismatch(const char *have, const char *want, char *out, size_t outlen)
{
        uint64_t x, y;
        if (!ctsc_khz_of(have, &x) || !ctsc_khz_of(want, &y))
                return 0;
        uint64_t d = x > y ? x - y : y - x;
        if ((double)d * 1e6 <= (double)CTSC_TOLERANCE_PPM * (double)(y ? y : 1))
                return 0;
        snprintf(out, outlen,
                 "tsc_early_khz: snapshot has %" PRIu64 ", this host's TSC is now %" PRIu64
                 " kHz (more than %d ppm apart)",
                 x, y, CTSC_TOLERANCE_PPM);
        return 1;
}
