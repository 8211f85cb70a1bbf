#include "parse_num.h"

#include <errno.h>
#include <string.h>

int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
        uint64_t v = 0;
        int base = 10;

        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                base = 16;
                s += 2;
        }
        if (*s == '\0')
                return -EINVAL;
        for (; *s != '\0'; s++) {
                unsigned d;
                if (*s >= '0' && *s <= '9')
                        d = (unsigned)(*s - '0');
                else if (base == 16 && *s >= 'a' && *s <= 'f')
                        d = (unsigned)(*s - 'a' + 10);
                else if (base == 16 && *s >= 'A' && *s <= 'F')
                        d = (unsigned)(*s - 'A' + 10);
                else
                        return -EINVAL;
                if (v > (max - d) / (uint64_t)base)
                        return -ERANGE;
                v = v * (uint64_t)base + d;
        }
        *out = v;
        return 0;
}

int parse_size(const char *s, uint64_t *out)
{
        char digits[32];
        size_t len = strlen(s);
        unsigned shift = 0;
        uint64_t v;

        if (len == 0 || len >= sizeof(digits))
                return -EINVAL;
        memcpy(digits, s, len + 1);
        switch (digits[len - 1]) {
        case 'k':
        case 'K':
                shift = 10;
                break;
        case 'm':
        case 'M':
                shift = 20;
                break;
        case 'g':
        case 'G':
                shift = 30;
                break;
        default:
                break;
        }
        if (shift != 0)
                digits[len - 1] = '\0';
        int r = parse_uint(digits, UINT64_MAX >> shift, &v);
        if (r < 0)
                return r;
        *out = v << shift;
        return 0;
}
