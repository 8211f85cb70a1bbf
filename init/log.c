#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static bool debug_on;

void log_set_debug(bool on)
{
        debug_on = on;
}

bool log_debug_enabled(void)
{
        return debug_on;
}

uint64_t boottime_ns(void)
{
        struct timespec ts;

        /* CLOCK_BOOTTIME cannot fail with a valid pointer; 0 marks "unknown". */
        if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
                return 0;
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void log_line(const char *level, const char *fmt, va_list ap)
{
        char line[512];
        uint64_t now = boottime_ns();
        int saved_errno = errno;
        int n = snprintf(line, sizeof(line), "[%5llu.%06llu] cellvm-init: %s",
                         (unsigned long long)(now / 1000000000ull),
                         (unsigned long long)(now % 1000000000ull / 1000), level);
        if (n < 0 || (size_t)n >= sizeof(line))
                return;
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
        size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
        if (len > sizeof(line) - 2)
                len = sizeof(line) - 2;
        line[len++] = '\n';
        /* One write per line so concurrent writers on the console don't interleave
         * mid-line; a console that refuses output leaves us nowhere to report it. */
        ssize_t w = write(STDERR_FILENO, line, len);
        (void)w;
        errno = saved_errno;
}

#define DEFINE_LOG(fn, level, cond)                                                                \
        void fn(const char *fmt, ...)                                                              \
        {                                                                                          \
                va_list ap;                                                                        \
                if (!(cond))                                                                       \
                        return;                                                                    \
                va_start(ap, fmt);                                                                 \
                log_line(level, fmt, ap);                                                          \
                va_end(ap);                                                                        \
        }

DEFINE_LOG(log_error, "error: ", true)
DEFINE_LOG(log_warn, "warning: ", true)
DEFINE_LOG(log_info, "", true)
DEFINE_LOG(log_debug, "", debug_on)
