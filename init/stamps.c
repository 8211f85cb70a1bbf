#include "stamps.h"

#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

struct stamp {
        const char *name;
        uint64_t ns;
};

static struct stamp stamps[STAMPS_MAX];
static size_t n_stamps;

void stamp_set(const char *name, uint64_t ns)
{
        for (size_t i = 0; i < n_stamps; i++) {
                if (strcmp(stamps[i].name, name) == 0) {
                        stamps[i].ns = ns;
                        return;
                }
        }
        if (n_stamps == STAMPS_MAX) {
                log_warn("stamp %s dropped: table full", name);
                return;
        }
        stamps[n_stamps].name = name;
        stamps[n_stamps].ns = ns;
        n_stamps++;
}

uint64_t stamp_record(const char *name)
{
        uint64_t now = boottime_ns();

        stamp_set(name, now);
        log_debug("stamp %s", name);
        return now;
}

int stamps_to_env(char **env, size_t max, char *buf, size_t bufsz)
{
        size_t used = 0;

        if (n_stamps > max)
                return -ENOSPC;
        for (size_t i = 0; i < n_stamps; i++) {
                char *s = buf + used;
                int n = snprintf(s, bufsz - used, "CELLVM_STAMP_%s=%llu", stamps[i].name,
                                 (unsigned long long)stamps[i].ns);
                if (n < 0 || (size_t)n >= bufsz - used)
                        return -ENOSPC;
                for (char *p = s + strlen("CELLVM_STAMP_"); *p != '='; p++)
                        *p = (char)toupper((unsigned char)*p);
                env[i] = s;
                used += (size_t)n + 1;
        }
        return (int)n_stamps;
}
