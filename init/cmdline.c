#include "cmdline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool is_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Copies one character into out unless full; returns false on overflow. */
static bool put(char *out, size_t cap, size_t *len, char c)
{
        if (*len + 1 >= cap)
                return false;
        out[(*len)++] = c;
        return true;
}

int cmdline_next(const char **cursor, struct cmdline_arg *arg)
{
        const char *p = *cursor;
        size_t klen = 0, vlen = 0;
        bool in_quote = false, in_value = false, overflow = false;

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
        arg->has_value = false;
        for (; *p != '\0' && (in_quote || !is_space(*p)); p++) {
                if (*p == '"') {
                        in_quote = !in_quote;
                        continue;
                }
                if (!in_value && *p == '=') {
                        in_value = true;
                        arg->has_value = true;
                        continue;
                }
                if (in_value)
                        overflow |= !put(arg->value, sizeof(arg->value), &vlen, *p);
                else
                        overflow |= !put(arg->key, sizeof(arg->key), &klen, *p);
        }
        arg->key[klen] = '\0';
        arg->value[vlen] = '\0';
        *cursor = p;
        return overflow ? -E2BIG : 1;
}

int cmdline_read(char *buf, size_t bufsz)
{
        const char *env = getenv("CELLVM_CMDLINE");
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
