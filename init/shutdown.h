/* Orderly end of the machine: SIGTERM everyone, wait with a deadline,
 * SIGKILL the rest, sync, unmount, then reboot(2). Never returns. */
#ifndef CELLVM_INIT_SHUTDOWN_H
#define CELLVM_INIT_SHUTDOWN_H

#include "config.h"

__attribute__((noreturn)) void shutdown_machine(const struct init_config *c,
                                                enum shutdown_action action, const char *why);

#endif
