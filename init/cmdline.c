#include "cmdline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMDLINE_ENV "CELLVM_CMDLINE"

extern char **environ;

static bool is_space(char c)
{
        /* The kernel's isspace(), but for Latin-1 NBSP (0xa0): a UTF-8 byte here. */
        return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Copies s[0..len) into out (capacity cap, NUL-terminated); false if it does not fit. */
static bool copy_part(char *out, size_t cap, const char *s, size_t len)
{
        if (len >= cap) {
                out[0] = '\0';
                return false;
        }
        memcpy(out, s, len);
        out[len] = '\0';
        return true;
}

/* One word of the line, as next_arg splits it: p[0..end) with the key
 * p[0..key_end) and, when has_value, the value p[vstart..vend). */
struct word {
        const char *p;
        size_t end, key_end, vstart, vend;
        bool has_value;
};

/* Splits the word at p (no leading whitespace). */
static struct word split_word(const char *p)
{
        struct word w = {.p = p};
        bool quoted = *p == '"', in_quote = quoted;
        size_t equals = 0;

        if (quoted)
                w.p = ++p;
        for (w.end = 0; p[w.end] != '\0'; w.end++) {
                if (is_space(p[w.end]) && !in_quote)
                        break;
                /* Like the kernel, an '=' at index 0 does not count. */
                if (equals == 0 && p[w.end] == '=')
                        equals = w.end;
                if (p[w.end] == '"')
                        in_quote = !in_quote;
        }
        /* The word's closing quote goes only when the word opened with one. */
        size_t stop = quoted && w.end > 0 && p[w.end - 1] == '"' ? w.end - 1 : w.end;
        w.has_value = equals != 0;
        w.key_end = w.has_value ? equals : stop;
        if (w.has_value) {
                w.vstart = equals + 1;
                w.vend = stop;
                /* A value that opens with '"' loses it and the word's last '"'. */
                if (w.vstart < w.end && p[w.vstart] == '"') {
                        w.vstart++;
                        if (p[w.end - 1] == '"')
                                w.vend = w.end - 1;
                }
                if (w.vend < w.vstart)
                        w.vend = w.vstart;
        }
        return w;
}

int cmdline_next(const char **cursor, struct cmdline_arg *arg)
{
        const char *p = *cursor;

        while (is_space(*p))
                p++;
        if (*p == '\0') {
                *cursor = p;
                return 0;
        }
        /* "--" alone hands the rest of the line to init as argv; not ours. */
        if (p[0] == '-' && p[1] == '-' && (p[2] == '\0' || is_space(p[2]))) {
                *cursor = p + strlen(p);
                return 0;
        }
        struct word w = split_word(p);
        *cursor = w.p + w.end;
        bool ok = copy_part(arg->key, sizeof(arg->key), w.p, w.key_end);
        arg->has_value = w.has_value;
        arg->value[0] = '\0';
        size_t vlen = w.vend - w.vstart;
        if (w.has_value && !copy_part(arg->value, sizeof(arg->value), w.p + w.vstart, vlen))
                ok = false;
        return ok ? 1 : -E2BIG;
}

int cmdline_mask(char *line, const char *key)
{
        size_t klen = strlen(key);
        int masked = 0;

        for (char *p = line;;) {
                while (is_space(*p))
                        p++;
                if (*p == '\0')
                        return masked;
                struct word w = split_word(p);
                char *word = p + (w.p - p);
                if (w.has_value && w.key_end == klen && strncmp(word, key, klen) == 0) {
                        memset(word + w.vstart, '*', w.vend - w.vstart);
                        masked++;
                }
                p = word + w.end;
        }
}

int cmdline_mask_env(const char *key)
{
        size_t n = strlen(CMDLINE_ENV);

        for (char **e = environ; e != NULL && *e != NULL; e++)
                if (strncmp(*e, CMDLINE_ENV, n) == 0 && (*e)[n] == '=')
                        return cmdline_mask(*e + n + 1, key);
        return 0;
}

int cmdline_read(char *buf, size_t bufsz)
{
        const char *env = getenv(CMDLINE_ENV);
        size_t len = 0;

        if (bufsz == 0)
                return -EINVAL;
        if (env != NULL) {
                if (strlen(env) >= bufsz)
                        return -E2BIG;
                memcpy(buf, env, strlen(env) + 1);
                return 0;
        }
        int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        while (len < bufsz - 1) {
                ssize_t n = read(fd, buf + len, bufsz - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int err = -errno;
                        close(fd);
                        return err;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        close(fd);
        buf[len] = '\0';
        return 0;
}
