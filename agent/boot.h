/* Boot stamps for HELLO (boot.c): CLOCK_BOOTTIME nanoseconds by stage name. */
#ifndef CELLVM_AGENT_BOOT_H
#define CELLVM_AGENT_BOOT_H

#include <stdint.h>

struct agent;

#define BOOT_MAX_STAMPS 32

struct boot_stamp {
        char name[64];
        uint64_t ns;
};

/* Records (or updates) stage `name` at `ns`; past BOOT_MAX_STAMPS it is logged and dropped. */
void boot_stamp(struct agent *a, const char *name, uint64_t ns);
/* The stamps cellvm-init passed in the environment (CELLVM_STAMP_<NAME>=<ns>). */
void boot_stamps_from_env(struct agent *a);

#endif
