/* Console logging for cellvm-init: every line carries a CLOCK_BOOTTIME stamp
 * so a boot log reads as a timeline. Errors and warnings always print; step
 * messages only with cellvm.debug=1. */
#ifndef CELLVM_INIT_LOG_H
#define CELLVM_INIT_LOG_H

#include <stdbool.h>
#include <stdint.h>

void log_set_debug(bool on);
bool log_debug_enabled(void);

/* Nanoseconds since kernel boot (CLOCK_BOOTTIME). */
uint64_t boottime_ns(void);

__attribute__((format(printf, 1, 2))) void log_error(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void log_warn(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void log_info(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void log_debug(const char *fmt, ...);

#endif
