#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum log_level log_threshold = LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int log_level_parse(const char *s, enum log_level *out)
{
        for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
                if (strcmp(s, level_names[i]) == 0) {
                        *out = (enum log_level)i;
                        return 0;
                }
        }
        return -EINVAL;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
        if (level > log_threshold)
                return;
        /* Build the whole line first so concurrent writers (executors share stderr) don't split it.
         */
        char line[1024];
        int n =
            snprintf(line, sizeof(line), "cellvm-agent: %s%s",
                     level <= LOG_WARN ? level_names[level] : "", level <= LOG_WARN ? ": " : "");
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
        va_end(ap);
        size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
        if (len > sizeof(line) - 2)
                len = sizeof(line) - 2;
        line[len++] = '\n';
        /* Best effort: there is nowhere to report a failed log write. */
        if (fwrite(line, 1, len, stderr) != len)
                clearerr(stderr);
}
