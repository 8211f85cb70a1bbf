/*
 * Confinement of user code: what an executor (and any process that runs user
 * code) gives up before the first line of that code runs. The agent decides the
 * policy and hands it to the zygote in the environment (CONFINE_ENV); each
 * executor applies it right after fork. docs/SECURITY.md explains each part.
 */
#ifndef CELLVM_CONFINE_H
#define CELLVM_CONFINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Environment variable carrying the policy from the agent to the executors. */
#define CONFINE_ENV "CELLVM_CONFINE"

/* Longest text form of a policy, terminator included. */
#define CONFINE_TEXT_MAX 512

struct confine_policy {
        bool drop_user; /* change to uid/gid (the agent is root) */
        uid_t uid;
        gid_t gid;
        bool net_none;     /* AF_INET/AF_INET6 sockets fail with EPERM */
        pid_t agent_pid;   /* signals to it (and to pid 1) fail with EPERM; 0 = only pid 1 */
        pid_t spawner_pid; /* the agent's spawner: signals to it fail too; 0 = none */
        /* Resource limits, soft = hard; 0 = leave as inherited. */
        uint64_t fsize;  /* RLIMIT_FSIZE, bytes */
        uint64_t nofile; /* RLIMIT_NOFILE */
        uint64_t nproc;  /* RLIMIT_NPROC (per uid; only set with drop_user) */
        uint64_t data;   /* RLIMIT_DATA, bytes: the memory bound without a cgroup */
};

/* "uid=1000,gid=1000,drop=1,net=none,agent=42,spawner=43,fsize=...,nofile=...,nproc=...,data=...".
 * Returns 0 or -ENAMETOOLONG. */
int confine_policy_format(const struct confine_policy *p, char *out, size_t size);
/* Parses the text form; unknown keys are -EINVAL (a policy is never half-applied). */
int confine_policy_parse(const char *text, struct confine_policy *p);

/*
 * In the process about to run user code, in this order: rlimits (RLIMIT_CORE 0
 * always), supplementary groups, gid, uid, capability sets (bounding and ambient
 * cleared), PR_SET_NO_NEW_PRIVS, then the seccomp filter. Returns 0 or a
 * negative errno with `*step` naming what failed.
 */
int confine_apply(const struct confine_policy *p, const char **step);

/* Applies the policy in CONFINE_ENV if it is set; 0 if it is not. */
int confine_apply_from_env(const char **step);

/* Loads the user-code seccomp filter (confine_seccomp.c): the one prepared for
 * this policy if there is one, else compiled now. Returns 0 or -errno. */
int confine_seccomp_load(const struct confine_policy *p);

/* Compiles the filter for `p` once, in a process that forks user code, so that
 * each child loads it with one syscall. Returns 0 or -errno. */
int confine_seccomp_prepare(const struct confine_policy *p);

/* confine_seccomp_prepare() for the policy in CONFINE_ENV; 0 if it is not set. */
int confine_seccomp_prepare_from_env(void);

/* Adds "`name` fails with EPERM" to the libseccomp filter `ctx` (a scmp_filter_ctx);
 * a name this architecture lacks is skipped. Returns 0 or libseccomp's -errno. */
int confine_seccomp_deny(void *ctx, const char *name);

/* Adds the denials of confine_seccomp.c's common set (mounts, the kernel,
 * keyrings, ...) to `ctx`; the user-code filter and the spawner's share it. */
int confine_seccomp_deny_common(void *ctx);

#endif
