/* Starting the agent: its argv from the configuration, a clean environment
 * carrying the boot stamps, fresh signal state. */
#ifndef CELLVM_INIT_AGENT_H
#define CELLVM_INIT_AGENT_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"

#define AGENT_MAX_ARGS 48

/* Fills argv (NULL-terminated) using strbuf for storage. */
int agent_argv(const struct init_config *c, char **argv, size_t max, char *strbuf, size_t bufsz);
/* Forks and execs the agent; returns its pid or a negative errno. */
pid_t agent_start(const struct init_config *c, bool user_cgroup);

#endif
