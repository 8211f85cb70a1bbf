/* The keeper of one sandbox that outlives the command that created it
 * (cellvm create): a process of its own session that waits for the VMM and
 * then removes its registry entry and temp directory, and kills the VMM at
 * the entry's deadline plus the grace, so nothing is left behind and the
 * host enforces the lifetime even when no other cellvm process runs. */
#ifndef CELLVM_CLIENT_KEEPER_H
#define CELLVM_CLIENT_KEEPER_H

#include <sys/types.h>

/* Forks the keeper of registry entry `key` (written, VMM `pid` running):
 * its pid, or a negative errno. The keeper closes every inherited fd. */
pid_t ckeeper_start(const char *key);
/* In a forked child that outlives its parent: a session of its own, stdin
 * /dev/null, stdout and stderr appended to file `out` (NULL: /dev/null),
 * no other fd inherited, SIGINT and SIGHUP ignored. _exit(1) on failure. */
void ckeeper_detach(const char *out);

#endif
