/* Numbers and sizes in text, as cellvm-init's command line (init/config.c) and
 * cellvm-agent's options (agent/main.c) take them. Digits only: no sign, no
 * spaces; -EINVAL for anything else, -ERANGE past the bound. */
#ifndef CELLVM_COMMON_PARSE_NUM_H
#define CELLVM_COMMON_PARSE_NUM_H

#include <stdint.h>

/* "123" or "0x7b", at most `max`. */
int parse_uint(const char *s, uint64_t max, uint64_t *out);

/* "123", "64K", "512M", "2G": parse_uint's digits and an optional binary
 * multiple (K, M, G, either case). */
int parse_size(const char *s, uint64_t *out);

#endif
