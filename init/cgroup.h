/* Resource limits for user code: a cgroup v2 group "user" with memory.max and
 * pids.max. The agent moves executors into it (CELLVM_USER_CGROUP); the
 * agent itself stays outside so a runaway cell cannot take it down. */
#ifndef CELLVM_INIT_CGROUP_H
#define CELLVM_INIT_CGROUP_H

#include <stdint.h>

#define CGROUP_USER_PATH "/sys/fs/cgroup/user"

/* Creates the group when a limit is set; returns 1 when created, 0 when no
 * limit is configured, or a negative errno. */
int cgroup_user_setup(uint64_t mem_limit, uint64_t pids_limit);

#endif
