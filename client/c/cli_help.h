/* Whether a command-line argument asks for a command's help. */
#ifndef CELLVM_CLI_HELP_H
#define CELLVM_CLI_HELP_H

#include <stdbool.h>
#include <string.h>

static inline bool cli_is_help(const char *arg)
{
        return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

#endif
