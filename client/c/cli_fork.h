/* `cellvm fork` (cli_fork.c): E2B's fork of a live sandbox for the CLI and the
 * Python SDK. */
#ifndef CELLVM_CLIENT_CLI_FORK_H
#define CELLVM_CLIENT_CLI_FORK_H

#include "registry.h"

int cmd_fork(int argc, char **argv);
/* The clock of `e`'s guest from this host's after a save that let it run on
 * (a fork's, a kept snapshot's): it stood still meanwhile. Over a connection
 * of our own, unless a holder of its channel (the SDK) does it itself; a
 * failure is said on stderr. */
void sbx_set_time_after_save(const struct creg_entry *e);

#endif
