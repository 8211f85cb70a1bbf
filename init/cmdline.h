/* Kernel command line tokenizer, following the kernel's own rules
 * (lib/cmdline.c next_arg): words split on whitespace outside double quotes;
 * the first '=' splits key and value; a leading '"' of the word and of the
 * value is removed, with the word's final '"'; quotes elsewhere stay.
 * "--" ends the kernel's part of the line. */
#ifndef CELLVM_INIT_CMDLINE_H
#define CELLVM_INIT_CMDLINE_H

#include <stdbool.h>
#include <stddef.h>

#define CMDLINE_KEY_MAX 128
#define CMDLINE_VALUE_MAX 1024
/* The kernel's COMMAND_LINE_SIZE is 2048 on x86 and 4096 elsewhere. */
#define CMDLINE_MAX 4096

struct cmdline_arg {
        char key[CMDLINE_KEY_MAX];
        char value[CMDLINE_VALUE_MAX];
        bool has_value; /* "key=" has an empty value, "key" has none */
};

/* Reads the next argument at *cursor into arg and advances the cursor.
 * Returns 1 for an argument, 0 at the end, -E2BIG when the key or value
 * does not fit (the argument is skipped; the cursor still advances). */
int cmdline_next(const char **cursor, struct cmdline_arg *arg);

/* Reads the kernel command line: $CELLVM_CMDLINE when set (tests, containers),
 * otherwise /proc/cmdline. buf gets a NUL-terminated string. */
int cmdline_read(char *buf, size_t bufsz);

/* Overwrites with '*' the value of every `key=value` word of line, in place
 * (same length): for a secret that must not stay in memory or reach a log.
 * Returns the number of values masked. */
int cmdline_mask(char *line, const char *key);

/* cmdline_mask on $CELLVM_CMDLINE's own copy in our environment. */
int cmdline_mask_env(const char *key);

#endif
