/*
 * Per-context cgroups (v2): each context's executor and everything it starts
 * live in <user cgroup>/ctx-<id> with memory.max, pids.max and cpu.weight, so a
 * runaway cell is bounded and a restart can kill all of it at once. Without
 * root or cgroup v2 the agent falls back to rlimits (confine.h) and says so.
 */
#ifndef CELLVM_CGROUP_H
#define CELLVM_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct cgroup_limits {
        uint64_t memory_max; /* bytes */
        uint64_t pids_max;
        uint64_t cpu_weight; /* 1..10000, 0 = leave the default */
};

/*
 * Checks that `parent` is a cgroup v2 directory the agent can manage and
 * enables the memory, pids (and, if offered, cpu) controllers for its children.
 * Returns 0 or a negative errno with `why` saying what is missing.
 */
int cgroup_parent_setup(const char *parent, char *why, size_t why_size);

/* Creates (or reuses) <parent>/ctx-<id> and writes `lim` into it. Returns 0 or -errno. */
int cgroup_context_create(const char *parent, const char *id, const struct cgroup_limits *lim);
/* Moves `pid` into the context's cgroup. Returns 0 or -errno. */
int cgroup_context_add(const char *parent, const char *id, pid_t pid);
/* SIGKILLs every process in the context's cgroup (cgroup.kill, or one by one on
 * kernels before 5.14). Returns 0 or -errno. */
int cgroup_context_kill(const char *parent, const char *id);
/* Kills what is left and removes the context's cgroup. Returns 0 or -errno. */
int cgroup_context_remove(const char *parent, const char *id);

/* Total memory of the machine (MemTotal), in bytes; 0 if unknown. */
uint64_t cgroup_mem_total(void);

#endif
