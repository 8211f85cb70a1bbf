/* Boot stamps: CLOCK_BOOTTIME instants of init's milestones, handed to the
 * agent as CELLVM_STAMP_<NAME>=<ns> so its handshake can report them. */
#ifndef CELLVM_INIT_STAMPS_H
#define CELLVM_INIT_STAMPS_H

#include <stddef.h>
#include <stdint.h>

#define STAMPS_MAX 16

/* Records (or overwrites) the stamp `name` (lowercase, a literal) as now. */
uint64_t stamp_record(const char *name);
/* Records a stamp with a given value. */
void stamp_set(const char *name, uint64_t ns);
/* Writes "CELLVM_STAMP_<NAME>=<ns>" strings into env[0..max) using buf as
 * storage; returns the number written or -ENOSPC. */
int stamps_to_env(char **env, size_t max, char *buf, size_t bufsz);

#endif
